/* The streaming generation handle on a real model (test (d)): greedy generation from a prompt,
 * a token trie set on the handle (one of its leaves comes out), generation after the trie is
 * cleared, cancel from inside the callback and from another thread, calls made while a
 * generation runs, the tokenize/detokenize size protocol, and chat prompts (the model's template
 * and one given in options_json, on a second handle).
 *
 * Usage: llm_stream MODEL PROMPT N_TOKENS DESCRIPTOR_JSON
 * Prints "greedy: ids", "greedy_text: hex", "trie: ids", "trie_text: hex", "cleared: ids",
 * "chat: ids" (compared by the Rust test with the runtime's own generation), "ok ..." lines, and exits 0
 * when every check here passed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MAX_TOKENS 256
#define GREEDY "{\"temp\": 0}"

/* What one generation delivered. */
struct run {
    nucleus_llm *h;
    int32_t tokens[MAX_TOKENS];
    int n_tokens;
    char text[4096];
    size_t text_len;
    int done_calls;
    int calls_after_done;
    int final_token;
    /* Test hooks, run inside the callback. */
    int cancel_at;         /* call nucleus_llm_cancel on the call with this index (-1: never) */
    int check_busy_at;     /* try prefill/reset/generate/close and tokenize here (-1: never) */
    atomic_int *signal_at; /* with thread cancel: the index reached, for the other thread */
    atomic_int *cancelled; /* set by the other thread once it has cancelled */
    int calls;
};

static void on_token(int32_t token, const char *text, int32_t done, void *user_data) {
    struct run *r = user_data;
    if (r->done_calls) r->calls_after_done++;
    size_t n = strlen(text);
    if (r->text_len + n < sizeof r->text) {
        memcpy(r->text + r->text_len, text, n);
        r->text_len += n;
        r->text[r->text_len] = '\0';
    }
    if (token >= 0 && r->n_tokens < MAX_TOKENS) r->tokens[r->n_tokens++] = token;
    if (done) {
        r->done_calls++;
        r->final_token = token;
    }
    int i = r->calls++;
    if (i == r->cancel_at) CHECK(nucleus_llm_cancel(r->h) == NUCLEUS_OK);
    if (i == r->check_busy_at) {
        int32_t one = token >= 0 ? token : 0;
        CHECK(nucleus_llm_prefill(r->h, &one, 1) == NUCLEUS_ERR_BUSY);
        CHECK(nucleus_llm_reset(r->h) == NUCLEUS_ERR_BUSY);
        CHECK(nucleus_llm_generate(r->h, 1, GREEDY, on_token, r) == NUCLEUS_ERR_BUSY);
        CHECK(nucleus_llm_n_ctx(r->h) == NUCLEUS_ERR_BUSY);
        nucleus_llm_close(r->h); /* refused: the handle stays open */
        CHECK(nucleus_last_error()[0] != '\0');
        CHECK(nucleus_llm_tokenize(r->h, "Hi", 2, NULL, 0, false, false) > 0);
        CHECK(nucleus_llm_n_vocab(r->h) > 0);
    }
    if (r->signal_at && i == atomic_load(r->signal_at)) {
        atomic_store(r->signal_at, -2); /* tell the other thread to cancel now */
        while (!atomic_load(r->cancelled)) {
        }
    }
}

static void run_init(struct run *r, nucleus_llm *h) {
    memset(r, 0, sizeof *r);
    r->h = h;
    r->cancel_at = -1;
    r->check_busy_at = -1;
    r->final_token = -99;
}

static void print_ids(const char *label, const struct run *r) {
    printf("%s:", label);
    for (int i = 0; i < r->n_tokens; i++) printf(" %d", r->tokens[i]);
    printf("\n");
}

static void print_hex(const char *label, const struct run *r) {
    printf("%s: ", label);
    for (size_t i = 0; i < r->text_len; i++) printf("%02x", (unsigned char)r->text[i]);
    printf("\n");
}

/* Empties the context and feeds the prompt. */
static void prompt(nucleus_llm *h, const int32_t *ids, int n) {
    CHECK(nucleus_llm_reset(h) == NUCLEUS_OK);
    CHECK(nucleus_llm_prefill(h, ids, (size_t)n) == NUCLEUS_OK);
}

