//! top-p over a wide nucleus (a flat step, where the kept prefix runs to tens of thousands of
//! tokens): the same cut, the same draw and the same token as llama.cpp's full path, which
//! sorts every bucket of the vocabulary with libstdc++'s introsort.
//!
//! What the full path computes depends on the order of the sorted candidates only through the
//! sequence of their *values*, and that sequence is the same for every order that sorts by
//! logit: equal logits have equal `p` bits, so the running sums, the cut, min-p's cut, the
//! temperature and dist's draw (its `f64` sums and the selected index) are the same whichever
//! way ties are laid out. Only the id at the selected index can differ, and only when its
//! logit is tied with a neighbour's.
//!
//! When min-p follows and decides what is kept (top-p provably keeps more; the default chain
//! on a flat row), nothing is sorted at all ([`min_p_draw`]): one pass gives llama.cpp's
//! softmax sum and the values above min-p's threshold, and dist's crossing is found among them
//! by exact subset sums, sorting only the last thousand or so. Otherwise:
//!
//! 1. one pass computes llama.cpp's exact `e_i = expf(l_i - max)` (the vector replica), its
//!    sequential `f32` sum `s` in id order, and a histogram (count and mass) of llama.cpp's 128
//!    sort buckets;
//! 2. only the logits of the top buckets that hold the nucleus (with a margin) are gathered
//!    and sorted, by a radix sort on their bits (the ids are not carried along);
//! 3. the cut is found with llama.cpp's `f32` arithmetic on that order, and the rest of the
//!    chain (min-p, temperature, dist) is replayed on the sorted values ([`draw_tail`]: min-p's
//!    cut by bisection, dist's `f64` sums a block at a time when they are provably exact), or
//!    run on the kept prefix as usual ([`fill_kept`]);
//! 4. the selected index's id is the one token with that logit; when the logit is tied, the
//!    one bucket that holds it is sorted again with llama.cpp's own algorithm (`std::sort`, or
//!    `std::partial_sort` for the last bucket) to read the id llama.cpp has at that index
//!    ([`id_at`], for both ways).
//!
//! The caller leaves the step to the full path (before anything is consumed) when the nucleus
//! lies within llama.cpp's first 256 sorted candidates (another order then) or past the
//! gathered buckets.

use crate::candidates::{Candidates, TokenData};
use crate::fast::bounds::seq_block;
use crate::fast::expf::expf_exact_slice;
use crate::fast::row::{collect_into, Row, TierCounts, BLOCK};
use crate::fast::simd::{simd_dispatch, Simd};
use crate::fast::value_sort::{desc_key, key_value, radix_sort};
use crate::rng::LlamaRng;
use crate::sort::{bucket_of, logit_before, std_partial_sort, std_sort, NBUCKETS};

/// The nucleus must reach past this many candidates (llama.cpp's first partial sort).
const FIRST: usize = 256;

/// Running sums of the cut are taken this many terms at a time (vector grid replay) until one
/// reaches `p`; only that chunk is replayed term by term.
const CUT_CHUNK: usize = 512;

/// Reusable buffers.
#[derive(Clone, Debug, Default)]
pub(crate) struct WideScratch {
    /// The gathered buckets' ids and logits (id order).
    ids: Vec<i32>,
    vals: Vec<f32>,
    /// The gathered buckets' [`desc_key`]s, then radix-sorted.
    keys: Vec<u32>,
    tmp: Vec<u32>,
    /// Radix histograms.
    radix: Vec<u32>,
    /// `logit - max` and `expf` of it, in sorted order.
    xs: Vec<f32>,
    es: Vec<f32>,
    /// `p = RN(e / s)` of the gathered values, in sorted order.
    ps: Vec<f32>,
    /// The kept prefix, as the full path's top-p leaves it (ties aside).
    kept: Vec<TokenData>,
    /// One bucket, for the tie replay.
    group: Vec<TokenData>,
    /// [`draw_tail`]'s per-block `f64` sums of dist's weights.
    block_sums: Vec<f64>,
    /// [`min_p_draw`]'s weights of the kept values (`vals`), a narrowed set of both, and a
    /// sample (key, weight).
    ws: Vec<f32>,
    next_vals: Vec<f32>,
    next_ws: Vec<f32>,
    sample: Vec<u64>,
    /// Every token of the row with a value `>= known_min` (ids and values), when the last
    /// [`min_p_draw`] decided on a set of at most [`KNOWN_MAX`]; empty otherwise. [`id_at`]
    /// reads an untied selected value's id here instead of from the row.
    known_ids: Vec<i32>,
    known_vals: Vec<f32>,
    known_min: f32,
}

/// The most kept values [`min_p_draw`] keeps a copy of for [`id_at`].
const KNOWN_MAX: usize = 4096;

/// How often the wide nucleus was built / left to the full path, process-wide.
static TIERS: TierCounts<2> = TierCounts::new();

/// `[built, full path]` so far in this process.
pub(crate) fn tier_counts() -> [u64; 2] {
    TIERS.get()
}

/// The kept prefix [`wide_nucleus`] left in its scratch.
pub(crate) struct Wide {
    /// Length of the kept prefix (`s.keys[..last]`, `s.ps[..last]`).
    last: usize,
}

/// llama.cpp's top-p (`p < 1`, `min_keep`) over `row` (maximum `m`, finite, no NaN or `+inf`),
/// when its nucleus is wider than [`FIRST`]: leaves the kept prefix's values in `s` (sorted;
/// read them with [`fill_kept`] or [`draw_tail`]). `None` when the full path must run.
pub(crate) fn wide_nucleus(row: Row<'_>, m: f32, p: f32, min_keep: usize, s: &mut WideScratch) -> Option<Wide> {
    let r = build(row, m, p, min_keep, s);
    TIERS.bump(r.is_none() as usize);
    r
}

