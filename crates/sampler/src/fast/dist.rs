//! llama.cpp's `dist` draw straight from a logits row, without building the candidate array
//! and, in the common case, without the exact `expf` of every token — same token, same RNG use.
//!
//! dist selects the first index `j` with `run_j >= total * u`, where `run_j` is the running
//! `f64` sum of `e_i = expf(l_i - max)` in id order and `total` the full sum. Writing
//! `P_j = e_0 + .. + e_j` and `Q_j = e_{j+1} + ..` (exact sums), that test is
//! `(1 - u) P_j - u Q_j >= 0` up to llama.cpp's own `f64` rounding, which is bounded by
//! `ERR = (2 n 2^-53 + 2^-48) total`. So bounds on per-block sums of `e_i` decide the draw
//! whenever the crossing is farther than the bounds' width from a block boundary, and inside
//! the crossing block the exact `e_i` decide it. The bounds come in tiers, each used only when
//! the previous one cannot decide (see [`DistTier`]):
//!
//! 1. `Coarse`: the max pass also sums a 6%-accurate exponential per block (a few µs more);
//!    decides confident rows, where one token carries most of the mass. After
//!    [`COARSE_FAILS_BEFORE_SKIP`] draws in a row that neither it nor the staged refinement
//!    below decided, it is only tried every 8th draw.
//! 2. `Near`: 1-ulp vector exponentials (`2^-22` relative bound per block). First only for
//!    the blocks whose coarse bounds are widest, in growing stages ([`REFINE_STAGES`]): on a
//!    real row most of the coarse bounds' width sits in the few blocks that hold the top
//!    tokens, so refining those often decides the draw at a fraction of a whole pass. Then, if
//!    that does not decide it, for every block.
//! 3. `Exact`: exact `e_i` (the vector replica of glibc's `expf`) summed per block in `f64`.
//! 4. `Sequential`: llama.cpp's arithmetic replayed literally (always decides).
//!
//! Every tier's bound is rigorous (the exp bounds are checked exhaustively in `fast::expf`), so
//! the token is always the one the full-array path picks.

use crate::fast::expf::{exp_bound, exp_near, expf_exact_slice, BOUND_DIV, BOUND_MUL, NEAR_REL, TINY};
use crate::fast::row::{scan_row, Row, RowScan, Scan, TierCounts, BLOCK};
use crate::fast::simd::{first_nan_or_inf, max_scan_tail, simd_dispatch, MaxScan, Scalar, Simd};
use crate::rng::LlamaRng;

/// Which tier decided a draw (for statistics and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DistTier {
    /// Coarse bounds from the max pass.
    Coarse = 0,
    /// The 1-ulp exp pass.
    Near = 1,
    /// Exact per-token values, block sums in `f64`.
    Exact = 2,
    /// llama.cpp's sequential arithmetic.
    Sequential = 3,
}

/// How often each tier decided, process-wide (read with [`tier_counts`]).
static TIERS: TierCounts<4> = TierCounts::new();

/// How often the staged refinement of the widest coarse blocks was tried: `[decided, left
/// to the whole near pass]` (read with [`partial_counts`]; its decisions count as `Near`).
static PARTIAL: TierCounts<2> = TierCounts::new();

/// Cumulative numbers of blocks refined by the staged near tier, widest coarse bounds first;
/// after the last stage every remaining block is refined. On the recorded Gemma 3 rows
/// (V = 262,144, 256 blocks) the coarse bounds decide about half of the draws, these stages
/// about half of the rest, at a fifth of a whole near pass on average.
const REFINE_STAGES: [usize; 3] = [4, 16, 64];

/// After this many draws in a row that neither the coarse bounds nor the staged refinement
/// decided, the coarse sums are only computed every 8th draw (flat rows follow flat rows;
/// this only affects speed). On the recorded Gemma 3 rows such draws come alone or in pairs
/// between confident ones; with the earlier threshold of 2 the skipped draws cost more than the
/// failed attempts saved (real_rows, chain b: median 57-68 against 42-58 µs with no skipping).
const COARSE_FAILS_BEFORE_SKIP: u8 = 4;

/// Draws the staged refinement decided and left to the whole near pass, so far in this
/// process (zeros without the `tier-counts` feature).
pub(crate) fn partial_counts() -> [u64; 2] {
    PARTIAL.get()
}

