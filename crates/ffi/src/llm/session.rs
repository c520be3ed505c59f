//! The state behind a `nucleus_llm` handle: a model, one context holding the tokens fed and
//! generated so far, an optional draft model (with a context of its own) for speculative
//! decoding, the token-trie constraint for the next generations, and the cancel flag.
//! Generation is the runtime's: a [`Sequence`] picks every token (sampler chain, trie,
//! UTF-8-complete text, limits) exactly as `nucleus generate` does; this module only feeds it
//! logits and hands its events to C.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use ::nucleus_grammar::continuations::{Mode, TrieConstraint};
use std::ops::ControlFlow;

use ::nucleus_runtime::engine::{Finished, SlotFailure};
use ::nucleus_runtime::sequence::Step;
use ::nucleus_runtime::{
    chat_prompt_tokens, llama, locate, models_dir, spec_binding_option, ChatMessage, ChatTemplate, Context,
    ContextOptions, DraftModel, Engine, LlamaCppModel, Model, ModelRef, Pip, RuntimeError, SeqId, Sequence,
    SequenceOptions, SlotJob, SlotSink, SpecStats, SpecType, PREFILL_CHUNK,
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
        | RuntimeError::DraftVocabulary(_)
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
    /// The last token fed or generated, not decoded yet: the next generation decodes it with
    /// its first step (its logits are the ones that step samples from), the next prefill
    /// before its tokens.
    pending: Option<Token>,
    /// The draft model (`nucleus_llm_set_draft_model`) with its own context, which keeps the
    /// tokens it last drafted after, so the next generation only evaluates what is new.
    draft: Option<DraftModel>,
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
    /// What speculation did in the last generation (`None`: it did not speculate).
    last_spec: Mutex<Option<SpecStats>>,
    /// The context settings the handle was opened with (a draft model's context gets the same).
    ctx_opts: ContextOptions,
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
            session: Mutex::new(Session { ctx, history: Vec::new(), pending: None, draft: None }),
            ctx_opts,
            trie: Mutex::new(None),
            cancel: AtomicBool::new(false),
            last_spec: Mutex::new(None),
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

    /// Appends `tokens` to the context (after the last generated token). All but the last are
    /// decoded now; the last is held back for the next generation, whose first step decodes it
    /// (the logits it samples from: the same bits as decoding it here, the forward pass being
    /// batch-invariant), so no token is decoded twice.
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
        let (last, rest) = batch.split_last().expect("the batch holds the tokens given, at least one");
        if !rest.is_empty() {
            s.feed(rest, true)?;
        }
        s.pending = Some(*last);
        Ok(())
    }

    /// Gives the handle a draft model for `speculative` generations (`type: draft`, the
    /// default once it has one): `spec` is a catalog name (pulled on first use) or a GGUF path,
    /// loaded and checked to share the model's vocabulary by the runtime (the check `nucleus
    /// serve --model-draft` makes), with a context of the handle's size and threads. `None`
    /// removes it. On error the handle keeps the draft model it had.
    pub(crate) fn set_draft_model(&self, spec: Option<&str>) -> Result<()> {
        let mut s = self.session()?;
        let Some(spec) = spec else {
            s.draft = None;
            return Ok(());
        };
        let pip = Pip { quiet: true, ..Pip::default() };
        let draft = LlamaCppModel::load_draft_for(self.model.as_ref(), spec, &pip)
            .map_err(|e| with_context(runtime_error(e), "the draft model"))?;
        let ctx = draft.new_context(&self.ctx_opts).map_err(|e| with_context(runtime_error(e), "the draft model"))?;
        s.draft = Some(DraftModel::new(ctx));
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

    /// What speculative decoding did in the last generation on this handle (`None` when it
    /// did not speculate, or before the first generation).
    pub(crate) fn last_spec_stats(&self) -> Option<SpecStats> {
        *self.last_spec.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Generates up to `max_tokens` (negative: until end of generation or a full context) after
    /// the context's tokens, sampling with `params_json` (and speculating with its
    /// `speculative` object), within the token trie if one is set. `on_token` hears every
    /// token and, last, a call with `done`. Returns how many tokens were generated.
    ///
    /// The runtime's generation [`Engine`] runs it with one slot, the context's tokens as the
    /// prompt of which all but the last are cached: that last token (the pending one — the
    /// last generated or prefilled token, which no call decoded yet — or, should the KV hold
    /// it already, the last one cut from the KV and decoded again: the same logits bits, the
    /// forward pass being batch-invariant) starts the generation, as in `nucleus generate`.
    /// With `type: draft` the handle's draft model goes to the engine for the call and comes
    /// back after it, its context holding what it drafted after.
    pub(crate) fn generate(&self, max_tokens: i32, params_json: &str, on_token: &mut OnToken<'_>) -> Result<i32> {
        let mut s = self.session()?;
        self.cancel.store(false, Ordering::SeqCst);
        let vocab = Vocabulary::Model(self.n_vocab());
        let (params, speculative) = crate::params::parse_generation(params_json, vocab).map_err(Error::invalid)?;
        let spec = spec_binding_option(speculative.as_ref(), self.model.batch_invariant(), s.draft.is_some())
            .map_err(|e| Error::invalid(e.to_string()))?;
        let opts = SequenceOptions { max_tokens: usize::try_from(max_tokens).ok(), ..Default::default() };
        let mut seq = Sequence::new(self.model.as_ref(), &params, opts).map_err(runtime_error)?;
        if let Some((trie, greedy)) = self.trie.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            seq.set_token_trie(trie, greedy);
        }
        *self.last_spec.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if s.history.is_empty() && s.pending.is_none() {
            return Err(Error::invalid("the context is empty: call nucleus_llm_prefill with a prompt first"));
        }
        if max_tokens == 0 || self.cancelled() {
            if let Some(p) = s.pending.take() {
                s.feed(&[p], false)?;
            }
            on_token(-1, "", true);
            return Ok(0);
        }
        let n_ctx = s.ctx.n_ctx();
        let pending = s.pending.is_some();
        if pending && s.history.len() + 1 > n_ctx {
            return Err(Error::size(format!(
                "the context holds {n_ctx} tokens: {} are in it and 1 more does not fit (nucleus_llm_reset empties it)",
                s.history.len()
            )));
        }
        let mut tokens = s.history.clone();
        tokens.extend(s.pending);
        let cached = tokens.len() - 1;
        if !pending && s.ctx.truncate(SEQ, cached).is_err() {
            s.clear();
            return Err(Error::new(NUCLEUS_ERR_MODEL, "could not cut the context's last token to decode it again"));
        }
        let s = &mut *s;
        let mut engine = Engine::new(1, n_ctx, PREFILL_CHUNK.min(s.ctx.n_batch()).max(1));
        match spec {
            Some((SpecType::Draft, o)) => {
                seq.set_model_speculation(o);
                // `resolve` allows `draft` only when the handle has a draft model.
                if let Some(d) = s.draft.take() {
                    engine.set_draft_model(d);
                }
            }
            Some((_, o)) => seq.set_speculation(o),
            None => {}
        }
        seq.accept_prompt(&tokens);
        let job = SlotJob {
            tag: (),
            prompt: tokens.as_slice().into(),
            sequence: seq,
            cached,
            score_prompt: None,
            prompt_only: false,
        };
        let mut sink = CallerSink { on_token, cancel: &self.cancel, done_sent: false, outcome: None };
        let started = engine.start(s.ctx.as_mut(), SEQ, job, &mut sink).is_ok();
        while started && !engine.is_idle() {
            engine.prefill(s.ctx.as_mut(), &mut sink);
            engine.step(s.ctx.as_mut(), &mut sink);
        }
        if let Some(d) = engine.take_draft_model() {
            s.draft = Some(d);
        }
        if !started {
            s.clear();
            return Err(Error::new(NUCLEUS_ERR_MODEL, "the generation engine refused its only slot"));
        }
        let seq = match sink.outcome {
            Some(Ok(seq)) => seq,
            Some(Err(e)) => {
                s.clear();
                return Err(runtime_error(e));
            }
            None => {
                s.clear();
                return Err(Error::new(NUCLEUS_ERR_MODEL, "the generation did not end"));
            }
        };
        // The KV holds what token-by-token decoding leaves: everything but the last token.
        tokens.extend_from_slice(seq.generated());
        let kv = s.ctx.seq_len(SEQ);
        match tokens.len().checked_sub(kv) {
            Some(0) => s.pending = None,
            Some(1) => s.pending = tokens.last().copied(),
            _ => {
                s.clear();
                return Err(Error::new(NUCLEUS_ERR_MODEL, "the context does not hold the generated tokens"));
            }
        }
        tokens.truncate(kv);
        s.history = tokens;
        *self.last_spec.lock().unwrap_or_else(|p| p.into_inner()) = seq.spec_stats();
        Ok(seq.generated().len() as i32)
    }
}

