//! `top-n-sigma`: mask every candidate whose logit is more than `n` standard deviations
//! below the maximum logit.

use crate::candidates::Candidates;
use crate::role::Role;
use crate::sampler::Sampler;

/// Top-n-sigma (`llama_sampler_init_top_n_sigma`); `n <= 0` builds the no-op `?top-n-sigma`.
///
/// Statistics ignore `-inf` logits; masked candidates get `-inf` but stay in the view (size,
/// order, `p` and the sorted flag are untouched).
#[derive(Clone, Debug)]
pub struct TopNSigma {
    n: f32,
}

impl TopNSigma {
    /// A top-n-sigma filter.
    pub fn new(n: f32) -> Self {
        TopNSigma { n }
    }
}

impl Sampler for TopNSigma {
    fn name(&self) -> &str {
        if self.n <= 0.0 {
            "?top-n-sigma"
        } else {
            "top-n-sigma"
        }
    }

    fn apply(&mut self, c: &mut Candidates) {
        if self.n <= 0.0 || c.len() <= 1 {
            return;
        }
        let data = c.as_mut_slice();

        let mut max = data[0].logit;
        let mut sum = 0.0f32;
        let mut count = 0usize;
        for d in data.iter() {
            if d.logit != f32::NEG_INFINITY {
                // std::max(max, l): replaced only when strictly smaller.
                if max < d.logit {
                    max = d.logit;
                }
                sum += d.logit;
                count += 1;
            }
        }
        let mean = if count > 0 { sum / count as f32 } else { 0.0 };

        // Squared deviations are formed in f64 and added into an f32 accumulator.
        let mut acc = 0.0f32;
        for d in data.iter() {
            if d.logit != f32::NEG_INFINITY {
                let dev = (d.logit - mean) as f64;
                acc = (acc as f64 + dev * dev) as f32;
            }
        }
        let std = if count > 0 { (acc / count as f32).sqrt() } else { 0.0 };

        let cutoff = max - self.n * std;
        for d in data.iter_mut() {
            if d.logit < cutoff {
                d.logit = f32::NEG_INFINITY;
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl TopNSigma {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        if self.n <= 0.0 {
            Role::Noop
        } else if self.n.is_finite() {
            Role::TopNSigma
        } else {
            Role::Opaque
        }
    }
}

impl TopNSigma {
    /// `n`.
    pub(crate) fn n(&self) -> f32 {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::TokenData;
    use crate::samplers::test_util::logits_of;

    fn from_logits(l: &[f32]) -> Candidates {
        Candidates::from_token_data(
            l.iter().enumerate().map(|(i, &x)| TokenData { id: i as i32, logit: x, p: 0.25 }).collect(),
        )
    }

    #[test]
    fn names() {
        assert_eq!(TopNSigma::new(1.0).name(), "top-n-sigma");
        assert_eq!(TopNSigma::new(0.0).name(), "?top-n-sigma");
        assert_eq!(TopNSigma::new(-1.0).name(), "?top-n-sigma");
    }

    #[test]
    fn masks_below_cutoff() {
        let l: Vec<f32> = [0.1f32, 0.2, 0.3, 0.4].iter().map(|p| p.ln()).collect();
        let mut c = from_logits(&l);
        TopNSigma::new(1.0).apply(&mut c);
        assert_eq!(logits_of(&c), vec![f32::NEG_INFINITY, f32::NEG_INFINITY, l[2], l[3]]);
        assert_eq!(c.len(), 4);
        assert!(c.as_slice().iter().all(|d| d.p == 0.25));

        let mut c = from_logits(&l);
        TopNSigma::new(3.0).apply(&mut c);
        assert_eq!(logits_of(&c), l);
    }

    #[test]
    fn ignores_neg_inf_in_statistics() {
        // Finite logits 0, 1, 2: mean 1, population sd sqrt(2/3) ~ 0.816; cutoff 2 - 0.816.
        let mut c = from_logits(&[f32::NEG_INFINITY, 0.0, 1.0, 2.0]);
        TopNSigma::new(1.0).apply(&mut c);
        assert_eq!(logits_of(&c), vec![f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY, 2.0]);
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let mut s = TopNSigma::new(1.0);
        s.apply(&mut Candidates::new());
        let mut c = from_logits(&[1.0]);
        s.apply(&mut c);
        assert_eq!(logits_of(&c), vec![1.0]);
        let mut c = from_logits(&[f32::NEG_INFINITY; 3]);
        s.apply(&mut c);
        assert_eq!(c.len(), 3);
        let mut c = from_logits(&[f32::NAN, 1.0, f32::INFINITY]);
        s.apply(&mut c);
        assert_eq!(c.len(), 3);
        // Equal logits: sd 0, nothing masked.
        let mut c = from_logits(&[0.5; 4]);
        s.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.5; 4]);
    }
}
