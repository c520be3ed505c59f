//! Top-k straight from a logits row: llama.cpp's `std::partial_sort` (used for `k <= 128`)
//! replayed over the row *without* building the candidate array.
//!
//! `std::partial_sort` keeps a heap of the first `k` elements and sifts in every later element
//! whose logit beats the heap's worst. An element that does not beat it leaves no trace, so
//! whole blocks of the row can be skipped with one vector compare against the current worst;
//! only the rare elements that beat it are replayed one by one, in order. The result (set *and*
//! tie order) is exactly llama.cpp's. The same pass checks the row for NaN and `+inf`. The
//! block scan runs on the active SIMD level ([`Level::active`]), like every other kernel.
//!
//! On a real model's row the heap's worst rises slowly (hundreds of sift-ins, each a walk down
//! the heap), so a row first takes a cheaper pass ([`distinct_top`]): when the `k`
//! largest values are distinct and the `k + 1`-th is smaller than all of them, every order
//! sorted by logit — `std::partial_sort`'s included — is the one descending order of those `k`
//! tokens, so only the set matters. The pass finds a threshold at most the row's `k + 1`-th
//! largest from the maxima of vector groups (a rising threshold over the groups, no single
//! value collected), collects the values at or above it from the few groups that hold them,
//! then selects and checks the top `k + 1`. Equal values there send the step to the heap replay. Sparse
//! patches (penalties, logit bias) are read in place by that pass (see [`distinct_top`]).

use crate::candidates::TokenData;
use crate::fast::simd::{first_nan_or_inf, simd_dispatch, Level, Simd};
use crate::fast::threshold::keep_top;
use crate::fast::value_sort::desc_key;
use crate::sort::{heap_select_begin, heap_select_finish, heap_select_push};

/// Buffers of [`distinct_top`], reused between steps.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopKScratch {
    ids: Vec<i32>,
    vals: Vec<f32>,
    /// The collecting pass's kept units (start id, maximum).
    units: Vec<i32>,
    maxima: Vec<f32>,
    sel: Vec<f32>,
    keys: Vec<u64>,
}

/// Why the scan stopped: the row holds a NaN or `+inf` at this index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadLogit(pub usize);

/// Fills `heap` with llama.cpp's top-`k` of `logits`, where the tokens listed in `patches`
/// (sorted by id, unique) take their patched logit instead of the row's. Requires
/// `0 < k < logits.len()`. Returns the sorted best `k` in `heap`.
pub(crate) fn top_k_from_row(
    logits: &[f32],
    k: usize,
    patches: &[TokenData],
    heap: &mut Vec<TokenData>,
    s: &mut TopKScratch,
) -> Result<(), BadLogit> {
    if patches.len() <= MAX_PATCHES_FOR_DISTINCT && distinct_top(logits, k, patches, heap, s)? {
        return Ok(());
    }
    // SAFETY: the active level never exceeds what this CPU supports.
    unsafe { top_k_from_row_on(Level::active(), logits, k, patches, heap) }
}

/// Rows with more patched tokens than this take the heap replay (each vector group holding a
/// patched token is patched in a copy; penalties over a 64-token history patch at most 64).
const MAX_PATCHES_FOR_DISTINCT: usize = 256;

