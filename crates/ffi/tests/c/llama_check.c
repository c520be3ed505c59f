/* libnucleus inside llama.cpp: with SmolLM2 loaded by llama.cpp,
 *  (1) a chain holding nucleus_llama_sampler_init drives 64 seeded decode steps and gives the
 *      tokens of llama.cpp's own samplers for the same params and seed, alone and after a
 *      llama.cpp top-k in the same chain;
 *  (2) nucleus_llama_sampler_init_grammar keeps the same candidates as
 *      llama_sampler_init_grammar, bit for bit, at every token of a JSON document.
 * usage: llama_check MODEL GRAMMAR_FILE JSON_DOCUMENT     Prints "ok" lines. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"
#include "nucleus.h"

#define N_STEPS 64

static const char *BREAKERS[] = {"\n", ":", "\"", "*"};

/* llama.cpp's common chain for the params in PARAMS below, from its own samplers. */
static struct llama_sampler *llama_chain(const struct llama_vocab *vocab, int with_top_k) {
    struct llama_sampler *c = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(c, llama_sampler_init_penalties(llama_vocab_n_tokens(vocab), 64, 1.1f, 0.1f, 0.0f));
    llama_sampler_chain_add(c, llama_sampler_init_dry(vocab, 0.8f, 1.75f, 2, 64, BREAKERS, 4));
    if (with_top_k) llama_sampler_chain_add(c, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(c, llama_sampler_init_top_p(0.95f, 0));
    llama_sampler_chain_add(c, llama_sampler_init_min_p(0.05f, 0));
    llama_sampler_chain_add(c, llama_sampler_init_temp_ext(1.1f, 0.0f, 1.0f));
    llama_sampler_chain_add(c, llama_sampler_init_dist(1234));
    return c;
}

#define PARAMS "\"seed\": 1234, \"temp\": 1.1, \"penalty_last_n\": 64, \"penalty_repeat\": 1.1, \"penalty_freq\": 0.1, \"dry_multiplier\": 0.8"

static int run_n(struct llama_context *ctx, struct llama_sampler *chain, const llama_token *prompt, int n_prompt,
                 llama_token *out, int n_steps) {
    llama_memory_clear(llama_get_memory(ctx), true);
    llama_token buf[256];
    memcpy(buf, prompt, sizeof(llama_token) * (size_t)n_prompt);
    for (int i = 0; i < n_prompt; i++) llama_sampler_accept(chain, prompt[i]);
    if (llama_decode(ctx, llama_batch_get_one(buf, n_prompt)) != 0) return 1;
    for (int i = 0; i < n_steps; i++) {
        llama_token t = llama_sampler_sample(chain, ctx, -1);
        out[i] = t;
        if (llama_decode(ctx, llama_batch_get_one(&out[i], 1)) != 0) return 1;
    }
    return 0;
}

static int run(struct llama_context *ctx, struct llama_sampler *chain, const llama_token *prompt, int n_prompt,
               llama_token *out) {
    return run_n(ctx, chain, prompt, n_prompt, out, N_STEPS);
}

static int same(const llama_token *a, const llama_token *b, const char *what) {
    for (int i = 0; i < N_STEPS; i++) {
        if (a[i] != b[i]) {
            fprintf(stderr, "%s: step %d gave %d, llama.cpp %d\n", what, i, b[i], a[i]);
            return 0;
        }
    }
    printf("ok %s\n", what);
    return 1;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) return NULL;
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void fill(llama_token_data *d, int n) {
    for (int i = 0; i < n; i++) {
        d[i].id = i;
        d[i].logit = 0.0f;
        d[i].p = 0.0f;
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL GRAMMAR_FILE JSON_DOCUMENT\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 2;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 512;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return 2;

    /* (1) sampling */
    const char *text = "Once upon a time, in a quiet village by the sea,";
    llama_token prompt[256];
    int n_prompt = llama_tokenize(vocab, text, (int32_t)strlen(text), prompt, 256, true, false);
    if (n_prompt <= 0) return 2;
    llama_token ref[N_STEPS], got[N_STEPS], mixed[N_STEPS];

    struct llama_sampler *theirs = llama_chain(vocab, 1);
    if (run(ctx, theirs, prompt, n_prompt, ref)) return 2;
    llama_sampler_free(theirs);

    struct llama_sampler *ours = llama_sampler_chain_init(llama_sampler_chain_default_params());
    struct llama_sampler *n = nucleus_llama_sampler_init(vocab, "{" PARAMS "}");
    if (!n) {
        fprintf(stderr, "nucleus_llama_sampler_init: %s\n", nucleus_last_error());
        return 1;
    }
    if (strcmp(llama_sampler_name(n), "nucleus") != 0) return 1;
    llama_sampler_chain_add(ours, n);
    if (run(ctx, ours, prompt, n_prompt, got)) return 2;
    if (!same(ref, got, "nucleus chain equals llama.cpp's")) return 1;

    /* The same chain again after a reset, and a clone taken now: same tokens again. */
    llama_sampler_reset(ours);
    struct llama_sampler *copy = llama_sampler_clone(ours);
    if (run(ctx, ours, prompt, n_prompt, got) || !same(ref, got, "after reset")) return 1;
    if (run(ctx, copy, prompt, n_prompt, got) || !same(ref, got, "clone")) return 1;
    llama_sampler_free(copy);
    llama_sampler_free(ours);

    /* After llama.cpp's own top-k in one chain, nucleus does the rest (no top-k of its own). */
    struct llama_sampler *mix = llama_sampler_chain_init(llama_sampler_chain_default_params());
    struct llama_sampler *mref = llama_chain(vocab, 1);
    llama_sampler_chain_add(mix, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(mix, nucleus_llama_sampler_init(vocab, "{" PARAMS ", \"samplers\": \"edypmxt\"}"));
    if (run(ctx, mix, prompt, n_prompt, mixed)) return 2;
    /* llama.cpp's own order puts penalties and DRY before top-k; with top-k first the reference
     * is llama.cpp's chain in that order. */
    llama_sampler_free(mref);
    mref = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(mref, llama_sampler_init_top_k(40));
    struct llama_sampler *rest = llama_chain(vocab, 0);
    for (int i = 0; i < llama_sampler_chain_n(rest); i++)
        llama_sampler_chain_add(mref, llama_sampler_clone(llama_sampler_chain_get(rest, i)));
    llama_sampler_free(rest);
    if (run(ctx, mref, prompt, n_prompt, ref) || !same(ref, mixed, "llama.cpp top-k then nucleus")) return 1;
    llama_sampler_free(mref);
    llama_sampler_free(mix);

    /* (1b) a token trie in front of the sampler: the generated tokens spell one of its leaves. */
    {
        llama_token yes[8], no[8];
        int n_yes = llama_tokenize(vocab, " yes indeed", 11, yes, 8, false, false);
        int n_no = llama_tokenize(vocab, " no", 3, no, 8, false, false);
        char desc[512];
        int at = snprintf(desc, sizeof desc, "{\"modelId\": \"smollm2\", \"descriptors\": [{\"path\": \"a\", \"leaves\": ["
                                             "{\"name\": \"YES\", \"tokens\": [");
        for (int i = 0; i < n_yes; i++) at += snprintf(desc + at, sizeof desc - (size_t)at, "%s%d", i ? ", " : "", yes[i]);
        at += snprintf(desc + at, sizeof desc - (size_t)at, "]}, {\"name\": \"NO\", \"tokens\": [");
        for (int i = 0; i < n_no; i++) at += snprintf(desc + at, sizeof desc - (size_t)at, "%s%d", i ? ", " : "", no[i]);
        snprintf(desc + at, sizeof desc - (size_t)at, "]}]}]}");
        for (int mode = 0; mode < 2; mode++) {
            struct llama_sampler *tc = llama_sampler_chain_init(llama_sampler_chain_default_params());
            struct llama_sampler *trie = nucleus_llama_sampler_init_token_trie(vocab, desc, strlen(desc), mode);
            if (!trie) {
                fprintf(stderr, "token trie: %s\n", nucleus_last_error());
                return 1;
            }
            llama_sampler_chain_add(tc, trie);
            llama_sampler_chain_add(tc, nucleus_llama_sampler_init(vocab, "{\"seed\": 5, \"temp\": 1.5}"));
            if (run_n(ctx, tc, prompt, n_prompt, got, 4)) return 2;
            int is_yes = n_yes > 0 && memcmp(got, yes, sizeof(llama_token) * (size_t)n_yes) == 0;
            int is_no = n_no > 0 && memcmp(got, no, sizeof(llama_token) * (size_t)n_no) == 0;
            if (!is_yes && !is_no) {
                fprintf(stderr, "token trie (mode %d): generation starts %d %d, not a leaf\n", mode, got[0], got[1]);
                return 1;
            }
            printf("ok token trie mode %d: %s\n", mode, is_yes ? "YES" : "NO");
            llama_sampler_free(tc);
        }
        const char *bad = "{\"modelId\": \"m\", \"descriptors\": [{\"path\": \"a\", \"leaves\": [{\"name\": \"X\", \"tokens\": [99999999]}]}]}";
        if (nucleus_llama_sampler_init_token_trie(vocab, bad, strlen(bad), 0) != NULL) return 1;
        if (nucleus_llama_sampler_init_token_trie(vocab, "{}", 2, 0) != NULL) return 1;
        if (nucleus_llama_sampler_init(NULL, "{}") != NULL || nucleus_llama_sampler_init_grammar(vocab, "root ::= (", NULL) != NULL)
            return 1;
        printf("ok llama-facing errors\n");
    }

    /* (2) grammar masks along a JSON document */
    char *gbnf = read_file(argv[2]);
    if (!gbnf) return 2;
    struct llama_sampler *g_theirs = llama_sampler_init_grammar(vocab, gbnf, "root");
    struct llama_sampler *g_ours = nucleus_llama_sampler_init_grammar(vocab, gbnf, NULL);
    if (!g_theirs || !g_ours) {
        fprintf(stderr, "grammar: %s\n", nucleus_last_error());
        return 1;
    }
    llama_token doc[1024];
    int n_doc = llama_tokenize(vocab, argv[3], (int32_t)strlen(argv[3]), doc, 1024, false, false);
    if (n_doc <= 0) return 2;
    llama_token_data *a = malloc(sizeof(llama_token_data) * (size_t)n_vocab);
    llama_token_data *b = malloc(sizeof(llama_token_data) * (size_t)n_vocab);
    long allowed_total = 0;
    for (int i = 0; i <= n_doc; i++) {
        fill(a, n_vocab);
        fill(b, n_vocab);
        llama_token_data_array ca = {a, (size_t)n_vocab, -1, false};
        llama_token_data_array cb = {b, (size_t)n_vocab, -1, false};
        llama_sampler_apply(g_theirs, &ca);
        llama_sampler_apply(g_ours, &cb);
        if (ca.size != cb.size) return 1;
        for (int t = 0; t < n_vocab; t++) {
            int ka = !isinf(a[t].logit), kb = !isinf(b[t].logit);
            if (a[t].id != b[t].id || ka != kb) {
                fprintf(stderr, "grammar step %d token %d: llama.cpp %d, nucleus %d\n", i, t, ka, kb);
                return 1;
            }
            allowed_total += ka;
        }
        llama_token next = i < n_doc ? doc[i] : llama_vocab_eos(vocab);
        if (i < n_doc) {
            llama_sampler_accept(g_theirs, next);
            llama_sampler_accept(g_ours, next);
        } else if (isinf(a[next].logit)) {
            fprintf(stderr, "end of generation not allowed after the document\n");
            return 1;
        }
    }
    printf("ok grammar masks equal at %d steps (%ld allowed in all)\n", n_doc + 1, allowed_total);
    llama_sampler_free(g_theirs);
    llama_sampler_free(g_ours);
    free(a);
    free(b);
    free(gbnf);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