/// Number of draws decided by each tier so far in this process: `[coarse, near, exact,
/// sequential]`.
pub(crate) fn tier_counts() -> [u64; 4] {
    TIERS.get()
}

fn count(t: DistTier) {
    TIERS.bump(t as usize);
}

/// Reusable buffers (per sampler, so the hot path allocates nothing after warm-up).
#[derive(Clone, Debug, Default)]
pub(crate) struct DistScratch {
    /// The max pass's results.
    pub(crate) scan: RowScan,
    lo: Vec<f64>,
    hi: Vec<f64>,
    suf_lo: Vec<f64>,
    suf_hi: Vec<f64>,
    xs: Vec<f32>,
    es: Vec<f32>,
    /// Block indices, widest coarse bounds first (the staged refinement's order).
    order: Vec<u32>,
    /// Blocks whose bounds already come from the near exponentials.
    refined: Vec<bool>,
    /// Consecutive draws the coarse bounds and the staged refinement failed to decide, and
    /// draws since the coarse sums were last computed (see [`COARSE_FAILS_BEFORE_SKIP`]).
    coarse_fails: u8,
    since_coarse: u8,
}

simd_dispatch!(
    /// Sum of `exp_near(x - m)` over one block (pairs of pairs in `f32`, then `f64`).
    fn block_near(x: &[f32], m: f32) -> f64 = block_near_k
);

#[inline(always)]
unsafe fn block_near_k<S: Simd>(x: &[f32], m: f32) -> f64 {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let p = x.as_ptr();
        let mv = S::splat(m);
        let mut acc = S::dzero();
        let mut i = 0;
        while i + 4 * S::N <= n {
            let e0 = exp_near::<S>(S::sub(S::load(p.add(i)), mv));
            let e1 = exp_near::<S>(S::sub(S::load(p.add(i + S::N)), mv));
            let e2 = exp_near::<S>(S::sub(S::load(p.add(i + 2 * S::N)), mv));
            let e3 = exp_near::<S>(S::sub(S::load(p.add(i + 3 * S::N)), mv));
            acc = S::dadd(acc, S::add(S::add(e0, e1), S::add(e2, e3)));
            i += 4 * S::N;
        }
        let mut sum = S::dsum(acc);
        for &v in &x[i..] {
            sum += exp_near::<Scalar>(v - m) as f64;
        }
        sum
    }
}

/// A block's coarse sum may be taken relative to a reference at most this far below its values
/// ([`exp_bound`] is valid up to `x = 61`).
const REF_SLACK: f32 = 60.0;

/// The max pass with coarse sums: per-block maximum, NaN/`+inf` detection (as [`scan_row`]),
/// and per block the sum of
/// [`exp_bound`]`(x - cref)`, where `cref` is the running maximum of the blocks before the
/// previous one (a value <= the row maximum; the block itself when its values pass it by more
/// than [`REF_SLACK`]). Skipping the previous block lets its reduction finish while this block
/// is read; with the previous block's maximum every block waited for the one before.
fn scan_coarse(row: Row<'_>, s: &mut RowScan) -> Scan {
    let n = row.len();
    let nb = n.div_ceil(BLOCK);
    s.has_coarse = true;
    s.cmax.clear();
    s.cref.clear();
    s.coarse.clear();
    let mut buf = [0f32; BLOCK];
    // `m`: maximum of the blocks so far; `lag`: of the blocks before the previous one.
    let (mut m, mut lag) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
    for b in 0..nb {
        // NaN / +inf are checked on the caller's logits (as `check_logits` does), the maximum
        // and sums on the patched values.
        let raw = &row.logits[b * BLOCK..((b + 1) * BLOCK).min(n)];
        let (mut c, bad, mut sum) = block_coarse(raw, lag);
        if bad {
            let i = first_nan_or_inf(raw);
            return Scan::Bad(b * BLOCK + i);
        }
        let x = row.block(b, &mut buf);
        if x.as_ptr() != raw.as_ptr() {
            (c, _, sum) = block_coarse(x, lag);
        }
        let mut cref = lag;
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(c <= cref + REF_SLACK) {
            cref = c;
            (_, _, sum) = block_coarse(x, c);
        }
        s.cmax.push(c);
        s.cref.push(cref);
        s.coarse.push(sum);
        lag = m;
        if c > m {
            m = c;
        }
    }
    Scan::Max(m)
}

