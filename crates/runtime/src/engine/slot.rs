//! A slot's work: the job a driver hands in ([`SlotJob`]) and where it has got to ([`Slot`]).

use std::sync::Arc;

use nucleus_sampler::Token;

use crate::sequence::Sequence;

/// A sequence to run in a slot.
pub struct SlotJob<T> {
    /// The driver's data for the slot, handed back with every call about it.
    pub tag: T,
    /// The prompt (already accepted into the sequence's sampler history,
    /// [`Sequence::accept_prompt`]).
    pub prompt: Arc<[Token]>,
    /// Sampler, stop strings, limits and constraints.
    pub sequence: Sequence,
    /// Leading prompt tokens the slot's KV already holds (a cached prefix): evaluation starts
    /// after them. It must leave at least one prompt token (its logits start generation), and be
    /// 0 when the prompt is scored.
    pub cached: usize,
    /// Score every prompt token (echo with logprobs) with this many alternatives. The prompt is
    /// then evaluated one token per decode step, since each token's logits are needed.
    pub score_prompt: Option<usize>,
    /// Evaluate the prompt only: the slot ends (`MaxTokens`) without generating.
    pub prompt_only: bool,
}

/// Where a running slot is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Prompt tokens from `next` on are still to be evaluated, in chunks.
    Prefill {
        /// First prompt token not yet in the KV.
        next: usize,
    },
    /// `token` goes in with the next decode call (a generated token, or a prompt token being
    /// scored).
    Decode {
        /// The token.
        token: Token,
    },
}

/// Scoring a prompt: the logits after the last evaluated token predict `prompt[next]`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Scoring {
    pub(super) next: usize,
    pub(super) top: usize,
}

/// A running slot.
pub(super) struct Slot<T> {
    pub(super) tag: T,
    pub(super) prompt: Arc<[Token]>,
    pub(super) seq: Sequence,
    pub(super) prompt_only: bool,
    pub(super) scoring: Option<Scoring>,
    pub(super) phase: Phase,
}
