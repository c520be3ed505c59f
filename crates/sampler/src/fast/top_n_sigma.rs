//! top-n-sigma's cutoff straight from a logits row, with llama.cpp's exact result.
//!
//! llama.cpp masks every logit below `cutoff = max - n * sd`, where `mean` is a sequential `f32`
//! sum over the finite logits divided by their count and `sd` comes from a sequential `f32`
//! accumulator of `f64` squared deviations. Only the set of survivors matters downstream, so:
//!
//! 1. one vectorised pass gathers per-block max, count, `sum l` and `sum l^2`; from them and
//!    rigorous bounds on llama.cpp's rounding (its running sums, the mean's rounding, the
//!    deviations' rounding) comes an interval `[c_lo, c_hi]` holding llama.cpp's cutoff (the
//!    cutoff is monotone in the accumulator, so the interval ends are evaluated with
//!    llama.cpp's own `f32` operations);
//! 2. the survivors are collected from the blocks whose max reaches `c_lo`; if none lies in
//!    `[c_lo, c_hi)` the survivor set is exact;
//! 3. otherwise both sequential sums are replayed exactly ([`exact_mean_acc`]): within a stretch
//!    where the running sum stays in one binade, adding `x` rounds to `RN_ulp(x)`, which a
//!    vector computes with the `1.5 * 2^k` rounding trick; stretches that leave the binade,
//!    hit a tie, or carry huge terms are replayed one addition at a time.

use crate::fast::bounds::{f32_down, f32_up, seq_block_bounded, seq_sum_block_bounded};
use crate::fast::row::{collect_block, Row, TierCounts, BLOCK};
use crate::fast::simd::{first_nan_or_inf, flag_nan_inf, max_scan_tail, simd_dispatch, Simd};

/// Per-block statistics over the finite values.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stats {
    max: f32,
    bad: bool,
    cnt: u32,
    /// The block's reference: `s1`, `s2` are sums of `d = RN(l - c)` and `d^2`.
    c: f32,
    s1: f64,
    s2: f64,
    has_ninf: bool,
    /// Bound on `sum |l - c|` over the block (`sqrt(cnt * s2)`, widened by [`G`]); set by
    /// [`sigma_survivors`] once per block, for [`acc_bounds`].
    a: f64,
}

/// `2^-24`, the unit roundoff of `f32`.
const U24: f64 = 1.0 / 16_777_216.0;

/// Relative error bound of a block's `f32` lane sums of `d` and `d^2` (at most [`BLOCK`]
/// terms a lane), plus the rounding of `d`.
const G: f64 = BLOCK as f64 * U24 * 1.01 + 2.0 * U24;

impl Stats {
    /// [`Stats::a`] from the sums.
    fn abs_dev_bound(&self) -> f64 {
        (self.cnt as f64 * self.s2 * (1.0 + 2.0 * G)).sqrt() * (1.0 + 1e-12)
    }
}

/// Reusable buffers.
#[derive(Clone, Debug, Default)]
pub(crate) struct SigmaScratch {
    stats: Vec<Stats>,
    /// Survivors: ids (ascending) and values.
    pub(crate) ids: Vec<i32>,
    pub(crate) vals: Vec<f32>,
}

/// How often the cutoff was decided by the bounds / needed the exact replay, process-wide.
static TIERS: TierCounts<2> = TierCounts::new();

/// `[decided by the bounds, needed the exact replay]` so far in this process.
pub(crate) fn tier_counts() -> [u64; 2] {
    TIERS.get()
}

/// Outcome of [`sigma_survivors`].
pub(crate) enum Sigma {
    /// NaN or `+inf` in the row at this index.
    Bad(usize),
    /// Every value is `-inf` (left to the full path).
    Degenerate,
    /// Survivors in `ids` / `vals`.
    Done,
}

simd_dispatch!(
    /// Max over all values, NaN/+inf check, count of the finite values and the sums of
    /// `RN(l - c)` and its square over them.
    fn block_stats(x: &[f32], c: f32) -> Stats = block_stats_k
);

#[inline(always)]
unsafe fn block_stats_k<S: Simd>(x: &[f32], cr: f32) -> Stats {
    // SAFETY: the kernel contract (`fast::simd`), passed on unchanged.
    if let Some(st) = unsafe { block_stats_finite_k::<S>(x, cr) } {
        return st;
    }
    // SAFETY: as above.
    unsafe { block_stats_any_k::<S>(x, cr) }
}