simd_dispatch!(
    /// (max, has NaN or +inf, sum of `exp_bound(x - c)`) over one block.
    fn block_coarse(x: &[f32], c: f32) -> (f32, bool, f64) = block_coarse_k
);

#[inline(always)]
unsafe fn block_coarse_k<S: Simd>(x: &[f32], c: f32) -> (f32, bool, f64) {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let p = x.as_ptr();
        let cv = S::splat(c);
        // Four vectors a step, each with its own sum: the sums' latency would otherwise set
        // the pace. One max scan for the four (two maxima, each taking two vectors a step):
        // with two, AVX2's 16 registers could not hold the state and the constants, and the
        // loop spilled and reloaded them every step.
        let mut ms = MaxScan::<S>::new();
        let z = S::splat(0.0);
        let mut acc = [z; 4];
        let mut i = 0;
        while i + 4 * S::N <= n {
            let v = [
                S::load(p.add(i)),
                S::load(p.add(i + S::N)),
                S::load(p.add(i + 2 * S::N)),
                S::load(p.add(i + 3 * S::N)),
            ];
            ms.push(v[0], v[1]);
            ms.push(v[2], v[3]);
            for j in 0..4 {
                acc[j] = S::add(acc[j], exp_bound::<S>(S::sub(v[j], cv)));
            }
            i += 4 * S::N;
        }
        let mut mx = S::hmax(ms.lanes_max());
        let mut badt = S::any(ms.bad());
        // An f32 sum of at most BLOCK positive terms in some order (the bound the coarse tier
        // allows for); one f32 reduction, not 16 dependent f64 additions per accumulator.
        let mut sum = S::hsum_f32(S::add(S::add(acc[0], acc[1]), S::add(acc[2], acc[3]))) as f64;
        for &v in &x[i..] {
            max_scan_tail(v, &mut mx, &mut badt);
            sum += exp_bound::<Scalar>(v - c) as f64;
        }
        (mx, badt, sum)
    }
}

/// Exact `e_i = expf(v_i - m)` for block `b`, into `s.es` (length of the block).
fn exact_block(row: Row<'_>, m: f32, b: usize, xs: &mut Vec<f32>, es: &mut Vec<f32>) {
    let mut buf = [0f32; BLOCK];
    let x = row.block(b, &mut buf);
    xs.clear();
    xs.extend(x.iter().map(|&v| v - m));
    es.clear();
    es.resize(xs.len(), 0.0);
    expf_exact_slice(xs, es);
}

/// Draws llama.cpp's `dist` index over `row` (values in id order, maximum `m`, finite) with
/// the uniform `u` already drawn. `s.scan.cmax` must come from [`scan_row`] or [`scan_coarse`] (the coarse tier runs only
/// after the latter).
pub(crate) fn dist_index(row: Row<'_>, m: f32, u: f64, s: &mut DistScratch) -> (usize, DistTier) {
    if u == 0.0 {
        // target = 0 and run_0 >= 0: index 0, whatever its value.
        return (0, DistTier::Coarse);
    }
    if s.scan.has_coarse {
        bounds_coarse(row.len(), m, s);
        if let Some(j) = decide(row, m, u, s) {
            s.coarse_fails = 0;
            return (j, DistTier::Coarse);
        }
        if let Some(j) = refine_widest(row, m, u, s) {
            s.coarse_fails = 0;
            PARTIAL.bump(0);
            return (j, DistTier::Near);
        }
        PARTIAL.bump(1);
    } else {
        let nb = s.scan.cmax.len();
        s.refined.clear();
        s.refined.resize(nb, false);
        s.lo.clear();
        s.hi.clear();
        s.lo.resize(nb, 0.0);
        s.hi.resize(nb, f64::INFINITY);
        for (b, &c) in s.scan.cmax.iter().enumerate() {
            // Blocks far below the maximum: every term is below 2 exp(-(m - c)).
            let d = m as f64 - c as f64;
            if c == f32::NEG_INFINITY {
                s.hi[b] = 0.0;
            } else if d > 100.0 {
                // Within a factor 2 of exp where expf is normal, below TINY where it is not.
                s.hi[b] = BLOCK as f64 * (2.0 * (-d).exp() + TINY);
            }
        }
    }
    if s.scan.has_coarse {
        s.coarse_fails = s.coarse_fails.saturating_add(1);
    }
    bounds_near(row, m, s);
    if let Some(j) = decide(row, m, u, s) {
        return (j, DistTier::Near);
    }
    bounds_exact(row, m, s);
    if let Some(j) = decide(row, m, u, s) {
        return (j, DistTier::Exact);
    }
    (sequential(row, m, u, s), DistTier::Sequential)
}

