//! The rising-threshold buffer top-k and top-p share: `(id, value)` pairs gathered above a
//! threshold, cut back to the `k + 1` largest values whenever the buffer grows too long, so
//! the threshold rises as the scan goes.

/// Cuts the buffer (more than `k + 1` values, no NaN) to the values at or above its `k + 1`-th
/// largest, which it returns.
pub(crate) fn keep_top(k: usize, ids: &mut Vec<i32>, vals: &mut Vec<f32>, sel: &mut Vec<f32>) -> f32 {
    sel.clear();
    sel.extend_from_slice(vals);
    let (_, &mut thr, _) = sel.select_nth_unstable_by(k, |a, b| b.total_cmp(a));
    retain_at_least(thr, ids, vals);
    thr
}

/// Keeps the pairs whose value is at or above `thr`, in their order.
pub(crate) fn retain_at_least(thr: f32, ids: &mut Vec<i32>, vals: &mut Vec<f32>) {
    let mut w = 0;
    for r in 0..vals.len() {
        if vals[r] >= thr {
            vals[w] = vals[r];
            ids[w] = ids[r];
            w += 1;
        }
    }
    vals.truncate(w);
    ids.truncate(w);
}
