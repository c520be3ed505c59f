//! [`TokenSampler`]: a chain plus its reusable candidate buffer — logits in, token out.
//!
//! This is what a generation loop holds per sequence. After the first call, [`TokenSampler::sample`]
//! allocates nothing: the candidate buffer and every sampler's scratch space are reused.

use crate::candidates::{Candidates, Token};
use crate::chain::Chain;
use crate::error::SampleError;
use crate::logits::{check_logits, Logits};
use crate::raw_top_k::{raw_top_k, BadLogit};
use crate::sampler::{FastPath, Sampler};

/// One sequence's sampler: validates the logits, fills the candidates, runs the chain and
/// accepts the chosen token.
#[derive(Clone, Debug)]
pub struct TokenSampler {
    chain: Chain,
    cands: Candidates,
    fast: FastScratch,
}

/// Buffers of the whole-vocabulary fast path, reused between steps.
#[derive(Clone, Debug, Default)]
struct FastScratch {
    /// Set to false to always run the chain on the full candidate array.
    disabled: bool,
    ids: Vec<Token>,
    sparse: Candidates,
    heap: Vec<crate::candidates::TokenData>,
}

impl TokenSampler {
    /// Wraps a chain (built by [`crate::SamplingParams::build`] or by hand).
    pub fn new(chain: Chain) -> Self {
        TokenSampler { chain, cands: Candidates::new(), fast: FastScratch::default() }
    }

    /// Turns the whole-vocabulary fast path off or on (on by default). Results are identical
    /// either way; this exists for benchmarks and differential tests.
    pub fn set_fast_path(&mut self, enabled: bool) {
        self.fast.disabled = !enabled;
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
        let tok = self.apply(logits)?;
        self.chain.accept(tok);
        Ok(tok)
    }

    /// Runs the chain on `logits` and returns the selected token *without* accepting it.
    ///
    /// When the chain starts (after no-op and sparse samplers such as penalties or logit-bias)
    /// with a top-k of at most 128, the top-k is taken straight from the row (see
    /// `raw_top_k`) and only the survivors are materialised; the result is identical to
    /// running the chain on the full array.
    pub fn apply<'a>(&mut self, logits: impl Into<Logits<'a>>) -> Result<Token, SampleError> {
        let logits = logits.into();
        if let Logits::F32(row) = logits {
            if let Some(start) = self.try_fast_prefix(row)? {
                for s in &mut self.chain.samplers_mut()[start..] {
                    s.apply(&mut self.cands);
                }
                return self.selected();
            }
        }
        self.apply_steered(logits, |_| {})
    }

    /// Runs the chain's prefix on the raw row when it allows it; returns the index of the first
    /// member still to apply, or `None` when the full array is needed.
    fn try_fast_prefix(&mut self, row: &[f32]) -> Result<Option<usize>, SampleError> {
        const MIN_VOCAB: usize = 1024;
        let n = row.len();
        if self.fast.disabled || n < MIN_VOCAB {
            return Ok(None);
        }
        let mut top = None;
        for (i, s) in self.chain.samplers().iter().enumerate() {
            match s.fast_path() {
                FastPath::Noop | FastPath::Sparse => {}
                FastPath::TopK(k) if k > 0 && (k as usize) <= 128 && (k as usize) < n => {
                    top = Some((i, k as usize));
                    break;
                }
                _ => return Ok(None),
            }
        }
        let Some((at, k)) = top else { return Ok(None) };
        let f = &mut self.fast;
        f.ids.clear();
        for s in &self.chain.samplers()[..at] {
            if s.fast_path() == FastPath::Sparse {
                s.sparse_ids(&mut f.ids);
            }
        }
        f.ids.retain(|&t| t >= 0 && (t as usize) < n);
        f.ids.sort_unstable();
        f.ids.dedup();
        f.sparse.fill_from_ids(&f.ids, row);
        for s in &mut self.chain.samplers_mut()[..at] {
            if s.fast_path() == FastPath::Sparse {
                s.apply_sparse(&mut f.sparse);
            }
        }
        match raw_top_k(row, k, f.sparse.as_slice(), &mut f.heap) {
            Ok(()) => {}
            Err(BadLogit(i)) => {
                return Err(if row[i].is_nan() {
                    SampleError::NanLogit { token: i }
                } else {
                    SampleError::PosInfLogit { token: i }
                })
            }
        }
        self.cands.fill_from(&f.heap);
        self.cands.set_sorted(true);
        Ok(Some(at + 1))
    }

    fn selected(&self) -> Result<Token, SampleError> {
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
        self.selected()
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
