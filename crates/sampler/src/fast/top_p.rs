//! top-p's nucleus straight from a logits row, when it lies within llama.cpp's first 256
//! sorted candidates (a confident step): exact ids, order and cut, without the full array.
//!
//! llama.cpp computes `p_i = RN(e_i / s)` with `s` a sequential `f32` sum of
//! `e_i = expf(l_i - max)` in id order, partially sorts the top 256 candidates with its bucket
//! sort and accumulates `p` in that order (`f32`) until the sum reaches `p`. The partial sort's
//! first 256 entries come from the top buckets: those are gathered and sorted with llama.cpp's
//! algorithms (in id order, as its stable scatter leaves them). The running sum is monotone in
//! `s`, so evaluating it at both ends of a bracket of `s` (from the max pass's coarse block
//! sums) either fixes the cut or says it is ambiguous. Then, when the maximum comes late in the
//! row, a 1-ulp vector exp pass that also sums `min(e_i, U/2)` (`U` an ulp bound of `s`: each
//! addition is off by at most `min(e_i, ulp(s)/2)`) gives a tighter bracket; failing that, `s`
//! itself is computed exactly, skipping the terms too small to change it (see [`exact_sum`]),
//! and the cut is read at `s`.
//! When even the bracket's largest `p`s cannot reach the cut within 256 candidates, the caller
//! runs the wide path or the full path; nothing has been consumed.

use crate::candidates::{Candidates, TokenData};
use crate::fast::bounds::{f32_down, f32_up, seq_block};
use crate::fast::expf::{exp_near, expf_exact_slice, BOUND_DIV, BOUND_MUL, NEAR_REL, TINY};
use crate::fast::row::{collect_into, Row, RowScan, TierCounts, BLOCK};
use crate::fast::simd::{simd_dispatch, Scalar, Simd};
use crate::sort::{bucket_of, logit_before, sorted_prefix_if_distinct, std_partial_sort, std_sort, NBUCKETS};

/// Candidates llama.cpp's adaptive top-p sorts first.
const FIRST: usize = 256;

/// Reusable buffers.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopPScratch {
    ids: Vec<i32>,
    vals: Vec<f32>,
    groups: Vec<TokenData>,
    counts: Vec<u32>,
    xs: Vec<f32>,
    es: Vec<f32>,
    sids: Vec<i32>,
    svals: Vec<f32>,
    /// One bucket as gathered (id order), for the libstdc++ emulation on ties.
    spare: Vec<TokenData>,
}

/// How often the nucleus was built here / left to the full path, process-wide.
static TIERS: TierCounts<2> = TierCounts::new();

/// `[nucleus built, full path]` so far in this process.
pub(crate) fn tier_counts() -> [u64; 2] {
    TIERS.get()
}

simd_dispatch!(
    /// (sum of `exp_near(x - m)`, sum of `min(exp_near(x - m), c)`) over one block; the second
    /// is summed in `f32` lanes (its caller widens it by the lane sums' rounding).
    fn block_near_min(x: &[f32], m: f32, c: f32) -> (f64, f64) = block_near_min_k
);

#[inline(always)]
unsafe fn block_near_min_k<S: Simd>(x: &[f32], m: f32, c: f32) -> (f64, f64) {
    // SAFETY: the kernel contract (`fast::simd`): the caller runs this on a level the CPU supports, and every vector access below stays inside the slices (`i + S::N <= len`, tails done lane by lane).
    unsafe {
        let n = x.len();
        let p = x.as_ptr();
        let (mv, cv) = (S::splat(m), S::splat(c));
        let mut a = S::dzero();
        let mut b = S::splat(0.0);
        let mut i = 0;
        while i + 2 * S::N <= n {
            let e0 = exp_near::<S>(S::sub(S::load(p.add(i)), mv));
            let e1 = exp_near::<S>(S::sub(S::load(p.add(i + S::N)), mv));
            a = S::dadd(a, S::add(e0, e1));
            b = S::add(b, S::add(S::min(e0, cv), S::min(e1, cv)));
            i += 2 * S::N;
        }
        let (mut sa, mut sb) = (S::dsum(a), S::hsum_f64(b));
        for &v in &x[i..] {
            let e = exp_near::<Scalar>(v - m);
            sa += e as f64;
            sb += e.min(c) as f64;
        }
        (sa, sb)
    }
}

