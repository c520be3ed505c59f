/* What the speculative-decoding programs (llm_speculative.c, llm_draft.c) share: the tokens one
 * or two generations delivered through the streaming callback, generating twice from a prompt
 * (a prompt, then a continued conversation), comparing two runs, and printing the
 * nucleus_spec_stats line the Rust side reads. */
#ifndef NUCLEUS_TEST_SPEC_RUN_H
#define NUCLEUS_TEST_SPEC_RUN_H

#include <string.h>

#include "check.h"

#define MAX_TOKENS 512

struct run {
    int32_t tokens[MAX_TOKENS];
    int n_tokens;
    int calls;
    int done_calls;
    /* When set, the callback tries to change the draft model at its first call (refused: the
     * handle is busy); the code it got is kept. */
    nucleus_llm *busy_probe;
    int busy_code;
};

static void on_token(int32_t token, const char *text, int32_t done, void *user_data) {
    struct run *r = user_data;
    (void)text;
    r->calls++;
    if (token >= 0 && r->n_tokens < MAX_TOKENS) r->tokens[r->n_tokens++] = token;
    if (done) r->done_calls++;
    if (r->busy_probe && r->calls == 1) r->busy_code = nucleus_llm_set_draft_model(r->busy_probe, NULL);
}

/* From the prompt: one generation of n tokens, then a second of n continuing it. */
static void generate_twice(nucleus_llm *h, const int32_t *ids, int n_ids, int n, const char *params,
                           struct run *r) {
    memset(r, 0, sizeof *r);
    CHECK(nucleus_llm_reset(h) == NUCLEUS_OK);
    CHECK(nucleus_llm_prefill(h, ids, (size_t)n_ids) == NUCLEUS_OK);
    CHECK(nucleus_llm_generate(h, n, params, on_token, r) == n);
    CHECK(nucleus_llm_generate(h, n, params, on_token, r) == n);
    CHECK(r->n_tokens == 2 * n && r->done_calls == 2);
}

static void print_stats(const char *label, const nucleus_spec_stats *s) {
    printf("%s: %llu %llu %.6f %llu %llu\n", label, (unsigned long long)s->drafted, (unsigned long long)s->accepted,
           s->acceptance_rate, (unsigned long long)s->passes_saved, (unsigned long long)s->verify_passes);
}

static int same(const struct run *a, const struct run *b) {
    return a->n_tokens == b->n_tokens && memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n_tokens) == 0;
}

#endif
