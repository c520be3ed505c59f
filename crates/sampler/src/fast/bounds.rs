//! Rigorous rounding helpers and llama.cpp's sequential `f32` sums replayed exactly (by a
//! grid argument where the terms allow it, one addition at a time otherwise), shared by the
//! top-n-sigma and mirostat-v2 fast paths.

use crate::fast::simd::{simd_dispatch, Scalar, Simd};

/// Smallest `f32` >= `x`.
pub(crate) fn f32_up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x {
        f.next_up()
    } else {
        f
    }
}

/// Largest `f32` <= `x`.
pub(crate) fn f32_down(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) > x {
        f.next_down()
    } else {
        f
    }
}

/// Sub-chunk lengths tried when a whole block does not qualify for the grid sum.
pub(crate) const SUB: usize = 128;
pub(crate) const SUB2: usize = 32;

/// One block of llama.cpp's sequential `f32` sum starting at `s`: of the finite values (`sq ==
/// false`), or of `(v - mean)^2` added through `f64` (`sq == true`). Exact.
pub(crate) fn seq_block(x: &[f32], s: f32, has_ninf: bool, sq: bool, mean: f32) -> f32 {
    match grid_chunk(x, s, has_ninf, sq, mean) {
        Some(v) => v,
        None => by_chunks(x, s, has_ninf, sq, mean),
    }
}

/// [`seq_block`] for a block whose terms' total and largest magnitude are known to be at
/// most `abs_sum` and `max_term` (from its statistics): the whole-block attempt then skips
/// tracking them.
pub(crate) fn seq_block_bounded(
    x: &[f32],
    s: f32,
    has_ninf: bool,
    sq: bool,
    mean: f32,
    abs_sum: f64,
    max_term: f64,
) -> f32 {
    if let Some(b) = Binade::of(s) {
        let mut g = grid_sum_untracked(x, b.m, b.u as f32, has_ninf, sq, mean);
        g.abs_sum = abs_sum;
        g.max_term = max_term;
        if let Some(v) = b.apply(&g, s, x.len(), sq) {
            return v;
        }
    }
    by_chunks(x, s, has_ninf, sq, mean)
}

/// [`grid_chunk`] on SUB-long chunks, then SUB2-long ones, then one step at a time.
pub(crate) fn by_chunks(x: &[f32], s: f32, has_ninf: bool, sq: bool, mean: f32) -> f32 {
    let mut s = s;
    for c in x.chunks(SUB) {
        s = match grid_chunk(c, s, has_ninf, sq, mean) {
            Some(v) => v,
            None => {
                for c2 in c.chunks(SUB2) {
                    s = match grid_chunk(c2, s, has_ninf, sq, mean) {
                        Some(v) => v,
                        None => steps(c2, s, sq, mean),
                    };
                }
                s
            }
        };
    }
    s
}

#[cfg(test)]
thread_local! {
    /// Values this thread replayed one step at a time: `[sum pass, squares pass]` (test builds
    /// only).
    pub(crate) static STEPS: std::cell::Cell<[usize; 2]> = const { std::cell::Cell::new([0; 2]) };
}

/// llama.cpp's additions, one at a time.
pub(crate) fn steps(x: &[f32], s: f32, sq: bool, mean: f32) -> f32 {
    #[cfg(test)]
    STEPS.with(|c| {
        let mut v = c.get();
        v[sq as usize] += x.len();
        c.set(v);
    });
    let mut s = s;
    for &v in x {
        if v != f32::NEG_INFINITY {
            if sq {
                let d = (v - mean) as f64;
                s = (s as f64 + d * d) as f32;
            } else {
                s += v;
            }
        }
    }
    s
}

/// The binade `[lo, 2 lo)` holding `|s|`, its ulp `u` and the rounding constant `1.5 lo`.
#[derive(Clone, Copy)]
struct Binade {
    lo: f64,
    u: f64,
    m: f32,
}

impl Binade {
    fn of(s: f32) -> Option<Binade> {
        if !s.is_finite() || s == 0.0 {
            return None;
        }
        let e = s.abs().to_bits() >> 23;
        if e <= 24 || e >= 250 {
            return None;
        }
        let lo = f32::from_bits(e << 23) as f64;
        Some(Binade { lo, u: lo / 8_388_608.0, m: (1.5 * lo) as f32 })
    }

    /// `s` plus the `len` additions summarised by `g` (computed with this binade's grid), when
    /// provably identical to llama.cpp's sequential sum.
    fn apply(&self, g: &Grid, s: f32, len: usize, sq: bool) -> Option<f32> {
        if g.flag || g.max_term >= self.lo / 4.0 {
            return None;
        }
        // Each term moves the running sum by at most |term| + u/2 (its rounding).
        let slack = g.abs_sum + len as f64 * self.u;
        let af = s.abs() as f64;
        if af + slack >= 2.0 * self.lo || (!sq && af - slack < self.lo) {
            return None;
        }
        // The grid sum is a multiple of u below 2^(k+1) in magnitude: exact in f32, and so is
        // the new partial sum (a multiple of u in the same binade).
        let r = g.sum as f32;
        if r as f64 != g.sum {
            return None;
        }
        Some(s + r)
    }
}

