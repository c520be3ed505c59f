//! [`TokenSampler`]: a chain plus its reusable candidate buffer — logits in, token out.
//!
//! This is what a generation loop holds per sequence. After the first call, [`TokenSampler::sample`]
//! allocates nothing: the candidate buffer and every sampler's scratch space are reused.

use crate::candidates::{Candidates, Token};
use crate::chain::Chain;
use crate::error::SampleError;
use crate::logits::{check_logits, Logits};
use crate::sampler::Sampler;

/// One sequence's sampler: validates the logits, fills the candidates, runs the chain and
/// accepts the chosen token.
#[derive(Clone, Debug)]
pub struct TokenSampler {
    chain: Chain,
    cands: Candidates,
}

impl TokenSampler {
    /// Wraps a chain (built by [`crate::SamplingParams::build`] or by hand).
    pub fn new(chain: Chain) -> Self {
        TokenSampler { chain, cands: Candidates::new() }
    }

    /// The chain.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The chain, mutable (to insert a user sampler, for example).
    pub fn chain_mut(&mut self) -> &mut Chain {
        &mut self.chain
    }

    /// The candidates as the chain left them at the last step (the distribution sampled from).
    pub fn candidates(&self) -> &Candidates {
        &self.cands
    }

    /// Samples one token from `logits` and accepts it into the chain's history.
    pub fn sample<'a>(&mut self, logits: impl Into<Logits<'a>>) -> Result<Token, SampleError> {
        self.sample_steered(logits, |_| {})
    }

    /// Like [`TokenSampler::sample`], but lets `steer` edit the candidates (logit steering:
    /// boost, ban or rescale tokens) after they are filled and before the chain runs. The
    /// caller's logits are never modified and the vocabulary is not copied twice.
    pub fn sample_steered<'a>(
        &mut self,
        logits: impl Into<Logits<'a>>,
        steer: impl FnOnce(&mut Candidates),
    ) -> Result<Token, SampleError> {
        let tok = self.apply_steered(logits, steer)?;
        self.chain.accept(tok);
        Ok(tok)
    }

    /// Runs the chain and returns the selected token *without* accepting it (call
    /// [`TokenSampler::accept`] once the token is committed, e.g. after a grammar check).
    pub fn apply_steered<'a>(
        &mut self,
        logits: impl Into<Logits<'a>>,
        steer: impl FnOnce(&mut Candidates),
    ) -> Result<Token, SampleError> {
        let logits = logits.into();
        check_logits(logits)?;
        self.cands.fill(logits);
        steer(&mut self.cands);
        self.chain.apply(&mut self.cands);
        let sel = match self.cands.selected_token() {
            Some(t) => t,
            None if self.cands.is_empty() => return Err(SampleError::NoCandidates),
            None => return Err(SampleError::NothingSelected),
        };
        if sel.logit == f32::NEG_INFINITY || sel.logit.is_nan() {
            return Err(SampleError::NoCandidates);
        }
        Ok(sel.id)
    }

    /// Feeds a committed token (a prompt token, or a generated one) into the chain's history.
    pub fn accept(&mut self, token: Token) {
        self.chain.accept(token);
    }

    /// Clears history and restarts random streams from their seeds.
    pub fn reset(&mut self) {
        self.chain.reset();
    }
}