fn build(row: Row<'_>, m: f32, p: f32, min_keep: usize, s: &mut WideScratch) -> Option<Wide> {
    forget_known(s);
    let n = row.len();
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(p >= 0.0) || min_keep > n {
        return None;
    }
    // 1. Exact exponentials, llama.cpp's sum and the bucket histogram.
    let mut counts = [0u32; NBUCKETS];
    let mut mass = [0f64; NBUCKETS];
    let mut sum = 0.0f32;
    let mut buf = [0f32; BLOCK];
    let mut xs = [0f32; BLOCK];
    let mut es = [0f32; BLOCK];
    let nb = n.div_ceil(BLOCK);
    for b in 0..nb {
        let x = row.block(b, &mut buf);
        let len = x.len();
        for (d, &v) in xs[..len].iter_mut().zip(x) {
            *d = v - m;
        }
        expf_exact_slice(&xs[..len], &mut es[..len]);
        // llama.cpp's sequential f32 sum, replayed exactly a block at a time.
        sum = seq_block(&es[..len], sum, false, false, 0.0);
        for (&v, &e) in x.iter().zip(&es[..len]) {
            let j = bucket_of(v);
            counts[j] += 1;
            mass[j] += e as f64;
        }
    }
    let total: f64 = mass.iter().sum();
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(sum > 0.0) || !sum.is_finite() || !(total > 0.0) {
        return None;
    }
    let low_bucket = (0..NBUCKETS).find(|&j| counts[j] > 0)?;
    // 2. The top buckets holding the nucleus, with a margin for the f32 rounding of the sums.
    let want = (p as f64 * 1.002 + 1e-4).min(1.0) * total;
    let (mut have, mut acc) = (0usize, 0.0f64);
    let mut ib = low_bucket;
    // Walk down from the top bucket until the nucleus (and more than FIRST) is covered.
    for j in (low_bucket..NBUCKETS).rev() {
        have += counts[j] as usize;
        acc += mass[j];
        if acc >= want && have >= min_keep.max(FIRST + 1) {
            ib = j;
            break;
        }
    }
    // Buckets >= ib are the values >= the bucket's lower edge (`bucket_of` is monotone).
    let thr = if ib == 0 { f32::NEG_INFINITY } else { bucket_floor(ib) };
    s.ids.clear();
    s.vals.clear();
    for b in 0..nb {
        let x = row.block(b, &mut buf);
        collect_into(x, thr, b * BLOCK, &mut s.ids, &mut s.vals);
    }
    s.keys.clear();
    s.keys.extend(s.vals.iter().map(|&v| desc_key(v)));
    radix_sort(&mut s.keys, &mut s.tmp, &mut s.radix);
    // 3. The cut, with llama.cpp's arithmetic: p_i = RN(e_i / s), summed in f32.
    let g = s.keys.len();
    s.xs.clear();
    s.xs.extend(s.keys.iter().map(|&k| key_value(k) - m));
    s.es.clear();
    s.es.resize(g, 0.0);
    expf_exact_slice(&s.xs, &mut s.es);
    s.ps.clear();
    s.ps.extend(s.es.iter().map(|&e| e / sum));
    // The running sum never decreases (every `p` is >= 0), so a chunk whose last running sum is
    // below `p` holds no cut: those are summed by the exact grid replay, and the term-by-term
    // loop starts at the first chunk that reaches `p`.
    let mut cum = 0.0f32;
    let mut from = 0;
    while from + CUT_CHUNK <= g {
        let end = seq_block(&s.ps[from..from + CUT_CHUNK], cum, false, false, 0.0);
        if end >= p {
            break;
        }
        cum = end;
        from += CUT_CHUNK;
    }
    let mut last = None;
    for (i, &q) in s.ps.iter().enumerate().skip(from) {
        cum += q;
        if cum >= p && i + 1 >= min_keep {
            last = Some(i + 1);
            break;
        }
    }
    let last = last?;
    if last <= FIRST {
        return None;
    }
    Some(Wide { last })
}

/// The kept prefix as the full path's top-p leaves it (sorted, `p` as top-p's softmax leaves
/// it), ids left `-1`: the tail of the chain never reads them, and they are filled in for the
/// selected index only ([`id_at`]).
pub(crate) fn fill_kept(w: &Wide, s: &mut WideScratch, out: &mut Candidates) {
    s.kept.clear();
    s.kept.extend(s.keys[..w.last].iter().zip(&s.ps).map(|(&k, &q)| TokenData { id: -1, logit: key_value(k), p: q }));
    out.fill_from(&s.kept);
    out.set_sorted(true);
}

/// A member of the chain between top-p and dist that changes the candidates (no-ops left out).
#[derive(Clone, Copy, Debug)]
pub(crate) enum TailOp {
    /// min-p with its `p` (`> 0` or NaN: the role `MinP`) and `min_keep`.
    MinP { p: f32, min_keep: usize },
    /// A plain temperature (`t > 0`, finite: the role `Temp`).
    Temp(f32),
}

/// At most this many temperatures are replayed by [`draw_tail`] (more: use [`fill_kept`]).
pub(crate) const MAX_TEMPS: usize = 4;

/// At most this many members are replayed by [`draw_tail`].
const MAX_OPS: usize = 16;

/// The members for [`draw_tail`], in chain order (fixed capacity: no allocation per token).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TailOps {
    ops: [TailOp; MAX_OPS],
    n: usize,
}

impl TailOps {
    pub(crate) fn new() -> Self {
        TailOps { ops: [TailOp::Temp(1.0); MAX_OPS], n: 0 }
    }

    /// Appends `op`; `None` when full.
    pub(crate) fn push(&mut self, op: TailOp) -> Option<()> {
        *self.ops.get_mut(self.n)? = op;
        self.n += 1;
        Some(())
    }

    pub(crate) fn as_slice(&self) -> &[TailOp] {
        &self.ops[..self.n]
    }
}

/// Values per block of [`draw_tail`]'s sums.
const TAIL_BLOCK: usize = 256;

/// The kept prefix's value at `k` after the temperatures `ts`, as `temp_scale` leaves it (one
/// `f32` division per temperature, in order).
#[inline]
fn scaled(k: u32, ts: &[f32]) -> f32 {
    ts.iter().fold(key_value(k), |v, &t| v / t)
}

/// The members `ops` (no more than [`MAX_TEMPS`] temperatures), then dist with `rng`, on the
/// kept prefix, as the full path runs them on the array [`fill_kept`] leaves: returns the
/// selected index and its logit as dist saw it (the temperatures applied). Same RNG use (one
/// `uniform_f64`).
///
/// Why it is exact: every member only reads values in sorted order, and
/// - a temperature divides each value (monotone: the order stays sorted, equal stay equal);
/// - min-p keeps the first `i >= 1` values until one is below `first + ln p` at an index
///   `>= min_keep` (both of its branches do): the values below the threshold are a suffix,
///   found by bisection;
/// - dist sums `e_i = expf(w_i - w_0)` in `f64` in order, then takes the first running sum
///   `>= total * u`. All `e_i` are multiples of `2^q`, the ulp of the smallest, so every sum of
///   them is too; when `len * max e <= 2^(q + 53)` every such sum is a representable `f64`, so
///   no addition rounds and sums taken a block at a time are llama.cpp's. Otherwise the
///   sequential sum is replayed.
pub(crate) fn draw_tail(w: &Wide, ops: &[TailOp], rng: &mut LlamaRng, s: &mut WideScratch) -> (usize, f32) {
    let keys = &s.keys[..w.last];
    let mut temps = [0f32; MAX_TEMPS];
    let mut nt = 0;
    let mut len = keys.len();
    for op in ops {
        match *op {
            TailOp::Temp(t) => {
                temps[nt] = t;
                nt += 1;
            }
            TailOp::MinP { p, min_keep } => {
                len = min_p_len(&keys[..len], &temps[..nt], p, min_keep);
            }
        }
    }
    let ts = &temps[..nt];
    let keys = &keys[..len];
    let w0 = scaled(keys[0], ts);
    if len == 1 {
        let _ = rng.uniform_f64();
        return (0, w0);
    }
    let sums = block_sums(keys, ts, w0, &mut s.block_sums, &mut s.xs, &mut s.es);
    #[cfg(test)]
    TAIL_BRANCHES.with(|c| {
        let mut v = c.get();
        v[sums.is_none() as usize] += 1;
        c.set(v);
    });
    let i = match sums {
        Some(total) => {
            let target = total * rng.uniform_f64();
            crossing(keys, ts, w0, target, &s.block_sums, &mut s.xs, &mut s.es)
        }
        None => dist_sequential(keys, ts, w0, rng, &mut s.xs, &mut s.es),
    };
    (i, scaled(keys[i], ts))
}

/// min-p's kept length on the sorted prefix `keys` after the temperatures `ts`: the first
/// index `i >= 1` whose value is below `first + ln p` and `i >= min_keep`, else all.
fn min_p_len(keys: &[u32], ts: &[f32], p: f32, min_keep: usize) -> usize {
    let thr = scaled(keys[0], ts) + p.ln();
    // The values are non-increasing, so those below the threshold are a suffix. (The negation
    // is min-p's own test: a NaN threshold keeps everything.)
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    let below = keys.partition_point(|&k| !(scaled(k, ts) < thr));
    below.max(min_keep).max(1).min(keys.len())
}

