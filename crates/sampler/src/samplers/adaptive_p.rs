//! `adaptive-p`: a selector that reshapes the distribution to favour tokens whose probability
//! is near a target, steering an exponential moving average of the chosen tokens' original
//! probabilities toward that target.

use crate::candidates::{Candidates, Token};
use crate::rng::{discrete_pick, resolve_seed, LlamaRng};
use crate::sampler::Sampler;
use crate::softmax::softmax;

/// Width of the bump around the adapted target, in probability units.
const DISTRIBUTION_WIDTH: f32 = 0.3;
/// Logit given to a token exactly at the adapted target.
const PEAK_LOGIT_VALUE: f32 = 5.0;
/// How fast logits fall off away from the target.
const SHARPNESS: f32 = 10.0;
/// `1 / DISTRIBUTION_WIDTH`, rounded to f32 once as llama.cpp's constant is.
const INV_WIDTH: f32 = 1.0 / DISTRIBUTION_WIDTH;

/// `std::clamp(v, lo, hi)` for floats: NaN passes through unchanged.
#[inline]
fn clamp_std(v: f32, lo: f32, hi: f32) -> f32 {
    if v < lo {
        lo
    } else if hi < v {
        hi
    } else {
        v
    }
}

/// Adaptive-p (`llama_sampler_init_adaptive_p`), with its own MT19937 stream.
///
/// A negative `target` samples the plain softmax. `decay` is clamped to `[0, 0.99]`. The EMA
/// is updated in `accept` when the accepted token is the one this sampler just picked.
/// Each apply draws one `f64` uniform when the view has at least two candidates.
/// Cloning keeps the EMA but restarts the random stream from the seed, as llama.cpp does.
#[derive(Debug)]
pub struct AdaptiveP {
    target: f32,
    decay: f32,
    seed: u32,
    seed_cur: u32,
    rng: LlamaRng,
    weighted_sum: f32,
    total_weight: f32,
    /// Softmax of the input view before the transform, indexed like the view.
    original_probs: Vec<f32>,
    /// Id and view index of the token picked by the last apply, until the next accept.
    pending: Option<(Token, usize)>,
}

impl AdaptiveP {
    /// Adaptive-p aiming at probability `target` with EMA factor `decay`;
    /// `seed == DEFAULT_SEED` picks a random seed.
    pub fn new(target: f32, decay: f32, seed: u32) -> Self {
        let decay = clamp_std(decay, 0.0, 0.99);
        let seed_cur = resolve_seed(seed);
        AdaptiveP {
            target,
            decay,
            seed,
            seed_cur,
            rng: LlamaRng::new(seed_cur),
            weighted_sum: target / (1.0 - decay),
            total_weight: 1.0 / (1.0 - decay),
            original_probs: Vec::new(),
            pending: None,
        }
    }
}

impl Clone for AdaptiveP {
    /// Copies the EMA, pending pick and cached probabilities; the RNG is re-seeded from `seed`
    /// (llama.cpp's clone re-initialises the sampler and does not copy the engine).
    fn clone(&self) -> Self {
        let seed_cur = resolve_seed(self.seed);
        AdaptiveP {
            target: self.target,
            decay: self.decay,
            seed: self.seed,
            seed_cur,
            rng: LlamaRng::new(seed_cur),
            weighted_sum: self.weighted_sum,
            total_weight: self.total_weight,
            original_probs: self.original_probs.clone(),
            pending: self.pending,
        }
    }
}

impl Sampler for AdaptiveP {
    fn name(&self) -> &str {
        "adaptive-p"
    }

