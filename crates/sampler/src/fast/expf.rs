//! Vector `expf` for the whole-vocabulary fast paths: a close approximation with a proven
//! error bound against glibc's `expf`, a cheap two-sided bound, and a bit-exact replica of
//! glibc's `expf` (FMA variant) used when a decision needs the exact values.
//!
//! The bounds are what the fast paths' margins rest on; the tests check them exhaustively over
//! every `f32` in the input range the samplers use (`x <= 0`).

// The replica of glibc's `expf` has vector forms for the x86 levels only; elsewhere (NEON)
// `expf_exact_slice` calls `f32::exp` value by value, and the replica's scalar form and
// constants serve only the tests.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

use crate::fast::simd::Simd;

/// Inputs below this give `0` from [`exp_near`] and [`exp_bound`] clamps to it; the true
/// `expf(x)` there is below [`TINY`].
pub(crate) const EXP_CUT: f32 = -86.5;

/// `expf(EXP_CUT)` is below this, so every input under the cut has `expf(x) < TINY`.
pub(crate) const TINY: f64 = 3.0e-38; // 2^-124.6

/// [`exp_near`]'s error bound: `|exp_near(x) - expf(x)| <= NEAR_REL * expf(x) + TINY` for every
/// `x <= 0` (tested exhaustively; measured maximum 1 ulp).
pub(crate) const NEAR_REL: f64 = 1.0 / 8_388_608.0; // 2^-23

/// [`exp_bound`]'s bracket: `f / BOUND_DIV <= expf(x) <= f * BOUND_MUL` for `x` in
/// `[EXP_CUT, 61]` (tested exhaustively).
pub(crate) const BOUND_DIV: f64 = 1.0617;
/// See [`BOUND_DIV`].
pub(crate) const BOUND_MUL: f64 = 1.0 + 1.0 / 65536.0;

/// `expf(x)` to within 1 ulp (Cephes' `expf` coefficients, one Horner chain of FMAs): `x <= 0`; `x < EXP_CUT`
/// (and `-inf`) gives `0`.
#[inline(always)]
#[allow(clippy::excessive_precision)]
pub(crate) unsafe fn exp_near<S: Simd>(x: S::V) -> S::V {
    // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
    unsafe {
        let magic = S::splat(12_582_912.0); // 1.5 * 2^23: adding it rounds to an integer
        let kf = S::fmadd(x, S::splat(std::f32::consts::LOG2_E), magic);
        let k = S::sub(kf, magic);
        let r = S::fnmadd(k, S::splat(0.693_359_375), x);
        let r = S::fnmadd(k, S::splat(-2.121_944_40e-4), r);
        let mut p = S::splat(1.987_569_150_0e-4);
        p = S::fmadd(p, r, S::splat(1.398_199_950_7e-3));
        p = S::fmadd(p, r, S::splat(8.333_451_907_3e-3));
        p = S::fmadd(p, r, S::splat(4.166_579_589_4e-2));
        p = S::fmadd(p, r, S::splat(1.666_666_545_9e-1));
        p = S::fmadd(p, r, S::splat(5.000_000_120_1e-1));
        p = S::fmadd(p, r, S::splat(1.0));
        p = S::fmadd(p, r, S::splat(1.0));
        // k >= -125 where x >= EXP_CUT, so the scaled result stays normal.
        S::keep_scale2(S::ge(x, S::splat(EXP_CUT)), p, k)
    }
}

/// A cheap stand-in for `expf(x)` with a two-sided bound (Schraudolph's trick: the exponent
/// bits are written directly): for `x` in `[EXP_CUT, 61]`,
/// `f / BOUND_DIV <= expf(x) <= f * BOUND_MUL`. Inputs below the cut are clamped to it (so the
/// upper bound still holds). `x` must not be NaN.
#[inline(always)]
pub(crate) unsafe fn exp_bound<S: Simd>(x: S::V) -> S::V {
    // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
    unsafe {
        let x = S::max(x, S::splat(EXP_CUT));
        let y = S::fmadd(x, S::splat(8_388_608.0 * std::f32::consts::LOG2_E), S::splat(127.0 * 8_388_608.0));
        S::cvt_round_bits(y)
    }
}