/// The top `k` of `logits` with `patches` applied (`0 < k < len`; `patches` sorted by id,
/// unique, every id inside the row) into `heap`, sorted descending, when the `k + 1` largest
/// values are distinct (see the module documentation); `Ok(false)` otherwise (`heap` then
/// holds nothing useful). Finds the first NaN or `+inf` of the (unpatched) row like the heap
/// replay.
///
/// The collecting pass reads the patched row itself (a vector group holding a patched token
/// is read from a patched copy), so a patched row collects what an unpatched row with the
/// same values would: every value at or above a threshold that never passed the patched
/// row's `k + 1`-th largest.
fn distinct_top(
    logits: &[f32],
    k: usize,
    patches: &[TokenData],
    heap: &mut Vec<TokenData>,
    s: &mut TopKScratch,
) -> Result<bool, BadLogit> {
    // A patched NaN or +inf: the heap replay's comparisons decide what it does.
    if patches.iter().any(|p| is_bad(p.logit)) {
        return Ok(false);
    }
    debug_assert!(patches.windows(2).all(|w| w[0].id < w[1].id));
    debug_assert!(patches.iter().all(|p| p.id >= 0 && (p.id as usize) < logits.len()));
    // The kept units never number more than a cut's worth plus the tail: reserved once, so
    // no row allocates. The collected values are fewer on any row without many equal values
    // (the buffers keep what they grew to).
    let most = collect_cap(k) + 512;
    for v in [&mut s.sel, &mut s.vals, &mut s.maxima] {
        v.clear();
        v.reserve(most);
    }
    for v in [&mut s.ids, &mut s.units] {
        v.clear();
        v.reserve(most);
    }
    s.keys.clear();
    s.keys.reserve(most);
    collect_top(logits, k, patches, s).map_err(BadLogit)?;
    // The `k + 1` largest of the collected values (every value above the threshold, which
    // never passed the row's `k + 1`-th largest): keys ascend as values descend, and among
    // equal values as the buffer position, which ascends with the id (the buffer is in id
    // order).
    s.keys.extend(s.vals.iter().enumerate().map(|(j, &v)| (u64::from(desc_key(v)) << 32) | j as u64));
    if s.keys.len() <= k {
        return Ok(false);
    }
    s.keys.select_nth_unstable(k);
    let top = &mut s.keys[..=k];
    top.sort_unstable();
    if top.windows(2).any(|w| w[0] >> 32 == w[1] >> 32) {
        return Ok(false);
    }
    heap.clear();
    heap.extend(top[..k].iter().map(|&key| {
        let j = key as u32 as usize;
        TokenData { id: s.ids[j], logit: s.vals[j], p: 0.0 }
    }));
    Ok(true)
}

/// Values collected before the buffer is cut back to the `k + 1` largest.
fn collect_cap(k: usize) -> usize {
    (4 * (k + 1)).max(256)
}

simd_dispatch!(
    /// Appends to `s.ids` / `s.vals` (in id order) every value of the row `x` patched by
    /// `patches` (sorted by id, unique, inside the row) at or above a threshold that never
    /// exceeds the patched row's `k + 1`-th largest value (`s.units` / `s.maxima` / `s.sel`
    /// are scratch). `Err(i)`: the first NaN or `+inf` of `x` (unpatched).
    ///
    /// Two passes. The first splits the row into units (vector groups, and each value of the
    /// tail) and keeps, with a rising threshold, every unit whose maximum is at or above the
    /// `k + 1`-th largest unit maximum seen so far: the threshold `t`, the `k + 1`-th largest
    /// of all unit maxima, is reached without collecting single values. `k + 1` units hold a
    /// value at or above `t`, so `t` is at most the row's `k + 1`-th largest value, and every
    /// value at or above `t` lies in a unit whose maximum is at or above it. The second pass
    /// collects those values from those units (a few dozen groups, just read).
    fn collect_top(x: &[f32], k: usize, patches: &[TokenData], s: &mut TopKScratch) -> Result<(), usize> = collect_top_k
);

/// Vectors per group of the collecting pass.
const G: usize = 8;

/// The most lanes a vector has ([`Simd::N`] of the widest level): sizes the patched copy of a
/// group.
const MAX_LANES: usize = 16;

/// The first pass's kept units: start id and maximum (in id order), and the running threshold
/// (the `k + 1`-th largest maximum kept at the last cut).
struct Units<'a> {
    k: usize,
    thr: f32,
    cap: usize,
    ids: &'a mut Vec<i32>,
    maxima: &'a mut Vec<f32>,
    sel: &'a mut Vec<f32>,
}

impl Units<'_> {
    /// Keeps the unit starting at `start` with maximum `max` (at or above the threshold), and
    /// cuts the kept units when they reach the cap.
    #[inline(always)]
    fn offer(&mut self, start: usize, max: f32) {
        self.ids.push(start as i32);
        self.maxima.push(max);
        if self.ids.len() >= self.cap {
            self.thr = keep_top(self.k, self.ids, self.maxima, self.sel);
            // Maxima equal to the threshold survive the cut: on a row of many equal values
            // the buffer stays full and a cut per unit would be quadratic. Growing the cap
            // with what survived keeps the cuts' total work linear.
            self.cap = self.cap.max(2 * self.ids.len());
        }
    }
}

