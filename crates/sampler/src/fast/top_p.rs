//! top-p's nucleus straight from a logits row, when it lies within llama.cpp's first 256
//! sorted candidates (a confident step): exact ids, order and cut, without the full array.
//!
//! llama.cpp computes `p_i = RN(e_i / s)` with `s` a sequential `f32` sum of
//! `e_i = expf(l_i - max)` in id order, partially sorts the top 256 candidates with its bucket
//! sort and accumulates `p` in that order (`f32`) until the sum reaches `p`.
//!
//! One pass over the row collects two sets ([`scan_near_top`]: the max pass itself, which
//! also finds NaN and `+inf`; on a patched row, [`collect`] after the max pass):
//! - the values that can change `s`: a term below half an ulp of the running sum leaves it
//!   unchanged, and the running sum is at least the exponential of the largest value seen so
//!   far, so only values within [`NEAR`] nats of the running maximum are kept (in id order);
//!   their exact exponentials, added by the grid replay, give `s` exactly ([`exact_sum`]);
//! - the 257 largest values, by a rising threshold as in `fast::top_k`: on an unpatched row,
//!   over the maxima of vector groups (a histogram of them gives the threshold, [`Hist`]),
//!   then the values at or above the final one collected from the few groups that hold them;
//!   on a patched row, over the values (every value at or above the buffer's 257th largest,
//!   cut back when the buffer fills).
//!
//! llama.cpp's first 256 positions hold the 256 largest values in descending order whatever
//! the order of equal values (its buckets are ranges of values, top down), and the cut reads
//! only values, so the cut is found on the values sorted. When the nucleus and the position
//! after it hold distinct values, that order is llama.cpp's; otherwise the top buckets are
//! gathered and put in order by llama.cpp's own algorithms ([`llama_order`]).
//! When even the exact `s` does not reach the cut within 256 candidates, the caller runs the
//! wide path or the full path; nothing has been consumed.

use crate::candidates::{Candidates, TokenData};
use crate::fast::bounds::{f32_down, seq_block};
use crate::fast::expf::expf_exact_slice;
use crate::fast::row::{collect_into, scan_row, Row, RowScan, Scan, TierCounts, BLOCK};
use crate::fast::simd::{first_nan_or_inf, simd_dispatch, Simd};
use crate::fast::threshold::keep_top;
use crate::fast::value_sort::desc_key;
use crate::sort::{
    bucket_of, bucket_order_follows_values, logit_before, sorted_prefix_if_distinct, std_partial_sort, std_sort,
    NBUCKETS,
};

/// Candidates llama.cpp's adaptive top-p sorts first.
const FIRST: usize = 256;

/// A value more than this many nats below the running maximum adds nothing to llama.cpp's
/// sum: `ln(2^25) = 17.33` (the term is then below `2^-25` times the running sum, so below
/// half its ulp) plus room for the rounding of `l - max` and of `expf` (see [`collect`]).
const NEAR: f64 = 17.35;

/// The running maximum must be at most this far below the row's for its exponential (a lower
/// bound of the running sum) to be a normal `f32`.
const NORMAL: f64 = 87.0;

/// The rising-threshold buffer of the largest values.
#[derive(Clone, Debug, Default)]
struct TopBuf {
    ids: Vec<i32>,
    vals: Vec<f32>,
    sel: Vec<f32>,
    /// Every value of the row at or above it is in the buffer.
    thr: f32,
    /// Length at which the buffer is cut back.
    cap: usize,
    /// [`scan_near_top`]'s kept groups: start id and maximum, id order ([`Hist`]).
    units: Vec<i32>,
    maxima: Vec<f32>,
    /// [`scan_near_top`]'s kept groups counted by the bucket of their maximum ([`Hist`]).
    counts: Vec<u32>,
}

/// Reusable buffers.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopPScratch {
    /// Values that may change llama.cpp's sum, id order.
    near: Vec<f32>,
    top: TopBuf,
    /// Whether the max pass filled the block maxima for this row.
    scanned: bool,
    keys: Vec<u64>,
    sorted: Vec<TokenData>,
    xs: Vec<f32>,
    es: Vec<f32>,
    // llama.cpp's bucket order (ties in the nucleus).
    ids: Vec<i32>,
    vals: Vec<f32>,
    groups: Vec<TokenData>,
    counts: Vec<u32>,
    /// One bucket as gathered (id order), for the libstdc++ emulation on ties.
    spare: Vec<TokenData>,
}

/// How often the nucleus was built here / left to the full path / built through llama.cpp's
/// bucket order (a tie in the nucleus, or fewer than 257 values near the maximum), process-wide.
static TIERS: TierCounts<3> = TierCounts::new();

/// `[nucleus built, full path, of the built: through the bucket order]` so far in this process.
pub(crate) fn tier_counts() -> [u64; 3] {
    TIERS.get()
}

/// Outcome of [`top_p_nucleus`].
pub(crate) enum TopP {
    /// The row holds a NaN or `+inf` at this index (the first one).
    Bad(usize),
    /// No fast path for this row (every value `-inf`, or values past llama.cpp's bucket range).
    Skip,
    /// Not decided here (the nucleus is wider than 256): the wide path or the full path runs.
    Full {
        /// The row's maximum.
        m: f32,
        /// Proven: llama.cpp's running sum stays below `p` (or `min_keep` is not reached) over
        /// its first 256 sorted candidates, so its top-p sorts the whole row and keeps more
        /// than 256 (only on rows of more than 1024, where that adaptive sort runs).
        beyond: bool,
    },
    /// `out` holds the nucleus (sorted, as llama.cpp's top-p leaves the view, `p` zero).
    Nucleus,
}

/// llama.cpp's top-p over `row` for `p < 1` and `min_keep`, when the nucleus lies within the
/// first 256 sorted candidates; the row is scanned here (`d` is scratch).
pub(crate) fn top_p_nucleus(
    row: Row<'_>,
    p: f32,
    min_keep: usize,
    d: &mut RowScan,
    s: &mut TopPScratch,
    out: &mut Candidates,
) -> TopP {
    let m = match scan(row, d, s) {
        Err(i) => return TopP::Bad(i),
        Ok(m) => m,
    };
    if m == f32::NEG_INFINITY || !bucket_order_follows_values(m) {
        return TopP::Skip;
    }
    match nucleus(row, m, p, min_keep, d, s, out) {
        Built::Nucleus { replayed } => {
            TIERS.bump(0);
            if replayed {
                TIERS.bump(2);
            }
            TopP::Nucleus
        }
        r => {
            TIERS.bump(1);
            TopP::Full { m, beyond: r == Built::Beyond && row.len() > ADAPTIVE }
        }
    }
}

/// llama.cpp's top-p sorts only the first 256 candidates first on arrays longer than this
/// (shorter ones are sorted whole, in place, by another algorithm): the fast path runs only
/// on longer rows (`session::compile`).
pub(crate) const ADAPTIVE: usize = 1024;