/// dist's weights `e_i = expf(w_i - w0)` of block `b` of `keys` into `es` (through `xs`).
fn tail_weights(keys: &[u32], ts: &[f32], w0: f32, b: usize, xs: &mut Vec<f32>, es: &mut Vec<f32>) {
    let ks = &keys[b * TAIL_BLOCK..((b + 1) * TAIL_BLOCK).min(keys.len())];
    xs.clear();
    xs.extend(ks.iter().map(|&k| key_value(k)));
    for &t in ts {
        for x in xs.iter_mut() {
            *x /= t;
        }
    }
    for x in xs.iter_mut() {
        *x -= w0;
    }
    es.clear();
    es.resize(ks.len(), 0.0);
    expf_exact_slice(xs, es);
}

#[cfg(test)]
thread_local! {
    /// [`draw_tail`]'s dist on this thread: `[by exact block sums, sequential]` (test builds
    /// only).
    static TAIL_BRANCHES: std::cell::Cell<[usize; 2]> = const { std::cell::Cell::new([0; 2]) };
}

/// Per-block `f64` sums of dist's weights into `sums`, and their total, when every sum of the
/// weights is exact (see [`draw_tail`]); `None` otherwise.
fn block_sums(
    keys: &[u32],
    ts: &[f32],
    w0: f32,
    sums: &mut Vec<f64>,
    xs: &mut Vec<f32>,
    es: &mut Vec<f32>,
) -> Option<f64> {
    if !w0.is_finite() {
        return None;
    }
    sums.clear();
    let (mut lo, mut hi) = (f32::INFINITY, 0f32);
    for b in 0..keys.len().div_ceil(TAIL_BLOCK) {
        tail_weights(keys, ts, w0, b, xs, es);
        let mut lanes = [0f64; 8];
        let mut c = es.chunks_exact(8);
        for g in &mut c {
            for (l, &e) in lanes.iter_mut().zip(g) {
                *l += e as f64;
            }
        }
        let rest: f64 = c.remainder().iter().map(|&e| e as f64).sum();
        sums.push(lanes.iter().sum::<f64>() + rest);
        lo = es.iter().fold(lo, |a, &e| a.min(e));
        hi = es.iter().fold(hi, |a, &e| a.max(e));
    }
    // `!(lo > 0)` also catches NaN.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(lo > 0.0) || !hi.is_finite() {
        return None;
    }
    let exp = (lo.to_bits() >> 23) as i32;
    let q = if exp == 0 { -149 } else { exp - 127 - 23 };
    if keys.len() as f64 * hi as f64 > 2f64.powi(q + 53) {
        return None;
    }
    Some(sums.iter().sum())
}

/// The first index whose running sum of weights reaches `target`, from exact block sums.
fn crossing(
    keys: &[u32],
    ts: &[f32],
    w0: f32,
    target: f64,
    sums: &[f64],
    xs: &mut Vec<f32>,
    es: &mut Vec<f32>,
) -> usize {
    let mut run = 0.0f64;
    for (b, &bs) in sums.iter().enumerate() {
        if run + bs >= target {
            // Exact sums: the block's own running sums end at `run + bs`, so one reaches it.
            tail_weights(keys, ts, w0, b, xs, es);
            let mut r = run;
            for (k, &e) in es.iter().enumerate() {
                r += e as f64;
                if r >= target {
                    return b * TAIL_BLOCK + k;
                }
            }
        }
        run += bs;
    }
    keys.len() - 1
}

/// dist's arithmetic replayed literally: the sequential `f64` total, the draw, the first
/// running sum that reaches `total * u` (else the last index).
fn dist_sequential(
    keys: &[u32],
    ts: &[f32],
    w0: f32,
    rng: &mut LlamaRng,
    xs: &mut Vec<f32>,
    es: &mut Vec<f32>,
) -> usize {
    let nb = keys.len().div_ceil(TAIL_BLOCK);
    let mut total = 0.0f64;
    for b in 0..nb {
        tail_weights(keys, ts, w0, b, xs, es);
        total = es.iter().fold(total, |t, &e| t + e as f64);
    }
    let target = total * rng.uniform_f64();
    let mut run = 0.0f64;
    for b in 0..nb {
        tail_weights(keys, ts, w0, b, xs, es);
        for (k, &e) in es.iter().enumerate() {
            run += e as f64;
            if run >= target {
                return b * TAIL_BLOCK + k;
            }
        }
    }
    keys.len() - 1
}

/// How often [`min_p_draw`] decided the draw, process-wide.
static SHORTCUT: TierCounts<1> = TierCounts::new();

/// Draws decided by [`min_p_draw`] so far in this process.
pub(crate) fn shortcut_count() -> u64 {
    SHORTCUT.get()[0]
}

/// Kept values at most this many are sorted whole by [`crossing_unsorted`].
const SELECT_SMALL: usize = 1024;
/// Sample size and half-width (in sample elements) of [`crossing_unsorted`]'s brackets.
const SAMPLE: usize = 256;
const BRACKET: usize = 12;

/// The whole chain from top-p on without sorting, when min-p decides what is kept: top-p
/// (`p_top`) over `row` (maximum `m`), then `ops` (temperatures, one min-p, temperatures), then
/// dist with `rng`. Returns the selected sorted index, its value in the row (`+0.0` for both
/// zeros) and its logit as dist saw it; `None`, before the RNG is touched, when the shortcut
/// does not apply (the sorted path then runs).
///
/// Why it is exact. Let `f` be the temperatures before min-p and `a` the number of values
/// with `f(v) >= f(m) + ln p` (an upper set of values: `f` is monotone, and `m` is the first
/// sorted value). If the running `f32` sum of top-p's `p_i` over the first `a` sorted values
/// stays below `p_top`, top-p keeps more than `a` values, and min-p then keeps exactly the
/// first `a` (when `a >= min_keep`): the sorted order of the kept values decides nothing up to
/// here. That running sum is bounded without the order: each addition below 1 rounds by at
/// most `2^-25`, so it is at most `sum_i p_i + a 2^-25`, and `p_i = RN(e_i / s) <= (e_i / s)(1
/// + 2^-24)`. Dist's `f64` sums are exact under the condition of [`draw_tail`], so every sum
/// of a subset of the kept weights is exact in any order: the crossing is found by splitting
/// the kept values by value ranges around it (sums of the ranges above it are its running sum
/// so far), and only the last few hundred are sorted. The sorted order is llama.cpp's up to
/// ties, which do not change values (see the module doc); the id is [`id_at`]'s.
///
/// `beyond`: the caller has proven that top-p keeps more than [`FIRST`] values (its running
/// sum over the first 256 sorted candidates stays below `p_top`, so llama.cpp sorts the whole
/// row). Then when `a <= FIRST` (a real model's flat step: the nucleus holds thousands of
/// tokens, min-p's threshold a few dozen) top-p keeps more than `a` without any bound, and
/// the softmax sum is not needed: one pass collects the kept values.
pub(crate) fn min_p_draw(
    row: Row<'_>,
    m: f32,
    p_top: f32,
    beyond: bool,
    ops: &[TailOp],
    rng: &mut LlamaRng,
    s: &mut WideScratch,
) -> Option<(usize, f32, f32)> {
    forget_known(s);
    let (before, p_min, min_keep, all) = split_ops(ops)?;
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(p_min > 0.0 && p_min <= 1.0 && p_top > 0.0 && p_top <= 1.0) {
        return None;
    }
    let ts = &before.0[..before.1];
    let thr = scaled_value(m, ts) + p_min.ln();
    if !thr.is_finite() {
        return None;
    }
    let v_min = lowest_kept(m, ts, thr)?;
    // (In this order: the proof, when given, spares the softmax pass.)
    let keeps_more = (beyond && kept_within_first(row, v_min, s)) || top_p_keeps_more(row, m, v_min, p_top, s);
    if !keeps_more {
        return None;
    }
    if s.vals.len() < min_keep {
        return None;
    }
    let ts_all = &all.0[..all.1];
    let w0 = scaled_value(m, ts_all);
    let total = kept_weights(ts_all, w0, s)?;
    if s.vals.len() <= KNOWN_MAX {
        // (The crossing below reorders `s.vals` and reuses `s.ids`.)
        s.known_ids.extend_from_slice(&s.ids);
        s.known_vals.extend_from_slice(&s.vals);
        s.known_min = v_min;
    }
    SHORTCUT.bump(0);
    let target = total * rng.uniform_f64();
    let (i, v) = crossing_unsorted(target, total, s);
    Some((i, v, scaled_value(v, ts_all)))
}