/// glibc's `expf` constants (`__exp2f_data`, 32-entry table) for the replica.
mod glibc {
    pub(super) const INV_LN2_N: u64 = 0x4047_1547_652b_82fe;
    pub(super) const SHIFT: u64 = 0x4338_0000_0000_0000;
    pub(super) const C0: u64 = 0x3ebc_6af8_4b91_2394;
    pub(super) const C1: u64 = 0x3f2e_bfce_50fa_c4f3;
    pub(super) const C2: u64 = 0x3f96_2e42_ff0c_52d6;
    pub(super) const TAB: [u64; 32] = [
        0x3ff0000000000000,
        0x3fefd9b0d3158574,
        0x3fefb5586cf9890f,
        0x3fef9301d0125b51,
        0x3fef72b83c7d517b,
        0x3fef54873168b9aa,
        0x3fef387a6e756238,
        0x3fef1e9df51fdee1,
        0x3fef06fe0a31b715,
        0x3feef1a7373aa9cb,
        0x3feedea64c123422,
        0x3feece086061892d,
        0x3feebfdad5362a27,
        0x3feeb42b569d4f82,
        0x3feeab07dd485429,
        0x3feea47eb03a5585,
        0x3feea09e667f3bcd,
        0x3fee9f75e8ec5f74,
        0x3feea11473eb0187,
        0x3feea589994cce13,
        0x3feeace5422aa0db,
        0x3feeb737b0cdc5e5,
        0x3feec49182a3f090,
        0x3feed503b23e255d,
        0x3feee89f995ad3ad,
        0x3feeff76f2fb5e47,
        0x3fef199bdd85529c,
        0x3fef3720dcef9069,
        0x3fef5818dcfba487,
        0x3fef7c97337b9b5f,
        0x3fefa4afa2a490da,
        0x3fefd0765b6e4540,
    ];
}

/// Scalar replica of glibc's FMA `expf` main path (`|x| < 88`); other inputs go to `f32::exp`.
#[inline]
fn expf_replica_scalar(x: f32) -> f32 {
    let abstop = (x.to_bits() >> 20) & 0x7ff;
    if abstop > 0x42a {
        return x.exp();
    }
    let f = f64::from_bits;
    let xd = x as f64;
    let kds = f(glibc::INV_LN2_N).mul_add(xd, f(glibc::SHIFT));
    let ki = kds.to_bits();
    let kd = kds - f(glibc::SHIFT);
    let r = f(glibc::INV_LN2_N).mul_add(xd, -kd);
    let t = glibc::TAB[(ki & 31) as usize].wrapping_add(ki << 47);
    let s = f64::from_bits(t);
    let z = r.mul_add(f(glibc::C0), f(glibc::C1));
    let r2 = r * r;
    let y = r.mul_add(f(glibc::C2), 1.0);
    let y = z.mul_add(r2, y);
    (y * s) as f32
}

/// Exact `expf` (what llama.cpp computes) for every element of `xs`, written to `out`.
/// Uses the vector replica of glibc's `expf` for the active level (AVX-512 or AVX2) when that
/// replica was verified against this process's `expf` at first use, otherwise calls `f32::exp`
/// element by element.
pub(crate) fn expf_exact_slice(xs: &[f32], out: &mut [f32]) {
    debug_assert_eq!(xs.len(), out.len());
    #[cfg(target_arch = "x86_64")]
    {
        use crate::fast::simd::Level;
        match replica_level() {
            // SAFETY: `replica_level` names AVX-512 only when it is active (so supported).
            Some(Level::Avx512) => return unsafe { expf_replica_avx512(xs, out) },
            // SAFETY: `replica_level` names AVX2 only when it is active (so AVX2 and FMA are there).
            Some(Level::Avx2) => return unsafe { expf_replica_avx2(xs, out) },
            _ => {}
        }
    }
    for (o, &x) in out.iter_mut().zip(xs) {
        *o = x.exp();
    }
}