/// Loads the group of `G` vectors at `p`.
///
/// # Safety
/// The CPU supports `S`; `p` points at `G * S::N` readable values.
#[inline(always)]
unsafe fn load_group<S: Simd>(p: *const f32) -> [S::V; G] {
    // SAFETY: the caller guarantees `S` and `G * S::N` values at `p`.
    unsafe {
        let mut v = [S::splat(0.0); G];
        for (j, vj) in v.iter_mut().enumerate() {
            *vj = S::load(p.add(j * S::N));
        }
        v
    }
}

/// Whether the group `v` may hold a NaN or `+inf`: any of them makes the lane sums NaN or
/// `+inf` (so can a finite overflow: the caller then checks the group value by value). One
/// compare where a compare per vector would load the compare port.
///
/// # Safety
/// The CPU supports `S`.
#[inline(always)]
unsafe fn may_be_bad<S: Simd>(v: &[S::V; G]) -> bool {
    // SAFETY: the caller guarantees `S`; no memory is read.
    unsafe {
        let sum =
            S::add(S::add(S::add(v[0], v[1]), S::add(v[2], v[3])), S::add(S::add(v[4], v[5]), S::add(v[6], v[7])));
        S::any(S::nlt(sum, S::splat(f32::INFINITY)))
    }
}

/// Lane-wise maximum of a group.
///
/// # Safety
/// The CPU supports `S`.
#[inline(always)]
unsafe fn group_max<S: Simd>(v: &[S::V; G]) -> S::V {
    // SAFETY: the caller guarantees `S`; no memory is read.
    unsafe { S::max(S::max(S::max(v[0], v[1]), S::max(v[2], v[3])), S::max(S::max(v[4], v[5]), S::max(v[6], v[7]))) }
}

/// The group of `gl` values at `i` in `copy`, patched by the patches at the front of
/// `patches` that fall inside it (none before `i`); returns how many did.
fn patched_copy(x: &[f32], i: usize, gl: usize, patches: &[TokenData], copy: &mut [f32]) -> usize {
    let out = &mut copy[..gl];
    out.copy_from_slice(&x[i..i + gl]);
    let mut used = 0;
    for p in patches.iter().take_while(|p| (p.id as usize) < i + gl) {
        out[p.id as usize - i] = p.logit;
        used += 1;
    }
    used
}

