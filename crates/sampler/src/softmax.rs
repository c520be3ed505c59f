//! The arithmetic helpers llama.cpp's samplers share: softmax, temperature scaling and the
//! top-k cut, with llama.cpp's exact operation order (f32, left-to-right sums).

use crate::candidates::Candidates;
use crate::sort::partial_sort_inplace;

/// Computes `p` for every candidate as the softmax of the logits, summing left to right in
/// `f32`. With `want_sort`, sorts the whole view first (and marks it sorted).
pub fn softmax(c: &mut Candidates, want_sort: bool) {
    debug_assert!(!c.is_empty());
    if c.is_empty() {
        return;
    }
    if want_sort && !c.is_sorted() {
        let n = c.len();
        partial_sort_inplace(c, n);
    }
    let sorted = c.is_sorted();
    let data = c.as_mut_slice();
    let m = if sorted {
        data[0].logit
    } else {
        data.iter().fold(data[0].logit, |m, d| if d.logit > m { d.logit } else { m })
    };
    let mut s = 0.0f32;
    for d in data.iter_mut() {
        d.p = (d.logit - m).exp();
        s += d.p;
    }
    for d in data.iter_mut() {
        d.p /= s;
    }
}

/// Plain temperature: divide every logit by `t`; with `t <= 0` keep only the first maximum
/// and set every other logit to `-inf`. Probabilities are left untouched.
pub fn temp_scale(c: &mut Candidates, t: f32) {
    if c.is_empty() {
        return;
    }
    let data = c.as_mut_slice();
    if t <= 0.0 {
        let mut keep = 0usize;
        let mut best = data[0].logit;
        for i in 1..data.len() {
            if data[i].logit > best {
                data[keep].logit = f32::NEG_INFINITY;
                keep = i;
                best = data[i].logit;
            } else {
                data[i].logit = f32::NEG_INFINITY;
            }
        }
        return;
    }
    for d in data.iter_mut() {
        d.logit /= t;
    }
}

/// Keeps the `k` best candidates (sorting them if the view is unsorted); `k <= 0` is a no-op.
/// Probabilities are not recomputed.
pub fn top_k_cut(c: &mut Candidates, k: i32) {
    if k <= 0 {
        return;
    }
    let k = (k as usize).min(c.len());
    if !c.is_sorted() {
        partial_sort_inplace(c, k);
    }
    c.truncate(k);
}

/// `int(x)` as x86-64 computes it (`cvttss2si`): NaN and out-of-range values give `i32::MIN`
/// where Rust's `as` would saturate.
#[inline]
pub fn trunc_to_i32_x86(x: f32) -> i32 {
    if x.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&x) {
        i32::MIN
    } else {
        x as i32
    }
}
