//! mirostat v2's cut straight from a logits row: the kept prefix (exact ids, values and
//! llama.cpp's tie order) without sorting the vocabulary.
//!
//! llama.cpp sorts every candidate, normalises by `s1` (a sequential `f32` sum of
//! `e_i = expf(v_i - max)` in sorted order) and keeps the sorted prefix whose surprise
//! `-log2f(e_i / s1)` is at most `mu`. The first term of that sum is `expf(0) = 1`, so every
//! later term below `2^-24` (half an ulp of 1) leaves the running sum unchanged: only the
//! tokens within `ln 2^24 = 16.6` of the maximum matter. When they are few (a confident
//! step), they are gathered, their exact terms sorted and summed as llama.cpp does, which gives
//! `s1` and the kept count exactly. The kept tokens lie in the top buckets of llama.cpp's
//! bucket sort; only those buckets are sorted, with its algorithms, in id order, which gives
//! its tie order. The rest of the sampler (second softmax, draw, `mu` update) then runs
//! unchanged on that prefix.
//!
//! When the kept prefix is long (once `mu` has grown, mirostat keeps most of a real row: both
//! sides then sort ~200,000 candidates, with ties), or when equal values fall inside it, the
//! prefix is built from values alone ([`Miro::Values`]): everything after the sort (both
//! softmaxes, the draw, the surprise of the drawn token and so the new `mu`) reads the sorted
//! candidates only through their values, which are the same for every order sorted by value,
//! so the kept values are radix-sorted without their ids and the sampler finishes on them;
//! then [`id_at`] reads the selected index's id off the row — the one token with that value,
//! or, when it is tied, the id llama.cpp's sort of that one bucket puts there. Otherwise (no
//! bound decides) the caller runs the full path; nothing has been consumed yet.
//!
//! When the kept set is that large and also holds every term of `s1` (`e* <= 2^-24`), nothing
//! is sorted ([`Miro::Bounded`]): the second softmax's sum `s2` is then `s1` (the kept prefix
//! starts with every term that moves the sum, the rest leave it unchanged), each kept token's
//! weight `p = RN(e / s2)` comes from its exact `e`, and one pass bins the kept tokens by the
//! top bits of `p` with each bin's count and exact mass ([`mass_bins`]). `p` does not decrease
//! with the value, so the bins are consecutive runs of llama.cpp's sorted prefix, and the draw
//! (libstdc++'s `discrete_distribution`: an `f64` sum of the weights, then the first running
//! sum of `weight / sum` that reaches `u`) depends on the order only through the sorted
//! sequence of weights. The bins locate the crossing of `u`; only that bin's tokens are
//! gathered, sorted by value and walked, with a rigorous bound on libstdc++'s `f64` rounding
//! ([`pick`]); a `u` within that bound of a boundary takes the literal replay over the value
//! path's sorted prefix. The drawn value gives `mu`'s update and, read off the row, the id.
//!
//! Binning every kept token needs its exact weight (an exact `expf` and a division per token,
//! and a scatter). When the terms of `s1` were gathered, the step first tries without
//! ([`top_tier`]): only the gathered top tokens are binned, exactly; the others (the tail) are
//! counted exactly from their logits and their mass bracketed through a cheap `exp` with a
//! proven bound, which brackets the total the draw divides by. On a confident row the tail
//! holds a tiny share of the mass, so `u` almost always lands among the top tokens and is
//! decided there ([`pick_top`]); otherwise the whole kept set is binned as above.

use crate::candidates::{Candidates, TokenData};
use crate::fast::bounds::{grid_chunk, seq_block};
use crate::fast::expf::{exp_bound, expf_exact_slice, BOUND_DIV, BOUND_MUL, EXP_CUT};
use crate::fast::row::collect_into;
use crate::fast::row::{Row, TierCounts, BLOCK};
use crate::fast::simd::{first_nan_or_inf, max_scan_tail, simd_dispatch, MaxScan, Simd};
use crate::fast::value_sort::{desc_key, key_value, radix_sort};
use crate::rng::discrete_pick_at;
use crate::sort::{
    bucket_of, bucket_order_follows_values, logit_before, sorted_prefix_if_distinct, std_partial_sort, std_sort,
    NBUCKETS,
};

/// Up to this many tokens are gathered for the sum; beyond it every token's term is used.
/// Gemma 3 rows where the model is unsure gather 33,000 to 72,000: gathered and radix-sorted
/// they cost 0.3-0.6 ms a step, against 1.4-2.2 ms through every token's term (real_rows f,
/// the p90).
const MAX_GATHER: usize = 1 << 17;

/// Up to this many gathered terms are sorted for `s1`; more are summed by
/// [`radix_sorted_sum`].
const SORT_SUM_UP_TO: usize = 2048;

/// Kept prefixes longer than this are built from values alone ([`Miro::Values`]).
const VALUES_FROM: usize = 1024;

/// Per-block scan results.
#[derive(Clone, Copy, Debug, Default)]
struct Block {
    max: f32,
    min: f32,
}

/// Reusable buffers.
#[derive(Clone, Debug, Default)]
pub(crate) struct MiroScratch {
    blocks: Vec<Block>,
    ids: Vec<i32>,
    vals: Vec<f32>,
    xs: Vec<f32>,
    es: Vec<f32>,
    keys: Vec<u32>,
    tmp: Vec<u32>,
    groups: Vec<TokenData>,
    spare: Vec<TokenData>,
    counts: Vec<u32>,
    /// Radix histograms of the value path.
    radix: Vec<u32>,
    /// What [`id_at`] needs from the last [`Miro::Values`] step: the temperature, the row's
    /// largest logit, the lowest non-empty bucket, and the sorted kept values' keys.
    val_t: Option<f32>,
    val_lmax: f32,
    val_low: usize,
    /// The last [`Miro::Bounded`] step's kept prefix, described by value ranges.
    bins: Bins,
    /// (desc_key, p bits) of the crossing bin's tokens, sorted.
    walk: Vec<u64>,
    /// The last [`top_tier`] step's top tokens as mass bins, and the bounds on the rest.
    top: Top,
    /// The last row's length and smallest logit (see [`all_kept_tail`]).
    n: usize,
    lmin: f32,
    /// The blocks that held the last row's largest maxima: [`scan_gather`] reads them first.
    probes: Vec<u32>,
}

/// A [`Miro::Bounded`] step prepared by [`top_tier`]: the gathered top tokens (`s.vals`, with
/// their exact terms in `s.es`) as mass bins, and a bracket on the kept mass of the others.
#[derive(Clone, Debug, Default)]
struct Top {
    /// The draw may try [`pick_top`] (the scratch still holds what it reads).
    ready: bool,
    /// The gathered tokens' bins (`e_star`, `s2`, `m` as [`MiroScratch::bins`]').
    bins: Bins,
    /// The exact sum of the kept `p` is in `[w_lo, w_hi]`.
    w_lo: f64,
    w_hi: f64,
    /// `[w_lo, w_hi]` comes from the tail's count alone ([`tail_count`]); [`tail_terms`]
    /// can narrow it.
    crude: bool,
    /// The exact mass of the gathered tokens' bins (to within `(nbins + 2)` ulps), and the
    /// gather threshold the tail lies under.
    w_top: f64,
    thr_g: f32,
}

/// The kept prefix of a [`Miro::Bounded`] step as mass bins: bin `k` holds the kept tokens
/// whose `p = RN(e / s2)` has bits `>> BIN_SHIFT` equal to `top - k` (so bin 0 holds the
/// largest `p`, and the bins follow llama.cpp's sorted order), with their count and the `f64`
/// sum of their `p`.
#[derive(Clone, Debug, Default)]
struct Bins {
    /// Per bin: count << [`CNT_SHIFT`] plus the sum of the bits of `p` under [`BIN_SHIFT`].
    hist: Vec<u64>,
    /// Per bin: the exact mass (to within one rounding) and count.
    mass: Vec<f64>,
    cnt: Vec<u32>,
    top: u32,
    /// Kept tokens.
    n: usize,
    /// The second softmax's sum (equal to `s1`).
    s2: f32,
    /// The smallest kept term `e*` and the max value `m`.
    e_star: f32,
    m: f32,
    /// Every kept token's logit is at least this.
    thr: f32,
}

/// Bins of [`Bins`]: the bits of `p` from here up (so 5 mantissa bits: a relative width of
/// 2^-5). Wider bins than 2^-7 made the histogram smaller and the step ~5% faster.
const BIN_SHIFT: u32 = 18;

/// The bits of `p` below a bin's.
const LOW_MASK: u32 = (1 << BIN_SHIFT) - 1;

/// `2^-24`: terms below it never move a running `f32` sum that is at least 1.
const HALF_ULP_ONE: f32 = 5.960_464_5e-8;

/// Rows this long or longer never take [`Miro::Bounded`] (see [`CNT_SHIFT`]).
const BOUNDED_MAX_LEN: usize = 1 << 22;

/// When more than this many tokens pass the kept set's gather threshold and every term the
/// sums see is kept, the draw is decided from mass bins ([`Miro::Bounded`]).
const BOUNDED_FROM: usize = 4096;

/// How often the prefix was built here / left to the full path / built from values,
/// process-wide.
static TIERS: TierCounts<7> = TierCounts::new();

/// `[prefix built (any way), full path, of which from values, of which drawn from mass bins,
/// of which bins could not decide (literal replay), of which decided among the top tokens
/// without binning the whole kept set, of those decided with the tail's mass bracketed from
/// its count alone]` so far in this process.
pub(crate) fn tier_counts() -> [u64; 7] {
    TIERS.get()
}

/// Outcome of [`mirostat_prefix`].
pub(crate) enum Miro {
    /// NaN or `+inf` at this index.
    Bad(usize),
    /// Not decided here: run the full path.
    Full,
    /// `out` holds the kept prefix (sorted, at least one token).
    Prefix,
    /// `out` holds the kept prefix's values in llama.cpp's order with ids not filled in
    /// (`-1`), and their second softmax: finish the sampler on it
    /// (`MirostatV2::finish_normalized`), then read the selected index's id with [`id_at`].
    Values,
    /// The kept prefix (`n >= 2` tokens, at most [`bounded_len`]) is described by mass bins in the
    /// scratch, `out` untouched: draw with [`pick`] inside `MirostatV2::draw_with`, then read
    /// the selected token's id with [`id_of_value`].
    Bounded,
}

simd_dispatch!(
    /// (max, min, has NaN or +inf) over one block.
    fn block_scan_t(x: &[f32]) -> (f32, f32, bool) = block_scan_t_k
);

#[inline(always)]
unsafe fn block_scan_t_k<S: Simd>(x: &[f32]) -> (f32, f32, bool) {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let p = x.as_ptr();
        let zero = S::splat(0.0);
        let mut ms = MaxScan::<S>::new();
        // The minimum lane-wise with `min` (one operation a vector, where `-max(0 - x)` took
        // two), negated only once at the end: for a block without NaN (otherwise it is not
        // used) `0 - min(x) = max(0 - x)` exactly, zeros included (`0 - (+-0) = +0`), so the
        // result is bit for bit the former one.
        let (mut mn0, mut mn1) = (S::splat(f32::INFINITY), S::splat(f32::INFINITY));
        let mut i = 0;
        while i + 2 * S::N <= n {
            let a = S::load(p.add(i));
            let b = S::load(p.add(i + S::N));
            ms.push(a, b);
            mn0 = S::min(mn0, a);
            mn1 = S::min(mn1, b);
            i += 2 * S::N;
        }
        let (mut hi, mut badt) = ms.finish();
        let mut lo = -S::hmax(S::sub(zero, S::min(mn0, mn1)));
        for &v in &x[i..] {
            max_scan_tail(v, &mut hi, &mut badt);
            if v < lo {
                lo = v;
            }
        }
        (hi, lo, badt)
    }
}

/// What [`scan_gather`] found.
struct Scanned {
    /// The row's largest logit (after the sparse samplers' patches).
    lmax: f32,
    /// `s.vals` holds exactly the logits at or above [`gather_thr`]`(lmax, t)`, in id order
    /// (false: more than [`MAX_GATHER`] passed a running threshold on the way, and `s.vals`
    /// holds nothing useful).
    gathered: bool,
}

/// The gather threshold of step 2 for a row whose largest logit is `lmax`: every logit whose
/// term `expf(l / t - m)` can move `s1` is at or above it. It does not decrease as `lmax`
/// grows (each operation is monotone: the division by `t > 0`, the subtraction, the product
/// with `t`, the margin `(|l| + 1) 1e-5` that grows slower than `l`, the rounding to `f32`
/// and the `min`), which is what lets [`scan_gather`] gather at a running maximum's
/// threshold.
fn gather_thr(lmax: f32, t: Option<f32>) -> f32 {
    l_of(scaled(lmax, t) as f64 - 16.7, t, lmax)
}

