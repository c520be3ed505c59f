/* Calls every function with NULL pointers, wrong sizes and bad values: each must return an
 * error (negative code or NULL) with a message in nucleus_last_error(), and nothing may crash.
 * Run under valgrind by the test when it is installed. Prints "ok N" on success (and "llm
 * handle checks done" when given a model path, which adds checks on a live nucleus_llm). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

static void grammar_checks(void) {
    const char *pieces[4] = {"a", "b", "ab", "</s>"};
    size_t lengths[4] = {1, 1, 2, 4};
    int32_t eog = 3, bad_eog = 4;
    uint32_t mask[1];
    float logits[4] = {0, 0, 0, 0};

    expect_null(nucleus_vocab_new(NULL, lengths, 4, &eog, 1), "vocab_new(NULL pieces)");
    expect_null(nucleus_vocab_new(pieces, NULL, 4, &eog, 1), "vocab_new(NULL lengths)");
    expect_null(nucleus_vocab_new(pieces, lengths, 0, &eog, 1), "vocab_new(n_vocab 0)");
    expect_null(nucleus_vocab_new(pieces, lengths, -1, &eog, 1), "vocab_new(n_vocab -1)");
    expect_null(nucleus_vocab_new(pieces, lengths, 4, NULL, 1), "vocab_new(NULL eog_ids)");
    expect_null(nucleus_vocab_new(pieces, lengths, 4, &bad_eog, 1), "vocab_new(eog outside)");
    const char *holey[2] = {"a", NULL};
    size_t holey_len[2] = {1, 3};
    expect_null(nucleus_vocab_new(holey, holey_len, 2, NULL, 0), "vocab_new(NULL piece with length)");
    expect_code(nucleus_vocab_n_vocab(NULL), NUCLEUS_ERR_NULL, "vocab_n_vocab(NULL)");
    nucleus_vocab_free(NULL);

    nucleus_vocab *v = nucleus_vocab_new(pieces, lengths, 4, &eog, 1);
    if (!v) {
        fprintf(stderr, "FAIL vocab_new: %s\n", nucleus_last_error());
        failures++;
        return;
    }
    expect_null(nucleus_grammar_new(NULL, "root ::= \"a\"", NULL), "grammar_new(NULL vocab)");
    expect_null(nucleus_grammar_new(v, NULL, NULL), "grammar_new(NULL gbnf)");
    expect_null(nucleus_grammar_new(v, "", NULL), "grammar_new(empty gbnf)");
    expect_null(nucleus_grammar_new(v, "root ::= (", NULL), "grammar_new(syntax error)");
    expect_null(nucleus_grammar_new(v, "root ::= \"a\"", "start"), "grammar_new(missing start rule)");
    expect_null(nucleus_grammar_new_json_schema(NULL, "{}"), "grammar_new_json_schema(NULL vocab)");
    expect_null(nucleus_grammar_new_json_schema(v, NULL), "grammar_new_json_schema(NULL schema)");
    expect_null(nucleus_grammar_new_json_schema(v, "{"), "grammar_new_json_schema(bad JSON)");
    expect_null(nucleus_grammar_new_json_schema(v, "{\"if\": {}}"), "grammar_new_json_schema(refused keyword)");
    /* A handle of another kind is refused. */
    nucleus_sampler *s = nucleus_sampler_new(4, "{}");
    expect_null(nucleus_grammar_new((const nucleus_vocab *)(const void *)s, "root ::= \"a\"", NULL),
                "grammar_new(sampler as vocab)");
    nucleus_sampler_free(s);
    expect_code(nucleus_grammar_fill_bitmask(NULL, mask, 1), NUCLEUS_ERR_NULL, "fill_bitmask(NULL g)");
    expect_code(nucleus_grammar_apply(NULL, logits, 4), NUCLEUS_ERR_NULL, "apply(NULL g)");
    expect_code(nucleus_grammar_is_allowed(NULL, 0), NUCLEUS_ERR_NULL, "is_allowed(NULL)");
    expect_code(nucleus_grammar_accept(NULL, 0), NUCLEUS_ERR_NULL, "grammar_accept(NULL)");
    expect_code(nucleus_grammar_can_end(NULL), NUCLEUS_ERR_NULL, "can_end(NULL)");
    expect_code(nucleus_grammar_is_complete(NULL), NUCLEUS_ERR_NULL, "is_complete(NULL)");
    expect_code(nucleus_grammar_rollback(NULL, 0), NUCLEUS_ERR_NULL, "rollback(NULL)");
    expect_code(nucleus_grammar_num_accepted(NULL), NUCLEUS_ERR_NULL, "num_accepted(NULL)");
    nucleus_grammar_reset(NULL);
    expect_code(-1, -1, "grammar_reset(NULL) reports");
    expect_null(nucleus_grammar_clone(NULL), "grammar_clone(NULL)");
    nucleus_grammar_free(NULL);

    nucleus_grammar *g = nucleus_grammar_new(v, "root ::= \"ab\"", NULL);
    nucleus_vocab_free(v);
    if (!g) {
        fprintf(stderr, "FAIL grammar_new: %s\n", nucleus_last_error());
        failures++;
        return;
    }
    expect_code(nucleus_grammar_fill_bitmask(g, NULL, 1), NUCLEUS_ERR_NULL, "fill_bitmask(NULL mask)");
    expect_code(nucleus_grammar_fill_bitmask(g, mask, 2), NUCLEUS_ERR_SIZE, "fill_bitmask(2 words)");
    expect_code(nucleus_grammar_fill_bitmask(g, mask, 0), NUCLEUS_ERR_SIZE, "fill_bitmask(0 words)");
    expect_code(nucleus_grammar_apply(g, NULL, 4), NUCLEUS_ERR_NULL, "apply(NULL logits)");
    expect_code(nucleus_grammar_apply(g, logits, 3), NUCLEUS_ERR_SIZE, "apply(3 logits)");
    expect_code(nucleus_grammar_is_allowed(g, 4), NUCLEUS_ERR_INVALID, "is_allowed(4)");
    expect_code(nucleus_grammar_accept(g, -1), NUCLEUS_ERR_INVALID, "grammar_accept(-1)");
    expect_code(nucleus_grammar_accept(g, 1), NUCLEUS_ERR_REJECTED, "grammar_accept(b)");
    expect_code(nucleus_grammar_accept(g, 3), NUCLEUS_ERR_REJECTED, "grammar_accept(eog before the end)");
    expect_ok(nucleus_grammar_fill_bitmask(g, mask, 1), "fill_bitmask");
    if (mask[0] != 0x5u) {
        fprintf(stderr, "FAIL mask %#x, want 0x5 (a, ab)\n", mask[0]);
        failures++;
    }
    expect_ok(nucleus_grammar_accept(g, 2), "grammar_accept(ab)");
    expect_ok(nucleus_grammar_fill_bitmask(g, mask, 1), "fill_bitmask at the end");
    if (mask[0] != 0x8u || nucleus_grammar_can_end(g) != 1 || nucleus_grammar_is_complete(g) != 1) {
        fprintf(stderr, "FAIL end mask %#x, want 0x8 (eog)\n", mask[0]);
        failures++;
    }
    if (nucleus_grammar_num_accepted(g) != 1) {
        fprintf(stderr, "FAIL num_accepted %d, want 1 (rejected tokens do not count)\n", nucleus_grammar_num_accepted(g));
        failures++;
    }
    expect_code(nucleus_grammar_rollback(g, 2), NUCLEUS_ERR_INVALID, "rollback(2 of 1)");
    expect_ok(nucleus_grammar_rollback(g, 1), "rollback(1)");
    expect_ok(nucleus_grammar_fill_bitmask(g, mask, 1), "fill_bitmask after rollback");
    if (mask[0] != 0x5u || nucleus_grammar_num_accepted(g) != 0) {
        fprintf(stderr, "FAIL mask after rollback %#x, want 0x5\n", mask[0]);
        failures++;
    }
    nucleus_grammar_free(g);
}

