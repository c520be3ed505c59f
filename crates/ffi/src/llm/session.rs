//! The state behind a `nucleus_llm` handle: a model, one context holding the tokens fed and
//! generated so far, the token-trie constraint for the next generations, and the cancel flag.
//! Generation is the runtime's: a [`Sequence`] picks every token (sampler chain, trie,
//! UTF-8-complete text, limits) exactly as `nucleus generate` does; this module only feeds it
//! logits and hands its events to C.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use ::nucleus_grammar::continuations::{Mode, TrieConstraint};
use ::nucleus_runtime::{
    chat_prompt_tokens, llama, locate, models_dir, ChatMessage, ChatTemplate, Context, ContextOptions, LlamaCppModel,
    Model, ModelRef, Pip, RuntimeError, Sequence, SequenceOptions,
};
use ::nucleus_sampler::params_map::Vocabulary;
use ::nucleus_sampler::Token;
use serde_json::Value;

use super::options::OpenOptions;
use crate::error::{Error, Result, NUCLEUS_ERR_BUSY, NUCLEUS_ERR_MODEL, NUCLEUS_ERR_REJECTED, NUCLEUS_ERR_SAMPLE};
use crate::handle::Kind;

/// The one sequence of a handle's context.
const SEQ: usize = 0;

/// A runtime error as a C status: bad input is `INVALID`, sampling and constraint failures have
/// their own codes, the rest is the model's.
pub(crate) fn runtime_error(e: RuntimeError) -> Error {
    let code = match &e {
        RuntimeError::UnknownModel { .. }
        | RuntimeError::BadToken { .. }
        | RuntimeError::EmptyPrompt
        | RuntimeError::Param(_)
        | RuntimeError::Template(_) => crate::error::NUCLEUS_ERR_INVALID,
        RuntimeError::PromptTooLong { .. } | RuntimeError::ContextFull { .. } => crate::error::NUCLEUS_ERR_SIZE,
        RuntimeError::Sample(_) => NUCLEUS_ERR_SAMPLE,
        RuntimeError::GrammarDeadEnd(_) => NUCLEUS_ERR_REJECTED,
        _ => NUCLEUS_ERR_MODEL,
    };
    Error::new(code, e.to_string())
}

/// The context and what it holds. Locked for the whole of a generation.
struct Session {
    ctx: Box<dyn Context>,
    /// The tokens decoded into the context, in order (the last one's logits are current).
    history: Vec<Token>,
    /// The last generated token: reported to the caller but not decoded yet (the next prefill
    /// or generate decodes it first, so the conversation continues after it).
    pending: Option<Token>,
}

impl Session {
    /// Forgets everything (also after a failed forward pass, whose KV state is unknown).
    fn clear(&mut self) {
        self.ctx.clear(SEQ);
        self.history.clear();
        self.pending = None;
    }

    /// Decodes `tokens` after the history (a prompt in `n_batch` chunks, or one generated token
    /// as the runtime's loop decodes it), checking the room left first; a failure clears the
    /// context.
    fn feed(&mut self, tokens: &[Token], prompt: bool) -> Result<()> {
        let n_ctx = self.ctx.n_ctx();
        if self.history.len() + tokens.len() > n_ctx {
            return Err(Error::size(format!(
                "the context holds {n_ctx} tokens: {} are in it and {} more do not fit (nucleus_llm_reset empties it)",
                self.history.len(),
                tokens.len()
            )));
        }
        let r = match tokens {
            [t] if !prompt => self.ctx.decode(&[(SEQ, *t)]),
            _ => self.ctx.prefill(SEQ, tokens),
        };
        if let Err(e) = r {
            self.clear();
            return Err(runtime_error(e));
        }
        self.history.extend_from_slice(tokens);
        Ok(())
    }
}

/// A model with its context: the object behind `nucleus_llm`. Shared references only: the
/// session and the trie sit behind their own locks and cancel is an atomic, so `nucleus_llm_cancel`
/// may run on another thread (or inside the callback) while a generation runs.
pub struct LlmState {
    model: Arc<LlamaCppModel>,
    template: ChatTemplate,
    session: Mutex<Session>,
    /// The constraint at its root and whether it is greedy; every generation starts a copy.
    trie: Mutex<Option<(TrieConstraint, bool)>>,
    cancel: AtomicBool,
}

// `nucleus_llm_cancel` reaches the state from another thread while a generation runs.
const _: () = {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<LlmState>()
};