/// Step 1 and step 2's gather in one pass over the row: each block's extremes into
/// `s.blocks` (`s.n`, `s.lmin` set), and, while the block is in L1, its logits at or above
/// [`gather_thr`] of the largest logit seen so far into `s.vals` (ids not kept). That
/// threshold only rises, so what is gathered is a superset of the final threshold's set, cut
/// down to it at the end. A running maximum far under the row's own would gather many tokens
/// that are then dropped (on Gemma 3 rows whose maximum sits near the end, ten times as many),
/// so the [`PROBES`] blocks that held the last row's largest maxima are read first:
/// consecutive rows of a generation tend to peak in the same few places, and any block's
/// maximum is a valid start. `Err(i)`: the logit at index `i` is NaN or `+inf`.
///
/// Why one pass: a scan followed by a separate gather reads the row twice, and the second read
/// (from L2 or L3 once the caller's work has run) cost as much as the first.
fn scan_gather(row: Row<'_>, t: Option<f32>, s: &mut MiroScratch) -> Result<Scanned, usize> {
    let n = row.len();
    let nb = n.div_ceil(BLOCK);
    s.blocks.clear();
    s.ids.clear();
    s.vals.clear();
    s.n = n;
    let mut buf = [0f32; BLOCK];
    let mut kept = [0f32; BLOCK + 16];
    // The running maximum starts at the probe blocks' (one holding a NaN or `+inf` is passed
    // over: the pass below finds it).
    let mut run = f32::NEG_INFINITY;
    for &p in &s.probes {
        if (p as usize) < nb {
            let (hi, _, bad) = block_scan_t(row.block(p as usize, &mut buf));
            if !bad && hi > run {
                run = hi;
            }
        }
    }
    let mut thr = gather_thr(run, t);
    // The largest threshold used; `s.vals[..stale]` was gathered under a lower one than the
    // last; whether the gather is still going.
    let mut used: Option<f32> = None;
    let mut stale = 0usize;
    let mut gathering = true;
    let mut lmax = f32::NEG_INFINITY;
    let mut lmin = f32::INFINITY;
    for b in 0..nb {
        let raw = &row.logits[b * BLOCK..((b + 1) * BLOCK).min(n)];
        let ahead = row.logits.get((b + 2) * BLOCK..((b + 3) * BLOCK).min(n)).unwrap_or(&[]);
        // Groups are marked against the threshold so far: the block's own maximum can only
        // raise it, so they hold every value at or above the one the block is cut at.
        let mut h = scan_hits(raw, thr, ahead);
        let x = row.block(b, &mut buf);
        let patched = x.as_ptr() != raw.as_ptr();
        // A NaN in a whole group of `raw` is found below, when its marked groups are
        // compressed; a block read through patches, or one not compressed, is checked whole.
        if h.bad || ((patched || !gathering) && block_scan_t(raw).2) {
            return Err(b * BLOCK + first_nan_or_inf(raw));
        }
        if patched {
            h = scan_hits(x, thr, &[]);
        }
        if h.max > lmax {
            lmax = h.max;
        }
        if h.min < lmin {
            lmin = h.min;
        }
        s.blocks.push(Block { max: h.max, min: h.min });
        if h.max > run {
            run = h.max;
            thr = gather_thr(run, t);
            stale = s.vals.len();
        }
        if !gathering || (h.hits == 0 && !h.rest) {
            continue;
        }
        used = Some(used.map_or(thr, |u| u.max(thr)));
        let (k, bad) = compress_hits(x, h.hits, h.rest, thr, &mut kept);
        if bad {
            return Err(b * BLOCK + first_nan_or_inf(raw));
        }
        s.vals.extend_from_slice(&kept[..k]);
        if s.vals.len() > MAX_GATHER {
            cut_prefix(&mut s.vals, stale, thr);
            stale = 0;
            gathering = s.vals.len() <= MAX_GATHER;
        }
    }
    s.lmin = lmin;
    top_blocks(&s.blocks, &mut s.probes);
    let thr_g = gather_thr(lmax, t);
    // Every threshold used is at most `thr_g` (they are the running maximum's, and `run` ends
    // at `lmax`); anything else would have missed tokens, so it is checked, not assumed.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !gathering || used.is_some_and(|u| !(u <= thr_g)) {
        return Ok(Scanned { lmax, gathered: false });
    }
    // Past `stale` every value was gathered at the last threshold, which is `thr_g` (the
    // running maximum ends at `lmax`); should it differ, every value is filtered.
    let end = if thr == thr_g { stale } else { s.vals.len() };
    cut_prefix(&mut s.vals, end, thr_g);
    Ok(Scanned { lmax, gathered: s.vals.len() <= MAX_GATHER })
}

/// How many blocks [`scan_gather`] reads before the pass: consecutive rows of a generation
/// tend to peak in the same few places, but not always the same one (on Gemma 3 rows, one
/// block gave a good start on most rows and missed by several logits on about one in six).
const PROBES: usize = 8;

/// The indices of the [`PROBES`] blocks with the largest maxima (fewer for a shorter row), into
/// `out`.
fn top_blocks(blocks: &[Block], out: &mut Vec<u32>) {
    out.clear();
    let mut best = [(f32::NEG_INFINITY, u32::MAX); PROBES];
    for (i, b) in blocks.iter().enumerate() {
        if b.max > best[PROBES - 1].0 {
            let mut j = PROBES - 1;
            while j > 0 && b.max > best[j - 1].0 {
                best[j] = best[j - 1];
                j -= 1;
            }
            best[j] = (b.max, i as u32);
        }
    }
    out.extend(best.iter().filter(|b| b.1 != u32::MAX).map(|b| b.1));
}

/// Drops the values under `thr` from `vals[..end]`, keeping the order (the values from `end`
/// on are kept and follow). Branch-free: the values dropped come in no predictable pattern.
fn cut_prefix(vals: &mut Vec<f32>, end: usize, thr: f32) {
    let mut w = 0;
    for r in 0..end {
        let v = vals[r];
        vals[w] = v;
        w += usize::from(v >= thr);
    }
    if w < end {
        vals.copy_within(end.., w);
        vals.truncate(vals.len() - (end - w));
    }
}

/// Values per [`scan_hits`] hit bit (a whole number of vectors at every level): one AVX-512
/// vector. Groups of four vectors (as [`compact_ge`] marks) left about four compressions for
/// each value gathered on Gemma 3 rows, whose gathered values are few and spread out.
const GROUP: usize = 16;

const _: () = assert!(BLOCK / GROUP <= 64, "a hit bit per group in a u64");

/// What [`scan_hits`] found over one block.
#[derive(Clone, Copy, Debug)]
struct BlockHits {
    max: f32,
    min: f32,
    /// A `+inf` is in the block, or a NaN past its last whole group (`max` and `min` are then
    /// meaningless). A NaN inside a whole group marks that group instead, and
    /// [`compress_hits`] reports it.
    bad: bool,
    /// Bit `g`: the group of [`GROUP`] values from `g * GROUP` has a value `>= thr` or a NaN.
    hits: u64,
    /// A value past the last whole group is `>= thr`.
    rest: bool,
}

simd_dispatch!(
    /// One block's extremes ([`block_scan_t`]'s), and which of its groups of [`GROUP`] values
    /// reach `thr` or hold a NaN, in the same pass. The NaN check rides on the group marks (an
    /// unordered compare is true for NaN), so it costs nothing here; a `+inf` shows as the
    /// maximum. `ahead`: a slice to prefetch (the block after next: once the core's caches have
    /// been evicted, the hardware prefetchers alone leave this loop waiting on the row).
    fn scan_hits(x: &[f32], thr: f32, ahead: &[f32]) -> BlockHits = scan_hits_k
);

#[inline(always)]
unsafe fn scan_hits_k<S: Simd>(x: &[f32], thr: f32, ahead: &[f32]) -> BlockHits {
    debug_assert!(x.len() <= BLOCK);
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; every load covers `k * GROUP + j .. + S::N` for a group `k < groups` and `j +
    // S::N <= GROUP` (`GROUP` a multiple of `S::N`), inside `x` since `groups * GROUP <=
    // x.len()`; the values past the whole groups are read by index. Prefetches read nothing
    // the program sees.
    unsafe {
        for line in (0..ahead.len()).step_by(crate::fast::simd::LINE) {
            S::prefetch(ahead.as_ptr().add(line));
        }
        let inf = S::splat(f32::INFINITY);
        let tv = S::splat(thr);
        let zero = S::splat(0.0);
        let (mut mx0, mut mx1) = (S::splat(f32::NEG_INFINITY), S::splat(f32::NEG_INFINITY));
        let (mut mn0, mut mn1) = (inf, inf);
        let mut hits = 0u64;
        let groups = x.len() / GROUP;
        let p = x.as_ptr();
        let mut g = 0;
        // Two groups at a time, one chain of extremes each.
        while g + 2 <= groups {
            let (mut h0, mut h1) = (S::none(), S::none());
            let mut j = 0;
            while j < GROUP {
                let a = S::load(p.add(g * GROUP + j));
                let b = S::load(p.add((g + 1) * GROUP + j));
                mx0 = S::max(mx0, a);
                mx1 = S::max(mx1, b);
                mn0 = S::min(mn0, a);
                mn1 = S::min(mn1, b);
                h0 = S::or_m(h0, S::nlt(a, tv));
                h1 = S::or_m(h1, S::nlt(b, tv));
                j += S::N;
            }
            hits |= (u64::from(S::any(h0)) | (u64::from(S::any(h1)) << 1)) << g;
            g += 2;
        }
        if g < groups {
            let mut h = S::none();
            let mut j = 0;
            while j < GROUP {
                let a = S::load(p.add(g * GROUP + j));
                mx0 = S::max(mx0, a);
                mn0 = S::min(mn0, a);
                h = S::or_m(h, S::nlt(a, tv));
                j += S::N;
            }
            hits |= u64::from(S::any(h)) << g;
        }
        let mut hi = S::hmax(S::max(mx0, mx1));
        let mut lo = -S::hmax(S::sub(zero, S::min(mn0, mn1)));
        // A `+inf` in a whole group is the maximum of its lane's chain unless a NaN follows
        // it there (then the NaN's group is marked, and reported by `compress_hits`).
        let mut badt = hi == f32::INFINITY;
        let mut rest = false;
        for &v in &x[groups * GROUP..] {
            max_scan_tail(v, &mut hi, &mut badt);
            if v < lo {
                lo = v;
            }
            rest |= v >= thr;
        }
        BlockHits { max: hi, min: lo, bad: badt, hits, rest }
    }
}

simd_dispatch!(
    /// The values `>= thr` of the groups of `x` (one block) marked in `hits`, and of the values
    /// past its last whole group when `rest` (as [`scan_hits`] marks them), to the front of
    /// `out` in order; returns how many, and whether one of the marked groups holds a NaN or
    /// `+inf`.
    fn compress_hits(x: &[f32], hits: u64, rest: bool, thr: f32, out: &mut [f32; BLOCK + 16]) -> (usize, bool) = compress_hits_k
);

#[inline(always)]
unsafe fn compress_hits_k<S: Simd>(
    x: &[f32],
    hits: u64,
    rest: bool,
    thr: f32,
    out: &mut [f32; BLOCK + 16],
) -> (usize, bool) {
    assert!(x.len() <= BLOCK);
    let groups = x.len() / GROUP;
    // Only bits of whole groups (`scan_hits` sets no other).
    let mut hits = hits & u64::MAX.checked_shr(64 - groups as u32).unwrap_or(0);
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports. Loads cover whole groups inside `x` (`g < groups`). Groups go in increasing
    // order and each value is written at most once, so a store of `S::N` lanes at `w` (`w <=`
    // the index of the vector's first value, at most `BLOCK - S::N`) stays inside `out`.
    unsafe {
        let (tv, inf) = (S::splat(thr), S::splat(f32::INFINITY));
        let mut bad = S::none();
        let mut w = 0usize;
        while hits != 0 {
            let g = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            let p = x.as_ptr().add(g * GROUP);
            let mut j = 0;
            while j < GROUP {
                let v = S::load(p.add(j));
                bad = S::or_m(bad, S::nlt(v, inf));
                w += S::compress_store(S::ge(v, tv), v, out.as_mut_ptr().add(w));
                j += S::N;
            }
        }
        if rest {
            for &v in &x[groups * GROUP..] {
                out[w] = v;
                w += usize::from(v >= thr);
            }
        }
        (w, S::any(bad))
    }
}

/// llama.cpp's value after temperature `t` (`None`: no temperature).
#[inline]
fn scaled(l: f32, t: Option<f32>) -> f32 {
    match t {
        Some(t) => l / t,
        None => l,
    }
}

/// Builds mirostat v2's kept prefix for `row` (values after the sparse samplers) with
/// temperature `t` and the current `mu`, into `out` (sorted, p not yet computed).
pub(crate) fn mirostat_prefix(
    row: Row<'_>,
    t: Option<f32>,
    mu: f32,
    s: &mut MiroScratch,
    out: &mut Candidates,
) -> Miro {
    let r = prefix(row, t, mu, s, out);
    match r {
        Miro::Prefix => TIERS.bump(0),
        Miro::Values => {
            TIERS.bump(0);
            TIERS.bump(2);
        }
        Miro::Bounded => {
            TIERS.bump(0);
            TIERS.bump(3);
        }
        Miro::Full => TIERS.bump(1),
        Miro::Bad(_) => {}
    }
    r
}

