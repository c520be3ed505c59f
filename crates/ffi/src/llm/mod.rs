//! The streaming generation handle (`nucleus_llm`, the `llm` feature): a model opened by
//! catalog name or GGUF path, a context that prompts are prefilled into, and `generate` calling
//! back with every token and its UTF-8-complete text; cancel from any thread, tokenize and
//! detokenize, and a token-trie constraint for the following generations. Every token is picked
//! by the runtime's `Sequence`, as in `nucleus generate`.

mod options;
mod session;

use std::ffi::{c_char, c_void};

use crate::args::{slice, slice_mut, text, text_len};
use crate::error::{constructor, guard, status, Error, Result, NUCLEUS_OK};
use crate::handle::Handle;
pub use session::LlmState;

/// The C type `nucleus_llm` (opaque to C).
/// cbindgen:ignore
#[allow(non_camel_case_types)]
pub type nucleus_llm = Handle<LlmState>;

/// The callback of `nucleus_llm_generate`: `token` is the generated id (-1 on a final call that
/// carries no token), `text` the NUL-terminated UTF-8 text this token releases (complete
/// characters only: it may be empty while a character is incomplete, or carry text held back
/// before; valid only during the call), `done` is 1 on the final call and 0 before, `user_data`
/// is the pointer given to `nucleus_llm_generate`. The callback may call `nucleus_llm_cancel`,
/// the tokenize/detokenize and token-trie functions on the same handle; `prefill`, `generate`,
/// `reset` and `close` on it fail with `NUCLEUS_ERR_BUSY` meanwhile.
#[allow(non_camel_case_types)]
pub type nucleus_on_token =
    Option<unsafe extern "C" fn(token: i32, text: *const c_char, done: i32, user_data: *mut c_void)>;

/// A count as the `int32_t` the functions return.
fn count(n: usize, what: &str) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::size(format!("{what}: {n} is more than an int32_t can report")))
}

/// Opens a model: `model` is a catalog name (`"smollm2"`, `"gemma3"`: resolved and, on first
/// use, downloaded into the models directory as `nucleus generate -m NAME` does) or the path
/// of a GGUF file. `options_json` is a JSON object (or an empty string for the defaults) with
/// `n_ctx` (context size; default 4096, or the model's training context if smaller),
/// `n_batch` (prompt tokens per forward pass, default 512), `threads` (CPU threads, default
/// the cores minus one), `chat_template` (Jinja source used by `nucleus_llm_tokenize_chat`
/// instead of the model's own) and `verbose` (llama.cpp's log on stderr, default false); an
/// unknown field is an error. NULL on error (a bad option, an unknown name, a missing file, a
/// failed download, load or context), with the reason in `nucleus_last_error()`. Free with
/// `nucleus_llm_close`.
///
/// A handle may be used from any thread, one call at a time, except `nucleus_llm_cancel`, which
/// may be called from any thread at any time while the handle is open.
///
/// # Safety
/// `model` and `options_json` must be NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_open(model: *const c_char, options_json: *const c_char) -> *mut nucleus_llm {
    constructor(|| {
        // SAFETY: the caller passes NULL or NUL-terminated strings.
        let (spec, json) = unsafe { (text(model, "model")?, text(options_json, "options_json")?) };
        let opts = options::parse(json).map_err(Error::invalid)?;
        Ok(Handle::into_raw(LlmState::open(spec, &opts)?))
    })
}

/// The model's vocabulary size, or a negative code.
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_n_vocab(h: *const nucleus_llm) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        count(h.n_vocab(), "n_vocab")
    })
}

/// The context size in tokens, or a negative code (`NUCLEUS_ERR_BUSY` during a generation).
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_n_ctx(h: *const nucleus_llm) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        count(h.n_ctx()?, "n_ctx")
    })
}

/// Writes `ids` to `out` when they fit in `cap` (nothing otherwise) and returns how many there
/// are.
///
/// # Safety
/// `out` must be NULL or point to `cap` writable ids.
unsafe fn write_ids(ids: &[i32], out: *mut i32, cap: usize) -> Result<i32> {
    let n = count(ids.len(), "token count")?;
    if ids.len() <= cap && !ids.is_empty() {
        // SAFETY: the caller passes NULL or `cap` writable ids.
        let out = unsafe { slice_mut(out, cap, "tokens")? };
        out[..ids.len()].copy_from_slice(ids);
    } else if cap > 0 && out.is_null() {
        return Err(Error::null("tokens"));
    }
    Ok(n)
}

