/* Calls every function with NULL pointers, wrong sizes and bad values: each must return an
 * error (negative code or NULL) with a message in nucleus_last_error(), and nothing may crash.
 * Run under valgrind by the test when it is installed. Prints "ok N" on success. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nucleus.h"

static int failures = 0;
static int checks = 0;

static void expect_code(int got, int want, const char *what) {
    checks++;
    const char *msg = nucleus_last_error();
    if (got != want || msg == NULL || msg[0] == '\0') {
        fprintf(stderr, "FAIL %s: got %d (want %d), message \"%s\"\n", what, got, want, msg ? msg : "(null)");
        failures++;
    }
}

static void expect_null(const void *p, const char *what) {
    checks++;
    const char *msg = nucleus_last_error();
    if (p != NULL || msg == NULL || msg[0] == '\0') {
        fprintf(stderr, "FAIL %s: expected NULL with a message, got %p \"%s\"\n", what, p, msg ? msg : "(null)");
        failures++;
    }
}

static void expect_ok(int got, const char *what) {
    checks++;
    const char *msg = nucleus_last_error();
    if (got < 0 || msg == NULL || msg[0] != '\0') {
        fprintf(stderr, "FAIL %s: got %d, message \"%s\"\n", what, got, msg ? msg : "(null)");
        failures++;
    }
}

static void sampler_checks(void) {
    float logits[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    uint16_t half[8] = {0};
    int32_t ids[2];
    float lps[2];
    double e;

    expect_null(nucleus_sampler_new(8, NULL), "new(NULL json)");
    expect_null(nucleus_sampler_new(0, "{}"), "new(n_vocab 0)");
    expect_null(nucleus_sampler_new(-5, "{}"), "new(n_vocab -5)");
    expect_null(nucleus_sampler_new(8, ""), "new(empty json)");
    expect_null(nucleus_sampler_new(8, "{\"top_k\": "), "new(truncated json)");
    expect_null(nucleus_sampler_new(8, "{\"tmp\": 1}"), "new(unknown field)");
    expect_null(nucleus_sampler_new(8, "{\"top_p\": 1.5}"), "new(top_p 1.5)");
    expect_null(nucleus_sampler_new(8, "{\"logit_bias\": [[8, 1]]}"), "new(bias outside vocab)");
    expect_null(nucleus_sampler_new(8, "{\"ignore_eos\": true}"), "new(ignore_eos without vocab)");
    expect_null(nucleus_sampler_new(8, "{\"dry_multiplier\": 0.8}"), "new(dry breakers without vocab)");
    expect_null(nucleus_sampler_new(8, "\xff\xfe"), "new(invalid UTF-8)");

    expect_code(nucleus_sampler_sample(NULL, logits, 8), NUCLEUS_ERR_NULL, "sample(NULL s)");
    expect_code(nucleus_sampler_sample_f16(NULL, half, 8), NUCLEUS_ERR_NULL, "sample_f16(NULL s)");
    expect_code(nucleus_sampler_sample_bf16(NULL, half, 8), NUCLEUS_ERR_NULL, "sample_bf16(NULL s)");
    expect_code(nucleus_sampler_accept(NULL, 1), NUCLEUS_ERR_NULL, "accept(NULL)");
    nucleus_sampler_reset(NULL);
    expect_code(-1, -1, "reset(NULL) reports");
    expect_null(nucleus_sampler_clone(NULL), "clone(NULL)");
    nucleus_sampler_free(NULL);
    expect_ok(0, "free(NULL) is a no-op");
    expect_code(nucleus_sampler_n_vocab(NULL), NUCLEUS_ERR_NULL, "n_vocab(NULL)");
    expect_code(nucleus_sampler_set_n_probs(NULL, 2), NUCLEUS_ERR_NULL, "set_n_probs(NULL)");
    expect_code(nucleus_sampler_last_probs(NULL, ids, lps, 2), NUCLEUS_ERR_NULL, "last_probs(NULL s)");
    expect_code(nucleus_sampler_last_entropy(NULL, &e), NUCLEUS_ERR_NULL, "last_entropy(NULL s)");

    nucleus_sampler *s = nucleus_sampler_new(8, "{\"seed\": 1}");
    if (!s) {
        fprintf(stderr, "FAIL new: %s\n", nucleus_last_error());
        failures++;
        return;
    }
    expect_code(nucleus_sampler_sample(s, NULL, 8), NUCLEUS_ERR_NULL, "sample(NULL logits)");
    expect_code(nucleus_sampler_sample(s, logits, 7), NUCLEUS_ERR_SIZE, "sample(n_logits 7)");
    expect_code(nucleus_sampler_sample(s, logits, 0), NUCLEUS_ERR_SIZE, "sample(n_logits 0)");
    expect_code(nucleus_sampler_sample(s, logits, (size_t)-1), NUCLEUS_ERR_SIZE, "sample(n_logits SIZE_MAX)");
    expect_code(nucleus_sampler_sample_f16(s, NULL, 8), NUCLEUS_ERR_NULL, "sample_f16(NULL logits)");
    expect_code(nucleus_sampler_sample_bf16(s, half, 9), NUCLEUS_ERR_SIZE, "sample_bf16(n 9)");
    expect_code(nucleus_sampler_sample((nucleus_sampler *)(void *)((char *)logits + 1), logits, 8),
                NUCLEUS_ERR_INVALID, "sample(misaligned handle)");
    expect_code(nucleus_sampler_sample(s, (const float *)(const void *)((const char *)logits + 1), 7),
                NUCLEUS_ERR_INVALID, "sample(misaligned logits)");
    logits[3] = NAN;
    expect_code(nucleus_sampler_sample(s, logits, 8), NUCLEUS_ERR_SAMPLE, "sample(NaN)");
    logits[3] = INFINITY;
    expect_code(nucleus_sampler_sample(s, logits, 8), NUCLEUS_ERR_SAMPLE, "sample(+inf)");
    for (int i = 0; i < 8; i++) logits[i] = -INFINITY;
    expect_code(nucleus_sampler_sample(s, logits, 8), NUCLEUS_ERR_SAMPLE, "sample(all -inf)");
    half[2] = 0x7e00; /* f16 NaN */
    expect_code(nucleus_sampler_sample_f16(s, half, 8), NUCLEUS_ERR_SAMPLE, "sample_f16(NaN)");
    half[2] = 0x7f80; /* bf16 +inf */
    expect_code(nucleus_sampler_sample_bf16(s, half, 8), NUCLEUS_ERR_SAMPLE, "sample_bf16(+inf)");
    expect_code(nucleus_sampler_accept(s, 8), NUCLEUS_ERR_INVALID, "accept(8)");
    expect_code(nucleus_sampler_accept(s, -1), NUCLEUS_ERR_INVALID, "accept(-1)");
    expect_code(nucleus_sampler_last_entropy(s, &e), NUCLEUS_ERR_INVALID, "last_entropy(before any)");
    expect_code(nucleus_sampler_last_entropy(s, NULL), NUCLEUS_ERR_NULL, "last_entropy(NULL out)");
    expect_code(nucleus_sampler_last_probs(s, NULL, lps, 2), NUCLEUS_ERR_NULL, "last_probs(NULL ids)");
    expect_code(nucleus_sampler_last_probs(s, ids, NULL, 2), NUCLEUS_ERR_NULL, "last_probs(NULL logprobs)");
    /* Errors left the sampler usable. */
    for (int i = 0; i < 8; i++) logits[i] = (float)i;
    expect_ok(nucleus_sampler_sample(s, logits, 8), "sample after errors");
    expect_ok(nucleus_sampler_accept(s, 3), "accept(3)");
    expect_ok(nucleus_sampler_last_probs(s, ids, lps, 2), "last_probs (n_probs 0)");
    nucleus_sampler_free(s);
}

int main(void) {
    sampler_checks();
    if (failures) {
        fprintf(stderr, "%d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("ok %d\n", checks);
    return 0;
}