fn prefix(row: Row<'_>, t: Option<f32>, mu: f32, s: &mut MiroScratch, out: &mut Candidates) -> Miro {
    let n = row.len();
    if !mu.is_finite() {
        return Miro::Full;
    }
    // 1. One pass: per-block extremes (the values after temperature are monotone in the
    // logits), and the logits that may move `s1` (step 2).
    let Scanned { lmax, gathered: ok } = match scan_gather(row, t, s) {
        Ok(r) => r,
        Err(i) => return Miro::Bad(i),
    };
    if lmax == f32::NEG_INFINITY {
        return Miro::Full;
    }
    let m = scaled(lmax, t); // division by t > 0 is monotone: the maximum value
    if !m.is_finite() {
        // A tiny temperature overflowed the maximum to inf: the terms below would be NaN, not
        // in [0, 1] as the sorted sum needs (found by fuzzing). Let the full path decide.
        return Miro::Full;
    }
    if !bucket_order_follows_values(m) {
        return Miro::Full;
    }
    let lmin = s.lmin;

    // 2. s1 exactly. Sorted descending, the first term is expf(0) = 1, so the running sum is
    // at least 1 from then on and every term below 2^-24 (half an ulp of 1) leaves it
    // unchanged: only the tokens with e >= 2^-24 (v - m >= ln 2^-24 = -16.64) move it. When
    // they are few, the scan gathered them; otherwise take every token. Sort the exact terms
    // and replay the f32 sum.
    let mf = m as f64;
    let thr_g = gather_thr(lmax, t);
    // Whether `s.vals` / `s.es` hold the gathered logits and their exact terms (for [`top_tier`]).
    let mut gathered = false;
    let s1 = if ok || gather_values(row, thr_g, s, MAX_GATHER) {
        exact_terms(&s.vals, t, m, &mut s.xs, &mut s.es);
        gathered = true;
        if let Some(s1) = split_grid_sum(s) {
            s1
        } else if s.es.len() > SORT_SUM_UP_TO {
            radix_sorted_sum(s)
        } else {
            s.xs.clear();
            s.xs.extend_from_slice(&s.es);
            s.xs.sort_unstable_by(|a, b| b.total_cmp(a));
            sorted_sum(&s.xs)
        }
    } else {
        // Every token's term (more than MAX_GATHER move the sum, a flat row): the radix sort's
        // scatter over ~2^18 keys with random low digits costs several times the grouped sum
        // (flat rows, real_rows f: 11 ms against 1.5 ms a step).
        all_terms(row, t, m, &mut s.xs, &mut s.es);
        bucketed_sorted_sum(&s.es, &mut s.keys, &mut s.tmp, &mut s.xs)
    };
    // 3. The kept set: tokens whose surprise -log2f(RN(e / s1)) is at most mu. The surprise
    // does not increase with e, so the set is {e >= e*} with e* the smallest f32 passing.
    let pass = |e: f32| -(e / s1).log2() <= mu;
    let e_star = if pass(1.0) {
        // binary search over the bit patterns of (0, 1]
        let (mut lo, mut hi) = (0u32, 1.0f32.to_bits()); // pass(hi), !pass(lo) (e = 0: surprise inf)
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if pass(f32::from_bits(mid)) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(f32::from_bits(hi))
    } else {
        None
    };
    // Tokens with e >= e*: v - m >= ln e* (with margin), then exactly.
    let (size, last_v) = match e_star {
        None => (1usize, m),
        Some(es) => {
            // expf's result is e's rounding: to within a relative 2^-24 when normal, but
            // only to half of the smallest subnormal below 2^-126 (a large `mu` keeps such
            // terms), so there `e >= e*` only says `exp(x) >= e* / 2`.
            let margin = if es < f32::MIN_POSITIVE { std::f64::consts::LN_2 + 1e-3 } else { 1e-3 };
            let thr = l_of(mf + (es as f64).ln() - margin, t, lmax);
            s.top.ready = false;
            if gathered && es <= HALF_ULP_ONE && n < BOUNDED_MAX_LEN {
                s.bins.e_star = es;
                s.bins.m = m;
                s.bins.thr = thr;
                s.bins.s2 = s1;
                if top_tier(row, t, thr_g, s) > BOUNDED_FROM {
                    return bounded(t, lmax, lmin, s);
                }
                s.top.ready = false;
            }
            if !gather_values(row, thr, s, BOUNDED_FROM) {
                // Many kept: when every term of `s1` is kept, `s2 = s1` and the draw can be
                // decided from mass bins.
                if es <= HALF_ULP_ONE && n < BOUNDED_MAX_LEN {
                    s.bins.e_star = es;
                    s.bins.m = m;
                    s.bins.thr = thr;
                    s.bins.s2 = s1;
                    if mass_bins(row, t, s) > VALUES_FROM {
                        return bounded(t, lmax, lmin, s);
                    }
                }
                if !gather_values(row, thr, s, usize::MAX) {
                    return Miro::Full;
                }
            }
            exact_terms(&s.vals, t, m, &mut s.xs, &mut s.es);
            let mut k = 0usize;
            let mut last = f32::INFINITY;
            for (i, &e) in s.es.iter().enumerate() {
                if e >= es {
                    k += 1;
                    let v = scaled(s.vals[i], t);
                    if v < last {
                        last = v;
                    }
                }
            }
            if k == 0 {
                (1, m)
            } else {
                (k, last)
            }
        }
    };
    let ib_global = bucket_of(scaled(lmin, t));
    if size > VALUES_FROM {
        // `s.vals` holds every token at or above the last kept value.
        return values(t, lmax, last_v, size, ib_global, s, out);
    }

    // 4. llama.cpp's order of the top `size`: every bucket above the last kept token's is
    // wholly in front; those buckets and the last one are sorted as its bucket sort does.
    let bstar = bucket_of(last_v);
    // Values with bucket >= bstar: 6.4 v + 64 >= bstar, i.e. v >= (bstar - 64) / 6.4.
    let l_edge = if bstar == 0 { f32::NEG_INFINITY } else { l_of((bstar as f64 - 64.0) / 6.4 - 1e-3, t, lmax) };
    if !gather(row, l_edge, s, usize::MAX) {
        return Miro::Full;
    }
    s.counts.clear();
    s.counts.resize(NBUCKETS + 1, 0);
    for &l in &s.vals {
        let bk = bucket_of(scaled(l, t));
        if bk >= bstar {
            s.counts[bk] += 1;
        }
    }
    // Stable scatter by bucket, buckets from the top down (id order inside each).
    let mut start = [0u32; NBUCKETS];
    let mut off = 0u32;
    for j in (bstar..NBUCKETS).rev() {
        start[j] = off;
        off += s.counts[j];
    }
    s.groups.clear();
    s.groups.resize(off as usize, TokenData { id: 0, logit: 0.0, p: 0.0 });
    for (&id, &l) in s.ids.iter().zip(&s.vals) {
        let v = scaled(l, t);
        let bk = bucket_of(v);
        if bk >= bstar {
            s.groups[start[bk] as usize] = TokenData { id, logit: v, p: 0.0 };
            start[bk] += 1;
        }
    }
    // Only the buckets that reach into the first `size` positions matter.
    let mut pos = 0usize;
    for j in (bstar..NBUCKETS).rev() {
        if pos >= size {
            break;
        }
        let cnt = s.counts[j] as usize;
        let g = &mut s.groups[pos..pos + cnt];
        if !sorted_prefix_if_distinct(g, size - pos) {
            // Equal values inside the prefix: their order is libstdc++'s introsort's, which
            // only matters for the selected token; `s.vals` holds every kept token.
            return values(t, lmax, last_v, size, ib_global, s, out);
        }
        pos += cnt;
    }
    if s.groups.len() < size {
        return Miro::Full;
    }
    out.fill_from(&s.groups[..size]);
    out.set_sorted(true);
    Miro::Prefix
}

/// Ends a [`Miro::Bounded`] step (the bins are built): remembers what [`id_of_value`] needs.
fn bounded(t: Option<f32>, lmax: f32, lmin: f32, s: &mut MiroScratch) -> Miro {
    s.val_t = t;
    s.val_lmax = lmax;
    s.val_low = bucket_of(scaled(lmin, t));
    Miro::Bounded
}

/// The value path: the kept prefix (every token of `s.vals` whose value is at least `last_v`,
/// `size` of them) as sorted values without ids, into `out`; remembers what [`id_at`] needs.
fn values(
    t: Option<f32>,
    lmax: f32,
    last_v: f32,
    size: usize,
    low_bucket: usize,
    s: &mut MiroScratch,
    out: &mut Candidates,
) -> Miro {
    s.keys.clear();
    s.keys.extend(s.vals.iter().map(|&l| scaled(l, t)).filter(|&v| v >= last_v).map(desc_key));
    if s.keys.len() != size {
        return Miro::Full;
    }
    radix_sort(&mut s.keys, &mut s.tmp, &mut s.radix);
    // The sampler's second softmax (`softmax` on a sorted array): `expf(v - v0)`, their
    // sequential f32 sum, each divided by it.
    let v0 = key_value(s.keys[0]);
    s.xs.clear();
    s.xs.extend(s.keys.iter().map(|&k| key_value(k) - v0));
    s.es.clear();
    s.es.resize(size, 0.0);
    expf_exact_slice(&s.xs, &mut s.es);
    let sum = sorted_sum(&s.es);
    s.groups.clear();
    s.groups.extend(s.keys.iter().zip(&s.es).map(|(&k, &e)| TokenData { id: -1, logit: key_value(k), p: e / sum }));
    out.fill_from(&s.groups);
    out.set_sorted(true);
    s.val_t = t;
    s.val_lmax = lmax;
    s.val_low = low_bucket;
    Miro::Values
}

/// The id llama.cpp's full path has at sorted index `i` of the last [`Miro::Values`] prefix
/// (`row` the same row).
pub(crate) fn id_at(row: Row<'_>, i: usize, s: &mut MiroScratch) -> i32 {
    id_of_value(row, key_value(s.keys[i]), i, s)
}

/// The id llama.cpp's full path has at sorted index `i` of the last [`Miro::Values`] or
/// [`Miro::Bounded`] prefix, whose value there is `v` (`row` the same row): the one token
/// with that value, or, when the value is tied, the id llama.cpp's sort of the bucket holding
/// it puts there (replayed with its own algorithm over the bucket in id order, as its stable
/// scatter leaves it).
pub(crate) fn id_of_value(row: Row<'_>, v: f32, i: usize, s: &mut MiroScratch) -> i32 {
    let t = s.val_t;
    // Every token whose value is `v` has its logit in this range (margins as `l_of`'s).
    let (lo, hi) = (l_of(v as f64, t, s.val_lmax), l_up(v as f64, t));
    gather_range(row, lo, hi, s);
    let mut same = s.ids.iter().zip(&s.vals).filter(|&(_, &l)| scaled(l, t) == v);
    let first = same.next().map(|(&id, _)| id);
    if let (Some(id), None) = (first, same.next()) {
        return id;
    }
    let bk = bucket_of(v);
    let l_edge = if bk == 0 { f32::NEG_INFINITY } else { l_of((bk as f64 - 64.0) / 6.4 - 1e-3, t, s.val_lmax) };
    gather(row, l_edge, s, usize::MAX);
    let mut above = 0usize;
    s.spare.clear();
    for (&id, &l) in s.ids.iter().zip(&s.vals) {
        let x = scaled(l, t);
        match bucket_of(x).cmp(&bk) {
            std::cmp::Ordering::Greater => above += 1,
            std::cmp::Ordering::Equal => s.spare.push(TokenData { id, logit: x, p: 0.0 }),
            std::cmp::Ordering::Less => {}
        }
    }
    if bk == s.val_low {
        let n = s.spare.len();
        std_partial_sort(&mut s.spare, n, logit_before);
    } else {
        std_sort(&mut s.spare, logit_before);
    }
    s.spare[i - above].id
}

/// At least the number of kept tokens of the last [`Miro::Bounded`] step (exact when
/// [`top_tier`] counted its tail; at least 2 either way).
pub(crate) fn bounded_len(s: &MiroScratch) -> usize {
    s.bins.n
}

/// One pass over the row for a [`Miro::Bounded`] step (`s.bins`' `e_star`, `m`, `thr`, `s2`
/// set): the exact term `e = expf(v - m)` of every token in a block reaching `thr`, kept when
/// `e >= e*` (the kept set exactly: tokens under `thr` have `e < e*`), binned by the bits of
/// its exact `p = RN(e / s2)`. `p` does not decrease with `v`, so the bins hold consecutive
/// runs of llama.cpp's sorted prefix. Every `p` of a bin shares its bits from [`BIN_SHIFT`]
/// up (so its exponent), so the bin's exact mass is its count times the bin's base value plus
/// the sum of the lower bits times the bin's ulp: one integer add per token ([`bin_inc`]), no
/// rounding. Returns the kept count.
fn mass_bins(row: Row<'_>, t: Option<f32>, s: &mut MiroScratch) -> usize {
    let MiroScratch { bins: b, blocks, .. } = s;
    let nbins = bins_begin(b, 0.0);
    let mut buf = [0f32; BLOCK];
    let mut xs = [0f32; BLOCK];
    let mut es = [0f32; BLOCK];
    let mut idx = [0u32; BLOCK];
    let mut inc = [0u64; BLOCK];
    for (k, blk) in blocks.iter().enumerate() {
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(blk.max >= b.thr) {
            continue;
        }
        // Every token of the block: compacting those at or above `thr` first did not pay.
        let x = row.block(k, &mut buf);
        let len = x.len();
        scale_shift(x, t.unwrap_or(1.0), b.m, &mut xs[..len]);
        expf_exact_slice(&xs[..len], &mut es[..len]);
        bin_terms(&es[..len], b, nbins, &mut idx, &mut inc);
    }
    bins_finish(b, nbins)
}

/// Prepares a [`Miro::Bounded`] step without the exact weight of every kept token (`s.bins`'
/// `e_star`, `m`, `thr`, `s2` set; `s.vals` / `s.es` hold the tokens with logit `>= thr_g`
/// and their exact terms, which include every term of `s1`). Those top tokens are binned
/// exactly as [`mass_bins`] does; the kept tokens under `thr_g` (the tail) are only counted
/// exactly (from their logits, with the few near `e*` checked through their exact term) and
/// their mass bracketed ([`tail_terms`]). The draw then usually lands among the top
/// tokens ([`pick_top`]); otherwise [`pick`] bins the whole kept set as before. Returns the
/// kept count (also in `s.bins.n`), and marks the step ready for [`pick_top`].
fn top_tier(row: Row<'_>, t: Option<f32>, thr_g: f32, s: &mut MiroScratch) -> usize {
    let (e_star, s2, m) = (s.bins.e_star, s.bins.s2, s.bins.m);
    // 1. The top tokens, exactly.
    let tb = &mut s.top.bins;
    tb.e_star = e_star;
    tb.s2 = s2;
    tb.m = m;
    // The gathered terms reach down to about 2^-24 only, while `e*` may lie a hundred binades
    // lower once `mu` has grown: bins under the smallest gathered term stay empty.
    let e_low = min_term(&s.es);
    let nbins = bins_begin(tb, e_low);
    let (mut idx, mut inc) = ([0u32; BLOCK], [0u64; BLOCK]);
    for c in s.es.chunks(BLOCK) {
        bin_terms(c, tb, nbins, &mut idx, &mut inc);
    }
    let n_top = bins_finish(tb, nbins);
    s.top.w_top = lane_sum(&tb.mass);
    s.top.thr_g = thr_g;
    // 2. The tail: its count and its mass bracketed from the count alone (the draw narrows
    // the bracket with [`tail_terms`] only when it needs to). Every token is kept, or the
    // count is only bounded by every token not gathered ([`uncounted_tail`]: a pass over the
    // row saved, since the draw needs only a bound); with fewer than two top tokens the tail
    // is counted, as the draw must know that at least two are kept.
    let tail = match all_kept_tail(t, thr_g, s) {
        Some(tail) => Some(tail),
        None if n_top >= 2 => uncounted_tail(t, thr_g, s),
        None => tail_count(row, t, thr_g, s),
    };
    let Some(tail) = tail else {
        return 0;
    };
    let n = n_top + tail.n as usize;
    set_bracket(&tail, s);
    s.top.crude = true;
    s.bins.n = n;
    s.top.ready = true;
    n
}

/// A [`Tail`] for the tokens under `thr_g` without counting the kept ones: at most every token
/// not gathered (`n` is that bound), with a mass from 0 to that many times `e_g` (the largest
/// term under `thr_g`, see [`tail_count`]). The draw's error bounds grow with the kept count
/// and stay valid for a larger one; the mass bracket is [`tail_count`]'s with the count
/// unknown. `None` as [`tail_term_bound`].
fn uncounted_tail(t: Option<f32>, thr_g: f32, s: &MiroScratch) -> Option<Tail> {
    let e_g = tail_term_bound(t, thr_g, &s.bins)?;
    Some(crude_tail((s.n - s.vals.len()) as u64, 0, 0.0, e_g, 0.0))
}