#[inline(always)]
unsafe fn collect_top_k<S: Simd>(x: &[f32], k: usize, patches: &[TokenData], s: &mut TopKScratch) -> Result<(), usize> {
    const { assert!(S::N <= MAX_LANES) };
    let TopKScratch { ids, vals, units, maxima, sel, .. } = s;
    let gl = G * S::N;
    let n = x.len();
    let full_end = n - n % gl;
    let p = x.as_ptr();
    let mut u = Units { k, thr: f32::NEG_INFINITY, cap: collect_cap(k), ids: units, maxima, sel };
    // The first patch not yet applied, and its id (`usize::MAX` past the last).
    let mut pi = 0;
    let mut next = patches.first().map_or(usize::MAX, |t| t.id as usize);
    let mut copy = [0f32; G * MAX_LANES];
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; every group loaded from `p` starts at `i` with `i + G * S::N <= n`, the
    // patched copy holds `G * MAX_LANES >= G * S::N` values, and the tail is done lane by
    // lane. The prefetches read nothing (`Simd::prefetch_ahead`).
    unsafe {
        let mut t = S::splat(u.thr);
        let mut i = 0;
        loop {
            // Groups that start before the one holding the next patch hold none.
            let plain_end = if next < n { next - next % gl } else { full_end };
            while i < plain_end {
                let v = load_group::<S>(p.add(i));
                // The row is read once, mostly from outer caches: about 0.8 us (6%) off chain
                // (a)'s step on Gemma 3's rows in `nucleus bench` (alternated with and without).
                S::prefetch_ahead(p, i, gl);
                if may_be_bad::<S>(&v) {
                    check_group(x, i, gl)?;
                }
                let m = group_max::<S>(&v);
                if S::any(S::nlt(m, t)) {
                    u.offer(i, S::hmax(m));
                    t = S::splat(u.thr);
                }
                i += gl;
            }
            if i >= full_end {
                break;
            }
            // The group at `i` holds the next patch: its maximum is the patched copy's (the
            // raw values are checked first, as `check_logits` checks them).
            if may_be_bad::<S>(&load_group::<S>(p.add(i))) {
                check_group(x, i, gl)?;
            }
            pi += patched_copy(x, i, gl, &patches[pi..], &mut copy);
            next = patches.get(pi).map_or(usize::MAX, |q| q.id as usize);
            let m = group_max::<S>(&load_group::<S>(copy.as_ptr()));
            if S::any(S::nlt(m, t)) {
                u.offer(i, S::hmax(m));
                t = S::splat(u.thr);
            }
            i += gl;
        }
        for (j, &raw) in x[full_end..].iter().enumerate() {
            let id = full_end + j;
            if raw.is_nan() || raw == f32::INFINITY {
                return Err(id);
            }
            let mut v = raw;
            if next == id {
                v = patches[pi].logit;
                pi += 1;
                next = patches.get(pi).map_or(usize::MAX, |q| q.id as usize);
            }
            if v >= u.thr {
                u.offer(id, v);
            }
        }
        // The `k + 1`-th largest unit maximum (the running threshold when no more than `k + 1`
        // units are kept).
        let mut thr = if u.ids.len() > k + 1 { keep_top(k, u.ids, u.maxima, u.sel) } else { u.thr };
        let mut tv = S::splat(thr);
        // On rows with many equal maxima, many units are kept: the collected values are cut
        // back like the units were (the threshold stays a `k + 1`-th largest of row values).
        let mut cap = collect_cap(k);
        // The kept units ascend by start id: the first patch at or after a unit only moves on.
        let mut pi = 0;
        for (&start, &max) in u.ids.iter().zip(u.maxima.iter()) {
            let start = start as usize;
            if max < thr {
                continue;
            }
            if start >= full_end {
                ids.push(start as i32);
                vals.push(max);
                continue;
            }
            while patches.get(pi).is_some_and(|q| (q.id as usize) < start) {
                pi += 1;
            }
            let mut v = load_group::<S>(p.add(start));
            if patches.get(pi).is_some_and(|q| (q.id as usize) < start + gl) {
                pi += patched_copy(x, start, gl, &patches[pi..], &mut copy);
                v = load_group::<S>(copy.as_ptr());
            }
            for (j, &vj) in v.iter().enumerate() {
                S::push_masked(S::nlt(vj, tv), vj, start + j * S::N, ids, vals);
            }
            if ids.len() >= cap {
                thr = keep_top(k, ids, vals, u.sel);
                tv = S::splat(thr);
                cap = cap.max(2 * ids.len());
            }
        }
    }
    Ok(())
}

/// `Err` with the first NaN or `+inf` of `x[i..i + len]`, if it holds one.
fn check_group(x: &[f32], i: usize, len: usize) -> Result<(), usize> {
    let g = &x[i..i + len];
    if g.iter().any(|&y| y.is_nan() || y == f32::INFINITY) {
        return Err(i + first_nan_or_inf(g));
    }
    Ok(())
}

/// [`top_k_from_row`] with its block scans on `level`.
///
/// # Safety
/// This CPU supports `level`.
unsafe fn top_k_from_row_on(
    level: Level,
    logits: &[f32],
    k: usize,
    patches: &[TokenData],
    heap: &mut Vec<TokenData>,
) -> Result<(), BadLogit> {
    let n = logits.len();
    debug_assert!(k > 0 && k < n);
    heap.clear();
    let mut pi = 0;
    for (i, &x) in logits.iter().enumerate().take(k) {
        if is_bad(x) {
            return Err(BadLogit(i));
        }
        let mut logit = x;
        if pi < patches.len() && patches[pi].id as usize == i {
            logit = patches[pi].logit;
            pi += 1;
        }
        heap.push(TokenData { id: i as i32, logit, p: 0.0 });
    }
    heap_select_begin(heap);
    let mut i = k;
    while i < n {
        let next_patch = patches.get(pi).map_or(n, |p| p.id as usize);
        let end = next_patch.min(n);
        if i < end {
            // SAFETY: the caller guarantees `level`.
            unsafe { scan(level, logits, i, end, heap)? };
        }
        if end < n {
            if is_bad(logits[end]) {
                return Err(BadLogit(end));
            }
            let x = patches[pi].logit;
            if x > heap[0].logit {
                heap_select_push(heap, TokenData { id: end as i32, logit: x, p: 0.0 });
            }
            pi += 1;
        }
        i = end + 1;
    }
    heap_select_finish(heap);
    Ok(())
}

#[inline]
fn is_bad(x: f32) -> bool {
    x.is_nan() || x == f32::INFINITY
}

