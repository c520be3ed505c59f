//! The NEON backend of [`Simd`] (aarch64's Advanced SIMD, 4 lanes): what Apple Silicon,
//! Graviton and Ampere run the whole-vocabulary kernels on.
//!
//! Every operation gives the scalar backend's bits: the comparisons, `fma` and the arithmetic
//! are IEEE single operations; `max` / `min` are written as selects (`a > b ? a : b`) so equal
//! zeros of both signs come out as on x86 and in scalar code (NEON's `fmax` would prefer
//! `+0`); the rounding conversion gives `i32::MIN` out of range as `cvtps2dq` does. NEON has
//! no compress instruction: the compressing stores move the set lanes down with a table lookup
//! of byte indices per 4-bit mask ([`COMPRESS4`]).

use super::simd::Simd;
use std::arch::aarch64::*;

/// NEON, 4 lanes (call only where this CPU supports [`super::simd::Level::Neon`]: every
/// aarch64 CPU).
pub(crate) struct Neon;

/// For each 4-bit lane mask, the byte indices (for `vqtbl1q_u8`) that move its set lanes to
/// the bottom in order; the bytes past the count read lane 0 (any value will do there).
static COMPRESS4: [[u8; 16]; 16] = {
    let mut t = [[0u8; 16]; 16];
    let mut bits = 0;
    while bits < 16 {
        let (mut k, mut lane) = (0, 0);
        while lane < 4 {
            if bits & (1 << lane) != 0 {
                let mut b = 0;
                while b < 4 {
                    t[bits][4 * k + b] = (4 * lane + b) as u8;
                    b += 1;
                }
                k += 1;
            }
            lane += 1;
        }
        bits += 1;
    }
    t
};

/// For each 4-bit lane mask, the lane indices of its set lanes in order (then zeros).
static LANES4: [[u32; 4]; 16] = {
    let mut t = [[0u32; 4]; 16];
    let mut bits = 0;
    while bits < 16 {
        let (mut k, mut lane) = (0, 0);
        while lane < 4 {
            if bits & (1 << lane) != 0 {
                t[bits][k] = lane as u32;
                k += 1;
            }
            lane += 1;
        }
        bits += 1;
    }
    t
};

/// The mask's lanes as 4 bits (lane `j` in bit `j`), like x86's `movemask`.
#[inline(always)]
unsafe fn bits(m: uint32x4_t) -> usize {
    // SAFETY: register-only NEON arithmetic; NEON is available (kernel contract).
    unsafe {
        let w = vld1q_u32([1u32, 2, 4, 8].as_ptr());
        vaddvq_u32(vandq_u32(m, w)) as usize
    }
}

impl Simd for Neon {
    const N: usize = 4;
    type V = float32x4_t;
    type M = uint32x4_t;