/// Outcome of [`top_p_nucleus`].
pub(crate) enum TopP {
    /// Not decided here: run the full path.
    Full,
    /// `out` holds the nucleus (sorted, as llama.cpp's top-p leaves the view, `p` zero).
    Nucleus,
}

/// llama.cpp's top-p over `row` (scanned into `d`, maximum `m` finite) for `p < 1` and
/// `min_keep`, when the nucleus lies within the first 256 sorted candidates.
pub(crate) fn top_p_nucleus(
    row: Row<'_>,
    m: f32,
    p: f32,
    min_keep: usize,
    d: &RowScan,
    s: &mut TopPScratch,
    out: &mut Candidates,
) -> TopP {
    let r = nucleus(row, m, p, min_keep, d, s, out);
    TIERS.bump(matches!(r, TopP::Full) as usize);
    r
}

fn nucleus(
    row: Row<'_>,
    m: f32,
    p: f32,
    min_keep: usize,
    d: &RowScan,
    s: &mut TopPScratch,
    out: &mut Candidates,
) -> TopP {
    let n = row.len();
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if min_keep > FIRST || !(p >= 0.0) {
        return TopP::Full;
    }
    let nb = d.cmax.len();
    // 1. A coarse upper bound of s from the scan (for the ulp bound U).
    let (mut coarse_lo, mut coarse_hi) = (0.0f64, 0.0f64);
    for b in 0..nb {
        if d.cmax[b] == f32::NEG_INFINITY {
            continue;
        }
        let dd = m as f64 - d.cref[b] as f64;
        let rho = (176.0 + dd) * 1.01 / 16_777_216.0 + 1.0 / 4_194_304.0;
        let acc_err = BLOCK as f64 / 16_777_216.0;
        let f = d.coarse[b];
        coarse_hi += f * (1.0 + acc_err) * BOUND_MUL * (-dd).exp() * (1.0 + rho) * (1.0 + 1e-9);
        coarse_lo += (f * (1.0 - acc_err) / BOUND_DIV * (-dd).exp() * (1.0 - rho) - BLOCK as f64 * TINY).max(0.0);
    }
    if !coarse_hi.is_finite() {
        return TopP::Full;
    }
    // llama.cpp's s never exceeds its real sum by more than the rounding, itself below the real
    // sum: s < 2 * coarse_hi, so ulp(s) <= ulp(f32(2 * coarse_hi)).
    let big = (2.0 * coarse_hi) as f32;
    let ulp = f32::from_bits((big.to_bits() & 0x7f80_0000).max(24 << 23) - (23 << 23)) * 2.0;
    let half_u = ulp / 2.0;
    // 2. llama.cpp's first 256 sorted candidates: the buckets from the top down to the one
    // where the count reaches 256. Gather everything above a logit threshold, lowering it until
    // those buckets are wholly inside.
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
            return TopP::Full;
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

    // 3. The cut from the coarse bracket: each step of llama.cpp's sum is off by at most
    // ulp(s)/2 <= U/2, n of them.
    let rnd_all = n as f64 * half_u as f64;
    let (c_lo, c_hi) = (f32_down(coarse_lo - rnd_all), f32_up(coarse_hi + rnd_all));
    if c_lo > 0.0 && c_hi < f32::INFINITY {
        if let Some(last) = cut(&s.groups, k, m, p, min_keep, c_lo, c_hi) {
            out.fill_from(&s.groups[..last]);
            out.set_sorted(true);
            return TopP::Nucleus;
        }
    }
    if c_lo > 0.0 && cut(&s.groups, k, m, p, min_keep, c_lo, c_lo).is_none() {
        return TopP::Full; // even the largest `p`s cannot reach the cut within the first `k`
    }
    // 2'. Not decided by the coarse bracket. The exact sum (below) computes every exponential
    // up to the maximum's block, then only those large enough to change the sum: cheap when the
    // maximum comes early in the row. Otherwise a 1-ulp pass over the row (the real sum and a
    // rounding bound) tries a tighter bracket first.
    let max_block = d.cmax.iter().position(|&x| x == m).unwrap_or(0);
    if max_block > nb / 8 {
        let mut buf = [0f32; BLOCK];
        let (mut sum, mut rnd) = (0.0f64, 0.0f64);
        for b in 0..nb {
            if d.cmax[b] == f32::NEG_INFINITY {
                continue;
            }
            let x = row.block(b, &mut buf);
            let (a, c) = block_near_min(x, m, half_u);
            sum += a;
            rnd += c;
        }
        let eps = NEAR_REL * 2.0 * 1.01 + 1e-12;
        let t_lo = sum * (1.0 - eps) - 2.0 * n as f64 * TINY;
        let t_hi = sum * (1.0 + eps) + 2.0 * n as f64 * TINY;
        // sum min(e, c) <= (1 + 2^-23) sum min(exp_near, c) + n TINY; its f32 lane sums (at most
        // BLOCK terms each) are within BLOCK 2^-24 of it.
        let rnd = rnd * (1.0 + BLOCK as f64 / 8_388_608.0) + 2.0 * n as f64 * TINY;
        let (s_lo, s_hi) = (f32_down(t_lo - rnd), f32_up(t_hi + rnd));
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(s_lo > 0.0) || !(s_hi < f32::INFINITY) {
            return TopP::Full;
        }
        if let Some(last) = cut(&s.groups, k, m, p, min_keep, s_lo, s_hi) {
            out.fill_from(&s.groups[..last]);
            out.set_sorted(true);
            return TopP::Nucleus;
        }
        if cut(&s.groups, k, m, p, min_keep, s_lo, s_lo).is_none() {
            return TopP::Full;
        }
    }
    // 2''. llama.cpp's sum itself, exactly.
    let exact = exact_sum(row, m, d, s);
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(exact > 0.0) || !(exact < f32::INFINITY) {
        return TopP::Full;
    }
    match cut(&s.groups, k, m, p, min_keep, exact, exact) {
        Some(last) => {
            out.fill_from(&s.groups[..last]);
            out.set_sorted(true);
            TopP::Nucleus
        }
        None => TopP::Full,
    }
}