/// Offers `logits[start..end]` (unpatched) to the heap.
///
/// The vector loops flag a block with one compare per lane: `!(x <= worst)` is true exactly
/// when `x` beats the heap's worst *or* is NaN (`+inf` beats any finite worst). Flagged blocks
/// are replayed element by element, which also names a NaN or `+inf`. Runs on `level`.
///
/// # Safety
/// This CPU supports `level`.
unsafe fn scan(level: Level, logits: &[f32], start: usize, end: usize, heap: &mut [TokenData]) -> Result<(), BadLogit> {
    #[cfg(test)]
    tests::SCANNED_ON.with(|c| c.set(Some(level)));
    #[cfg(target_arch = "x86_64")]
    match level {
        // SAFETY: the caller guarantees AVX-512F.
        Level::Avx512 => return unsafe { scan_avx512(logits, start, end, heap) },
        // SAFETY: the caller guarantees AVX2.
        Level::Avx2 => return unsafe { scan_avx2(logits, start, end, heap) },
        Level::Scalar | Level::Neon => {}
    }
    #[cfg(target_arch = "aarch64")]
    if level == Level::Neon {
        // SAFETY: the caller guarantees NEON.
        return unsafe { scan_neon(logits, start, end, heap) };
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = level;
    scan_scalar(logits, start, end, heap)
}

/// Replays `logits[start..end]` one element at a time, exactly as `std::partial_sort` sees it.
fn scan_scalar(logits: &[f32], start: usize, end: usize, heap: &mut [TokenData]) -> Result<(), BadLogit> {
    for (j, &x) in logits[start..end].iter().enumerate() {
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(x <= heap[0].logit) {
            if is_bad(x) {
                return Err(BadLogit(start + j));
            }
            heap_select_push(heap, TokenData { id: (start + j) as i32, logit: x, p: 0.0 });
        }
    }
    Ok(())
}

/// Replays the flagged lanes of a block, in order. Lanes not flagged were `<=` the heap's worst
/// at the start of the block, and the worst only rises, so they can never enter the heap.
#[inline]
fn replay_flagged(logits: &[f32], base: usize, mut mask: u64, heap: &mut [TokenData]) -> Result<(), BadLogit> {
    while mask != 0 {
        let j = base + mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let x = logits[j];
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(x <= heap[0].logit) {
            if is_bad(x) {
                return Err(BadLogit(j));
            }
            heap_select_push(heap, TokenData { id: j as i32, logit: x, p: 0.0 });
        }
    }
    Ok(())
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_avx2(logits: &[f32], start: usize, end: usize, heap: &mut [TokenData]) -> Result<(), BadLogit> {
    use std::arch::x86_64::*;
    const BLOCK: usize = 32;
    let ptr = logits.as_ptr();
    let mut i = start;
    let mut thr = _mm256_set1_ps(heap[0].logit);
    while i + BLOCK <= end {
        // SAFETY: i + 32 <= end <= logits.len().
        let (a, b, c, d) = unsafe {
            (
                _mm256_loadu_ps(ptr.add(i)),
                _mm256_loadu_ps(ptr.add(i + 8)),
                _mm256_loadu_ps(ptr.add(i + 16)),
                _mm256_loadu_ps(ptr.add(i + 24)),
            )
        };
        let flag = _mm256_or_ps(
            _mm256_or_ps(_mm256_cmp_ps(a, thr, _CMP_NLE_UQ), _mm256_cmp_ps(b, thr, _CMP_NLE_UQ)),
            _mm256_or_ps(_mm256_cmp_ps(c, thr, _CMP_NLE_UQ), _mm256_cmp_ps(d, thr, _CMP_NLE_UQ)),
        );
        if _mm256_movemask_ps(flag) != 0 {
            let mask = (_mm256_movemask_ps(_mm256_cmp_ps(a, thr, _CMP_NLE_UQ)) as u64)
                | (_mm256_movemask_ps(_mm256_cmp_ps(b, thr, _CMP_NLE_UQ)) as u64) << 8
                | (_mm256_movemask_ps(_mm256_cmp_ps(c, thr, _CMP_NLE_UQ)) as u64) << 16
                | (_mm256_movemask_ps(_mm256_cmp_ps(d, thr, _CMP_NLE_UQ)) as u64) << 24;
            replay_flagged(logits, i, mask, heap)?;
            thr = _mm256_set1_ps(heap[0].logit);
        }
        i += BLOCK;
    }
    scan_scalar(logits, i, end, heap)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn scan_avx512(logits: &[f32], start: usize, end: usize, heap: &mut [TokenData]) -> Result<(), BadLogit> {
    use std::arch::x86_64::*;
    const BLOCK: usize = 64;
    let ptr = logits.as_ptr();
    let mut i = start;
    let mut thr = _mm512_set1_ps(heap[0].logit);
    while i + BLOCK <= end {
        // SAFETY: i + 64 <= end <= logits.len().
        let (a, b, c, d) = unsafe {
            (
                _mm512_loadu_ps(ptr.add(i)),
                _mm512_loadu_ps(ptr.add(i + 16)),
                _mm512_loadu_ps(ptr.add(i + 32)),
                _mm512_loadu_ps(ptr.add(i + 48)),
            )
        };
        let mask = (_mm512_cmp_ps_mask::<_CMP_NLE_UQ>(a, thr) as u64)
            | (_mm512_cmp_ps_mask::<_CMP_NLE_UQ>(b, thr) as u64) << 16
            | (_mm512_cmp_ps_mask::<_CMP_NLE_UQ>(c, thr) as u64) << 32
            | (_mm512_cmp_ps_mask::<_CMP_NLE_UQ>(d, thr) as u64) << 48;
        if mask != 0 {
            replay_flagged(logits, i, mask, heap)?;
            thr = _mm512_set1_ps(heap[0].logit);
        }
        i += BLOCK;
    }
    scan_scalar(logits, i, end, heap)
}

#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon")]
unsafe fn scan_neon(logits: &[f32], start: usize, end: usize, heap: &mut [TokenData]) -> Result<(), BadLogit> {
    use std::arch::aarch64::*;
    const BLOCK: usize = 16;
    let ptr = logits.as_ptr();
    let mut i = start;
    let mut thr = vdupq_n_f32(heap[0].logit);
    // `!(x <= worst)`: NaN or above the heap's worst.
    let flag = |v: float32x4_t, t: float32x4_t| vmvnq_u32(vcleq_f32(v, t));
    let bits = |m: uint32x4_t| -> u64 {
        let w = vld1q_u32([1u32, 2, 4, 8].as_ptr());
        u64::from(vaddvq_u32(vandq_u32(m, w)))
    };
    while i + BLOCK <= end {
        // SAFETY: i + 16 <= end <= logits.len().
        let (a, b, c, d) = unsafe {
            (vld1q_f32(ptr.add(i)), vld1q_f32(ptr.add(i + 4)), vld1q_f32(ptr.add(i + 8)), vld1q_f32(ptr.add(i + 12)))
        };
        let (fa, fb, fc, fd) = (flag(a, thr), flag(b, thr), flag(c, thr), flag(d, thr));
        if vmaxvq_u32(vorrq_u32(vorrq_u32(fa, fb), vorrq_u32(fc, fd))) != 0 {
            let mask = bits(fa) | bits(fb) << 4 | bits(fc) << 8 | bits(fd) << 12;
            replay_flagged(logits, i, mask, heap)?;
            thr = vdupq_n_f32(heap[0].logit);
        }
        i += BLOCK;
    }
    scan_scalar(logits, i, end, heap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::std_partial_sort;

    fn reference(logits: &[f32], k: usize, patches: &[TokenData]) -> Vec<TokenData> {
        let mut all: Vec<TokenData> =
            logits.iter().enumerate().map(|(i, &l)| TokenData { id: i as i32, logit: l, p: 0.0 }).collect();
        for p in patches {
            all[p.id as usize].logit = p.logit;
        }
        std_partial_sort(&mut all, k, |a, b| a.logit > b.logit);
        all.truncate(k);
        all
    }

    fn lcg(seed: u32, n: usize, levels: u32) -> Vec<f32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                ((x >> 8) % levels) as f32 / 7.0 - 5.0
            })
            .collect()
    }

    #[test]
    fn equals_std_partial_sort_including_ties() {
        for (seed, n, levels) in [(1, 1000, 20), (2, 5000, 7), (3, 70_000, 100_000), (4, 333, 3)] {
            let l = lcg(seed, n, levels);
            for k in [1, 2, 5, 40, 128] {
                let patches = [
                    TokenData { id: 3, logit: 50.0, p: 0.0 },
                    TokenData { id: (n / 2) as i32, logit: f32::NEG_INFINITY, p: 0.0 },
                    TokenData { id: (n - 1) as i32, logit: 9.0, p: 0.0 },
                ];
                for p in [&patches[..], &[]] {
                    let want = reference(&l, k, p);
                    for level in supported_levels() {
                        let mut heap = Vec::new();
                        let got = crate::fast::simd::with_level(level, || {
                            top_k_from_row(&l, k, p, &mut heap, &mut TopKScratch::default())
                        });
                        assert_eq!(got, Some(Ok(())));
                        assert_eq!(heap, want, "{level:?} seed {seed} n {n} k {k}");
                    }
                    for level in supported_levels() {
                        let mut heap = Vec::new();
                        // SAFETY: the level is supported.
                        unsafe { top_k_from_row_on(level, &l, k, p, &mut heap) }.unwrap();
                        assert_eq!(heap, want, "{level:?} seed {seed} n {n} k {k}");
                    }
                }
            }
        }
    }

    /// Every level this CPU runs (scalar always; on an AVX-512 machine all three).
    fn supported_levels() -> Vec<Level> {
        let v: Vec<Level> = Level::all().into_iter().filter(|l| l.is_supported()).collect();
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            assert!(v.contains(&Level::Avx2), "{v:?}");
        }
        v
    }

    #[test]
    fn reports_nan_and_inf() {
        let mut l = lcg(5, 4000, 50);
        for level in supported_levels() {
            // SAFETY: the level is supported.
            let top = |l: &[f32]| unsafe { top_k_from_row_on(level, l, 10, &[], &mut Vec::new()) };
            l[3000] = f32::NAN;
            assert_eq!(top(&l), Err(BadLogit(3000)), "{level:?}");
            l[3000] = 0.0;
            l[17] = f32::INFINITY;
            assert_eq!(top(&l), Err(BadLogit(17)), "{level:?}");
            l[17] = f32::NEG_INFINITY;
            assert!(top(&l).is_ok(), "{level:?}");
            // Past the first k and inside a vector block.
            l[2100] = f32::INFINITY;
            assert_eq!(top(&l), Err(BadLogit(2100)), "{level:?}");
            l[2100] = 0.0;
        }
    }

    /// The distinct-values pass: on rows with distinct values (and on rows whose top holds a
    /// tie, which it refuses), at every level, it gives `std::partial_sort`'s top k; it names
    /// the first NaN or `+inf` wherever it lies (in a vector group or in the tail).
    #[test]
    fn distinct_top_equals_std_partial_sort() {
        for (seed, n) in [(7u32, 1025usize), (8, 4096), (9, 70_001)] {
            let mut l = lcg(seed, n, 1 << 22);
            for level in supported_levels() {
                for k in [1, 2, 40, 128] {
                    let want = reference(&l, k, &[]);
                    let mut heap = Vec::new();
                    let mut s = TopKScratch::default();
                    let got = crate::fast::simd::with_level(level, || distinct_top(&l, k, &[], &mut heap, &mut s));
                    let distinct = want.windows(2).all(|w| w[0].logit != w[1].logit)
                        && reference(&l, k + 1, &[])[k].logit != want[k - 1].logit;
                    assert_eq!(got, Some(Ok(distinct)), "{level:?} seed {seed} k {k}");
                    if distinct {
                        assert_eq!(heap, want, "{level:?} seed {seed} n {n} k {k}");
                    }
                }
                // A tie at the top: refused.
                let mut t = l.clone();
                let top = reference(&t, 1, &[])[0];
                t[n / 3] = top.logit;
                let got = crate::fast::simd::with_level(level, || {
                    distinct_top(&t, 5, &[], &mut Vec::new(), &mut TopKScratch::default())
                });
                assert_eq!(got, Some(Ok(false)), "{level:?}");
                for bad_at in [0, 17, n / 2, n - 3] {
                    for bad in [f32::NAN, f32::INFINITY] {
                        let keep = l[bad_at];
                        l[bad_at] = bad;
                        l[n - 1] = f32::NAN; // a later one is not the one reported
                        let got = crate::fast::simd::with_level(level, || {
                            distinct_top(&l, 40, &[], &mut Vec::new(), &mut TopKScratch::default())
                        });
                        assert_eq!(got, Some(Err(BadLogit(bad_at))), "{level:?} at {bad_at}");
                        l[bad_at] = keep;
                        l[n - 1] = 0.5;
                    }
                }
            }
        }
    }

    /// The distinct-values pass on patched rows (patches that raise a token into the top,
    /// lower a top token out of it, set `-inf`, sit in the first `k` ids, in the tail, or tie
    /// with the top): whenever it takes the step, it gives `std::partial_sort`'s top k of the
    /// patched row, and it takes every step whose patched top `k + 1` is distinct.
    #[test]
    fn distinct_top_with_patches_equals_std_partial_sort() {
        for (seed, n) in [(11u32, 1025usize), (12, 4096), (13, 70_001)] {
            let l = lcg(seed, n, 1 << 22);
            let sorted = reference(&l, 200, &[]);
            for level in supported_levels() {
                for k in [1, 2, 40, 128] {
                    let top_ids: Vec<i32> = sorted.iter().take(k + 3).map(|t| t.id).collect();
                    let mut sets: Vec<Vec<TokenData>> = Vec::new();
                    // Penalty-like: every one of the top k + 3 lowered a little.
                    sets.push(
                        top_ids.iter().map(|&id| TokenData { id, logit: l[id as usize] - 0.3, p: 0.0 }).collect(),
                    );
                    // Raise low tokens over the top, lower the top ones out, -inf, first ids, tail.
                    let top = sorted[0].logit;
                    sets.push(vec![
                        TokenData { id: 0, logit: top + 100.0, p: 0.0 },
                        TokenData { id: 1, logit: f32::NEG_INFINITY, p: 0.0 },
                        TokenData { id: (n / 3) as i32, logit: top + 99.0, p: 0.0 },
                        TokenData { id: (n - 1) as i32, logit: top + 98.5, p: 0.0 },
                    ]);
                    sets.push(top_ids.iter().map(|&id| TokenData { id, logit: -50.0 - id as f32, p: 0.0 }).collect());
                    // A run of patched ids across group boundaries, raised over the top,
                    // and the last ids of the row (in the tail at every level on odd rows).
                    sets.push(
                        (100..260)
                            .chain(n as i32 - 5..n as i32)
                            .map(|id| TokenData { id, logit: top + 1.0 + id as f32, p: 0.0 })
                            .collect(),
                    );
                    // A patched value equal to the top's: a tie, refused.
                    sets.push(vec![TokenData { id: 5, logit: sorted[0].logit, p: 0.0 }]);
                    for mut p in sets {
                        p.sort_by_key(|t| t.id);
                        p.dedup_by_key(|t| t.id);
                        let want = reference(&l, k, &p);
                        let next = reference(&l, k + 1, &p)[k].logit;
                        let distinct = want.windows(2).all(|w| w[0].logit != w[1].logit) && next != want[k - 1].logit;
                        let mut heap = Vec::new();
                        let mut s = TopKScratch::default();
                        let got = crate::fast::simd::with_level(level, || distinct_top(&l, k, &p, &mut heap, &mut s));
                        assert_eq!(got, Some(Ok(distinct)), "{level:?} seed {seed} k {k} patches {p:?}");
                        if distinct {
                            assert_eq!(heap, want, "{level:?} seed {seed} n {n} k {k}");
                        }
                    }
                }
            }
        }
    }

    thread_local! {
        /// The level this thread's last block scan was dispatched on (test builds only).
        pub(super) static SCANNED_ON: std::cell::Cell<Option<Level>> = const { std::cell::Cell::new(None) };
    }

    /// `top_k_from_row`'s heap replay (a row with more patches than the collecting pass takes)
    /// scans on the forced level (not on the CPU's best one) and still finds a NaN deep in the
    /// row at every level.
    #[test]
    fn follows_the_forced_level() {
        let mut l = lcg(6, 5000, 30);
        l[4321] = f32::NAN;
        let patch: Vec<TokenData> =
            (0..=MAX_PATCHES_FOR_DISTINCT as i32).map(|id| TokenData { id, logit: 1.0, p: 0.0 }).collect();
        for level in supported_levels() {
            SCANNED_ON.with(|c| c.set(None));
            let got = crate::fast::simd::with_level(level, || {
                top_k_from_row(&l, 7, &patch, &mut Vec::new(), &mut TopKScratch::default())
            });
            assert_eq!(got, Some(Err(BadLogit(4321))), "{level:?}");
            assert_eq!(SCANNED_ON.with(|c| c.get()), Some(level));
        }
    }
}