/// Tier 1: per-block bounds from the max pass's coarse sums.
fn bounds_coarse(n: usize, m: f32, s: &mut DistScratch) {
    let nb = s.scan.cmax.len();
    s.refined.clear();
    s.refined.resize(nb, false);
    s.lo.clear();
    s.hi.clear();
    let acc_err = BLOCK as f64 / 16_777_216.0; // f32 lane sums of <= BLOCK terms
    let (mut last_ref, mut scale) = (f32::NAN, 0.0f64);
    for b in 0..nb {
        let len = block_len(n, nb, b) as f64;
        if s.scan.cmax[b] == f32::NEG_INFINITY {
            s.lo.push(0.0);
            s.hi.push(0.0);
            continue;
        }
        let d = m as f64 - s.scan.cref[b] as f64;
        // cref is the running maximum, so it changes at a few blocks only: reuse the last
        // block's exponential when it is the same (the same value, one `exp` instead of 256).
        if s.scan.cref[b] != last_ref {
            last_ref = s.scan.cref[b];
            scale = (-d).exp();
        }
        if d > 120.0 {
            // Far below the maximum: every term is at most expf(cmax - m) (a block's values may
            // pass cref by up to REF_SLACK, so cref alone does not bound them), within a factor
            // 2 of exp where expf is normal and below TINY where it is not.
            s.lo.push(0.0);
            s.hi.push(len * (2.0 * (s.scan.cmax[b] as f64 - m as f64).exp() + TINY));
            continue;
        }
        // Rounding of l - cref (|.| <= 88 unless clamped) and of l - m, glibc's 0.502 ulp,
        // f64 exp: relative.
        let rho = (176.0 + d) * 1.01 / 16_777_216.0 + 1.0 / 4_194_304.0;
        let f = s.scan.coarse[b];
        s.hi.push(f * (1.0 + acc_err) * BOUND_MUL * scale * (1.0 + rho) * (1.0 + 1e-12));
        s.lo.push((f * (1.0 - acc_err) / BOUND_DIV * scale * (1.0 - rho) - len * TINY).max(0.0));
    }
}

/// Whether block `b` gets near bounds: not all `-inf`, and not so far below the maximum that
/// its coarse (or, without coarse sums, its far-below) bound already says it is negligible.
fn near_worthwhile(s: &DistScratch, m: f32, b: usize) -> bool {
    let c = s.scan.cmax[b];
    c != f32::NEG_INFINITY && m as f64 - c as f64 <= 100.0
}

/// Replaces block `b`'s bounds by the near exponentials' (`s.lo` / `s.hi` must hold bounds
/// for every block; the new ones are rigorous on their own).
fn refine_block(row: Row<'_>, m: f32, b: usize, s: &mut DistScratch) {
    let n = row.len();
    let nb = s.scan.cmax.len();
    let mut buf = [0f32; BLOCK];
    // Each term within NEAR_REL of expf plus TINY, the f32 pair sums and the f64 sum: 2.02x.
    let eps = NEAR_REL * 2.0 * 1.01;
    let x = row.block(b, &mut buf);
    let sum = block_near(x, m);
    let len = block_len(n, nb, b) as f64;
    s.hi[b] = sum * (1.0 + eps) + 2.0 * len * TINY;
    s.lo[b] = (sum * (1.0 - eps) - 2.0 * len * TINY).max(0.0);
    s.refined[b] = true;
}