/// The values `>= v_min` into `s.vals` (ids into `s.ids`), in one pass: whether they are at
/// most [`FIRST`] (then top-p, proven to keep more than that, keeps more than them).
fn kept_within_first(row: Row<'_>, v_min: f32, s: &mut WideScratch) -> bool {
    s.ids.clear();
    s.vals.clear();
    let mut buf = [0f32; BLOCK];
    for b in 0..row.len().div_ceil(BLOCK) {
        collect_into(row.block(b, &mut buf), v_min, b * BLOCK, &mut s.ids, &mut s.vals);
        if s.vals.len() > FIRST {
            return false;
        }
    }
    true
}

/// The values `>= v_min` into `s.vals` (ids into `s.ids`), with llama.cpp's softmax sum:
/// whether they are more than [`FIRST`] and top-p's running `f32` sum over them (in sorted
/// order, whatever it is) provably stays below `p_top`, so top-p keeps more than them.
fn top_p_keeps_more(row: Row<'_>, m: f32, v_min: f32, p_top: f32, s: &mut WideScratch) -> bool {
    let (sum, mass) = exp_sum_and_kept(row, m, v_min, s);
    let a = s.vals.len();
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(sum > 0.0) || !sum.is_finite() || a <= FIRST {
        return false;
    }
    // The running sum over the first `a` stays below p_top (f64 margins far above the f64
    // rounding of `mass`).
    // (`2^-100` per term covers the absolute error of subnormal `p_i`.)
    let bound = mass / sum as f64 * (1.0 + 2f64.powi(-20)) + a as f64 * (2f64.powi(-25) + 2f64.powi(-100));
    bound < p_top as f64
}

/// Temperatures, at most [`MAX_TEMPS`], and how many.
type Temps = ([f32; MAX_TEMPS], usize);

/// `ops` as `[temperatures] min-p [temperatures]`: the temperatures before min-p, its `p` and
/// `min_keep`, and all the temperatures in order. `None` for any other shape.
fn split_ops(ops: &[TailOp]) -> Option<(Temps, f32, usize, Temps)> {
    let (mut before, mut all) = (([0f32; MAX_TEMPS], 0), ([0f32; MAX_TEMPS], 0));
    let mut min_p = None;
    for op in ops {
        match *op {
            TailOp::Temp(t) => {
                if all.1 == MAX_TEMPS {
                    return None;
                }
                all.0[all.1] = t;
                all.1 += 1;
                if min_p.is_none() {
                    before = all;
                }
            }
            TailOp::MinP { p, min_keep } => {
                if min_p.is_some() {
                    return None;
                }
                min_p = Some((p, min_keep));
            }
        }
    }
    let (p, min_keep) = min_p?;
    Some((before, p, min_keep, all))
}

/// `v` after the temperatures `ts` (one `f32` division each, in order, as `temp_scale`).
#[inline]
fn scaled_value(v: f32, ts: &[f32]) -> f32 {
    ts.iter().fold(v, |v, &t| v / t)
}

/// Ordered integer of a finite `f32`, ascending with the value (both zeros distinct but
/// adjacent, which bisection over a monotone predicate does not mind); [`unord`] inverts it.
fn ord(v: f32) -> i64 {
    let b = v.to_bits() as i32;
    if b < 0 {
        -((b & 0x7fff_ffff) as i64) - 1
    } else {
        b as i64
    }
}

/// The `f32` whose [`ord`] is `k`.
fn unord(k: i64) -> f32 {
    if k < 0 {
        f32::from_bits(((-(k + 1)) as u32) | 0x8000_0000)
    } else {
        f32::from_bits(k as u32)
    }
}

/// The smallest finite `f32` `v <= m` with `f(v) >= thr` (`f` the temperatures `ts`, monotone),
/// by bisection over the ordered `f32`s; `None` when `f(m) < thr`.
fn lowest_kept(m: f32, ts: &[f32], thr: f32) -> Option<f32> {
    let keep = |v: f32| scaled_value(v, ts) >= thr;
    if !keep(m) {
        return None;
    }
    if keep(f32::MIN) {
        return Some(f32::MIN);
    }
    let (mut lo, mut hi) = (ord(f32::MIN), ord(m));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if keep(unord(mid)) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(unord(hi))
}

/// One pass over `row`: llama.cpp's softmax sum `s` of `e_i = expf(l_i - m)` (sequential `f32`,
/// id order), the values `>= v_min` into `s.vals` (their ids into `s.ids`), and the `f64` sum
/// of their `e_i` (lanes; its rounding is far inside the caller's margin).
fn exp_sum_and_kept(row: Row<'_>, m: f32, v_min: f32, s: &mut WideScratch) -> (f32, f64) {
    let (mut sum, mut mass) = (0.0f32, 0.0f64);
    let (mut buf, mut xs, mut es) = ([0f32; BLOCK], [0f32; BLOCK], [0f32; BLOCK]);
    s.ids.clear();
    s.vals.clear();
    for b in 0..row.len().div_ceil(BLOCK) {
        let x = row.block(b, &mut buf);
        let len = x.len();
        for (d, &v) in xs[..len].iter_mut().zip(x) {
            *d = v - m;
        }
        expf_exact_slice(&xs[..len], &mut es[..len]);
        sum = seq_block(&es[..len], sum, false, false, 0.0);
        mass += masked_sum(x, &es[..len], v_min);
        collect_into(x, v_min, b * BLOCK, &mut s.ids, &mut s.vals);
    }
    (sum, mass)
}

simd_dispatch!(
    /// The `f64` sum (per-lane accumulators) of `e[i]` over the `x[i] >= v_min`.
    fn masked_sum(x: &[f32], e: &[f32], v_min: f32) -> f64 = masked_sum_k
);

#[inline(always)]
unsafe fn masked_sum_k<S: Simd>(x: &[f32], e: &[f32], v_min: f32) -> f64 {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside both slices (`i + S::N <= n`, `n` the shorter length; the tail done value by value).
    unsafe {
        let n = x.len().min(e.len());
        let vm = S::splat(v_min);
        let mut d = S::dzero();
        let mut i = 0;
        while i + S::N <= n {
            let m = S::ge(S::load(x.as_ptr().add(i)), vm);
            d = S::dadd(d, S::keep(m, S::load(e.as_ptr().add(i))));
            i += S::N;
        }
        let tail: f64 = x[i..n].iter().zip(&e[i..n]).filter(|(&v, _)| v >= v_min).map(|(_, &w)| w as f64).sum();
        S::dsum(d) + tail
    }
}

simd_dispatch!(
    /// `(f64 sum, min, max)` of non-empty `e` (no NaN).
    fn sum_min_max(e: &[f32]) -> (f64, f32, f32) = sum_min_max_k
);