    #[inline(always)]
    unsafe fn load(p: *const f32) -> float32x4_t {
        // SAFETY: the caller passes a pointer valid for reading 4 f32 (the `Simd::load` contract).
        unsafe { vld1q_f32(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: float32x4_t) {
        // SAFETY: the caller passes a pointer valid for writing 4 f32 (the `Simd::store` contract).
        unsafe { vst1q_f32(p, v) }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vdupq_n_f32(x) }
    }
    #[inline(always)]
    unsafe fn add(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vaddq_f32(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vsubq_f32(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vmulq_f32(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vdivq_f32(a, b) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract). `vfmaq_f32(c, a, b)` is
        // `c + a * b` with one rounding.
        unsafe { vfmaq_f32(c, a, b) }
    }
    #[inline(always)]
    unsafe fn fnmadd(a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract). `vfmsq_f32(c, a, b)` is
        // `c - a * b` with one rounding.
        unsafe { vfmsq_f32(c, a, b) }
    }
    #[inline(always)]
    unsafe fn max(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vbslq_f32(vcgtq_f32(a, b), a, b) }
    }
    #[inline(always)]
    unsafe fn min(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vbslq_f32(vcltq_f32(a, b), a, b) }
    }
    #[inline(always)]
    unsafe fn abs(a: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vabsq_f32(a) }
    }
    #[inline(always)]
    unsafe fn ge(a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vcgeq_f32(a, b) }
    }
    #[inline(always)]
    unsafe fn lt(a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vcltq_f32(a, b) }
    }
    #[inline(always)]
    unsafe fn nlt(a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vmvnq_u32(vcltq_f32(a, b)) }
    }
    #[inline(always)]
    unsafe fn eq(a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vceqq_f32(a, b) }
    }
    #[inline(always)]
    unsafe fn unord(a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        // NEON has no unordered compare: a lane is ordered where both values equal themselves.
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vmvnq_u32(vandq_u32(vceqq_f32(a, a), vceqq_f32(b, b))) }
    }
    #[inline(always)]
    unsafe fn or_m(a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vorrq_u32(a, b) }
    }
    #[inline(always)]
    unsafe fn and_m(a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vandq_u32(a, b) }
    }
    #[inline(always)]
    unsafe fn none() -> uint32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vdupq_n_u32(0) }
    }
    #[inline(always)]
    unsafe fn any(m: uint32x4_t) -> bool {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vmaxvq_u32(m) != 0 }
    }
    #[inline(always)]
    unsafe fn keep(m: uint32x4_t, v: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(v))) }
    }
    #[inline(always)]
    unsafe fn select(m: uint32x4_t, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vbslq_f32(m, a, b) }
    }
    #[inline(always)]
    unsafe fn add_exponent(v: float32x4_t, k: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract). `k` is integral, so the
        // conversion's rounding does not matter.
        unsafe {
            let ki = vshlq_n_s32::<23>(vcvtnq_s32_f32(k));
            vreinterpretq_f32_s32(vaddq_s32(vreinterpretq_s32_f32(v), ki))
        }
    }
    #[inline(always)]
    unsafe fn cvt_round_bits(v: float32x4_t) -> float32x4_t {
        // SAFETY: register-only; NEON is available (kernel contract). NEON saturates out of
        // range (and gives 0 for NaN); `cvtps2dq`, which the other backends follow, gives
        // `i32::MIN` there: lanes with `!(|v| < 2^31)` are set to it (`-2^31` itself converts
        // to `i32::MIN` either way).
        unsafe {
            let r = vcvtnq_s32_f32(v);
            let ok = vcltq_f32(vabsq_f32(v), vdupq_n_f32(2_147_483_648.0));
            vreinterpretq_f32_s32(vbslq_s32(ok, r, vdupq_n_s32(i32::MIN)))
        }
    }
    #[inline(always)]
    unsafe fn hsum_f32(v: float32x4_t) -> f32 {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vaddvq_f32(v) }
    }
    #[inline(always)]
    unsafe fn hmax(v: float32x4_t) -> f32 {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vmaxvq_f32(v) }
    }
    #[inline(always)]
    unsafe fn keep_scale2(m: uint32x4_t, v: float32x4_t, k: float32x4_t) -> float32x4_t {
        // The exponent is added in integer lanes (any `k` converts), and the lanes outside `m`,
        // whatever they hold then, are zeroed.
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { Self::keep(m, Self::add_exponent(v, k)) }
    }
    #[inline(always)]
    unsafe fn count(m: uint32x4_t) -> u32 {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vaddvq_u32(vshrq_n_u32::<31>(m)) }
    }
    #[inline(always)]
    unsafe fn push_masked(m: uint32x4_t, v: float32x4_t, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>) {
        ids.reserve(4);
        vals.reserve(4);
        // SAFETY: both vectors reserved 4 spare elements above, so each 4-lane store stays
        // inside their capacity; the first `k` stored lanes are the compressed ones, so
        // `set_len(len + k)` exposes only written values. NEON is available (kernel contract).
        unsafe {
            let (li, lv) = (ids.len(), vals.len());
            let k = Self::compress_store_ids(m, base, ids.as_mut_ptr().add(li));
            Self::compress_store(m, v, vals.as_mut_ptr().add(lv));
            ids.set_len(li + k);
            vals.set_len(lv + k);
        }
    }
    #[inline(always)]
    unsafe fn compress_store(m: uint32x4_t, v: float32x4_t, dst: *mut f32) -> usize {
        // SAFETY: `bits` is below 16, inside the table; the caller passes room for 4 values (the
        // `Simd::compress_store` contract). NEON is available (kernel contract).
        unsafe {
            let b = bits(m);
            let idx = vld1q_u8(COMPRESS4[b].as_ptr());
            let packed = vqtbl1q_u8(vreinterpretq_u8_f32(v), idx);
            vst1q_f32(dst, vreinterpretq_f32_u8(packed));
            b.count_ones() as usize
        }
    }
    #[inline(always)]
    unsafe fn compress_store_ids(m: uint32x4_t, base: usize, dst: *mut i32) -> usize {
        // SAFETY: `bits` is below 16, inside the table; the caller passes room for 4 ids (the
        // `Simd::compress_store_ids` contract). NEON is available (kernel contract).
        unsafe {
            let b = bits(m);
            let lanes = vld1q_u32(LANES4[b].as_ptr());
            let ids = vaddq_u32(vdupq_n_u32(base as u32), lanes);
            vst1q_s32(dst, vreinterpretq_s32_u32(ids));
            b.count_ones() as usize
        }
    }
    type D = (float64x2_t, float64x2_t);
    #[inline(always)]
    unsafe fn dzero() -> Self::D {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { (vdupq_n_f64(0.0), vdupq_n_f64(0.0)) }
    }
    #[inline(always)]
    unsafe fn dadd(d: Self::D, v: float32x4_t) -> Self::D {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe {
            let lo = vcvt_f64_f32(vget_low_f32(v));
            let hi = vcvt_high_f64_f32(v);
            (vaddq_f64(d.0, lo), vaddq_f64(d.1, hi))
        }
    }
    #[inline(always)]
    unsafe fn dsum(d: Self::D) -> f64 {
        // SAFETY: register-only; NEON is available (kernel contract).
        unsafe { vaddvq_f64(d.0) + vaddvq_f64(d.1) }
    }
}
