//! `temp-ext`: temperature with optional entropy-based dynamic range ("dynatemp"), the
//! temperature step of llama.cpp's stock chain.

use crate::candidates::Candidates;
use crate::role::Role;
use crate::sampler::Sampler;
use crate::softmax::{softmax, temp_scale};

/// `powf` that LLVM cannot rewrite (e.g. `pow(x, 1.0)`, `pow(x, 0.5)` once a constant exponent
/// is inlined), so the result always comes from the C library's `powf` like llama.cpp's.
#[inline]
fn powf_libm(x: f32, y: f32) -> f32 {
    std::hint::black_box(x).powf(std::hint::black_box(y))
}

/// Temperature `t`; with `delta > 0` the temperature is chosen per step in
/// `[max(0, t - delta), t + delta]` from the normalised entropy raised to `exponent`.
/// `t == 1 && delta <= 0` builds the no-op `?temp-ext`.
#[derive(Clone, Debug)]
pub struct TempExt {
    t: f32,
    delta: f32,
    exponent: f32,
}

impl TempExt {
    /// A temp-ext sampler (`llama_sampler_init_temp_ext`).
    pub fn new(t: f32, delta: f32, exponent: f32) -> Self {
        TempExt { t, delta, exponent }
    }

    #[inline]
    fn is_noop(&self) -> bool {
        self.t == 1.0 && self.delta <= 0.0
    }
}

impl Sampler for TempExt {
    fn name(&self) -> &str {
        if self.is_noop() {
            "?temp-ext"
        } else {
            "temp-ext"
        }
    }