/// llama.cpp's softmax sum over `row` (maximum `m`): `expf(l_i - m)` added in id order in
/// `f32`, exactly. The sum only grows, so once it is `s`, a term below half an ulp of `s`
/// leaves it unchanged whatever comes later: each block adds only its values at or above
/// [`vanish_below`] of the sum so far (gathered in id order, their exact exponentials added by
/// the grid replay), and a block whose maximum is below it is skipped. On a real model's row
/// (`s >= 1` from the maximum's token on, most logits 15 to 30 nats below it) that leaves a
/// few thousand exponentials to compute instead of the whole vocabulary.
fn exact_sum(row: Row<'_>, m: f32, d: &RowScan, s: &mut TopPScratch) -> f32 {
    let mut buf = [0f32; BLOCK];
    let mut sum = 0.0f32;
    for (b, &mx) in d.cmax.iter().enumerate() {
        let thr = vanish_below(sum, m);
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if mx == f32::NEG_INFINITY || !(mx >= thr) {
            continue;
        }
        let x = row.block(b, &mut buf);
        s.xs.clear();
        if thr == f32::NEG_INFINITY {
            s.xs.extend(x.iter().map(|&v| v - m));
        } else {
            s.sids.clear();
            s.svals.clear();
            collect_into(x, thr, b * BLOCK, &mut s.sids, &mut s.svals);
            s.xs.extend(s.svals.iter().map(|&v| v - m));
        }
        s.es.clear();
        s.es.resize(s.xs.len(), 0.0);
        expf_exact_slice(&s.xs, &mut s.es);
        sum = seq_block(&s.es, sum, false, false, 0.0);
    }
    sum
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