/// The smallest of the terms `es` (each in `[0, 1]`; 1 when there is none), in sixteen
/// independent lanes (one `min` chain over a few thousand terms costs microseconds).
fn min_term(es: &[f32]) -> f32 {
    let mut lanes = [1.0f32; 16];
    let mut c = es.chunks_exact(16);
    for g in &mut c {
        for (l, &e) in lanes.iter_mut().zip(g) {
            *l = if e < *l { e } else { *l };
        }
    }
    let rest = c.remainder().iter().fold(1.0f32, |a, &e| if e < a { e } else { a });
    lanes.iter().fold(rest, |a, &e| if e < a { e } else { a })
}

/// The `f64` sum of the nonnegative `xs` in eight lanes (one chain of dependent additions
/// over the ~800 bins of a top tier costs about a microsecond): like a sequential sum, within
/// `(xs.len() - 1) 2^-53` of the exact sum relative (nonnegative terms, any order of
/// additions), which is what [`set_bracket`] allows for.
fn lane_sum(xs: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let mut c = xs.chunks_exact(8);
    for g in &mut c {
        for (l, &x) in lanes.iter_mut().zip(g) {
            *l += x;
        }
    }
    lanes.iter().sum::<f64>() + c.remainder().iter().sum::<f64>()
}

/// `s.top`'s bracket `[w_lo, w_hi]` on the sum of the kept `p` from the gathered tokens'
/// exact mass and the tail's bracket.
fn set_bracket(tail: &Tail, s: &mut MiroScratch) {
    let nbins = s.top.bins.mass.len();
    // Each p = RN(e / s2) is within 2^-24 relative plus 2^-150 (half the smallest subnormal)
    // of e / s2, and the f64 divisions and sums here are within 2^-40 relative (fewer than
    // 2^22 terms); the bins' total within (nbins + 2) ulps.
    let (nt, s2) = (tail.n as f64, s.top.bins.s2 as f64);
    let sub = nt * f64::from_bits((1023 - 150) << 52);
    let rel = 1.0 / 16_777_216.0 + 1.0 / 1_099_511_627_776.0;
    let tail_lo = ((tail.lo / s2) * (1.0 - rel) - sub).max(0.0);
    let tail_hi = (tail.hi / s2) * (1.0 + rel) + sub;
    let top_rel = (nbins + 2) as f64 * f64::EPSILON;
    let w_top = s.top.w_top;
    s.top.w_lo = w_top * (1.0 - top_rel) + tail_lo;
    s.top.w_hi = w_top * (1.0 + top_rel) + tail_hi;
}

/// The kept tokens under the gather threshold: their exact count and a bracket on the sum of
/// their exact terms `e = expf(x)`.
struct Tail {
    n: u64,
    lo: f64,
    hi: f64,
}

/// [`Tail`] over the blocks reaching `s.bins.thr` (`None` for a temperature whose inverse is
/// not a positive finite `f32`). Kept or not is read off the logit: every token at or above
/// `l_hi` is kept, none under `thr` is (margins as the gather thresholds'); a block with a
/// token between them (or lanes past its last whole vector) is done exactly. Each sure token's
/// term is bracketed through [`exp_bound`] of `x' = l * (1 / t) - m`, one FMA instead of
/// llama.cpp's division: `|x' - x| <= Δ = 2^-21 (max |l / t| + |m| + 1)` (three roundings
/// of quantities at most that large), so `expf(x)` lies within `e^Δ (1 + 2^-22)` of
/// `expf(x')` (both within 0.502 ulp of `exp`: `(1 + 2^-23) / (1 - 2^-23) < 1 + 2^-21`),
/// plus `2^-147` for subnormal results.
fn tail_terms(row: Row<'_>, t: Option<f32>, thr_g: f32, s: &MiroScratch) -> Option<Tail> {
    let b = &s.bins;
    let mf = b.m as f64;
    let l_hi = sure_kept_from(b, t);
    let inv_t = match t {
        Some(t) => 1.0 / t,
        None => 1.0,
    };
    if !(inv_t.is_finite() && inv_t > 0.0 && l_hi > b.thr) {
        return None;
    }
    let lmax = s.blocks.iter().fold(f32::NEG_INFINITY, |a, k| a.max(k.max));
    let amax = (lmax.abs().max(b.thr.abs()) as f64) * inv_t as f64 * (1.0 + 1e-6);
    let delta = (amax + mf.abs() + 1.0) / 2_097_152.0;
    if delta.is_nan() || delta >= 1.0 {
        return None; // huge logits: a bracket this loose would decide nothing
    }
    let k_hi = BOUND_MUL * delta.exp() * (1.0 + 1.0 / 2_097_152.0);
    let k_lo = (-delta).exp() * (1.0 - 1.0 / 2_097_152.0) / BOUND_DIV;
    let mut buf = [0f32; BLOCK];
    let mut ub = UnsureBufs::new();
    let (mut cnt, mut f_hi, mut f_lo, mut exact) = (0u64, 0.0f64, 0.0f64, 0.0f64);
    let mut n_exact = 0u64;
    for (k, blk) in s.blocks.iter().enumerate() {
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(blk.max >= b.thr) {
            continue;
        }
        let x = row.block(k, &mut buf);
        let r = tail_block(x, inv_t, b.m, thr_g, b.thr, l_hi);
        cnt += r.sure as u64;
        f_hi += r.all as f64;
        f_lo += r.normal as f64;
        if r.sure != r.maybe {
            let (c, e) = unsure_terms(x, r.done as usize, thr_g, t, b, &mut ub);
            cnt += c;
            n_exact += c;
            exact += e;
        }
    }
    // The exact terms' f64 sum: within `n_exact` ulps relative.
    let sub = cnt as f64 * f64::from_bits((1023 - 147) << 52);
    let x_err = n_exact as f64 * f64::EPSILON;
    let hi = (f_hi * (1.0 + 1.0 / 8192.0) * k_hi + exact * (1.0 + x_err)) * (1.0 + 1e-12) + sub;
    let lo = ((f_lo * (1.0 - 1.0 / 8192.0) * k_lo + exact * (1.0 - x_err)) * (1.0 - 1e-12) - sub).max(0.0);
    Some(Tail { n: cnt, lo, hi })
}

/// [`Tail`] as [`tail_terms`] counts it, with the sure tokens' mass bracketed from their
/// count alone: each has `e* <= e` (it is kept) and `e <= e_g`, a bound on the term of any
/// logit under the gather threshold (`l < thr_g` gives `x = RN(RN(l / t) - m) <= x_g =
/// RN(RN(thr_g / t) - m)`, both roundings being monotone, and `expf(x) <= exp(x) (1 + 2^-23)
/// + 2^-149`). One compare pass, no `exp` per token.
fn tail_count(row: Row<'_>, t: Option<f32>, thr_g: f32, s: &MiroScratch) -> Option<Tail> {
    let b = &s.bins;
    let l_hi = sure_kept_from(b, t);
    let e_g = tail_term_bound(t, thr_g, b)?;
    let mut buf = [0f32; BLOCK];
    let mut ub = UnsureBufs::new();
    let (mut sure, mut n_exact, mut exact) = (0u64, 0u64, 0.0f64);
    for (k, blk) in s.blocks.iter().enumerate() {
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(blk.max >= b.thr) {
            continue;
        }
        let x = row.block(k, &mut buf);
        let r = tail_count_block(x, thr_g, b.thr, l_hi);
        sure += r.sure as u64;
        if r.sure != r.maybe {
            let (c, e) = unsure_terms(x, r.done as usize, thr_g, t, b, &mut ub);
            n_exact += c;
            exact += e;
        }
    }
    Some(crude_tail(sure, n_exact, exact, e_g, b.e_star))
}

/// [`tail_count`]'s `e_g`: a bound on the term of any logit under the gather threshold `thr_g`
/// (`None` when the tail cannot be counted from logits: a temperature that is not a positive
/// finite number, no room between `thr` and the sure threshold, or an infinite bound).
fn tail_term_bound(t: Option<f32>, thr_g: f32, b: &Bins) -> Option<f64> {
    let l_hi = sure_kept_from(b, t);
    if !(t.is_none_or(|t| t.is_finite() && t > 0.0) && l_hi > b.thr) {
        return None;
    }
    let x_g = scaled(thr_g, t) - b.m;
    let e_g = (x_g as f64).exp() * (1.0 + 1e-6) + f64::from_bits((1023 - 149) << 52);
    e_g.is_finite().then_some(e_g)
}

/// The [`Tail`] of `sure` tokens whose terms lie in `[e_star, e_g]` and `n_exact` more whose
/// exact terms sum (in `f64`, any order) to `exact`.
fn crude_tail(sure: u64, n_exact: u64, exact: f64, e_g: f64, e_star: f32) -> Tail {
    // Products of an integer below 2^22 and an f64: one rounding each; the exact terms' f64
    // sum: within `n_exact` ulps relative.
    let x_err = n_exact as f64 * f64::EPSILON;
    let hi = (sure as f64 * e_g + exact * (1.0 + x_err)) * (1.0 + 1e-12);
    let lo = ((sure as f64 * e_star as f64 + exact * (1.0 - x_err)) * (1.0 - 1e-12)).max(0.0);
    Tail { n: sure + n_exact, lo, hi }
}

/// [`tail_count`]'s answer without its pass over the row when the row's smallest logit is at
/// or above the sure-kept threshold `l_hi` ([`sure_kept_from`]): every token is then kept for
/// sure (the usual case once `mu` has grown: Gemma 3's rows span 30-46 logits, `mu = 100`
/// keeps 55 below the maximum), so the tail is every token not gathered (`s.vals` holds
/// exactly those at or above `thr_g`) and none is unsure. `None` otherwise.
fn all_kept_tail(t: Option<f32>, thr_g: f32, s: &MiroScratch) -> Option<Tail> {
    let b = &s.bins;
    // The negation holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(s.lmin >= sure_kept_from(b, t)) {
        return None;
    }
    let e_g = tail_term_bound(t, thr_g, b)?;
    Some(crude_tail((s.n - s.vals.len()) as u64, 0, 0.0, e_g, b.e_star))
}

/// The logit at or above which every token is kept (`e >= e*`), with the gather thresholds'
/// margins.
fn sure_kept_from(b: &Bins, t: Option<f32>) -> f32 {
    let (mf, es) = (b.m as f64, b.e_star);
    let margin = if es < f32::MIN_POSITIVE { std::f64::consts::LN_2 + 1e-3 } else { 1e-3 };
    l_up(mf + (es as f64).ln() + margin, t)
}

/// Room for one block's undecided tokens in [`unsure_terms`] (made once per pass over the
/// row: zeroing it for each block cost more than the rest of the work on rows where the kept
/// threshold falls among many logits).
struct UnsureBufs {
    ls: [f32; BLOCK + 16],
    xs: [f32; BLOCK],
    es: [f32; BLOCK],
}

impl UnsureBufs {
    fn new() -> Self {
        UnsureBufs { ls: [0.0; BLOCK + 16], xs: [0.0; BLOCK], es: [0.0; BLOCK] }
    }
}

/// The kept tokens among those of `x` (one block) that the tail kernels left undecided
/// ([`unsure_tokens`]): their count and the `f64` sum of their exact terms.
fn unsure_terms(x: &[f32], done: usize, thr_g: f32, t: Option<f32>, b: &Bins, u: &mut UnsureBufs) -> (u64, f64) {
    let UnsureBufs { ls, xs, es } = u;
    let k = unsure_tokens(x, done, thr_g, b.thr, sure_kept_from(b, t), ls);
    scale_shift(&ls[..k], t.unwrap_or(1.0), b.m, &mut xs[..k]);
    expf_exact_slice(&xs[..k], &mut es[..k]);
    let (mut cnt, mut sum) = (0u64, 0.0f64);
    for &e in &es[..k] {
        if e >= b.e_star {
            cnt += 1;
            sum += e as f64;
        }
    }
    (cnt, sum)
}

simd_dispatch!(
    /// [`TailBlock`]'s counts of one block (no sums).
    fn tail_count_block(x: &[f32], thr_g: f32, thr: f32, l_hi: f32) -> TailBlock = tail_count_block_k
);

#[inline(always)]
unsafe fn tail_count_block_k<S: Simd>(x: &[f32], thr_g: f32, thr: f32, l_hi: f32) -> TailBlock {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; every load covers `i..i + S::N` with `i + S::N <= x.len()`.
    unsafe {
        let (gv, lo, hi) = (S::splat(thr_g), S::splat(thr), S::splat(l_hi));
        let (mut sure, mut maybe) = (0u32, 0u32);
        let mut i = 0;
        while i + S::N <= x.len() {
            let l = S::load(x.as_ptr().add(i));
            let tail = S::lt(l, gv);
            sure += S::count(S::and_m(tail, S::ge(l, hi)));
            maybe += S::count(S::and_m(tail, S::ge(l, lo)));
            i += S::N;
        }
        TailBlock { sure, maybe: maybe + (x.len() - i) as u32, all: 0.0, normal: 0.0, done: i as u32 }
    }
}

simd_dispatch!(
    /// The logits of `x` (one block) that [`tail_block`] left undecided, into the front of
    /// `out`; returns how many. Those are the tokens under the gather threshold `thr_g` at or
    /// above `thr` (under it none is kept) that were not counted as sure: under `l_hi`, or past
    /// the kernel's last whole vector (`done` on, a multiple of the lane count).
    fn unsure_tokens(x: &[f32], done: usize, thr_g: f32, thr: f32, l_hi: f32, out: &mut [f32; BLOCK + 16]) -> usize = unsure_tokens_k
);

#[inline(always)]
unsafe fn unsure_tokens_k<S: Simd>(
    x: &[f32],
    done: usize,
    thr_g: f32,
    thr: f32,
    l_hi: f32,
    out: &mut [f32; BLOCK + 16],
) -> usize {
    assert!(x.len() <= BLOCK && done <= x.len());
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; loads cover `i..i + S::N` with `i + S::N <= done <= x.len()`; each value is
    // written at most once and in order, so a store of `S::N` lanes at `k <= i <= BLOCK -
    // S::N` stays inside `out`.
    unsafe {
        let (gv, lo, hi) = (S::splat(thr_g), S::splat(thr), S::splat(l_hi));
        let mut k = 0;
        let mut i = 0;
        while i + S::N <= done {
            let l = S::load(x.as_ptr().add(i));
            let m = S::and_m(S::and_m(S::lt(l, gv), S::ge(l, lo)), S::lt(l, hi));
            if S::any(m) {
                k += S::compress_store(m, l, out.as_mut_ptr().add(k));
            }
            i += S::N;
        }
        for (j, &l) in x.iter().enumerate().skip(i) {
            let unsure = l < thr_g && l >= thr && (l < l_hi || j >= done);
            out[k] = l;
            k += usize::from(unsure);
        }
        k
    }
}