impl Kind for LlmState {
    const MAGIC: u64 = 0x4e55_434c_4c4c_4d48; // "NUCLLLMH"
    const NAME: &'static str = "nucleus_llm";
}

/// What a generation reports for each token: the id (-1 on a final call without a token), the
/// text released with it, and whether this is the final call.
pub(crate) type OnToken<'a> = dyn FnMut(Token, &str, bool) + 'a;

impl LlmState {
    /// Resolves `spec` as `nucleus generate -m` does (a catalog name, pulled on first use, or a
    /// GGUF path), loads it and creates its context.
    pub(crate) fn open(spec: &str, opts: &OpenOptions) -> Result<Self> {
        llama::set_verbose(opts.verbose);
        let r = ModelRef::parse(spec).map_err(runtime_error)?;
        let pip = Pip { quiet: true, ..Pip::default() };
        let (path, _) = locate(&r, &models_dir(), &pip, &mut |_| {}).map_err(runtime_error)?;
        let model = LlamaCppModel::load(&path).map_err(runtime_error)?;
        let defaults = ContextOptions::default();
        let ctx_opts = ContextOptions {
            n_ctx: opts.n_ctx,
            n_batch: opts.n_batch.unwrap_or(defaults.n_batch),
            threads: opts.threads,
            ..defaults
        };
        let ctx = model.new_context(&ctx_opts).map_err(runtime_error)?;
        let template = ChatTemplate::for_model_or(&model, opts.chat_template.as_deref());
        Ok(LlmState {
            model: Arc::new(model),
            template,
            session: Mutex::new(Session { ctx, history: Vec::new(), pending: None }),
            trie: Mutex::new(None),
            cancel: AtomicBool::new(false),
        })
    }