static void trie_checks(void) {
    const char *d = "{\"modelId\": \"m\", \"descriptors\": [{\"path\": \"p\", \"leaves\": [{\"name\": \"X\", \"tokens\": [1, 2]}]}]}";
    uint32_t mask[1];
    float logits[4] = {0, 0, 0, 0};
    int32_t out[2];
    expect_null(nucleus_token_trie_new(NULL, 10, 0), "trie_new(NULL)");
    expect_null(nucleus_token_trie_new(d, 0, 0), "trie_new(len 0)");
    expect_null(nucleus_token_trie_new(d, strlen(d), -1), "trie_new(mode -1)");
    expect_null(nucleus_token_trie_new("\xff", 1, 0), "trie_new(invalid UTF-8)");
    expect_code(nucleus_token_trie_is_active(NULL), NUCLEUS_ERR_NULL, "trie_is_active(NULL)");
    expect_code(nucleus_token_trie_fill_bitmask(NULL, 4, mask, 1), NUCLEUS_ERR_NULL, "trie_fill_bitmask(NULL)");
    expect_code(nucleus_token_trie_apply(NULL, logits, 4), NUCLEUS_ERR_NULL, "trie_apply(NULL)");
    expect_code(nucleus_token_trie_accept(NULL, 1), NUCLEUS_ERR_NULL, "trie_accept(NULL)");
    expect_code(nucleus_token_trie_forced(NULL, out, 2), NUCLEUS_ERR_NULL, "trie_forced(NULL)");
    expect_null(nucleus_token_trie_leaf(NULL), "trie_leaf(NULL)");
    nucleus_token_trie_reset(NULL);
    expect_code(-1, -1, "trie_reset(NULL) reports");
    expect_null(nucleus_token_trie_clone(NULL), "trie_clone(NULL)");
    nucleus_token_trie_free(NULL);

    nucleus_token_trie *t = nucleus_token_trie_new(d, strlen(d), 0);
    if (!t) {
        fprintf(stderr, "FAIL trie_new: %s\n", nucleus_last_error());
        failures++;
        return;
    }
    expect_code(nucleus_token_trie_fill_bitmask(t, 4, NULL, 1), NUCLEUS_ERR_NULL, "trie_fill_bitmask(NULL mask)");
    expect_code(nucleus_token_trie_fill_bitmask(t, 4, mask, 0), NUCLEUS_ERR_SIZE, "trie_fill_bitmask(0 words)");
    expect_code(nucleus_token_trie_fill_bitmask(t, 0, mask, 1), NUCLEUS_ERR_SIZE, "trie_fill_bitmask(n_vocab 0)");
    expect_code(nucleus_token_trie_fill_bitmask(t, 1, mask, 1), NUCLEUS_ERR_INVALID, "trie_fill_bitmask(token outside)");
    expect_code(nucleus_token_trie_apply(t, NULL, 4), NUCLEUS_ERR_NULL, "trie_apply(NULL logits)");
    expect_code(nucleus_token_trie_apply(t, logits, 0), NUCLEUS_ERR_SIZE, "trie_apply(0 logits)");
    expect_code(nucleus_token_trie_apply(t, logits, 1), NUCLEUS_ERR_INVALID, "trie_apply(token outside)");
    expect_code(nucleus_token_trie_forced(t, NULL, 2), NUCLEUS_ERR_NULL, "trie_forced(NULL out)");
    expect_code(nucleus_token_trie_accept(t, 3), NUCLEUS_ERR_REJECTED, "trie_accept(3)");
    expect_code(nucleus_token_trie_accept(t, -7), NUCLEUS_ERR_REJECTED, "trie_accept(-7)");
    expect_ok(nucleus_token_trie_forced(t, out, 2), "trie_forced");
    expect_code(nucleus_sampler_n_vocab((const nucleus_sampler *)(const void *)t), NUCLEUS_ERR_INVALID,
                "sampler_n_vocab(trie handle)");
    nucleus_token_trie_free(t);
}

