//! `typical`: locally typical sampling. Keeps the candidates whose surprisal is closest to the
//! entropy of the distribution until their probability mass exceeds `p`.

use crate::candidates::{Candidates, Scratch};
use crate::sampler::Sampler;
use crate::softmax::softmax;
use crate::sort::std_sort;

/// Locally typical filter (`llama_sampler_init_typical`); `p >= 1` builds the no-op `?typical`.
///
/// The survivors are reordered by ascending `|surprisal - entropy|` (so the view is marked
/// unsorted) and keep the probabilities of the softmax over the input view (not renormalised).
#[derive(Clone, Debug)]
pub struct Typical {
    p: f32,
    min_keep: usize,
}

impl Typical {
    /// A typical filter keeping mass `p`, and at least `min_keep` candidates once it cuts.
    pub fn new(p: f32, min_keep: usize) -> Self {
        Typical { p, min_keep }
    }

    #[inline]
    fn is_noop(&self) -> bool {
        self.p >= 1.0
    }
}

impl Sampler for Typical {
    fn name(&self) -> &str {
        if self.is_noop() {
            "?typical"
        } else {
            "typical"
        }
    }

    fn apply(&mut self, c: &mut Candidates) {
        // llama.cpp asserts on an empty view; we treat it as nothing to do.
        if self.is_noop() || c.is_empty() || c.len() > u32::MAX as usize {
            return;
        }
        softmax(c, true);

        let (data, scratch) = c.split_scratch();
        let Scratch { tokens, indices, floats, .. } = scratch;

        // Entropy in f32, summed in order. A zero probability makes it NaN (0 * -inf), which
        // turns every score into NaN: the sort then sees all-equal keys, as in llama.cpp.
        // Each `ln` is taken once and kept for the scores (llama.cpp takes it twice, with the
        // same result: `logf` is a function of its argument).
        floats.clear();
        floats.extend(data.iter().map(|d| d.p.ln()));
        let mut entropy = 0.0f32;
        for (d, &ln_p) in data.iter().zip(floats.iter()) {
            entropy += -d.p * ln_p;
        }
        for ln_p in floats.iter_mut() {
            *ln_p = (-*ln_p - entropy).abs();
        }
        indices.clear();
        indices.extend(0..data.len() as u32);
        // libstdc++ std::sort on the index array: its tie order decides which equal-score
        // candidates come first.
        std_sort(&mut indices[..], |&a, &b| floats[a as usize] < floats[b as usize]);

        let mut cum = 0.0f32;
        let mut last = indices.len();
        for (j, &idx) in indices.iter().enumerate() {
            cum += data[idx as usize].p;
            if cum > self.p && (self.min_keep == 0 || j + 1 >= self.min_keep) {
                last = j + 1;
                break;
            }
        }

        tokens.clear();
        tokens.extend(indices[..last].iter().map(|&i| data[i as usize]));
        data[..last].copy_from_slice(&tokens[..last]);

        c.truncate(last);
        c.set_sorted(false);
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
        assert_eq!(Typical::new(0.5, 0).name(), "typical");
        assert_eq!(Typical::new(1.0, 0).name(), "?typical");
        assert_eq!(Typical::new(2.0, 3).name(), "?typical");
    }

    #[test]
    fn keeps_the_dominant_token() {
        let mut c = from_probs(&[0.97, 0.01, 0.01, 0.01]);
        Typical::new(0.5, 0).apply(&mut c);
        assert_eq!(ids(&c), vec![0]);
        assert!((c.as_slice()[0].p - 0.97).abs() < 1e-5);
        assert!(!c.is_sorted());
    }

    #[test]
    fn orders_by_distance_to_entropy() {
        let mut c = from_probs(&[0.4, 0.2, 0.2, 0.2]);
        Typical::new(0.5, 0).apply(&mut c);
        // Equal scores keep libstdc++ std::sort's order, as upstream produced it.
        assert_eq!(ids(&c), vec![1, 3, 2]);
        for d in c.as_slice() {
            assert_eq!(d.logit, 0.2f32.ln());
            assert!((d.p - 0.2).abs() < 1e-5);
        }
    }

    #[test]
    fn min_keep_extends_the_cut() {
        let mut c = from_probs(&[0.97, 0.01, 0.01, 0.01]);
        Typical::new(0.5, 3).apply(&mut c);
        assert_eq!(c.len(), 3);
        assert_eq!(c.as_slice()[0].id, 0);
    }

    #[test]
    fn noop_leaves_everything() {
        let mut c = from_probs(&[0.1, 0.2, 0.3, 0.4]);
        let before = c.as_slice().to_vec();
        Typical::new(1.0, 0).apply(&mut c);
        assert_eq!(c.as_slice(), &before[..]);
        assert!(!c.is_sorted());
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let mut t = Typical::new(0.5, 2);
        let mut c = Candidates::new();
        t.apply(&mut c);
        assert!(c.is_empty());

        let mut c = from_probs(&[0.3]);
        t.apply(&mut c);
        assert_eq!(c.len(), 1);

        // A -inf logit gives p = 0, entropy NaN: all scores tie, the sorted order is walked.
        let mut c = from_probs(&[0.5, 0.0, 0.5]);
        t.apply(&mut c);
        assert_eq!(c.len(), 2);
        assert!(c.as_slice().iter().all(|d| d.p == 0.5));

        let mut c = Candidates::from_token_data(vec![
            TokenData { id: 0, logit: f32::NAN, p: 0.0 },
            TokenData { id: 1, logit: 1.0, p: 0.0 },
            TokenData { id: 2, logit: f32::INFINITY, p: 0.0 },
            TokenData { id: 3, logit: f32::NEG_INFINITY, p: 0.0 },
        ]);
        t.apply(&mut c);
        assert!(c.len() <= 4);

        let mut c = Candidates::from_token_data(vec![TokenData { id: 0, logit: f32::NEG_INFINITY, p: 0.0 }; 5]);
        t.apply(&mut c);
        assert_eq!(c.len(), 5);
    }

    #[test]
    fn no_allocation_after_warm_up() {
        let logits: Vec<f32> = (0..300).map(|i| ((i * 37) % 101) as f32 * 0.05).collect();
        let mut c = Candidates::with_capacity(logits.len());
        let mut t = Typical::new(0.9, 1);
        c.fill_f32(&logits);
        t.apply(&mut c);
        let caps = {
            let s = c.scratch_mut();
            (s.tokens.capacity(), s.indices.capacity(), s.floats.capacity())
        };
        for _ in 0..3 {
            c.fill_f32(&logits);
            t.apply(&mut c);
            let s = c.scratch_mut();
            assert_eq!(caps, (s.tokens.capacity(), s.indices.capacity(), s.floats.capacity()));
        }
    }
}
