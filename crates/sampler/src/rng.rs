//! llama.cpp's random numbers, bit for bit: `std::mt19937` plus libstdc++'s
//! `uniform_real_distribution` and `discrete_distribution` draws.
//!
//! Every random sampler owns one [`LlamaRng`]. The number of 32-bit outputs each draw consumes
//! is what keeps a stream aligned with llama.cpp: [`LlamaRng::uniform_f64`] takes two (the first
//! is the low half), [`LlamaRng::uniform_f32`] takes one, [`discrete_pick`] takes two or none.

use rand_mt::Mt;

/// The seed value that means "pick a random seed" (`LLAMA_DEFAULT_SEED`, `-1` on the CLI).
pub const DEFAULT_SEED: u32 = 0xFFFF_FFFF;

/// Resolves a user seed as llama.cpp's `get_rng_seed` does: [`DEFAULT_SEED`] becomes a fresh
/// random value, anything else is used verbatim.
pub fn resolve_seed(seed: u32) -> u32 {
    if seed != DEFAULT_SEED {
        return seed;
    }
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    h.write_u64(nanos);
    h.finish() as u32
}

/// A seeded MT19937 engine with llama.cpp's (libstdc++'s) float draws.
#[derive(Clone)]
pub struct LlamaRng {
    mt: Mt,
    seed: u32,
}

impl std::fmt::Debug for LlamaRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaRng").field("seed", &self.seed).finish_non_exhaustive()
    }
}

impl LlamaRng {
    /// An engine seeded with `seed` exactly as `std::mt19937(seed)` (no seed derivation).
    pub fn new(seed: u32) -> Self {
        LlamaRng { mt: Mt::new(seed), seed }
    }

    /// The seed this engine was last seeded with.
    pub fn seed(&self) -> u32 {
        self.seed
    }

    /// Reseeds in place (`rng.seed(s)`).
    pub fn reseed(&mut self, seed: u32) {
        self.mt.reseed(seed);
        self.seed = seed;
    }

    /// The next raw 32-bit output.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.mt.next_u32()
    }

    /// `uniform_real_distribution<double>(0, 1)`: two outputs, the first is the low half.
    #[inline]
    pub fn uniform_f64(&mut self) -> f64 {
        let lo = self.next_u32() as u64;
        let hi = self.next_u32() as u64;
        let u = ((hi << 32) | lo) as f64 * (1.0 / 18_446_744_073_709_551_616.0);
        if u >= 1.0 {
            f64::from_bits(0x3FEF_FFFF_FFFF_FFFF)
        } else {
            u
        }
    }

    /// `uniform_real_distribution<float>(0, 1)`: one output (used by XTC).
    #[inline]
    pub fn uniform_f32(&mut self) -> f32 {
        let g = self.next_u32();
        let u = g as f32 * (1.0 / 4_294_967_296.0f32);
        if u >= 1.0 {
            f32::from_bits(0x3F7F_FFFF)
        } else {
            u
        }
    }
}

/// libstdc++'s `std::discrete_distribution<int>` built from `weights` (f32, widened to f64),
/// then one draw: two outputs when there are at least two weights, none otherwise.
///
/// libstdc++ normalises each weight by the f64 sum, takes the running sum as the CDF (forcing
/// the last entry to exactly 1) and returns `lower_bound(cdf, u)`. For ordinary weights the CDF
/// is non-decreasing, so a forward scan finds the same index without storing the CDF; when a
/// weight is NaN or infinite the CDF is not monotone and the binary search is replayed exactly.
pub fn discrete_pick<I>(weights: I, n: usize, rng: &mut LlamaRng) -> usize
where
    I: Iterator<Item = f32> + Clone,
{
    if n < 2 {
        return 0;
    }
    discrete_pick_at(weights, n, rng.uniform_f64())
}

/// [`discrete_pick`]'s choice for the uniform `u` it drew (`n >= 2`): the literal replay of
/// libstdc++'s arithmetic, for callers that draw `u` first and decide the index another way
/// when they can.
pub(crate) fn discrete_pick_at<I>(weights: I, n: usize, u: f64) -> usize
where
    I: Iterator<Item = f32> + Clone,
{
    debug_assert!(n >= 2);
    let mut sum = 0.0f64;
    let mut regular = true;
    for w in weights.clone() {
        regular &= w.is_finite() && w >= 0.0;
        sum += w as f64;
    }
    regular &= sum.is_finite() && sum > 0.0;
    if regular {
        let mut cdf = 0.0f64;
        for (i, w) in weights.enumerate() {
            if i + 1 == n {
                return i;
            }
            cdf += w as f64 / sum;
            if cdf >= u {
                return i;
            }
        }
        return n - 1;
    }
    // The CDF value at index i, recomputed on demand (rare path: no storage, O(n) per probe).
    let cdf_at = |i: usize| -> f64 {
        if i + 1 == n {
            return 1.0;
        }
        let mut c = 0.0f64;
        for w in weights.clone().take(i + 1) {
            c += w as f64 / sum;
        }
        c
    };
    let (mut first, mut len) = (0usize, n);
    while len > 0 {
        let half = len >> 1;
        let mid = first + half;
        if cdf_at(mid) < u {
            first = mid + 1;
            len = len - half - 1;
        } else {
            len = half;
        }
    }
    first.min(n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_reference_values() {
        let mut r = LlamaRng::new(5489);
        assert_eq!(r.next_u32(), 3_499_211_612);
        let mut r = LlamaRng::new(5489);
        let mut last = 0;
        for _ in 0..10_000 {
            last = r.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
    }

    #[test]
    fn discrete_pick_nan_weights_follow_lower_bound() {
        // All-NaN weights: every CDF entry but the forced last 1.0 is NaN, and `NaN < u` is
        // false, so libstdc++'s lower_bound walks left to index 0.
        let mut r = LlamaRng::new(1);
        let w = [f32::NAN; 5];
        assert_eq!(discrete_pick(w.iter().copied(), 5, &mut r), 0);
        // Regular weights agree with a plain scan of the CDF.
        let mut a = LlamaRng::new(9);
        let mut b = LlamaRng::new(9);
        let w = [0.1f32, 0.0, 0.5, 0.4];
        for _ in 0..50 {
            let i = discrete_pick(w.iter().copied(), 4, &mut a);
            let u = b.uniform_f64();
            let mut c = 0.0;
            let mut want = 3;
            for (k, x) in w.iter().enumerate().take(3) {
                c += *x as f64;
                if c >= u {
                    want = k;
                    break;
                }
            }
            assert_eq!(i, want);
        }
    }
}