    fn apply(&mut self, c: &mut Candidates) {
        if self.is_noop() {
            return;
        }
        // A NaN delta takes the plain-temperature branch, as in llama.cpp.
        if self.delta.is_nan() || self.delta <= 0.0 {
            temp_scale(c, self.t);
            return;
        }
        let diff = self.t - self.delta;
        // std::max(0.0f, diff): diff only when strictly greater (NaN gives 0).
        let min_temp = if 0.0 < diff { diff } else { 0.0 };
        let max_temp = self.t + self.delta;

        let n = c.len();
        if n <= 1 {
            return;
        }
        let max_entropy = -(1.0f32 / n as f32).ln();

        softmax(c, true);
        let mut entropy = 0.0f32;
        for d in c.as_slice() {
            if d.p > 0.0 {
                entropy -= d.p * d.p.ln();
            }
        }
        let normalized = entropy / max_entropy;
        let dyn_temp = min_temp + (max_temp - min_temp) * powf_libm(normalized, self.exponent);

        temp_scale(c, dyn_temp);

        // Second softmax in f64 over the rescaled logits; data[0] is taken as the max (sorted view).
        let data = c.as_mut_slice();
        let max_l = data[0].logit as f64;
        let mut total = 0.0f64;
        for d in data.iter_mut() {
            let q = (d.logit as f64 - max_l).exp();
            d.p = q as f32;
            total += q;
        }
        for d in data.iter_mut() {
            d.p = (d.p as f64 / total) as f32;
        }
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl TempExt {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        if self.is_noop() {
            Role::Noop
        } else if (self.delta.is_nan() || self.delta <= 0.0) && self.t > 0.0 && self.t.is_finite() {
            Role::Temp
        } else {
            Role::Opaque
        }
    }
}

impl TempExt {
    /// The plain temperature (what the fast paths read when the step is a plain temperature:
    /// no dynamic range).
    pub(crate) fn t(&self) -> f32 {
        self.t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::TokenData;
    use crate::samplers::test_util::from_probs;

    #[test]
    fn names() {
        assert_eq!(TempExt::new(1.0, 0.0, 1.0).name(), "?temp-ext");
        assert_eq!(TempExt::new(1.0, -1.0, 1.0).name(), "?temp-ext");
        assert_eq!(TempExt::new(1.0, 0.5, 1.0).name(), "temp-ext");
        assert_eq!(TempExt::new(0.8, 0.0, 1.0).name(), "temp-ext");
    }

    #[test]
    fn plain_temperature_divides() {
        let mut c = from_probs(&[0.1, 0.2, 0.3, 0.4]);
        TempExt::new(0.5, 0.0, 1.0).apply(&mut c);
        for (d, p) in c.as_slice().iter().zip([0.1f32, 0.2, 0.3, 0.4]) {
            assert_eq!(d.logit, p.ln() / 0.5);
            assert_eq!(d.p, p);
        }
        assert!(!c.is_sorted());
    }

    #[test]
    fn zero_temperature_keeps_first_max() {
        let mut c = from_probs(&[0.1, 0.4, 0.3, 0.4]);
        TempExt::new(0.0, 0.0, 1.0).apply(&mut c);
        let l: Vec<f32> = c.as_slice().iter().map(|d| d.logit).collect();
        assert_eq!(l, vec![f32::NEG_INFINITY, 0.4f32.ln(), f32::NEG_INFINITY, f32::NEG_INFINITY]);
    }

    #[test]
    fn dynamic_temperature_matches_reference_arithmetic() {
        let probs = [0.1f32, 0.2, 0.3, 0.4];
        let mut c = from_probs(&probs);
        TempExt::new(1.0, 0.5, 2.0).apply(&mut c);
        assert!(c.is_sorted());

        // Recompute by hand: sorted logits, softmax, entropy, temperature, f64 softmax.
        let mut logits: Vec<f32> = probs.iter().map(|p| p.ln()).collect();
        logits.sort_by(|a, b| b.partial_cmp(a).unwrap());
        let m = logits[0];
        let e: Vec<f32> = logits.iter().map(|l| (l - m).exp()).collect();
        let s: f32 = e.iter().fold(0.0, |a, b| a + b);
        let mut h = 0.0f32;
        for x in &e {
            let p = x / s;
            h -= p * p.ln();
        }
        let t = 0.5f32 + (1.5f32 - 0.5) * powf_libm(h / -(1.0f32 / 4.0).ln(), 2.0);
        let scaled: Vec<f32> = logits.iter().map(|l| l / t).collect();
        let q: Vec<f64> = scaled.iter().map(|&l| (l as f64 - scaled[0] as f64).exp()).collect();
        let tot: f64 = q.iter().sum();
        for (i, d) in c.as_slice().iter().enumerate() {
            assert_eq!(d.logit, scaled[i]);
            assert_eq!(d.p, ((q[i] as f32) as f64 / tot) as f32);
            assert_eq!(d.id, 3 - i as i32);
        }
        let sum: f32 = c.as_slice().iter().map(|d| d.p).sum();
        assert!((sum - 1.0).abs() < 1e-6);
    }

    #[test]
    fn dynamic_with_small_views_is_noop() {
        let mut t = TempExt::new(1.0, 0.5, 1.0);
        let mut c = Candidates::new();
        t.apply(&mut c);
        let mut c = from_probs(&[0.3]);
        t.apply(&mut c);
        assert_eq!(c.as_slice()[0].logit, 0.3f32.ln());
        assert_eq!(c.as_slice()[0].p, 0.3);
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        for (t, d, e) in [(1.0, 0.5, 1.0), (0.2, 0.5, -1.0), (0.0, 2.0, 0.0), (f32::NAN, 1.0, 1.0)] {
            let mut s = TempExt::new(t, d, e);
            let mut c = Candidates::from_token_data(vec![
                TokenData { id: 0, logit: f32::NEG_INFINITY, p: 0.0 },
                TokenData { id: 1, logit: f32::NAN, p: 0.0 },
                TokenData { id: 2, logit: 3.0, p: 0.0 },
            ]);
            s.apply(&mut c);
            let mut c = Candidates::from_token_data(vec![TokenData { id: 0, logit: f32::NEG_INFINITY, p: 0.0 }; 3]);
            s.apply(&mut c);
        }
    }
}
