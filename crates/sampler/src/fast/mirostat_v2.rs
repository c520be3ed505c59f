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

use crate::candidates::{Candidates, TokenData};
use crate::fast::bounds::{grid_chunk, seq_block};
use crate::fast::expf::expf_exact_slice;
use crate::fast::row::collect_into;
use crate::fast::row::{Row, TierCounts, BLOCK};
use crate::fast::simd::{first_nan_or_inf, max_scan_tail, simd_dispatch, MaxScan, Simd};
use crate::fast::value_sort::{desc_key, key_value, radix_sort};
use crate::sort::{
    bucket_of, bucket_order_follows_values, logit_before, sorted_prefix_if_distinct, std_partial_sort, std_sort,
    NBUCKETS,
};

/// Up to this many tokens are gathered for the sum; beyond it every token's term is used.
const MAX_GATHER: usize = 32768;

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
}

/// How often the prefix was built here / left to the full path / built from values,
/// process-wide.
static TIERS: TierCounts<3> = TierCounts::new();

/// `[prefix built (either way), full path, of which from values]` so far in this process.
pub(crate) fn tier_counts() -> [u64; 3] {
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
        // the minimum as -max(-x), so the trait needs no min
        let (mut mn0, mut mn1) = (S::splat(f32::NEG_INFINITY), S::splat(f32::NEG_INFINITY));
        let mut i = 0;
        while i + 2 * S::N <= n {
            let a = S::load(p.add(i));
            let b = S::load(p.add(i + S::N));
            ms.push(a, b);
            mn0 = S::max(mn0, S::sub(zero, a));
            mn1 = S::max(mn1, S::sub(zero, b));
            i += 2 * S::N;
        }
        let (mut hi, mut badt) = ms.finish();
        let mut lo = -S::hmax(S::max(mn0, mn1));
        for &v in &x[i..] {
            max_scan_tail(v, &mut hi, &mut badt);
            if v < lo {
                lo = v;
            }
        }
        (hi, lo, badt)
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
    let nb = n.div_ceil(BLOCK);
    // 1. Scan: per-block extremes (the values after temperature are monotone in the logits).
    s.blocks.clear();
    let mut buf = [0f32; BLOCK];
    let mut lmax = f32::NEG_INFINITY;
    for b in 0..nb {
        let raw = &row.logits[b * BLOCK..((b + 1) * BLOCK).min(n)];
        let (mut hi, mut lo, bad) = block_scan_t(raw);
        if bad {
            let i = first_nan_or_inf(raw);
            return Miro::Bad(b * BLOCK + i);
        }
        let x = row.block(b, &mut buf);
        if x.as_ptr() != raw.as_ptr() {
            (hi, lo, _) = block_scan_t(x);
        }
        if hi > lmax {
            lmax = hi;
        }
        s.blocks.push(Block { max: hi, min: lo });
    }
    if lmax == f32::NEG_INFINITY {
        return Miro::Full;
    }
    let m = scaled(lmax, t); // division by t > 0 is monotone: the maximum value
    if !m.is_finite() {
        // A tiny temperature overflowed the maximum to inf: the terms below would be NaN, not
        // in [0, 1] as the bucketed sum needs (found by fuzzing). Let the full path decide.
        return Miro::Full;
    }
    if !bucket_order_follows_values(m) {
        return Miro::Full;
    }
    let lmin = s.blocks.iter().fold(f32::INFINITY, |a, b| if b.min < a { b.min } else { a });

    // 2. s1 exactly. Sorted descending, the first term is expf(0) = 1, so the running sum is
    // at least 1 from then on and every term below 2^-24 (half an ulp of 1) leaves it
    // unchanged. Only the tokens with e >= 2^-24, i.e. v - m >= ln 2^-24 = -16.64, move it;
    // and only tokens with e >= 2^-mu can be kept (p = e / s1 with s1 >= 1). Gather both
    // (with margin), sort their exact terms and replay the f32 sum.
    let mf = m as f64;
    // 2. s1 exactly. Sorted descending, the first term is expf(0) = 1, so the running sum is
    // at least 1 from then on and every term below 2^-24 (half an ulp of 1) leaves it
    // unchanged: only the tokens with e >= 2^-24 (v - m >= ln 2^-24 = -16.64) move it. When
    // they are few, gather them; otherwise take every token. Sort the exact terms and replay
    // the f32 sum.
    let s1 = if gather(row, l_of(mf - 16.7, t, lmax), s, MAX_GATHER) {
        exact_terms(&s.vals, t, m, &mut s.xs, &mut s.es);
        s.es.sort_unstable_by(|a, b| b.total_cmp(a));
        sorted_sum(&s.es)
    } else {
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
            if !gather(row, l_of(mf + (es as f64).ln() - margin, t, lmax), s, usize::MAX) {
                return Miro::Full;
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
/// (`row` the same row): the one token with that value, or, when the value is tied, the id
/// llama.cpp's sort of the bucket holding it puts there (replayed with its own algorithm over
/// the bucket in id order, as its stable scatter leaves it).
pub(crate) fn id_at(row: Row<'_>, i: usize, s: &mut MiroScratch) -> i32 {
    let t = s.val_t;
    let v = key_value(s.keys[i]);
    // Every token with value `v` is kept, so it is in `s.ids` / `s.vals` (id order).
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

/// llama.cpp's sequential `f32` sum of `es` (sorted descending), exactly.
fn sorted_sum(es: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for c in es.chunks(BLOCK) {
        s = seq_block(c, s, false, false, 0.0);
    }
    s
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
