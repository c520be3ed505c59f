//! Sorting exactly as llama.cpp's sampler code sorts, including the order of equal logits.
//!
//! llama.cpp is built against libstdc++, whose `std::sort` (introsort) and `std::partial_sort`
//! (heap select + heap sort) are not stable: the order in which equal logits come out is a
//! by-product of the algorithms. Which of two tied tokens is first changes what `dist` picks
//! and which token survives a top-k cut, so this module re-implements libstdc++ 12's algorithms
//! step for step (same comparisons, same moves) instead of using Rust's sorts.
//!
//! `less(a, b)` always means "a goes before b". With a consistent strict weak order the result
//! is identical to libstdc++. With an inconsistent comparator (NaN logits) libstdc++'s unguarded
//! scans may leave the range; here every scan stops at the slice ends instead, so nothing panics
//! and results agree with C++ whenever C++ itself stays inside the array.

use crate::candidates::{Candidates, Scratch, TokenData};
use crate::softmax::trunc_to_i32_x86;

/// Ranges at most this long are left to the final insertion sort (libstdc++'s `_S_threshold`).
const THRESHOLD: usize = 16;

/// Number of buckets in llama.cpp's bucket partial sort.
const NBUCKETS: usize = 128;

// ---------------------------------------------------------------------------------------------
// Heap primitives. Indices are `isize` so that C++'s signed arithmetic on `ptrdiff_t`
// (`(len - 1) / 2` with `len == 0`, etc.) is mirrored exactly, truncating toward zero.
// ---------------------------------------------------------------------------------------------

/// Moves `value` up from `hole` towards `top` while its parent should come after it
/// (libstdc++ `__push_heap`), then stores it.
#[inline]
fn push_heap<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    base: usize,
    mut hole: isize,
    top: isize,
    value: T,
    less: &mut F,
) {
    let mut parent = (hole - 1) / 2;
    while hole > top && less(&v[base + parent as usize], &value) {
        v[base + hole as usize] = v[base + parent as usize];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    v[base + hole as usize] = value;
}

/// Sifts a hole from `hole` down to a leaf, always following the child that goes first (right
/// child unless the left one is strictly before it), then pushes `value` back up
/// (libstdc++ `__adjust_heap`). The heap is `v[base .. base + len]`.
#[inline]
fn adjust_heap<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    base: usize,
    mut hole: isize,
    len: isize,
    value: T,
    less: &mut F,
) {
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(&v[base + child as usize], &v[base + (child - 1) as usize]) {
            child -= 1;
        }
        v[base + hole as usize] = v[base + child as usize];
        hole = child;
    }
    // An even-length heap has one parent with only a left child.
    if len & 1 == 0 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        v[base + hole as usize] = v[base + (child - 1) as usize];
        hole = child - 1;
    }
    push_heap(v, base, hole, top, value, less);
}

/// Heap of `len` elements at `base`: puts its top at `result` and re-inserts the old
/// `v[result]` from the root (libstdc++ `__pop_heap`).
#[inline]
fn pop_heap<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    base: usize,
    len: usize,
    result: usize,
    less: &mut F,
) {
    let value = v[result];
    v[result] = v[base];
    adjust_heap(v, base, 0, len as isize, value, less);
}

/// Builds a heap over `v[base .. base + len]`, last parent first (libstdc++ `__make_heap`).
fn make_heap<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], base: usize, len: usize, less: &mut F) {
    if len < 2 {
        return;
    }
    let len = len as isize;
    let mut parent = (len - 2) / 2;
    loop {
        let value = v[base + parent as usize];
        adjust_heap(v, base, parent, len, value, less);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

/// Sorts the heap `v[base .. base + len]` by popping its top to the back repeatedly
/// (libstdc++ `__sort_heap`).
fn sort_heap<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], base: usize, mut len: usize, less: &mut F) {
    while len > 1 {
        len -= 1;
        pop_heap(v, base, len, base + len, less);
    }
}

/// libstdc++ `__partial_sort` on `v[first..last]` with the sorted prefix ending at `middle`:
/// keep a heap of the best `middle - first`, swap in every later element that beats its top,
/// then heap-sort the prefix.
fn partial_sort_range<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    first: usize,
    middle: usize,
    last: usize,
    less: &mut F,
) {
    let hlen = middle - first;
    make_heap(v, first, hlen, less);
    for i in middle..last {
        if less(&v[i], &v[first]) {
            pop_heap(v, first, hlen, i, less);
        }
    }
    sort_heap(v, first, hlen, less);
}

