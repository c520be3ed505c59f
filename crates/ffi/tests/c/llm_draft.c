/* Speculative decoding with a draft model through the streaming handle: the model as its own
 * draft (nucleus_llm_set_draft_model) leaves the tokens unchanged (greedy and seeded sampled,
 * from a prompt and continuing a conversation), nucleus_llm_spec_stats reports the drafts, and
 * the errors are codes with a message: a missing file, a draft model of another vocabulary (when
 * one is given), `type: draft` without a draft model, a draft model set during a generation.
 *
 * Usage: llm_draft MODEL PROMPT N_TOKENS [OTHER_VOCABULARY_MODEL]
 * Prints "greedy_stats: drafted accepted acceptance_rate passes_saved verify_passes",
 * "sampled_stats: ...", "error: TEXT" lines, "ok ..." lines, and exits 0 when every check here
 * passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_run.h"

/* A generation asking for `type: draft` fails with NUCLEUS_ERR_INVALID naming the field, before
 * any callback. */
static void draft_refused(nucleus_llm *h, const int32_t *ids, int n_ids) {
    struct run r;
    memset(&r, 0, sizeof r);
    CHECK(nucleus_llm_reset(h) == NUCLEUS_OK);
    CHECK(nucleus_llm_prefill(h, ids, (size_t)n_ids) == NUCLEUS_OK);
    CHECK(nucleus_llm_generate(h, 4, "{\"speculative\": {\"type\": \"draft\"}}", on_token, &r) == NUCLEUS_ERR_INVALID);
    CHECK(r.calls == 0);
    CHECK(strstr(nucleus_last_error(), "'speculative.type'") != NULL);
    CHECK(strstr(nucleus_last_error(), "draft model") != NULL);
    printf("error: %s\n", nucleus_last_error());
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: llm_draft MODEL PROMPT N_TOKENS [OTHER_VOCABULARY_MODEL]\n");
        return 2;
    }
    const char *model = argv[1], *text = argv[2], *other = argc == 5 ? argv[4] : NULL;
    int n_gen = atoi(argv[3]);
    nucleus_llm *h = nucleus_llm_open(model, "{\"n_ctx\": 512, \"threads\": 1}");
    if (!h) {
        fprintf(stderr, "nucleus_llm_open: %s\n", nucleus_last_error());
        return 1;
    }
    int32_t ids[256];
    int n_ids = nucleus_llm_tokenize(h, text, strlen(text), ids, 256, true, true);
    CHECK(n_ids > 0 && n_ids <= 256);

    /* No draft model yet: `type: draft` is refused; a missing file is a model error. */
    draft_refused(h, ids, n_ids);
    CHECK(nucleus_llm_set_draft_model(h, "no-such-dir/no-such-draft.gguf") == NUCLEUS_ERR_MODEL);
    CHECK(strstr(nucleus_last_error(), "draft model") != NULL);
    CHECK(strstr(nucleus_last_error(), "does not exist") != NULL);
    printf("error: %s\n", nucleus_last_error());
    CHECK(nucleus_llm_set_draft_model(h, "no-such-model-name") == NUCLEUS_ERR_INVALID);
    draft_refused(h, ids, n_ids);
    CHECK(nucleus_llm_set_draft_model(NULL, model) == NUCLEUS_ERR_NULL);
    printf("ok errors\n");

    /* The model as its own draft. */
    CHECK(nucleus_llm_set_draft_model(h, model) == NUCLEUS_OK);
    nucleus_spec_stats st;

    /* Greedy: the same tokens with and without drafts; every draft token accepted. */
    struct run plain, spec;
    generate_twice(h, ids, n_ids, n_gen, "{\"temp\": 0}", &plain);
    CHECK(nucleus_llm_spec_stats(h, &st) == 0);
    generate_twice(h, ids, n_ids, n_gen, "{\"temp\": 0, \"speculative\": {\"type\": \"draft\", \"draft_max\": 8}}",
                   &spec);
    CHECK(same(&plain, &spec));
    CHECK(nucleus_llm_spec_stats(h, &st) == 1);
    CHECK(st.drafted > 0 && st.accepted <= st.drafted && st.passes_saved == st.accepted);
    print_stats("greedy_stats", &st);
    struct run greedy = plain;
    /* `{}` drafts with the draft model once the handle has one; `ngram` still n-grams. */
    generate_twice(h, ids, n_ids, n_gen, "{\"temp\": 0, \"speculative\": {}}", &spec);
    CHECK(same(&greedy, &spec));
    CHECK(nucleus_llm_spec_stats(h, &st) == 1 && st.drafted > 0);
    print_stats("default_stats", &st);
    generate_twice(h, ids, n_ids, n_gen, "{\"temp\": 0, \"speculative\": {\"type\": \"ngram\"}}", &spec);
    CHECK(same(&greedy, &spec));
    CHECK(nucleus_llm_spec_stats(h, &st) == 1);
    printf("ok greedy\n");

    /* A seeded sampled chain (llama.cpp's default): the same tokens. */
    generate_twice(h, ids, n_ids, n_gen, "{\"seed\": 42}", &plain);
    generate_twice(h, ids, n_ids, n_gen, "{\"seed\": 42, \"speculative\": {\"type\": \"draft\", \"draft_min\": 2}}",
                   &spec);
    CHECK(same(&plain, &spec));
    CHECK(nucleus_llm_spec_stats(h, &st) == 1 && st.drafted > 0);
    print_stats("sampled_stats", &st);
    printf("ok sampled\n");

    /* During a generation the draft model cannot change. */
    struct run r;
    memset(&r, 0, sizeof r);
    r.busy_probe = h;
    CHECK(nucleus_llm_reset(h) == NUCLEUS_OK);
    CHECK(nucleus_llm_prefill(h, ids, (size_t)n_ids) == NUCLEUS_OK);
    CHECK(nucleus_llm_generate(h, 4, "{\"temp\": 0, \"speculative\": {\"type\": \"draft\"}}", on_token, &r) == 4);
    CHECK(r.busy_code == NUCLEUS_ERR_BUSY);
    CHECK(r.n_tokens == 4 && memcmp(r.tokens, greedy.tokens, sizeof(int32_t) * 4) == 0);

    /* Another vocabulary is refused, and the draft model set before stays. */
    if (other) {
        CHECK(nucleus_llm_set_draft_model(h, other) == NUCLEUS_ERR_INVALID);
        CHECK(strstr(nucleus_last_error(), "vocabulary") != NULL);
        printf("error: %s\n", nucleus_last_error());
        generate_twice(h, ids, n_ids, n_gen, "{\"temp\": 0, \"speculative\": {\"type\": \"draft\"}}", &spec);
        CHECK(same(&greedy, &spec));
        CHECK(nucleus_llm_spec_stats(h, &st) == 1 && st.drafted > 0);
        printf("ok vocabulary\n");
    }

    /* NULL removes the draft model: `type: draft` is refused again. */
    CHECK(nucleus_llm_set_draft_model(h, NULL) == NUCLEUS_OK);
    draft_refused(h, ids, n_ids);
    printf("ok removed\n");

    nucleus_llm_close(h);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("ok all\n");
    return 0;
}