/// The level whose vector replica [`expf_exact_slice`] takes: the active level when it has one
/// (AVX-512 or AVX2; a forced scalar level turns it off) and [`replica_ok`].
#[inline]
fn replica_level() -> Option<crate::fast::simd::Level> {
    use crate::fast::simd::Level;
    match Level::active() {
        l @ (Level::Avx512 | Level::Avx2) if replica_ok() => Some(l),
        _ => None,
    }
}

/// Whether [`expf_exact_slice`] takes a vector replica.
#[cfg(test)]
fn use_replica() -> bool {
    replica_level().is_some()
}

/// Whether the vector replicas may stand in for `f32::exp`: FMA is present (so glibc runs its
/// FMA variant) and every replica this CPU can run (AVX2; AVX-512 where present) matched
/// `f32::exp` on a check set at first use.
pub(crate) fn replica_ok() -> bool {
    use std::sync::OnceLock;
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use crate::fast::simd::Level;
            if !Level::Avx2.is_supported() || !std::arch::is_x86_feature_detected!("fma") {
                return false;
            }
            // Every 4099th float in [-104, 0] plus values near rounding-sensitive points.
            let mut xs: Vec<f32> = Vec::with_capacity(300_000);
            let lo = (-104.0f32).to_bits();
            let mut b = 0x8000_0000u32;
            while b <= lo {
                xs.push(f32::from_bits(b));
                b += 4099;
            }
            xs.extend((0..20_000).map(|i| -(i as f32) * 0.000_731));
            xs.push(f32::NEG_INFINITY);
            let matches = |out: &[f32]| {
                xs.iter().zip(out).all(|(&x, &y)| x.exp().to_bits() == y.to_bits() && expf_replica_scalar(x) == y)
            };
            let mut out = vec![0f32; xs.len()];
            // SAFETY: AVX2 and FMA detected above.
            unsafe { expf_replica_avx2(&xs, &mut out) };
            if !matches(&out) {
                return false;
            }
            if Level::Avx512.is_supported() {
                // SAFETY: AVX-512F is supported.
                unsafe { expf_replica_avx512(&xs, &mut out) };
                return matches(&out);
            }
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// `out[at + j] = expf(xs[at + j])` for the lanes `j` set in `mask`: the inputs outside the
/// replicas' main path (`|x| >= 88`, `-inf`, NaN) take glibc's own special cases.
#[cfg(target_arch = "x86_64")]
#[inline]
fn glibc_special_lanes(xs: &[f32], out: &mut [f32], at: usize, mut mask: u32) {
    while mask != 0 {
        let j = at + mask.trailing_zeros() as usize;
        out[j] = xs[j].exp();
        mask &= mask - 1;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn expf_replica_avx512(xs: &[f32], out: &mut [f32]) {
    use std::arch::x86_64::*;
    let f = |b: u64| _mm512_set1_pd(f64::from_bits(b));
    let (inv, shift, c0, c1, c2, one) =
        (f(glibc::INV_LN2_N), f(glibc::SHIFT), f(glibc::C0), f(glibc::C1), f(glibc::C2), _mm512_set1_pd(1.0));
    let tp = glibc::TAB.as_ptr() as *const i64;
    // SAFETY: the table has 32 entries.
    let (t0, t1, t2, t3) = unsafe {
        (
            _mm512_loadu_si512(tp as *const _),
            _mm512_loadu_si512(tp.add(8) as *const _),
            _mm512_loadu_si512(tp.add(16) as *const _),
            _mm512_loadu_si512(tp.add(24) as *const _),
        )
    };
    let half = |x: __m256| -> __m256 {
        let xd = _mm512_cvtps_pd(x);
        let kds = _mm512_fmadd_pd(inv, xd, shift);
        let kd = _mm512_sub_pd(kds, shift);
        let r = _mm512_fmsub_pd(inv, xd, kd);
        let ki = _mm512_castpd_si512(kds);
        let lo = _mm512_permutex2var_epi64(t0, ki, t1);
        let hi = _mm512_permutex2var_epi64(t2, ki, t3);
        let t = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)), lo, hi);
        let s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64::<47>(ki)));
        let z = _mm512_fmadd_pd(r, c0, c1);
        let r2 = _mm512_mul_pd(r, r);
        let y = _mm512_fmadd_pd(r, c2, one);
        let y = _mm512_fmadd_pd(z, r2, y);
        _mm512_cvtpd_ps(_mm512_mul_pd(y, s))
    };
    let n = xs.len();
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n for both slices.
        let x = unsafe { _mm512_loadu_ps(xs.as_ptr().add(i)) };
        let lo = half(_mm512_castps512_ps256(x));
        let hi = half(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(x))));
        let y = _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi));
        // SAFETY: as above.
        unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(i), _mm512_castpd_ps(y)) };
        // Lanes outside the main path (|x| >= 88, -inf, NaN) take glibc's special cases.
        let top = _mm512_and_si512(_mm512_srli_epi32::<20>(_mm512_castps_si512(x)), _mm512_set1_epi32(0x7ff));
        let special = _mm512_cmpgt_epi32_mask(top, _mm512_set1_epi32(0x42a));
        glibc_special_lanes(xs, out, i, special as u32);
        i += 16;
    }
    for j in i..n {
        out[j] = expf_replica_scalar(xs[j]);
    }
}

