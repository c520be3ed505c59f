//! A minimal SIMD abstraction so each whole-vocabulary kernel is written once and compiled for
//! AVX-512F, AVX2+FMA (x86-64), NEON (aarch64) and plain scalar code (the portable fallback).
//!
//! Every operation maps to one IEEE operation per lane (FMA is a single fused rounding on every
//! backend: `f32::mul_add` in scalar code), so the three backends give bit-identical results.
//! Kernels are generic `#[inline(always)]` functions instantiated inside `#[target_feature]`
//! wrappers; each call runs on [`Level::active`], the best backend of this CPU unless a lesser
//! one was forced.

#![allow(clippy::missing_safety_doc)]

/// A SIMD backend for the whole-vocabulary kernels.
///
/// Every backend gives bit-identical results (the tests and the differential oracle run each
/// one), so the level changes speed, never a token. The active level is process-wide: the
/// best one this CPU supports, lowered by `NUCLEUS_SIMD=avx2` or `NUCLEUS_SIMD=scalar` in the
/// environment at first use (`NUCLEUS_SIMD=neon` names aarch64's level, its best), or set at any time with [`SimdLevel::force`] (to test or measure
/// the fallbacks within one process).
///
/// [`SimdLevel::force`]: Level::force
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// AVX-512F, 16 lanes.
    Avx512,
    /// AVX2 + FMA, 8 lanes.
    Avx2,
    /// Portable code, 1 lane.
    Scalar,
    /// aarch64's Advanced SIMD (NEON, part of every aarch64 CPU), 4 lanes.
    Neon,
}

/// The active level's code (see [`Level::code`]); 0 until first use.
static ACTIVE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
/// The CPU's best level's code; 0 until first use.
static SUPPORTED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

impl Level {
    /// The level the kernels run on now (one relaxed atomic load once set). It never exceeds
    /// [`Level::supported`], which is what makes the dispatch sound.
    #[inline]
    pub fn active() -> Level {
        match Level::from_code(ACTIVE.load(std::sync::atomic::Ordering::Relaxed)) {
            Some(l) => l,
            None => Self::init_active(),
        }
    }

    /// The best level this CPU supports (probed once, cached; ignores `NUCLEUS_SIMD`).
    pub fn supported() -> Level {
        use std::sync::atomic::Ordering;
        if let Some(l) = Level::from_code(SUPPORTED.load(Ordering::Relaxed)) {
            return l;
        }
        let l = Self::probe();
        SUPPORTED.store(l.code(), Ordering::Relaxed);
        l
    }

    /// Whether this CPU can run this level: scalar anywhere, NEON on aarch64, the x86 levels up
    /// to the best one detected.
    pub fn is_supported(self) -> bool {
        let best = Level::supported();
        match self {
            Level::Scalar => true,
            Level::Neon => best == Level::Neon,
            Level::Avx2 | Level::Avx512 => best != Level::Neon && self.rank() <= best.rank(),
        }
    }

    /// The level's name as `NUCLEUS_SIMD` spells it (`avx512`, `avx2`, `neon`, `scalar`): what
    /// `nucleus bench` reports with its figures.
    pub fn name(self) -> &'static str {
        match self {
            Level::Avx512 => "avx512",
            Level::Avx2 => "avx2",
            Level::Neon => "neon",
            Level::Scalar => "scalar",
        }
    }

    /// Makes this the active level for every thread of the process, from the next kernel call
    /// on. Returns the level that was active before, or `Err` with the best supported level
    /// (and changes nothing) when this CPU cannot run this one.
    pub fn force(self) -> Result<Level, Level> {
        if !self.is_supported() {
            return Err(Level::supported());
        }
        let before = Level::active();
        ACTIVE.store(self.code(), std::sync::atomic::Ordering::Relaxed);
        Ok(before)
    }

    /// First use: the supported level, lowered by `NUCLEUS_SIMD` (unknown values are ignored).
    #[cold]
    fn init_active() -> Level {
        use std::sync::atomic::Ordering;
        let best = Level::supported();
        let asked = match std::env::var_os("NUCLEUS_SIMD") {
            Some(v) if v == "scalar" => Level::Scalar,
            Some(v) if v == "avx2" => Level::Avx2,
            Some(v) if v == "neon" => Level::Neon,
            _ => best,
        };
        let l = if asked.is_supported() { asked } else { best };
        // A concurrent `force` wins over the default.
        match ACTIVE.compare_exchange(0, l.code(), Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => l,
            Err(c) => Level::from_code(c).unwrap_or(l),
        }
    }

    fn probe() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("popcnt");
            if avx2 && std::arch::is_x86_feature_detected!("avx512f") {
                return Level::Avx512;
            }
            if avx2 {
                return Level::Avx2;
            }
        }
        #[cfg(target_arch = "aarch64")]
        if std::arch::is_aarch64_feature_detected!("neon") {
            return Level::Neon;
        }
        Level::Scalar
    }

    /// Within one architecture's levels, 0 for scalar up to 2 for AVX-512 (NEON is aarch64's
    /// 1): an x86 level can run where the supported rank is as high.
    fn rank(self) -> u8 {
        match self {
            Level::Scalar => 0,
            Level::Avx2 | Level::Neon => 1,
            Level::Avx512 => 2,
        }
    }

    fn code(self) -> u8 {
        match self {
            Level::Scalar => 1,
            Level::Avx2 => 2,
            Level::Avx512 => 3,
            Level::Neon => 4,
        }
    }

    #[inline]
    fn from_code(c: u8) -> Option<Level> {
        match c {
            1 => Some(Level::Scalar),
            2 => Some(Level::Avx2),
            3 => Some(Level::Avx512),
            4 => Some(Level::Neon),
            _ => None,
        }
    }

    /// Every level, best first (the tests run each one this CPU supports).
    pub fn all() -> [Level; 4] {
        [Level::Avx512, Level::Avx2, Level::Neon, Level::Scalar]
    }
}