/// [`block_stats`] for a block of finite values (the common case), without the per-value
/// masks: `None` when the block holds a non-finite value (or its squares overflow), which the
/// sums then show (`-inf` makes the square sum `+inf`, NaN and `+inf` make a sum NaN or
/// `+inf`), and [`block_stats_any_k`] must run. On a finite block every operation is the one
/// [`block_stats_any_k`] performs (its masks keep every lane), so the results are the same bits.
#[inline(always)]
unsafe fn block_stats_finite_k<S: Simd>(x: &[f32], cr: f32) -> Option<Stats> {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let p = x.as_ptr();
        let cv = S::splat(cr);
        let z = S::splat(0.0);
        // Four vectors a step, each with its own sum and square-sum accumulators: the
        // accumulations' latency, not the arithmetic, would otherwise set the pace.
        let (mut mx, mut s1, mut s2) = (S::splat(f32::NEG_INFINITY), [z; 4], [z; 4]);
        let mut i = 0;
        while i + 4 * S::N <= n {
            let v = [
                S::load(p.add(i)),
                S::load(p.add(i + S::N)),
                S::load(p.add(i + 2 * S::N)),
                S::load(p.add(i + 3 * S::N)),
            ];
            mx = S::max(mx, S::max(S::max(v[0], v[1]), S::max(v[2], v[3])));
            for j in 0..4 {
                let k = S::sub(v[j], cv);
                s1[j] = S::add(s1[j], k);
                s2[j] = S::fmadd(k, k, s2[j]);
            }
            i += 4 * S::N;
        }
        let (t1, t2) = (add4::<S>(s1), add4::<S>(s2));
        if S::any(S::nlt(S::add(t1, t2), S::splat(f32::INFINITY))) || x[i..].iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut st = Stats {
            max: S::hmax(mx),
            bad: false,
            cnt: n as u32,
            c: cr,
            s1: S::hsum_f32(t1) as f64,
            s2: S::hsum_f32(t2) as f64,
            has_ninf: false,
            a: 0.0,
        };
        for &v in &x[i..] {
            let mut bad = false;
            max_scan_tail(v, &mut st.max, &mut bad);
            let d = v - cr;
            st.s1 += d as f64;
            st.s2 += (d as f64) * (d as f64);
        }
        Some(st)
    }
}

/// The lane-wise `f32` sum of four accumulators, in a fixed order. With the lane sum that
/// follows ([`Simd::hsum_f32`]) every block sum is an `f32` sum of at most [`BLOCK`] terms in
/// some order, which [`G`] bounds (it holds for any order); an `f64` reduction per
/// accumulator (16 dependent additions each) cost more than the block's loop.
#[inline(always)]
unsafe fn add4<S: Simd>(a: [S::V; 4]) -> S::V {
    // SAFETY: register-only arithmetic on `S`'s vectors; the caller guarantees the CPU supports `S` (the kernel contract in `fast::simd`).
    unsafe { S::add(S::add(a[0], a[1]), S::add(a[2], a[3])) }
}

