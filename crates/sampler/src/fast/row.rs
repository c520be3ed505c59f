//! The shared whole-row machinery of the fast paths: the block size, the patched row view
//! ([`Row`]), the max pass ([`scan_row`]: per-block maxima, NaN/`+inf` detection; the
//! coarse exponential sums it can hold are dist's to fill), the gather of values above a threshold, and the tier counters.

use crate::candidates::TokenData;
use crate::fast::simd::{first_nan_or_inf, max_scan_tail, simd_dispatch, MaxScan, Simd};

/// The max pass's results (reused between steps).
#[derive(Clone, Debug, Default)]
pub(crate) struct RowScan {
    /// Per-block maximum value.
    pub(crate) cmax: Vec<f32>,
    /// Per-block reference the coarse sum is relative to (a value <= the row maximum).
    pub(crate) cref: Vec<f32>,
    /// Per-block sum of `exp_bound(x - cref)` (filled by dist's coarse scan).
    pub(crate) coarse: Vec<f64>,
    /// Whether `coarse` / `cref` hold sums from the last scan.
    pub(crate) has_coarse: bool,
}

/// Tokens per block: the granularity of the bounds and of the exact walk.
pub(crate) const BLOCK: usize = 1024;

/// Process-wide counters of how often each tier of a fast path decided (statistics for
/// benchmarks and tests: relaxed atomics). They count only with the `tier-counts` feature;
/// without it (the default) `bump` compiles to nothing, so the hot path never touches a shared
/// cache line, and every count reads zero.
pub(crate) struct TierCounts<const N: usize>([std::sync::atomic::AtomicU64; N]);

impl<const N: usize> TierCounts<N> {
    /// Every counter at zero.
    pub(crate) const fn new() -> Self {
        TierCounts([const { std::sync::atomic::AtomicU64::new(0) }; N])
    }

    /// Counts one decision by tier `i` (with the `tier-counts` feature; a no-op without it).
    #[inline(always)]
    pub(crate) fn bump(&self, i: usize) {
        #[cfg(feature = "tier-counts")]
        self.0[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        #[cfg(not(feature = "tier-counts"))]
        let _ = i;
    }

    /// The counts so far (zeros without the `tier-counts` feature).
    pub(crate) fn get(&self) -> [u64; N] {
        std::array::from_fn(|i| self.0[i].load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// A logits row with a few patched entries (sorted by id, unique): the candidate array the
/// chain would see after sparse samplers (penalties, logit bias, DRY).
#[derive(Clone, Copy)]
pub(crate) struct Row<'a> {
    pub logits: &'a [f32],
    pub patches: &'a [TokenData],
}

impl<'a> Row<'a> {
    pub(crate) fn len(&self) -> usize {
        self.logits.len()
    }

    /// The value of token `i`.
    pub(crate) fn get(&self, i: usize) -> f32 {
        match self.patches.binary_search_by_key(&(i as i32), |p| p.id) {
            Ok(k) => self.patches[k].logit,
            Err(_) => self.logits[i],
        }
    }

    /// Block `b` of the row: the row slice itself, or a patched copy in `buf`.
    pub(crate) fn block<'s>(&'s self, b: usize, buf: &'s mut [f32; BLOCK]) -> &'s [f32] {
        let start = b * BLOCK;
        let end = (start + BLOCK).min(self.logits.len());
        let first = self.patches.partition_point(|p| (p.id as usize) < start);
        if first == self.patches.len() || self.patches[first].id as usize >= end {
            return &self.logits[start..end];
        }
        let out = &mut buf[..end - start];
        out.copy_from_slice(&self.logits[start..end]);
        for p in &self.patches[first..] {
            let i = p.id as usize;
            if i >= end {
                break;
            }
            out[i - start] = p.logit;
        }
        out
    }
}

/// What the max pass found.
pub(crate) enum Scan {
    /// The row holds a NaN or `+inf` at this index.
    Bad(usize),
    /// Maximum value (may be `-inf` when every value is).
    Max(f32),
}

/// Max pass: per-block maximum (`cmax`), NaN/`+inf` detection; no coarse sums (dist's own
/// scan computes those).
pub(crate) fn scan_row(row: Row<'_>, s: &mut RowScan) -> Scan {
    s.has_coarse = false;
    let n = row.len();
    let nb = n.div_ceil(BLOCK);
    s.cmax.clear();
    let mut buf = [0f32; BLOCK];
    let mut m = f32::NEG_INFINITY;
    for b in 0..nb {
        let raw = &row.logits[b * BLOCK..((b + 1) * BLOCK).min(n)];
        let (mut c, bad) = block_max(raw);
        if bad {
            let i = first_nan_or_inf(raw);
            return Scan::Bad(b * BLOCK + i);
        }
        let x = row.block(b, &mut buf);
        if x.as_ptr() != raw.as_ptr() {
            (c, _) = block_max(x);
        }
        s.cmax.push(c);
        if c > m {
            m = c;
        }
    }
    Scan::Max(m)
}

simd_dispatch!(
    /// (max, has NaN or +inf) over one block.
    fn block_max(x: &[f32]) -> (f32, bool) = block_max_k
);

#[inline(always)]
unsafe fn block_max_k<S: Simd>(x: &[f32]) -> (f32, bool) {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let p = x.as_ptr();
        // Four vectors per step: two pair scans, vectors 0-1 and 2-3.
        let (mut s01, mut s23) = (MaxScan::<S>::new(), MaxScan::<S>::new());
        let mut i = 0;
        while i + 4 * S::N <= n {
            s01.push(S::load(p.add(i)), S::load(p.add(i + S::N)));
            s23.push(S::load(p.add(i + 2 * S::N)), S::load(p.add(i + 3 * S::N)));
            i += 4 * S::N;
        }
        let mut mx = S::hmax(S::max(s01.lanes_max(), s23.lanes_max()));
        let mut badt = S::any(S::or_m(s01.bad(), s23.bad()));
        for &v in &x[i..] {
            max_scan_tail(v, &mut mx, &mut badt);
        }
        (mx, badt)
    }
}

/// Appends (base + index, value) of the values `>= thr` of `x`.
pub(crate) fn collect_into(x: &[f32], thr: f32, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>) {
    collect_block(x, thr, thr, base, ids, vals);
}

simd_dispatch!(
    /// Appends the values `>= lo` of one block; returns whether one is below `hi`.
    pub(crate) fn collect_block(x: &[f32], lo: f32, hi: f32, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>) -> bool = collect_block_k
);

#[inline(always)]
unsafe fn collect_block_k<S: Simd>(
    x: &[f32],
    lo: f32,
    hi: f32,
    base: usize,
    ids: &mut Vec<i32>,
    vals: &mut Vec<f32>,
) -> bool {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let lv = S::splat(lo);
        let mut below = false;
        let mut i = 0;
        let hv = S::splat(hi);
        let mut bl = S::none();
        while i + S::N <= n {
            let v = S::load(x.as_ptr().add(i));
            let m = S::ge(v, lv);
            if S::any(m) {
                S::push_masked(m, v, base + i, ids, vals);
                bl = S::or_m(bl, S::and_m(m, S::lt(v, hv)));
            }
            i += S::N;
        }
        below |= S::any(bl);
        for (k, &v) in x.iter().enumerate().skip(i) {
            if v >= lo {
                ids.push((base + k) as i32);
                vals.push(v);
                below |= v < hi;
            }
        }
        below
    }
}