/// `s` followed by the additions of `x` in one step, when provably identical to the
/// sequential sum: with `s` in `[2^k, 2^(k+1))` (in magnitude), `u = 2^(k-23)`, every addition
/// rounds its term to a multiple of `u` (`RN(1.5 * 2^k + t) - 1.5 * 2^k`) as long as every
/// exact and rounded partial sum stays in that binade and no term is a tie (nor, for squares,
/// close enough to a midpoint for the `f64` step's rounding to matter). `None` otherwise.
pub(crate) fn grid_chunk(x: &[f32], s: f32, has_ninf: bool, sq: bool, mean: f32) -> Option<f32> {
    let b = Binade::of(s)?;
    let g = grid_sum(x, b.m, b.u as f32, has_ninf, sq, mean);
    b.apply(&g, s, x.len(), sq)
}

/// What [`grid_sum`] found over a chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grid {
    /// Sum of the grid-rounded terms.
    sum: f64,
    /// Sum of the terms' magnitudes (before rounding).
    abs_sum: f64,
    /// Largest term magnitude.
    max_term: f64,
    /// A term needs the exact replay.
    flag: bool,
    /// Sum of the positive grid-rounded terms, rounded up (only from [`grid_sum_signed`];
    /// zero otherwise).
    pos: f64,
}

simd_dispatch!(
    /// Grid-rounded terms of one chunk (`RN_u(v)`, or `RN_u((v - mean)^2)` with `sq`; `-inf`
    /// values contribute nothing), with the magnitudes the caller checks and the tie flag.
    fn grid_sum(x: &[f32], m: f32, u: f32, has_ninf: bool, sq: bool, mean: f32) -> Grid = grid_sum_k
);

#[inline(always)]
unsafe fn grid_sum_k<S: Simd>(x: &[f32], m: f32, u: f32, has_ninf: bool, sq: bool, mean: f32) -> Grid {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe { grid_sum_impl::<S, true, false>(x, m, u, has_ninf, sq, mean) }
}

simd_dispatch!(
    /// [`grid_sum`] without the magnitudes (`abs_sum` and `max_term` left at zero): for
    /// callers that bound them otherwise.
    fn grid_sum_untracked(x: &[f32], m: f32, u: f32, has_ninf: bool, sq: bool, mean: f32) -> Grid = grid_sum_nt_k
);

#[inline(always)]
unsafe fn grid_sum_nt_k<S: Simd>(x: &[f32], m: f32, u: f32, has_ninf: bool, sq: bool, mean: f32) -> Grid {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe { grid_sum_impl::<S, false, false>(x, m, u, has_ninf, sq, mean) }
}

simd_dispatch!(
    /// [`grid_sum_untracked`] of the values (not squares), plus the sum of the positive
    /// grid-rounded terms (`pos`), which bounds every partial sum's excursion.
    fn grid_sum_signed(x: &[f32], m: f32, u: f32, has_ninf: bool) -> Grid = grid_sum_signed_k
);

#[inline(always)]
unsafe fn grid_sum_signed_k<S: Simd>(x: &[f32], m: f32, u: f32, has_ninf: bool) -> Grid {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe { grid_sum_impl::<S, false, true>(x, m, u, has_ninf, false, 0.0) }
}

/// [`seq_block`] of the values (llama.cpp's `f32` running sum of the finite values, exact) for
/// a block whose largest term magnitude is at most `max_term`. The whole-block attempt checks
/// the partial sums' range from the sums of the positive and negative grid-rounded terms
/// (`[s - N, s + P]`), not from the sum of all magnitudes: every partial sum of the rounded
/// terms lies in that range, so when it stays inside `s`'s binade by more than `u` (the exact
/// partial sums are within `u/2` of the rounded ones) every addition rounds on that binade's
/// grid, and (no ties) adds exactly the grid-rounded term.
pub(crate) fn seq_sum_block_bounded(x: &[f32], s: f32, has_ninf: bool, max_term: f64) -> f32 {
    if let Some(b) = Binade::of(s) {
        let g = grid_sum_signed(x, b.m, b.u as f32, has_ninf);
        if !g.flag && max_term < b.lo / 4.0 {
            let r = g.sum as f32;
            // P bounds the upward excursion, N = P - sum the downward one (toward 0 for s > 0).
            let (up, down) = if s > 0.0 { (g.pos, g.pos - g.sum) } else { (g.pos - g.sum, g.pos) };
            let af = s.abs() as f64;
            if r as f64 == g.sum && af + up + b.u <= 2.0 * b.lo - b.u && af - down >= b.lo + b.u {
                return s + r;
            }
        }
    }
    by_chunks(x, s, has_ninf, false, 0.0)
}