/// Tier 2, staged: with coarse bounds in `s.lo` / `s.hi` that did not decide, refines the
/// blocks with the widest bounds first, [`REFINE_STAGES`] of them, trying [`decide`] after
/// each stage. Every block keeps rigorous bounds (coarse or near), so a decision is exact.
/// `None` when the last stage does not decide (the refined blocks stay marked in
/// `s.refined`, so the whole pass skips them).
fn refine_widest(row: Row<'_>, m: f32, u: f64, s: &mut DistScratch) -> Option<usize> {
    let nb = s.scan.cmax.len();
    let mut order = std::mem::take(&mut s.order);
    order.clear();
    order.extend((0..nb as u32).filter(|&b| near_worthwhile(s, m, b as usize)));
    s.order = order;
    let mut done = 0;
    for &stage in &REFINE_STAGES {
        let k = stage.min(s.order.len());
        if k <= done {
            break;
        }
        // The k widest first (any order among them): a selection, not a sort.
        if k < s.order.len() {
            let (lo, hi) = (&s.lo, &s.hi);
            let width = |b: &u32| hi[*b as usize] - lo[*b as usize];
            s.order[done..].select_nth_unstable_by(k - done - 1, |a, b| width(b).total_cmp(&width(a)));
        }
        for i in done..k {
            let b = s.order[i] as usize;
            refine_block(row, m, b, s);
        }
        done = k;
        if let Some(j) = decide(row, m, u, s) {
            return Some(j);
        }
        if k == s.order.len() {
            break;
        }
    }
    None
}

/// Tier 2, whole: near bounds for every block not refined yet (blocks far below the maximum
/// keep their coarse bounds).
fn bounds_near(row: Row<'_>, m: f32, s: &mut DistScratch) {
    for b in 0..s.scan.cmax.len() {
        if !s.refined.get(b).copied().unwrap_or(false) && near_worthwhile(s, m, b) {
            refine_block(row, m, b, s);
        }
    }
}

/// Tier 3: exact values summed per block in `f64`.
fn bounds_exact(row: Row<'_>, m: f32, s: &mut DistScratch) {
    let (mut xs, mut es) = (std::mem::take(&mut s.xs), std::mem::take(&mut s.es));
    for b in 0..s.scan.cmax.len() {
        if s.scan.cmax[b] == f32::NEG_INFINITY {
            continue;
        }
        exact_block(row, m, b, &mut xs, &mut es);
        let sum: f64 = es.iter().map(|&e| e as f64).sum();
        s.hi[b] = sum * (1.0 + 1e-12);
        s.lo[b] = sum * (1.0 - 1e-12);
    }
    s.xs = xs;
    s.es = es;
}

fn block_len(n: usize, nb: usize, b: usize) -> usize {
    if b + 1 == nb {
        n - b * BLOCK
    } else {
        BLOCK
    }
}

/// Decides the draw from the per-block bounds in `s.lo` / `s.hi`, walking the crossing block
/// with exact values. `None` when the bounds are too wide.
fn decide(row: Row<'_>, m: f32, u: f64, s: &mut DistScratch) -> Option<usize> {
    let n = row.len();
    let nb = s.lo.len();
    s.suf_lo.clear();
    s.suf_hi.clear();
    s.suf_lo.resize(nb + 1, 0.0);
    s.suf_hi.resize(nb + 1, 0.0);
    for b in (0..nb).rev() {
        s.suf_lo[b] = s.suf_lo[b + 1] + s.lo[b];
        s.suf_hi[b] = s.suf_hi[b + 1] + s.hi[b];
    }
    // f64 sums of non-negative terms: widen by a relative 2^-40 (far above their error).
    let w = 1.0 + 1.0 / 1_099_511_627_776.0;
    for b in 0..=nb {
        s.suf_lo[b] /= w;
        s.suf_hi[b] *= w;
    }
    let t_hi = s.suf_hi[0];
    if !(t_hi.is_finite()) || t_hi <= 0.0 {
        return None;
    }
    // llama.cpp's own rounding (running sum, total, target) plus ours.
    let err = (2.02 * n as f64 / 9_007_199_254_740_992.0 + 1.0 / 281_474_976_710_656.0) * t_hi;
    let err_walk = err + t_hi / 4_398_046_511_104.0; // + 2^-42 for the in-block f64 sums
    let om = 1.0 - u;
    let (mut p_lo, mut p_hi) = (0.0f64, 0.0f64);
    let (mut xs, mut es) = (std::mem::take(&mut s.xs), std::mem::take(&mut s.es));
    let mut result = None;
    for b in 0..nb {
        let d_hi = om * (p_hi + s.hi[b]) * w - u * s.suf_lo[b + 1] + err;
        if d_hi < 0.0 {
            p_lo += s.lo[b];
            p_hi += s.hi[b];
            continue;
        }
        if s.hi[b] == 0.0 {
            continue;
        }
        // The walk below stops at the first token with dh >= 0 and decides only if dl = dh - W
        // > 0 there. dh grows by one term per token from at most about err_walk above zero
        // (the previous block's test), so it cannot reach W when W exceeds the block's largest
        // term (e^(cmax - m), widened) by that much: skip the exact values then. This only
        // returns `None` early, never a different index.
        let width = om * (p_hi * w - p_lo / w) + u * (s.suf_hi[b + 1] - s.suf_lo[b + 1]) + 2.0 * err_walk;
        let e_top = (s.scan.cmax[b] as f64 - m as f64).exp() * 1.001;
        if width > 2.0 * (e_top + err_walk) + t_hi * 1e-9 {
            break;
        }
        exact_block(row, m, b, &mut xs, &mut es);
        let bt: f64 = es.iter().map(|&e| e as f64).sum();
        let mut run = 0.0f64;
        let mut found = false;
        for (k, &e) in es.iter().enumerate() {
            run += e as f64;
            let rest = bt - run;
            let dh = om * (p_hi * w + run) - u * (s.suf_lo[b + 1] + rest) + err_walk;
            if dh >= 0.0 {
                let dl = om * (p_lo / w + run) - u * (s.suf_hi[b + 1] + rest) - err_walk;
                if dl > 0.0 {
                    result = Some(b * BLOCK + k);
                }
                found = true;
                break;
            }
        }
        if found {
            break;
        }
        p_lo += bt;
        p_hi += bt;
    }
    s.xs = xs;
    s.es = es;
    result
}

