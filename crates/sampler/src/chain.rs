//! [`Chain`]: an ordered list of [`Step`]s applied one after another, itself a [`Sampler`].

use crate::candidates::{Candidates, Token};
use crate::sampler::Sampler;
use crate::step::Step;

/// Runs its members in order on the same candidates; `accept` and `reset` go to every member.
/// A chain should end with a selector (dist, greedy, mirostat, adaptive-p).
#[derive(Clone, Default)]
pub struct Chain {
    samplers: Vec<Step>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.samplers.iter().map(|s| s.name())).finish()
    }
}

impl Chain {
    /// An empty chain.
    pub fn new() -> Self {
        Chain { samplers: Vec::new() }
    }

    /// Appends a step (llama.cpp's `llama_sampler_chain_add`): a built-in sampler
    /// (`chain.push(TopK::new(40))`), or a user sampler as a `Box<dyn Sampler>` or
    /// [`Step::custom`].
    pub fn push(&mut self, s: impl Into<Step>) {
        self.samplers.push(s.into());
    }

    /// Builder-style [`Chain::push`].
    pub fn with(mut self, s: impl Into<Step>) -> Self {
        self.samplers.push(s.into());
        self
    }

    /// Inserts a step at position `i` (e.g. a user sampler before the selector).
    pub fn insert(&mut self, i: usize, s: impl Into<Step>) {
        self.samplers.insert(i.min(self.samplers.len()), s.into());
    }

    /// Removes and returns the step at position `i`.
    pub fn remove(&mut self, i: usize) -> Option<Step> {
        (i < self.samplers.len()).then(|| self.samplers.remove(i))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.samplers.len()
    }

    /// True when the chain has no member.
    pub fn is_empty(&self) -> bool {
        self.samplers.is_empty()
    }

    /// The members, in order.
    pub fn samplers(&self) -> &[Step] {
        &self.samplers
    }

    /// The members, mutable.
    pub fn samplers_mut(&mut self) -> &mut [Step] {
        &mut self.samplers
    }

    /// Runs the members in order like [`Sampler::apply`], counting the live candidates (those
    /// with a logit above `-inf`) into `counts`: first those entering the chain, then those each
    /// member left — what a step-by-step view shows of each sampler's effect. `counts` is
    /// cleared first. Members that cannot drop a candidate (no-ops, plain temperature) are not
    /// recounted, which saves passes over a large vocabulary.
    pub fn apply_counting(&mut self, c: &mut Candidates, counts: &mut Vec<usize>) {
        counts.clear();
        let mut live = live_candidates(c);
        counts.push(live);
        for s in &mut self.samplers {
            s.apply(c);
            if !matches!(s.role(), crate::role::Role::Noop | crate::role::Role::Temp) {
                live = live_candidates(c);
            }
            counts.push(live);
        }
    }

    /// The members' names joined as llama.cpp prints a chain (`top-k -> top-p -> dist`).
    pub fn describe(&self) -> String {
        self.samplers.iter().map(|s| s.name()).collect::<Vec<_>>().join(" -> ")
    }
}

/// Candidates whose logit is above `-inf` (masked and banned tokens are `-inf`; truncating
/// samplers shrink the array instead).
pub fn live_candidates(c: &Candidates) -> usize {
    c.as_slice().iter().filter(|d| d.logit > f32::NEG_INFINITY).count()
}

impl Sampler for Chain {
    fn name(&self) -> &str {
        "chain"
    }

    fn apply(&mut self, c: &mut Candidates) {
        for s in &mut self.samplers {
            s.apply(c);
        }
    }

    fn accept(&mut self, token: Token) {
        for s in &mut self.samplers {
            s.accept(token);
        }
    }

    fn reset(&mut self) {
        for s in &mut self.samplers {
            s.reset();
        }
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }

    /// The seed of the last member that reports one (llama.cpp's `llama_sampler_get_seed`).
    fn seed(&self) -> Option<u32> {
        self.samplers.iter().rev().find_map(|s| s.seed()).filter(|&s| s != crate::rng::DEFAULT_SEED)
    }
}