#[inline(always)]
unsafe fn sum_min_max_k<S: Simd>(e: &[f32]) -> (f64, f32, f32) {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slice (`i + S::N <= n`, the tail done value by value).
    unsafe {
        let n = e.len();
        let mut d = S::dzero();
        let (mut lo, mut hi) = (S::splat(f32::INFINITY), S::splat(f32::NEG_INFINITY));
        let mut i = 0;
        while i + S::N <= n {
            let v = S::load(e.as_ptr().add(i));
            d = S::dadd(d, v);
            lo = S::min(lo, v);
            hi = S::max(hi, v);
            i += S::N;
        }
        let zero = S::splat(0.0);
        let (mut sum, mut lo, mut hi) = (S::dsum(d), -S::hmax(S::sub(zero, lo)), S::hmax(hi));
        for &v in &e[i..] {
            sum += v as f64;
            lo = lo.min(v);
            hi = hi.max(v);
        }
        (sum, lo, hi)
    }
}

simd_dispatch!(
    /// Splits the values `v` (weights `w`) at `v1 >= v2`: above `v1` (sum of weights and count),
    /// in `[v2, v1]` (sum of weights; positions into `idx`, values into `mid`).
    fn split3(v: &[f32], w: &[f32], v1: f32, v2: f32, idx: &mut Vec<i32>, mid: &mut Vec<f32>) -> (f64, usize, f64) = split3_k
);

#[inline(always)]
unsafe fn split3_k<S: Simd>(
    v: &[f32],
    w: &[f32],
    v1: f32,
    v2: f32,
    idx: &mut Vec<i32>,
    mid: &mut Vec<f32>,
) -> (f64, usize, f64) {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside both slices (`i + S::N <= n`, `n` the shorter length; the tail done value by value).
    unsafe {
        let n = v.len().min(w.len());
        let (a, b) = (S::splat(v1), S::splat(v2));
        let (mut d_hi, mut d_mid) = (S::dzero(), S::dzero());
        let mut n_hi = 0usize;
        let mut i = 0;
        while i + S::N <= n {
            let x = S::load(v.as_ptr().add(i));
            let y = S::load(w.as_ptr().add(i));
            let hi = S::lt(a, x);
            let m = S::and_m(S::ge(a, x), S::ge(x, b));
            d_hi = S::dadd(d_hi, S::keep(hi, y));
            d_mid = S::dadd(d_mid, S::keep(m, y));
            n_hi += S::count(hi) as usize;
            if S::any(m) {
                S::push_masked(m, x, i, idx, mid);
            }
            i += S::N;
        }
        let (mut s_hi, mut s_mid) = (S::dsum(d_hi), S::dsum(d_mid));
        for k in i..n {
            if v[k] > v1 {
                s_hi += w[k] as f64;
                n_hi += 1;
            } else if v[k] >= v2 {
                s_mid += w[k] as f64;
                idx.push(k as i32);
                mid.push(v[k]);
            }
        }
        (s_hi, n_hi, s_mid)
    }
}

/// Dist's weights `expf(f(v) - w0)` of the kept values `s.vals` into `s.ws`, and their total
/// when every sum of them is exact (see [`draw_tail`]).
fn kept_weights(ts: &[f32], w0: f32, s: &mut WideScratch) -> Option<f64> {
    if !w0.is_finite() {
        return None;
    }
    s.ws.clear();
    s.ws.resize(s.vals.len(), 0.0);
    for (c, out) in s.vals.chunks(TAIL_BLOCK).zip(s.ws.chunks_mut(TAIL_BLOCK)) {
        s.xs.clear();
        s.xs.extend_from_slice(c);
        // One pass per temperature, then the maximum's: `temp_scale` and dist's arithmetic.
        for &t in ts {
            for x in s.xs.iter_mut() {
                *x /= t;
            }
        }
        for x in s.xs.iter_mut() {
            *x -= w0;
        }
        expf_exact_slice(&s.xs, out);
    }
    let (total, lo, hi) = sum_min_max(&s.ws);
    // `!(lo > 0)` also catches NaN.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(lo > 0.0) || !hi.is_finite() {
        return None;
    }
    let exp = (lo.to_bits() >> 23) as i32;
    let q = if exp == 0 { -149 } else { exp - 127 - 23 };
    if s.ws.len() as f64 * hi as f64 > 2f64.powi(q + 53) {
        return None;
    }
    Some(total)
}

/// The weight of a (key, weight) pair.
#[inline]
fn pair_weight(x: u64) -> f64 {
    f32::from_bits(x as u32) as f64
}

/// The first sorted index whose running sum of the kept weights (values `s.vals`, weights
/// `s.ws`, unsorted, sums exact, `total` theirs) reaches `target`, and its value. Keeps a set of
/// values holding that index, with the count and the sum of the weights of the values above
/// it, and narrows it to a bracket of values picked from a sorted sample, until it is short
/// enough to sort.
fn crossing_unsorted(target: f64, total: f64, s: &mut WideScratch) -> (usize, f32) {
    let (mut cv, mut cw) = (std::mem::take(&mut s.vals), std::mem::take(&mut s.ws));
    let (mut nv, mut nw) = (std::mem::take(&mut s.next_vals), std::mem::take(&mut s.next_ws));
    let (mut pos, mut above, mut sum) = (0usize, 0.0f64, total);
    while cv.len() > SELECT_SMALL {
        let (v1, v2) = bracket(&cv, &cw, (target - above) / sum, &mut s.sample);
        s.ids.clear();
        nv.clear();
        let (s_hi, n_hi, s_mid) = split3(&cv, &cw, v1, v2, &mut s.ids, &mut nv);
        let n_mid = nv.len();
        if n_hi > 0 && above + s_hi >= target {
            // Above the bracket: the values `>= next_up(v1)`.
            keep_range(&cv, &cw, f32::INFINITY, v1.next_up(), &mut s.ids, &mut nv, &mut nw);
            sum = s_hi;
        } else if n_mid > 0 && above + s_hi + s_mid >= target {
            nw.clear();
            nw.extend(s.ids.iter().map(|&i| cw[i as usize]));
            (above, pos, sum) = (above + s_hi, pos + n_hi, s_mid);
        } else {
            // Below the bracket: the values `<= next_down(v2)`.
            keep_range(&cv, &cw, v2.next_down(), f32::NEG_INFINITY, &mut s.ids, &mut nv, &mut nw);
            (above, pos, sum) = (above + s_hi + s_mid, pos + n_hi + n_mid, sum - s_hi - s_mid);
        }
        let shrunk = nv.len() < cv.len();
        std::mem::swap(&mut cv, &mut nv);
        std::mem::swap(&mut cw, &mut nw);
        if !shrunk {
            break;
        }
    }
    s.sample.clear();
    s.sample.extend(cv.iter().zip(&cw).map(|(&v, &w)| (desc_key(v) as u64) << 32 | w.to_bits() as u64));
    s.sample.sort_unstable();
    let last = s.sample[s.sample.len() - 1];
    let mut r = (pos + s.sample.len() - 1, key_value((last >> 32) as u32));
    let mut run = above;
    for (k, &x) in s.sample.iter().enumerate() {
        run += pair_weight(x);
        if run >= target {
            r = (pos + k, key_value((x >> 32) as u32));
            break;
        }
    }
    (s.vals, s.ws, s.next_vals, s.next_ws) = (cv, cw, nv, nw);
    r
}

/// The values of `v` in `[lo, hi]` into `nv`, their weights (from `w`) into `nw`.
fn keep_range(v: &[f32], w: &[f32], hi: f32, lo: f32, ids: &mut Vec<i32>, nv: &mut Vec<f32>, nw: &mut Vec<f32>) {
    ids.clear();
    nv.clear();
    split3(v, w, hi, lo, ids, nv);
    nw.clear();
    nw.extend(ids.iter().map(|&i| w[i as usize]));
}