    /// The session, or `BUSY` while a generation holds it.
    fn session(&self) -> Result<MutexGuard<'_, Session>> {
        match self.session.try_lock() {
            Ok(s) => Ok(s),
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(TryLockError::WouldBlock) => Err(Error::new(
                NUCLEUS_ERR_BUSY,
                "a nucleus_llm_generate call is running on this handle (only nucleus_llm_cancel, tokenize, \
                 detokenize and the token-trie calls may run meanwhile)",
            )),
        }
    }

    /// Vocabulary size.
    pub(crate) fn n_vocab(&self) -> usize {
        self.model.n_vocab()
    }

    /// Context size in tokens.
    pub(crate) fn n_ctx(&self) -> Result<usize> {
        Ok(self.session()?.ctx.n_ctx())
    }

    fn check_tokens(&self, tokens: &[Token]) -> Result<()> {
        let n = self.n_vocab();
        match tokens.iter().find(|&&t| t < 0 || t as usize >= n) {
            Some(bad) => Err(Error::invalid(format!("token {bad} is outside the vocabulary [0, {n})"))),
            None => Ok(()),
        }
    }

    /// The model's tokens for `text` (see `Tokenizer::encode`).
    pub(crate) fn tokenize(&self, text: &str, add_special: bool, parse_special: bool) -> Result<Vec<Token>> {
        self.model.tokenizer().encode(text, add_special, parse_special).map_err(runtime_error)
    }

    /// A conversation (`[{"role", "content"}]`) through the chat template, ending with the
    /// assistant's turn, as tokens (as `nucleus generate --chat` does).
    pub(crate) fn tokenize_chat(&self, messages_json: &str) -> Result<Vec<Token>> {
        let v: Value = serde_json::from_str(messages_json)
            .map_err(|e| Error::invalid(format!("messages_json is not valid JSON: {e}")))?;
        let list = v.as_array().ok_or_else(|| Error::invalid("messages_json must be an array of messages"))?;
        let mut messages = Vec::with_capacity(list.len());
        for (i, m) in list.iter().enumerate() {
            let field = |k: &str| {
                m.get(k).and_then(Value::as_str).ok_or_else(|| {
                    Error::invalid(format!(
                        "messages_json[{i}] needs a string \"{k}\" (messages are {{\"role\", \"content\"}})"
                    ))
                })
            };
            messages.push(ChatMessage::new(field("role")?, field("content")?));
        }
        chat_prompt_tokens(self.model.as_ref(), &self.template, &messages, None).map_err(runtime_error)
    }

    /// The bytes of `tokens`, as generation emits them (control tokens only with
    /// `render_special`); a token may end inside a UTF-8 character.
    pub(crate) fn detokenize(&self, tokens: &[Token], render_special: bool) -> Result<Vec<u8>> {
        self.check_tokens(tokens)?;
        let tok = self.model.tokenizer();
        let mut out = Vec::new();
        for &t in tokens {
            tok.append_piece(t, render_special, &mut out);
        }
        Ok(out)
    }

    /// Appends `tokens` to the context (after the last generated token) and computes the logits
    /// the next generation starts from.
    pub(crate) fn prefill(&self, tokens: &[Token]) -> Result<()> {
        if tokens.is_empty() {
            return Err(Error::size("`n_tokens` is 0: nothing to prefill"));
        }
        self.check_tokens(tokens)?;
        let mut s = self.session()?;
        let mut batch = Vec::with_capacity(tokens.len() + 1);
        batch.extend(s.pending);
        batch.extend_from_slice(tokens);
        // As for a prompt of `nucleus generate`: room must stay for a generated token.
        let n_ctx = s.ctx.n_ctx();
        if s.history.len() + batch.len() >= n_ctx {
            return Err(Error::size(format!(
                "the context holds {n_ctx} tokens: {} are in it, {} more leave no room to generate \
                 (nucleus_llm_reset empties it)",
                s.history.len(),
                batch.len()
            )));
        }
        s.feed(&batch, true)?;
        s.pending = None;
        Ok(())
    }

    /// Empties the context.
    pub(crate) fn reset(&self) -> Result<()> {
        self.session()?.clear();
        Ok(())
    }

    /// Constrains the following generations to the descriptor's leaves (tokens checked against
    /// the model's vocabulary; compiled tries come from the process-wide cache).
    pub(crate) fn set_token_trie(&self, json: &str, mode: i32) -> Result<()> {
        let mode = crate::token_trie::mode_of(mode)?;
        let root = crate::token_trie::root(json, self.n_vocab(), mode)?;
        *self.trie.lock().unwrap_or_else(|p| p.into_inner()) = Some((root, mode == Mode::Greedy));
        Ok(())
    }

    /// Removes the constraint: the following generations are free again.
    pub(crate) fn clear_token_trie(&self) {
        *self.trie.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Asks a running generation to stop before its next forward pass.
    pub(crate) fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }

    /// Fails with `BUSY` while a generation runs (close must not free the handle under it).
    pub(crate) fn check_idle(&self) -> Result<()> {
        self.session().map(drop)
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Generates up to `max_tokens` (negative: until end of generation or a full context) after
    /// the context's tokens, sampling with `params_json`, within the token trie if one is set.
    /// `on_token` hears every token and, last, a call with `done`. Returns how many tokens were
    /// generated.
    pub(crate) fn generate(&self, max_tokens: i32, params_json: &str, on_token: &mut OnToken<'_>) -> Result<i32> {
        let mut s = self.session()?;
        self.cancel.store(false, Ordering::SeqCst);
        let params = crate::params::parse(params_json, Vocabulary::Model(self.n_vocab())).map_err(Error::invalid)?;
        let opts = SequenceOptions { max_tokens: usize::try_from(max_tokens).ok(), ..Default::default() };
        let mut seq = Sequence::new(self.model.as_ref(), &params, opts).map_err(runtime_error)?;
        if let Some((trie, greedy)) = self.trie.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            seq.set_token_trie(trie, greedy);
        }
        if let Some(p) = s.pending {
            s.feed(&[p], false)?;
            s.pending = None;
        }
        if s.history.is_empty() {
            return Err(Error::invalid("the context is empty: call nucleus_llm_prefill with a prompt first"));
        }
        seq.accept_prompt(&s.history);
        if max_tokens == 0 || self.cancelled() {
            on_token(-1, "", true);
            return Ok(0);
        }
        loop {
            let can_continue = s.ctx.seq_len(SEQ) < s.ctx.n_ctx();
            let logits = s.ctx.logits(SEQ).map_err(runtime_error)?;
            let step = seq.step(logits, can_continue).map_err(runtime_error)?;
            let token = step.event.token;
            let done = step.finished.is_some();
            on_token(token, step.event.text, done);
            if done {
                s.pending = Some(token);
                break;
            }
            if self.cancelled() {
                // Stopped from the callback or another thread: no forward pass for this token.
                seq.cancel();
                s.pending = Some(token);
                on_token(-1, "", true);
                break;
            }
            s.feed(&[token], false)?;
        }
        Ok(seq.generated().len() as i32)
    }
}