/// llama.cpp's dist arithmetic replayed in order (exact `e_i`, sequential `f64` sums).
fn sequential(row: Row<'_>, m: f32, u: f64, s: &mut DistScratch) -> usize {
    let nb = s.scan.cmax.len();
    let (mut xs, mut es) = (std::mem::take(&mut s.xs), std::mem::take(&mut s.es));
    let mut total = 0.0f64;
    for b in 0..nb {
        exact_block(row, m, b, &mut xs, &mut es);
        for &e in es.iter() {
            total += e as f64;
        }
    }
    let target = total * u;
    let mut run = 0.0f64;
    let mut sel = row.len() - 1;
    'outer: for b in 0..nb {
        exact_block(row, m, b, &mut xs, &mut es);
        for (k, &e) in es.iter().enumerate() {
            run += e as f64;
            if run >= target {
                sel = b * BLOCK + k;
                break 'outer;
            }
        }
    }
    s.xs = xs;
    s.es = es;
    sel
}

/// The whole of llama.cpp's dist on a full row: scan, draw `u` (two engine outputs), select.
/// Returns `Ok(None)` without touching the RNG when the row needs the full path (every value
/// `-inf`), `Err(i)` for a NaN or `+inf` at `i`.
pub(crate) fn dist_row(row: Row<'_>, rng: &mut LlamaRng, s: &mut DistScratch) -> Result<Option<usize>, usize> {
    let coarse = s.coarse_fails < COARSE_FAILS_BEFORE_SKIP || s.since_coarse >= 8;
    s.since_coarse = if coarse { 0 } else { s.since_coarse + 1 };
    let scan = if coarse { scan_coarse(row, &mut s.scan) } else { scan_row(row, &mut s.scan) };
    let m = match scan {
        Scan::Bad(i) => return Err(i),
        Scan::Max(m) => m,
    };
    if m == f32::NEG_INFINITY {
        return Ok(None);
    }
    let u = rng.uniform_f64();
    let (j, tier) = dist_index(row, m, u, s);
    count(tier);
    Ok(Some(j))
}