/// What [`nucleus`] found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Built {
    /// `out` holds the nucleus; whether llama.cpp's bucket order was replayed.
    Nucleus { replayed: bool },
    /// The cut provably lies beyond the first 256 sorted candidates.
    Beyond,
    /// Not decided here.
    Undecided,
}

/// The row's maximum, with [`collect`]'s buffers filled: in one pass ([`scan_near_top`]) for
/// an unpatched row, else (or when the first running maximum it used was too far below the
/// row's) after the max pass. `Err`: the first NaN or `+inf`. `d.cmax` is filled only by the
/// max pass (`s.scanned` says whether).
fn scan(row: Row<'_>, d: &mut RowScan, s: &mut TopPScratch) -> Result<f32, usize> {
    if row.patches.is_empty() {
        s.near.clear();
        let (m, first) = scan_near_top(row.logits, &mut s.top, &mut s.near)?;
        // (`first` is NaN when no finite threshold was set: every value was kept.)
        if (first as f64) < m as f64 - NORMAL {
            return scan_then_collect(row, d, s);
        }
        s.scanned = false;
        return Ok(m);
    }
    scan_then_collect(row, d, s)
}

/// The max pass, then [`collect`].
fn scan_then_collect(row: Row<'_>, d: &mut RowScan, s: &mut TopPScratch) -> Result<f32, usize> {
    let m = match scan_row(row, d) {
        Scan::Bad(i) => return Err(i),
        Scan::Max(m) => m,
    };
    s.scanned = true;
    if m != f32::NEG_INFINITY && bucket_order_follows_values(m) {
        collect(row, m, d, s);
    }
    Ok(m)
}

/// The nucleus into `out` from [`scan`]'s buffers, or why not.
fn nucleus(
    row: Row<'_>,
    m: f32,
    p: f32,
    min_keep: usize,
    d: &mut RowScan,
    s: &mut TopPScratch,
    out: &mut Candidates,
) -> Built {
    let n = row.len();
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if min_keep > FIRST || !(p >= 0.0) {
        return Built::Undecided;
    }
    let k = FIRST.min(n);
    // llama.cpp's first k positions hold the k largest values, sorted; the cut reads position
    // k - 1 at most, and whether the nucleus's last value is tied with the next, position k.
    let need = (FIRST + 1).min(n);
    let have_top = s.top.ids.len() >= need;
    let mut wide_at = f64::INFINITY;
    if have_top {
        top_keys(s);
        if s.near.len() > WIDE_CHECK {
            keep_smallest_keys(need, s);
            wide_at = wide_sum(k, m, p, s);
        }
    }
    let Some(sum) = exact_sum(m, wide_at, s) else {
        return Built::Beyond;
    };
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(sum > 0.0) || !(sum < f32::INFINITY) {
        return Built::Undecided;
    }
    if have_top {
        // Most nuclei are short: the cut is tried on the largest few first, and the rest
        // is sorted only when it lies further.
        let short = SHORT.min(need);
        sort_prefix(short, s);
        let last = match cut(&s.sorted, (short - 1).min(k), m, p, min_keep, sum, sum) {
            Some(last) => last,
            None => {
                sort_prefix(need, s);
                match cut(&s.sorted, k, m, p, min_keep, sum, sum) {
                    Some(last) => last,
                    // The exact sum, so no bracket left it open: the first `k` do not reach it.
                    None => return Built::Beyond,
                }
            }
        };
        let tied = s.keys[..(last + 1).min(need)].windows(2).any(|w| w[0] >> 32 == w[1] >> 32);
        if !tied {
            out.fill_from(&s.sorted[..last]);
            out.set_sorted(true);
            return Built::Nucleus { replayed: false };
        }
    }
    if !s.scanned {
        // The one-pass scan leaves no block maxima; the bucket order's gather reads them.
        scan_row(row, d);
        s.scanned = true;
    }
    if !llama_order(row, m, d, s) {
        return Built::Undecided;
    }
    let Some(last) = cut(&s.groups, k, m, p, min_keep, sum, sum) else {
        return Built::Beyond;
    };
    out.fill_from(&s.groups[..last]);
    out.set_sorted(true);
    Built::Nucleus { replayed: true }
}

/// Empties the top buffer and sets its threshold.
fn reset_top(t: &mut TopBuf, thr: f32) {
    t.ids.clear();
    t.vals.clear();
    t.thr = thr;
    t.cap = 4 * (FIRST + 1);
}

simd_dispatch!(
    /// [`collect`]'s two sets and the maximum over an unpatched row, each value's near
    /// threshold taken from the running maximum `R` of the vector groups before it
    /// ([`collect`] explains why the values below `R - NEAR` add nothing while `e_R` is normal:
    /// the caller checks that with the `R` of the first finite threshold, returned second; NaN
    /// when none was set). `Err(i)`: the first NaN or `+inf`.
    ///
    /// The top buffer is filled in two passes, as `fast::top_k` collects its top: the scan
    /// keeps the vector groups whose maximum reaches a rising threshold ([`Hist`]: a bucket
    /// edge below which at least 257 kept groups' maxima lie at or above, and the running near
    /// threshold: the buffer starts at `m - NEAR`); the final threshold, the larger of that
    /// edge and `m - NEAR` (rounded down), never passes the row's 257th largest value (257
    /// groups hold a value at or above it), and every value at or above it lies in a kept
    /// group (each threshold the groups were held to was at most it), whose values at or
    /// above it are then collected (a few hundred groups, no cut).
    fn scan_near_top(x: &[f32], t: &mut TopBuf, near: &mut Vec<f32>) -> Result<(f32, f32), usize> = scan_near_top_k
);

#[inline(always)]
unsafe fn scan_near_top_k<S: Simd>(x: &[f32], t: &mut TopBuf, near: &mut Vec<f32>) -> Result<(f32, f32), usize> {
    let TopBuf { ids, vals, sel, thr, units, maxima, counts, .. } = t;
    let mut h = Hist::new(units, maxima, counts);
    // SAFETY: the caller's kernel contract (`fast::simd`), passed on.
    let (m, first) = unsafe { near_top_any::<S, true, _>(x, 0, f32::NEG_INFINITY, &mut h, near) }?;
    *thr = h.finish(near_thr(m), sel);
    ids.clear();
    vals.clear();
    // SAFETY: as above; the units are the groups of `near_top_any` on this level.
    unsafe { collect_kept::<S>(x, units, maxima, *thr, ids, vals) };
    Ok((m, first))
}

/// Buckets of [`Hist`]: [`HIST_SCALE`] a nat over `[-64, 64)`, the first also holding every
/// value below, the last every value above.
const HIST_BUCKETS: usize = 1024;