/// Serialises the tests that change the process-wide level, and runs `f` with `level`
/// active (restoring the previous one after). `None` when this CPU cannot run `level`.
#[cfg(test)]
pub(crate) fn with_level<R>(level: Level, f: impl FnOnce() -> R) -> Option<R> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let before = level.force().ok()?;
    struct Restore(Level);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = self.0.force();
        }
    }
    let _restore = Restore(before);
    Some(f())
}

/// Lane-wise `f32` operations (and the few integer ones the kernels need).
///
/// # Safety
///
/// The kernel contract, which every `unsafe` method here and every `unsafe fn *_k<S: Simd>`
/// kernel relies on (their SAFETY comments refer to it):
///
/// * an implementation's methods run only on a CPU with its instructions (`Avx512`: AVX-512F;
///   `Avx2`: AVX2 and FMA). [`simd_dispatch`] guarantees it: it calls a kernel's `Avx512` or
///   `Avx2` instance only when [`Level::active`] says so, and the active level never exceeds
///   [`Level::supported`] (detected at run time);
/// * `load` / `store` take pointers valid for `N` consecutive `f32` reads / writes; kernels
///   form them as `slice.as_ptr().add(i)` with `i + N <= slice.len()` and finish the tail lane
///   by lane.
pub(crate) trait Simd {
    /// Lanes per vector.
    const N: usize;
    /// `N` x `f32`.
    type V: Copy;
    /// A lane mask.
    type M: Copy;

    unsafe fn load(p: *const f32) -> Self::V;
    unsafe fn store(p: *mut f32, v: Self::V);
    unsafe fn splat(x: f32) -> Self::V;
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn div(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, one rounding.
    unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `c - a * b`, one rounding.
    unsafe fn fnmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `max(a, b)` for non-NaN inputs.
    unsafe fn max(a: Self::V, b: Self::V) -> Self::V;
    /// `min(a, b)` for non-NaN inputs.
    unsafe fn min(a: Self::V, b: Self::V) -> Self::V;
    /// `|a|`.
    unsafe fn abs(a: Self::V) -> Self::V;
    /// Lanes where `a >= b` (false for NaN).
    unsafe fn ge(a: Self::V, b: Self::V) -> Self::M;
    /// Lanes where `a < b` (false for NaN).
    unsafe fn lt(a: Self::V, b: Self::V) -> Self::M;
    /// Lanes where `!(a < b)` (true for NaN).
    unsafe fn nlt(a: Self::V, b: Self::V) -> Self::M;
    /// Lanes where `a == b`.
    unsafe fn eq(a: Self::V, b: Self::V) -> Self::M;
    /// Lanes where `a` or `b` is NaN (one compare for two vectors: how the block scans find
    /// NaN, [`MaxScan`]).
    unsafe fn unord(a: Self::V, b: Self::V) -> Self::M;
    unsafe fn or_m(a: Self::M, b: Self::M) -> Self::M;
    unsafe fn and_m(a: Self::M, b: Self::M) -> Self::M;
    unsafe fn none() -> Self::M;
    unsafe fn any(m: Self::M) -> bool;
    /// `v` where `m`, else `0.0`.
    unsafe fn keep(m: Self::M, v: Self::V) -> Self::V;
    /// `a` where `m`, else `b`.
    unsafe fn select(m: Self::M, a: Self::V, b: Self::V) -> Self::V;
    /// Adds `k << 23` to the bit pattern of each lane (`k` an integer-valued float in
    /// `[-126, 127]`): multiplies by `2^k` when the result stays normal.
    unsafe fn add_exponent(v: Self::V, k: Self::V) -> Self::V;
    /// `round_nearest_even(v)` to an `i32`, reinterpreted as `f32` bits.
    unsafe fn cvt_round_bits(v: Self::V) -> Self::V;
    /// Sum of the lanes in `f32` (some tree order).
    unsafe fn hsum_f32(v: Self::V) -> f32;
    /// Largest lane (no NaN).
    unsafe fn hmax(v: Self::V) -> f32;
    /// `v * 2^k` where `m` (`k` integral, result normal), `0.0` elsewhere (any `k` there).
    unsafe fn keep_scale2(m: Self::M, v: Self::V, k: Self::V) -> Self::V;
    /// Number of lanes set in `m`.
    unsafe fn count(m: Self::M) -> u32;
    /// Appends `(base + lane, v[lane])` for the lanes set in `m` (in lane order).
    unsafe fn push_masked(m: Self::M, v: Self::V, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>);
    /// Writes the lanes of `v` set in `m` to `dst` in lane order and returns how many; may
    /// write up to `N` values (`dst` must have room for them). No branch on `m` where the
    /// level allows it, for masks that are set at random.
    unsafe fn compress_store(m: Self::M, v: Self::V, dst: *mut f32) -> usize;
    /// The ids `base + lane` of the lanes set in `m`, written to `dst` in lane order; returns
    /// how many. May write up to `N` ids (`dst` must have room for them).
    unsafe fn compress_store_ids(m: Self::M, base: usize, dst: *mut i32) -> usize;
    /// Four [`Simd::compress_store`]s in a row: writes the lanes of `v[0]` set in `m[0]`, then
    /// those of `v[1]` set in `m[1]`, and so on, to `dst` in that order and returns how many;
    /// may write up to `4 * N` values (`dst` must have room for them). Where the level allows
    /// it, a group with at most `N` lanes set is gathered in a register and stored once (one
    /// store instead of four: most groups of a logits row have few near values).
    #[inline(always)]
    unsafe fn compress_store4(m: [Self::M; 4], v: [Self::V; 4], dst: *mut f32) -> usize {
        let mut k = 0;
        for (&mj, &vj) in m.iter().zip(&v) {
            // SAFETY: `k` values written so far, each call writing at most N more: all inside
            // the 4 * N the caller has room for (this method's contract).
            k += unsafe { Self::compress_store(mj, vj, dst.add(k)) };
        }
        k
    }
    /// Asks the cache for the line holding `p`, ahead of its use. Any address will do: a
    /// prefetch never faults and changes nothing the program reads. The vector levels use
    /// SSE's hint (always present on x86-64); the portable level skips it.
    #[inline(always)]
    unsafe fn prefetch(p: *const f32) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of x86-64, and a prefetch reads no memory the program sees (it
        // may name any address, valid or not).
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }
    /// Prefetches the lines of the `len` values that lie [`AHEAD`] values past `p + i` (see
    /// [`AHEAD`]); any of them may lie past the row (the addresses are formed with
    /// `wrapping_add` and never read).
    #[inline(always)]
    unsafe fn prefetch_ahead(p: *const f32, i: usize, len: usize) {
        for line in (0..len).step_by(LINE) {
            // SAFETY: a prefetch reads nothing the program sees, whatever the address.
            unsafe { Self::prefetch(p.wrapping_add(i + line + AHEAD)) };
        }
    }
    /// Per-lane `f64` accumulators.
    type D: Copy;
    unsafe fn dzero() -> Self::D;
    /// Adds the lanes of `v`, widened to `f64`.
    unsafe fn dadd(d: Self::D, v: Self::V) -> Self::D;
    /// Sum of the accumulators.
    unsafe fn dsum(d: Self::D) -> f64;
}

/// How far ahead of a row scan [`Simd::prefetch_ahead`] asks for the row, in values (8 KiB).
/// Once the caller's other work (llama.cpp's step, in `nucleus bench`) has evicted the core's
/// caches, the hardware prefetchers alone leave a scan whose body is long waiting on the row.
pub(crate) const AHEAD: usize = 2048;

/// Values per cache line (64 bytes): one prefetch each.
pub(crate) const LINE: usize = 16;

/// The portable backend: one lane.
pub(crate) struct Scalar;

impl Simd for Scalar {
    const N: usize = 1;
    type V = f32;
    type M = bool;

