// A C entry point for llama.cpp's C++-only DRY test constructor.
//
// `llama_sampler_init_dry_testing` takes its sequence breakers as token ids in a
// `std::vector<std::vector<llama_token>>` (the public `llama_sampler_init_dry` needs a model
// vocabulary to tokenize strings). It is declared in llama.cpp's internal `llama-sampler.h`
// and defined (with external linkage) in libllama; this file re-declares it and exposes a
// flat C signature that Rust can call.

#include <cstddef>
#include <cstdint>
#include <vector>

struct llama_sampler;
typedef int32_t llama_token;

struct llama_sampler * llama_sampler_init_dry_testing(
        float   dry_multiplier,
        float   dry_base,
        int32_t dry_allowed_length,
        int32_t dry_penalty_last_n,
        const std::vector<std::vector<llama_token>> & seq_breakers);

// `flat` holds the breakers back to back; `lens[i]` is the length of breaker i.
extern "C" struct llama_sampler * nucleus_parity_init_dry_testing(
        float               dry_multiplier,
        float               dry_base,
        int32_t             dry_allowed_length,
        int32_t             dry_penalty_last_n,
        const llama_token * flat,
        const size_t      * lens,
        size_t              n_breakers) {
    std::vector<std::vector<llama_token>> breakers;
    breakers.reserve(n_breakers);
    size_t at = 0;
    for (size_t i = 0; i < n_breakers; ++i) {
        breakers.emplace_back(flat + at, flat + at + lens[i]);
        at += lens[i];
    }
    try {
        return llama_sampler_init_dry_testing(
            dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, breakers);
    } catch (...) {
        return nullptr;
    }
}
