//! [`TokenSampler`]: a chain plus its reusable candidate buffer — logits in, token out.
//!
//! This is what a generation loop holds per sequence. After the first call, [`TokenSampler::sample`]
//! allocates nothing: the candidate buffer and every sampler's scratch space are reused.
//!
//! # Fast paths
//!
//! For `f32` rows of at least 1024 logits, chains llama.cpp users run most often are sampled
//! without building the candidate array of the whole vocabulary. Each gives the token llama.cpp
//! gives and consumes the random streams identically (the differential tests hold them to it).
//! In every case the chain may start with no-op samplers and sparse ones (penalties, logit
//! bias, DRY), which are applied to the few ids they touch.
//!
//! * top-k of at most 128: the top-k is replayed straight from the row (`top_k_from_row`) and the
//!   rest of the chain runs on the `k` survivors.
//! * top-p (then min-p, plain temperature, `dist`): when the nucleus lies within llama.cpp's
//!   first 256 sorted candidates, it is built from a bracket of the softmax sum and the top
//!   buckets of llama.cpp's sort (`fast::top_p`); the rest of the chain runs on it.
//!   When the nucleus is wider (a flat row), and `dist` ends the chain, only the buckets
//!   holding it are sorted, by value, and the draw runs on them (`fast::top_p_wide`); the
//!   selected id is read off the row (replaying llama.cpp's sort of one bucket on a tie).
//! * plain temperature then `mirostat-v2`: the kept prefix is built from the exact sorted sum
//!   (`fast::mirostat_v2`) and the sampler finishes on it; a long prefix (or one with equal
//!   values) is sorted by value alone, and the selected id read off the row (replaying
//!   llama.cpp's sort of one bucket on a tie), which defers the candidates like the last kind.
//!   When that prefix also holds every term of the first softmax's sum, nothing is sorted: the
//!   draw is decided from per-value-range masses of the exact weights, only the range holding
//!   the crossing sorted and walked, with llama.cpp's `f64` rounding bounded (literal replay
//!   for a draw within the bound of a boundary).
//! * `dist` alone, or `top-n-sigma` → plain temperature → `dist`: the draw is decided from
//!   bounds on block sums of the exponentials (`fast::dist`, `fast::top_n_sigma`), with exact arithmetic
//!   only where a bound is too wide to decide.
//!
//! When a fast path cannot decide exactly, it leaves the step to the full path before anything
//! is consumed. The first three leave exactly the full path's candidates (the wide top-p
//! path and mirostat's value path defer them like the last kind). The last kind never
//! builds the final candidate array (building it would cost more than the whole draw): after
//! such a step [`TokenSampler::candidates_complete`] is `false` and
//! [`TokenSampler::candidates`] holds only the selected token (`id`, final `logit`, `p` NaN,
//! `selected = Some(0)`). Call [`TokenSampler::materialize_candidates`] with the same row to get
//! the exact array the full path leaves (ids, order, logits and `p` bits, `sorted`, `selected`),
//! or turn the fast paths off with [`TokenSampler::set_fast_path`].

use crate::candidates::{Candidates, Token};
use crate::chain::Chain;
use crate::error::SampleError;
use crate::fast::plan::FastPath;
use crate::logits::{check_logits, Logits};
use crate::sampler::Sampler;

/// One sequence's sampler: validates the logits, fills the candidates, runs the chain and
/// accepts the chosen token.
#[derive(Clone, Debug)]
pub struct TokenSampler {
    chain: Chain,
    cands: Candidates,
    /// The fast-path plan compiled for the chain, and the fast paths' buffers.
    fast: FastPath,
    /// A half-precision row widened to f32 (see [`TokenSampler::apply`]).
    widened: Vec<f32>,
}

impl TokenSampler {
    /// Wraps a chain (built by [`crate::SamplingParams::build`] or by hand).
    pub fn new(chain: Chain) -> Self {
        TokenSampler { chain, cands: Candidates::new(), fast: FastPath::default(), widened: Vec::new() }
    }

    /// Turns the whole-vocabulary fast paths off or on (on by default). Tokens and random
    /// streams are identical either way; with the fast paths off, [`TokenSampler::candidates`]
    /// always holds the complete final array.
    pub fn set_fast_path(&mut self, enabled: bool) {
        self.fast.set_enabled(enabled);
    }

