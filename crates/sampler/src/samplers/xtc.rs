//! `xtc` (exclude top choices): with some probability, drop every leading candidate whose
//! probability reaches the threshold except the least likely of them.

use crate::candidates::Candidates;
use crate::rng::{resolve_seed, LlamaRng};
use crate::sampler::Sampler;
use crate::softmax::softmax;

/// XTC (`llama_sampler_init_xtc`) with its own MT19937 stream.
/// `probability <= 0 || threshold > 0.5` builds the no-op `?xtc`.
///
/// Each apply on a view of at least two candidates draws one `f32` uniform (one engine output)
/// whether or not it then fires; the dropped candidates are skipped by moving the view start.
#[derive(Clone, Debug)]
pub struct Xtc {
    probability: f32,
    threshold: f32,
    min_keep: usize,
    seed: u32,
    seed_cur: u32,
    rng: LlamaRng,
}

impl Xtc {
    /// An XTC sampler; `seed == DEFAULT_SEED` picks a random seed.
    pub fn new(probability: f32, threshold: f32, min_keep: usize, seed: u32) -> Self {
        let seed_cur = resolve_seed(seed);
        Xtc { probability, threshold, min_keep, seed, seed_cur, rng: LlamaRng::new(seed_cur) }
    }

    #[inline]
    fn is_noop(&self) -> bool {
        self.probability <= 0.0 || self.threshold > 0.5
    }
}

impl Sampler for Xtc {
    fn name(&self) -> &str {
        if self.is_noop() {
            "?xtc"
        } else {
            "xtc"
        }
    }

    fn apply(&mut self, c: &mut Candidates) {
        if self.is_noop() || c.len() < 2 {
            return;
        }
        let chance = self.rng.uniform_f32();
        if chance > self.probability {
            return;
        }
        softmax(c, true);

        let data = c.as_slice();
        let mut pos_last = 0usize;
        for (i, d) in data.iter().enumerate() {
            if d.p >= self.threshold {
                pos_last = i;
            } else {
                break;
            }
        }
        if data.len() - pos_last >= self.min_keep && pos_last > 0 {
            c.advance(pos_last);
        }
    }

    fn reset(&mut self) {
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
    use crate::candidates::TokenData;
    use crate::samplers::test_util::{from_probs, ids};

    #[test]
    fn names() {
        assert_eq!(Xtc::new(0.5, 0.1, 0, 1).name(), "xtc");
        assert_eq!(Xtc::new(0.0, 0.1, 0, 1).name(), "?xtc");
        assert_eq!(Xtc::new(0.5, 0.6, 0, 1).name(), "?xtc");
        assert_eq!(Xtc::new(0.5, 0.5, 0, 1).name(), "xtc");
        assert_eq!(Xtc::new(0.5, 0.1, 0, 1).seed(), None);
    }

    #[test]
    fn drops_leading_run_but_its_last() {
        // Seed 0: the first f32 uniform is 0.5488..., below 0.99, so XTC fires.
        let mut c = from_probs(&[0.4, 0.3, 0.2, 0.1]);
        Xtc::new(0.99, 0.19, 0, 0).apply(&mut c);
        assert_eq!(ids(&c), vec![2, 3]);
        assert!(c.is_sorted());
    }

    #[test]
    fn does_not_fire_above_probability() {
        // 0.5488 > 0.5: a draw is consumed but nothing changes (not even the order).
        let mut c = from_probs(&[0.1, 0.4, 0.3, 0.2]);
        let mut x = Xtc::new(0.5, 0.05, 0, 0);
        x.apply(&mut c);
        assert_eq!(ids(&c), vec![0, 1, 2, 3]);
        assert!(!c.is_sorted());
        let mut r = LlamaRng::new(0);
        r.next_u32();
        assert_eq!(x.rng.next_u32(), r.next_u32());
    }

    #[test]
    fn min_keep_blocks_the_cut() {
        let mut c = from_probs(&[0.4, 0.3, 0.2, 0.1]);
        Xtc::new(0.99, 0.09, 3, 0).apply(&mut c);
        assert_eq!(c.len(), 4);
        let mut c = from_probs(&[0.4, 0.3, 0.2, 0.1]);
        Xtc::new(0.99, 0.19, 2, 0).apply(&mut c);
        assert_eq!(ids(&c), vec![2, 3]);
    }

    #[test]
    fn draw_counts() {
        let mut x = Xtc::new(0.3, 0.1, 0, 9);
        let mut c = Candidates::new();
        x.apply(&mut c);
        let mut c = from_probs(&[1.0]);
        x.apply(&mut c);
        assert_eq!(x.rng.clone().next_u32(), LlamaRng::new(9).next_u32());

        let mut noop = Xtc::new(0.0, 0.1, 0, 9);
        noop.apply(&mut from_probs(&[0.5, 0.5]));
        assert_eq!(noop.rng.clone().next_u32(), LlamaRng::new(9).next_u32());

        x.apply(&mut from_probs(&[0.5, 0.5]));
        let mut r = LlamaRng::new(9);
        r.next_u32();
        assert_eq!(x.rng.clone().next_u32(), r.next_u32());
    }

    #[test]
    fn reset_restarts_and_clone_continues() {
        let probs = [0.35f32, 0.3, 0.2, 0.15];
        let run = |x: &mut Xtc| -> Vec<usize> {
            (0..16)
                .map(|_| {
                    let mut c = from_probs(&probs);
                    x.apply(&mut c);
                    c.len()
                })
                .collect()
        };
        let mut x = Xtc::new(0.5, 0.18, 0, 77);
        let first = run(&mut x);
        assert!(first.contains(&4) && first.contains(&2));
        let mut y = x.clone();
        let boxed = x.clone_box();
        drop(boxed);
        assert_eq!(run(&mut x), run(&mut y));
        x.reset();
        assert_eq!(run(&mut x), first);
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let mut x = Xtc::new(1.0, 0.0, 0, 3);
        let mut c = Candidates::from_token_data(vec![
            TokenData { id: 0, logit: f32::NAN, p: 0.0 },
            TokenData { id: 1, logit: f32::NEG_INFINITY, p: 0.0 },
            TokenData { id: 2, logit: 2.0, p: 0.0 },
        ]);
        x.apply(&mut c);
        let mut c = Candidates::from_token_data(vec![TokenData { id: 0, logit: f32::NEG_INFINITY, p: 0.0 }; 4]);
        x.apply(&mut c);
        // threshold 0 keeps the run to the end: everything but the last is dropped.
        let mut c = from_probs(&[0.4, 0.3, 0.2, 0.1]);
        x.apply(&mut c);
        assert_eq!(ids(&c), vec![3]);
    }
}
