//! top-p over a wide nucleus (a flat step, where the kept prefix runs to tens of thousands of
//! tokens): the same cut, the same draw and the same token as llama.cpp's full path, which
//! sorts every bucket of the vocabulary with libstdc++'s introsort.
//!
//! What the full path computes depends on the order of the sorted candidates only through the
//! sequence of their *values*, and that sequence is the same for every order that sorts by
//! logit: equal logits have equal `p` bits, so the running sums, the cut, min-p's cut, the
//! temperature and dist's draw (its `f64` sums and the selected index) are the same whichever
//! way ties are laid out. Only the id at the selected index can differ, and only when its
//! logit is tied with a neighbour's. So here:
//!
//! 1. one pass computes llama.cpp's exact `e_i = expf(l_i - max)` (the vector replica), its
//!    sequential `f32` sum `s` in id order, and a histogram (count and mass) of llama.cpp's 128
//!    sort buckets;
//! 2. only the logits of the top buckets that hold the nucleus (with a margin) are gathered
//!    and sorted, by a radix sort on their bits (the ids are not carried along);
//! 3. the cut is found with llama.cpp's `f32` arithmetic on that order, and the rest of the
//!    chain (min-p, temperature, dist) runs on the kept prefix as usual;
//! 4. the selected index's id is the one token with that logit; when the logit is tied, the
//!    one bucket that holds it is sorted again with llama.cpp's own algorithm (`std::sort`, or
//!    `std::partial_sort` for the last bucket) to read the id llama.cpp has at that index.
//!
//! The caller leaves the step to the full path (before anything is consumed) when the nucleus
//! lies within llama.cpp's first 256 sorted candidates (another order then) or past the
//! gathered buckets.

use crate::candidates::{Candidates, TokenData};
use crate::fast::expf::expf_exact_slice;
use crate::fast::row::{Row, TierCounts, BLOCK};
use crate::fast::value_sort::{desc_key, key_value, radix_sort};
use crate::sort::{bucket_of, logit_before, std_partial_sort, std_sort, NBUCKETS};

/// The nucleus must reach past this many candidates (llama.cpp's first partial sort).
const FIRST: usize = 256;

/// Reusable buffers.
#[derive(Clone, Debug, Default)]
pub(crate) struct WideScratch {
    /// llama.cpp's sort bucket of every token.
    buckets: Vec<u8>,
    /// The gathered buckets' [`desc_key`]s, then radix-sorted.
    keys: Vec<u32>,
    tmp: Vec<u32>,
    /// Radix histograms.
    radix: Vec<u32>,
    /// `logit - max` and `expf` of it, in sorted order.
    xs: Vec<f32>,
    es: Vec<f32>,
    /// The kept prefix, as the full path's top-p leaves it (ties aside).
    kept: Vec<TokenData>,
    /// One bucket, for the tie replay.
    group: Vec<TokenData>,
}

/// How often the wide nucleus was built / left to the full path, process-wide.
static TIERS: TierCounts<2> = TierCounts::new();

/// `[built, full path]` so far in this process.
pub(crate) fn tier_counts() -> [u64; 2] {
    TIERS.get()
}

/// What [`id_at`] needs to know about the full path's sort.
pub(crate) struct Wide {
    /// The bucket the full path sorts with `std::partial_sort` (the lowest non-empty one).
    low_bucket: usize,
    /// Tokens per bucket.
    counts: [u32; NBUCKETS],
}

/// llama.cpp's top-p (`p < 1`, `min_keep`) over `row` (maximum `m`, finite, no NaN or `+inf`),
/// when its nucleus is wider than [`FIRST`]: leaves the kept prefix in `out` (sorted, `p` as
/// top-p's softmax leaves it; ties in id order). `None` when the full path must run.
pub(crate) fn wide_nucleus(
    row: Row<'_>,
    m: f32,
    p: f32,
    min_keep: usize,
    s: &mut WideScratch,
    out: &mut Candidates,
) -> Option<Wide> {
    let r = build(row, m, p, min_keep, s, out);
    TIERS.bump(r.is_none() as usize);
    r
}