/// Tokenizes `text_len` bytes of UTF-8 `text` (no terminator needed) with the model's
/// tokenizer: `add_special` adds the model's automatic tokens (BOS for models that want it),
/// `parse_special` turns special-token text (`<|im_start|>`) into the special token. Returns
/// the number of tokens and writes them to `tokens` when that number is at most
/// `n_tokens_max`; when it is larger nothing is written and the caller calls again with a
/// buffer of the returned size (`tokens` may be NULL when `n_tokens_max` is 0). A negative
/// code on error.
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`; `text` NULL or `text_len` readable bytes; `tokens`
/// NULL or `n_tokens_max` writable ids.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_tokenize(
    h: *const nucleus_llm,
    text: *const c_char,
    text_len: usize,
    tokens: *mut i32,
    n_tokens_max: usize,
    add_special: bool,
    parse_special: bool,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        // SAFETY: the caller passes NULL or `text_len` bytes.
        let s = unsafe { crate::args::text_len(text, text_len, "text")? };
        let ids = h.tokenize(s, add_special, parse_special)?;
        // SAFETY: the caller passes NULL or `n_tokens_max` writable ids.
        unsafe { write_ids(&ids, tokens, n_tokens_max) }
    })
}

/// Renders a conversation, `messages_json` = `[{"role": "system"|"user"|"assistant", "content":
/// "..."}]`, with the chat template (the `chat_template` option, else the model's own, else a
/// built-in one) ending with the opening of the assistant's turn, and tokenizes it as
/// `nucleus generate --chat` does. Returns the token count and writes the tokens as
/// `nucleus_llm_tokenize` does (nothing when they do not fit in `n_tokens_max`).
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`; `messages_json` NULL or NUL-terminated; `tokens`
/// NULL or `n_tokens_max` writable ids.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_tokenize_chat(
    h: *const nucleus_llm,
    messages_json: *const c_char,
    tokens: *mut i32,
    n_tokens_max: usize,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let json = unsafe { text(messages_json, "messages_json")? };
        let ids = h.tokenize_chat(json)?;
        // SAFETY: the caller passes NULL or `n_tokens_max` writable ids.
        unsafe { write_ids(&ids, tokens, n_tokens_max) }
    })
}

/// The text of `n_tokens` tokens, as generation emits it (control tokens rendered as their text
/// only with `render_special`): returns its length in bytes (without the terminator) and, when
/// that length is below `text_size`, writes the bytes and a NUL to `text` (nothing otherwise:
/// call again with `text_size` = the returned length + 1, like `snprintf`). The bytes are the
/// tokens' pieces concatenated; a sequence may end inside a UTF-8 character. `text` may be NULL
/// when `text_size` is 0. A negative code on error (a token outside the vocabulary included).
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`; `tokens` NULL or `n_tokens` ids (NULL allowed when
/// `n_tokens` is 0); `text` NULL or `text_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_detokenize(
    h: *const nucleus_llm,
    tokens: *const i32,
    n_tokens: usize,
    text: *mut c_char,
    text_size: usize,
    render_special: bool,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        let ids: &[i32] = if n_tokens == 0 {
            &[]
        } else {
            // SAFETY: the caller passes NULL or `n_tokens` ids.
            unsafe { slice(tokens, n_tokens, "tokens")? }
        };
        let bytes = h.detokenize(ids, render_special)?;
        let n = count(bytes.len(), "text length")?;
        if bytes.len() < text_size {
            // SAFETY: the caller passes NULL or `text_size` writable bytes.
            let out = unsafe { slice_mut(text as *mut u8, text_size, "text")? };
            out[..bytes.len()].copy_from_slice(&bytes);
            out[bytes.len()] = 0;
        } else if text_size > 0 && text.is_null() {
            return Err(Error::null("text"));
        }
        Ok(n)
    })
}

