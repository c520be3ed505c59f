//! `mirostat` (v1): a selector that estimates the Zipf exponent of the distribution, picks a
//! top-k that should give the target surprise `tau`, samples, and adapts `mu` from the result.

use crate::candidates::Candidates;
use crate::sampler::Sampler;
use crate::softmax::{softmax, top_k_cut, trunc_to_i32_x86};

use super::mirostat_core::MirostatCore;

/// `powf` that LLVM cannot rewrite: with a constant power-of-two base it would turn
/// `powf(2, x)` into `exp2f(x)`, which can round differently from glibc's `powf`.
#[inline]
fn powf_libm(x: f32, y: f32) -> f32 {
    std::hint::black_box(x).powf(std::hint::black_box(y))
}

/// Mirostat 1.0 (`llama_sampler_init_mirostat`), with its own MT19937 stream.
///
/// `mu` starts at `2 * tau` and is updated inside `apply` (not in `accept`). Each apply draws
/// one `f64` uniform (two engine outputs) when at least two candidates remain after its top-k.
#[derive(Clone, Debug)]
pub struct Mirostat {
    n_vocab: usize,
    m: i32,
    core: MirostatCore,
}

impl Mirostat {
    /// Mirostat v1 for a vocabulary of `n_vocab` tokens, estimating from the `m` best
    /// candidates; `seed == DEFAULT_SEED` picks a random seed.
    pub fn new(n_vocab: usize, seed: u32, tau: f32, eta: f32, m: i32) -> Self {
        Mirostat { n_vocab, m, core: MirostatCore::new(seed, tau, eta) }
    }

    /// The current maximum surprise `mu`.
    pub fn mu(&self) -> f32 {
        self.core.mu
    }
}

impl Sampler for Mirostat {
    fn name(&self) -> &str {
        "mirostat"
    }

    fn apply(&mut self, c: &mut Candidates) {
        // llama.cpp asserts on an empty view; we select nothing and keep the state.
        if c.is_empty() {
            c.set_selected(None);
            return;
        }
        softmax(c, true);

        // Least-squares estimate of the Zipf exponent from ratios of consecutive probabilities.
        let data = c.as_slice();
        // `m - 1` converted to size_t: a non-positive m means "no limit but the array".
        let limit = self.m.wrapping_sub(1) as usize;
        let mut sum_ti_bi = 0.0f32;
        let mut sum_ti_sq = 0.0f32;
        let mut i = 0usize;
        while i < limit && i < data.len() - 1 {
            let t_i = ((i + 2) as f32 / (i + 1) as f32).ln();
            let b_i = (data[i].p / data[i + 1].p).ln();
            sum_ti_bi += t_i * b_i;
            sum_ti_sq += t_i * t_i;
            i += 1;
        }
        let s_hat = sum_ti_bi / sum_ti_sq;

        let epsilon_hat = s_hat - 1.0;
        let k = powf_libm(
            (epsilon_hat * powf_libm(2.0, self.core.mu)) / (1.0 - powf_libm(self.n_vocab as f32, -epsilon_hat)),
            1.0 / s_hat,
        );
        // int(k) as x86 computes it: NaN or out of range gives i32::MIN, so k falls back to 1.
        top_k_cut(c, trunc_to_i32_x86(k).max(1));
        self.core.draw_and_update(c);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::LlamaRng;
    use crate::samplers::test_util::{check_stream_reset_and_clone, from_logits, mixed_logits};

    #[test]
    fn name_seed_and_initial_mu() {
        let s = Mirostat::new(100, 5, 5.0, 0.1, 100);
        assert_eq!(s.name(), "mirostat");
        assert_eq!(s.seed(), Some(5));
        assert_eq!(s.mu(), 10.0);
    }

    #[test]
    fn mu_update_uses_selected_probability() {
        let l = mixed_logits(64);
        let mut s = Mirostat::new(64, 3, 3.0, 0.25, 100);
        let mut c = Candidates::new();
        for _ in 0..5 {
            let mu0 = s.mu();
            c.fill_f32(&l);
            s.apply(&mut c);
            let p = c.selected_token().unwrap().p;
            assert_eq!(s.mu(), mu0 - 0.25 * (-p.log2() - 3.0));
            assert!(c.is_sorted());
            let sum: f32 = c.as_slice().iter().map(|d| d.p).sum();
            assert!((sum - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn deterministic_stream_reset_and_clone() {
        check_stream_reset_and_clone(|| Mirostat::new(200, 11, 5.0, 0.1, 100), Mirostat::mu, 10.0, &mixed_logits(200));
    }

    #[test]
    fn draw_counts() {
        // A single candidate: the estimate is NaN, k falls back to 1, no draw is consumed.
        let mut s = Mirostat::new(10, 4, 5.0, 0.1, 100);
        let mut c = Candidates::new();
        c.fill_f32(&[0.5]);
        s.apply(&mut c);
        assert_eq!(c.selected(), Some(0));
        assert_eq!(c.as_slice()[0].p, 1.0);
        assert_eq!(s.core.rng.clone().next_u32(), LlamaRng::new(4).next_u32());

        // Empty: nothing selected, no draw, mu unchanged.
        let mu = s.mu();
        c.fill_f32(&[]);
        s.apply(&mut c);
        assert_eq!(c.selected(), None);
        assert_eq!(s.mu(), mu);
        assert_eq!(s.core.rng.clone().next_u32(), LlamaRng::new(4).next_u32());

        // Equal logits: s_hat = 0, k = inf, which x86 truncates to i32::MIN, so k = 1.
        c.fill_f32(&[0.0, 0.0, 0.0]);
        s.apply(&mut c);
        assert_eq!(c.len(), 1);
        assert_eq!(s.core.rng.clone().next_u32(), LlamaRng::new(4).next_u32());

        // Two or more after the cut: one f64 uniform.
        let mut s = Mirostat::new(200, 4, 5.0, 0.1, 100);
        c.fill_f32(&mixed_logits(200));
        s.apply(&mut c);
        assert!(c.len() >= 2);
        let mut r = LlamaRng::new(4);
        r.uniform_f64();
        assert_eq!(s.core.rng.next_u32(), r.next_u32());
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        for m in [100, 1, 0, -5, i32::MIN, i32::MAX] {
            let mut s = Mirostat::new(0, 1, 5.0, 0.1, m);
            for v in [
                vec![f32::NEG_INFINITY; 4],
                vec![f32::NAN, 1.0, 2.0],
                vec![f32::INFINITY, 0.0],
                vec![1.0; 300],
                mixed_logits(50),
            ] {
                let mut c = from_logits(&v);
                s.apply(&mut c);
                let sel = c.selected().unwrap();
                assert!(sel < c.len());
            }
        }
    }
}