/// What [`tail_block`] found over one block.
#[derive(Clone, Copy, Debug, Default)]
struct TailBlock {
    /// Tokens under the gather threshold at or above `l_hi` (kept for sure).
    sure: u32,
    /// Tokens under the gather threshold at or above `thr` (maybe kept), plus the lanes past
    /// the last whole vector.
    maybe: u32,
    /// The `f32` sum of [`exp_bound`] of the sure tokens' `x'`, and of those with `x'` at
    /// least [`EXP_CUT`] (where its lower bound holds).
    all: f32,
    normal: f32,
    /// The lanes from here on (past the last whole vector) were not looked at.
    done: u32,
}

simd_dispatch!(
    /// [`TailBlock`] of one block (`x'` = `l * inv_t - m` by one FMA).
    fn tail_block(x: &[f32], inv_t: f32, m: f32, thr_g: f32, thr: f32, l_hi: f32) -> TailBlock = tail_block_k
);

#[inline(always)]
unsafe fn tail_block_k<S: Simd>(x: &[f32], inv_t: f32, m: f32, thr_g: f32, thr: f32, l_hi: f32) -> TailBlock {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; every load covers `i..i + S::N` with `i + S::N <= x.len()`.
    unsafe {
        let (iv, nm, gv) = (S::splat(inv_t), S::splat(-m), S::splat(thr_g));
        let (lo, hi, cut) = (S::splat(thr), S::splat(l_hi), S::splat(EXP_CUT));
        let (mut sure, mut maybe) = (0u32, 0u32);
        let (mut all, mut normal) = (S::splat(0.0), S::splat(0.0));
        let mut i = 0;
        while i + S::N <= x.len() {
            let l = S::load(x.as_ptr().add(i));
            let xp = S::fmadd(l, iv, nm);
            let f = exp_bound::<S>(xp);
            let tail = S::lt(l, gv);
            let ms = S::and_m(tail, S::ge(l, hi));
            sure += S::count(ms);
            maybe += S::count(S::and_m(tail, S::ge(l, lo)));
            all = S::add(all, S::keep(ms, f));
            normal = S::add(normal, S::keep(S::and_m(ms, S::ge(xp, cut)), f));
            i += S::N;
        }
        let (all, normal) = (S::hsum_f32(all), S::hsum_f32(normal));
        TailBlock { sure, maybe: maybe + (x.len() - i) as u32, all, normal, done: i as u32 }
    }
}

/// [`pick`] among the top tokens of a [`top_tier`] step: `None` when `u` lies past them or
/// within the error bound of a boundary. The bound is [`pick_bounded`]'s, with the total
/// mass only known to lie in `[w_lo, w_hi]`: the running sum `P_j` of the sorted kept `p`
/// (bins top down, then the crossing bin's tokens in sorted order, each exact bin mass to one
/// rounding) is known to within `(nbins + j + 2)` ulps relative, so libstdc++'s running sum
/// lies in `[P_lo / w_hi - err, P_hi / w_lo + err]`.
fn pick_top(u: f64, s: &mut MiroScratch) -> Option<(usize, f32, f32)> {
    let n = s.bins.n;
    let tb = &s.top.bins;
    let nbins = tb.mass.len();
    let err = (4 * (n + nbins) + 64) as f64 * f64::EPSILON * margin_scale();
    let (w_lo, w_hi) = (s.top.w_lo, s.top.w_hi);
    if w_lo.is_nan() || w_lo <= 0.0 {
        return None;
    }
    // Largest / smallest estimate of libstdc++'s running sum after exact partial mass `acc`
    // (summed in f64 with at most `k` roundings).
    let hi_of = |acc: f64, k: usize| acc * (1.0 + k as f64 * f64::EPSILON) / w_lo + err;
    let lo_of = |acc: f64, k: usize| acc * (1.0 - k as f64 * f64::EPSILON) / w_hi - err;
    // The first bin whose end may reach u.
    let (mut acc, mut before, mut bin) = (0.0f64, 0usize, None);
    for k in 0..nbins {
        if tb.cnt[k] == 0 {
            continue;
        }
        if hi_of(acc + tb.mass[k], k + 2) >= u {
            bin = Some(k);
            break;
        }
        acc += tb.mass[k];
        before += tb.cnt[k] as usize;
    }
    let bin = bin?;
    // The crossing is not before this bin (`hi_of(acc) < u` held at the previous bin, or
    // nothing precedes it); walk its tokens in sorted order.
    top_bin_tokens(bin, s);
    let kb = bin + 2;
    walk_to_crossing(&s.walk, before, n, acc, u, |acc, k| (lo_of(acc, kb + k + 1), hi_of(acc, kb + k + 1)))
}

/// Walks the sorted tokens of the bin holding the crossing (`walk`, as built by
/// [`top_bin_tokens`] / [`bin_tokens`]; `before` kept tokens and exact mass `acc` precede
/// them, `n` are kept in all) and returns the first whose running sum surely reaches `u`:
/// `bounds(acc, k)` brackets libstdc++'s running sum after the `k`-th token of the bin as
/// `(lo, hi)`. `None` when `u` falls inside a bracket (too close to decide) or past the bin.
fn walk_to_crossing(
    walk: &[u64],
    before: usize,
    n: usize,
    mut acc: f64,
    u: f64,
    bounds: impl Fn(f64, usize) -> (f64, f64),
) -> Option<(usize, f32, f32)> {
    for (k, &kp) in walk.iter().enumerate() {
        let j = before + k;
        let p = f32::from_bits(kp as u32);
        let v = key_value((kp >> 32) as u32);
        if j + 1 == n {
            return Some((j, p, v)); // c_{n-2} < u was decided at the previous token
        }
        acc += p as f64;
        let (lo, hi) = bounds(acc, k);
        if lo >= u {
            return Some((j, p, v));
        }
        if hi >= u {
            return None;
        }
    }
    None // the crossing lies past this bin (rounding at the bin's edge)
}

/// The gathered kept tokens (`s.vals` / `s.es`) of [`Top`]'s bin `bin` into `s.walk` as
/// `(desc_key(v) << 32) | p bits`, sorted (by value, descending).
///
/// The bin's terms are found by their range, not by a division each: `p = RN(e / s2)` and its
/// bin's code do not decrease with `e`, so the terms of the bin are the `e` from the first
/// whose code reaches `code` to the first whose code passes it ([`first_term_of_code`]).
fn top_bin_tokens(bin: usize, s: &mut MiroScratch) {
    let tb = &s.top.bins;
    let (s2, e_star) = (tb.s2, tb.e_star);
    let code = tb.top - bin as u32;
    let lo = first_term_of_code(code, s2).max(e_star);
    let hi = first_term_of_code(code + 1, s2);
    let t = s.val_t;
    s.walk.clear();
    for (&l, &e) in s.vals.iter().zip(&s.es) {
        if e >= lo && e < hi {
            let p = e / s2;
            debug_assert_eq!(p.to_bits() >> BIN_SHIFT, code);
            s.walk.push(((desc_key(scaled(l, t)) as u64) << 32) | p.to_bits() as u64);
        }
    }
    s.walk.sort_unstable();
}

