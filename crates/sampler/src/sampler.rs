//! The [`Sampler`] trait: llama.cpp's sampler lifecycle (name, apply, accept, reset, clone).
//!
//! Implement it to write your own sampler and put it anywhere in a [`crate::Chain`] (as a
//! [`crate::Step::Custom`]). A custom sampler's `apply` always runs: the whole-vocabulary fast
//! paths only recognise the built-in steps of the closed [`crate::Step`] enum.

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
}

impl Clone for Box<dyn Sampler> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}