// ---------------------------------------------------------------------------------------------
// Introsort pieces.
// ---------------------------------------------------------------------------------------------

/// Swaps the median of `v[a]`, `v[b]`, `v[c]` into `v[result]`, using libstdc++'s exact
/// decision tree (`__move_median_to_first`), which decides who wins among ties.
#[inline]
fn move_median_to_first<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    result: usize,
    a: usize,
    b: usize,
    c: usize,
    less: &mut F,
) {
    let m = if less(&v[a], &v[b]) {
        if less(&v[b], &v[c]) {
            b
        } else if less(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if less(&v[a], &v[c]) {
        a
    } else if less(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(result, m);
}

/// Hoare partition of `v[first..last]` around the value at `pivot` (libstdc++
/// `__unguarded_partition`); returns the cut. The scans rely on sentinels that a consistent
/// comparator guarantees; they are additionally bounded by the slice so NaN cannot overrun.
#[inline]
fn unguarded_partition<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    mut first: usize,
    mut last: usize,
    pivot: usize,
    less: &mut F,
) -> usize {
    // The pivot slot is never written here (first > pivot and swaps need first < last),
    // so a copy is equivalent to comparing through the slot.
    let p = v[pivot];
    let end = v.len();
    loop {
        while first < end && less(&v[first], &p) {
            first += 1;
        }
        last -= 1;
        while less(&p, &v[last]) {
            if last == 0 {
                break;
            }
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

/// Median-of-three pivot moved to `v[first]`, then partition of the rest (libstdc++
/// `__unguarded_partition_pivot`).
#[inline]
fn unguarded_partition_pivot<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    first: usize,
    last: usize,
    less: &mut F,
) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(v, first, first + 1, mid, last - 1, less);
    unguarded_partition(v, first + 1, last, first, less)
}

/// The introsort main loop (libstdc++ `__introsort_loop`): partition until ranges are at most
/// 16 long, recursing on the right part and looping on the left; heap-sort a range once the
/// depth budget runs out.
fn introsort_loop<T: Copy, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    first: usize,
    mut last: usize,
    mut depth_limit: u32,
    less: &mut F,
) {
    while last > first && last - first > THRESHOLD {
        if depth_limit == 0 {
            partial_sort_range(v, first, last, last, less);
            return;
        }
        depth_limit -= 1;
        let cut = unguarded_partition_pivot(v, first, last, less);
        introsort_loop(v, cut, last, depth_limit, less);
        last = cut;
    }
}

/// Inserts `v[i]` into the sorted run to its left, relying on an element that stops the scan
/// (libstdc++ `__unguarded_linear_insert`); bounded at index 0 for inconsistent comparators.
#[inline]
fn unguarded_linear_insert<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], mut i: usize, less: &mut F) {
    let val = v[i];
    while i > 0 && less(&val, &v[i - 1]) {
        v[i] = v[i - 1];
        i -= 1;
    }
    v[i] = val;
}

/// Straight insertion sort of `v[first..last]`: an element that beats `v[first]` is moved to the
/// front directly, others are linearly inserted (libstdc++ `__insertion_sort`).
fn insertion_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], first: usize, last: usize, less: &mut F) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if less(&v[i], &v[first]) {
            let val = v[i];
            v.copy_within(first..i, first + 1);
            v[first] = val;
        } else {
            unguarded_linear_insert(v, i, less);
        }
    }
}

/// Final pass of `std::sort` (libstdc++ `__final_insertion_sort`): guarded insertion sort of the
/// first 16 elements, unguarded insertion for the rest.
fn final_insertion_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    let len = v.len();
    if len > THRESHOLD {
        insertion_sort(v, 0, THRESHOLD, less);
        for i in THRESHOLD..len {
            unguarded_linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, 0, len, less);
    }
}

// ---------------------------------------------------------------------------------------------
// Public API.
// ---------------------------------------------------------------------------------------------

/// `std::partial_sort(v, v + middle, v + len, less)` as libstdc++ 12 does it: afterwards
/// `v[..middle]` holds the `middle` first elements in order, the rest in unspecified order.
/// `middle` is clamped to `v.len()` (C++ would be undefined beyond it).
pub fn std_partial_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], middle: usize, mut less: F) {
    let middle = middle.min(v.len());
    let last = v.len();
    partial_sort_range(v, 0, middle, last, &mut less);
}