/// llama.cpp's dist over a short list of values (in id order; entries not listed are `-inf`
/// and contribute nothing): exact arithmetic. `vals` must hold a finite maximum. Returns the
/// position in `vals`, `None` when `u == 0` selects index 0 of the full array, or
/// `Some(vals.len())` when no running sum reaches the target (llama.cpp then takes the last
/// index of the full array).
pub(crate) fn dist_list(vals: &[f32], u: f64, es: &mut Vec<f32>, xs: &mut Vec<f32>) -> Option<usize> {
    if u == 0.0 {
        return None;
    }
    let m = vals.iter().fold(vals[0], |m, &v| if v > m { v } else { m });
    xs.clear();
    xs.extend(vals.iter().map(|&v| v - m));
    es.clear();
    es.resize(vals.len(), 0.0);
    expf_exact_slice(xs, es);
    let total: f64 = es.iter().fold(0.0, |t, &e| t + e as f64);
    let target = total * u;
    let mut run = 0.0f64;
    for (k, &e) in es.iter().enumerate() {
        run += e as f64;
        if run >= target {
            return Some(k);
        }
    }
    Some(vals.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::{Candidates, TokenData};
    use crate::samplers::dist::dist_select;

    fn lcg_row(seed: u64, n: usize, spread: f32, levels: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let r = ((x >> 33) as u32 % levels) as f32 / levels as f32;
                (r - 0.5) * spread
            })
            .collect()
    }

    fn full(row: &[f32], patches: &[TokenData], seed: u32) -> usize {
        let mut c = Candidates::new();
        c.fill_f32(row);
        for p in patches {
            c.as_mut_slice()[p.id as usize].logit = p.logit;
        }
        let mut rng = LlamaRng::new(seed);
        dist_select(&mut c, &mut rng).unwrap()
    }

    /// Rows that stress the bounds: ties, -inf, spikes, flat and nearly-equal values.
    fn rows() -> Vec<Vec<f32>> {
        let mut v = Vec::new();
        for (seed, n, spread, levels) in [
            (1, 5000, 4.0, 1000),
            (2, 70_000, 0.5, 50),
            (3, 3000, 60.0, 1 << 20),
            (4, 1500, 8.0, 3),
            (5, 40_000, 0.001, 1 << 20),
        ] {
            let mut row = lcg_row(seed, n, spread, levels);
            row[n / 3] += 30.0;
            row[7] = f32::NEG_INFINITY;
            v.push(row);
        }
        // All equal: running sums are integers, the target often sits near a boundary.
        v.push(vec![0.25; 3000]);
        // Two values, one block of -inf.
        let mut r: Vec<f32> = (0..4096).map(|i| if i % 2 == 0 { 0.0 } else { -std::f32::consts::LN_2 }).collect();
        r[1024..2048].fill(f32::NEG_INFINITY);
        v.push(r);
        // Far below the maximum (blocks > 100 nats down).
        let mut r = lcg_row(9, 5000, 2.0, 1000);
        r[2048..4096].iter_mut().for_each(|x| *x -= 150.0);
        v.push(r);
        v
    }

    #[test]
    fn every_tier_that_decides_gives_the_full_path_index() {
        let mut s = DistScratch::default();
        let mut decided = [0usize; 4];
        for row in rows() {
            let n = row.len();
            let patches =
                [TokenData { id: 5, logit: 2.0, p: 0.0 }, TokenData { id: (n - 1) as i32, logit: -1.0, p: 0.0 }];
            for p in [&patches[..], &[]] {
                let r = Row { logits: &row, patches: p };
                let Scan::Max(m) = scan_coarse(r, &mut s.scan) else { panic!() };
                for k in 0..300u32 {
                    let mut rng = LlamaRng::new(k);
                    let u = rng.uniform_f64();
                    let want = full(&row, p, k);
                    assert_eq!(sequential(r, m, u, &mut s), want, "sequential, rng {k}");
                    bounds_coarse(n, m, &mut s);
                    if let Some(j) = decide(r, m, u, &mut s) {
                        assert_eq!(j, want, "coarse, rng {k}");
                        decided[0] += 1;
                    }
                    if let Some(j) = refine_widest(r, m, u, &mut s) {
                        assert_eq!(j, want, "staged near, rng {k}");
                        decided[3] += 1;
                    }
                    bounds_near(r, m, &mut s);
                    if let Some(j) = decide(r, m, u, &mut s) {
                        assert_eq!(j, want, "near, rng {k}");
                        decided[1] += 1;
                    }
                    bounds_exact(r, m, &mut s);
                    if let Some(j) = decide(r, m, u, &mut s) {
                        assert_eq!(j, want, "exact, rng {k}");
                        decided[2] += 1;
                    }
                    assert_eq!(dist_index(r, m, u, &mut s).0, want);
                }
            }
        }
        assert!(decided.iter().all(|&d| d > 100), "{decided:?}");
    }

    /// The dist-owned coarse scan: the same maxima as the shared max pass, coarse bounds that hold
    /// every block's exact sum, and the full path's index from the tiers that follow it.
    #[test]
    fn lagged_coarse_scan_bounds_hold_and_draws_match() {
        let mut s = DistScratch::default();
        let mut rs = DistScratch::default();
        let mut coarse_decided = 0;
        let mut rows = rows();
        // A maximum rising block after block, and values 150 nats apart across blocks.
        rows.push((0..9000).map(|i| (i / 1024) as f32 * 20.0 - (i % 7) as f32).collect());
        rows.push((0..9000).map(|i| if i < 4096 { -170.0 + (i % 5) as f32 } else { (i % 11) as f32 }).collect());
        for row in rows {
            let n = row.len();
            let patches =
                [TokenData { id: 5, logit: 2.0, p: 0.0 }, TokenData { id: (n - 1) as i32, logit: -1.0, p: 0.0 }];
            for p in [&patches[..], &[]] {
                let r = Row { logits: &row, patches: p };
                let Scan::Max(m) = scan_coarse(r, &mut s.scan) else { panic!() };
                let Scan::Max(rm) = scan_row(r, &mut rs.scan) else { panic!() };
                assert_eq!((m.to_bits(), &s.scan.cmax), (rm.to_bits(), &rs.scan.cmax));
                bounds_coarse(n, m, &mut s);
                let (mut xs, mut es) = (Vec::new(), Vec::new());
                for b in 0..s.scan.cmax.len() {
                    exact_block(r, m, b, &mut xs, &mut es);
                    let exact: f64 = es.iter().map(|&e| e as f64).sum();
                    assert!(s.lo[b] <= exact && exact <= s.hi[b], "block {b}: {} <= {exact} <= {}", s.lo[b], s.hi[b]);
                }
                for k in 0..100u32 {
                    let mut rng = LlamaRng::new(k);
                    let u = rng.uniform_f64();
                    let want = full(&row, p, k);
                    bounds_coarse(n, m, &mut s);
                    if let Some(j) = decide(r, m, u, &mut s) {
                        assert_eq!(j, want, "coarse, rng {k}");
                        coarse_decided += 1;
                    }
                    assert_eq!(dist_index(r, m, u, &mut s).0, want, "rng {k}");
                }
            }
        }
        assert!(coarse_decided > 100, "{coarse_decided}");
    }

    #[test]
    fn a_target_on_a_boundary_needs_the_sequential_replay() {
        // 2048 equal weights and u = k / 2048 exactly: total * u is exactly a running sum.
        let row = vec![0.0f32; 2048];
        let r = Row { logits: &row, patches: &[] };
        let mut s = DistScratch::default();
        let Scan::Max(m) = scan_coarse(r, &mut s.scan) else { panic!() };
        for k in [1u32, 17, 1024, 2047] {
            let u = k as f64 / 2048.0;
            let (j, tier) = dist_index(r, m, u, &mut s);
            assert_eq!(j, k as usize - 1);
            assert_eq!(tier, DistTier::Sequential);
        }
    }
}