    /// The chain.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The chain, mutable (to insert a user sampler, for example). The fast-path plan is
    /// compiled again at the next step.
    pub fn chain_mut(&mut self) -> &mut Chain {
        self.fast.chain_edited();
        &mut self.chain
    }

    /// The candidates as the chain left them at the last step (the distribution sampled from)
    /// — unless that step took a fast path that does not build them
    /// ([`TokenSampler::candidates_complete`] is then `false`): they hold only the selected
    /// token, with `p` NaN. See [`TokenSampler::materialize_candidates`].
    pub fn candidates(&self) -> &Candidates {
        &self.cands
    }

    /// Whether [`TokenSampler::candidates`] is the complete final array of the last step.
    pub fn candidates_complete(&self) -> bool {
        self.fast.complete()
    }

    /// The exact final candidates of the last step — what the full path leaves, bit for bit —
    /// rebuilt from `logits`, which must be the row that step sampled from. Valid after the
    /// token was accepted (the sparse samplers' effect is kept from the step itself); cheap
    /// when [`TokenSampler::candidates_complete`] already holds. A half-precision row is read
    /// as its f32 widening, as [`TokenSampler::apply`] read it.
    pub fn materialize_candidates<'a>(&mut self, logits: impl Into<Logits<'a>>) -> &Candidates {
        if !self.fast.complete() {
            match logits.into() {
                Logits::F32(row) => self.fast.materialize(&mut self.chain, &mut self.cands, row),
                half => {
                    half.widen_into(&mut self.widened);
                    self.fast.materialize(&mut self.chain, &mut self.cands, &self.widened);
                }
            }
        }
        &self.cands
    }

    /// Samples one token from `logits` and accepts it into the chain's history.
    pub fn sample<'a>(&mut self, logits: impl Into<Logits<'a>>) -> Result<Token, SampleError> {
        let tok = self.apply(logits)?;
        self.chain.accept(tok);
        Ok(tok)
    }

    /// Runs the chain on `logits` and returns the selected token *without* accepting it.
    /// Uses a fast path when the chain allows one (see the module documentation).
    pub fn apply<'a>(&mut self, logits: impl Into<Logits<'a>>) -> Result<Token, SampleError> {
        let logits = logits.into();
        self.fast.begin_step();
        if let Logits::F32(row) = logits {
            if let Some(tok) = self.fast.try_sample(&mut self.chain, &mut self.cands, row)? {
                return Ok(tok);
            }
            return self.apply_steered(logits, |_| {});
        }
        // Half-precision rows mean their f32 widening (every path reads them through
        // `to_f32`), so they are widened once into a reused buffer and take the f32 fast paths
        // too, instead of the full path over the whole vocabulary (about 30x slower).
        let mut wide = std::mem::take(&mut self.widened);
        logits.widen_into(&mut wide);
        let out = match self.fast.try_sample(&mut self.chain, &mut self.cands, &wide) {
            Ok(Some(tok)) => Ok(tok),
            Ok(None) => self.apply_steered(Logits::F32(&wide), |_| {}),
            Err(e) => Err(e),
        };
        self.widened = wide;
        out
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
        self.fast.begin_step();
        check_logits(logits)?;
        self.cands.fill(logits);
        steer(&mut self.cands);
        self.chain.apply(&mut self.cands);
        self.cands.selected_checked()
    }

    /// [`TokenSampler::apply_steered`] that also reports each sampler's effect: `counts` gets
    /// the number of live candidates (logit above `-inf`) after `steer`, then after each chain
    /// member in order (see [`Chain::apply_counting`]). It always runs the full path, so the
    /// token and random streams are those of [`TokenSampler::apply`] (the fast paths are exact)
    /// and [`TokenSampler::candidates`] is complete afterwards. Costs a pass over the
    /// candidates per member: meant for inspection (the server's `trace_steps`), not for speed.
    pub fn apply_traced<'a>(
        &mut self,
        logits: impl Into<Logits<'a>>,
        steer: impl FnOnce(&mut Candidates),
        counts: &mut Vec<usize>,
    ) -> Result<Token, SampleError> {
        let logits = logits.into();
        self.fast.begin_step();
        check_logits(logits)?;
        self.cands.fill(logits);
        steer(&mut self.cands);
        self.chain.apply_counting(&mut self.cands, counts);
        self.cands.selected_checked()
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