#[inline(always)]
unsafe fn grid_sum_impl<S: Simd, const TRACK: bool, const POS: bool>(
    x: &[f32],
    m: f32,
    u: f32,
    has_ninf: bool,
    sq: bool,
    mean: f32,
) -> Grid {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let p = x.as_ptr();
        let mv = S::splat(m);
        let half = S::splat(0.5 * u);
        // Squares: |t + e| must stay below u/2 by more than the f64 step and our rounding.
        let thr = S::splat(0.5 * u * (1.0 - 1.0 / 1_048_576.0));
        let meanv = S::splat(mean);
        let ninf = S::splat(f32::NEG_INFINITY);
        let z = S::splat(0.0);
        let (mut acc, mut abs, mut mx, mut pos) = (z, z, z, z);
        let mut flag = S::none();
        let mut i = 0;
        while i + S::N <= n {
            let raw = S::load(p.add(i));
            let v = if has_ninf { S::select(S::lt(ninf, raw), raw, if sq { meanv } else { z }) } else { raw };
            if sq {
                let d = S::sub(v, meanv);
                let q = S::mul(d, d);
                let ne = S::fnmadd(d, d, q); // q - d*d: minus the rounding error of q
                let r = S::sub(S::add(q, mv), mv);
                let te = S::sub(S::sub(q, r), ne); // (q - r) + e
                flag = S::or_m(flag, S::ge(S::abs(te), thr));
                acc = S::add(acc, r);
                if TRACK {
                    abs = S::add(abs, q);
                    mx = S::max(mx, q);
                }
            } else {
                let r = S::sub(S::add(v, mv), mv);
                flag = S::or_m(flag, S::eq(S::abs(S::sub(v, r)), half));
                acc = S::add(acc, r);
                if POS {
                    pos = S::add(pos, S::max(r, z));
                }
                if TRACK {
                    let av = S::abs(v);
                    abs = S::add(abs, av);
                    mx = S::max(mx, av);
                }
            }
            i += S::N;
        }
        // The lanes of `acc` are multiples of u below 2^(k+1) in magnitude when the caller's
        // checks pass, so their f32 reduction is exact then.
        let mut g = Grid {
            sum: S::hsum_f32(acc) as f64,
            abs_sum: S::hsum_f32(abs) as f64,
            max_term: S::hmax(mx) as f64,
            flag: S::any(flag),
            pos: S::hsum_f32(pos) as f64,
        };
        for &v in &x[i..] {
            if v == f32::NEG_INFINITY {
                continue;
            }
            if sq {
                let d = v - mean;
                let q = d * d;
                let ne = Scalar::fnmadd(d, d, q);
                let r = (q + m) - m;
                g.flag |= ((q - r) - ne).abs() >= 0.5 * u * (1.0 - 1.0 / 1_048_576.0);
                g.sum += r as f64;
                g.abs_sum += q as f64;
                g.max_term = g.max_term.max(q as f64);
            } else {
                let r = (v + m) - m;
                g.flag |= (v - r).abs() == 0.5 * u;
                g.sum += r as f64;
                g.pos += r.max(0.0) as f64;
                g.abs_sum += v.abs() as f64;
                g.max_term = g.max_term.max(v.abs() as f64);
            }
        }
        // The lane sums above are f32: widen the magnitude sums by their worst rounding.
        g.abs_sum *= 1.0 + (n as f64 + 32.0) / 8_388_608.0;
        g.max_term *= 1.0 + 1.0 / 4_194_304.0;
        g.pos *= 1.0 + (n as f64 + 32.0) / 8_388_608.0;
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signed whole-block sum equals llama.cpp's sequential sum, block after block, on rows
    /// whose running sum drifts up, down, across zero and along binade edges (with ties from
    /// coarsely quantised values and `-inf`); most blocks need no value-by-value step.
    #[test]
    fn signed_block_sum_equals_the_sequential_sum() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut unif = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut whole, mut blocks) = (0usize, 0usize);
        for shape in 0..6 {
            let row: Vec<f32> = (0..200_000)
                .map(|i| {
                    let z = (unif() * 2.0 - 1.0) as f32;
                    match shape {
                        // Up, then down across zero (a vocabulary sorted by frequency).
                        0 => 4.0 * z + if i < 60_000 { 1.5 } else { -2.0 },
                        1 => 3.0 * z - 0.02,
                        2 => (8.0 * z).round() / 8.0 + 0.3,
                        3 => half::bf16::from_f32(5.0 * z - 1.0).to_f32(),
                        4 => {
                            if i % 13 == 0 {
                                f32::NEG_INFINITY
                            } else {
                                100.0 * z - 0.5
                            }
                        }
                        _ => 1e-3 * z + 1e-4,
                    }
                })
                .collect();
            let (mut s, mut want) = (0.0f32, 0.0f32);
            for c in row.chunks(1024) {
                let has_ninf = c.contains(&f32::NEG_INFINITY);
                let max_term = c.iter().filter(|v| v.is_finite()).fold(0.0f64, |m, v| m.max(v.abs() as f64));
                let before = STEPS.with(|t| t.get());
                s = seq_sum_block_bounded(c, s, has_ninf, max_term);
                whole += (STEPS.with(|t| t.get()) == before && Binade::of(want).is_some()) as usize;
                want = steps(c, want, false, 0.0);
                blocks += 1;
                assert_eq!(s.to_bits(), want.to_bits(), "shape {shape}");
            }
        }
        assert!(whole * 2 > blocks, "{whole} of {blocks} blocks without steps");
    }
}