fn build(row: Row<'_>, m: f32, p: f32, min_keep: usize, s: &mut WideScratch, out: &mut Candidates) -> Option<Wide> {
    let n = row.len();
    // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(p >= 0.0) || min_keep > n {
        return None;
    }
    // 1. Exact exponentials, llama.cpp's sum and the bucket histogram.
    let mut counts = [0u32; NBUCKETS];
    let mut mass = [0f64; NBUCKETS];
    s.buckets.clear();
    s.buckets.resize(n, 0);
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
        let bks = &mut s.buckets[b * BLOCK..b * BLOCK + len];
        for ((bk, &v), &e) in bks.iter_mut().zip(x).zip(&es[..len]) {
            sum += e;
            let j = bucket_of(v);
            *bk = j as u8;
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
    s.keys.clear();
    for (b, chunk) in s.buckets.chunks(BLOCK).enumerate() {
        let x = row.block(b, &mut buf);
        for (&bk, &v) in chunk.iter().zip(x) {
            if bk as usize >= ib {
                s.keys.push(desc_key(v));
            }
        }
    }
    radix_sort(&mut s.keys, &mut s.tmp, &mut s.radix);
    // 3. The cut, with llama.cpp's arithmetic: p_i = RN(e_i / s), summed in f32.
    let g = s.keys.len();
    s.xs.clear();
    s.xs.extend(s.keys.iter().map(|&k| key_value(k) - m));
    s.es.clear();
    s.es.resize(g, 0.0);
    expf_exact_slice(&s.xs, &mut s.es);
    let mut cum = 0.0f32;
    let mut last = None;
    for (i, &e) in s.es.iter().enumerate() {
        cum += e / sum;
        if cum >= p && i + 1 >= min_keep {
            last = Some(i + 1);
            break;
        }
    }
    let last = last?;
    if last <= FIRST {
        return None;
    }
    // The tail of the chain never reads ids: they are filled in for the selected index only
    // (`id_at`).
    s.kept.clear();
    s.kept.extend(s.keys[..last].iter().zip(&s.es).map(|(&k, &e)| TokenData {
        id: -1,
        logit: key_value(k),
        p: e / sum,
    }));
    out.fill_from(&s.kept);
    out.set_sorted(true);
    Some(Wide { low_bucket, counts })
}

/// The id llama.cpp's full path has at sorted index `i` (`i` below the sorted count): the one
/// token with that logit, or, when the logit is tied, the id llama.cpp's sort of the bucket
/// holding it puts there (replayed with its own algorithm).
pub(crate) fn id_at(row: Row<'_>, w: &Wide, i: usize, s: &mut WideScratch) -> i32 {
    let v = key_value(s.keys[i]);
    let mut buf = [0f32; BLOCK];
    let (mut found, mut count) = (0usize, 0usize);
    for b in 0..row.len().div_ceil(BLOCK) {
        let x = row.block(b, &mut buf);
        for (k, &l) in x.iter().enumerate() {
            if l == v {
                found = b * BLOCK + k;
                count += 1;
            }
        }
    }
    if count == 1 {
        return found as i32;
    }
    // The bucket in id order (the full path's stable scatter), sorted as the full path does.
    let bk = bucket_of(v);
    s.group.clear();
    for (b, chunk) in s.buckets.chunks(BLOCK).enumerate() {
        let x = row.block(b, &mut buf);
        for (k, (&j, &l)) in chunk.iter().zip(x).enumerate() {
            if j as usize == bk {
                s.group.push(TokenData { id: (b * BLOCK + k) as i32, logit: l, p: 0.0 });
            }
        }
    }
    if bk == w.low_bucket {
        let len = s.group.len();
        std_partial_sort(&mut s.group, len, logit_before);
    } else {
        std_sort(&mut s.group, logit_before);
    }
    let start: usize = w.counts[bk + 1..].iter().map(|&c| c as usize).sum();
    s.group[i - start].id
}