struct canceller {
    nucleus_llm *h;
    atomic_int signal_at;
    atomic_int cancelled;
};

static void *cancel_thread(void *arg) {
    struct canceller *c = arg;
    while (atomic_load(&c->signal_at) != -2) {
    }
    CHECK(nucleus_llm_cancel(c->h) == NUCLEUS_OK);
    atomic_store(&c->cancelled, 1);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: llm_stream MODEL PROMPT N_TOKENS DESCRIPTOR_JSON\n");
        return 2;
    }
    const char *prompt_text = argv[2];
    int n_gen = atoi(argv[3]);
    const char *desc = argv[4];

    nucleus_llm *h = nucleus_llm_open(argv[1], "{\"n_ctx\": 256, \"threads\": 1}");
    if (!h) {
        fprintf(stderr, "nucleus_llm_open: %s\n", nucleus_last_error());
        return 1;
    }

    /* Tokenize: the size comes back first, nothing is written to a short buffer. */
    int n = nucleus_llm_tokenize(h, prompt_text, strlen(prompt_text), NULL, 0, true, true);
    CHECK(n > 1 && n < 64);
    int32_t ids[64];
    for (int i = 0; i < 64; i++) ids[i] = -7;
    CHECK(nucleus_llm_tokenize(h, prompt_text, strlen(prompt_text), ids, (size_t)n - 1, true, true) == n);
    CHECK(ids[0] == -7);
    CHECK(nucleus_llm_tokenize(h, prompt_text, strlen(prompt_text), ids, 64, true, true) == n);
    printf("prompt:");
    for (int i = 0; i < n; i++) printf(" %d", ids[i]);
    printf("\n");

    /* Detokenize round trip of plain text, with the snprintf-style size protocol. */
    const char *plain = "Hello, world! \xc3\xa9t\xc3\xa9";
    int32_t pids[32];
    int np = nucleus_llm_tokenize(h, plain, strlen(plain), pids, 32, false, false);
    CHECK(np > 0 && np <= 32);
    int len = nucleus_llm_detokenize(h, pids, (size_t)np, NULL, 0, false);
    CHECK(len == (int)strlen(plain));
    char buf[64];
    memset(buf, 'x', sizeof buf);
    CHECK(nucleus_llm_detokenize(h, pids, (size_t)np, buf, (size_t)len, false) == len); /* no room for NUL */
    CHECK(buf[0] == 'x');
    CHECK(nucleus_llm_detokenize(h, pids, (size_t)np, buf, sizeof buf, false) == len);
    CHECK(strcmp(buf, plain) == 0);
    printf("ok tokenize and detokenize\n");

    /* 1. Greedy generation from the prompt. */
    struct run r;
    run_init(&r, h);
    prompt(h, ids, n);
    int got = nucleus_llm_generate(h, n_gen, GREEDY, on_token, &r);
    CHECK(got == n_gen && r.n_tokens == n_gen);
    CHECK(r.done_calls == 1 && r.calls_after_done == 0 && r.final_token == r.tokens[n_gen - 1]);
    print_ids("greedy", &r);
    print_hex("greedy_text", &r);
    int32_t greedy[MAX_TOKENS];
    memcpy(greedy, r.tokens, sizeof greedy);

    /* Each generate continues the conversation: two halves equal the whole. */
    run_init(&r, h);
    prompt(h, ids, n);
    CHECK(nucleus_llm_generate(h, n_gen / 2, GREEDY, on_token, &r) == n_gen / 2);
    CHECK(nucleus_llm_generate(h, n_gen - n_gen / 2, GREEDY, on_token, &r) == n_gen - n_gen / 2);
    CHECK(r.n_tokens == n_gen && memcmp(r.tokens, greedy, sizeof(int32_t) * (size_t)n_gen) == 0);
    CHECK(r.done_calls == 2);
    printf("ok continued\n");

    /* 2. A token trie on the handle: the output is one of its leaves. */
    CHECK(nucleus_llm_set_token_trie(h, desc, strlen(desc), 0) == NUCLEUS_OK);
    run_init(&r, h);
    prompt(h, ids, n);
    got = nucleus_llm_generate(h, 64, GREEDY, on_token, &r);
    CHECK(got == r.n_tokens && got > 0 && r.done_calls == 1);
    print_ids("trie", &r);
    print_hex("trie_text", &r);
    /* Mode 1 (sampled among the allowed tokens) also ends on a leaf. */
    CHECK(nucleus_llm_set_token_trie(h, desc, strlen(desc), 1) == NUCLEUS_OK);
    run_init(&r, h);
    prompt(h, ids, n);
    CHECK(nucleus_llm_generate(h, 64, "{\"seed\": 3}", on_token, &r) > 0);
    print_ids("trie_sampled", &r);
    /* A bad descriptor keeps the previous constraint. */
    CHECK(nucleus_llm_set_token_trie(h, "{}", 2, 0) == NUCLEUS_ERR_INVALID);

    /* 3. Cleared: unconstrained again, the same greedy tokens as before. */
    CHECK(nucleus_llm_clear_token_trie(h) == NUCLEUS_OK);
    run_init(&r, h);
    prompt(h, ids, n);
    CHECK(nucleus_llm_generate(h, n_gen, GREEDY, on_token, &r) == n_gen);
    print_ids("cleared", &r);

    /* 4. Cancel from inside the callback at the second token: two tokens, then a final call. */
    run_init(&r, h);
    r.cancel_at = 1;
    r.check_busy_at = 0;
    prompt(h, ids, n);
    got = nucleus_llm_generate(h, n_gen, GREEDY, on_token, &r);
    CHECK(nucleus_last_error()[0] == '\0'); /* the refused calls inside left no message behind */
    CHECK(got == 2 && r.n_tokens == 2 && r.done_calls == 1 && r.final_token == -1 && r.calls == 3);
    CHECK(memcmp(r.tokens, greedy, 2 * sizeof(int32_t)) == 0);
    printf("ok cancel inside the callback\n");

    /* 5. Cancel from another thread while the callback of the second token waits. */
    struct canceller c = {.h = h};
    atomic_init(&c.signal_at, 1);
    atomic_init(&c.cancelled, 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, cancel_thread, &c) == 0);
    run_init(&r, h);
    r.signal_at = &c.signal_at;
    r.cancelled = &c.cancelled;
    prompt(h, ids, n);
    got = nucleus_llm_generate(h, n_gen, GREEDY, on_token, &r);
    pthread_join(th, NULL);
    CHECK(got == 2 && r.done_calls == 1 && r.final_token == -1);
    printf("ok cancel from another thread\n");

    /* A cancel made while nothing runs does not stop the next generation. */
    CHECK(nucleus_llm_cancel(h) == NUCLEUS_OK);
    run_init(&r, h);
    prompt(h, ids, n);
    CHECK(nucleus_llm_generate(h, 2, GREEDY, on_token, &r) == 2);
    /* max_tokens 0: only the final call. */
    run_init(&r, h);
    CHECK(nucleus_llm_generate(h, 0, GREEDY, on_token, &r) == 0);
    CHECK(r.calls == 1 && r.done_calls == 1 && r.final_token == -1);

    /* Chat prompts: the model's template (compared by the Rust test), and a template given as
     * an option, on a second handle open at the same time. */
    const char *chat = "[{\"role\": \"user\", \"content\": \"Hello\"}]";
    int nc = nucleus_llm_tokenize_chat(h, chat, ids, 64);
    CHECK(nc > 0 && nc <= 64);
    printf("chat:");
    for (int i = 0; i < nc && i < 64; i++) printf(" %d", ids[i]);
    printf("\n");
    nucleus_llm *h2 = nucleus_llm_open(argv[1], "{\"threads\": 1, \"n_ctx\": 64, "
                                                "\"chat_template\": \"{% for m in messages %}[{{ m.content }}]{% endfor %}\"}");
    CHECK(h2 != NULL);
    if (h2) {
        int32_t a[16], b[16];
        int na = nucleus_llm_tokenize_chat(h2, chat, a, 16);
        int nb = nucleus_llm_tokenize(h2, "[Hello]", 7, b, 16, true, true);
        CHECK(na > 0 && na == nb && memcmp(a, b, sizeof(int32_t) * (size_t)na) == 0);
        nucleus_llm_close(h2);
    }
    printf("ok chat templates\n");

    nucleus_llm_close(h);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("ok all\n");
    return 0;
}