    #[inline(always)]
    unsafe fn prefetch(_p: *const f32) {}

    #[inline(always)]
    unsafe fn load(p: *const f32) -> f32 {
        // SAFETY: the caller passes a pointer valid for reading one f32 (the `Simd::load` contract).
        unsafe { *p }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: f32) {
        // SAFETY: the caller passes a pointer valid for writing one f32 (the `Simd::store` contract).
        unsafe { *p = v }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    unsafe fn add(a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    unsafe fn sub(a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    unsafe fn mul(a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    unsafe fn div(a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    unsafe fn fmadd(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    unsafe fn fnmadd(a: f32, b: f32, c: f32) -> f32 {
        (-a).mul_add(b, c)
    }
    #[inline(always)]
    unsafe fn max(a: f32, b: f32) -> f32 {
        if a > b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    unsafe fn min(a: f32, b: f32) -> f32 {
        if a < b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    unsafe fn abs(a: f32) -> f32 {
        a.abs()
    }
    #[inline(always)]
    unsafe fn ge(a: f32, b: f32) -> bool {
        a >= b
    }
    #[inline(always)]
    unsafe fn lt(a: f32, b: f32) -> bool {
        a < b
    }
    #[inline(always)]
    // The negation is how NaN is caught: it holds for NaN, where `a >= b` does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    unsafe fn nlt(a: f32, b: f32) -> bool {
        !(a < b)
    }
    #[inline(always)]
    unsafe fn eq(a: f32, b: f32) -> bool {
        a == b
    }
    #[inline(always)]
    unsafe fn unord(a: f32, b: f32) -> bool {
        a.is_nan() | b.is_nan()
    }
    #[inline(always)]
    unsafe fn or_m(a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    unsafe fn and_m(a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    unsafe fn none() -> bool {
        false
    }
    #[inline(always)]
    unsafe fn any(m: bool) -> bool {
        m
    }
    #[inline(always)]
    unsafe fn keep(m: bool, v: f32) -> f32 {
        if m {
            v
        } else {
            0.0
        }
    }
    #[inline(always)]
    unsafe fn select(m: bool, a: f32, b: f32) -> f32 {
        if m {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    unsafe fn add_exponent(v: f32, k: f32) -> f32 {
        f32::from_bits(v.to_bits().wrapping_add(((k as i32) << 23) as u32))
    }
    #[inline(always)]
    unsafe fn cvt_round_bits(v: f32) -> f32 {
        // cvtps2dq: round to nearest even; out of range gives i32::MIN.
        let r = v.round_ties_even();
        let i = if r.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&r) { i32::MIN } else { r as i32 };
        f32::from_bits(i as u32)
    }
    #[inline(always)]
    unsafe fn hsum_f32(v: f32) -> f32 {
        v
    }
    #[inline(always)]
    unsafe fn hmax(v: f32) -> f32 {
        v
    }
    #[inline(always)]
    unsafe fn keep_scale2(m: bool, v: f32, k: f32) -> f32 {
        if m {
            // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
            unsafe { Self::add_exponent(v, k) }
        } else {
            0.0
        }
    }
    #[inline(always)]
    unsafe fn count(m: bool) -> u32 {
        m as u32
    }
    #[inline(always)]
    unsafe fn push_masked(m: bool, v: f32, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>) {
        if m {
            ids.push(base as i32);
            vals.push(v);
        }
    }
    #[inline(always)]
    unsafe fn compress_store(m: bool, v: f32, dst: *mut f32) -> usize {
        // SAFETY: the caller passes room for one value (the `Simd::compress_store` contract).
        unsafe { *dst = v };
        m as usize
    }
    #[inline(always)]
    unsafe fn compress_store_ids(m: bool, base: usize, dst: *mut i32) -> usize {
        // SAFETY: the caller passes room for one id (the `Simd::compress_store_ids` contract).
        unsafe { *dst = base as i32 };
        m as usize
    }
    type D = f64;
    #[inline(always)]
    unsafe fn dzero() -> f64 {
        0.0
    }
    #[inline(always)]
    unsafe fn dadd(d: f64, v: f32) -> f64 {
        d + v as f64
    }
    #[inline(always)]
    unsafe fn dsum(d: f64) -> f64 {
        d
    }
}

/// The part of a whole-row block scan that every fast path shares, two vectors per step:
/// lane-wise maxima (one accumulator for the first vector of each pair, one for the second)
/// and the lanes that held NaN, one unordered compare per pair. A `+inf` needs no compare of
/// its own: it stays the lane's maximum unless a NaN came after it in that lane, and that NaN
/// is flagged (so [`MaxScan::bad`] is the NaN lanes plus the lanes whose maximum is `+inf`).
/// Three accumulators, not four: AVX2's 16 registers then hold a four-vector scan's state
/// and its constants without spilling. The maxima mean something only when no lane is bad.
pub(crate) struct MaxScan<S: Simd> {
    m0: S::V,
    m1: S::V,
    nan: S::M,
}

impl<S: Simd> MaxScan<S> {
    /// Nothing seen: maxima `-inf`, no lane flagged.
    #[inline(always)]
    pub(crate) unsafe fn new() -> Self {
        // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
        unsafe { MaxScan { m0: S::splat(f32::NEG_INFINITY), m1: S::splat(f32::NEG_INFINITY), nan: S::none() } }
    }

    /// Folds in the next pair of vectors, `a` then `b`.
    #[inline(always)]
    pub(crate) unsafe fn push(&mut self, a: S::V, b: S::V) {
        // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
        unsafe {
            self.nan = S::or_m(self.nan, S::unord(a, b));
            self.m0 = S::max(self.m0, a);
            self.m1 = S::max(self.m1, b);
        }
    }

    /// The lane-wise maximum, `max(m0, m1)`.
    #[inline(always)]
    pub(crate) unsafe fn lanes_max(&self) -> S::V {
        // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
        unsafe { S::max(self.m0, self.m1) }
    }

    /// The flagged lanes: a NaN seen, or a maximum of `+inf` (`!(max < inf)`; a lane whose
    /// `+inf` a later NaN displaced is flagged by the NaN).
    #[inline(always)]
    pub(crate) unsafe fn bad(&self) -> S::M {
        // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
        unsafe { S::or_m(self.nan, S::nlt(self.lanes_max(), S::splat(f32::INFINITY))) }
    }

    /// (maximum, whether any lane held NaN or `+inf`).
    #[inline(always)]
    pub(crate) unsafe fn finish(&self) -> (f32, bool) {
        // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
        unsafe { (S::hmax(self.lanes_max()), S::any(self.bad())) }
    }
}

/// `bad` plus the lanes of `a` or `b` that hold NaN or `+inf` (`inf` is `splat(+inf)`): the
/// test is `!(v < inf)`, which NaN passes, never `v >= inf` or `v == inf`.
#[inline(always)]
pub(crate) unsafe fn flag_nan_inf<S: Simd>(bad: S::M, a: S::V, b: S::V, inf: S::V) -> S::M {
    // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
    unsafe { S::or_m(bad, S::or_m(S::nlt(a, inf), S::nlt(b, inf))) }
}

/// One value of a block scan's scalar tail: flags NaN or `+inf` into `bad` and keeps the first
/// maximum in `mx` (replaced only by a strictly larger value).
#[inline(always)]
pub(crate) fn max_scan_tail(v: f32, mx: &mut f32, bad: &mut bool) {
    // The negation is how NaN is caught: `v < inf` is false for NaN as well as for +inf.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    let nan_or_inf = !(v < f32::INFINITY);
    *bad |= nan_or_inf;
    if v > *mx {
        *mx = v;
    }
}

/// Index of the first NaN or `+inf` in `x` (0 when there is none): where a block that a scan
/// flagged is reported.
#[inline]
pub(crate) fn first_nan_or_inf(x: &[f32]) -> usize {
    x.iter().position(|v| v.is_nan() || *v == f32::INFINITY).unwrap_or(0)
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

#[cfg(target_arch = "aarch64")]
pub(crate) use super::neon::Neon;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Simd;
    use std::arch::x86_64::*;

    /// AVX-512F, 16 lanes (call only where this CPU supports [`super::Level::Avx512`]).
    pub(crate) struct Avx512;

    /// AVX2 + FMA, 8 lanes (call only where this CPU supports [`super::Level::Avx2`]).
    pub(crate) struct Avx2;

    /// Two-source permute indices that join `a`'s first `k` lanes and `b`'s first `16 - k`:
    /// lane `j` takes `a[j]` below `k`, `b[j - k]` (index `16 + j - k`) from `k` on.
    static JOIN: [[i32; 16]; 17] = {
        let mut t = [[0i32; 16]; 17];
        let mut k = 0;
        while k <= 16 {
            let mut j = 0;
            while j < 16 {
                t[k][j] = if j < k { j as i32 } else { (16 + j - k) as i32 };
                j += 1;
            }
            k += 1;
        }
        t
    };

    /// [`JOIN`]'s indices for `k` (at most 16), loaded.
    #[inline(always)]
    unsafe fn join_at(k: u32) -> __m512i {
        // SAFETY: `JOIN[k]` is 16 `i32` (the index is checked); AVX-512F is available (kernel contract).
        unsafe { _mm512_loadu_si512(JOIN[k as usize].as_ptr() as *const _) }
    }

    impl Simd for Avx512 {
        const N: usize = 16;
        type V = __m512;
        type M = __mmask16;

        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m512 {
            // SAFETY: the caller passes a pointer valid for reading 16 f32 on a CPU with AVX-512F (the `Simd::load` contract).
            unsafe { _mm512_loadu_ps(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m512) {
            // SAFETY: the caller passes a pointer valid for writing 16 f32 on a CPU with AVX-512F (the `Simd::store` contract).
            unsafe { _mm512_storeu_ps(p, v) }
        }
        #[inline(always)]
        unsafe fn splat(x: f32) -> __m512 {
            _mm512_set1_ps(x)
        }
        #[inline(always)]
        unsafe fn add(a: __m512, b: __m512) -> __m512 {
            _mm512_add_ps(a, b)
        }
        #[inline(always)]
        unsafe fn sub(a: __m512, b: __m512) -> __m512 {
            _mm512_sub_ps(a, b)
        }
        #[inline(always)]
        unsafe fn mul(a: __m512, b: __m512) -> __m512 {
            _mm512_mul_ps(a, b)
        }
        #[inline(always)]
        unsafe fn div(a: __m512, b: __m512) -> __m512 {
            _mm512_div_ps(a, b)
        }
        #[inline(always)]
        unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
            _mm512_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn fnmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
            _mm512_fnmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn max(a: __m512, b: __m512) -> __m512 {
            _mm512_max_ps(a, b)
        }
        #[inline(always)]
        unsafe fn min(a: __m512, b: __m512) -> __m512 {
            _mm512_min_ps(a, b)
        }
        #[inline(always)]
        unsafe fn abs(a: __m512) -> __m512 {
            _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7FFF_FFFF)))
        }
        #[inline(always)]
        unsafe fn ge(a: __m512, b: __m512) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, b)
        }
        #[inline(always)]
        unsafe fn lt(a: __m512, b: __m512) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b)
        }
        #[inline(always)]
        unsafe fn nlt(a: __m512, b: __m512) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(a, b)
        }
        #[inline(always)]
        unsafe fn eq(a: __m512, b: __m512) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b)
        }
        #[inline(always)]
        unsafe fn unord(a: __m512, b: __m512) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, b)
        }
        #[inline(always)]
        unsafe fn or_m(a: __mmask16, b: __mmask16) -> __mmask16 {
            a | b
        }
        #[inline(always)]
        unsafe fn and_m(a: __mmask16, b: __mmask16) -> __mmask16 {
            a & b
        }
        #[inline(always)]
        unsafe fn none() -> __mmask16 {
            0
        }
        #[inline(always)]
        unsafe fn any(m: __mmask16) -> bool {
            m != 0
        }
        #[inline(always)]
        unsafe fn keep(m: __mmask16, v: __m512) -> __m512 {
            _mm512_maskz_mov_ps(m, v)
        }
        #[inline(always)]
        unsafe fn select(m: __mmask16, a: __m512, b: __m512) -> __m512 {
            _mm512_mask_blend_ps(m, b, a)
        }
        #[inline(always)]
        unsafe fn add_exponent(v: __m512, k: __m512) -> __m512 {
            let ki = _mm512_slli_epi32::<23>(_mm512_cvtps_epi32(k));
            _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(v), ki))
        }
        #[inline(always)]
        unsafe fn cvt_round_bits(v: __m512) -> __m512 {
            _mm512_castsi512_ps(_mm512_cvtps_epi32(v))
        }
        #[inline(always)]
        unsafe fn hmax(v: __m512) -> f32 {
            _mm512_reduce_max_ps(v)
        }
        #[inline(always)]
        unsafe fn hsum_f32(v: __m512) -> f32 {
            _mm512_reduce_add_ps(v)
        }
        #[inline(always)]
        unsafe fn keep_scale2(m: __mmask16, v: __m512, k: __m512) -> __m512 {
            _mm512_maskz_scalef_ps(m, v, k)
        }
        #[inline(always)]
        unsafe fn count(m: __mmask16) -> u32 {
            (m as u32).count_ones()
        }
        #[inline(always)]
        unsafe fn push_masked(m: __mmask16, v: __m512, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>) {
            let k = (m as u32).count_ones() as usize;
            ids.reserve(16);
            vals.reserve(16);
            let idv = _mm512_add_epi32(
                _mm512_set1_epi32(base as i32),
                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            );
            // Compress in registers and store whole vectors (the memory form of the compress
            // instructions is very slow on some CPUs); the spare lanes are overwritten later.
            // SAFETY: both vectors reserved 16 spare elements above, so each 16-lane store stays inside their capacity; the first `k` stored lanes are the compressed ones, so `set_len(len + k)` exposes only written values. AVX-512F is available (kernel contract).
            unsafe {
                let (li, lv) = (ids.len(), vals.len());
                _mm512_storeu_si512(ids.as_mut_ptr().add(li) as *mut _, _mm512_maskz_compress_epi32(m, idv));
                _mm512_storeu_ps(vals.as_mut_ptr().add(lv), _mm512_maskz_compress_ps(m, v));
                ids.set_len(li + k);
                vals.set_len(lv + k);
            }
        }
        #[inline(always)]
        unsafe fn compress_store_ids(m: __mmask16, base: usize, dst: *mut i32) -> usize {
            let idv = _mm512_add_epi32(
                _mm512_set1_epi32(base as i32),
                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            );
            // Compressed in a register and stored whole (the memory form is slow on some CPUs).
            // SAFETY: the caller passes room for 16 ids (the `Simd::compress_store_ids` contract); AVX-512F is available (kernel contract).
            unsafe { _mm512_storeu_si512(dst as *mut _, _mm512_maskz_compress_epi32(m, idv)) };
            (m as u32).count_ones() as usize
        }
        #[inline(always)]
        unsafe fn compress_store(m: __mmask16, v: __m512, dst: *mut f32) -> usize {
            // Compressed in a register and stored whole (the memory form is slow on some CPUs).
            // SAFETY: the caller passes room for 16 values (the `Simd::compress_store` contract); AVX-512F is available (kernel contract).
            unsafe { _mm512_storeu_ps(dst, _mm512_maskz_compress_ps(m, v)) };
            (m as u32).count_ones() as usize
        }
        #[inline(always)]
        unsafe fn compress_store4(m: [__mmask16; 4], v: [__m512; 4], dst: *mut f32) -> usize {
            let k = [m[0].count_ones(), m[1].count_ones(), m[2].count_ones(), m[3].count_ones()];
            let total = k[0] + k[1] + k[2] + k[3];
            if total > 16 {
                let mut w = 0;
                for (&mj, &vj) in m.iter().zip(&v) {
                    // SAFETY: `w` values written so far, each call writing 16 more at most:
                    // inside the 64 the caller has room for (the `compress_store4` contract).
                    w += unsafe { Self::compress_store(mj, vj, dst.add(w)) };
                }
                return w;
            }
            // At most 16 lanes: each vector's compressed to the bottom, the pairs joined by one
            // two-source permute each (the second's lanes from the first's count on), then the
            // two pairs; one store instead of four. (Every count and offset is at most 16.)
            let c0 = _mm512_maskz_compress_ps(m[0], v[0]);
            let c1 = _mm512_maskz_compress_ps(m[1], v[1]);
            let c2 = _mm512_maskz_compress_ps(m[2], v[2]);
            let c3 = _mm512_maskz_compress_ps(m[3], v[3]);
            let lo = _mm512_permutex2var_ps(c0, join_at(k[0]), c1);
            let hi = _mm512_permutex2var_ps(c2, join_at(k[2]), c3);
            let acc = _mm512_permutex2var_ps(lo, join_at(k[0] + k[1]), hi);
            // SAFETY: the caller passes room for 64 values (the `compress_store4` contract),
            // 16 of which are written; AVX-512F is available (kernel contract).
            unsafe { _mm512_storeu_ps(dst, acc) };
            total as usize
        }
        type D = (__m512d, __m512d);
        #[inline(always)]
        unsafe fn dzero() -> Self::D {
            (_mm512_setzero_pd(), _mm512_setzero_pd())
        }
        #[inline(always)]
        unsafe fn dadd(d: Self::D, v: __m512) -> Self::D {
            let lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
            let hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v))));
            (_mm512_add_pd(d.0, lo), _mm512_add_pd(d.1, hi))
        }
        #[inline(always)]
        unsafe fn dsum(d: Self::D) -> f64 {
            let mut a = [0f64; 16];
            // SAFETY: `a` holds 16 f64, what the two 8-lane stores write; AVX-512F is available (kernel contract).
            unsafe {
                _mm512_storeu_pd(a.as_mut_ptr(), d.0);
                _mm512_storeu_pd(a.as_mut_ptr().add(8), d.1);
            }
            a.iter().sum()
        }
    }

    /// For each 8-bit lane mask, the indices of its set lanes in order, one byte each (lane
    /// `j`'s index in byte `j`; the bytes past the count are 0): AVX2 has no compress
    /// instruction, so [`Avx2`]'s compressing stores permute by these. Bytes, not packed
    /// nibbles, so that one zero-extending load (`vpmovzxbd`) gives the 8 permute indices
    /// (2 KiB, in L1 while a scan runs).
    static COMPRESS8: [u64; 256] = {
        let mut t = [0u64; 256];
        let mut bits = 0;
        while bits < 256 {
            let (mut k, mut lane) = (0, 0);
            while lane < 8 {
                if bits & (1 << lane) != 0 {
                    t[bits] |= (lane as u64) << (8 * k);
                    k += 1;
                }
                lane += 1;
            }
            bits += 1;
        }
        t
    };

    /// [`COMPRESS8`]'s entry for `bits` (below 256) as 8 lane indices.
    #[inline(always)]
    unsafe fn compress_index(bits: u32) -> __m256i {
        let e: *const u64 = &COMPRESS8[(bits & 0xFF) as usize];
        // SAFETY: `e` points at one u64 of the table, the 8 bytes `_mm_loadl_epi64` reads; AVX2
        // is available (kernel contract).
        unsafe { _mm256_cvtepu8_epi32(_mm_loadl_epi64(e as *const __m128i)) }
    }

    impl Simd for Avx2 {
        const N: usize = 8;
        type V = __m256;
        type M = __m256;

        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m256 {
            // SAFETY: the caller passes a pointer valid for reading 8 f32 on a CPU with AVX2 (the `Simd::load` contract).
            unsafe { _mm256_loadu_ps(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m256) {
            // SAFETY: the caller passes a pointer valid for writing 8 f32 on a CPU with AVX2 (the `Simd::store` contract).
            unsafe { _mm256_storeu_ps(p, v) }
        }
        #[inline(always)]
        unsafe fn splat(x: f32) -> __m256 {
            _mm256_set1_ps(x)
        }
        #[inline(always)]
        unsafe fn add(a: __m256, b: __m256) -> __m256 {
            _mm256_add_ps(a, b)
        }
        #[inline(always)]
        unsafe fn sub(a: __m256, b: __m256) -> __m256 {
            _mm256_sub_ps(a, b)
        }
        #[inline(always)]
        unsafe fn mul(a: __m256, b: __m256) -> __m256 {
            _mm256_mul_ps(a, b)
        }
        #[inline(always)]
        unsafe fn div(a: __m256, b: __m256) -> __m256 {
            _mm256_div_ps(a, b)
        }
        #[inline(always)]
        unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
            _mm256_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn fnmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
            _mm256_fnmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn max(a: __m256, b: __m256) -> __m256 {
            _mm256_max_ps(a, b)
        }
        #[inline(always)]
        unsafe fn min(a: __m256, b: __m256) -> __m256 {
            _mm256_min_ps(a, b)
        }
        #[inline(always)]
        unsafe fn abs(a: __m256) -> __m256 {
            _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(a), _mm256_set1_epi32(0x7FFF_FFFF)))
        }
        #[inline(always)]
        unsafe fn ge(a: __m256, b: __m256) -> __m256 {
            _mm256_cmp_ps::<_CMP_GE_OQ>(a, b)
        }
        #[inline(always)]
        unsafe fn lt(a: __m256, b: __m256) -> __m256 {
            _mm256_cmp_ps::<_CMP_LT_OQ>(a, b)
        }
        #[inline(always)]
        unsafe fn nlt(a: __m256, b: __m256) -> __m256 {
            _mm256_cmp_ps::<_CMP_NLT_UQ>(a, b)
        }
        #[inline(always)]
        unsafe fn eq(a: __m256, b: __m256) -> __m256 {
            _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b)
        }
        #[inline(always)]
        unsafe fn unord(a: __m256, b: __m256) -> __m256 {
            _mm256_cmp_ps::<_CMP_UNORD_Q>(a, b)
        }
        #[inline(always)]
        unsafe fn or_m(a: __m256, b: __m256) -> __m256 {
            _mm256_or_ps(a, b)
        }
        #[inline(always)]
        unsafe fn and_m(a: __m256, b: __m256) -> __m256 {
            _mm256_and_ps(a, b)
        }
        #[inline(always)]
        unsafe fn none() -> __m256 {
            _mm256_setzero_ps()
        }
        #[inline(always)]
        unsafe fn any(m: __m256) -> bool {
            _mm256_movemask_ps(m) != 0
        }
        #[inline(always)]
        unsafe fn keep(m: __m256, v: __m256) -> __m256 {
            _mm256_and_ps(m, v)
        }
        #[inline(always)]
        unsafe fn select(m: __m256, a: __m256, b: __m256) -> __m256 {
            _mm256_blendv_ps(b, a, m)
        }
        #[inline(always)]
        unsafe fn add_exponent(v: __m256, k: __m256) -> __m256 {
            let ki = _mm256_slli_epi32::<23>(_mm256_cvtps_epi32(k));
            _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(v), ki))
        }
        #[inline(always)]
        unsafe fn cvt_round_bits(v: __m256) -> __m256 {
            _mm256_castsi256_ps(_mm256_cvtps_epi32(v))
        }
        #[inline(always)]
        unsafe fn hsum_f32(v: __m256) -> f32 {
            let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps::<1>(s, s)))
        }
        #[inline(always)]
        unsafe fn hmax(v: __m256) -> f32 {
            let mut a = [0f32; 8];
            // SAFETY: `a` holds 8 f32, what the unaligned store writes; AVX2 is available (kernel contract).
            unsafe { _mm256_storeu_ps(a.as_mut_ptr(), v) };
            a.iter().fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m })
        }
        #[inline(always)]
        unsafe fn keep_scale2(m: __m256, v: __m256, k: __m256) -> __m256 {
            // The exponent is added in integer lanes (any `k` converts without a fault), and the
            // lanes outside `m`, whatever they hold then, are zeroed.
            // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
            unsafe { Self::keep(m, Self::add_exponent(v, k)) }
        }
        #[inline(always)]
        unsafe fn count(m: __m256) -> u32 {
            (_mm256_movemask_ps(m) as u32).count_ones()
        }
        #[inline(always)]
        unsafe fn push_masked(m: __m256, v: __m256, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>) {
            ids.reserve(8);
            vals.reserve(8);
            // SAFETY: both vectors reserved 8 spare elements above, so each 8-lane store stays
            // inside their capacity; the first `k` stored lanes are the compressed ones, so
            // `set_len(len + k)` exposes only written values. AVX2 is available (kernel contract).
            unsafe {
                let (li, lv) = (ids.len(), vals.len());
                let k = Self::compress_store_ids(m, base, ids.as_mut_ptr().add(li));
                Self::compress_store(m, v, vals.as_mut_ptr().add(lv));
                ids.set_len(li + k);
                vals.set_len(lv + k);
            }
        }
        #[inline(always)]
        unsafe fn compress_store_ids(m: __m256, base: usize, dst: *mut i32) -> usize {
            let bits = _mm256_movemask_ps(m) as u32;
            // The ids are `base` plus the lane indices of the set lanes, which the table gives.
            let idv = _mm256_add_epi32(_mm256_set1_epi32(base as i32), compress_index(bits));
            // SAFETY: the caller passes room for 8 ids (the `Simd::compress_store_ids` contract); AVX2 is available (kernel contract).
            unsafe { _mm256_storeu_si256(dst as *mut __m256i, idv) };
            bits.count_ones() as usize
        }
        #[inline(always)]
        unsafe fn compress_store(m: __m256, v: __m256, dst: *mut f32) -> usize {
            let bits = _mm256_movemask_ps(m) as u32;
            // No branch on the mask: the set lanes moved to the bottom by one permute and the
            // whole vector stored (the spare lanes are overwritten by the next store or ignored).
            let packed = _mm256_permutevar8x32_ps(v, compress_index(bits));
            // SAFETY: the caller passes room for 8 values (the `Simd::compress_store` contract); AVX2 is available (kernel contract).
            unsafe { _mm256_storeu_ps(dst, packed) };
            bits.count_ones() as usize
        }
        type D = (__m256d, __m256d);
        #[inline(always)]
        unsafe fn dzero() -> Self::D {
            (_mm256_setzero_pd(), _mm256_setzero_pd())
        }
        #[inline(always)]
        unsafe fn dadd(d: Self::D, v: __m256) -> Self::D {
            let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
            let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v));
            (_mm256_add_pd(d.0, lo), _mm256_add_pd(d.1, hi))
        }
        #[inline(always)]
        unsafe fn dsum(d: Self::D) -> f64 {
            let mut a = [0f64; 8];
            // SAFETY: `a` holds 8 f64, what the two 4-lane stores write; AVX2 is available (kernel contract).
            unsafe {
                _mm256_storeu_pd(a.as_mut_ptr(), d.0);
                _mm256_storeu_pd(a.as_mut_ptr().add(4), d.1);
            }
            a.iter().sum()
        }
    }
}