    fn apply(&mut self, c: &mut Candidates) {
        // llama.cpp asserts on an empty view; we select nothing.
        if c.is_empty() {
            c.set_selected(None);
            self.pending = None;
            return;
        }
        softmax(c, false);

        if self.target < 0.0 {
            let data = c.as_slice();
            let idx = discrete_pick(data.iter().map(|d| d.p), data.len(), &mut self.rng);
            c.set_selected(Some(idx));
            return;
        }

        let data = c.as_mut_slice();
        self.original_probs.clear();
        self.original_probs.extend(data.iter().map(|d| d.p));

        let target = clamp_std(self.target, 0.0, 1.0);
        let adapted = clamp_std(
            if self.total_weight == 0.0 { target } else { 2.0 * target - self.weighted_sum / self.total_weight },
            0.0,
            1.0,
        );

        // Quadratic near the target, linear in the tails; masked (-inf) tokens stay masked.
        for d in data.iter_mut() {
            if d.logit == f32::NEG_INFINITY {
                continue;
            }
            let dist = ((d.p - adapted) * INV_WIDTH).abs();
            d.logit = PEAK_LOGIT_VALUE - SHARPNESS * dist * dist / (1.0 + dist);
        }

        softmax(c, false);
        let data = c.as_slice();
        let idx = discrete_pick(data.iter().map(|d| d.p), data.len(), &mut self.rng);
        self.pending = Some((data[idx].id, idx));
        c.set_selected(Some(idx));
    }

    fn accept(&mut self, token: Token) {
        if let Some((id, idx)) = self.pending.take() {
            if id == token {
                if let Some(&p) = self.original_probs.get(idx) {
                    self.weighted_sum = p + self.decay * self.weighted_sum;
                    self.total_weight = 1.0 + self.decay * self.total_weight;
                }
            }
        }
    }