/// Values `(v1, v2)`, `v1 >= v2`, bracketing the place where the running sum of the weights
/// `w` of the values `v` (in sorted order) reaches the fraction `frac` of their total,
/// estimated from a sorted sample.
fn bracket(v: &[f32], w: &[f32], frac: f64, sample: &mut Vec<u64>) -> (f32, f32) {
    let step = (v.len() / SAMPLE).max(1);
    sample.clear();
    sample.extend(
        v.iter().zip(w).step_by(step).take(SAMPLE).map(|(&v, &w)| (desc_key(v) as u64) << 32 | w.to_bits() as u64),
    );
    sample.sort_unstable();
    let t: f64 = sample.iter().map(|&x| pair_weight(x)).sum();
    let want = frac * t;
    let mut run = 0.0;
    let mut at = sample.len() - 1;
    for (k, &x) in sample.iter().enumerate() {
        run += pair_weight(x);
        if run >= want {
            at = k;
            break;
        }
    }
    let v1 = if at >= BRACKET { key_value((sample[at - BRACKET] >> 32) as u32) } else { f32::INFINITY };
    let v2 =
        if at + BRACKET < sample.len() { key_value((sample[at + BRACKET] >> 32) as u32) } else { f32::NEG_INFINITY };
    (v1, v2)
}

/// The id llama.cpp's full path has at sorted index `i` (`i` below the sorted count): the one
/// token with that logit, or, when the logit is tied, the id llama.cpp's sort of the bucket
/// holding it puts there (replayed with its own algorithm).
/// `v` is the value at `i` (the bucket counts the tie replay needs are taken from the row
/// then).
pub(crate) fn id_at(row: Row<'_>, i: usize, v: f32, s: &mut WideScratch) -> i32 {
    if let Some(id) = known_untied(v, s) {
        return id;
    }
    let mut buf = [0f32; BLOCK];
    let (mut at, mut count) = (0usize, 0usize);
    for b in 0..row.len().div_ceil(BLOCK) {
        let c = count_eq(row.block(b, &mut buf), v);
        if c > 0 {
            at = b;
            count += c;
        }
    }
    if count == 1 {
        let x = row.block(at, &mut buf);
        let k = x.iter().position(|&l| l == v).unwrap_or(0);
        return (at * BLOCK + k) as i32;
    }
    // The bucket in id order (the full path's stable scatter), sorted as the full path does;
    // with the number of tokens in the buckets above it (where it starts in the sorted order)
    // and the lowest non-empty bucket (the one the full path sorts with `std::partial_sort`).
    let bk = bucket_of(v);
    let (mut start, mut low) = (0usize, NBUCKETS);
    s.group.clear();
    for b in 0..row.len().div_ceil(BLOCK) {
        let x = row.block(b, &mut buf);
        for (k, &l) in x.iter().enumerate() {
            let j = bucket_of(l);
            low = low.min(j);
            start += (j > bk) as usize;
            if j == bk {
                s.group.push(TokenData { id: (b * BLOCK + k) as i32, logit: l, p: 0.0 });
            }
        }
    }
    if bk == low {
        let len = s.group.len();
        std_partial_sort(&mut s.group, len, logit_before);
    } else {
        std_sort(&mut s.group, logit_before);
    }
    s.group[i - start].id
}

/// Empties [`min_p_draw`]'s copy of the kept tokens (another row, or another path's draw).
fn forget_known(s: &mut WideScratch) {
    s.known_ids.clear();
    s.known_vals.clear();
}

/// The one token with value `v` (`==`: both zeros alike) when [`min_p_draw`]'s copy holds
/// every token of the row with that value (`v >= known_min`) and exactly one of them has it.
fn known_untied(v: f32, s: &WideScratch) -> Option<i32> {
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if s.known_vals.is_empty() || !(v >= s.known_min) {
        return None;
    }
    let mut equal = s.known_vals.iter().enumerate().filter(|&(_, &l)| l == v);
    let (k, _) = equal.next()?;
    match equal.next() {
        None => Some(s.known_ids[k]),
        Some(_) => None,
    }
}

/// The kept prefix's value at sorted index `i` (`+0.0` for both zeros).
pub(crate) fn value_at(s: &WideScratch, i: usize) -> f32 {
    key_value(s.keys[i])
}

