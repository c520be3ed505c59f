/* Speculative decoding through the streaming handle: the `speculative` object of
 * nucleus_llm_generate's params_json leaves the tokens unchanged (greedy and seeded sampled, from
 * a prompt and continuing a conversation), nucleus_llm_spec_stats reports the drafts, and bad
 * values are NUCLEUS_ERR_INVALID naming the field, with no callback made and the handle usable.
 *
 * Usage: llm_speculative MODEL PROMPT N_TOKENS
 * Prints "greedy_stats: drafted accepted acceptance_rate passes_saved verify_passes",
 * "sampled_stats: ...", "error: TEXT" lines, "ok ..." lines, and exits 0 when every check here
 * passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_run.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: llm_speculative MODEL PROMPT N_TOKENS\n");
        return 2;
    }
    const char *text = argv[2];
    int n_gen = atoi(argv[3]);
    nucleus_llm *h = nucleus_llm_open(argv[1], "{\"n_ctx\": 512, \"threads\": 1}");
    if (!h) {
        fprintf(stderr, "nucleus_llm_open: %s\n", nucleus_last_error());
        return 1;
    }
    int32_t ids[256];
    int n_ids = nucleus_llm_tokenize(h, text, strlen(text), ids, 256, true, true);
    CHECK(n_ids > 0 && n_ids <= 256);

    nucleus_spec_stats st;
    memset(&st, 0xff, sizeof st);
    CHECK(nucleus_llm_spec_stats(h, &st) == 0); /* no generation yet: zeroed */
    CHECK(st.drafted == 0 && st.accepted == 0 && st.acceptance_rate == 0.0 && st.verify_passes == 0);

    /* Greedy: the same tokens with and without speculation, drafts accepted. */
    struct run plain, spec;
    generate_twice(h, ids, n_ids, n_gen, "{\"temp\": 0}", &plain);
    CHECK(nucleus_llm_spec_stats(h, &st) == 0);
    generate_twice(h, ids, n_ids, n_gen, "{\"temp\": 0, \"speculative\": {\"type\": \"ngram\", \"draft_max\": 8}}",
                   &spec);
    CHECK(same(&plain, &spec));
    CHECK(nucleus_llm_spec_stats(h, &st) == 1);
    CHECK(st.accepted > 0 && st.accepted <= st.drafted && st.passes_saved == st.accepted);
    CHECK(st.acceptance_rate > 0.0 && st.acceptance_rate <= 1.0);
    print_stats("greedy_stats", &st);
    struct run greedy = plain;
    printf("ok greedy\n");

    /* Seeded sampling (llama.cpp's default chain): the same tokens; `{}` is n-gram with defaults. */
    generate_twice(h, ids, n_ids, n_gen, "{\"seed\": 42}", &plain);
    generate_twice(h, ids, n_ids, n_gen, "{\"seed\": 42, \"speculative\": {}}", &spec);
    CHECK(same(&plain, &spec));
    CHECK(nucleus_llm_spec_stats(h, &st) == 1);
    print_stats("sampled_stats", &st);
    printf("ok sampled\n");

    /* Off by type, or by null. */
    generate_twice(h, ids, n_ids, n_gen, "{\"seed\": 42, \"speculative\": {\"type\": \"none\"}}", &spec);
    CHECK(same(&plain, &spec));
    CHECK(nucleus_llm_spec_stats(h, &st) == 0 && st.drafted == 0);
    generate_twice(h, ids, n_ids, n_gen, "{\"seed\": 42, \"speculative\": null}", &spec);
    CHECK(same(&plain, &spec));
    printf("ok off\n");

    /* Bad values: NUCLEUS_ERR_INVALID naming the field, no callback, the handle still usable. */
    const char *bad[][2] = {
        {"{\"speculative\": {\"draft_max\": 0}}", "'speculative.draft_max'"},
        {"{\"speculative\": {\"draft_max\": 257}}", "'speculative.draft_max'"},
        {"{\"speculative\": {\"draft_min\": -1}}", "'speculative.draft_min'"},
        {"{\"speculative\": {\"ngram_size_n\": 1.5}}", "'speculative.ngram_size_n'"},
        {"{\"speculative\": {\"draft_max\": \"8\"}}", "'speculative.draft_max'"},
        {"{\"speculative\": {\"draft_min\": 9, \"draft_max\": 4}}", "'speculative.draft_min'"},
        {"{\"speculative\": {\"type\": \"medusa\"}}", "'speculative.type'"},
        {"{\"speculative\": {\"type\": \"draft\"}}", "'speculative.type'"},
        {"{\"speculative\": {\"draft_mx\": 4}}", "'speculative.draft_mx'"},
        {"{\"speculative\": 3}", "'speculative'"},
        {"{\"speculative\": [1, 2]}", "'speculative'"},
    };
    CHECK(nucleus_llm_reset(h) == NUCLEUS_OK);
    CHECK(nucleus_llm_prefill(h, ids, (size_t)n_ids) == NUCLEUS_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct run r;
        memset(&r, 0, sizeof r);
        CHECK(nucleus_llm_generate(h, 4, bad[i][0], on_token, &r) == NUCLEUS_ERR_INVALID);
        CHECK(r.calls == 0);
        CHECK(strstr(nucleus_last_error(), bad[i][1]) != NULL);
        printf("error: %s\n", nucleus_last_error());
    }
    struct run after;
    memset(&after, 0, sizeof after);
    CHECK(nucleus_llm_generate(h, n_gen, "{\"temp\": 0}", on_token, &after) == n_gen);
    CHECK(after.n_tokens == n_gen && memcmp(after.tokens, greedy.tokens, sizeof(int32_t) * (size_t)n_gen) == 0);
    CHECK(nucleus_llm_spec_stats(h, NULL) == NUCLEUS_ERR_NULL);
    CHECK(nucleus_llm_spec_stats(NULL, &st) == NUCLEUS_ERR_NULL);
    printf("ok errors\n");

    nucleus_llm_close(h);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("ok all\n");
    return 0;
}
