//! Repetition penalties (repeat / frequency / presence) over the last `last_n` accepted tokens:
//! llama.cpp's `llama_sampler_init_penalties`.
//!
//! History lives in a fixed-capacity ring plus a dense per-token count array, so `accept` and
//! `apply` never allocate once the ring has filled.

use crate::candidates::{Candidates, Token};
use crate::role::Role;
use crate::sampler::Sampler;

use super::ring::TokenRing;

/// Penalises tokens seen in the recent history: scales by `repeat` (divide positive logits,
/// multiply non-positive ones), then subtracts `count * freq + present`.
#[derive(Clone, Debug)]
pub struct Penalties {
    /// False for the no-op ("?penalties") variant.
    enabled: bool,
    last_n: usize,
    repeat: f32,
    freq: f32,
    present: f32,
    /// Every accepted token, including ones outside the vocabulary (needed for eviction).
    prev: TokenRing,
    /// Occurrences of each in-vocabulary token in `prev`.
    counts: Vec<u32>,
}

impl Penalties {
    /// Mirrors `llama_sampler_init_penalties`: a negative `last_n` is clamped to 0, and
    /// `last_n == 0` or `repeat == 1, freq == 0, present == 0` builds the no-op sampler.
    pub fn new(n_vocab: usize, last_n: i32, repeat: f32, freq: f32, present: f32) -> Self {
        let last_n = last_n.max(0) as usize;
        let enabled = !(last_n == 0 || (repeat == 1.0 && freq == 0.0 && present == 0.0));
        Penalties {
            enabled,
            last_n,
            repeat,
            freq,
            present,
            prev: TokenRing::new(if enabled { last_n } else { 0 }),
            counts: if enabled { vec![0; n_vocab] } else { Vec::new() },
        }
    }

    #[inline]
    fn slot(&self, tok: Token) -> Option<usize> {
        usize::try_from(tok).ok().filter(|&t| t < self.counts.len())
    }
}

impl Sampler for Penalties {
    fn name(&self) -> &str {
        if self.enabled {
            "penalties"
        } else {
            "?penalties"
        }
    }

    fn apply(&mut self, cands: &mut Candidates) {
        if !self.enabled {
            return;
        }
        let (repeat, freq, present) = (self.repeat, self.freq, self.present);
        for d in cands.as_mut_slice() {
            let n = match usize::try_from(d.id).ok().and_then(|t| self.counts.get(t)) {
                Some(&n) if n > 0 => n,
                _ => continue,
            };
            if d.logit <= 0.0 {
                d.logit *= repeat;
            } else {
                d.logit /= repeat;
            }
            // Two separate f32 products and one sum, as the reference computes it (no FMA).
            let presence = 1.0f32 * present;
            d.logit -= (n as f32) * freq + presence;
        }
        cands.set_sorted(false);
    }

    fn accept(&mut self, token: Token) {
        if !self.enabled || self.last_n == 0 {
            return;
        }
        if let Some(t) = self.slot(token) {
            self.counts[t] += 1;
        }
        if self.prev.is_full() {
            if let Some(old) = self.prev.oldest() {
                if let Some(o) = self.slot(old) {
                    self.counts[o] -= 1;
                }
            }
        }
        self.prev.push(token);
    }

    fn reset(&mut self) {
        self.prev.clear();
        self.counts.iter_mut().for_each(|c| *c = 0);
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl Penalties {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        if self.enabled {
            Role::Sparse
        } else {
            Role::Noop
        }
    }

    /// Only tokens in the history window are penalised.
    pub(crate) fn sparse_ids(&self, out: &mut Vec<Token>) {
        out.extend_from_slice(self.prev.tokens());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::TokenData;
    use crate::samplers::test_util::{from_logits as cands, logits_of};

    #[test]
    fn noop_variants() {
        assert_eq!(Penalties::new(5, 0, 1.5, 0.0, 0.0).name(), "?penalties");
        assert_eq!(Penalties::new(5, -1, 1.5, 0.0, 0.0).name(), "?penalties");
        assert_eq!(Penalties::new(5, 64, 1.0, 0.0, 0.0).name(), "?penalties");
        assert_eq!(Penalties::new(5, 64, 1.0, 0.1, 0.0).name(), "penalties");
        let mut p = Penalties::new(5, 64, 1.0, 0.0, 0.0);
        p.accept(0);
        let mut c = cands(&[1.0, 2.0]);
        c.set_sorted(true);
        p.apply(&mut c);
        assert_eq!(logits_of(&c), vec![1.0, 2.0]);
        assert!(c.is_sorted());
    }

    #[test]
    fn repeat_freq_present_arithmetic() {
        let mut p = Penalties::new(4, 8, 2.0, 0.5, 0.25);
        for t in [0, 1, 1, 3, 3, 3] {
            p.accept(t);
        }
        let mut c = cands(&[4.0, -4.0, 0.0, 1.0]);
        c.set_sorted(true);
        p.apply(&mut c);
        // 4/2 - (1*0.5 + 0.25); -4*2 - (2*0.5 + 0.25); untouched; 1/2 - (3*0.5 + 0.25)
        assert_eq!(logits_of(&c), vec![1.25, -9.25, 0.0, -1.25]);
        assert!(!c.is_sorted());
    }

    #[test]
    fn window_eviction() {
        let mut p = Penalties::new(3, 2, 1.0, 1.0, 0.0);
        for t in [0, 1, 2] {
            p.accept(t);
        }
        // window = [1, 2]; token 0 evicted
        let mut c = cands(&[0.0, 0.0, 0.0]);
        p.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.0, -1.0, -1.0]);
        // same token evicting itself keeps count 2 -> 2
        let mut q = Penalties::new(3, 2, 1.0, 1.0, 0.0);
        for t in [1, 1, 1, 1] {
            q.accept(t);
        }
        let mut c = cands(&[0.0, 0.0, 0.0]);
        q.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.0, -2.0, 0.0]);
    }

    #[test]
    fn out_of_vocab_history_and_candidates() {
        let mut p = Penalties::new(3, 2, 1.0, 1.0, 0.0);
        for t in [-5, 100, 1, i32::MAX, i32::MIN, 2] {
            p.accept(t);
        }
        // window = [i32::MIN, 2]
        let mut c = Candidates::from_token_data(vec![
            TokenData { id: -5, logit: 0.0, p: 0.0 },
            TokenData { id: 2, logit: 0.0, p: 0.0 },
            TokenData { id: 1, logit: 0.0, p: 0.0 },
            TokenData { id: 100, logit: 0.0, p: 0.0 },
        ]);
        p.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.0, -1.0, 0.0, 0.0]);
    }

    #[test]
    fn reset_and_clone() {
        let mut p = Penalties::new(3, 4, 1.0, 1.0, 0.0);
        p.accept(0);
        let mut q = p.clone_box();
        p.reset();
        let mut c = cands(&[0.0, 0.0, 0.0]);
        p.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.0, 0.0, 0.0]);
        q.apply(&mut c);
        assert_eq!(logits_of(&c), vec![-1.0, 0.0, 0.0]);
    }
}
