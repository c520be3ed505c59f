//! `mirostat-v2`: a selector that drops every candidate whose surprise exceeds `mu`, samples
//! from the rest, and adapts `mu` toward the target surprise `tau`.

use crate::candidates::Candidates;
use crate::role::Role;
use crate::sampler::Sampler;
use crate::softmax::softmax;

use super::mirostat_core::MirostatCore;

/// Mirostat 2.0 (`llama_sampler_init_mirostat_v2`), with its own MT19937 stream.
///
/// `mu` starts at `2 * tau` and is updated inside `apply`. Each apply draws one `f64` uniform
/// (two engine outputs) when at least two candidates survive the cut.
#[derive(Clone, Debug)]
pub struct MirostatV2 {
    core: MirostatCore,
}

impl MirostatV2 {
    /// Mirostat v2; `seed == DEFAULT_SEED` picks a random seed.
    pub fn new(seed: u32, tau: f32, eta: f32) -> Self {
        MirostatV2 { core: MirostatCore::new(seed, tau, eta) }
    }

    /// The current maximum surprise `mu`.
    pub fn mu(&self) -> f32 {
        self.core.mu
    }
}

impl Sampler for MirostatV2 {
    fn name(&self) -> &str {
        "mirostat-v2"
    }

    fn apply(&mut self, c: &mut Candidates) {
        // llama.cpp asserts on an empty view; we select nothing and keep the state.
        if c.is_empty() {
            c.set_selected(None);
            return;
        }
        softmax(c, true);
        c.truncate(kept_len(c, self.core.mu));
        self.finish(c);
    }

    fn reset(&mut self) {
        self.core.reset();
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }

    fn seed(&self) -> Option<u32> {
        Some(self.core.seed_cur())
    }
}

/// How many of the sorted, normalised candidates `c` mirostat v2 keeps with maximum surprise
/// `mu`: the prefix up to the first candidate more surprising than `mu`, at least one.
pub(crate) fn kept_len(c: &Candidates, mu: f32) -> usize {
    let keep = c.as_slice().iter().position(|d| -d.p.log2() > mu).unwrap_or(c.len());
    keep.max(1)
}

impl MirostatV2 {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        Role::MirostatV2
    }
}

impl MirostatV2 {
    /// The end of `apply` once `c` is the kept prefix (sorted, at least one candidate): the
    /// second softmax, the draw and the `mu` update. The whole-vocabulary fast path builds that
    /// prefix without sorting the vocabulary and calls this.
    pub(crate) fn finish(&mut self, c: &mut Candidates) {
        self.core.draw_and_update(c);
    }

    /// [`MirostatV2::finish`] once the fast path has also computed the second softmax (`p` of
    /// the sorted kept prefix, exactly as `softmax` leaves it): the draw and the `mu` update.
    pub(crate) fn finish_normalized(&mut self, c: &mut Candidates) {
        self.core.draw_normalized(c);
    }

    /// The draw and the `mu` update for a kept prefix of `n >= 2` candidates that the fast path
    /// does not build: `pick` maps the uniform `u` to the index libstdc++'s
    /// `discrete_distribution` returns over the prefix's `p`, and that candidate's `p`.
    pub(crate) fn draw_with(&mut self, n: usize, pick: impl FnOnce(f64) -> (usize, f32)) -> usize {
        self.core.draw_with(n, pick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::LlamaRng;
    use crate::samplers::test_util::{check_stream_reset_and_clone, from_logits, from_probs, mixed_logits};

    #[test]
    fn name_seed_and_initial_mu() {
        let s = MirostatV2::new(8, 4.0, 0.1);
        assert_eq!(s.name(), "mirostat-v2");
        assert_eq!(s.seed(), Some(8));
        assert_eq!(s.mu(), 8.0);
    }

    #[test]
    fn truncates_by_surprise_and_updates_mu() {
        // p = 0.5, 0.25, 0.125, 0.125: surprises 1, 2, 3, 3 bits. mu = 2.5 keeps two.
        let probs = [0.5f32, 0.25, 0.125, 0.125];
        let mut s = MirostatV2::new(1, 1.25, 0.5);
        let mut c = from_probs(&probs);
        s.apply(&mut c);
        assert_eq!(c.len(), 2);
        assert!(c.is_sorted());
        let p = c.selected_token().unwrap().p;
        assert!((c.as_slice()[0].p - 2.0 / 3.0).abs() < 1e-6);
        assert_eq!(s.mu(), 2.5 - 0.5 * (-p.log2() - 1.25));
    }

    #[test]
    fn deterministic_stream_reset_and_clone() {
        check_stream_reset_and_clone(|| MirostatV2::new(11, 3.0, 0.1), MirostatV2::mu, 6.0, &mixed_logits(200));
    }

    #[test]
    fn draw_counts() {
        // mu so small that only the top candidate survives: size 1, no draw.
        let mut s = MirostatV2::new(4, 0.0, 0.1);
        let mut c = Candidates::new();
        c.fill_f32(&[0.0, 1.0, 2.0]);
        s.apply(&mut c);
        assert_eq!(c.len(), 1);
        assert_eq!(c.selected_token().unwrap().id, 2);
        assert_eq!(s.core.rng.clone().next_u32(), LlamaRng::new(4).next_u32());

        c.fill_f32(&[]);
        s.apply(&mut c);
        assert_eq!(c.selected(), None);
        assert_eq!(s.core.rng.clone().next_u32(), LlamaRng::new(4).next_u32());

        let mut s = MirostatV2::new(4, 10.0, 0.1);
        c.fill_f32(&[0.0, 1.0, 2.0]);
        s.apply(&mut c);
        assert_eq!(c.len(), 3);
        let mut r = LlamaRng::new(4);
        r.uniform_f64();
        assert_eq!(s.core.rng.next_u32(), r.next_u32());
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        for tau in [5.0, 0.0, -1.0, f32::NAN] {
            let mut s = MirostatV2::new(1, tau, 0.1);
            for v in [vec![f32::NEG_INFINITY; 4], vec![f32::NAN, 1.0, 2.0], vec![f32::INFINITY, 0.0], vec![1.0; 3]] {
                let mut c = from_logits(&v);
                s.apply(&mut c);
                assert!(c.selected().unwrap() < c.len());
            }
        }
    }
}