static void on_token_nop(int32_t token, const char *text, int32_t done, void *user_data) {
    (void)token;
    (void)text;
    (void)done;
    (*(int *)user_data)++;
}

/* The streaming handle: NULL handles and arguments always; with a model path, wrong sizes and
 * bad values on a live handle. */
static void llm_checks(const char *model) {
    int32_t ids[4] = {1, 2, 3, 4};
    char text[8];
    int calls = 0;
    expect_null(nucleus_llm_open(NULL, "{}"), "llm_open(NULL model)");
    expect_null(nucleus_llm_open("model.gguf", NULL), "llm_open(NULL options)");
    expect_null(nucleus_llm_open("/nonexistent/model.gguf", "{}"), "llm_open(missing file)");
    expect_null(nucleus_llm_open("no-such-model-name", "{}"), "llm_open(unknown name)");
    expect_null(nucleus_llm_open("/nonexistent/model.gguf", "{\"threads\": 0}"), "llm_open(threads 0)");
    expect_null(nucleus_llm_open("/nonexistent/model.gguf", "{\"ctx\": 1}"), "llm_open(unknown option)");
    expect_null(nucleus_llm_open("/nonexistent/model.gguf", "{"), "llm_open(bad JSON)");
    expect_code(nucleus_llm_n_vocab(NULL), NUCLEUS_ERR_NULL, "llm_n_vocab(NULL)");
    expect_code(nucleus_llm_n_ctx(NULL), NUCLEUS_ERR_NULL, "llm_n_ctx(NULL)");
    expect_code(nucleus_llm_tokenize(NULL, "a", 1, ids, 4, true, true), NUCLEUS_ERR_NULL, "llm_tokenize(NULL)");
    expect_code(nucleus_llm_tokenize_chat(NULL, "[]", ids, 4), NUCLEUS_ERR_NULL, "llm_tokenize_chat(NULL)");
    expect_code(nucleus_llm_detokenize(NULL, ids, 1, text, 8, false), NUCLEUS_ERR_NULL, "llm_detokenize(NULL)");
    expect_code(nucleus_llm_prefill(NULL, ids, 1), NUCLEUS_ERR_NULL, "llm_prefill(NULL)");
    expect_code(nucleus_llm_reset(NULL), NUCLEUS_ERR_NULL, "llm_reset(NULL)");
    expect_code(nucleus_llm_generate(NULL, 1, "{}", on_token_nop, &calls), NUCLEUS_ERR_NULL, "llm_generate(NULL)");
    expect_code(nucleus_llm_cancel(NULL), NUCLEUS_ERR_NULL, "llm_cancel(NULL)");
    expect_code(nucleus_llm_set_token_trie(NULL, "{}", 2, 0), NUCLEUS_ERR_NULL, "llm_set_token_trie(NULL)");
    expect_code(nucleus_llm_clear_token_trie(NULL), NUCLEUS_ERR_NULL, "llm_clear_token_trie(NULL)");
    expect_code(nucleus_llm_set_draft_model(NULL, "model.gguf"), NUCLEUS_ERR_NULL, "llm_set_draft_model(NULL)");
    nucleus_llm_close(NULL);
    /* A handle of another kind is refused, not misread. */
    nucleus_sampler *s = nucleus_sampler_new(4, "{}");
    expect_code(nucleus_llm_n_vocab((const nucleus_llm *)(const void *)s), NUCLEUS_ERR_INVALID, "llm_n_vocab(sampler)");
    nucleus_llm_close((nucleus_llm *)(void *)s);
    expect_code(-3, -3, "llm_close(sampler) reports");
    nucleus_sampler_free(s);
    if (model == NULL) return;

    nucleus_llm *h = nucleus_llm_open(model, "{\"n_ctx\": 16, \"threads\": 1}");
    if (!h) {
        fprintf(stderr, "FAIL llm_open(%s): %s\n", model, nucleus_last_error());
        failures++;
        return;
    }
    int n_vocab = nucleus_llm_n_vocab(h);
    expect_ok(n_vocab, "llm_n_vocab");
    expect_ok(nucleus_llm_n_ctx(h), "llm_n_ctx");
    expect_code(nucleus_llm_tokenize(h, NULL, 1, ids, 4, true, true), NUCLEUS_ERR_NULL, "llm_tokenize(NULL text)");
    expect_code(nucleus_llm_tokenize(h, "\xff", 1, ids, 4, true, true), NUCLEUS_ERR_INVALID, "llm_tokenize(bad UTF-8)");
    expect_code(nucleus_llm_tokenize(h, "hello", 5, NULL, 4, true, true), NUCLEUS_ERR_NULL, "llm_tokenize(NULL out)");
    expect_ok(nucleus_llm_tokenize(h, "hello", 5, NULL, 0, true, true), "llm_tokenize(size query)");
    expect_ok(nucleus_llm_tokenize(h, "", 0, NULL, 0, false, false), "llm_tokenize(empty)");
    expect_code(nucleus_llm_tokenize_chat(h, NULL, ids, 4), NUCLEUS_ERR_NULL, "llm_tokenize_chat(NULL json)");
    expect_code(nucleus_llm_tokenize_chat(h, "{}", ids, 4), NUCLEUS_ERR_INVALID, "llm_tokenize_chat(object)");
    expect_code(nucleus_llm_tokenize_chat(h, "[{\"role\": 1}]", ids, 4), NUCLEUS_ERR_INVALID,
                "llm_tokenize_chat(bad message)");
    expect_ok(nucleus_llm_tokenize_chat(h, "[{\"role\": \"user\", \"content\": \"Hi\"}]", NULL, 0),
              "llm_tokenize_chat(size query)");
    expect_code(nucleus_llm_detokenize(h, NULL, 1, text, 8, false), NUCLEUS_ERR_NULL, "llm_detokenize(NULL tokens)");
    expect_code(nucleus_llm_detokenize(h, ids, 1, NULL, 8, false), NUCLEUS_ERR_NULL, "llm_detokenize(NULL text)");
    int32_t bad = n_vocab;
    expect_code(nucleus_llm_detokenize(h, &bad, 1, text, 8, false), NUCLEUS_ERR_INVALID, "llm_detokenize(token outside)");
    bad = -1;
    expect_code(nucleus_llm_detokenize(h, &bad, 1, text, 8, false), NUCLEUS_ERR_INVALID, "llm_detokenize(token -1)");
    expect_ok(nucleus_llm_detokenize(h, NULL, 0, text, 8, false), "llm_detokenize(no tokens)");
    expect_code(nucleus_llm_prefill(h, NULL, 1), NUCLEUS_ERR_NULL, "llm_prefill(NULL tokens)");
    expect_code(nucleus_llm_prefill(h, ids, 0), NUCLEUS_ERR_SIZE, "llm_prefill(0 tokens)");
    bad = n_vocab;
    expect_code(nucleus_llm_prefill(h, &bad, 1), NUCLEUS_ERR_INVALID, "llm_prefill(token outside)");
    int n_ctx = nucleus_llm_n_ctx(h);
    int32_t *many = calloc(n_ctx > 0 ? (size_t)n_ctx : 1, sizeof(int32_t));
    expect_code(nucleus_llm_prefill(h, many, n_ctx > 0 ? (size_t)n_ctx : 1), NUCLEUS_ERR_SIZE,
                "llm_prefill(n_ctx tokens)");
    free(many);
    expect_code(nucleus_llm_generate(h, 1, "{}", on_token_nop, &calls), NUCLEUS_ERR_INVALID, "llm_generate(empty context)");
    expect_ok(nucleus_llm_prefill(h, ids, 2), "llm_prefill");
    expect_code(nucleus_llm_generate(h, 1, NULL, on_token_nop, &calls), NUCLEUS_ERR_NULL, "llm_generate(NULL params)");
    expect_code(nucleus_llm_generate(h, 1, "{}", NULL, &calls), NUCLEUS_ERR_NULL, "llm_generate(NULL callback)");
    expect_code(nucleus_llm_generate(h, 1, "{\"tmp\": 0}", on_token_nop, &calls), NUCLEUS_ERR_INVALID,
                "llm_generate(unknown param)");
    expect_code(nucleus_llm_set_token_trie(h, NULL, 2, 0), NUCLEUS_ERR_NULL, "llm_set_token_trie(NULL json)");
    const char *far = "{\"modelId\": \"m\", \"descriptors\": [{\"path\": \"a\", \"leaves\": "
                      "[{\"name\": \"X\", \"tokens\": [999999999]}]}]}";
    expect_code(nucleus_llm_set_token_trie(h, far, strlen(far), 0), NUCLEUS_ERR_INVALID,
                "llm_set_token_trie(token outside the vocabulary)");
    const char *ok = "{\"modelId\": \"m\", \"descriptors\": [{\"path\": \"a\", \"leaves\": "
                     "[{\"name\": \"X\", \"tokens\": [5]}]}]}";
    expect_code(nucleus_llm_set_token_trie(h, ok, strlen(ok), 2), NUCLEUS_ERR_INVALID, "llm_set_token_trie(mode 2)");
    expect_code(nucleus_llm_set_token_trie(h, ok, strlen(ok) - 1, 0), NUCLEUS_ERR_INVALID, "llm_set_token_trie(truncated)");
    expect_ok(nucleus_llm_set_token_trie(h, ok, strlen(ok), 0), "llm_set_token_trie");
    calls = 0;
    expect_ok(nucleus_llm_generate(h, 4, "{}", on_token_nop, &calls), "llm_generate(trie)");
    checks++;
    if (calls != 1) {
        fprintf(stderr, "FAIL one-token trie: %d callback calls\n", calls);
        failures++;
    }
    expect_ok(nucleus_llm_clear_token_trie(h), "llm_clear_token_trie");
    expect_ok(nucleus_llm_clear_token_trie(h), "llm_clear_token_trie(twice)");
    expect_ok(nucleus_llm_cancel(h), "llm_cancel(idle)");
    expect_code(nucleus_llm_set_draft_model(h, "/nonexistent/draft.gguf"), NUCLEUS_ERR_MODEL,
                "llm_set_draft_model(missing file)");
    expect_code(nucleus_llm_set_draft_model(h, "no-such-model-name"), NUCLEUS_ERR_INVALID,
                "llm_set_draft_model(unknown name)");
    expect_code(nucleus_llm_set_draft_model(h, "\xff.gguf"), NUCLEUS_ERR_INVALID, "llm_set_draft_model(bad UTF-8)");
    expect_ok(nucleus_llm_set_draft_model(h, NULL), "llm_set_draft_model(NULL: none)");
    expect_code(nucleus_sampler_n_vocab((const nucleus_sampler *)(const void *)h), NUCLEUS_ERR_INVALID,
                "sampler_n_vocab(llm handle)");
    nucleus_llm_close(h);
    printf("llm handle checks done\n");
}

int main(int argc, char **argv) {
    sampler_checks();
    grammar_checks();
    trie_checks();
    /* The llm handle: NULL checks always; with a model path (argv[1]), checks on a live one. */
    llm_checks(argc > 1 ? argv[1] : NULL);
    if (failures) {
        fprintf(stderr, "%d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("ok %d\n", checks);
    return 0;
}
