/* The token-trie design's cases through libnucleus: an empty descriptor gives NULL; with leaves
 * starting with 100 and 200, a vocabulary where 999 is the most likely token is masked to
 * {100, 200}; walking [100, 101] reaches the terminal (finished, leaf named, masks nothing);
 * forced tokens are fast-forwarded. Prints "ok N". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nucleus.h"

#define N_VOCAB 1000
#define N_WORDS ((N_VOCAB + 31) / 32)

static int failures = 0;
static int checks = 0;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        checks++;                                                                 \
        if (!(cond)) {                                                            \
            failures++;                                                           \
            fprintf(stderr, "FAIL line %d: %s (%s)\n", __LINE__, #cond, nucleus_last_error()); \
        }                                                                         \
    } while (0)

static const char *DESC =
    "{\"modelId\": \"m\", \"descriptors\": [{\"path\": \"action\", \"leaves\": ["
    "{\"name\": \"THINK\", \"tokens\": [100, 101]},"
    "{\"name\": \"TALK\", \"tokens\": [100, 102, 103, 104]},"
    "{\"name\": \"STOP\", \"tokens\": [200]}]}]}";

static nucleus_token_trie *trie(const char *json, int mode) {
    return nucleus_token_trie_new(json, strlen(json), mode);
}

static int bit(const uint32_t *mask, int t) {
    return (int)((mask[t / 32] >> (t % 32)) & 1);
}

static int count(const uint32_t *mask) {
    int n = 0;
    for (int t = 0; t < N_VOCAB; t++) n += bit(mask, t);
    return n;
}

int main(void) {
    uint32_t mask[N_WORDS];
    float logits[N_VOCAB];
    int32_t forced[8];

    /* 1. An empty descriptor (or an empty leaf set) gives NULL with a reason. */
    CHECK(trie("{\"modelId\": \"m\", \"descriptors\": []}", 1) == NULL);
    CHECK(nucleus_last_error()[0] != '\0');
    CHECK(trie("{\"modelId\": \"m\", \"descriptors\": [{\"path\": \"a\", \"leaves\": []}]}", 1) == NULL);
    CHECK(trie("{}", 1) == NULL);
    CHECK(trie("{\"modelId\": \"m\", \"descriptors\": [{\"path\": \"a\", \"leaves\": [{\"name\": \"X\", \"tokens\": [-1]}]}]}", 0) == NULL);
    CHECK(trie(DESC, 2) == NULL);
    CHECK(nucleus_token_trie_new(DESC, strlen(DESC) - 1, 0) == NULL); /* truncated JSON */

    /* 2. Masking: of {100, 200, 999} only 100 and 200 continue a leaf, though 999 is best. */
    nucleus_token_trie *t = trie(DESC, 1);
    CHECK(t != NULL);
    CHECK(nucleus_token_trie_is_active(t) == 1);
    CHECK(nucleus_token_trie_fill_bitmask(t, N_VOCAB, mask, N_WORDS) == NUCLEUS_OK);
    CHECK(bit(mask, 100) && bit(mask, 200) && !bit(mask, 999) && count(mask) == 2);
    for (int i = 0; i < N_VOCAB; i++) logits[i] = -5.0f;
    logits[100] = 1.0f;
    logits[200] = 2.0f;
    logits[999] = 9.0f;
    CHECK(nucleus_token_trie_apply(t, logits, N_VOCAB) == NUCLEUS_OK);
    CHECK(logits[100] == 1.0f && logits[200] == 2.0f && isinf(logits[999]) && isinf(logits[5]));
    /* A sampler after it draws only from the allowed set. */
    nucleus_sampler *s = nucleus_sampler_new(N_VOCAB, "{\"seed\": 1, \"temp\": 1.5, \"top_k\": 0, \"top_p\": 1.0, \"min_p\": 0}");
    CHECK(s != NULL);
    for (int i = 0; i < 20; i++) {
        int32_t tok = nucleus_sampler_sample(s, logits, N_VOCAB);
        CHECK(tok == 100 || tok == 200);
    }
    nucleus_sampler_free(s);
    /* Mode 0 keeps only the argmax of the allowed set. */
    nucleus_token_trie *g = trie(DESC, 0);
    for (int i = 0; i < N_VOCAB; i++) logits[i] = -5.0f;
    logits[100] = 1.0f;
    logits[200] = 2.0f;
    logits[999] = 9.0f;
    CHECK(nucleus_token_trie_apply(g, logits, N_VOCAB) == NUCLEUS_OK);
    CHECK(logits[200] == 2.0f && isinf(logits[100]) && isinf(logits[999]));
    nucleus_token_trie_free(g);
    /* A token continuing no leaf is rejected and changes nothing. */
    CHECK(nucleus_token_trie_accept(t, 999) == NUCLEUS_ERR_REJECTED);
    CHECK(nucleus_token_trie_fill_bitmask(t, N_VOCAB, mask, N_WORDS) == NUCLEUS_OK && count(mask) == 2);

    /* 3. Walking [100, 101] reaches the terminal. */
    nucleus_token_trie *c = nucleus_token_trie_clone(t);
    CHECK(nucleus_token_trie_accept(t, 100) == NUCLEUS_OK);
    CHECK(nucleus_token_trie_leaf(t) == NULL && nucleus_last_error()[0] == '\0');
    CHECK(nucleus_token_trie_fill_bitmask(t, N_VOCAB, mask, N_WORDS) == NUCLEUS_OK);
    CHECK(bit(mask, 101) && bit(mask, 102) && count(mask) == 2);
    CHECK(nucleus_token_trie_accept(t, 101) == NUCLEUS_OK);
    CHECK(nucleus_token_trie_is_active(t) == 0);
    const char *leaf = nucleus_token_trie_leaf(t);
    CHECK(leaf != NULL && strcmp(leaf, "THINK") == 0);
    CHECK(nucleus_token_trie_fill_bitmask(t, N_VOCAB, mask, N_WORDS) == NUCLEUS_OK && count(mask) == N_VOCAB);
    for (int i = 0; i < N_VOCAB; i++) logits[i] = (float)i;
    CHECK(nucleus_token_trie_apply(t, logits, N_VOCAB) == NUCLEUS_OK && logits[999] == 999.0f);
    CHECK(nucleus_token_trie_accept(t, 999) == NUCLEUS_OK); /* the constrained span is over */

    /* Fast-forward: after [100, 102] the rest of TALK is forced. */
    CHECK(nucleus_token_trie_forced(c, forced, 8) == 0); /* 100 and 200 both possible */
    CHECK(nucleus_token_trie_accept(c, 100) == NUCLEUS_OK);
    CHECK(nucleus_token_trie_forced(c, forced, 8) == 0); /* 101 or 102 */
    CHECK(nucleus_token_trie_accept(c, 102) == NUCLEUS_OK);
    CHECK(nucleus_token_trie_forced(c, NULL, 0) == 2);
    CHECK(nucleus_token_trie_forced(c, forced, 1) == 2 && forced[0] == 103);
    CHECK(nucleus_token_trie_forced(c, forced, 8) == 2 && forced[0] == 103 && forced[1] == 104);
    for (int i = 0; i < 2; i++) CHECK(nucleus_token_trie_accept(c, forced[i]) == NUCLEUS_OK);
    leaf = nucleus_token_trie_leaf(c);
    CHECK(leaf != NULL && strcmp(leaf, "TALK") == 0);
    CHECK(nucleus_token_trie_is_active(c) == 0);

    /* Reset returns to the root. */
    nucleus_token_trie_reset(c);
    CHECK(nucleus_token_trie_is_active(c) == 1);
    CHECK(nucleus_token_trie_fill_bitmask(c, N_VOCAB, mask, N_WORDS) == NUCLEUS_OK && count(mask) == 2);
    /* A descriptor token outside the caller's vocabulary is an error. */
    CHECK(nucleus_token_trie_fill_bitmask(c, 150, mask, (150 + 31) / 32) == NUCLEUS_ERR_INVALID);
    nucleus_token_trie_free(c);
    nucleus_token_trie_free(t);

    /* Several paths: their leaves form one trie. */
    const char *two = "{\"modelId\": \"m\", \"descriptors\": ["
                      "{\"path\": \"a\", \"leaves\": [{\"name\": \"A\", \"tokens\": [1]}]},"
                      "{\"path\": \"b\", \"leaves\": [{\"name\": \"B\", \"tokens\": [2, 3]}]}]}";
    t = trie(two, 1);
    CHECK(nucleus_token_trie_fill_bitmask(t, N_VOCAB, mask, N_WORDS) == NUCLEUS_OK);
    CHECK(bit(mask, 1) && bit(mask, 2) && count(mask) == 2);
    nucleus_token_trie_free(t);

    if (failures) {
        fprintf(stderr, "%d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("ok %d\n", checks);
    return 0;
}