/// Defines `$vis fn $name(args) -> ret` that runs the generic kernel `$generic::<S: Simd>`
/// on the best backend, each instantiation inside a `#[target_feature]` wrapper so the
/// intrinsics inline.
macro_rules! simd_dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty = $generic:ident) => {
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,fma,popcnt")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx512($($arg: $ty),*) -> $ret {
                    // SAFETY: AVX-512F is available (checked by the caller).
                    unsafe { $generic::<$crate::fast::simd::Avx512>($($arg),*) }
                }
                #[target_feature(enable = "avx2,fma,popcnt")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx2($($arg: $ty),*) -> $ret {
                    // SAFETY: AVX2 and FMA are available (checked by the caller).
                    unsafe { $generic::<$crate::fast::simd::Avx2>($($arg),*) }
                }
                match $crate::fast::simd::Level::active() {
                    // SAFETY: the active level never exceeds what this CPU supports.
                    $crate::fast::simd::Level::Avx512 => return unsafe { avx512($($arg),*) },
                    // SAFETY: as above.
                    $crate::fast::simd::Level::Avx2 => return unsafe { avx2($($arg),*) },
                    $crate::fast::simd::Level::Scalar | $crate::fast::simd::Level::Neon => {}
                }
            }
            #[cfg(target_arch = "aarch64")]
            {
                #[target_feature(enable = "neon")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn neon($($arg: $ty),*) -> $ret {
                    // SAFETY: NEON is available (checked by the caller).
                    unsafe { $generic::<$crate::fast::simd::Neon>($($arg),*) }
                }
                if $crate::fast::simd::Level::active() == $crate::fast::simd::Level::Neon {
                    // SAFETY: the active level is NEON only where this CPU supports it.
                    return unsafe { neon($($arg),*) };
                }
            }
            // SAFETY: the scalar backend has no requirement.
            unsafe { $generic::<$crate::fast::simd::Scalar>($($arg),*) }
        }
    };
}
pub(crate) use simd_dispatch;

