//! What mirostat v1 and v2 share (their state and the draw that updates `mu`), in its own
//! module so neither sampler module imports the other's internals.

use crate::candidates::Candidates;
use crate::rng::{discrete_pick, resolve_seed, LlamaRng};
use crate::softmax::softmax;

/// What both mirostat versions share: the seed, the target surprise `tau`, the learning rate
/// `eta`, the current `mu` (starting at `2 * tau`) and their own MT19937 stream.
#[derive(Clone, Debug)]
pub(crate) struct MirostatCore {
    seed: u32,
    seed_cur: u32,
    tau: f32,
    eta: f32,
    pub(crate) mu: f32,
    pub(crate) rng: LlamaRng,
}

impl MirostatCore {
    /// `seed == DEFAULT_SEED` picks a random seed.
    pub(crate) fn new(seed: u32, tau: f32, eta: f32) -> Self {
        let seed_cur = resolve_seed(seed);
        MirostatCore { seed, seed_cur, tau, eta, mu: 2.0 * tau, rng: LlamaRng::new(seed_cur) }
    }

    /// Back to `mu = 2 * tau` and the start of the stream (a random seed is drawn again).
    pub(crate) fn reset(&mut self) {
        self.mu = 2.0 * self.tau;
        self.seed_cur = resolve_seed(self.seed);
        self.rng.reseed(self.seed_cur);
    }

    /// The seed in use.
    pub(crate) fn seed_cur(&self) -> u32 {
        self.seed_cur
    }

    /// The end of `apply` once `c` holds the kept candidates (sorted, at least one): softmax,
    /// one draw, then `mu -= eta * (surprise - tau)` with the selected token's surprise
    /// `-log2 p`.
    pub(crate) fn draw_and_update(&mut self, c: &mut Candidates) {
        softmax(c, true);
        self.draw_normalized(c);
    }

    /// [`MirostatCore::draw_and_update`] once `c`'s `p` already hold that softmax.
    pub(crate) fn draw_normalized(&mut self, c: &mut Candidates) {
        let data = c.as_slice();
        let idx = discrete_pick(data.iter().map(|d| d.p), data.len(), &mut self.rng);
        let observed_surprise = -data[idx].p.log2();
        c.set_selected(Some(idx));
        self.update_mu(observed_surprise);
    }

    /// [`MirostatCore::draw_normalized`] for a kept prefix of `n >= 2` candidates that the
    /// caller does not build: draws `u` as `discrete_pick` does (one `f64` uniform), lets
    /// `pick` turn it into the index `discrete_pick` would return and that candidate's `p`,
    /// and updates `mu` from it. Returns the index.
    pub(crate) fn draw_with(&mut self, n: usize, pick: impl FnOnce(f64) -> (usize, f32)) -> usize {
        debug_assert!(n >= 2);
        let (idx, p) = pick(self.rng.uniform_f64());
        self.update_mu(-p.log2());
        idx
    }

    /// `mu -= eta * (surprise - tau)`.
    fn update_mu(&mut self, observed_surprise: f32) {
        let e = observed_surprise - self.tau;
        self.mu -= self.eta * e;
    }
}