/// [`block_stats`] for any block: masks `-inf` out of the sums and flags NaN and `+inf`.
#[inline(always)]
unsafe fn block_stats_any_k<S: Simd>(x: &[f32], cr: f32) -> Stats {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let p = x.as_ptr();
        let cv = S::splat(cr);
        let inf = S::splat(f32::INFINITY);
        let ninf = S::splat(f32::NEG_INFINITY);
        let z = S::splat(0.0);
        // Laid out as in `block_stats_finite_k` (same accumulators, same order of operations).
        let (mut mx, mut s1, mut s2) = (ninf, [z; 4], [z; 4]);
        let mut c = 0u32;
        let mut bad = S::none();
        let mut i = 0;
        while i + 4 * S::N <= n {
            let v = [
                S::load(p.add(i)),
                S::load(p.add(i + S::N)),
                S::load(p.add(i + 2 * S::N)),
                S::load(p.add(i + 3 * S::N)),
            ];
            bad = flag_nan_inf::<S>(bad, v[0], v[1], inf);
            bad = flag_nan_inf::<S>(bad, v[2], v[3], inf);
            // One accumulator for all four vectors, not `MaxScan`'s two (kept: the order of
            // `max` decides which zero a tie of +0 and -0 leaves).
            mx = S::max(mx, S::max(S::max(v[0], v[1]), S::max(v[2], v[3])));
            for j in 0..4 {
                let f = S::lt(ninf, v[j]);
                let k = S::keep(f, S::sub(v[j], cv));
                c += S::count(f);
                s1[j] = S::add(s1[j], k);
                s2[j] = S::fmadd(k, k, s2[j]);
            }
            i += 4 * S::N;
        }
        let mut st = Stats {
            max: S::hmax(mx),
            bad: S::any(bad),
            cnt: c,
            c: cr,
            s1: S::hsum_f32(add4::<S>(s1)) as f64,
            s2: S::hsum_f32(add4::<S>(s2)) as f64,
            has_ninf: false,
            a: 0.0,
        };
        for &v in &x[i..] {
            max_scan_tail(v, &mut st.max, &mut st.bad);
            if v == f32::NEG_INFINITY {
                st.has_ninf = true;
            } else {
                let d = v - cr;
                st.cnt += 1;
                st.s1 += d as f64;
                st.s2 += (d as f64) * (d as f64);
            }
        }
        // Without NaN / +inf, every non-finite value is -inf.
        st.has_ninf = (st.cnt as usize) < n;
        st
    }
}

/// llama.cpp's cutoff from its accumulator: `max - n * sqrt(acc / count)`, in `f32`.
#[inline]
fn cutoff_of(mx: f32, n: f32, acc: f32, cnt: u32) -> f32 {
    let sd = (acc / cnt as f32).sqrt();
    mx - n * sd
}

/// llama.cpp's top-n-sigma survivors of `row` for `n` (finite, > 0): the ids whose value is
/// not below the cutoff, in id order, with their values.
pub(crate) fn sigma_survivors(row: Row<'_>, n: f32, s: &mut SigmaScratch) -> Sigma {
    let len = row.len();
    let nb = len.div_ceil(BLOCK);
    s.stats.clear();
    let mut buf = [0f32; BLOCK];
    // Each block's sums are centred on the mean of the blocks before the previous one (a
    // block without such blocks on its first finite value), so sums of squares do not cancel.
    // Any centre gives rigorous bounds; skipping the previous block lets its statistics
    // finish while this block is read (with the previous block's mean, every block waited
    // for the one before).
    let (mut tot, mut tcnt) = (0.0f64, 0u32);
    let mut pending = (0.0f64, 0u32);
    for b in 0..nb {
        let raw = &row.logits[b * BLOCK..((b + 1) * BLOCK).min(len)];
        let x = row.block(b, &mut buf);
        let c = if tcnt > 0 {
            (tot / tcnt as f64) as f32
        } else {
            x.iter().copied().find(|v| v.is_finite()).unwrap_or(0.0)
        };
        let c = if c.is_finite() { c } else { 0.0 };
        let mut st = block_stats(raw, c);
        if st.bad {
            let i = first_nan_or_inf(raw);
            return Sigma::Bad(b * BLOCK + i);
        }
        if x.as_ptr() != raw.as_ptr() {
            st = block_stats(x, c);
        }
        st.a = st.abs_dev_bound();
        tot += pending.0;
        tcnt += pending.1;
        pending = (st.cnt as f64 * c as f64 + st.s1, st.cnt);
        s.stats.push(st);
    }
    let cnt: u32 = s.stats.iter().map(|t| t.cnt).sum();
    if cnt == 0 {
        return Sigma::Degenerate;
    }
    let mx = s.stats.iter().fold(f32::NEG_INFINITY, |m, t| if t.max > m { t.max } else { m });

    let (acc_lo, acc_hi) = acc_bounds(&s.stats, len, cnt);
    let c_lo = if acc_hi.is_finite() { cutoff_of(mx, n, f32_up(acc_hi), cnt) } else { f32::NEG_INFINITY };
    let c_hi = cutoff_of(mx, n, f32_down(acc_lo.max(0.0)), cnt);
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    let ambiguous = !(c_lo <= c_hi) || collect(row, c_lo, c_hi, s);
    if !ambiguous {
        TIERS.bump(0);
        return Sigma::Done;
    }
    TIERS.bump(1);
    let (_, acc) = exact_mean_acc(row, s);
    let cutoff = cutoff_of(mx, n, acc, cnt);
    // Keep the survivors of the exact cutoff (`l < cutoff` is masked; NaN masks nothing).
    if c_lo <= cutoff && c_lo <= c_hi {
        let mut w = 0;
        for r in 0..s.ids.len() {
            // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(s.vals[r] < cutoff) {
                s.ids[w] = s.ids[r];
                s.vals[w] = s.vals[r];
                w += 1;
            }
        }
        s.ids.truncate(w);
        s.vals.truncate(w);
    } else {
        collect(row, cutoff, cutoff, s);
    }
    Sigma::Done
}