/// Appends `n_tokens` tokens (a prompt, or the next turn of a conversation) to the handle's
/// context after everything fed and generated so far: all but the last are decoded now, the
/// last by the next `nucleus_llm_generate` (its first forward pass gives the logits the first
/// token is sampled from, so no token is decoded twice). Returns 0, or a negative code:
/// `NUCLEUS_ERR_SIZE` when `n_tokens` is 0 or the context (`n_ctx`) would leave no room to
/// generate (the context is unchanged), `NUCLEUS_ERR_INVALID` for a token outside the
/// vocabulary, `NUCLEUS_ERR_BUSY` during a generation, `NUCLEUS_ERR_MODEL` when the forward
/// pass fails (the context is then emptied).
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`; `tokens` NULL or `n_tokens` ids.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_prefill(h: *const nucleus_llm, tokens: *const i32, n_tokens: usize) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        // SAFETY: the caller passes NULL or `n_tokens` ids.
        let ids = unsafe { slice(tokens, n_tokens, "tokens")? };
        h.prefill(ids)?;
        Ok(NUCLEUS_OK)
    })
}

/// Empties the handle's context (a new conversation starts with the next prefill). The token
/// trie stays set. Returns 0 or a negative code (`NUCLEUS_ERR_BUSY` during a generation).
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_reset(h: *const nucleus_llm) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        h.reset()?;
        Ok(NUCLEUS_OK)
    })
}

/// Generates after the context's tokens (prefilled, and generated by earlier calls: each call
/// continues the conversation) until end of generation, `max_tokens` tokens (negative: no
/// limit but the context), a full context, a completed token-trie leaf, or
/// `nucleus_llm_cancel`. `params_json` holds the sampling parameters, as for
/// `nucleus_sampler_new` (`"{}"`: llama.cpp's defaults; `{"temp": 0}` is greedy;
/// `dry_sequence_breakers` strings are tokenized by the model), and optionally
/// `"speculative": {"type": "draft" | "ngram" | "none", "draft_max": 1..=256, "draft_min":
/// 0..=256, "ngram_size_n": 1..=64}` (the server's extension object; given, it drafts with the
/// handle's draft model (`nucleus_llm_set_draft_model`) when it has one, else n-grams from the
/// context and the output, unless `type` says otherwise; defaults 16, 1, 6; `draft` without a
/// draft model is `NUCLEUS_ERR_INVALID`): speculative decoding, verified by the same sampler,
/// so the tokens are those of plain decoding; `nucleus_llm_spec_stats` reports it. `on_token`
/// is called on this thread for every token, then with `done` = 1 once: on the last token's
/// call, or, when the generation stops without a token of its own (cancelled, `max_tokens` 0),
/// with token -1 and empty text. Returns the number of tokens generated (an end-of-generation
/// token counts; it has no text), or a negative code, in which case no `done` call is made. The
/// last token is decoded into the context by the next prefill or generate.
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`; `params_json` NULL or NUL-terminated; `on_token`
/// NULL or a function safe to call with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_generate(
    h: *const nucleus_llm,
    max_tokens: i32,
    params_json: *const c_char,
    on_token: nucleus_on_token,
    user_data: *mut c_void,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let json = unsafe { text(params_json, "params_json")? };
        let callback = on_token.ok_or_else(|| Error::null("on_token"))?;
        let mut buf: Vec<u8> = Vec::new();
        let mut emit = |token: i32, piece: &str, done: bool| {
            buf.clear();
            buf.extend_from_slice(piece.as_bytes());
            buf.push(0);
            // SAFETY: the caller vouches for the callback and its user data; the text is
            // NUL-terminated and lives until the call returns.
            unsafe { callback(token, buf.as_ptr() as *const c_char, done as i32, user_data) };
        };
        h.generate(max_tokens, json, &mut emit)
    })
}

/// What speculative decoding did in one generation (see `speculative` in
/// `nucleus_llm_generate`'s `params_json`): draft tokens decoded, draft tokens the sampler
/// confirmed (each a forward pass saved: `passes_saved` equals `accepted`), forward passes that
/// carried a draft, and accepted over drafted (0 without drafts).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct nucleus_spec_stats {
    /// Draft tokens decoded.
    pub drafted: u64,
    /// Draft tokens confirmed by the sampler.
    pub accepted: u64,
    /// `accepted / drafted`, 0 when nothing was drafted.
    pub acceptance_rate: f64,
    /// Forward passes plain decoding would have needed and speculation did not (= `accepted`).
    pub passes_saved: u64,
    /// Forward passes that carried a draft.
    pub verify_passes: u64,
}

/// Writes to `out` what speculative decoding did in the handle's last `nucleus_llm_generate`.
/// Returns 1 when that generation speculated (the counts may still be 0 when nothing could be
/// drafted), 0 when it did not (no `speculative` in its `params_json`, `"type": "none"`, a
/// failed or no generation yet, or a model whose logits depend on batching; `out` is then
/// zeroed), or a negative code. From the callback it returns 0: the generation has not ended.
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`; `out` NULL or a writable `nucleus_spec_stats`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_spec_stats(h: *const nucleus_llm, out: *mut nucleus_spec_stats) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        // SAFETY: the caller passes NULL or one writable `nucleus_spec_stats` (plain numbers,
        // so any bits there are a valid value); NULL and misalignment are refused.
        let out = unsafe { slice_mut(out, 1, "out")? };
        let stats = h.last_spec_stats();
        let c = stats.map_or_else(nucleus_spec_stats::default, |s| nucleus_spec_stats {
            drafted: s.drafted as u64,
            accepted: s.accepted as u64,
            acceptance_rate: s.acceptance_rate(),
            passes_saved: s.accepted as u64,
            verify_passes: s.verify_passes as u64,
        });
        out[0] = c;
        Ok(stats.is_some() as i32)
    })
}

