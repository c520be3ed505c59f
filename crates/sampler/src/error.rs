//! Errors returned to users: bad parameters and bad logits. The library never panics on
//! user input.

use thiserror::Error;

/// A parameter outside its allowed range, named as llama.cpp names it.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("invalid sampling parameter `{field}` = {value}: {allowed}")]
pub struct ParamError {
    /// Field name (`top_k`, `penalty_repeat`, ...).
    pub field: &'static str,
    /// The offending value, as text.
    pub value: String,
    /// What is allowed.
    pub allowed: &'static str,
}

impl ParamError {
    /// Builds an error for `field` holding `value`.
    pub fn new(field: &'static str, value: impl std::fmt::Display, allowed: &'static str) -> Self {
        ParamError { field, value: value.to_string(), allowed }
    }
}

/// Why sampling a token failed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SampleError {
    /// The logits row is empty.
    #[error("empty vocabulary: the logits row has no entries")]
    EmptyVocab,
    /// A logit is NaN.
    #[error("logit of token {token} is NaN")]
    NanLogit {
        /// The first offending token.
        token: usize,
    },
    /// A logit is +infinity.
    #[error("logit of token {token} is +inf")]
    PosInfLogit {
        /// The first offending token.
        token: usize,
    },
    /// Every candidate is banned (-inf) so nothing can be chosen.
    #[error("no candidate left: every logit is -inf after the sampler chain")]
    NoCandidates,
    /// The chain ran but no sampler selected a token (the chain lacks a selector).
    #[error("the sampler chain selected no token (does it end with a selector such as dist or greedy?)")]
    NothingSelected,
    /// The logits row does not match the vocabulary size the chain was built for.
    #[error("logits row has {got} entries but the chain was built for a vocabulary of {expected}")]
    VocabMismatch {
        /// Vocabulary size of the chain.
        expected: usize,
        /// Entries in the row.
        got: usize,
    },
}