/// Collects (id, value) of every finite value `>= lo` (all finite values when `lo` is NaN or
/// `-inf`); returns whether one of them is below `hi`.
fn collect(row: Row<'_>, lo: f32, hi: f32, s: &mut SigmaScratch) -> bool {
    s.ids.clear();
    s.vals.clear();
    let mut buf = [0f32; BLOCK];
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    let everything = !(lo > f32::NEG_INFINITY);
    let mut below_hi = false;
    for (b, st) in s.stats.iter().enumerate() {
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !everything && !(st.max >= lo) {
            continue;
        }
        let x = row.block(b, &mut buf);
        let base = b * BLOCK;
        if everything {
            for (k, &v) in x.iter().enumerate() {
                if v != f32::NEG_INFINITY {
                    s.ids.push((base + k) as i32);
                    s.vals.push(v);
                    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
                    #[allow(clippy::neg_cmp_op_on_partial_ord)]
                    let below = !(v >= hi);
                    below_hi |= below;
                }
            }
        } else {
            below_hi |= collect_block(x, lo, hi, base, &mut s.ids, &mut s.vals);
        }
    }
    below_hi
}

/// Bounds on llama.cpp's final `f32` accumulator from the block statistics.
///
/// Per block, `d = RN(l - c)` is within `2^-24 |d|` of `l - c`, and the `f32` lane sums of
/// `d` and `d^2` within `g` (relative to the sums of magnitudes). So `sum l` is known to within
/// `E1`, and `Q(mu) = sum (l - mu)^2 = sum_b [D2 + 2 (c - mu) D1 + cnt (c - mu)^2]` to within
/// `E_Q(mu) = sum_b [E2 + 2 |c - mu| E1]`. llama.cpp's mean is its rounded running sum (each
/// step off by at most `2^-24` of the running magnitude) over the count, rounded; its
/// accumulator adds `(1 + 2^-24)^2`-accurate squares with a relative `2^-24` rounding per
/// step of the running value.
fn acc_bounds(stats: &[Stats], len: usize, cnt: u32) -> (f64, f64) {
    let slack = 1.0 / 35_184_372_088_832.0; // 2^-45, for our own f64 sums
    let g = G;
    let cntf = cnt as f64;
    // Growth of a running sum's magnitude over its exact counterpart: (1 + 2^-24)^n.
    let grow = (len as f64 * U24).exp() * 1.001;
    // sum l and its error; sum over tokens of |llama.cpp's running sum|.
    let (mut sl, mut e1, mut prefix_abs, mut run_abs) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for st in stats {
        let a = st.a;
        sl += st.cnt as f64 * st.c as f64 + st.s1;
        e1 += g * a;
        prefix_abs += st.cnt as f64 * (st.c as f64).abs() + a;
        run_abs += st.cnt as f64 * prefix_abs;
    }
    e1 += slack * prefix_abs;
    let e_seq = U24 * grow * run_abs * 1.001;
    let (q_lo, q_hi) = ((sl - e1 - e_seq) / cntf, (sl + e1 + e_seq) / cntf);
    let mu_lo = q_lo - q_lo.abs() * 2.0 * U24 - f64::MIN_POSITIVE;
    let mu_hi = q_hi + q_hi.abs() * 2.0 * U24 + f64::MIN_POSITIVE;
    // One block's term of Q at mu, its error bound, and its magnitude (for our f64 rounding).
    let term = |st: &Stats, mu: f64| -> (f64, f64, f64) {
        let dc = st.c as f64 - mu;
        let t = st.s2 + 2.0 * dc * st.s1 + st.cnt as f64 * dc * dc;
        let e = g * st.s2 * (1.0 + 2.0 * g) + 2.0 * dc.abs() * g * st.a;
        (t, e, st.s2 + 2.0 * (dc * st.s1).abs() + st.cnt as f64 * dc * dc)
    };
    // Q over the blocks at mu_lo, mu_hi and the vertex, each with its error bound and
    // magnitude, in one loop (independent chains, not one pass per point). Q is a convex
    // quadratic in mu (leading coefficient cnt): its range over [mu_lo, mu_hi] is at the ends
    // or at the vertex; E_Q is convex too, so its maximum is at an end.
    // llama.cpp's accumulator: each step's rounding is within 2^-24 (f32) + 2^-53 (f64) of the
    // running value, itself at most `grow` times the exact prefix (`run_acc` sums those
    // prefix bounds, from the running Q and error at the two ends).
    let vertex = sl / cntf;
    let (mut q1, mut e1s, mut m1) = (0.0f64, 0.0f64, 0.0f64);
    let (mut q2, mut e2s, mut m2) = (0.0f64, 0.0f64, 0.0f64);
    let mut qv = 0.0f64;
    let (mut run_acc, mut ea, mut eb) = (0.0f64, 0.0f64, 0.0f64);
    for st in stats {
        let (t, te, tm) = term(st, mu_lo);
        q1 += t;
        e1s += te;
        m1 += tm;
        ea += te + tm * slack;
        let (t, te, tm) = term(st, mu_hi);
        q2 += t;
        e2s += te;
        m2 += tm;
        eb += te + tm * slack;
        qv += term(st, vertex).0;
        run_acc += st.cnt as f64 * (q1.max(q2) + ea.max(eb)).max(0.0);
    }
    let e_q = (e1s + m1 * slack).max(e2s + m2 * slack);
    let q_min = if mu_lo < vertex && vertex < mu_hi { qv.min(q1).min(q2) } else { q1.min(q2) };
    let q_max = q1.max(q2);
    let x_lo = (q_min - e_q).max(0.0);
    let x_hi = q_max + e_q;
    let e_acc = U24 * (1.0 + 1e-8) * (1.0 + 4.0 * U24) * grow * run_acc * 1.001;
    let acc_lo = x_lo * (1.0 - 4.0 * U24) - e_acc;
    let acc_hi = (x_hi * (1.0 + 4.0 * U24) + e_acc) * (1.0 + slack);
    (acc_lo, acc_hi)
}

