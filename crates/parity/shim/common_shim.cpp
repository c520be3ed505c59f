// C entry points for llama.cpp's `common` sampler (`common/sampling.h`), which is C++ only.
//
// `common_sampler_init` takes a `common_params_sampling` (a C++ struct with strings, vectors
// and enums), so Rust cannot build one directly. `nucleus_parity_common_init` receives the
// same values as a flat C struct plus plain arrays, fills a default-constructed
// `common_params_sampling` field by field (so every field not named here keeps llama.cpp's
// own default), and calls `common_sampler_init`. Sampler orders are given as the strings a
// user types (`--samplers` names or `--sampling-seq` letters) and parsed by llama.cpp's own
// `common_sampler_types_from_names` / `common_sampler_types_from_chars`, as its argument
// parser does. `ignore_eos` is resolved the way `common_init_from_params` does it (every
// end-of-generation token appended to the logit biases as -inf).
//
// Every entry point catches C++ exceptions: init reports them as a message and a null
// result; sample reports them as LLAMA_TOKEN_NULL.

#include "common.h"
#include "sampling.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

// The plain values of `common_params_sampling` that shape the chain. Mirrored by
// `CommonParams` in src/common_sampler.rs (same field order and types).
struct nucleus_parity_common_params {
    uint32_t seed;
    int32_t  min_keep;
    int32_t  top_k;
    float    top_p;
    float    min_p;
    float    xtc_probability;
    float    xtc_threshold;
    float    typ_p;
    float    temp;
    float    dynatemp_range;
    float    dynatemp_exponent;
    int32_t  penalty_last_n;
    float    penalty_repeat;
    float    penalty_freq;
    float    penalty_present;
    float    dry_multiplier;
    float    dry_base;
    int32_t  dry_allowed_length;
    int32_t  dry_penalty_last_n;
    float    adaptive_target;
    float    adaptive_decay;
    int32_t  mirostat;
    float    top_n_sigma;
    float    mirostat_tau;
    float    mirostat_eta;
    int32_t  ignore_eos; // 0 or 1
};

// sizeof(nucleus_parity_common_params), so the Rust side can check its mirror's layout.
extern "C" size_t nucleus_parity_common_params_size(void) {
    return sizeof(nucleus_parity_common_params);
}

static void write_error(char * err, size_t err_len, const char * what) {
    if (err && err_len > 0) {
        std::strncpy(err, what, err_len - 1);
        err[err_len - 1] = '\0';
    }
}

// `order_kind`: 0 keeps llama.cpp's default order, 1 parses `order` as `--samplers` names
// (';'-separated), 2 parses it as `--sampling-seq` letters. `breakers` replaces the DRY
// sequence breakers when `n_breakers >= 0` (llama.cpp's defaults are kept when negative).
// A non-empty `grammar` is set as a user grammar (`--grammar`, start rule `root`).
extern "C" struct common_sampler * nucleus_parity_common_init(
        const struct llama_model                   * model,
        const struct nucleus_parity_common_params * p,
        int32_t                                      order_kind,
        const char                                 * order,
        const char * const                         * breakers,
        int64_t                                      n_breakers,
        const llama_logit_bias                     * bias,
        size_t                                       n_bias,
        const char                                 * grammar,
        char                                       * err,
        size_t                                       err_len) {
    try {
        common_params_sampling s;
        s.seed               = p->seed;
        s.min_keep           = p->min_keep;
        s.top_k              = p->top_k;
        s.top_p              = p->top_p;
        s.min_p              = p->min_p;
        s.xtc_probability    = p->xtc_probability;
        s.xtc_threshold      = p->xtc_threshold;
        s.typ_p              = p->typ_p;
        s.temp               = p->temp;
        s.dynatemp_range     = p->dynatemp_range;
        s.dynatemp_exponent  = p->dynatemp_exponent;
        s.penalty_last_n     = p->penalty_last_n;
        s.penalty_repeat     = p->penalty_repeat;
        s.penalty_freq       = p->penalty_freq;
        s.penalty_present    = p->penalty_present;
        s.dry_multiplier     = p->dry_multiplier;
        s.dry_base           = p->dry_base;
        s.dry_allowed_length = p->dry_allowed_length;
        s.dry_penalty_last_n = p->dry_penalty_last_n;
        s.adaptive_target    = p->adaptive_target;
        s.adaptive_decay     = p->adaptive_decay;
        s.mirostat           = p->mirostat;
        s.top_n_sigma        = p->top_n_sigma;
        s.mirostat_tau       = p->mirostat_tau;
        s.mirostat_eta       = p->mirostat_eta;
        s.ignore_eos         = p->ignore_eos != 0;
        s.no_perf            = true;

        if (order_kind == 1) {
            s.samplers = common_sampler_types_from_names(string_split<std::string>(order ? order : "", ';'));
        } else if (order_kind == 2) {
            s.samplers = common_sampler_types_from_chars(order ? order : "");
        }
        if (n_breakers >= 0) {
            s.dry_sequence_breakers.assign(breakers, breakers + n_breakers);
        }
        s.logit_bias.assign(bias, bias + n_bias);
        if (grammar && grammar[0] != '\0') {
            s.grammar = common_grammar(COMMON_GRAMMAR_TYPE_USER, grammar);
        }
        if (s.ignore_eos) {
            const llama_vocab * vocab = llama_model_get_vocab(model);
            for (llama_token t = 0; t < llama_vocab_n_tokens(vocab); t++) {
                if (llama_vocab_is_eog(vocab, t)) {
                    s.logit_bias.push_back({t, -INFINITY});
                }
            }
        }
        return common_sampler_init(model, s);
    } catch (const std::exception & e) {
        write_error(err, err_len, e.what());
    } catch (...) {
        write_error(err, err_len, "unknown C++ exception");
    }
    return nullptr;
}

// `common_sampler_sample(gsmpl, ctx, idx)`: the chain over the logits of output `idx`.
extern "C" llama_token nucleus_parity_common_sample(struct common_sampler * gsmpl, struct llama_context * ctx, int32_t idx) {
    try {
        return common_sampler_sample(gsmpl, ctx, idx);
    } catch (...) {
        return LLAMA_TOKEN_NULL;
    }
}

// `common_sampler_accept(gsmpl, token, is_generated)`: llama.cpp's loops accept prompt tokens
// with `is_generated` false (the chain's history only) and sampled tokens with true (the
// grammar too).
extern "C" void nucleus_parity_common_accept(struct common_sampler * gsmpl, llama_token token, int32_t is_generated) {
    try {
        common_sampler_accept(gsmpl, token, is_generated != 0);
    } catch (...) {
    }
}

// `common_sampler_print` into `out` (NUL-terminated, truncated to `out_len`).
extern "C" void nucleus_parity_common_print(const struct common_sampler * gsmpl, char * out, size_t out_len) {
    try {
        write_error(out, out_len, common_sampler_print(gsmpl).c_str());
    } catch (...) {
        write_error(out, out_len, "");
    }
}

extern "C" void nucleus_parity_common_free(struct common_sampler * gsmpl) {
    common_sampler_free(gsmpl);
}