#[cfg(test)]
mod bench {
    use super::*;

    fn flat(n: usize) -> Vec<f32> {
        let mut x = 7u64.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
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
                0.8 * z - z * z * 0.05
            })
            .collect()
    }

    fn time(name: &str, mut f: impl FnMut()) {
        let mut v: Vec<f64> = (0..300)
            .map(|_| {
                let t = std::time::Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        eprintln!("{name}: min {:.1} us, median {:.1} us", v[0], v[150]);
    }

    #[test]
    #[ignore]
    fn kernel_timings() {
        let row = flat(262_144);
        let r = Row { logits: &row, patches: &[] };
        let mut s = DistScratch::default();
        let Scan::Max(m) = scan_coarse(r, &mut s.scan) else { panic!() };
        time("scan_coarse", || {
            std::hint::black_box(scan_coarse(r, &mut s.scan));
        });
        time("near pass", || {
            let mut t = 0.0;
            for c in row.chunks(BLOCK) {
                t += block_near(c, m);
            }
            std::hint::black_box(t);
        });
        let mut out = vec![0f32; row.len()];
        let xs: Vec<f32> = row.iter().map(|&v| v - m).collect();
        time("replica pass", || {
            expf_exact_slice(&xs, &mut out);
        });
        time("glibc pass", || {
            for (o, &x) in out.iter_mut().zip(&xs) {
                *o = x.exp();
            }
        });
    }
}