#[cfg(test)]
mod tests {
    use super::*;

    /// The lane count of the backend a dispatched call runs on.
    unsafe fn lanes_k<S: Simd>() -> usize {
        S::N
    }
    simd_dispatch!(fn lanes() -> usize = lanes_k);

    /// Every group of 4 vectors of `x` (its length a multiple of 64) compressed by
    /// `compress_store4` with the lanes `>= thr`, appended to `out` (which keeps 64 spare
    /// values past its length).
    unsafe fn compress4_all_k<S: Simd>(x: &[f32], thr: f32, out: &mut Vec<f32>) {
        out.reserve(x.len() + 4 * S::N);
        let mut len = out.len();
        // SAFETY: each group reads `4 * S::N` values inside `x` (its length a multiple of 64,
        // so of `4 * S::N`) and writes at most `4 * S::N` from `len <= old + i`, inside the
        // capacity reserved above; `set_len` exposes the counted values only.
        unsafe {
            let t = S::splat(thr);
            for g in x.chunks_exact(4 * S::N) {
                let v = [0, 1, 2, 3].map(|j| S::load(g.as_ptr().add(j * S::N)));
                let m = [S::ge(v[0], t), S::ge(v[1], t), S::ge(v[2], t), S::ge(v[3], t)];
                len += S::compress_store4(m, v, out.as_mut_ptr().add(len));
            }
            out.set_len(len);
        }
    }
    simd_dispatch!(fn compress4_all(x: &[f32], thr: f32, out: &mut Vec<f32>) -> () = compress4_all_k);