/// llama.cpp's exact `sum` (sequential `f32` over the finite values) and final `acc`, replayed
/// with binade-grid vector sums where that is provably identical, else one step at a time.
pub(crate) fn exact_mean_acc(row: Row<'_>, s: &SigmaScratch) -> (f32, f32) {
    let len = row.len();
    let nb = len.div_ceil(BLOCK);
    let mut buf = [0f32; BLOCK];
    let cnt: u32 = s.stats.iter().map(|t| t.cnt).sum();
    let g = G;
    let mut sum = 0.0f32;
    for b in 0..nb {
        let x = row.block(b, &mut buf);
        let st = &s.stats[b];
        // max |l| <= max |l - c| + |c| <= sqrt(sum (l - c)^2) + |c|.
        let dev = (st.s2 * (1.0 + 2.0 * g)).sqrt() * (1.0 + 1e-9);
        let c = (st.c as f64).abs();
        sum = seq_sum_block_bounded(x, sum, st.has_ninf, (dev + c) * (1.0 + 1e-9));
    }
    let mean = sum / cnt as f32;
    let mut acc = 0.0f32;
    let mu = mean as f64;
    for b in 0..nb {
        let x = row.block(b, &mut buf);
        let st = &s.stats[b];
        // sum (l - mu)^2 = sum (l - c)^2 + 2 (c - mu) sum (l - c) + cnt (c - mu)^2, with the
        // statistics' error; each square (as rounded) within 2^-23 more.
        let dc = st.c as f64 - mu;
        let a = (st.cnt as f64 * st.s2 * (1.0 + 2.0 * g)).sqrt();
        let t = st.s2 + 2.0 * dc * st.s1 + st.cnt as f64 * dc * dc;
        let e = g * st.s2 * (1.0 + 2.0 * g) + 2.0 * dc.abs() * g * a;
        let mag = st.s2 + 2.0 * (dc * st.s1).abs() + st.cnt as f64 * dc * dc;
        let bound = ((t + e).max(0.0) + mag * 1e-12) * (1.0 + 4.0 * U24) + 1e-30;
        acc = seq_block_bounded(x, acc, st.has_ninf, true, mean, bound, bound);
    }
    (mean, acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::{Candidates, TokenData};
    use crate::fast::bounds::{STEPS, SUB, SUB2};
    use crate::sampler::Sampler;
    use crate::samplers::top_n_sigma::TopNSigma;

    /// The statistics pass without masks gives the masked pass's bits on finite blocks, and
    /// declines blocks with `-inf`, NaN or `+inf` (in a vector or in the tail), at every level.
    #[test]
    fn finite_block_stats_equal_the_masked_pass() {
        use crate::fast::simd::Level;
        let mut x: Vec<f32> = (0..1000).map(|i| ((i * 7919) % 1013) as f32 * 0.37 - 150.0).collect();
        let key = |t: Stats| (t.max.to_bits(), t.bad, t.cnt, t.s1.to_bits(), t.s2.to_bits(), t.has_ninf);
        for level in Level::all().into_iter().filter(|l| l.is_supported()) {
            // SAFETY: the level is supported.
            let run = |x: &[f32]| unsafe {
                match level {
                    #[cfg(target_arch = "x86_64")]
                    Level::Avx512 => (
                        block_stats_finite_k::<crate::fast::simd::Avx512>(x, 3.0),
                        block_stats_any_k::<crate::fast::simd::Avx512>(x, 3.0),
                    ),
                    #[cfg(target_arch = "x86_64")]
                    Level::Avx2 => (
                        block_stats_finite_k::<crate::fast::simd::Avx2>(x, 3.0),
                        block_stats_any_k::<crate::fast::simd::Avx2>(x, 3.0),
                    ),
                    #[cfg(target_arch = "aarch64")]
                    Level::Neon => (
                        block_stats_finite_k::<crate::fast::simd::Neon>(x, 3.0),
                        block_stats_any_k::<crate::fast::simd::Neon>(x, 3.0),
                    ),
                    _ => (
                        block_stats_finite_k::<crate::fast::simd::Scalar>(x, 3.0),
                        block_stats_any_k::<crate::fast::simd::Scalar>(x, 3.0),
                    ),
                }
            };
            for len in [1000, 999, 37] {
                let (fast, masked) = run(&x[..len]);
                assert_eq!(fast.map(key), Some(key(masked)), "{level:?} len {len}");
            }
            for at in [5, 500, 998] {
                for bad in [f32::NEG_INFINITY, f32::NAN, f32::INFINITY] {
                    let keep = x[at];
                    x[at] = bad;
                    assert!(run(&x).0.is_none(), "{level:?} {bad} at {at}");
                    x[at] = keep;
                }
            }
        }
    }

    /// llama.cpp's sums, literally.
    fn literal(x: &[f32]) -> (f32, f32) {
        let mut sum = 0.0f32;
        let mut cnt = 0u32;
        for &v in x {
            if v != f32::NEG_INFINITY {
                sum += v;
                cnt += 1;
            }
        }
        let mean = sum / cnt as f32;
        let mut acc = 0.0f32;
        for &v in x {
            if v != f32::NEG_INFINITY {
                let d = (v - mean) as f64;
                acc = (acc as f64 + d * d) as f32;
            }
        }
        (mean, acc)
    }

    fn rows() -> Vec<Vec<f32>> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut unif = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut out = Vec::new();
        for (n, shape) in
            [(300_000usize, 0), (100_000, 1), (50_000, 2), (20_000, 3), (9000, 4), (70_000, 5), (4096, 6), (262_144, 7)]
        {
            let v: Vec<f32> = (0..n)
                .map(|i| {
                    let z = ((-2.0 * unif().ln()).sqrt() * (2.0 * std::f64::consts::PI * unif()).cos()) as f32;
                    match shape {
                        0 => 0.8 * z - 0.05 * z * z,
                        1 => 2.5 * z + if i % 997 == 3 { 15.0 } else { 0.0 },
                        2 => half::bf16::from_f32(3.0 * z).to_f32(),
                        3 => (z * 4.0).round() * 0.25 + 100.0,
                        4 => {
                            if i % 7 == 0 {
                                f32::NEG_INFINITY
                            } else {
                                z - 40.0
                            }
                        }
                        5 => 1e-3 * z,
                        6 => 0.5,
                        _ => z * 1000.0,
                    }
                })
                .collect();
            out.push(v);
        }
        out
    }

    #[test]
    fn exact_replay_equals_the_literal_sums() {
        let mut s = SigmaScratch::default();
        for row in rows() {
            let r = Row { logits: &row, patches: &[] };
            assert!(matches!(sigma_survivors(r, 1.0, &mut s), Sigma::Done));
            let got = exact_mean_acc(r, &s);
            let want = literal(&row);
            assert_eq!((got.0.to_bits(), got.1.to_bits()), (want.0.to_bits(), want.1.to_bits()), "n {}", row.len());
        }
    }

    /// The exact replay does most of its work in grid sums: the squares pass, the costly one
    /// (an `f64` round trip per value), replays at most a few chunks one value at a time on
    /// every row with a spread, whatever its length (the running sum settles in one binade
    /// early). A row with no spread (`acc` stays 0, which has no binade) is replayed entirely
    /// step by step, which shows the count sees the fallback. The sum pass starts at 0, so at
    /// least its first chunk is stepped, but never the whole row. Measured: at most 608 squares
    /// steps on the rows here (lengths 4,096 to 300,000), against the bound of 1,024.
    #[test]
    fn exact_replay_steps_rarely() {
        let mut s = SigmaScratch::default();
        for row in rows() {
            let r = Row { logits: &row, patches: &[] };
            sigma_survivors(r, 1.0, &mut s);
            STEPS.with(|c| c.set([0; 2]));
            let (mean, acc) = exact_mean_acc(r, &s);
            let [sum_steps, sq_steps] = STEPS.with(|c| c.get());
            let n = row.len();
            assert!((SUB2..n).contains(&sum_steps), "n {n}: {sum_steps} sum steps");
            if acc == 0.0 {
                assert_eq!(sq_steps, n, "n {n}: mean {mean}");
            } else {
                assert!(sq_steps <= 8 * SUB, "n {n}: {sq_steps} squares steps (acc {acc})");
            }
        }
    }

    #[test]
    fn bounds_hold_the_literal_accumulator() {
        let mut s = SigmaScratch::default();
        for row in rows() {
            let r = Row { logits: &row, patches: &[] };
            sigma_survivors(r, 1.0, &mut s);
            let cnt: u32 = s.stats.iter().map(|t| t.cnt).sum();
            let (lo, hi) = acc_bounds(&s.stats, row.len(), cnt);
            let (_, acc) = literal(&row);
            assert!(lo <= acc as f64 && acc as f64 <= hi, "n {}: {lo} <= {acc} <= {hi}", row.len());
            if acc > 0.0 {
                assert!(hi - lo < 0.05 * acc as f64, "n {}: width {}", row.len(), (hi - lo) / acc as f64);
            }
            eprintln!("n {}: relative width {:e}", row.len(), (hi - lo) / acc as f64);
        }
    }

    #[test]
    fn survivors_equal_the_sampler() {
        let mut s = SigmaScratch::default();
        let mut exact_needed = 0;
        for row in rows() {
            for n in [0.5f32, 1.0, 2.0, 3.5] {
                let patches = [
                    TokenData { id: 11, logit: 30.0, p: 0.0 },
                    TokenData { id: 500, logit: f32::NEG_INFINITY, p: 0.0 },
                ];
                for p in [&patches[..], &[]] {
                    let r = Row { logits: &row, patches: p };
                    let before = tier_counts()[1];
                    let Sigma::Done = sigma_survivors(r, n, &mut s) else { panic!() };
                    exact_needed += (tier_counts()[1] - before) as usize;
                    let mut c = Candidates::new();
                    c.fill_f32(&row);
                    for t in p {
                        c.as_mut_slice()[t.id as usize].logit = t.logit;
                    }
                    TopNSigma::new(n).apply(&mut c);
                    let want: Vec<(i32, f32)> =
                        c.as_slice().iter().filter(|d| d.logit != f32::NEG_INFINITY).map(|d| (d.id, d.logit)).collect();
                    let got: Vec<(i32, f32)> = s.ids.iter().copied().zip(s.vals.iter().copied()).collect();
                    assert_eq!(got, want, "n_sigma {n}, row of {}", row.len());
                }
            }
        }
        assert!(exact_needed > 0);
    }
}