/// Buckets a nat in [`Hist`].
const HIST_SCALE: f32 = 8.0;

/// The bucket of `0.0` in [`Hist`].
const HIST_ZERO: i32 = 512;

/// The bucket of `v` (not NaN): `floor(8 v) + 512`, clamped to the buckets. `8 v` is exact
/// (or infinite, and then clamped), so every value of a bucket `b > 0` is at or above
/// [`hist_edge`]`(b)`.
#[inline(always)]
fn hist_bucket(v: f32) -> usize {
    // (`as` saturates: -inf and huge values land in the end buckets.)
    ((v * HIST_SCALE).floor() as i32).saturating_add(HIST_ZERO).clamp(0, HIST_BUCKETS as i32 - 1) as usize
}

/// The least value a bucket holds (exact in `f32`; `-inf` for the first).
#[inline(always)]
fn hist_edge(b: usize) -> f32 {
    if b == 0 {
        f32::NEG_INFINITY
    } else {
        (b as i32 - HIST_ZERO) as f32 / HIST_SCALE
    }
}

/// Past this many kept groups at or above [`Hist`]'s final threshold (a row whose top values
/// share few buckets) they are cut back to the 257 largest maxima exactly.
const HIST_KEEP: usize = 4 * (FIRST + 1);

/// [`scan_near_top`]'s group maxima with a rising threshold that needs no selection: every
/// group offered is kept (start id and maximum, id order) and counted in the bucket of its
/// maximum ([`hist_bucket`], an eighth of a nat wide); the threshold is the least value
/// ([`hist_edge`]) of the highest bucket such that it and the buckets above count at least
/// 257 groups. Those groups hold 257 values at or above it, so it never passes the row's 257th
/// largest value; it rises as groups are counted (amortized O(1) a group). This replaces the
/// cuts of a rising-threshold buffer (a `select_nth` over hundreds of maxima, a few times a
/// row) with a counter increment; the threshold is at most an eighth of a nat lower than the
/// exact 257th largest counted maximum, which lets a few more groups through.
struct Hist<'a> {
    /// The threshold (the edge of bucket `tb`).
    thr: f32,
    /// The threshold's bucket.
    tb: usize,
    /// Groups counted in buckets `tb` and above.
    above: usize,
    counts: &'a mut Vec<u32>,
    starts: &'a mut Vec<i32>,
    maxima: &'a mut Vec<f32>,
}

impl<'a> Hist<'a> {
    /// Nothing kept or counted, the threshold at `-inf`.
    fn new(starts: &'a mut Vec<i32>, maxima: &'a mut Vec<f32>, counts: &'a mut Vec<u32>) -> Self {
        starts.clear();
        maxima.clear();
        counts.clear();
        counts.resize(HIST_BUCKETS, 0);
        Hist { thr: f32::NEG_INFINITY, tb: 0, above: 0, counts, starts, maxima }
    }

    /// Counts a kept group's maximum `mx` when it lies in the threshold's bucket or above (a
    /// group noted against an older, lower threshold may lie below: it is kept, not counted,
    /// so `above` stays the count of the buckets from `tb` up).
    #[inline(always)]
    fn count(&mut self, mx: f32) {
        let b = hist_bucket(mx);
        let c = (b >= self.tb) as u32;
        // (A row holds fewer than 2^31 values, so no count overflows.)
        self.counts[b] += c;
        self.above += c as usize;
    }

    /// Raises the threshold while the buckets above its bucket count 257 groups.
    #[inline(always)]
    fn raise(&mut self) {
        let mut raised = false;
        while self.above - self.counts[self.tb] as usize > FIRST {
            self.above -= self.counts[self.tb] as usize;
            self.tb += 1;
            raised = true;
        }
        if raised {
            self.thr = hist_edge(self.tb);
        }
    }

    /// The final threshold: the larger of the buckets' and `after` (the row's near threshold);
    /// when more than [`HIST_KEEP`] kept groups reach it, the 257th largest of their maxima
    /// (exact, `sel` scratch) if that is larger. The kept groups are those offered, in id
    /// order; every group holding a value at or above the returned threshold is among them
    /// (the threshold only rose, and each group was offered if its maximum reached it).
    fn finish(&mut self, after: f32, sel: &mut Vec<f32>) -> f32 {
        let thr = self.thr.max(after);
        if self.maxima.len() > HIST_KEEP && self.maxima.iter().filter(|&&v| v >= thr).count() > HIST_KEEP {
            return keep_top(FIRST, self.starts, self.maxima, sel).max(thr);
        }
        thr
    }
}

/// The values `>= thr` (in id order) of the units (start ids and maxima, id order) that
/// [`near_top_any`] offered on this level: groups of [`GROUP`] vectors, or single values past
/// the last whole group.
///
/// # Safety
/// The CPU supports `S`; every start is inside `x`.
#[inline(always)]
unsafe fn collect_kept<S: Simd>(
    x: &[f32],
    starts: &[i32],
    maxima: &[f32],
    thr: f32,
    ids: &mut Vec<i32>,
    vals: &mut Vec<f32>,
) {
    let gl = GROUP * S::N;
    let full_end = x.len() - x.len() % gl;
    // Room for every value of the groups that reach the threshold (and a vector's spare store).
    let room = maxima.iter().filter(|&&m| m >= thr).count() * gl + S::N;
    ids.reserve(room);
    vals.reserve(room);
    let (pi, pv) = (ids.as_mut_ptr(), vals.as_mut_ptr());
    let mut len = ids.len();
    debug_assert_eq!(len, vals.len());
    // SAFETY: the caller guarantees `S`; a start before `full_end` is a group's (a multiple of
    // `gl`), so its `gl` values lie inside `x`. Each group that reaches `thr` writes at most
    // `gl` entries plus a vector's spare lanes from `len` (a tail value one), inside the room
    // reserved above; only the entries counted are exposed by `set_len`.
    unsafe {
        let tv = S::splat(thr);
        for (&start, &mx) in starts.iter().zip(maxima) {
            let start = start as usize;
            if mx < thr {
                continue;
            }
            if start >= full_end {
                *pi.add(len) = start as i32;
                *pv.add(len) = mx;
                len += 1;
                continue;
            }
            for j in 0..GROUP {
                let v = S::load(x.as_ptr().add(start + j * S::N));
                let m = S::ge(v, tv);
                S::compress_store_ids(m, start + j * S::N, pi.add(len));
                len += S::compress_store(m, v, pv.add(len));
            }
        }
        ids.set_len(len);
        vals.set_len(len);
    }
}

/// Groups [`near_top_any`] reads before it hands those of them that reached the top threshold
/// to the top buffer, all at once: the scan notes them without a branch (they come at random,
/// a few hundred of 4096 on a real model's row), and the top buffer's threshold, raised after
/// each batch, is not waited on group by group. A group noted against a threshold raised
/// later in its batch is kept all the same (a threshold lower than need be is still sound).
const CHUNK: usize = 32;