    /// `compress_store4` keeps exactly the set lanes in order at every level, on groups with
    /// 0 to 64 set lanes (around the 16 of AVX-512's one-register gathering: 15, 16, 17), each
    /// vector's count varied.
    #[test]
    fn compress_store4_keeps_set_lanes_in_order() {
        let mut x = 99u32;
        let mut row = Vec::new();
        for total in [0usize, 1, 5, 15, 16, 17, 30, 63, 64].iter().cycle().take(200) {
            let mut set = [false; 64];
            let mut k = 0;
            while k < *total {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let j = (x >> 10) as usize % 64;
                k += usize::from(!set[j]);
                set[j] = true;
            }
            row.extend(set.iter().enumerate().map(|(j, &s)| if s { 1.0 + j as f32 } else { -1.0 - j as f32 }));
        }
        let want: Vec<f32> = row.iter().copied().filter(|&v| v >= 0.5).collect();
        for level in Level::all() {
            let mut out = vec![7.0f32; 5];
            if with_level(level, || compress4_all(&row, 0.5, &mut out)).is_none() {
                continue;
            }
            assert_eq!(out[..5], [7.0; 5], "{level:?}");
            assert_eq!(out[5..], want[..], "{level:?}");
        }
    }

    unsafe fn ids_all_k<S: Simd>(x: &[f32], thr: f32, base: usize, out: &mut Vec<i32>) {
        out.reserve(x.len() + S::N);
        let mut len = out.len();
        // SAFETY: each vector reads `S::N` values inside `x` (its length a multiple of 16) and
        // writes at most `S::N` ids from `len <= old + i`, inside the capacity reserved above.
        unsafe {
            let t = S::splat(thr);
            for (k, c) in x.chunks_exact(S::N).enumerate() {
                let m = S::ge(S::load(c.as_ptr()), t);
                len += S::compress_store_ids(m, base + k * S::N, out.as_mut_ptr().add(len));
            }
            out.set_len(len);
        }
    }
    simd_dispatch!(fn ids_all(x: &[f32], thr: f32, base: usize, out: &mut Vec<i32>) -> () = ids_all_k);

