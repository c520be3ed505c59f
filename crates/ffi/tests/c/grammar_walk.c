/* Walks a grammar (GBNF or JSON Schema) over a vocabulary read from a file, through libnucleus.
 * usage: grammar_walk VOCAB_FILE EOG_ID gbnf|schema GRAMMAR_FILE TOKEN...
 * VOCAB_FILE: uint32 n, then n times (uint32 len, len bytes), little-endian.
 * Before each token prints "mask I: w0 w1 ..." (hex words of the packed bitmask), then accepts
 * the token; at the end prints "end: can_end complete". Also checks is_allowed against the
 * mask, that a clone taken halfway gives the same masks, that a token outside the mask is
 * rejected without changing the state, that rolling back k accepted tokens gives the mask of k
 * steps earlier (and rolling back more than were accepted is refused, changing nothing), and
 * that reset gives the first mask again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nucleus.h"

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, nucleus_last_error());
    return 1;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) return NULL;
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static uint32_t u32_at(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s VOCAB_FILE EOG_ID gbnf|schema GRAMMAR_FILE TOKEN...\n", argv[0]);
        return 2;
    }
    size_t vlen = 0, glen = 0;
    unsigned char *vbuf = read_file(argv[1], &vlen);
    char *gtext = (char *)read_file(argv[4], &glen);
    if (!vbuf || !gtext) return 2;
    uint32_t n_vocab = u32_at(vbuf);
    const char **pieces = malloc(sizeof(char *) * n_vocab);
    size_t *lengths = malloc(sizeof(size_t) * n_vocab);
    size_t at = 4;
    for (uint32_t i = 0; i < n_vocab; i++) {
        lengths[i] = u32_at(vbuf + at);
        pieces[i] = (const char *)vbuf + at + 4;
        at += 4 + lengths[i];
    }
    int32_t eog = atoi(argv[2]);
    nucleus_vocab *vocab = nucleus_vocab_new(pieces, lengths, (int32_t)n_vocab, &eog, 1);
    if (!vocab) return fail("nucleus_vocab_new");
    if (nucleus_vocab_n_vocab(vocab) != (int32_t)n_vocab) return fail("nucleus_vocab_n_vocab");

    nucleus_grammar *g = strcmp(argv[3], "gbnf") == 0 ? nucleus_grammar_new(vocab, gtext, NULL)
                                                       : nucleus_grammar_new_json_schema(vocab, gtext);
    if (!g) return fail("nucleus_grammar_new");
    nucleus_vocab_free(vocab); /* the grammar keeps its own reference */

    size_t n_words = (n_vocab + 31) / 32;
    uint32_t *mask = malloc(sizeof(uint32_t) * n_words);
    uint32_t *first = malloc(sizeof(uint32_t) * n_words);
    uint32_t *other = malloc(sizeof(uint32_t) * n_words);
    float *logits = malloc(sizeof(float) * n_vocab);
    int n_tokens = argc - 5;
    nucleus_grammar *half = NULL;
    uint32_t **masks = malloc(sizeof(uint32_t *) * (size_t)(n_tokens + 1));
    for (int i = 0; i <= n_tokens; i++) {
        if (i == n_tokens / 2) {
            half = nucleus_grammar_clone(g);
            if (!half) return fail("nucleus_grammar_clone");
        }
        if (nucleus_grammar_fill_bitmask(g, mask, n_words) != NUCLEUS_OK) return fail("fill_bitmask");
        masks[i] = malloc(sizeof(uint32_t) * n_words);
        memcpy(masks[i], mask, sizeof(uint32_t) * n_words);
        if (i == 0) memcpy(first, mask, sizeof(uint32_t) * n_words);
        printf("mask %d:", i);
        for (size_t w = 0; w < n_words; w++) printf(" %08x", mask[w]);
        printf("\n");
        /* is_allowed and apply agree with the mask. */
        for (uint32_t t = 0; t < n_vocab; t++) logits[t] = 1.0f;
        if (nucleus_grammar_apply(g, logits, n_vocab) != NUCLEUS_OK) return fail("apply");
        int32_t rejected = -1;
        for (uint32_t t = 0; t < n_vocab; t++) {
            int bit = (mask[t / 32] >> (t % 32)) & 1;
            int allowed = nucleus_grammar_is_allowed(g, (int32_t)t);
            if (allowed < 0) return fail("is_allowed");
            if (allowed != bit || (logits[t] == 1.0f) != bit) {
                fprintf(stderr, "step %d token %u: mask %d, is_allowed %d, logit %g\n", i, t, bit, allowed,
                        (double)logits[t]);
                return 1;
            }
            /* Token 0 is "\0": its text is empty (cut at the NUL, as llama.cpp cuts it), which every
             * grammar accepts without moving; any other token outside the mask is refused. */
            if (!bit && rejected < 0 && t > 0) rejected = (int32_t)t;
        }
        if (i == n_tokens) break;
        /* A refused token leaves the state as it was. */
        if (rejected >= 0) {
            if (nucleus_grammar_accept(g, rejected) != NUCLEUS_ERR_REJECTED) {
                fprintf(stderr, "token %d outside the mask was not rejected\n", rejected);
                return 1;
            }
            if (nucleus_grammar_fill_bitmask(g, other, n_words) != NUCLEUS_OK) return fail("fill_bitmask");
            if (memcmp(other, mask, sizeof(uint32_t) * n_words) != 0) {
                fprintf(stderr, "a rejected token changed the mask at step %d\n", i);
                return 1;
            }
        }
        if (nucleus_grammar_accept(g, atoi(argv[5 + i])) != NUCLEUS_OK) return fail("nucleus_grammar_accept");
    }
    printf("end: %d %d\n", nucleus_grammar_can_end(g), nucleus_grammar_is_complete(g));

    /* The clone continues with the same masks. */
    for (int i = n_tokens / 2; i <= n_tokens; i++) {
        if (nucleus_grammar_fill_bitmask(half, other, n_words) != NUCLEUS_OK) return fail("clone fill");
        if (memcmp(other, masks[i], sizeof(uint32_t) * n_words) != 0) {
            fprintf(stderr, "clone's mask differs at step %d\n", i);
            return 1;
        }
        if (i < n_tokens && nucleus_grammar_accept(half, atoi(argv[5 + i])) != NUCLEUS_OK) return fail("clone accept");
    }
    nucleus_grammar_free(half);

    /* Rollback: every accepted token counts (the rejected ones do not); all or nothing. */
    if (nucleus_grammar_num_accepted(g) != n_tokens) {
        fprintf(stderr, "num_accepted %d, want %d\n", nucleus_grammar_num_accepted(g), n_tokens);
        return 1;
    }
    if (nucleus_grammar_rollback(g, (size_t)n_tokens + 1) != NUCLEUS_ERR_INVALID) {
        fprintf(stderr, "rolling back more tokens than were accepted was not refused\n");
        return 1;
    }
    if (nucleus_grammar_num_accepted(g) != n_tokens) return fail("a refused rollback changed the history");
    int back = n_tokens / 3 + 1;
    for (int done = 0; done < n_tokens;) {
        int k = done + back > n_tokens ? n_tokens - done : back;
        if (nucleus_grammar_rollback(g, (size_t)k) != NUCLEUS_OK) return fail("nucleus_grammar_rollback");
        done += k;
        if (nucleus_grammar_fill_bitmask(g, other, n_words) != NUCLEUS_OK) return fail("fill after rollback");
        if (memcmp(other, masks[n_tokens - done], sizeof(uint32_t) * n_words) != 0 ||
            nucleus_grammar_num_accepted(g) != n_tokens - done) {
            fprintf(stderr, "after rolling back to step %d the mask or count differs\n", n_tokens - done);
            return 1;
        }
    }
    if (nucleus_grammar_rollback(g, 0) != NUCLEUS_OK) return fail("rollback(0)");
    /* Walking forward again after a rollback gives the same masks. */
    for (int i = 0; i < n_tokens / 2; i++) {
        if (nucleus_grammar_accept(g, atoi(argv[5 + i])) != NUCLEUS_OK) return fail("accept after rollback");
    }
    if (nucleus_grammar_fill_bitmask(g, other, n_words) != NUCLEUS_OK) return fail("fill after re-walk");
    if (memcmp(other, masks[n_tokens / 2], sizeof(uint32_t) * n_words) != 0) {
        fprintf(stderr, "re-walking after a rollback gives another mask\n");
        return 1;
    }

    nucleus_grammar_reset(g);
    if (nucleus_grammar_num_accepted(g) != 0) return fail("reset kept the history");
    if (nucleus_grammar_fill_bitmask(g, other, n_words) != NUCLEUS_OK) return fail("fill after reset");
    if (memcmp(other, first, sizeof(uint32_t) * n_words) != 0) {
        fprintf(stderr, "reset did not return to the first mask\n");
        return 1;
    }
    nucleus_grammar_free(g);
    for (int i = 0; i <= n_tokens; i++) free(masks[i]);
    free(masks);
    free(mask);
    free(first);
    free(other);
    free(logits);
    free(pieces);
    free(lengths);
    free(vbuf);
    free(gtext);
    return 0;
}