/// Vectors per group of [`near_top_any`].
const GROUP: usize = 4;

/// Where [`near_top_any`] puts the values at or above a threshold: the top buffer itself
/// ([`near_top`]), or the group maxima of [`scan_near_top`]'s first pass.
trait TopSink {
    /// Only values at or above this are offered.
    fn thr(&self) -> f32;
    /// Takes the groups of [`GROUP`] vectors of `x` starting at `starts` (in id order; ids
    /// from `base`) that held a value at or above `tv` (a splat at or above
    /// [`TopSink::thr`] when they were noted; never above the final threshold).
    ///
    /// # Safety
    /// The CPU supports `S`; every group lies inside `x`.
    unsafe fn groups<S: Simd>(&mut self, x: &[f32], starts: &[usize], tv: S::V, base: usize);
    /// Takes the single value `v` of id `id` (at or above [`TopSink::thr`]).
    fn value(&mut self, id: usize, v: f32);
}

/// The group of [`GROUP`] vectors at `p`, and its lane-wise maximum.
///
/// # Safety
/// The CPU supports `S`; `p` points at `GROUP * S::N` readable values.
#[inline(always)]
unsafe fn load_group<S: Simd>(p: *const f32) -> ([S::V; GROUP], S::V) {
    // SAFETY: the caller guarantees `S` and the values.
    unsafe {
        let v = [S::load(p), S::load(p.add(S::N)), S::load(p.add(2 * S::N)), S::load(p.add(3 * S::N))];
        (v, S::max(S::max(v[0], v[1]), S::max(v[2], v[3])))
    }
}

impl TopSink for TopBuf {
    fn thr(&self) -> f32 {
        self.thr
    }

    /// Each group's values at or above `tv` and the buffer's threshold, with a cut whenever
    /// the buffer is full.
    #[inline(always)]
    unsafe fn groups<S: Simd>(&mut self, x: &[f32], starts: &[usize], tv: S::V, base: usize) {
        for &start in starts {
            // SAFETY: the caller guarantees `S` and that the group lies inside `x`.
            unsafe {
                let (v, mx) = load_group::<S>(x.as_ptr().add(start));
                let tv = S::max(tv, S::splat(self.thr));
                if !S::any(S::ge(mx, tv)) {
                    continue;
                }
                for (j, &vj) in v.iter().enumerate() {
                    S::push_masked(S::ge(vj, tv), vj, base + start + j * S::N, &mut self.ids, &mut self.vals);
                }
            }
            if self.ids.len() >= self.cap {
                cut_top(self);
            }
        }
    }

    fn value(&mut self, id: usize, v: f32) {
        self.ids.push(id as i32);
        self.vals.push(v);
        if self.ids.len() >= self.cap {
            cut_top(self);
        }
    }
}

impl TopSink for Hist<'_> {
    fn thr(&self) -> f32 {
        self.thr
    }

    /// The groups' maxima, kept and counted at once; the threshold raised after them.
    #[inline(always)]
    unsafe fn groups<S: Simd>(&mut self, x: &[f32], starts: &[usize], _tv: S::V, base: usize) {
        self.starts.reserve(starts.len());
        self.maxima.reserve(starts.len());
        for &start in starts {
            // SAFETY: the caller guarantees `S` and that the group lies inside `x`.
            let mx = unsafe { S::hmax(load_group::<S>(x.as_ptr().add(start)).1) };
            self.starts.push((base + start) as i32);
            self.maxima.push(mx);
            self.count(mx);
        }
        self.raise();
    }

    fn value(&mut self, id: usize, v: f32) {
        self.starts.push(id as i32);
        self.maxima.push(v);
        self.count(v);
        self.raise();
    }
}

/// The kernel of [`scan_near_top`]'s first pass (`TRACK`: the running maximum raises the near
/// threshold; NaN and `+inf` are reported, `Err` with the first one's index in `x`) and of
/// [`near_top`] (the near threshold `nthr` fixed, at most `top`'s, no NaN): every vector is
/// compressed into `near` without a branch (a few percent of the lanes are near, at random: a
/// branch per vector mispredicts often), and the groups of [`GROUP`] vectors (ids from `base`)
/// holding a value at or above both `top`'s threshold and the near threshold go to `top`, as
/// do such single values of the tail. `Ok`: the running maximum (`-inf` without `TRACK`) and
/// the running maximum at the first finite near threshold (NaN when none was set).
#[inline(always)]
unsafe fn near_top_any<S: Simd, const TRACK: bool, T: TopSink>(
    x: &[f32],
    base: usize,
    mut nthr: f32,
    top: &mut T,
    near: &mut Vec<f32>,
) -> Result<(f32, f32), usize> {
    const G: usize = GROUP;
    let n = x.len();
    let p = x.as_ptr();
    // Room for a whole vector's store past the last value, reserved up front.
    near.reserve(n + S::N);
    let out = near.as_mut_ptr();
    let mut len = near.len();
    let mut run = f32::NEG_INFINITY;
    let mut first = f32::NAN;
    let mut i = 0;
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; every load covers `i + j * S::N .. + S::N` with `i + G * S::N <= n`, and the
    // tail is done lane by lane. Each `compress_store4` writes `4 * S::N` values at most from
    // `len`, which is at most the old length plus `i`, inside the capacity reserved above; only
    // the values it counts are exposed by `set_len`. The prefetches' addresses, which may lie
    // past the row, are formed with `wrapping_add` and never read (`Simd::prefetch_ahead`).
    unsafe {
        let inf = S::splat(f32::INFINITY);
        let mut nv = S::splat(nthr);
        let mut tv = S::splat(top.thr().max(nthr));
        let mut rv = S::splat(run);
        let full = n - n % (G * S::N);
        // The groups that may reach the top threshold, by start, for the current chunk.
        let mut cands = [0usize; CHUNK];
        while i < full {
            let end = full.min(i + CHUNK * G * S::N);
            let mut nc = 0;
            while i < end {
                let mut v = [S::splat(0.0); G];
                for (j, vj) in v.iter_mut().enumerate() {
                    *vj = S::load(p.add(i + j * S::N));
                }
                // The loop's body is long, so the out-of-order window holds few of its loads
                // (`fast::simd::AHEAD`). Measured on Gemma 3's rows after 64 MiB of other
                // writes, on and off alternated: the scan 6-13% faster on rows of few near
                // values, chain d's median step about 4 us faster; warm, no change.
                S::prefetch_ahead(p, i, G * S::N);
                if TRACK {
                    // NaN or +inf anywhere in the group makes the lane sums NaN or +inf (so can a
                    // finite overflow: the group is then checked value by value).
                    let sum = S::add(S::add(v[0], v[1]), S::add(v[2], v[3]));
                    if S::any(S::nlt(sum, inf)) {
                        let g = &x[i..i + G * S::N];
                        if g.iter().any(|&y| y.is_nan() || y == f32::INFINITY) {
                            near.set_len(len);
                            return Err(i + first_nan_or_inf(g));
                        }
                    }
                }
                let m = [S::ge(v[0], nv), S::ge(v[1], nv), S::ge(v[2], nv), S::ge(v[3], nv)];
                len += S::compress_store4(m, v, out.add(len));
                let mx = S::max(S::max(v[0], v[1]), S::max(v[2], v[3]));
                // Noted without a branch (the groups that reach it come at random).
                cands[nc] = i;
                nc += S::any(S::ge(mx, tv)) as usize;
                if TRACK && S::any(S::lt(rv, mx)) {
                    run = run.max(S::hmax(mx));
                    rv = S::splat(run);
                    raise(run, &mut nthr, &mut first);
                    nv = S::splat(nthr);
                    tv = S::splat(top.thr().max(nthr));
                }
                i += G * S::N;
            }
            top.groups::<S>(x, &cands[..nc], tv, base);
            // Raised once a chunk: the groups are taken in a batch, without a branch each.
            tv = S::splat(top.thr().max(nthr));
        }
        near.set_len(len);
    }
    for (j, &v) in x[i..].iter().enumerate() {
        if TRACK && (v.is_nan() || v == f32::INFINITY) {
            return Err(i + j);
        }
        if v >= nthr {
            near.push(v);
            if v >= top.thr() {
                top.value(base + i + j, v);
            }
        }
        if TRACK && v > run {
            run = v;
            raise(run, &mut nthr, &mut first);
        }
    }
    Ok((run, first))
}