    /// `compress_store_ids` writes the ids of exactly the set lanes, in order, at every level.
    #[test]
    fn compress_store_ids_keeps_set_lanes_in_order() {
        let mut x = 7u32;
        let row: Vec<f32> = (0..16 * 300)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                // Whole vectors set and unset too.
                if i / 16 % 7 == 0 {
                    1.0
                } else if i / 16 % 7 == 1 {
                    -1.0
                } else {
                    (x >> 16) as f32 / 65_536.0 - 0.5
                }
            })
            .collect();
        let want: Vec<i32> = (0..row.len()).filter(|&i| row[i] >= 0.25).map(|i| (1000 + i) as i32).collect();
        for level in Level::all() {
            let mut out = vec![-3i32; 3];
            if with_level(level, || ids_all(&row, 0.25, 1000, &mut out)).is_none() {
                continue;
            }
            assert_eq!(out[..3], [-3; 3], "{level:?}");
            assert_eq!(out[3..], want[..], "{level:?}");
        }
    }

    /// Every kernel built with `simd_dispatch!` runs on the forced level, for every level this
    /// CPU supports; a level it does not support is refused.
    #[test]
    fn dispatch_follows_the_forced_level() {
        let mut ran = Vec::new();
        for (level, n) in [(Level::Avx512, 16), (Level::Avx2, 8), (Level::Neon, 4), (Level::Scalar, 1)] {
            match with_level(level, || (Level::active(), lanes())) {
                Some(got) => {
                    assert_eq!(got, (level, n), "forced {level:?}");
                    ran.push(level);
                }
                None => {
                    assert!(!level.is_supported());
                    assert_eq!(level.force(), Err(Level::supported()));
                }
            }
        }
        assert!(ran.contains(&Level::Scalar) && ran.contains(&Level::supported()), "{ran:?}");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            assert!(ran.contains(&Level::Avx2), "AVX2 is on this CPU but was not run: {ran:?}");
        }
    }
}
