//! What the engine tells its driver: [`SlotSink`] is called for every forward pass, every
//! scored prompt token, every generated token and every slot that ends. The one-slot
//! [`crate::generate`] and the server's scheduler are the two drivers; each turns these calls
//! into its own output (a callback and stats, or events to HTTP clients, metrics and the
//! prompt cache's record of each slot's KV).

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use nucleus_sampler::probs::TokenProb;
use nucleus_sampler::Token;

use crate::error::RuntimeError;
use crate::model::SeqId;
use crate::sequence::{Sequence, Step, StopReason};

/// One forward pass of the context.
#[derive(Clone, Copy, Debug)]
pub enum Pass<'a> {
    /// Prompt tokens of one slot, appended after what its KV held.
    Prefill {
        /// The slot.
        slot: SeqId,
        /// The tokens.
        tokens: &'a [Token],
    },
    /// Tokens for each of several slots, in a single decode call: one per slot, and after it
    /// any tokens the slot's constraint forces.
    Decode {
        /// (slot, tokens) pairs.
        runs: &'a [(SeqId, &'a [Token])],
    },
}

/// A prompt token with its score (echo with logprobs).
#[derive(Clone, Copy, Debug)]
pub struct PromptToken<'a> {
    /// Its position in the prompt.
    pub index: usize,
    /// The token.
    pub id: Token,
    /// Its log-probability given the tokens before it (`None` for the first token, which no
    /// logits predict).
    pub logprob: Option<f32>,
    /// The most likely tokens at its position, best first (empty for the first token).
    pub top: &'a [TokenProb],
}

/// A slot that ended without an error; the slot is free again.
pub struct Finished<T> {
    /// The driver's data for the slot.
    pub tag: T,
    /// Why it ended.
    pub reason: StopReason,
    /// The sequence, with what it generated and its sampling time.
    pub sequence: Sequence,
    /// Its prompt.
    pub prompt: Arc<[Token]>,
}

/// Why a slot ended with an error. Its KV was cleared (it cannot be trusted after a failed call).
#[derive(Debug)]
pub enum SlotFailure {
    /// The slot's own work failed: evaluating its prompt, or sampling (e.g. a grammar with no
    /// allowed token).
    Own(RuntimeError),
    /// The decode call that advanced this slot together with others failed; every slot in it
    /// gets the same error.
    Batch(Arc<RuntimeError>),
}

impl SlotFailure {
    /// Whether the request caused it (bad sampling parameters, a sampling dead end) rather than
    /// the backend.
    pub fn caused_by_input(&self) -> bool {
        matches!(self, SlotFailure::Own(RuntimeError::Sample(_) | RuntimeError::Param(_)))
    }

    /// The error, owned (a batch error shared with other slots becomes its message).
    pub fn into_error(self) -> RuntimeError {
        match self {
            SlotFailure::Own(e) => e,
            SlotFailure::Batch(e) => Arc::try_unwrap(e).unwrap_or_else(|e| RuntimeError::Decode(e.to_string())),
        }
    }
}

impl std::fmt::Display for SlotFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SlotFailure::Own(e) => e.fmt(f),
            SlotFailure::Batch(e) => e.fmt(f),
        }
    }
}

/// The driver's side of the engine, for slots tagged with `T`. Calls come in the order the work
/// happens, on the engine caller's thread.
pub trait SlotSink<T> {
    /// A forward pass ran, successful or not, taking `took`.
    fn pass(&mut self, pass: Pass<'_>, took: Duration) {
        let _ = (pass, took);
    }

    /// `tokens` are now in `slot`'s KV, right after what it held (a successful pass).
    fn appended(&mut self, slot: SeqId, tokens: &[Token]) {
        let _ = (slot, tokens);
    }

    /// `slot`'s KV was emptied (a forced run could not be cut back after the slot ended).
    fn cleared(&mut self, slot: SeqId) {
        let _ = slot;
    }

    /// Whether the slot is to stop; asked before each prompt chunk and each sampling step.
    fn cancelled(&mut self, slot: SeqId, tag: &T) -> bool {
        let _ = (slot, tag);
        false
    }

    /// A scored prompt token.
    fn prompt_token(&mut self, slot: SeqId, tag: &mut T, token: PromptToken<'_>) {
        let _ = (slot, tag, token);
    }

    /// A generated token. `Break` stops the slot (cancelled) unless this token ended it anyway.
    fn token(&mut self, slot: SeqId, tag: &mut T, step: &Step<'_>) -> ControlFlow<()>;

    /// The slot ended; it is free.
    fn finished(&mut self, slot: SeqId, done: Finished<T>);

    /// The slot failed; it is free and its KV is empty.
    fn failed(&mut self, slot: SeqId, tag: T, failure: SlotFailure);
}