/// The smallest `f32` in llama.cpp's sort bucket `ib` or above (`1 <= ib < NBUCKETS`):
/// `bucket_of` is monotone, so the bucket of `v` is at least `ib` exactly when `v` is at least
/// this. Found by bisection over the ordered `f32`s.
fn bucket_floor(ib: usize) -> f32 {
    debug_assert!((1..NBUCKETS).contains(&ib));
    // bucket_of(-20) = 0 < ib <= 127 = bucket_of(20).
    let (mut lo, mut hi) = (ord(-20.0), ord(20.0));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if bucket_of(unord(mid)) >= ib {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    unord(hi)
}

simd_dispatch!(
    /// How many values of `x` equal `v` (`==`: both zeros alike).
    fn count_eq(x: &[f32], v: f32) -> usize = count_eq_k
);

#[inline(always)]
unsafe fn count_eq_k<S: Simd>(x: &[f32], v: f32) -> usize {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slice (`i + S::N <= len`, the tail done value by value).
    unsafe {
        let n = x.len();
        let vv = S::splat(v);
        let mut c = 0u32;
        let mut i = 0;
        while i + S::N <= n {
            c += S::count(S::eq(S::load(x.as_ptr().add(i)), vv));
            i += S::N;
        }
        c as usize + x[i..].iter().filter(|&&l| l == v).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::simd::{with_level, Level};

    fn levels() -> Vec<Level> {
        Level::all().into_iter().filter(|l| l.is_supported()).collect()
    }

    /// A flat, long-tailed row (the bench's `flat` shape), optionally on a coarse grid (ties).
    fn flat_row(n: usize, seed: u64, grid: bool) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut unif = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let (u1, u2) = (unif(), unif());
                let z = ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32;
                // The bench's expression, bit for bit (`nucleus_parity::bench::logits`).
                let v = 0.8 * z - z * z * 0.05;
                if grid {
                    (v * 4096.0).round() / 4096.0
                } else {
                    v
                }
            })
            .collect()
    }

    /// The wide nucleus on flat rows at every SIMD level against llama.cpp's arithmetic done
    /// the plain way (sequential sum in id order, a full sort, the running sum of `p`), and
    /// `count_eq` against a plain count (ties included).
    #[test]
    fn wide_nucleus_matches_plain_replay_at_every_level() {
        for (n, seed, grid) in [(65_541usize, 1u64, false), (262_144, 2, false), (65_536, 3, true)] {
            let row = flat_row(n, seed, grid);
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0f32;
            for &v in &row {
                sum += (v - m).exp();
            }
            let mut sorted = row.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            for (p, min_keep) in [(0.95f32, 1usize), (0.9, 1), (0.5, 300), (0.3, 40_000)] {
                let mut cum = 0.0f32;
                let mut want = Vec::new();
                for (i, &v) in sorted.iter().enumerate() {
                    let q = (v - m).exp() / sum;
                    // The prefix holds `+0.0` for both zeros.
                    want.push((if v == 0.0 { 0.0 } else { v }, q));
                    cum += q;
                    if cum >= p && i + 1 >= min_keep {
                        break;
                    }
                }
                for level in levels() {
                    let r = Row { logits: &row, patches: &[] };
                    let mut s = WideScratch::default();
                    let mut out = Candidates::new();
                    let w = with_level(level, || build(r, m, p, min_keep, &mut s)).unwrap();
                    let w = w.unwrap_or_else(|| panic!("{level:?} n {n} p {p}: not built"));
                    fill_kept(&w, &mut s, &mut out);
                    let got: Vec<(f32, f32)> = out.as_slice().iter().map(|t| (t.logit, t.p)).collect();
                    assert_eq!(got.len(), want.len(), "{level:?} n {n} p {p} min_keep {min_keep}");
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!((g.0.to_bits(), g.1.to_bits()), (w.0.to_bits(), w.1.to_bits()), "{level:?} {i}");
                    }
                    for i in [0, 1, 17, want.len() / 2, want.len() - 1] {
                        let v = want[i].0;
                        let plain = row.iter().filter(|&&l| l == v).count();
                        let c = with_level(level, || {
                            (0..n.div_ceil(BLOCK)).map(|b| count_eq(r.block(b, &mut [0.0; BLOCK]), v)).sum::<usize>()
                        })
                        .unwrap();
                        assert_eq!(c, plain, "{level:?} value {v}");
                        let id = with_level(level, || id_at(r, i, value_at(&s, i), &mut s)).unwrap();
                        assert_eq!(row[id as usize], v, "{level:?} index {i}");
                        if plain == 1 {
                            assert_eq!(id as usize, row.iter().position(|&l| l == v).unwrap());
                        }
                    }
                }
            }
        }
    }

    /// [`draw_tail`] against the full path's samplers run on [`fill_kept`]'s array: same index,
    /// same logit bits, same RNG use, for tails that cut by min-p's threshold or by `min_keep`,
    /// min-p before and after temperatures, and temperatures that spread the weights so far
    /// that dist's sums are not exact (the sequential replay) or overflow them.
    #[test]
    fn draw_tail_matches_the_samplers() {
        use crate::sampler::Sampler;
        use crate::samplers::{dist::Dist, min_p::MinP, temp::Temp};
        use TailOp::{MinP as M, Temp as T};
        let tails: [&[TailOp]; 9] = [
            &[M { p: 0.05, min_keep: 1 }, T(0.8)],
            &[T(0.8), M { p: 0.05, min_keep: 1 }],
            &[T(0.8), M { p: 0.05, min_keep: 1 }, T(1.3), M { p: 0.3, min_keep: 20_000 }],
            &[M { p: 1.0, min_keep: 1 }, T(0.8)],
            &[M { p: 1.5, min_keep: 300 }],
            &[M { p: f32::NAN, min_keep: 1 }, T(0.7)],
            &[T(0.8)],
            &[T(0.02)],
            &[T(1e-38), M { p: 0.05, min_keep: 1 }],
        ];
        let before = TAIL_BRANCHES.with(|c| c.get());
        for (n, seed, grid) in [(262_144usize, 2u64, false), (65_536, 3, true)] {
            let row = flat_row(n, seed, grid);
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let r = Row { logits: &row, patches: &[] };
            let mut s = WideScratch::default();
            let w = build(r, m, 0.95, 1, &mut s).unwrap();
            let mut c = Candidates::new();
            for (t, ops) in tails.iter().enumerate() {
                for seed in 0..6u32 {
                    fill_kept(&w, &mut s, &mut c);
                    for op in ops.iter() {
                        match *op {
                            M { p, min_keep } => MinP::new(p, min_keep).apply(&mut c),
                            T(t) => Temp::new(t).apply(&mut c),
                        }
                    }
                    let mut full = Dist::new(seed);
                    full.apply(&mut c);
                    let i = c.selected().unwrap();
                    let want = (i, c.as_slice()[i].logit.to_bits(), full.rng_mut().uniform_f64().to_bits());
                    let mut fast = Dist::new(seed);
                    let (j, l) = draw_tail(&w, ops, fast.rng_mut(), &mut s);
                    let got = (j, l.to_bits(), fast.rng_mut().uniform_f64().to_bits());
                    assert_eq!(got, want, "n {n} tail {t} seed {seed}");
                }
            }
        }
        let after = TAIL_BRANCHES.with(|c| c.get());
        assert!(after[0] > before[0] && after[1] > before[1], "branches {before:?} -> {after:?}");
    }

    /// [`crossing_unsorted`] against a plain scan of the sorted weights, at every level: sets
    /// short and long, with many ties (a coarse grid) and without, targets at 0, at the total,
    /// at exact running sums (the first index reaching them) and in between.
    #[test]
    fn crossing_unsorted_matches_a_sorted_scan() {
        for level in levels() {
            for (n, grid, seed) in [(700usize, false, 1u64), (50_000, false, 2), (120_000, true, 3), (3_000, true, 4)] {
                let vals: Vec<f32> = flat_row(n, seed, grid).iter().map(|&v| if v == 0.0 { 0.0 } else { v }).collect();
                let m = vals.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                // Weights on a 2^-20 grid in (0, 1]: every sum of them is exact.
                let ws: Vec<f32> =
                    vals.iter().map(|&v| (((v - m) * 0.7).exp() * 1_048_576.0).ceil() / 1_048_576.0).collect();
                let mut sorted: Vec<(f32, f32)> = vals.iter().copied().zip(ws.iter().copied()).collect();
                sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
                let total: f64 = ws.iter().map(|&w| w as f64).sum();
                let mut runs = Vec::with_capacity(n);
                let mut run = 0.0f64;
                for &(_, w) in &sorted {
                    run += w as f64;
                    runs.push(run);
                }
                let mut targets = vec![0.0, total, runs[0], runs[n / 3], runs[n - 2]];
                targets.extend((1..40).map(|k| total * k as f64 / 40.0 + 1e-7));
                for t in targets {
                    let want = runs.iter().position(|&r| r >= t).unwrap();
                    let mut s = WideScratch { vals: vals.clone(), ws: ws.clone(), ..Default::default() };
                    let (i, v) = with_level(level, || crossing_unsorted(t, total, &mut s)).unwrap();
                    assert_eq!((i, v.to_bits()), (want, sorted[want].0.to_bits()), "{level:?} n {n} target {t}");
                }
            }
        }
    }

    /// [`crossing_unsorted`] when the target equals a running sum exactly, at every narrowing
    /// step: weights that are small integers (every sum exact, and every integer target up to
    /// the total is some running sum), so the split's sums above a bracket meet the target for
    /// some targets, where `>=` (not `>`) keeps the crossing at the first index reaching it.
    #[test]
    fn crossing_unsorted_exact_ties() {
        for level in levels() {
            {
                // (Long enough that the narrowing steps meet such ties: shorter sets did not.)
                let (n, seed) = (20_000usize, 9u64);
                // Distinct values (the sort is by value), weights 1 to 3.
                let vals: Vec<f32> = (0..n).map(|i| ((i * 7_919 + seed as usize) % n) as f32 * 0.25 - 100.0).collect();
                let ws: Vec<f32> = vals.iter().map(|&v| (1 + (v.to_bits() % 3)) as f32).collect();
                let mut sorted: Vec<(f32, f32)> = vals.iter().copied().zip(ws.iter().copied()).collect();
                sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
                let total: f64 = ws.iter().map(|&w| w as f64).sum();
                let mut runs = Vec::with_capacity(n);
                let mut run = 0.0f64;
                for &(_, w) in &sorted {
                    run += w as f64;
                    runs.push(run);
                }
                let mut s = WideScratch::default();
                for t in 1..=total as usize {
                    let t = t as f64;
                    let want = runs.partition_point(|&r| r < t);
                    s.vals.clear();
                    s.vals.extend_from_slice(&vals);
                    s.ws.clear();
                    s.ws.extend_from_slice(&ws);
                    let (i, v) = with_level(level, || crossing_unsorted(t, total, &mut s)).unwrap();
                    assert_eq!((i, v.to_bits()), (want, sorted[want].0.to_bits()), "{level:?} n {n} target {t}");
                }
            }
        }
    }

    /// [`min_p_draw`] against the sorted path ([`build`], then [`draw_tail`]): same index,
    /// value, logit and RNG use whenever it decides; it declines (RNG untouched) when top-p
    /// cuts before min-p's threshold, when `min_keep` reaches past it, when dist's sums would
    /// not be exact, and for other tails.
    #[test]
    fn min_p_draw_matches_the_sorted_path() {
        use crate::samplers::dist::Dist;
        use TailOp::{MinP as M, Temp as T};
        let cases: [(f32, &[TailOp], bool); 9] = [
            (0.95, &[M { p: 0.05, min_keep: 1 }, T(0.8)], true),
            (0.95, &[T(0.8), M { p: 0.05, min_keep: 1 }], true),
            (0.99, &[T(1.3), M { p: 0.2, min_keep: 100 }, T(0.6)], true),
            (0.95, &[M { p: 0.05, min_keep: 1 }, T(0.5)], true),
            // Weights too spread for exact sums.
            (0.95, &[M { p: 0.05, min_keep: 1 }, T(0.02)], false),
            (0.5, &[M { p: 0.05, min_keep: 1 }, T(0.8)], false),
            (0.95, &[M { p: 0.05, min_keep: 200_000 }, T(0.8)], false),
            (0.95, &[T(0.8)], false),
            (0.95, &[M { p: 0.05, min_keep: 1 }, M { p: 0.1, min_keep: 1 }], false),
        ];
        for level in levels() {
            for (n, seed, grid) in [(262_144usize, 2u64, false), (65_536, 3, true)] {
                let row = flat_row(n, seed, grid);
                let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let r = Row { logits: &row, patches: &[] };
                let mut s = WideScratch::default();
                for (c, &(p_top, ops, decides)) in cases.iter().enumerate() {
                    for seed in 0..3u32 {
                        let mut fast = Dist::new(seed);
                        let got =
                            with_level(level, || min_p_draw(r, m, p_top, false, ops, fast.rng_mut(), &mut s)).unwrap();
                        let mut full = Dist::new(seed);
                        let w = with_level(level, || build(r, m, p_top, 1, &mut s)).unwrap().unwrap();
                        let (i, l) = draw_tail(&w, ops, full.rng_mut(), &mut s);
                        let want = (i, value_at(&s, i).to_bits(), l.to_bits());
                        let next = (fast.rng_mut().uniform_f64().to_bits(), full.rng_mut().uniform_f64().to_bits());
                        match got {
                            Some((j, v, l)) => {
                                assert!(decides, "{level:?} n {n} case {c}: decided");
                                assert_eq!((j, v.to_bits(), l.to_bits()), want, "{level:?} n {n} case {c} seed {seed}");
                                assert_eq!(next.0, next.1, "RNG use");
                            }
                            None => {
                                assert!(!decides, "{level:?} n {n} case {c}: declined");
                                assert_ne!(next.0, next.1, "an undecided step must leave the RNG alone");
                            }
                        }
                    }
                }
            }
        }
    }

    /// A flat row with a head of `head` tokens (spread over the row) a few nats above the
    /// rest: top-p's nucleus holds thousands of tokens, min-p 0.05's threshold only the head.
    /// On a 1/64 grid with `grid` (ties in the head).
    fn headed_row(n: usize, seed: u64, grid: bool, head: usize) -> Vec<f32> {
        let mut row = flat_row(n, seed, grid);
        for k in 0..head {
            let v = 6.0 + 2.5 * ((k * 37) % 101) as f32 / 101.0;
            row[(k * 7919 + 13) % n] = if grid { (v * 64.0).round() / 64.0 } else { v };
        }
        row
    }

    /// [`min_p_draw`] told that top-p keeps more than 256 ([`build`] finds the same) on rows
    /// where min-p keeps at most 256: decides, with the sorted path's index, value, logit and
    /// RNG use; not told, it declines (RNG untouched); with `min_keep` past the kept values,
    /// it declines.
    #[test]
    fn min_p_draw_beyond_first_matches_the_sorted_path() {
        use crate::samplers::dist::Dist;
        use TailOp::{MinP as M, Temp as T};
        let tails: [&[TailOp]; 3] = [
            &[M { p: 0.05, min_keep: 1 }, T(0.8)],
            &[T(0.8), M { p: 0.05, min_keep: 1 }],
            &[M { p: 0.2, min_keep: 5 }],
        ];
        for level in levels() {
            for (n, seed, grid, head) in
                [(262_144usize, 5u64, false, 60usize), (65_536, 6, true, 200), (4096, 7, true, 8)]
            {
                let row = headed_row(n, seed, grid, head);
                let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let r = Row { logits: &row, patches: &[] };
                let mut s = WideScratch::default();
                for (t, ops) in tails.iter().enumerate() {
                    for seed in 0..4u32 {
                        let mut full = Dist::new(seed);
                        let w = with_level(level, || build(r, m, 0.95, 1, &mut s)).unwrap().unwrap();
                        assert!(w.last > 4 * FIRST, "n {n}: nucleus {}", w.last);
                        let (i, l) = draw_tail(&w, ops, full.rng_mut(), &mut s);
                        let want = (i, value_at(&s, i).to_bits(), l.to_bits(), full.rng_mut().uniform_f64().to_bits());
                        let mut fast = Dist::new(seed);
                        let got = with_level(level, || min_p_draw(r, m, 0.95, true, ops, fast.rng_mut(), &mut s));
                        let (j, v, l) = got.unwrap().unwrap_or_else(|| panic!("{level:?} n {n} tail {t}: declined"));
                        let got = (j, v.to_bits(), l.to_bits(), fast.rng_mut().uniform_f64().to_bits());
                        assert_eq!(got, want, "{level:?} n {n} tail {t} seed {seed}");
                        let mut fast = Dist::new(seed);
                        let not_told = with_level(level, || min_p_draw(r, m, 0.95, false, ops, fast.rng_mut(), &mut s));
                        assert!(not_told.unwrap().is_none(), "{level:?} n {n} tail {t}: decided without the proof");
                        assert_eq!(
                            fast.rng_mut().uniform_f64().to_bits(),
                            Dist::new(seed).rng_mut().uniform_f64().to_bits()
                        );
                    }
                }
                let mut fast = Dist::new(1);
                let past = [M { p: 0.05, min_keep: head + 50 }];
                let got = with_level(level, || min_p_draw(r, m, 0.95, true, &past, fast.rng_mut(), &mut s));
                assert!(got.unwrap().is_none(), "{level:?} n {n}: min_keep past the kept values");
            }
        }
    }

    /// Profiling aid, not a check: with `FLAT_ROWS_OUT=path`, writes 16 flat rows of 262,144
    /// (the bench's generator, seeds 1 to 16) as raw little-endian f32 for the `real_rows`
    /// example: `FLAT_ROWS_OUT=/tmp/flat_rows.f32 cargo test --release -p nucleus-sampler --lib
    /// write_flat_rows -- --ignored`, then `real_rows /tmp/flat_rows.f32 262144 d 2`.
    #[test]
    #[ignore]
    fn write_flat_rows() {
        let Some(path) = std::env::var_os("FLAT_ROWS_OUT") else {
            return;
        };
        let bytes: Vec<u8> =
            (1..=16u64).flat_map(|seed| flat_row(262_144, seed, false)).flat_map(f32::to_le_bytes).collect();
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn bucket_floor_is_the_lower_edge() {
        for ib in 1..NBUCKETS {
            let t = bucket_floor(ib);
            assert!(bucket_of(t) >= ib, "{ib}");
            assert!(bucket_of(t.next_down()) < ib, "{ib}");
        }
    }
}