/// Gives the handle a draft model for speculative decoding (`"speculative": {"type": "draft"}`
/// in `nucleus_llm_generate`'s `params_json`, the default type once the handle has one):
/// `draft_model` is a catalog name (downloaded on first use) or the path of a GGUF file, as
/// `nucleus generate --model-draft` takes it. It must share the model's vocabulary (the same
/// size and every token the same text; checked here). It runs in a context of its own, of the
/// handle's `n_ctx`, `n_batch` and `threads`, proposing its most likely tokens, which the
/// generation's sampler verifies: the tokens stay those of plain decoding. It replaces the
/// draft model set before; NULL removes it. Returns 0, or a negative code, the handle keeping
/// the draft model it had: `NUCLEUS_ERR_MODEL` when the file is missing or cannot be loaded (or
/// downloaded), `NUCLEUS_ERR_INVALID` for an unknown name or a model of another vocabulary,
/// `NUCLEUS_ERR_BUSY` during a generation; `nucleus_last_error()` says why.
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`; `draft_model` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_set_draft_model(h: *const nucleus_llm, draft_model: *const c_char) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        let spec = if draft_model.is_null() {
            None
        } else {
            // SAFETY: non-NULL, so a NUL-terminated string by the caller's contract.
            Some(unsafe { text(draft_model, "draft_model")? })
        };
        h.set_draft_model(spec)?;
        Ok(NUCLEUS_OK)
    })
}

/// Asks the running `nucleus_llm_generate` on this handle to stop: it makes its final `done`
/// call and returns after the token being processed, without another forward pass. Safe from
/// any thread and from inside the callback; a cancel made while no generation runs is
/// forgotten when the next one starts. Returns 0 or a negative code.
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm` (not closed concurrently).
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_cancel(h: *const nucleus_llm) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle; only shared access is made.
        let h = unsafe { Handle::get(h, "h")? };
        h.cancel();
        Ok(NUCLEUS_OK)
    })
}

/// Constrains every following `nucleus_llm_generate` call (until cleared or replaced) to the
/// leaves of a token-trie descriptor (`len` bytes of UTF-8 JSON, the format of
/// `nucleus_token_trie_new`; the leaves of all its paths form one trie, and `modelId` is not
/// compared with the model): each generation starts at the root, takes forced tokens without a
/// sampling step, picks (mode 0) the most likely allowed token or samples (mode 1) among the
/// allowed ones, and ends when a leaf nothing continues is complete. Token ids must be inside
/// the model's vocabulary. Compiled tries are kept in a process-wide cache of 128 descriptors
/// shared by all handles and threads. A generation already running keeps its constraint.
/// Returns 0, or a negative code (the previous constraint then stays).
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`; `descriptor_json` NULL or `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_set_token_trie(
    h: *const nucleus_llm,
    descriptor_json: *const c_char,
    len: usize,
    mode: i32,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        // SAFETY: the caller passes NULL or `len` bytes.
        let json = unsafe { text_len(descriptor_json, len, "descriptor_json")? };
        h.set_token_trie(json, mode)?;
        Ok(NUCLEUS_OK)
    })
}

/// Removes the token-trie constraint: the following generations are unconstrained. Returns 0
/// (also when none was set) or a negative code.
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_clear_token_trie(h: *const nucleus_llm) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let h = unsafe { Handle::get(h, "h")? };
        h.clear_token_trie();
        Ok(NUCLEUS_OK)
    })
}

/// Closes a handle: frees the context and the model. NULL is a no-op. Refused (the handle stays
/// open, `nucleus_last_error()` says why) while a generation runs on it, e.g. from inside the
/// callback: cancel it and close after `nucleus_llm_generate` returns.
///
/// # Safety
/// `h` must be NULL or a live `nucleus_llm` that no other thread is using; not used after a
/// successful close.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llm_close(h: *mut nucleus_llm) {
    guard(
        |_| (),
        || {
            if !h.is_null() {
                // SAFETY: the caller passes a live handle; shared access only, dropped before the free.
                unsafe { Handle::get(h, "h")? }.check_idle()?;
            }
            // SAFETY: the caller passes NULL or a live handle it gives up, not used elsewhere.
            unsafe { Handle::free(h) }
        },
    )
}