/// `e` with its message saying what it is about (`the draft model: ...`).
fn with_context(e: Error, what: &str) -> Error {
    Error::new(e.code, format!("{what}: {}", e.message))
}

/// The engine's one slot reporting to the C callback: every token with `done` on the last one
/// (or a final call without a token when the generation stops otherwise), cancel between
/// tokens without another forward pass.
struct CallerSink<'a, 'f> {
    on_token: &'a mut OnToken<'f>,
    cancel: &'a AtomicBool,
    /// Whether the `done` call was made.
    done_sent: bool,
    /// The finished sequence, or why the generation failed.
    outcome: Option<std::result::Result<Sequence, RuntimeError>>,
}

impl SlotSink<()> for CallerSink<'_, '_> {
    fn cancelled(&mut self, _slot: SeqId, _tag: &()) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    fn token(&mut self, _slot: SeqId, _tag: &mut (), step: &Step<'_>) -> ControlFlow<()> {
        let done = step.finished.is_some();
        (self.on_token)(step.event.token, step.event.text, done);
        self.done_sent |= done;
        // Stopped from the callback or another thread: no forward pass for this token.
        if !done && self.cancel.load(Ordering::SeqCst) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn finished(&mut self, _slot: SeqId, done: Finished<()>) {
        if !self.done_sent {
            (self.on_token)(-1, "", true);
            self.done_sent = true;
        }
        self.outcome = Some(Ok(done.sequence));
    }

    fn failed(&mut self, _slot: SeqId, _tag: (), failure: SlotFailure) {
        self.outcome = Some(Err(failure.into_error()));
    }
}