    fn reset(&mut self) {
        self.weighted_sum = self.target / (1.0 - self.decay);
        self.total_weight = 1.0 / (1.0 - self.decay);
        self.pending = None;
        self.seed_cur = resolve_seed(self.seed);
        self.rng.reseed(self.seed_cur);
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samplers::test_util::{from_logits, from_probs};

    fn logits(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 7919) % 97) as f32 * 0.05 - 2.0).collect()
    }

    fn step(s: &mut AdaptiveP, c: &mut Candidates, l: &[f32]) -> i32 {
        c.fill_f32(l);
        s.apply(c);
        let id = c.selected_token().unwrap().id;
        s.accept(id);
        id
    }

    #[test]
    fn name_and_seed() {
        let s = AdaptiveP::new(0.3, 0.9, 5);
        assert_eq!(s.name(), "adaptive-p");
        assert_eq!(s.seed(), None);
        assert_eq!(AdaptiveP::new(0.3, 2.0, 5).decay, 0.99);
        assert_eq!(AdaptiveP::new(0.3, -1.0, 5).decay, 0.0);
    }

    #[test]
    fn ema_updates_only_for_the_pending_token() {
        let l = logits(50);
        let mut s = AdaptiveP::new(0.3, 0.9, 1);
        let mut c = Candidates::new();
        c.fill_f32(&l);
        s.apply(&mut c);
        let (id, idx) = s.pending.unwrap();
        assert_eq!(c.selected(), Some(idx));
        let orig = s.original_probs[idx];
        let (ws, tw) = (s.weighted_sum, s.total_weight);

        // Another token: no update, pending cleared.
        s.accept(id + 1);
        assert_eq!((s.weighted_sum, s.total_weight), (ws, tw));
        assert!(s.pending.is_none());
        s.accept(id);
        assert_eq!((s.weighted_sum, s.total_weight), (ws, tw));

        c.fill_f32(&l);
        s.apply(&mut c);
        let (id, idx) = s.pending.unwrap();
        let orig2 = s.original_probs[idx];
        s.accept(id);
        assert_eq!(s.weighted_sum, orig2 + 0.9 * ws);
        assert_eq!(s.total_weight, 1.0 + 0.9 * tw);
        let _ = orig;
    }

    #[test]
    fn transform_peaks_at_the_target() {
        let mut c = from_probs(&[0.05, 0.3, 0.65]);
        let mut s = AdaptiveP::new(0.3, 0.9, 2);
        s.apply(&mut c);
        // First step: the EMA equals the target, so the adapted target is the target itself.
        let d = c.as_slice();
        assert!((d[1].logit - 5.0).abs() < 1e-3);
        assert!(d[1].p > d[0].p && d[1].p > d[2].p);
        assert!(!c.is_sorted());
    }

    #[test]
    fn stream_reset_and_clone() {
        let l = logits(64);
        let mut c = Candidates::new();
        let mut a = AdaptiveP::new(0.2, 0.8, 9);
        let first: Vec<i32> = (0..16).map(|_| step(&mut a, &mut c, &l)).collect();
        let mut b = AdaptiveP::new(0.2, 0.8, 9);
        let again: Vec<i32> = (0..16).map(|_| step(&mut b, &mut c, &l)).collect();
        assert_eq!(first, again);

        // A clone keeps the EMA but its stream restarts from the seed.
        let mut cl = a.clone();
        assert_eq!((cl.weighted_sum, cl.total_weight), (a.weighted_sum, a.total_weight));
        let mut fresh = AdaptiveP::new(0.2, 0.8, 9);
        fresh.weighted_sum = a.weighted_sum;
        fresh.total_weight = a.total_weight;
        let from_clone: Vec<i32> = (0..8).map(|_| step(&mut cl, &mut c, &l)).collect();
        let from_fresh: Vec<i32> = (0..8).map(|_| step(&mut fresh, &mut c, &l)).collect();
        assert_eq!(from_clone, from_fresh);

        a.reset();
        let after_reset: Vec<i32> = (0..16).map(|_| step(&mut a, &mut c, &l)).collect();
        assert_eq!(after_reset, first);
    }

    #[test]
    fn disabled_target_is_plain_sampling() {
        let l = logits(30);
        let mut s = AdaptiveP::new(-1.0, 0.9, 3);
        let mut c = Candidates::new();
        c.fill_f32(&l);
        s.apply(&mut c);
        assert!(s.pending.is_none());
        let mut r = LlamaRng::new(3);
        let mut c2 = Candidates::new();
        c2.fill_f32(&l);
        crate::softmax::softmax(&mut c2, false);
        let idx = discrete_pick(c2.as_slice().iter().map(|d| d.p), c2.len(), &mut r);
        assert_eq!(c.selected(), Some(idx));
        assert_eq!(c.as_slice(), c2.as_slice());
    }

    #[test]
    fn draw_counts() {
        let mut s = AdaptiveP::new(0.5, 0.9, 4);
        let mut c = Candidates::new();
        c.fill_f32(&[]);
        s.apply(&mut c);
        assert_eq!(c.selected(), None);
        c.fill_f32(&[1.0]);
        s.apply(&mut c);
        assert_eq!(c.selected(), Some(0));
        assert_eq!(s.rng.clone().next_u32(), LlamaRng::new(4).next_u32());
        c.fill_f32(&[1.0, 2.0]);
        s.apply(&mut c);
        let mut r = LlamaRng::new(4);
        r.uniform_f64();
        assert_eq!(s.rng.next_u32(), r.next_u32());
    }

    #[test]
    fn no_allocation_after_warm_up() {
        let l = logits(100);
        let mut s = AdaptiveP::new(0.3, 0.9, 1);
        let mut c = Candidates::new();
        step(&mut s, &mut c, &l);
        let cap = s.original_probs.capacity();
        let ptr = s.original_probs.as_ptr();
        for _ in 0..5 {
            step(&mut s, &mut c, &l);
        }
        assert_eq!((cap, ptr), (s.original_probs.capacity(), s.original_probs.as_ptr()));
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        for (t, d) in [(0.3, 0.9), (-1.0, 0.9), (2.0, 0.0), (f32::NAN, 0.5), (0.3, f32::NAN)] {
            let mut s = AdaptiveP::new(t, d, 1);
            for v in [vec![f32::NEG_INFINITY; 4], vec![f32::NAN, 1.0, 2.0], vec![f32::INFINITY, 0.0], vec![1.0; 3]] {
                let mut c = from_logits(&v);
                s.apply(&mut c);
                let sel = c.selected().unwrap();
                assert!(sel < c.len());
                s.accept(c.as_slice()[sel].id);
            }
            let mut cl = s.clone_box();
            cl.accept(0);
        }
    }
}