/// The near threshold for a new running maximum `run`, and `first` set to `run` at the first
/// finite threshold.
fn raise(run: f32, nthr: &mut f32, first: &mut f32) {
    *nthr = near_thr(run);
    if *nthr > f32::NEG_INFINITY && first.is_nan() {
        *first = run;
    }
}

/// Values below this add nothing to llama.cpp's sum after a running maximum `run` (rounded
/// down; see [`collect`]).
fn near_thr(run: f32) -> f32 {
    f32_down(run as f64 - NEAR)
}

/// One pass over the row: into `s.near` every value that may change llama.cpp's
/// sum, in id order, and into `s.top` every value at or above a threshold that never passes
/// the row's 257th largest (nor starts above `m - NEAR`).
///
/// Why the others add nothing: llama.cpp's running sum `S` before token `i` is at least
/// `e_R = expf(R - m)` for the largest value `R` before it (terms are positive and rounding is
/// monotone), so when `e_R` is normal, half an ulp of `S` exceeds `2^-25 e_R`. A value below
/// `R - NEAR` (threshold rounded down) has `l - m` at least `17.35 - 2^-24 (|l - m| + |R - m|)`
/// below `R - m` after rounding, which for `|l - m| <= 1000` is more than
/// `ln(2^25) + 2^-21` below, so its `expf` (within `2^-23` relative) is under `2^-25 e_R`:
/// adding it leaves `S` unchanged. Further than 1000 below `m`, `expf` is zero. Each block
/// takes `R` as the largest value of the blocks before it (`-inf`, so every value, while that
/// is not within [`NORMAL`] of `m`).
fn collect(row: Row<'_>, m: f32, d: &RowScan, s: &mut TopPScratch) {
    let after = f32_down(m as f64 - NEAR);
    s.near.clear();
    reset_top(&mut s.top, after);
    let t = &mut s.top;
    let mut buf = [0f32; BLOCK];
    let mut run = f32::NEG_INFINITY;
    for (b, &mx) in d.cmax.iter().enumerate() {
        let thr = if run as f64 >= m as f64 - NORMAL { f32_down(run as f64 - NEAR) } else { f32::NEG_INFINITY };
        if thr == after && row.patches.is_empty() {
            // Every later block has the same threshold: one call for the rest of the row.
            near_top(&row.logits[b * BLOCK..], b * BLOCK, thr, t, &mut s.near);
            return;
        }
        run = run.max(mx);
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(mx >= thr) {
            continue; // nothing near, and the top threshold is at least as high
        }
        let x = row.block(b, &mut buf);
        near_top(x, b * BLOCK, thr, t, &mut s.near);
    }
}

simd_dispatch!(
    /// [`collect`] over `x` (ids from `base`): values `>= near_thr` into `near`, values
    /// `>= t.thr` into `t` (cut back to its 257 largest when it reaches `t.cap`). Requires
    /// `near_thr <= t.thr` and no NaN.
    fn near_top(x: &[f32], base: usize, near_thr: f32, t: &mut TopBuf, near: &mut Vec<f32>) -> () = near_top_k
);

#[inline(always)]
unsafe fn near_top_k<S: Simd>(x: &[f32], base: usize, near_thr: f32, t: &mut TopBuf, near: &mut Vec<f32>) {
    // SAFETY: the caller's kernel contract (`fast::simd`), passed on. (Without `TRACK` there
    // is no `Err`.)
    let _ = unsafe { near_top_any::<S, false, _>(x, base, near_thr, t, near) };
}

/// Cuts the buffer back to the values at or above its 257th largest (the new threshold). The
/// cap grows with what survives, so a row of many equal values does not cut once per group.
fn cut_top(t: &mut TopBuf) {
    t.thr = keep_top(FIRST, &mut t.ids, &mut t.vals, &mut t.sel);
    t.cap = t.cap.max(2 * t.ids.len());
}

/// Near values summed per chunk: each chunk drops what the sum so far already makes vanish.
const SUM_CHUNK: usize = 2048;

/// Past this many near values (a flat row, whose nucleus is likely wider than 256) the exact
/// sum stops as soon as it shows that the cut lies beyond the first 256 candidates.
const WIDE_CHECK: usize = 32_768;

/// A sum above which the cut surely lies beyond the first `k` candidates: llama.cpp's
/// running sum of `p_i = RN(e_i / s)` over them is at most `(1 + (k + 2) 2^-23)` times the
/// real `E / s`, `E` the sum of their `e_i` (bounded by that of the `k + 1` selected largest
/// values), so it stays below `p` for every `s` above `(1 + (k + 2) 2^-23) E / p`.
fn wide_sum(k: usize, m: f32, p: f32, s: &TopPScratch) -> f64 {
    let e: f64 = s.keys.iter().map(|&key| (s.top.vals[key as u32 as usize] - m).exp() as f64).sum();
    e * (1.0 + (k as f64 + 2.0) / 8_388_608.0) * (1.0 + 1e-12) / p as f64
}

