//! The [`Sampler`] trait: llama.cpp's sampler lifecycle (name, apply, accept, reset, clone).
//!
//! Implement it to write your own sampler and put it anywhere in a [`crate::Chain`].

use crate::candidates::{Candidates, Token};

/// A step of the sampling pipeline: edits the candidates and, for selectors, picks one.
pub trait Sampler: Send {
    /// Short name, as llama.cpp prints it (`top-k`, `dist`, ...). No-op samplers built from
    /// "off" parameter values are named with a leading `?`.
    fn name(&self) -> &str;

    /// Transforms the candidates (filter, rescale) and, for a selector, sets `selected`.
    fn apply(&mut self, cands: &mut Candidates);

    /// Called once for each token committed to the sequence (generated or prompt).
    fn accept(&mut self, _token: Token) {}

    /// Clears history and restarts any random stream from the seed.
    fn reset(&mut self) {}

    /// A deep copy, including history and random state.
    fn clone_box(&self) -> Box<dyn Sampler>;

    /// The seed of this sampler's random stream, for the samplers llama.cpp reports one
    /// for (dist, mirostat, mirostat-v2).
    fn seed(&self) -> Option<u32> {
        None
    }

    /// Optimisation hint for whole-vocabulary fast paths (see [`FastPath`]). The default,
    /// [`FastPath::Opaque`], is always correct: the chain then runs on the full candidate array.
    fn fast_path(&self) -> FastPath {
        if self.name().starts_with('?') {
            FastPath::Noop
        } else {
            FastPath::Opaque
        }
    }

    /// For [`FastPath::Sparse`] samplers: appends the token ids whose logits this sampler may
    /// change.
    fn sparse_ids(&self, _out: &mut Vec<Token>) {}

    /// For [`FastPath::Sparse`] samplers: applies the sampler to `cands`, which holds (in id
    /// order) only the ids from [`Sampler::sparse_ids`], exactly as if it ran on the full,
    /// id-ordered vocabulary. The default is [`Sampler::apply`].
    fn apply_sparse(&mut self, cands: &mut Candidates) {
        self.apply(cands)
    }

    /// The concrete sampler, so whole-vocabulary fast paths can read the parameters (and use
    /// the random stream) of the built-in samplers they recognise. `None` by default.
    #[doc(hidden)]
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }

    /// See [`Sampler::as_any_mut`].
    #[doc(hidden)]
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// How a sampler can take part in the whole-vocabulary fast path, which avoids building a
/// candidate entry for every token when the chain allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastPath {
    /// Unknown effect: the chain runs on the full candidate array (always correct).
    Opaque,
    /// Does nothing (a "?name" sampler built from off values).
    Noop,
    /// Changes only the logits of a few known ids, each independently of the others
    /// (penalties, DRY, logit-bias).
    Sparse,
    /// llama.cpp's top-k with this `k`.
    TopK(i32),
    /// The built-in `top-n-sigma` with a finite `n > 0`.
    TopNSigma,
    /// Plain temperature (`temp`, or `temp-ext` without dynamic range) with a finite `t > 0`.
    Temp,
    /// The built-in `dist` selector.
    Dist,
    /// The built-in `mirostat-v2` selector.
    MirostatV2,
    /// The built-in `top-p` with `p < 1`.
    TopP,
    /// The built-in `min-p` with `p > 0`.
    MinP,
}

impl Clone for Box<dyn Sampler> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}
