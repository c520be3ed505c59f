/* Samples a seeded stream from logits rows read from a file, through libnucleus only.
 * usage: sample_stream N_VOCAB N_STEPS FORMAT(f32|f16|bf16) LOGITS_FILE PARAMS_JSON
 * Prints "tokens: t0 t1 ..." and, for the last step, "entropy: E" and "top: id:logprob ...".
 * Also checks that a clone taken halfway continues exactly as the original, and that after
 * nucleus_sampler_reset the same stream comes out again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nucleus.h"

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, nucleus_last_error());
    return 1;
}

static int32_t step(nucleus_sampler *s, const void *rows, int fmt, size_t n_vocab, int i) {
    if (fmt == 0) return nucleus_sampler_sample(s, (const float *)rows + (size_t)i * n_vocab, n_vocab);
    if (fmt == 1) return nucleus_sampler_sample_f16(s, (const uint16_t *)rows + (size_t)i * n_vocab, n_vocab);
    return nucleus_sampler_sample_bf16(s, (const uint16_t *)rows + (size_t)i * n_vocab, n_vocab);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s N_VOCAB N_STEPS f32|f16|bf16 LOGITS_FILE PARAMS_JSON\n", argv[0]);
        return 2;
    }
    int32_t n_vocab = atoi(argv[1]);
    int n_steps = atoi(argv[2]);
    int fmt = strcmp(argv[3], "f32") == 0 ? 0 : strcmp(argv[3], "f16") == 0 ? 1 : 2;
    size_t elem = fmt == 0 ? sizeof(float) : sizeof(uint16_t);
    size_t total = (size_t)n_vocab * (size_t)n_steps;
    void *rows = malloc(total * elem);
    FILE *f = fopen(argv[4], "rb");
    if (!rows || !f || fread(rows, elem, total, f) != total) {
        fprintf(stderr, "cannot read %zu values from %s\n", total, argv[4]);
        return 2;
    }
    fclose(f);

    nucleus_sampler *s = nucleus_sampler_new(n_vocab, argv[5]);
    if (!s) return fail("nucleus_sampler_new");
    if (nucleus_sampler_n_vocab(s) != n_vocab) return fail("nucleus_sampler_n_vocab");
    if (nucleus_sampler_set_n_probs(s, 3) != NUCLEUS_OK) return fail("nucleus_sampler_set_n_probs");

    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)n_steps);
    nucleus_sampler *half = NULL;
    for (int i = 0; i < n_steps; i++) {
        if (i == n_steps / 2) {
            half = nucleus_sampler_clone(s);
            if (!half) return fail("nucleus_sampler_clone");
        }
        tokens[i] = step(s, rows, fmt, (size_t)n_vocab, i);
        if (tokens[i] < 0) return fail("nucleus_sampler_sample");
    }
    printf("tokens:");
    for (int i = 0; i < n_steps; i++) printf(" %d", tokens[i]);
    printf("\n");

    double entropy = 0;
    if (nucleus_sampler_last_entropy(s, &entropy) != NUCLEUS_OK) return fail("nucleus_sampler_last_entropy");
    printf("entropy: %.17g\n", entropy);
    int32_t ids[3];
    float lps[3];
    int n = nucleus_sampler_last_probs(s, ids, lps, 3);
    if (n < 0) return fail("nucleus_sampler_last_probs");
    printf("top:");
    for (int i = 0; i < n; i++) printf(" %d:%.9g", ids[i], (double)lps[i]);
    printf("\n");

    /* The clone continues exactly as the original did. */
    for (int i = n_steps / 2; i < n_steps; i++) {
        int32_t t = step(half, rows, fmt, (size_t)n_vocab, i);
        if (t != tokens[i]) {
            fprintf(stderr, "clone diverged at step %d: %d vs %d\n", i, t, tokens[i]);
            return 1;
        }
    }
    nucleus_sampler_free(half);

    /* After a reset the same stream comes out again. */
    nucleus_sampler_reset(s);
    for (int i = 0; i < n_steps; i++) {
        int32_t t = step(s, rows, fmt, (size_t)n_vocab, i);
        if (t != tokens[i]) {
            fprintf(stderr, "after reset, step %d gave %d instead of %d\n", i, t, tokens[i]);
            return 1;
        }
    }
    nucleus_sampler_free(s);
    free(tokens);
    free(rows);
    return 0;
}