/// llama.cpp's softmax sum (`expf(l_i - m)` added in id order in `f32`), exactly: the near
/// values of [`collect`] are every term that changes it. They were chosen against a lower
/// bound of the running sum (`expf` of the running maximum, within a factor 2 of an ulp); the
/// sum itself, once known, is a tighter one, so each chunk first drops its values below
/// [`vanish_below`] of the sum before it (about a third of them on a real model's row).
/// `None` once the running sum passes `wide_at` (the sum only grows: see [`wide_sum`]).
fn exact_sum(m: f32, wide_at: f64, s: &mut TopPScratch) -> Option<f32> {
    let mut sum = 0.0f32;
    for c in s.near.chunks(SUM_CHUNK) {
        s.xs.clear();
        s.xs.reserve(c.len() + 16);
        near_terms(c, vanish_below(sum, m), m, &mut s.xs);
        // Grown once, not cleared: `expf_exact_slice` writes every one of the first
        // `xs.len()` terms, and only those are summed.
        let n = s.xs.len();
        if s.es.len() < n {
            s.es.resize(n, 0.0);
        }
        let es = &mut s.es[..n];
        expf_exact_slice(&s.xs, es);
        sum = seq_block(es, sum, false, false, 0.0);
        if sum as f64 > wide_at {
            return None;
        }
    }
    Some(sum)
}

simd_dispatch!(
    /// Appends `v - m` for the values `v >= thr` of `x`, in order.
    fn near_terms(x: &[f32], thr: f32, m: f32, out: &mut Vec<f32>) -> () = near_terms_k
);

#[inline(always)]
unsafe fn near_terms_k<S: Simd>(x: &[f32], thr: f32, m: f32, out: &mut Vec<f32>) {
    let n = x.len();
    out.reserve(n + S::N);
    let dst = out.as_mut_ptr();
    let mut len = out.len();
    let mut i = 0;
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; every load covers `i .. i + S::N <= n`, and the tail is done lane by lane.
    // Each `compress_store` writes `S::N` values from `len`, at most the old length plus `i`,
    // inside the capacity reserved above; only the values it counts are exposed by `set_len`.
    unsafe {
        let (tv, mv) = (S::splat(thr), S::splat(m));
        while i + S::N <= n {
            let v = S::load(x.as_ptr().add(i));
            len += S::compress_store(S::ge(v, tv), S::sub(v, mv), dst.add(len));
            i += S::N;
        }
        out.set_len(len);
    }
    out.extend(x[i..].iter().filter(|&&v| v >= thr).map(|&v| v - m));
}

/// A logit below which `expf(l - m)` is surely under half an ulp of `s` (so adding it to `s`,
/// or to any later, larger sum, changes nothing); `-inf` when `s` is zero or subnormal.
fn vanish_below(s: f32, m: f32) -> f32 {
    let e = (s.to_bits() >> 23) & 0xff;
    if e == 0 || e == 0xff {
        return f32::NEG_INFINITY;
    }
    // half an ulp of s: 2^(e - 127 - 24); 0.01 of margin covers the rounding of `l - m` and
    // of expf.
    let ln_half_ulp = (e as f64 - 151.0) * std::f64::consts::LN_2;
    f32_down(m as f64 + ln_half_ulp - 0.01)
}

/// Positions first sorted for the cut (the nucleus of most confident steps is shorter).
const SHORT: usize = 33;

/// The order keys of the top buffer's values into `s.keys` (value key in the high half,
/// ascending as values descend; buffer index, so id order, in the low half). They are distinct,
/// so the smallest `len` of them are the same keys whether taken from all of them or from any
/// subset holding the smallest `len`: the cut's tries select their prefix out of them all
/// ([`sort_prefix`]), and the 257 largest alone are kept ([`keep_smallest_keys`]) only for
/// [`wide_sum`] (a selection fewer on most rows).
fn top_keys(s: &mut TopPScratch) {
    s.keys.clear();
    s.keys.extend(s.top.vals.iter().enumerate().map(|(i, &v)| (u64::from(desc_key(v)) << 32) | i as u64));
}

/// Keeps the `need` smallest of [`top_keys`]'s keys (the `need` largest values), in no order.
fn keep_smallest_keys(need: usize, s: &mut TopPScratch) {
    if s.keys.len() > need {
        s.keys.select_nth_unstable(need - 1);
        s.keys.truncate(need);
    }
}

/// Sorts the first `len` of [`top_keys`]'s keys into place (the smallest `len`, ascending:
/// values descending, ids ascending among equal values) and lists them in `s.sorted`.
fn sort_prefix(len: usize, s: &mut TopPScratch) {
    if len < s.keys.len() {
        s.keys.select_nth_unstable(len);
    }
    s.keys[..len].sort_unstable();
    let t = &s.top;
    s.sorted.clear();
    s.sorted.extend(s.keys[..len].iter().map(|&key| {
        let i = key as u32 as usize;
        TokenData { id: t.ids[i], logit: t.vals[i], p: 0.0 }
    }));
}

/// llama.cpp's first 256 sorted candidates in its own order, into `s.groups`: the buckets
/// from the top down to the one where the count reaches 256, gathered (everything above a
/// logit threshold, lowered until those buckets are wholly inside), scattered stably by
/// bucket, then sorted with llama.cpp's algorithms where equal values make the order matter.
/// False when that takes too many tokens (the full path runs).
fn llama_order(row: Row<'_>, m: f32, d: &RowScan, s: &mut TopPScratch) -> bool {
    let n = row.len();
    let nb = d.cmax.len();
    // The k-th largest block maximum is at most the k-th largest value: start at the 256th
    // largest block maximum when there are that many blocks (one gather, usually enough).
    // A real model's row often holds hundreds of tokens in the top bucket (every logit at or
    // above 10) while a few blocks hold none near the top: then start six buckets below the
    // maximum's, and widen by 8, 16, 32 ... buckets when that is not enough.
    let mut edge_bucket = if nb >= FIRST {
        let mut mx: [f32; 2048] = [f32::NEG_INFINITY; 2048];
        let take = nb.min(2048);
        mx[..take].copy_from_slice(&d.cmax[..take]);
        let mx = &mut mx[..take];
        mx.select_nth_unstable_by(FIRST - 1, |a, b| b.total_cmp(a));
        bucket_of(mx[FIRST - 1]).max(bucket_of(m).saturating_sub(6))
    } else {
        bucket_of(m)
    };
    let mut widen = 8;
    let (ib, _) = loop {
        let thr = if edge_bucket == 0 { f32::NEG_INFINITY } else { ((edge_bucket as f64 - 64.0) / 6.4 - 1e-4) as f32 };
        gather(row, thr, d, s);
        s.counts.clear();
        s.counts.resize(NBUCKETS, 0);
        for &v in &s.vals {
            s.counts[bucket_of(v)] += 1;
        }
        // Buckets >= edge_bucket are complete.
        let mut have = 0usize;
        let mut found = None;
        for j in (edge_bucket..NBUCKETS).rev() {
            let before = have;
            have += s.counts[j] as usize;
            if have >= FIRST || j == 0 {
                found = Some((j, before));
                break;
            }
        }
        if let Some(f) = found {
            break f;
        }
        if s.ids.len() > 16 * FIRST || edge_bucket == 0 {
            return false;
        }
        edge_bucket = edge_bucket.saturating_sub(widen);
        widen *= 2;
    };
    // Stable scatter of buckets >= ib, top down; std::sort above ib, partial sort at ib.
    let mut start = [0u32; NBUCKETS];
    let mut off = 0u32;
    for j in (ib..NBUCKETS).rev() {
        start[j] = off;
        off += s.counts[j];
    }
    s.groups.clear();
    s.groups.resize(off as usize, TokenData { id: 0, logit: 0.0, p: 0.0 });
    for (&id, &v) in s.ids.iter().zip(&s.vals) {
        let bk = bucket_of(v);
        if bk >= ib {
            s.groups[start[bk] as usize] = TokenData { id, logit: v, p: 0.0 };
            start[bk] += 1;
        }
    }
    let k = FIRST.min(n);
    let mut pos = 0usize;
    for j in (ib..NBUCKETS).rev() {
        // Only the first `k` positions are read (the cut lies within them): a bucket whose
        // needed positions hold distinct values is put in order without the libstdc++
        // emulation, which runs only on a bucket with equal values there.
        let cnt = s.counts[j] as usize;
        let g = &mut s.groups[pos..pos + cnt];
        s.spare.clear();
        s.spare.extend_from_slice(g);
        if !sorted_prefix_if_distinct(g, k - pos) {
            g.copy_from_slice(&s.spare);
            if j == ib {
                std_partial_sort(g, k - pos, logit_before);
            } else {
                std_sort(g, logit_before);
            }
        }
        pos += cnt;
    }
    true
}

