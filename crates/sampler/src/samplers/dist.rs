//! `dist`: draw a token from the softmax of the candidates with llama.cpp's exact arithmetic.

use crate::candidates::Candidates;
use crate::rng::{resolve_seed, LlamaRng};
use crate::role::Role;
use crate::sampler::Sampler;

/// The stock selector: one `f64` uniform per apply, compared against the running sum of
/// unnormalised `f32` weights in the array's current order (no sorting).
#[derive(Clone, Debug)]
pub struct Dist {
    seed: u32,
    rng: LlamaRng,
}

impl Dist {
    /// A dist selector; `seed == DEFAULT_SEED` picks a random seed.
    pub fn new(seed: u32) -> Self {
        Dist { seed, rng: LlamaRng::new(resolve_seed(seed)) }
    }
}

/// Writes each candidate's unnormalised weight `exp(logit - max)` into `p` (the maximum is the
/// first logit when the view is sorted) and returns their `f64` sum, as llama.cpp's dist does.
fn exp_weights(data: &mut [crate::candidates::TokenData], sorted: bool) -> f64 {
    let m = if sorted {
        data[0].logit
    } else {
        data.iter().fold(data[0].logit, |m, d| if d.logit > m { d.logit } else { m })
    };
    // expf a block at a time through the exact vector replica (f32::exp where it is not
    // verified), then the f64 sum in array order.
    const B: usize = 256;
    let (mut xs, mut es) = ([0f32; B], [0f32; B]);
    let mut total = 0.0f64;
    for chunk in data.chunks_mut(B) {
        let k = chunk.len();
        for (x, d) in xs.iter_mut().zip(chunk.iter()) {
            *x = d.logit - m;
        }
        crate::fast::expf::expf_exact_slice(&xs[..k], &mut es[..k]);
        for (d, &e) in chunk.iter_mut().zip(&es[..k]) {
            d.p = e;
            total += e as f64;
        }
    }
    total
}

/// Samples an index from `c` as llama.cpp's dist does, writing normalised `p` values.
/// Consumes two engine outputs whenever the view is non-empty.
pub(crate) fn dist_select(c: &mut Candidates, rng: &mut LlamaRng) -> Option<usize> {
    let sorted = c.is_sorted();
    let data = c.as_mut_slice();
    if data.is_empty() {
        return None;
    }
    if data.len() == 1 {
        let _ = rng.uniform_f64();
        data[0].p = 1.0;
        return Some(0);
    }
    let total = exp_weights(data, sorted);
    let u = rng.uniform_f64();
    let target = total * u;
    let mut run = 0.0f64;
    let mut selected = None;
    for (i, d) in data.iter_mut().enumerate() {
        if selected.is_none() {
            run += d.p as f64;
            if run >= target {
                selected = Some(i);
            }
        }
        d.p = (d.p as f64 / total) as f32;
    }
    Some(selected.unwrap_or(data.len() - 1))
}

/// The `p` values dist leaves behind (softmax of the view, `f64` total) when it selected
/// `selected`, without drawing: used to materialise the candidates of a fast-path step.
pub(crate) fn dist_normalize(c: &mut Candidates, selected: usize) {
    let sorted = c.is_sorted();
    let data = c.as_mut_slice();
    if data.len() == 1 {
        data[0].p = 1.0;
    } else if !data.is_empty() {
        let total = exp_weights(data, sorted);
        for d in data.iter_mut() {
            d.p = (d.p as f64 / total) as f32;
        }
    }
    c.set_selected(Some(selected));
}

impl Sampler for Dist {
    fn name(&self) -> &str {
        "dist"
    }

    fn apply(&mut self, c: &mut Candidates) {
        let sel = dist_select(c, &mut self.rng);
        c.set_selected(sel);
    }

    fn reset(&mut self) {
        self.rng.reseed(resolve_seed(self.seed));
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }

    fn seed(&self) -> Option<u32> {
        Some(self.rng.seed())
    }
}

impl Dist {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        Role::Dist
    }
}

impl Dist {
    /// The random stream (for the whole-vocabulary fast path, which draws exactly as `apply`).
    pub(crate) fn rng_mut(&mut self) -> &mut LlamaRng {
        &mut self.rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Vec<f32> {
        [0.1f32, 0.2, 0.3, 0.4].iter().map(|p| p.ln()).collect()
    }

    #[test]
    fn seed0_stream_matches_llama() {
        let expected = [2, 3, 3, 3, 3, 2, 1, 0, 1, 2, 3, 2, 2, 3, 2, 3];
        let mut d = Dist::new(0);
        let mut c = Candidates::new();
        for &e in &expected {
            c.fill_f32(&small());
            d.apply(&mut c);
            assert_eq!(c.selected(), Some(e));
        }
    }

    #[test]
    fn empty_consumes_no_draw() {
        let mut a = Dist::new(7);
        let mut b = Dist::new(7);
        let mut c = Candidates::new();
        c.fill_f32(&[]);
        a.apply(&mut c);
        assert_eq!(c.selected(), None);
        for _ in 0..4 {
            c.fill_f32(&small());
            a.apply(&mut c);
            let x = c.selected();
            c.fill_f32(&small());
            b.apply(&mut c);
            assert_eq!(x, c.selected());
        }
    }
}