/// glibc's table split into its low and high 32-bit halves, eight entries a row: what
/// [`expf_replica_avx2`] looks up with in-register permutes.
#[cfg(target_arch = "x86_64")]
static TAB_HALVES: ([u32; 32], [u32; 32]) = {
    let (mut lo, mut hi) = ([0u32; 32], [0u32; 32]);
    let mut i = 0;
    while i < 32 {
        lo[i] = glibc::TAB[i] as u32;
        hi[i] = (glibc::TAB[i] >> 32) as u32;
        i += 1;
    }
    (lo, hi)
};

/// [`expf_replica_avx512`] on AVX2: eight values a step, as two vectors of four `f64`. AVX2
/// has no two-source permute over 64-bit lanes, and its gathers are slow on some CPUs (a
/// gather of four 64-bit entries is several micro-ops); so the 32-entry table is looked up
/// in registers instead: the table's low and high 32-bit halves are four vectors each, the
/// eight table indices (the low bits of the eight `kds`, one 32-bit lane each) pick an entry
/// from each vector by one `vpermd` (it reads the index's low 3 bits), and two blends on the
/// index's bits 3 and 4 pick the vector. Interleaving the halves back gives each `f64`
/// lane its entry, the same 64 bits the gather read (the replica check at first use and the
/// tests compare every result with `f32::exp`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn expf_replica_avx2(xs: &[f32], out: &mut [f32]) {
    use std::arch::x86_64::*;
    let f = |b: u64| _mm256_set1_pd(f64::from_bits(b));
    let (inv, shift, c0, c1, c2, one) =
        (f(glibc::INV_LN2_N), f(glibc::SHIFT), f(glibc::C0), f(glibc::C1), f(glibc::C2), _mm256_set1_pd(1.0));
    let (lo, hi) = (&TAB_HALVES.0, &TAB_HALVES.1);
    // SAFETY: each table half holds 32 `u32`, the four unaligned 8-lane loads from 0, 8, 16, 24.
    let row = |t: &[u32; 32], k: usize| unsafe { _mm256_loadu_si256(t.as_ptr().add(8 * k) as *const __m256i) };
    let (l0, l1, l2, l3) = (row(lo, 0), row(lo, 1), row(lo, 2), row(lo, 3));
    let (h0, h1, h2, h3) = (row(hi, 0), row(hi, 1), row(hi, 2), row(hi, 3));
    // Entry `idx & 31` of the table half `t0..t3` in each 32-bit lane (`b3` / `b4`: the index's
    // bits 3 and 4 moved to the sign bit, which `blendv` reads).
    let look = |t: [__m256i; 4], idx: __m256i, b3: __m256, b4: __m256| -> __m256 {
        let p = t.map(|tk| _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(tk, idx)));
        _mm256_blendv_ps(_mm256_blendv_ps(p[0], p[1], b3), _mm256_blendv_ps(p[2], p[3], b3), b4)
    };
    // glibc's main path on four lanes, from `kds` and the table entries `t`.
    let finish = |kds: __m256d, xd: __m256d, t: __m256i| -> __m128 {
        let kd = _mm256_sub_pd(kds, shift);
        let r = _mm256_fmsub_pd(inv, xd, kd);
        let ki = _mm256_castpd_si256(kds);
        let s = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64::<47>(ki)));
        let z = _mm256_fmadd_pd(r, c0, c1);
        let r2 = _mm256_mul_pd(r, r);
        let y = _mm256_fmadd_pd(r, c2, one);
        let y = _mm256_fmadd_pd(z, r2, y);
        _mm256_cvtpd_ps(_mm256_mul_pd(y, s))
    };
    let n = xs.len();
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n for both slices.
        let x = unsafe { _mm256_loadu_ps(xs.as_ptr().add(i)) };
        let xa = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
        let xb = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x));
        let ka = _mm256_fmadd_pd(inv, xa, shift);
        let kb = _mm256_fmadd_pd(inv, xb, shift);
        // The low 32 bits of each `kds` (its table index in the low 5): lanes in the order
        // a0 a1 b0 b1 | a2 a3 b2 b3, which the interleaving below undoes.
        let idx = _mm256_castps_si256(_mm256_shuffle_ps::<0x88>(_mm256_castpd_ps(ka), _mm256_castpd_ps(kb)));
        let b3 = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(idx));
        let b4 = _mm256_castsi256_ps(_mm256_slli_epi32::<27>(idx));
        let tl = look([l0, l1, l2, l3], idx, b3, b4);
        let th = look([h0, h1, h2, h3], idx, b3, b4);
        // Low and high halves joined: a0 a1 | a2 a3 and b0 b1 | b2 b3, as 64-bit entries.
        let ta = _mm256_castps_si256(_mm256_unpacklo_ps(tl, th));
        let tb = _mm256_castps_si256(_mm256_unpackhi_ps(tl, th));
        let y = _mm256_set_m128(finish(kb, xb, tb), finish(ka, xa, ta));
        // SAFETY: as above.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(i), y) };
        // Lanes outside the main path (|x| >= 88, -inf, NaN) take glibc's special cases.
        let top = _mm256_and_si256(_mm256_srli_epi32::<20>(_mm256_castps_si256(x)), _mm256_set1_epi32(0x7ff));
        let special = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x42a))));
        glibc_special_lanes(xs, out, i, special as u32);
        i += 8;
    }
    for j in i..n {
        out[j] = expf_replica_scalar(xs[j]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::simd::{Level, Scalar};

    /// Runs kernel `which` (0: [`exp_near`], 1: [`exp_bound`]) on `xs` with the given backend,
    /// writing every element of `out`. `false` (and `out` untouched) when this CPU cannot run
    /// `level`.
    #[must_use]
    fn run(level: Level, xs: &[f32], out: &mut [f32], which: u8) -> bool {
        if !level.is_supported() {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            use crate::fast::simd::{Avx2, Avx512};
            #[target_feature(enable = "avx512f")]
            unsafe fn a512(xs: &[f32], out: &mut [f32], which: u8) {
                // SAFETY: the caller checked AVX-512F.
                unsafe { apply::<Avx512>(xs, out, which) }
            }
            #[target_feature(enable = "avx2,fma")]
            unsafe fn a2(xs: &[f32], out: &mut [f32], which: u8) {
                // SAFETY: the caller checked AVX2 and FMA.
                unsafe { apply::<Avx2>(xs, out, which) }
            }
            match level {
                // SAFETY: the level is supported (checked above).
                Level::Avx512 => unsafe { a512(xs, out, which) },
                // SAFETY: as above.
                Level::Avx2 => unsafe { a2(xs, out, which) },
                // SAFETY: the scalar backend has no requirement (NEON is never supported here).
                Level::Scalar | Level::Neon => unsafe { apply::<Scalar>(xs, out, which) },
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            #[target_feature(enable = "neon")]
            unsafe fn neon(xs: &[f32], out: &mut [f32], which: u8) {
                // SAFETY: the caller checked NEON.
                unsafe { apply::<crate::fast::simd::Neon>(xs, out, which) }
            }
            match level {
                // SAFETY: the level is supported (checked above).
                Level::Neon => unsafe { neon(xs, out, which) },
                // SAFETY: the scalar backend has no requirement (the x86 levels are never
                // supported here).
                _ => unsafe { apply::<Scalar>(xs, out, which) },
            }
        }
        // SAFETY: only the scalar level is supported elsewhere.
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        unsafe {
            apply::<Scalar>(xs, out, which)
        };
        true
    }

    unsafe fn apply<S: Simd>(xs: &[f32], out: &mut [f32], which: u8) {
        assert!(out.len() >= xs.len());
        let mut i = 0;
        while i + S::N <= xs.len() {
            // SAFETY: the kernel contract (`fast::simd`): the caller picked a level the CPU
            // supports; the load and store cover `i..i + S::N`, inside both slices (`out` is at
            // least as long as `xs`, asserted above).
            unsafe {
                let x = S::load(xs.as_ptr().add(i));
                let y = if which == 0 { exp_near::<S>(x) } else { exp_bound::<S>(x) };
                S::store(out.as_mut_ptr().add(i), y);
            }
            i += S::N;
        }
        for j in i..xs.len() {
            // SAFETY: the scalar level needs no CPU feature, and indexing is checked.
            unsafe { out[j] = if which == 0 { exp_near::<Scalar>(xs[j]) } else { exp_bound::<Scalar>(xs[j]) } };
        }
    }

    /// Every float in [lo, 0] (exhaustive in release builds, every 97th in debug builds); with
    /// `positive`, their negations instead.
    fn inputs_signed(lo: f32, positive: bool, chunk: usize, mut f: impl FnMut(&[f32])) {
        let step = if cfg!(debug_assertions) { 97 } else { 1 };
        let last = lo.to_bits();
        let mut b = 0x8000_0000u32;
        let mut buf = Vec::with_capacity(chunk);
        while b <= last {
            let x = f32::from_bits(b);
            buf.push(if positive { -x } else { x });
            if buf.len() == chunk {
                f(&buf);
                buf.clear();
            }
            b = b.saturating_add(step);
        }
        if !positive {
            buf.push(f32::NEG_INFINITY);
        }
        f(&buf);
    }

    fn inputs(lo: f32, chunk: usize, f: impl FnMut(&[f32])) {
        inputs_signed(lo, false, chunk, f)
    }

    #[test]
    fn exp_near_is_within_its_bound_everywhere() {
        let mut out = vec![0f32; 4096];
        let mut worst = 0f64;
        inputs(-104.0, 4096, |xs| {
            let out = &mut out[..xs.len()];
            assert!(run(Level::active(), xs, out, 0));
            for (&x, &y) in xs.iter().zip(out.iter()) {
                let e = x.exp() as f64;
                let err = (y as f64 - e).abs();
                assert!(err <= NEAR_REL * e + TINY, "x {x:e}: near {y:e} vs expf {e:e}");
                if e > 1e-30 {
                    worst = worst.max(err / e);
                }
                if x < EXP_CUT {
                    assert_eq!(y, 0.0);
                }
            }
        });
        assert!(worst > 0.0);
    }

    #[test]
    fn exp_bound_brackets_expf_everywhere() {
        let mut out = vec![0f32; 4096];
        inputs_signed(-61.0, true, 4096, |xs| {
            let out = &mut out[..xs.len()];
            assert!(run(Level::active(), xs, out, 1));
            for (&x, &f) in xs.iter().zip(out.iter()) {
                let e = x.exp() as f64;
                let f = f as f64;
                assert!(e <= f * BOUND_MUL && f / BOUND_DIV <= e, "x {x:e}: bound {f:e} vs expf {e:e}");
            }
        });
        inputs(-104.0, 4096, |xs| {
            let out = &mut out[..xs.len()];
            assert!(run(Level::active(), xs, out, 1));
            for (&x, &f) in xs.iter().zip(out.iter()) {
                let e = x.exp() as f64;
                let f = f as f64;
                assert!(e <= f * BOUND_MUL, "x {x:e}: bound {f:e} below expf {e:e}");
                if x >= EXP_CUT {
                    assert!(f / BOUND_DIV <= e, "x {x:e}: bound {f:e} too far above expf {e:e}");
                }
            }
        });
    }

    /// The first index where `a` and `b` differ in their bits (`None`: identical).
    fn first_difference(a: &[f32], b: &[f32]) -> Option<usize> {
        assert_eq!(a.len(), b.len());
        a.iter().zip(b).position(|(x, y)| x.to_bits() != y.to_bits())
    }

    /// Each backend writes its own buffer (pre-filled with NaN, which no kernel returns here)
    /// and every SIMD backend this CPU runs is compared with the scalar one, so an output that
    /// was never written, or a backend that did not run, fails the test.
    #[test]
    fn backends_agree_bit_for_bit() {
        let xs: Vec<f32> = (0..200_000).map(|i| -(i as f32) * 4.37e-4 - (i % 7) as f32 * 1e-7).collect();
        let mut compared = Vec::new();
        for which in 0..2 {
            let mut want = vec![f32::NAN; xs.len()];
            assert!(run(Level::Scalar, &xs, &mut want, which));
            assert!(want.iter().all(|v| !v.is_nan()), "kernel {which}: scalar output not written");
            for level in [Level::Avx2, Level::Avx512, Level::Neon] {
                let mut got = vec![f32::NAN; xs.len()];
                if !run(level, &xs, &mut got, which) {
                    eprintln!("{level:?} is not supported on this CPU: not compared");
                    continue;
                }
                if let Some(i) = first_difference(&want, &got) {
                    panic!("{level:?} kernel {which} at x = {}: {:e} vs scalar {:e}", xs[i], got[i], want[i]);
                }
                compared.push(level);
            }
        }
        // Every SIMD level this CPU has was compared, for both kernels.
        for level in [Level::Avx2, Level::Avx512, Level::Neon] {
            let n = compared.iter().filter(|&&l| l == level).count();
            assert_eq!(n, if level.is_supported() { 2 } else { 0 }, "{level:?}");
        }
    }

    /// The comparison above can fail: it sees one flipped bit, an unwritten buffer, and two
    /// different kernels' outputs.
    #[test]
    fn backend_comparison_detects_differences() {
        let xs: Vec<f32> = (0..1000).map(|i| -(i as f32) * 0.031).collect();
        let mut near = vec![f32::NAN; xs.len()];
        assert!(run(Level::Scalar, &xs, &mut near, 0));
        assert_eq!(first_difference(&near, &near.clone()), None);
        let mut flipped = near.clone();
        flipped[617] = f32::from_bits(flipped[617].to_bits() ^ 1);
        assert_eq!(first_difference(&near, &flipped), Some(617));
        assert_eq!(first_difference(&near, &vec![f32::NAN; xs.len()]), Some(0));
        let mut bound = vec![f32::NAN; xs.len()];
        assert!(run(Level::Scalar, &xs, &mut bound, 1));
        assert!(first_difference(&near, &bound).is_some());
    }

    /// A forced scalar level turns the vector replica off (and AVX2 or AVX-512 turn it back on
    /// where it was verified).
    #[test]
    fn replica_follows_the_forced_level() {
        if let Some(used) = crate::fast::simd::with_level(Level::Scalar, use_replica) {
            assert!(!used, "replica used at the scalar level");
        }
        for level in [Level::Avx2, Level::Avx512] {
            if let Some(used) = crate::fast::simd::with_level(level, use_replica) {
                assert_eq!(used, replica_ok(), "{level:?}");
            }
        }
    }

    /// Each x86 vector replica, called directly (not through the first-use check, which would
    /// hide a wrong one behind `f32::exp`), equals `f32::exp` bit for bit on a sample of
    /// `[-110, 0]` every 17th float, the special inputs and a tail shorter than a vector; and
    /// where FMA is present the replicas are the ones in use.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vector_replicas_equal_glibc_expf() {
        if !Level::Avx2.is_supported() || !std::arch::is_x86_feature_detected!("fma") {
            return;
        }
        assert!(replica_ok(), "the replicas do not match this process's expf");
        let mut xs: Vec<f32> = Vec::new();
        let (mut b, last) = (0x8000_0000u32, (-110.0f32).to_bits());
        while b <= last {
            xs.push(f32::from_bits(b));
            b += 17;
        }
        xs.extend([f32::NEG_INFINITY, f32::NAN, -88.5, -87.9, 0.0, 1.5, 90.0, -0.0, -1e-30]);
        let want: Vec<u32> = xs.iter().map(|x| x.exp().to_bits()).collect();
        let mut out = vec![0f32; xs.len()];
        let check = |out: &[f32], name: &str| {
            for ((&x, &w), &y) in xs.iter().zip(&want).zip(out) {
                assert!(y.to_bits() == w || (x.is_nan() && y.is_nan()), "{name} at {x:e}: {y:e}");
            }
        };
        // SAFETY: AVX2 and FMA are present (checked above).
        unsafe { expf_replica_avx2(&xs, &mut out) };
        check(&out, "AVX2");
        if Level::Avx512.is_supported() {
            // SAFETY: AVX-512F is supported.
            unsafe { expf_replica_avx512(&xs, &mut out) };
            check(&out, "AVX-512");
        }
    }

    /// [`expf_exact_slice`] equals `f32::exp` bit for bit on every float of `[-110, 0]` at each
    /// vector level this CPU runs (the AVX-512 and AVX2 replicas; the scalar level, which calls
    /// `f32::exp` itself, only where there is none).
    #[test]
    fn replica_equals_glibc_expf_everywhere() {
        let mut out = vec![0f32; 4096];
        let use_vec = replica_ok();
        let mut levels: Vec<Level> = [Level::Avx512, Level::Avx2].into_iter().filter(|l| l.is_supported()).collect();
        if levels.is_empty() {
            levels.push(Level::Scalar);
        }
        for level in levels {
            crate::fast::simd::with_level(level, || {
                inputs(-110.0, 4096, |xs| {
                    let out = &mut out[..xs.len()];
                    expf_exact_slice(xs, out);
                    for (&x, &y) in xs.iter().zip(out.iter()) {
                        assert_eq!(y.to_bits(), x.exp().to_bits(), "{level:?} x {x:e} (replica verified: {use_vec})");
                        if (x.to_bits() >> 20) & 0x7ff <= 0x42a {
                            assert_eq!(expf_replica_scalar(x).to_bits(), x.exp().to_bits(), "scalar replica at {x:e}");
                        }
                    }
                });
            });
        }
    }
}