/// The cut: llama.cpp's running f32 sum of `p = RN(e / s)` over the sorted candidates,
/// bracketed by evaluating it at `s_hi` (smallest p) and `s_lo` (largest p). `None` when the
/// bracket does not decide, or when the nucleus goes past the first `k` (llama.cpp then sorts
/// everything).
fn cut(groups: &[TokenData], k: usize, m: f32, p: f32, min_keep: usize, s_lo: f32, s_hi: f32) -> Option<usize> {
    let (mut cum_lo, mut cum_hi) = (0.0f32, 0.0f32);
    for (i, g) in groups.iter().enumerate().take(k) {
        let e = (g.logit - m).exp();
        cum_lo += e / s_hi;
        cum_hi += e / s_lo;
        let ok = i + 1 >= min_keep;
        if cum_lo >= p && ok {
            return Some(i + 1);
        }
        if cum_hi >= p && ok {
            return None;
        }
    }
    None
}

/// Collects (id, logit) of every token with logit >= `thr` into `s.ids` / `s.vals`, in id order.
fn gather(row: Row<'_>, thr: f32, d: &RowScan, s: &mut TopPScratch) {
    s.ids.clear();
    s.vals.clear();
    let mut buf = [0f32; BLOCK];
    for (b, &mx) in d.cmax.iter().enumerate() {
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(mx >= thr) {
            continue;
        }
        let x = row.block(b, &mut buf);
        if thr == f32::NEG_INFINITY {
            for (k, &v) in x.iter().enumerate() {
                s.ids.push((b * BLOCK + k) as i32);
                s.vals.push(v);
            }
        } else {
            collect_into(x, thr, b * BLOCK, &mut s.ids, &mut s.vals);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::simd::{with_level, Level};

    /// The collecting kernel at every level this CPU runs: `near` holds exactly the values at
    /// or above the near threshold, in id order (vector groups and the tail), and the top
    /// buffer every value at or above its final threshold, with at least 257 of them; the
    /// exact sum's filter keeps exactly the values at or above its threshold.
    #[test]
    fn near_top_collects_exactly() {
        let mut x = 12_345u32;
        let row: Vec<f32> = (0..5000 + 37)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                ((x >> 8) % 20_000) as f32 / 1000.0 - 10.0
            })
            .collect();
        for level in Level::all() {
            if !level.is_supported() {
                continue;
            }
            for near_thr in [f32::NEG_INFINITY, -3.0, 6.0, 8.5] {
                let mut t = TopBuf { thr: near_thr.max(-5.0), cap: 4 * (FIRST + 1), ..TopBuf::default() };
                let mut near = vec![1.0f32; 3];
                with_level(level, || near_top(&row, 100, near_thr, &mut t, &mut near)).unwrap();
                let want: Vec<f32> = row.iter().copied().filter(|&v| v >= near_thr).collect();
                assert_eq!(&near[..3], &[1.0; 3], "{level:?}");
                assert_eq!(near[3..], want[..], "{level:?} {near_thr}");
                let top: Vec<(i32, f32)> =
                    row.iter().enumerate().filter(|&(_, &v)| v >= t.thr).map(|(i, &v)| (100 + i as i32, v)).collect();
                let got: Vec<(i32, f32)> = t.ids.iter().copied().zip(t.vals.iter().copied()).collect();
                assert_eq!(got, top, "{level:?} {near_thr}");
                assert!(got.len() > FIRST, "{level:?} {near_thr}");
                // The exact sum's filter: `v - m` of the values at or above a threshold.
                let mut terms = vec![7.0f32];
                with_level(level, || near_terms(&row, near_thr, 9.5, &mut terms)).unwrap();
                let want: Vec<f32> = row.iter().filter(|&&v| v >= near_thr).map(|&v| v - 9.5).collect();
                assert_eq!(terms[0], 7.0, "{level:?}");
                assert_eq!(terms[1..], want[..], "{level:?} {near_thr}");
            }
        }
    }

    /// The unpatched row's scan at every level this CPU runs, on rows of many and of few near
    /// values, of many equal values, with and without a tail: `near` holds exactly the values
    /// at or above the near threshold of the running maximum of the groups before them (of
    /// the values before them in the tail), and the top buffer exactly the values at or above
    /// its threshold, in id order; that threshold lies between `m - NEAR` (rounded down) and
    /// the row's 257th largest value, or the buffer holds fewer than 257 values.
    #[test]
    fn scan_near_top_collects_exactly() {
        let mut x = 4242u32;
        let mut next = move || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            x >> 8
        };
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for (n, spread, levels) in [(5000 + 37, 20.0f32, 1 << 20), (70_001, 200.0, 1 << 20), (4096, 1.0, 5)] {
            rows.push((0..n).map(|_| (next() % levels) as f32 / levels as f32 * spread - spread / 2.0).collect());
        }
        // The maximum late in the row, far above the rest: the early groups' thresholds are low.
        let mut late = rows[0].clone();
        late[4990] = 40.0;
        rows.push(late);
        // Every value in two buckets of the histogram threshold (an eighth of a nat): its
        // threshold cannot rise past 0, and the exact cut of the kept groups must run.
        rows.push((0..100_000).map(|_| (next() % (1 << 20)) as f32 / (1 << 20) as f32 * 0.1 - 0.05).collect());
        // One value a group on bucket edges, two groups a bucket: the histogram threshold is
        // the 257th largest value itself (a threshold raised one bucket too far drops it).
        let mut edges = vec![-100.0f32; 64 * 600];
        for g in 0..600 {
            edges[64 * g + (next() % 64) as usize] = ((g * 7) % 300) as f32 / 8.0;
        }
        rows.push(edges);
        for (r, row) in rows.iter().enumerate() {
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sorted = row.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            for (level, lanes) in [(Level::Avx512, 16), (Level::Avx2, 8), (Level::Neon, 4), (Level::Scalar, 1)] {
                if !level.is_supported() {
                    continue;
                }
                let (mut t, mut near) = (TopBuf::default(), Vec::new());
                let got = with_level(level, || scan_near_top(row, &mut t, &mut near)).unwrap().unwrap();
                assert_eq!(got.0, m, "{level:?}");
                let top: Vec<(i32, f32)> =
                    row.iter().enumerate().filter(|&(_, &v)| v >= t.thr).map(|(i, &v)| (i as i32, v)).collect();
                let have: Vec<(i32, f32)> = t.ids.iter().copied().zip(t.vals.iter().copied()).collect();
                assert_eq!(have, top, "{level:?} n {}", row.len());
                if r == rows.len() - 2 {
                    // (Without the exact cut: every value at or above 0, about 50,000.)
                    assert!(have.len() < 4 * FIRST, "{level:?} {}", have.len());
                }
                let after = near_thr(m);
                assert!(t.thr >= after, "{level:?}");
                if sorted[FIRST] >= after {
                    assert!(t.thr <= sorted[FIRST], "{level:?} {} {}", t.thr, sorted[FIRST]);
                    if r == rows.len() - 1 {
                        assert_eq!(t.thr, sorted[FIRST], "{level:?}");
                    }
                } else {
                    assert!(have.len() <= FIRST, "{level:?}");
                }
                let gl = GROUP * lanes;
                let full_end = row.len() - row.len() % gl;
                let mut run = f32::NEG_INFINITY;
                let mut want = Vec::new();
                for g in row[..full_end].chunks(gl) {
                    want.extend(g.iter().filter(|&&v| v >= near_thr(run)));
                    run = g.iter().copied().fold(run, f32::max);
                }
                for &v in &row[full_end..] {
                    if v >= near_thr(run) {
                        want.push(v);
                    }
                    run = run.max(v);
                }
                assert_eq!(near, want, "{level:?} n {}", row.len());
            }
        }
    }

    /// Every value of a histogram bucket is at or above the bucket's edge (the threshold's
    /// soundness) and, away from the end buckets, below the next edge; the end buckets take
    /// everything beyond, infinities included.
    #[test]
    fn hist_buckets_hold_values_at_or_above_their_edge() {
        let mut x = 31u32;
        let mut vals = vec![f32::NEG_INFINITY, f32::INFINITY, f32::MIN, f32::MAX, 0.0, -0.0, 63.875, -64.0, -64.125];
        vals.extend((-700..700).map(|i| i as f32 / 8.0));
        for _ in 0..100_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            vals.push(f32::from_bits(x) % 200.0);
        }
        for &v in vals.iter().filter(|v| !v.is_nan()) {
            let b = hist_bucket(v);
            assert!(b < HIST_BUCKETS && v >= hist_edge(b), "{v} {b}");
            if b + 1 < HIST_BUCKETS {
                assert!(v < hist_edge(b + 1), "{v} {b}");
            }
        }
        assert_eq!((hist_bucket(0.0), hist_bucket(-0.125), hist_bucket(63.875)), (512, 511, 1023));
    }

    /// The exact sum is llama.cpp's (`expf(l - m)` added in id order in `f32`) when its chunks
    /// keep fewer terms than an earlier one did (the first keeps every near value, later ones
    /// drop those that vanish against the sum so far): only each chunk's own terms are added,
    /// never one left from a longer chunk in the reused buffer.
    #[test]
    fn exact_sum_adds_only_each_chunks_terms() {
        let mut x = 4242u32;
        let mut unif = move || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((x >> 8) & 0xffff) as f32 / 65_536.0
        };
        for (n, spread) in [(20_000, 18.0f32), (50_000, 12.0), (9_000, 25.0)] {
            let row: Vec<f32> = (0..n).map(|_| spread * unif()).collect();
            let r = Row { logits: &row, patches: &[] };
            let (mut d, mut s) = (RowScan::default(), TopPScratch::default());
            let m = scan(r, &mut d, &mut s).unwrap();
            assert!(s.near.len() > 2 * SUM_CHUNK, "{n} {spread}");
            let want = row.iter().fold(0.0f32, |acc, &l| acc + (l - m).exp());
            assert_eq!(exact_sum(m, f64::INFINITY, &mut s).unwrap().to_bits(), want.to_bits(), "{n} {spread}");
        }
    }

    /// The exact sum stops early only on rows whose cut lies beyond the first 256 candidates
    /// (flat rows of many near values), and not on a confident one with as many near values.
    #[test]
    fn wide_exit_only_when_the_cut_is_beyond() {
        let mut x = 777u32;
        let mut unif = move || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((x >> 8) & 0xffff) as f32 / 65_536.0
        };
        for (n, spread, spike, want_exit) in
            [(100_000, 3.0f32, 0.0f32, true), (100_000, 8.0, 0.0, true), (300_000, 20.0, 15.0, false)]
        {
            let mut row: Vec<f32> = (0..n).map(|_| spread * unif()).collect();
            row[n / 2] = spread + spike;
            let r = Row { logits: &row, patches: &[] };
            let (mut d, mut s) = (RowScan::default(), TopPScratch::default());
            let m = scan(r, &mut d, &mut s).unwrap();
            assert!(s.near.len() > WIDE_CHECK && s.top.ids.len() > FIRST, "{n} {spread}");
            top_keys(&mut s);
            keep_smallest_keys(FIRST + 1, &mut s);
            let full = exact_sum(m, f64::INFINITY, &mut s).unwrap();
            let exited = exact_sum(m, wide_sum(FIRST, m, 0.95, &s), &mut s).is_none();
            assert_eq!(exited, want_exit, "spread {spread} spike {spike}");
            sort_prefix(FIRST + 1, &mut s);
            let reached = cut(&s.sorted, FIRST, m, 0.95, 1, full, full).is_some();
            assert_eq!(reached, !want_exit, "spread {spread} spike {spike}");
        }
    }
}