/// The smallest term `e` in `[0, 1]` whose `p = RN(e / s2)` has a bin code (its bits `>>`
/// [`BIN_SHIFT`]) of at least `code`, or the float after 1 when none has (a binary search over
/// the bits of `e`: the code does not decrease with `e`).
fn first_term_of_code(code: u32, s2: f32) -> f32 {
    let reaches = |b: u32| (f32::from_bits(b) / s2).to_bits() >> BIN_SHIFT >= code;
    if reaches(0) {
        return 0.0;
    }
    // `reaches(lo)` fails; `hi` reaches, or is past 1.
    let (mut lo, mut hi) = (0u32, 1.0f32.to_bits() + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    f32::from_bits(hi)
}

/// Writes the values of `x` (at most [`BLOCK`]) that are `>= thr` to the front of `out`, in
/// order; returns how many. (`collect_into` does the same into vectors with their ids, at
/// about twice the cost per value here.) The vector levels take [`compact_ge_v`].
fn compact_ge(x: &[f32], thr: f32, out: &mut [f32; BLOCK + 16]) -> usize {
    assert!(x.len() <= BLOCK);
    if crate::fast::simd::Level::active() != crate::fast::simd::Level::Scalar {
        return compact_ge_v(x, thr, out);
    }
    let mut w = 0;
    for &v in x {
        out[w] = v;
        w += usize::from(v >= thr);
    }
    w
}

simd_dispatch!(
    /// [`compact_ge`] on a vector level: each vector compressed in a register and stored whole
    /// (the spare lanes are overwritten by the next store or lie past the count). On the rows
    /// this runs on, a few thousand of the 262,144 pass, in about a third of the groups of 64
    /// values: a branch per group mispredicts often, so the groups holding a passing value are
    /// found first (a bit each, compares only), then only those are compressed (the values are
    /// still in L1), with one loop exit mispredicted per call. `x` holds at most [`BLOCK`].
    fn compact_ge_v(x: &[f32], thr: f32, out: &mut [f32; BLOCK + 16]) -> usize = compact_ge_k
);

#[inline(always)]
unsafe fn compact_ge_k<S: Simd>(x: &[f32], thr: f32, out: &mut [f32; BLOCK + 16]) -> usize {
    const _: () = assert!(BLOCK / 64 <= 32, "a bit per group of 64 in a u32");
    assert!(x.len() <= BLOCK && S::N <= 16);
    let per = 64 / S::N;
    let groups = x.len() / 64;
    let mut w = 0usize;
    let mut i = 64 * groups;
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports. Loads: `g < groups` gives `64 g + S::N j + S::N <= x.len()` for `j < per`, and
    // the last loop keeps `i + S::N <= x.len()`. Stores: values go out in increasing order,
    // each at most once, so before a vector at `i` is compressed `w <= i <= x.len() - S::N`,
    // and its `S::N` lanes stored from `w` end at most at `BLOCK`, inside `out`.
    unsafe {
        let tv = S::splat(thr);
        let mut hits = 0u32;
        for g in 0..groups {
            let mut any = S::none();
            for j in 0..per {
                any = S::or_m(any, S::ge(S::load(x.as_ptr().add(64 * g + S::N * j)), tv));
            }
            hits |= u32::from(S::any(any)) << g;
        }
        while hits != 0 {
            let g = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            for j in 0..per {
                let v = S::load(x.as_ptr().add(64 * g + S::N * j));
                w += S::compress_store(S::ge(v, tv), v, out.as_mut_ptr().add(w));
            }
        }
        while i + S::N <= x.len() {
            let v = S::load(x.as_ptr().add(i));
            w += S::compress_store(S::ge(v, tv), v, out.as_mut_ptr().add(w));
            i += S::N;
        }
    }
    for &v in &x[i..] {
        out[w] = v;
        w += usize::from(v >= thr);
    }
    w
}

/// The logits `>= thr` (in id order, without their ids: `s.ids` is left empty) into
/// `s.vals`; false when more than `limit` qualify.
fn gather_values(row: Row<'_>, thr: f32, s: &mut MiroScratch, limit: usize) -> bool {
    s.ids.clear();
    s.vals.clear();
    let mut buf = [0f32; BLOCK];
    let mut kept = [0f32; BLOCK + 16];
    for (b, blk) in s.blocks.iter().enumerate() {
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(blk.max >= thr) {
            continue;
        }
        let k = compact_ge(row.block(b, &mut buf), thr, &mut kept);
        s.vals.extend_from_slice(&kept[..k]);
        if s.vals.len() > limit {
            return false;
        }
    }
    true
}

/// Sets up `b`'s histogram for its `e_star` and `s2`, for terms of at least `e_low` (at most
/// 1); returns the number of bins.
fn bins_begin(b: &mut Bins, e_low: f32) -> usize {
    // The largest p is RN(1 / s2) (the maximum's term is 1), the smallest kept one RN(e* / s2),
    // or RN(e_low / s2) when that is larger (the rounded division and the bins' codes do not
    // decrease with `e`, so no term of at least `e_low` falls past the last bin).
    b.top = (1.0f32 / b.s2).to_bits() >> BIN_SHIFT;
    let low = if e_low > b.e_star { e_low } else { b.e_star };
    let nbins = (b.top - ((low / b.s2).to_bits() >> BIN_SHIFT)) as usize + 1;
    // [`TRASH`] more entries collect the tokens that are not kept.
    b.hist.clear();
    b.hist.resize(nbins + TRASH, 0);
    nbins
}

/// Adds the exact terms `es` (at most [`BLOCK`]) to `b`'s histogram (`idx`, `inc`: room
/// for the bins and increments).
fn bin_terms(es: &[f32], b: &mut Bins, nbins: usize, idx: &mut [u32; BLOCK], inc: &mut [u64; BLOCK]) {
    let len = es.len();
    bin_inc(es, b.e_star, b.s2, b.top, nbins as u32, &mut idx[..len], &mut inc[..len]);
    let h = &mut b.hist[..];
    for (&j, &d) in idx[..len].iter().zip(&inc[..len]) {
        h[j as usize] += d;
    }
}

/// Each bin's count and exact mass from `b`'s histogram; returns the kept count. (Most bins
/// of a top tier are empty: its gathered tokens reach down to `2^-24` of the maximum's term,
/// its bins to `e*`.)
fn bins_finish(b: &mut Bins, nbins: usize) -> usize {
    let Bins { hist, mass, cnt, top, .. } = b;
    mass.clear();
    mass.resize(nbins, 0.0);
    cnt.clear();
    cnt.resize(nbins, 0);
    let mut n = 0usize;
    for (k, ((&h, mass), cnt)) in hist[..nbins].iter().zip(mass.iter_mut()).zip(cnt.iter_mut()).enumerate() {
        if h == 0 {
            continue;
        }
        let code = *top - k as u32;
        let c = (h >> CNT_SHIFT) as u32;
        let low = h & ((1u64 << CNT_SHIFT) - 1);
        let base = f32::from_bits(code << BIN_SHIFT) as f64;
        // The ulp of the bin's values: 2^(exponent - 23), or 2^-149 for subnormals.
        let exp = ((code << BIN_SHIFT) >> 23).max(1) as i32;
        let ulp = f64::from_bits(((exp - 150 + 1023) as u64) << 52);
        *mass = c as f64 * base + low as f64 * ulp;
        *cnt = c;
        n += c as usize;
    }
    b.n = n;
    n
}

/// A token's count in a [`Bins`] histogram entry sits above this bit, the sum of its `p`'s
/// bits under [`BIN_SHIFT`] below it (under 2^18 * 2^22, so it never carries, for the rows of
/// fewer than [`BOUNDED_MAX_LEN`] tokens the bins are used on).
const CNT_SHIFT: u32 = 40;

/// Histogram entries past the bins that collect the tokens not kept, spread over several so
/// that their increments do not form one chain of dependent additions.
const TRASH: usize = 16;

simd_dispatch!(
    /// For each exact term `e`: its histogram bin (`top - (bits of RN(e / s2)) >> BIN_SHIFT`,
    /// or one of the [`TRASH`] entries from `trash` on when `e < e*`, not kept) and the
    /// entry's increment (one count plus the bits of `p` under [`BIN_SHIFT`]).
    fn bin_inc(es: &[f32], e_star: f32, s2: f32, top: u32, trash: u32, idx: &mut [u32], inc: &mut [u64]) -> () = bin_inc_k
);

/// Plain code, compiled for each level by [`simd_dispatch`] (the compiler vectorises it).
#[inline(always)]
unsafe fn bin_inc_k<S: Simd>(es: &[f32], e_star: f32, s2: f32, top: u32, trash: u32, idx: &mut [u32], inc: &mut [u64]) {
    for (k, ((&e, j), d)) in es.iter().zip(idx.iter_mut()).zip(inc.iter_mut()).enumerate() {
        let pb = (e / s2).to_bits();
        let kept = e >= e_star;
        *j = if kept { top.wrapping_sub(pb >> BIN_SHIFT) } else { trash + (k % TRASH) as u32 };
        *d = (1u64 << CNT_SHIFT) | (pb & LOW_MASK) as u64;
    }
}

/// The index libstdc++'s `discrete_distribution` returns for the uniform `u` over the last
/// [`Miro::Bounded`] step's kept prefix, that candidate's `p` and its value.
///
/// Exactness. Let `S` be the exact sum of the kept `p_i` and `P_j` that of the first `j + 1`
/// in sorted order. libstdc++ sums `W = sum p_i` in `f64`, then the running sum `c_j` of
/// `RN(p_i / W)`, and returns the first `j` with `c_j >= u` (the last index if none before
/// it). With nonnegative terms each sequential `f64` sum of `k` terms is within `γ_k ≈ k 2^-53`
/// relative of the exact one, so `|c_j - P_j / S| <= (2n + 3) 2^-53 (1 + o(1))`. Here `P_j`
/// and `S` are summed in `f64` in another order (bin sums in id order, then bins top down,
/// then the crossing bin's tokens in sorted order), so the estimate `r_j` of `P_j / S` is
/// within `(2 (n + nbins) + 1) 2^-53 (1 + o(1))`. With `E` twice the sum of both, `j` is the
/// answer when `r_{j-1} + E < u <= r_j - E`; a `u` that close to a boundary (probability
/// at most `2 n E`, ~1e-4 for 200,000 kept tokens) takes the literal replay instead
/// ([`pick_literal`]). The bins' own masses are exact to one rounding (see [`mass_bins`]),
/// well inside the bound assumed for them.
pub(crate) fn pick(row: Row<'_>, u: f64, s: &mut MiroScratch, out: &mut Candidates) -> (usize, f32, f32) {
    if s.top.ready {
        s.top.ready = false;
        if let Some(r) = pick_top(u, s) {
            TIERS.bump(5);
            TIERS.bump(6);
            return r;
        }
        if s.top.crude {
            // The tail's mass through its terms' bounds: a narrower bracket.
            if let Some(tail) = tail_terms(row, s.val_t, s.top.thr_g, s) {
                // The kept count, exact from here on (the top tier may only have bounded it).
                let n_top: usize = s.top.bins.cnt.iter().map(|&c| c as usize).sum();
                debug_assert!(n_top + tail.n as usize <= s.bins.n);
                s.bins.n = n_top + tail.n as usize;
                set_bracket(&tail, s);
                if let Some(r) = pick_top(u, s) {
                    TIERS.bump(5);
                    return r;
                }
            }
        }
        // `u` lies past the top tokens or too close to a boundary: bin the whole kept set.
        let kept = mass_bins(row, s.val_t, s);
        debug_assert_eq!(kept, s.bins.n);
    }
    match pick_bounded(row, u, s) {
        Some(r) => r,
        None => {
            TIERS.bump(4);
            pick_literal(row, u, s, out)
        }
    }
}

/// A factor on the bins' error margins (1: the proven bound). Tests widen it so that many
/// draws take the literal replay and the bins' decisions are checked near boundaries. It
/// exists only with the `tier-counts` feature (test and benchmark builds): normal builds use
/// the proven bound with no shared state on the hot path.
#[cfg(feature = "tier-counts")]
static MARGIN_SCALE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Sets [`MARGIN_SCALE`] (at least 1); returns the previous factor. For tests.
#[cfg(feature = "tier-counts")]
pub(crate) fn set_margin_scale(k: u64) -> u64 {
    MARGIN_SCALE.swap(k.max(1), std::sync::atomic::Ordering::Relaxed)
}

/// The factor on the bins' error margins: `MARGIN_SCALE` in test builds, 1 otherwise.
#[inline]
fn margin_scale() -> f64 {
    #[cfg(feature = "tier-counts")]
    {
        MARGIN_SCALE.load(std::sync::atomic::Ordering::Relaxed) as f64
    }
    #[cfg(not(feature = "tier-counts"))]
    {
        1.0
    }
}

/// [`pick`] from the bins: `None` when `u` is too close to a boundary to decide.
fn pick_bounded(row: Row<'_>, u: f64, s: &mut MiroScratch) -> Option<(usize, f32, f32)> {
    let b = &s.bins;
    let n = b.n;
    let nbins = b.mass.len();
    // 2 x the bound, in units of 2^-52
    let err = (4 * (n + nbins) + 64) as f64 * f64::EPSILON * margin_scale();
    let total: f64 = b.mass.iter().sum();
    let last = b.cnt.iter().rposition(|&c| c > 0)?;
    // The bin where the running sum reaches u (the last one if none does before it).
    let (mut acc, mut before, mut bin) = (0.0f64, 0usize, last);
    for k in 0..=last {
        if b.cnt[k] == 0 {
            continue;
        }
        if k == last || (acc + b.mass[k]) / total >= u {
            bin = k;
            break;
        }
        acc += b.mass[k];
        before += b.cnt[k] as usize;
    }
    if before > 0 && acc / total + err >= u {
        return None; // the crossing may be in an earlier bin
    }
    bin_tokens(row, bin, s)?;
    walk_to_crossing(&s.walk, before, n, acc, u, |acc, _| (acc / total - err, acc / total + err))
}

/// The kept tokens of bin `bin` into `s.walk` as `(desc_key(v) << 32) | p bits`, sorted (by
/// value, descending). `None` if their count is not the bin's (it always is).
fn bin_tokens(row: Row<'_>, bin: usize, s: &mut MiroScratch) -> Option<()> {
    let t = s.val_t;
    let (s2f, mf, e_star, want) = (s.bins.s2, s.bins.m, s.bins.e_star, s.bins.cnt[bin] as usize);
    let (s2, m) = (s2f as f64, mf as f64);
    let code = s.bins.top - bin as u32;
    // p in [p_lo, p_hi): e / s2 rounds into that range, so e lies in about [p_lo s2, p_hi s2].
    let p_lo = f32::from_bits(code << BIN_SHIFT) as f64;
    let p_hi = if bin == 0 { f64::INFINITY } else { f32::from_bits((code + 1) << BIN_SHIFT) as f64 };
    // expf and the division round to within 2^-23 relative in the normal range; below it
    // each only to half the smallest subnormal, which an extra ln 2 each covers.
    let sub = p_lo * s2 < 2.0 * f32::MIN_POSITIVE as f64 || p_lo < 2.0 * f32::MIN_POSITIVE as f64;
    let margin = if sub { 2.0 * std::f64::consts::LN_2 + 1e-3 } else { 1e-3 };
    let lo = l_of(m + (p_lo * s2).ln() - margin, t, s.val_lmax);
    let hi = if p_hi.is_finite() { l_up(m + (p_hi * s2).ln() + margin, t) } else { f32::INFINITY };
    gather_range(row, lo, hi, s);
    exact_terms(&s.vals, t, mf, &mut s.xs, &mut s.es);
    s.walk.clear();
    for (&l, &e) in s.vals.iter().zip(&s.es) {
        if e >= e_star {
            let p = e / s2f;
            if p.to_bits() >> BIN_SHIFT == code {
                s.walk.push(((desc_key(scaled(l, t)) as u64) << 32) | p.to_bits() as u64);
            }
        }
    }
    if s.walk.len() != want {
        return None;
    }
    s.walk.sort_unstable();
    Some(())
}

/// [`pick`] by libstdc++'s arithmetic replayed literally: the value path's sorted prefix
/// (into `out`), then `discrete_pick_at`.
fn pick_literal(row: Row<'_>, u: f64, s: &mut MiroScratch, out: &mut Candidates) -> (usize, f32, f32) {
    let (t, lmax, low) = (s.val_t, s.val_lmax, s.val_low);
    let (e_star, m, n) = (s.bins.e_star, s.bins.m, s.bins.n);
    gather_values(row, s.bins.thr, s, usize::MAX);
    exact_terms(&s.vals, t, m, &mut s.xs, &mut s.es);
    let mut last = f32::INFINITY;
    for (&l, &e) in s.vals.iter().zip(&s.es) {
        let v = scaled(l, t);
        if e >= e_star && v < last {
            last = v;
        }
    }
    let r = values(t, lmax, last, n, low, s, out);
    assert!(matches!(r, Miro::Values), "the bins' kept count is the value path's");
    let c = out.as_slice();
    let j = discrete_pick_at(c.iter().map(|d| d.p), c.len(), u);
    (j, c[j].p, c[j].logit)
}

/// Collects (id, logit) of every token with `lo <= logit <= hi` into `s.ids` / `s.vals`, in id
/// order.
fn gather_range(row: Row<'_>, lo: f32, hi: f32, s: &mut MiroScratch) {
    s.ids.clear();
    s.vals.clear();
    let mut buf = [0f32; BLOCK];
    for (b, blk) in s.blocks.iter().enumerate() {
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(blk.max >= lo) || blk.min > hi {
            continue;
        }
        let x = row.block(b, &mut buf);
        collect_range(x, lo, hi, b * BLOCK, &mut s.ids, &mut s.vals);
    }
}

simd_dispatch!(
    /// Appends (base + index, value) of the values of `x` in `[lo, hi]`.
    fn collect_range(x: &[f32], lo: f32, hi: f32, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>) -> () = collect_range_k
);

#[inline(always)]
unsafe fn collect_range_k<S: Simd>(x: &[f32], lo: f32, hi: f32, base: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>) {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; every load covers `i..i + S::N` with `i + S::N <= x.len()`, the tail is scalar.
    unsafe {
        let (lv, hv) = (S::splat(lo), S::splat(hi));
        let mut i = 0;
        while i + S::N <= x.len() {
            let v = S::load(x.as_ptr().add(i));
            let m = S::and_m(S::ge(v, lv), S::ge(hv, v));
            if S::any(m) {
                S::push_masked(m, v, base + i, ids, vals);
            }
            i += S::N;
        }
        for (k, &v) in x.iter().enumerate().skip(i) {
            if v >= lo && v <= hi {
                ids.push((base + k) as i32);
                vals.push(v);
            }
        }
    }
}

/// A logit threshold (rounded up, with margin) over which every value `v = l / t` is above
/// `v_thr` (the mirror of [`l_of`]).
fn l_up(v_thr: f64, t: Option<f32>) -> f32 {
    let l = match t {
        Some(t) => v_thr * t as f64,
        None => v_thr,
    };
    (l + (l.abs() + 1.0) * 1e-5) as f32
}

/// A logit threshold (rounded down, with margin) under which every value `v = l / t` is
/// below `v_thr`; at most `lmax`.
fn l_of(v_thr: f64, t: Option<f32>, lmax: f32) -> f32 {
    let l = match t {
        Some(t) => v_thr * t as f64,
        None => v_thr,
    };
    ((l - (l.abs() + 1.0) * 1e-5) as f32).min(lmax)
}

/// Exact `e = expf(l / t - m)` of the logits `ls`, into `es`.
fn exact_terms(ls: &[f32], t: Option<f32>, m: f32, xs: &mut Vec<f32>, es: &mut Vec<f32>) {
    xs.clear();
    xs.extend(ls.iter().map(|&l| scaled(l, t) - m));
    es.clear();
    es.resize(xs.len(), 0.0);
    expf_exact_slice(xs, es);
}

/// Exact `e` of every token of `row`, into `es`.
fn all_terms(row: Row<'_>, t: Option<f32>, m: f32, xs: &mut Vec<f32>, es: &mut Vec<f32>) {
    let n = row.len();
    xs.clear();
    xs.resize(n, 0.0);
    let mut buf = [0f32; BLOCK];
    for b in 0..n.div_ceil(BLOCK) {
        let x = row.block(b, &mut buf);
        scale_shift(x, t.unwrap_or(1.0), m, &mut xs[b * BLOCK..b * BLOCK + x.len()]);
    }
    es.clear();
    es.resize(n, 0.0);
    expf_exact_slice(xs, es);
}

simd_dispatch!(
    /// `out = x / t - m` lane by lane (llama.cpp's temperature, then the shift of its softmax).
    fn scale_shift(x: &[f32], t: f32, m: f32, out: &mut [f32]) -> () = scale_shift_k
);

#[inline(always)]
unsafe fn scale_shift_k<S: Simd>(x: &[f32], t: f32, m: f32, out: &mut [f32]) {
    assert!(out.len() >= x.len());
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU
    // supports; loads and stores cover `i..i + S::N` with `i + S::N <= x.len() <= out.len()`.
    unsafe {
        let (tv, mv) = (S::splat(t), S::splat(m));
        let mut i = 0;
        while i + S::N <= x.len() {
            let v = if t == 1.0 { S::load(x.as_ptr().add(i)) } else { S::div(S::load(x.as_ptr().add(i)), tv) };
            S::store(out.as_mut_ptr().add(i), S::sub(v, mv));
            i += S::N;
        }
        for j in i..x.len() {
            out[j] = if t == 1.0 { x[j] - m } else { x[j] / t - m };
        }
    }
}

/// llama.cpp's sequential `f32` sum of the gathered terms `s.es` in descending order (unsorted,
/// every term in `[0, 1]`, the largest exactly 1), without sorting them all: the terms of at
/// least [`SPLIT`] (at most [`SPLIT_SORT_UP_TO`], else `None`) are sorted and summed in
/// order, which leaves the running sum `S` at 1 or more, in a binade `[lo, 2 lo)` of ulp `u`; every other term `t` is nonnegative and
/// below `lo / 8`, and while the running sum stays in that binade each addition gives exactly
/// `S + RN_u(t)` (`S` is a multiple of `u`), unless `t` is a tie (half a `u` past a multiple).
/// So with no tie and `S + sum RN_u(t) + u < 2 lo` (every partial sum, exact or rounded, is
/// then below `2 lo`), the sum is `S + sum RN_u(t)` in any order, all of it exact in `f32`
/// ([`grid_nonneg`], which skips the large terms in place). `None` otherwise. Uses `s.xs`.
fn split_grid_sum(s: &mut MiroScratch) -> Option<f32> {
    s.xs.clear();
    s.xs.extend_from_slice(&s.es);
    let n = s.xs.len();
    cut_prefix(&mut s.xs, n, SPLIT);
    if s.xs.len() > SPLIT_SORT_UP_TO {
        return None;
    }
    s.xs.sort_unstable_by(|a, b| b.total_cmp(a));
    let big = sorted_sum(&s.xs);
    if !(1.0..f32::MAX).contains(&big) {
        return None;
    }
    let lo = f32::from_bits(big.to_bits() & 0x7f80_0000);
    let u = lo / 8_388_608.0;
    let (r, tie) = grid_nonneg(&s.es, SPLIT, 1.5 * lo, 0.5 * u);
    if tie || big as f64 + r as f64 + u as f64 >= 2.0 * lo as f64 {
        return None;
    }
    Some(big + r)
}

simd_dispatch!(
    /// The sum of `RN_u(t) = (t + m) - m` over the terms `t` of `x` under `below` (`m = 1.5
    /// lo`, each of them in `[0, lo / 8)`; the others count as 0) and whether one of them is a
    /// tie (`|t - RN_u(t)|` is `half = u / 2`). Every `RN_u(t)` is a multiple of `u`, and so
    /// is every lane's partial sum, which stays below `2 lo` when the caller's check passes:
    /// the sum is exact then.
    fn grid_nonneg(x: &[f32], below: f32, m: f32, half: f32) -> (f32, bool) = grid_nonneg_k
);

/// Plain code, compiled for each level by [`simd_dispatch`] (the compiler vectorises the
/// sixteen independent lanes).
#[inline(always)]
unsafe fn grid_nonneg_k<S: Simd>(x: &[f32], below: f32, m: f32, half: f32) -> (f32, bool) {
    // A skipped term becomes 0, whose `RN_u` is 0 and is no tie (`half > 0`).
    let (mut acc, mut tie) = ([0f32; 16], [false; 16]);
    let mut c = x.chunks_exact(16);
    for g in &mut c {
        for j in 0..16 {
            let t = if g[j] < below { g[j] } else { 0.0 };
            let r = (t + m) - m;
            tie[j] |= (t - r).abs() == half;
            acc[j] += r;
        }
    }
    for (j, &t) in c.remainder().iter().enumerate() {
        let t = if t < below { t } else { 0.0 };
        let r = (t + m) - m;
        tie[j] |= (t - r).abs() == half;
        acc[j] += r;
    }
    (acc.iter().sum(), tie.iter().any(|&b| b))
}

/// [`split_grid_sum`]'s split: under an eighth of any running sum of 1 or more (the grid's
/// terms must be under `lo / 8`).
///
/// A tie among the other terms sends the sum to a full sort, and with a running sum in
/// `[1, 2)` a term in `[2^-k-1, 2^-k)` is a tie with chance about `2^-(k+1)` (its bits under
/// `u / 2` all zero, the one at `u / 2` set): with the split at 1/8 a third of the Gemma 3
/// rows fell back (most for a tie among their terms between 2^-9 and 1/8), at 2^-9 one in
/// fourteen, sorting a dozen terms at the median.
const SPLIT: f32 = 1.0 / 512.0;

/// [`split_grid_sum`] gives up when more terms than this reach [`SPLIT`] (a flat row: the
/// full sort of every term is then cheaper than sorting these one by one).
const SPLIT_SORT_UP_TO: usize = 512;

/// llama.cpp's sequential `f32` sum of `es` (sorted descending), exactly.
fn sorted_sum(es: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for c in es.chunks(BLOCK) {
        s = seq_block(c, s, false, false, 0.0);
    }
    s
}

/// llama.cpp's sequential `f32` sum of the terms `s.es` in descending order (unsorted, every
/// term in `[0, 1]`, the largest exactly 1): terms below `2^-24` never change a running sum
/// that is already >= 1, so they are dropped; the rest are radix-sorted by their bits (the
/// order of non-negative floats) and summed in order. Uses `s.keys`, `s.tmp`, `s.radix`,
/// `s.xs`. Used for the gathered terms (at most [`MAX_GATHER`]), where it costs less than
/// [`bucketed_sorted_sum`] on the Gemma rows; with every token's term (a flat row) the radix
/// scatter over random low digits costs more, and the bucketed sum runs instead.
fn radix_sorted_sum(s: &mut MiroScratch) -> f32 {
    s.keys.clear();
    s.keys.extend(s.es.iter().filter(|&&e| e >= HALF_ULP_ONE).map(|&e| !e.to_bits()));
    radix_sort(&mut s.keys, &mut s.tmp, &mut s.radix);
    s.xs.clear();
    s.xs.extend(s.keys.iter().map(|&k| f32::from_bits(!k)));
    sorted_sum(&s.xs)
}

/// Buckets of [`bucketed_sorted_sum`]: the exponent (103..=127) and top 8 mantissa bits of a
/// term in `[2^-24, 1]`.
const NKEYS: usize = 25 << 8;

/// llama.cpp's sequential `f32` sum of `es` in descending order (`es` unsorted, every term in
/// `[0, 1]`, the largest exactly 1), without a full sort: terms below `2^-24` never change a
/// running sum that is already >= 1, so they are dropped; the rest are grouped by their top
/// bits (a counting sort, largest group first), and within a group the order only matters
/// where the running sum leaves its binade or meets a tie — exactly where the binade-grid sum
/// of [`seq_block`] would replay additions one by one, so such a group is sorted first.
fn bucketed_sorted_sum(es: &[f32], keys: &mut Vec<u32>, pos: &mut Vec<u32>, out: &mut Vec<f32>) -> f32 {
    const LO: u32 = 103 << 23; // 2^-24
    keys.clear();
    keys.resize(NKEYS + 1, 0);
    for &e in es {
        let b = e.to_bits();
        if b >= LO {
            keys[((b - LO) >> 15) as usize] += 1;
        }
    }
    // Offsets, largest key first.
    pos.clear();
    pos.resize(NKEYS + 1, 0);
    let mut acc = 0u32;
    for k in (0..=NKEYS).rev() {
        pos[k] = acc;
        acc += keys[k];
    }
    out.clear();
    out.resize(acc as usize, 0.0);
    for &e in es {
        let b = e.to_bits();
        if b >= LO {
            let p = &mut pos[((b - LO) >> 15) as usize];
            out[*p as usize] = e;
            *p += 1;
        }
    }
    let mut s = 0.0f32;
    let mut start = 0usize;
    for k in (0..=NKEYS).rev() {
        let cnt = keys[k] as usize;
        if cnt == 0 {
            continue;
        }
        let g = &mut out[start..start + cnt];
        s = match grid_chunk(g, s, false, false, 0.0) {
            Some(v) => v,
            None => {
                g.sort_unstable_by(|a, b| b.total_cmp(a));
                seq_block(g, s, false, false, 0.0)
            }
        };
        start += cnt;
    }
    s
}

/// Collects (id, logit) of every token with logit >= `thr` (every finite one for `-inf`) into
/// `s.ids` / `s.vals`, in id order; false when more than [`MAX_GATHER`] qualify.
fn gather(row: Row<'_>, thr: f32, s: &mut MiroScratch, limit: usize) -> bool {
    s.ids.clear();
    s.vals.clear();
    let mut buf = [0f32; BLOCK];
    for (b, blk) in s.blocks.iter().enumerate() {
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(blk.max >= thr) {
            continue;
        }
        let x = row.block(b, &mut buf);
        let base = b * BLOCK;
        if thr == f32::NEG_INFINITY {
            for (k, &v) in x.iter().enumerate() {
                s.ids.push((base + k) as i32);
                s.vals.push(v);
            }
        } else {
            collect_into(x, thr, base, &mut s.ids, &mut s.vals);
        }
        if s.ids.len() > limit {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`block_scan_t`]'s minimum is bit for bit the former one (`-max(0 - x)` over the whole
    /// vectors, so `-0.0` when that part's minimum is a zero of either sign, then `<` over the
    /// values past them): at every level, with the minimum (zeros, `-inf`) in either part.
    #[test]
    fn block_scan_min_is_the_negated_max() {
        use crate::fast::simd::{with_level, Level};
        let reference = |x: &[f32], lanes: usize| {
            let split = x.len() / (2 * lanes) * (2 * lanes);
            let neg = x[..split].iter().fold(f32::NEG_INFINITY, |a, &v| if 0.0 - v > a { 0.0 - v } else { a });
            x[split..].iter().fold(-neg, |a, &v| if v < a { v } else { a })
        };
        let mut blocks: Vec<Vec<f32>> = Vec::new();
        for len in [0usize, 5, 32, 37, 1000, BLOCK] {
            let base: Vec<f32> = (0..len).map(|i| 1.0 + (i % 13) as f32).collect();
            blocks.push(base.clone());
            for at in [0, len / 2, len.saturating_sub(1)] {
                for z in [0.0f32, -0.0, f32::NEG_INFINITY, -3.5] {
                    if len > 0 {
                        let mut b = base.clone();
                        b[at] = z;
                        blocks.push(b);
                    }
                }
            }
        }
        // Zeros of both signs in one block.
        let mut b = vec![2.0f32; BLOCK];
        b[3] = -0.0;
        b[700] = 0.0;
        blocks.push(b);
        for x in &blocks {
            for (level, lanes) in [(Level::Avx512, 16), (Level::Avx2, 8), (Level::Neon, 4), (Level::Scalar, 1)] {
                let want = reference(x, lanes).to_bits();
                if let Some((_, lo, bad)) = with_level(level, || block_scan_t(x)) {
                    assert!(!bad);
                    assert_eq!(lo.to_bits(), want, "len {} at {level:?}", x.len());
                }
            }
        }
    }

    /// A block of values in `[-10, 10)` from a xorshift seeded with `seed`, with `-inf`, `-0.0`
    /// and `0.0` at the indices `0`, `1` and `2` modulo `every`.
    fn test_block(seed: u32, every: usize) -> Vec<f32> {
        let mut x = seed;
        (0..BLOCK)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                match i % every {
                    0 => f32::NEG_INFINITY,
                    1 => -0.0,
                    2 => 0.0,
                    _ => (x % 2000) as f32 / 100.0 - 10.0,
                }
            })
            .collect()
    }

    /// [`compact_ge`] keeps exactly the values `>= thr`, in order, at every SIMD level (with
    /// `-inf`, zeros of both signs, a tail shorter than a vector, and thresholds that keep
    /// all, some groups of 64 or none).
    #[test]
    fn compact_ge_keeps_the_values_at_or_above() {
        use crate::fast::simd::{with_level, Level};
        let all = test_block(0x2545_F491, 97);
        // A whole block (every group of 64 in use), a partial one, one group, none.
        for len in [BLOCK, 1021, 64, 0] {
            let xs = &all[..len];
            for thr in [f32::NEG_INFINITY, -3.0, 0.0, 9.5, 9.95, 11.0] {
                let want: Vec<u32> = xs.iter().filter(|&&v| v >= thr).map(|v| v.to_bits()).collect();
                for level in Level::all() {
                    let got = with_level(level, || {
                        let mut out = [0f32; BLOCK + 16];
                        let k = compact_ge(xs, thr, &mut out);
                        out[..k].iter().map(|v| v.to_bits()).collect::<Vec<u32>>()
                    });
                    if let Some(got) = got {
                        assert_eq!(got, want, "len {len}, thr {thr} at {level:?}");
                    }
                }
            }
        }
    }

    /// [`scan_hits`] gives [`block_scan_t`]'s extremes and marks exactly the groups holding a
    /// value at or above the threshold; [`compress_hits`] then keeps exactly the values at or
    /// above any higher threshold, in order (a whole block, partial ones, one group, a tail
    /// alone, none; `-inf`, zeros of both signs; at every level). A NaN or `+inf` anywhere is
    /// reported by one of the two: `scan_hits` for a `+inf` or a value past the whole groups,
    /// `compress_hits` for a NaN in a group (which `scan_hits` marks).
    #[test]
    fn scan_hits_marks_and_compress_hits_keeps() {
        use crate::fast::simd::{with_level, Level};
        let all = test_block(0x9E37_79B9, 89);
        for len in [BLOCK, 1021, 40, GROUP, 7, 0] {
            let xs = &all[..len];
            for thr in [f32::NEG_INFINITY, -3.0, 0.0, 9.5, 9.95, 11.0] {
                let groups = len / GROUP;
                let want_hits: u64 = (0..groups)
                    .filter(|g| xs[g * GROUP..(g + 1) * GROUP].iter().any(|&v| v >= thr))
                    .fold(0, |h, g| h | 1 << g);
                let want_rest = xs[groups * GROUP..].iter().any(|&v| v >= thr);
                for level in Level::all() {
                    let Some(h) = with_level(level, || scan_hits(xs, thr, &all)) else { continue };
                    let (hi, lo, bad) = with_level(level, || block_scan_t(xs)).expect("same level");
                    assert!(!bad);
                    assert_eq!((h.max, h.min, h.bad), (hi, lo, false), "len {len} at {level:?}");
                    assert_eq!((h.hits, h.rest), (want_hits, want_rest), "len {len}, thr {thr} at {level:?}");
                    for cut in [thr, thr + 0.5, 9.97] {
                        let cut = cut.max(thr);
                        let want: Vec<u32> = xs.iter().filter(|&&v| v >= cut).map(|v| v.to_bits()).collect();
                        let got = with_level(level, || {
                            let mut out = [0f32; BLOCK + 16];
                            let (k, bad) = compress_hits(xs, h.hits, h.rest, cut, &mut out);
                            assert!(!bad);
                            out[..k].iter().map(|v| v.to_bits()).collect::<Vec<u32>>()
                        })
                        .expect("same level");
                        assert_eq!(got, want, "len {len}, thr {thr}, cut {cut} at {level:?}");
                    }
                }
                for at in [0, len / 2, len.saturating_sub(1)].into_iter().filter(|&a| a < len) {
                    for bad in [f32::NAN, f32::INFINITY] {
                        let mut ys = xs.to_vec();
                        ys[at] = bad;
                        if bad == f32::INFINITY {
                            // A NaN after the `+inf` in the same lane hides it from the maximum.
                            ys[(at + 16) % len] = f32::NAN;
                        }
                        for level in Level::all() {
                            let found = with_level(level, || {
                                let h = scan_hits(&ys, thr, &[]);
                                let mut out = [0f32; BLOCK + 16];
                                h.bad || compress_hits(&ys, h.hits, h.rest, thr, &mut out).1
                            });
                            if let Some(found) = found {
                                assert!(found, "len {len}, {bad} at {at}, thr {thr} at {level:?}");
                            }
                        }
                        // A lone `+inf` is the maximum.
                        if bad == f32::INFINITY {
                            let mut zs = xs.to_vec();
                            zs[at] = bad;
                            for level in Level::all() {
                                if let Some(h) = with_level(level, || scan_hits(&zs, thr, &[])) {
                                    assert!(h.bad, "len {len}, +inf at {at} at {level:?}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// [`top_blocks`] names the blocks with the largest maxima, largest first (the earliest of
    /// equal ones), and every block of a row with fewer than [`PROBES`].
    #[test]
    fn top_blocks_are_the_largest_maxima() {
        let maxima = [3.0, 9.0, -1.0, 9.0, 7.5, f32::NEG_INFINITY, 2.0, 8.0, 0.5, 6.0, 1.0, 9.5];
        let blocks: Vec<Block> = maxima.iter().map(|&max| Block { max, min: max - 1.0 }).collect();
        let mut out = Vec::new();
        top_blocks(&blocks, &mut out);
        assert_eq!(out, [11, 1, 3, 7, 4, 9, 0, 6]);
        top_blocks(&blocks[..3], &mut out);
        assert_eq!(out, [1, 0, 2]);
        top_blocks(&[], &mut out);
        assert!(out.is_empty());
    }

    /// [`scan_gather`] gathers exactly the logits at or above the final gather threshold, in
    /// id order, whatever block it starts from (the probe) and wherever the maximum lies:
    /// early, late, after a long run of lower blocks that pass a running threshold, on a
    /// partial last block; with more than [`MAX_GATHER`] passing on the way it says so, and
    /// it reports the first NaN or `+inf`.
    #[test]
    fn scan_gather_gathers_the_final_thresholds_set() {
        let mut x = 0x1234_5678u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 10_000) as f32 / 1000.0
        };
        let n = 40 * BLOCK + 300;
        for case in 0..7 {
            let mut row: Vec<f32> = (0..n).map(|i| next() - 0.25 * (i / BLOCK) as f32).collect();
            match case {
                0 => row[5] = 30.0,          // the maximum first
                1 => row[n - 3] = 30.0,      // on the partial last block
                2 => row[20 * BLOCK] = 22.0, // in the middle, a little above the rest
                3 => {}                      // the first block's own
                4 => row[17] = f32::NAN,     // a NaN
                5 => row[n - 1] = f32::INFINITY,
                _ => row[3 * BLOCK + 40] = f32::INFINITY,
            }
            for t in [None, Some(0.8f32)] {
                for probe in [0u32, 7, 20, 39, 40, 1000] {
                    let r = Row { logits: &row, patches: &[] };
                    let mut s = MiroScratch { probes: vec![probe, probe / 2 + 3], ..Default::default() };
                    match scan_gather(r, t, &mut s) {
                        Err(i) => {
                            assert!(case >= 4, "case {case}");
                            assert_eq!(i, [17, n - 1, 3 * BLOCK + 40][case - 4]);
                        }
                        Ok(got) => {
                            assert!(case < 4, "case {case}: a NaN or +inf must be reported");
                            let lmax = row.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
                            assert_eq!(got.lmax, lmax);
                            assert!(got.gathered, "case {case}");
                            let thr = gather_thr(lmax, t);
                            let want: Vec<f32> = row.iter().copied().filter(|&v| v >= thr).collect();
                            assert_eq!(s.vals, want, "case {case}, probe {probe}, t {t:?}");
                            assert_eq!(s.lmin, row.iter().fold(f32::INFINITY, |a, &v| a.min(v)));
                            assert_eq!(s.blocks.len(), n.div_ceil(BLOCK));
                        }
                    }
                }
            }
        }
        // Past MAX_GATHER near the maximum: not gathered (the caller takes every term).
        let flat: Vec<f32> = (0..MAX_GATHER + 5000).map(|i| (i % 1000) as f32 / 1000.0).collect();
        let mut s = MiroScratch::default();
        let got = scan_gather(Row { logits: &flat, patches: &[] }, None, &mut s).expect("finite");
        assert!(!got.gathered);
        // A NaN after the gather stopped is still found.
        let mut flat = flat;
        let at = flat.len() - 2000;
        flat[at] = f32::NAN;
        let got = scan_gather(Row { logits: &flat, patches: &[] }, None, &mut s);
        assert_eq!(got.err(), Some(at));
    }

    /// [`split_grid_sum`] is llama.cpp's sorted sequential sum whenever it answers: on term
    /// sets with ties (half an ulp of the running sum past a multiple), sums that cross a
    /// binade, many terms at or just under the split, and ordinary ones (which it must
    /// decide).
    #[test]
    fn split_grid_sum_is_the_sorted_sum() {
        let mut x = 0x1234_5679u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let mut decided = 0;
        for case in 0..400 {
            let n = 1 + next() as usize % 3000;
            let scale = [1.0e-4f32, 1.0e-3, 4.0e-4][case % 3];
            let mut es: Vec<f32> = (0..n).map(|_| (next() % 1_000_000) as f32 / 1.0e6 * scale).collect();
            es.push(1.0);
            if case % 5 == 0 {
                es.push(0.5 + (next() % 1000) as f32 / 2000.0); // may carry the sum past 2
            }
            if case % 7 == 3 {
                // terms at or above the split, which are sorted (some of them ties)
                for _ in 0..next() % 200 {
                    es.push(SPLIT * (1 + next() % 60) as f32 / [1.0, 8.0][case % 2]);
                }
            }
            if case % 4 == 1 {
                // ties: odd multiples of half an ulp of [1, 2) (and of [2, 4))
                for k in 0..3 {
                    es.push((2 * (next() % 64) + 1) as f32 * 5.960_464_5e-8 * (1 + k % 2) as f32);
                }
            }
            let mut sorted = es.clone();
            sorted.sort_unstable_by(|a, b| b.total_cmp(a));
            let want = sorted.iter().fold(0.0f32, |a, &e| a + e);
            let mut s = MiroScratch { es: es.clone(), ..MiroScratch::default() };
            if let Some(got) = split_grid_sum(&mut s) {
                assert_eq!(got.to_bits(), want.to_bits(), "case {case}");
                decided += 1;
            }
        }
        assert!(decided >= 200, "decided {decided} of 400");
    }

    /// [`first_term_of_code`] is the first term of its bin: the float before it has a smaller
    /// code, it has at least that code (sums `s2` from 1 to ~10^4, codes from the top bin to
    /// subnormal `p`, and codes past the top).
    #[test]
    fn first_term_of_code_starts_the_bin() {
        let code_of = |e: f32, s2: f32| (e / s2).to_bits() >> BIN_SHIFT;
        let mut x = 0x7F4A_7C15u32;
        for case in 0..2000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let s2 = 1.0 + (x % 1_000_000) as f32 / [1.0e6, 1.0e3, 1.0e2][case % 3];
            let top = code_of(1.0, s2);
            let code = top.saturating_sub(x % (top + 3)) + u32::from(case % 50 == 0);
            let e = first_term_of_code(code, s2);
            if e > 1.0 {
                assert_eq!(e, f32::from_bits(1.0f32.to_bits() + 1));
                assert!(code_of(1.0, s2) < code, "s2 {s2}, code {code}");
                continue;
            }
            assert!(code_of(e, s2) >= code, "s2 {s2}, code {code}");
            if e > 0.0 {
                assert!(code_of(f32::from_bits(e.to_bits() - 1), s2) < code, "s2 {s2}, code {code}");
            }
        }
    }

    /// [`min_term`] is the smallest term wherever it lies (in the lanes or the remainder, of
    /// any length, 1 for none); [`lane_sum`] agrees with the sequential sum within their
    /// bounds.
    #[test]
    fn min_term_and_lane_sum() {
        let mut x = 0x3C6E_F372u32;
        for len in (0..40usize).chain([1000, 3001]) {
            let es: Vec<f32> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (x % 1_000_000) as f32 / 1.0e6
                })
                .collect();
            for at in [0, len / 2, len.saturating_sub(1)] {
                let mut es = es.clone();
                if len > 0 {
                    es[at] = 1.0e-9;
                }
                let want = es.iter().fold(1.0f32, |a, &e| a.min(e));
                assert_eq!(min_term(&es), want, "len {len}, at {at}");
            }
            let xs: Vec<f64> = es.iter().map(|&e| e as f64 * 1.0e-3).collect();
            // Both sums within (len - 1) 2^-53 of the exact one, relative.
            let seq: f64 = xs.iter().sum();
            let got = lane_sum(&xs);
            assert!((got - seq).abs() <= seq * len as f64 * f64::EPSILON, "len {len}");
        }
    }

    /// The bins' masses are exact to one rounding: each equals the sum of its tokens' `p`
    /// summed exactly (in integers of the bin's ulp).
    #[test]
    fn bin_masses_are_exact() {
        let mut b = Bins { s2: 3.172_5, e_star: 1.0e-9, ..Bins::default() };
        let nbins = bins_begin(&mut b, 0.0);
        let mut x = 0x9E37_79B9u32;
        let es: Vec<f32> = (0..BLOCK)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (-((x % 25_000) as f32) / 1000.0).exp()
            })
            .collect();
        let (mut idx, mut inc) = ([0u32; BLOCK], [0u64; BLOCK]);
        bin_terms(&es, &mut b, nbins, &mut idx, &mut inc);
        let n = bins_finish(&mut b, nbins);
        assert_eq!(n, es.iter().filter(|&&e| e >= b.e_star).count());
        for (k, &mass) in b.mass.iter().enumerate() {
            let code = b.top - k as u32;
            // Exact sum: every p of the bin is an integer multiple of its ulp.
            let ulp = f64::from_bits((((((code << BIN_SHIFT) >> 23).max(1) as i32) - 150 + 1023) as u64) << 52);
            let units: u128 = es
                .iter()
                .filter(|&&e| e >= b.e_star)
                .map(|&e| e / b.s2)
                .filter(|p| p.to_bits() >> BIN_SHIFT == code)
                .map(|p| (p as f64 / ulp) as u128)
                .sum();
            let exact = units as f64 * ulp; // one rounding
            assert_eq!(mass, exact, "bin {k}");
        }
    }

    /// [`all_kept_tail`] gives [`tail_count`]'s count (and a bracket overlapping its bracket of
    /// the same mass) exactly when every token is kept, and nothing otherwise: rows with a few
    /// large logits over a bulk (a partial last block), `mu` from where the kept threshold
    /// falls among the logits to where it falls under all of them, and past 149 (where it
    /// stops falling); at every SIMD level. Every other row has one logit far under the rest,
    /// so that not every token is kept even then.
    #[test]
    fn all_kept_tail_is_tail_count() {
        use crate::fast::simd::{with_level, Level};
        let mut x = 0x51_7CC1_B727u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let n = 20 * BLOCK + 100;
        // Steps with every token kept (steps, hits), and the others.
        let (mut all_kept, mut others) = ((0, 0), 0);
        let mut s = MiroScratch::default();
        let mut out = Candidates::default();
        for k in 0..24 {
            let spread = 4.0 + (k % 4) as f32 * 3.0;
            let row: Vec<f32> = (0..n)
                .map(|i| {
                    let u = (next() >> 40) as f32 / (1u64 << 24) as f32;
                    if i % 997 == k {
                        12.0 + 6.0 * u
                    } else if k % 2 == 1 && i == 5 * BLOCK + 7 {
                        -200.0
                    } else {
                        spread * (2.0 * u - 1.0) - 4.0 - 0.1 * (i / BLOCK) as f32
                    }
                })
                .collect();
            let row = Row { logits: &row, patches: &[] };
            for level in Level::all() {
                with_level(level, || {
                    for mu in (0..48).map(|j| 24.0 + 4.5 * j as f32) {
                        let r = mirostat_prefix(row, Some(0.8), mu, &mut s, &mut out);
                        if !(matches!(r, Miro::Bounded) && s.top.ready) {
                            continue;
                        }
                        let thr_g = s.top.thr_g;
                        let c = tail_count(row, Some(0.8), thr_g, &s).expect("counted");
                        let w = all_kept_tail(Some(0.8), thr_g, &s);
                        let lmin = row.logits.iter().fold(f32::INFINITY, |a, &l| a.min(l));
                        if lmin >= sure_kept_from(&s.bins, Some(0.8)) {
                            all_kept.0 += 1;
                            all_kept.1 += usize::from(w.is_some());
                        } else {
                            others += 1;
                            assert!(w.is_none(), "row {k}, mu {mu} at {level:?}");
                        }
                        if let Some(w) = w {
                            assert_eq!(w.n, c.n, "row {k}, mu {mu} at {level:?}");
                            assert!(w.lo <= c.hi && c.lo <= w.hi, "row {k}, mu {mu} at {level:?}");
                        }
                    }
                });
            }
        }
        assert!(all_kept.0 >= 100 && all_kept.1 == all_kept.0, "every token kept: {all_kept:?}");
        assert!(others >= 100, "{others} steps with some token not kept");
    }

    /// The kept set is found by a binary search on `e` that assumes llama.cpp's surprise
    /// `-log2f(p)` never decreases as `p` grows: glibc's `log2f` must be monotone on (0, 1].
    /// Checked on every float there (every 97th in debug builds).
    #[test]
    fn log2f_is_monotone_on_probabilities() {
        let step = if cfg!(debug_assertions) { 97 } else { 1 };
        let mut prev = f32::NEG_INFINITY;
        let mut b = 1u32; // smallest subnormal
        while b <= 1.0f32.to_bits() {
            let y = f32::from_bits(b).log2();
            assert!(y >= prev, "log2f decreases at {:e}", f32::from_bits(b));
            prev = y;
            b += step;
        }
    }
}