/// `std::sort(v, v + len, less)` as libstdc++ 12 does it: introsort with depth limit
/// `2 * floor(log2(len))`, then a final insertion sort.
pub fn std_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], mut less: F) {
    let len = v.len();
    if len == 0 {
        return;
    }
    let depth_limit = 2 * len.ilog2();
    introsort_loop(v, 0, len, depth_limit, &mut less);
    final_insertion_sort(v, &mut less);
}

/// Descending-by-logit order used by every llama.cpp sampler sort (ties are "equal").
#[inline]
fn logit_before(a: &TokenData, b: &TokenData) -> bool {
    a.logit > b.logit
}

/// llama.cpp's bucket index for a logit: 128 buckets over [-10, 10), with x86's `int()`
/// so that NaN and `+inf` land in bucket 0 (as upstream does), then clamped to 0..=127.
#[inline]
fn bucket_of(logit: f32) -> usize {
    const SCALE: f32 = NBUCKETS as f32 / (10.0f32 - -10.0f32);
    const INTER: f32 = 10.0f32 * SCALE;
    let ib = trunc_to_i32_x86(SCALE * logit + INTER);
    ib.clamp(0, NBUCKETS as i32 - 1) as usize
}

/// llama.cpp's `llama_token_data_array_partial_sort`: writes into `scratch.tokens` the
/// candidates of every bucket at or above the boundary bucket (the first `n` sorted
/// descending by logit, as llama.cpp's `res` vector) and returns how many were written (>= n).
/// `n` is clamped to `view.len()`. Uses `scratch.tokens` and `scratch.buckets` only.
pub fn bucket_partial_sort(view: &[TokenData], n: usize, scratch: &mut Scratch) -> usize {
    let n = n.min(view.len());
    // buckets[..128] = histogram, buckets[128..] = write cursors.
    let buckets = &mut scratch.buckets;
    if buckets.len() != 2 * NBUCKETS {
        buckets.clear();
        buckets.resize(2 * NBUCKETS, 0);
    }
    let (histo, cursor) = buckets.split_at_mut(NBUCKETS);
    histo.fill(0);
    for t in view {
        histo[bucket_of(t.logit)] += 1;
    }

    // Walk down from the top bucket until at least n candidates are covered.
    let mut nhave = 0usize;
    let mut ib = NBUCKETS - 1;
    loop {
        nhave += histo[ib] as usize;
        if nhave >= n || ib == 0 {
            break;
        }
        ib -= 1;
    }

    // Lay the buckets out from 127 down to ib and scatter stably.
    let mut off = 0u32;
    for j in (ib..NBUCKETS).rev() {
        cursor[j] = off;
        off += histo[j];
    }
    let out = &mut scratch.tokens;
    out.clear();
    out.resize(nhave, TokenData { id: 0, logit: 0.0, p: 0.0 });
    for t in view {
        let j = bucket_of(t.logit);
        if j >= ib {
            out[cursor[j] as usize] = *t;
            cursor[j] += 1;
        }
    }

    // Fully sort every bucket above the boundary, then partially sort the boundary bucket.
    let mut start = 0usize;
    for j in (ib + 1..NBUCKETS).rev() {
        let cnt = histo[j] as usize;
        std_sort(&mut out[start..start + cnt], logit_before);
        start += cnt;
    }
    let cnt = histo[ib] as usize;
    std_partial_sort(&mut out[start..start + cnt], n - start, logit_before);
    nhave
}

/// llama.cpp's `llama_token_data_array_partial_sort_inplace`: keep the best `n`, sorted
/// descending; `n <= 128` partial-sorts the whole view in place, larger `n` goes through the
/// bucket sort and copies its first `n` back. Sets `len = n` and `sorted = true`.
pub fn partial_sort_inplace(c: &mut Candidates, n: usize) {
    let n = n.min(c.len());
    if n <= 128 {
        std_partial_sort(c.as_mut_slice(), n, logit_before);
        c.truncate(n);
    } else {
        let (view, scratch) = c.split_scratch();
        bucket_partial_sort(view, n, scratch);
        c.overwrite_prefix(n);
    }
    c.set_sorted(true);
}

#[cfg(test)]
mod tests {
    use super::*;
}
