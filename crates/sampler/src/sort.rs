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
pub(crate) const NBUCKETS: usize = 128;

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
fn pop_heap<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], base: usize, len: usize, result: usize, less: &mut F) {
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
pub(crate) fn logit_before(a: &TokenData, b: &TokenData) -> bool {
    a.logit > b.logit
}

/// Puts the first `need` positions of `g` (one sort bucket, candidates in id order) as
/// llama.cpp's bucket sort does — `std::sort`, or `std::partial_sort` to at least `need` —
/// when those positions and the next one hold distinct values: every algorithm that sorts by
/// logit then gives the one descending order there, which a selection and a fast sort find
/// (a real model's top bucket can hold thousands of tokens, of which a few are needed). False
/// when equal values fall there: `g` is then in no particular order and the caller must run
/// the libstdc++ emulation on the bucket as it was (a copy it kept). Positions from `need` on
/// are left in no particular order either way.
pub(crate) fn sorted_prefix_if_distinct(g: &mut [TokenData], need: usize) -> bool {
    let desc = |a: &TokenData, b: &TokenData| b.logit.total_cmp(&a.logit);
    // Positions 0..check are compared pairwise: the prefix and the first value after it.
    let check = if need < g.len() {
        g.select_nth_unstable_by(need, desc);
        g[..need + 1].sort_unstable_by(desc);
        need + 1
    } else {
        g.sort_unstable_by(desc);
        g.len()
    };
    // `!=` also treats -0.0 and +0.0 as equal, as llama.cpp's comparison does.
    g[..check].windows(2).all(|w| w[0].logit != w[1].logit)
}

/// llama.cpp's bucket index for a logit: 128 buckets over [-10, 10), with x86's `int()`
/// so that NaN and `+inf` land in bucket 0 (as upstream does), then clamped to 0..=127.
#[inline]
pub(crate) fn bucket_of(logit: f32) -> usize {
    const SCALE: f32 = NBUCKETS as f32 / (10.0f32 - -10.0f32);
    const INTER: f32 = 10.0f32 * SCALE;
    let ib = trunc_to_i32_x86(SCALE * logit + INTER);
    ib.clamp(0, NBUCKETS as i32 - 1) as usize
}

/// Whether [`bucket_of`] is monotone over every value up to `max`. Past about 3.4e8,
/// `6.4 v + 64` leaves the int range and x86's conversion gives `INT_MIN`, so such a value
/// lands in bucket 0, below every ordinary one (found by fuzzing). The fast paths that read
/// the bucket order off the values run only when this holds.
#[inline]
pub(crate) fn bucket_order_follows_values(max: f32) -> bool {
    max <= 3.0e8
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

// ---------------------------------------------------------------------------------------------
// Streaming partial sort: `std::partial_sort` over a sequence that is never materialised.
// ---------------------------------------------------------------------------------------------

/// `std::partial_sort`'s first phase on the first `heap.len()` elements: build the heap.
pub(crate) fn heap_select_begin(heap: &mut [TokenData]) {
    let len = heap.len();
    make_heap(heap, 0, len, &mut logit_before);
}

/// `std::partial_sort`'s second phase for one later element that beats the heap top
/// (`x.logit > heap[0].logit`): the top leaves and `x` is sifted in from the root.
#[inline]
pub(crate) fn heap_select_push(heap: &mut [TokenData], x: TokenData) {
    let len = heap.len() as isize;
    adjust_heap(heap, 0, 0, len, x, &mut logit_before);
}

/// `std::partial_sort`'s last phase: heap-sort the kept elements, best first.
pub(crate) fn heap_select_finish(heap: &mut [TokenData]) {
    let len = heap.len();
    sort_heap(heap, 0, len, &mut logit_before);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Id orders produced by g++ 12.2 / libstdc++ 12 (-O2) for the inputs of `lcg_keys`, with the
    // comparator `a.logit > b.logit`. Recorded once by hand from a throwaway driver.
    #[rustfmt::skip]
    mod fixtures {
    pub(super) const SORT_40: [i32; 40] = [35, 3, 4, 5, 34, 7, 22, 17, 23, 11, 26, 15, 24, 28, 21, 25, 1, 32, 33, 36, 19, 20, 0, 9, 6, 18, 16, 14, 38, 27, 10, 37, 31, 2, 39, 8, 30, 29, 12, 13];
    pub(super) const PSORT_40_10: [i32; 40] = [3, 4, 17, 7, 5, 22, 23, 24, 15, 11, 8, 2, 12, 13, 14, 10, 16, 6, 18, 19, 20, 21, 9, 0, 1, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39];
    pub(super) const SORT_300: [i32; 300] = [96, 163, 148, 141, 133, 128, 122, 119, 114, 104, 102, 97, 170, 94, 84, 82, 78, 76, 74, 73, 68, 62, 45, 245, 299, 293, 290, 287, 285, 279, 276, 275, 269, 256, 1, 239, 222, 211, 200, 198, 196, 192, 191, 190, 180, 2, 34, 5, 42, 31, 30, 13, 11, 29, 176, 22, 164, 162, 155, 149, 144, 143, 26, 130, 203, 112, 111, 105, 103, 32, 95, 35, 260, 0, 3, 289, 282, 280, 277, 267, 266, 264, 261, 178, 253, 248, 246, 241, 219, 215, 213, 172, 194, 181, 55, 81, 51, 70, 43, 87, 88, 72, 146, 158, 262, 271, 93, 16, 273, 274, 57, 80, 21, 207, 136, 284, 134, 175, 19, 161, 259, 59, 75, 165, 265, 167, 168, 169, 185, 184, 177, 41, 183, 174, 225, 214, 120, 132, 217, 243, 113, 110, 291, 60, 106, 90, 294, 295, 228, 98, 234, 232, 127, 250, 28, 129, 124, 125, 4, 126, 205, 226, 69, 237, 204, 15, 233, 209, 231, 208, 58, 202, 240, 223, 63, 199, 65, 20, 18, 193, 255, 17, 182, 118, 117, 288, 121, 116, 123, 115, 131, 138, 139, 86, 52, 108, 107, 147, 151, 44, 171, 40, 39, 160, 159, 156, 77, 270, 99, 296, 48, 49, 242, 298, 46, 236, 292, 197, 61, 249, 251, 252, 50, 283, 281, 278, 254, 7, 272, 9, 54, 10, 257, 56, 166, 195, 27, 188, 187, 186, 71, 179, 37, 173, 92, 135, 230, 154, 153, 152, 150, 24, 145, 142, 89, 91, 224, 64, 227, 101, 229, 85, 67, 212, 83, 14, 36, 206, 157, 6, 25, 140, 297, 137, 33, 100, 47, 109, 286, 210, 235, 238, 12, 221, 220, 244, 218, 216, 247, 66, 79, 201, 189, 258, 263, 23, 268, 38, 8, 53];
    pub(super) const PSORT_300_50: [i32; 300] = [1, 119, 133, 34, 141, 122, 42, 196, 78, 148, 74, 68, 128, 239, 269, 198, 114, 96, 222, 62, 102, 5, 180, 13, 82, 31, 2, 275, 94, 276, 245, 256, 73, 279, 84, 200, 76, 211, 191, 192, 45, 285, 11, 163, 170, 287, 190, 104, 97, 30, 6, 25, 12, 53, 47, 23, 38, 8, 33, 14, 27, 61, 54, 49, 64, 24, 66, 67, 48, 50, 46, 71, 10, 9, 37, 36, 56, 7, 58, 79, 52, 63, 65, 83, 77, 85, 86, 44, 20, 89, 69, 91, 92, 40, 39, 18, 17, 15, 98, 99, 100, 101, 28, 59, 60, 80, 106, 107, 108, 109, 110, 4, 21, 113, 57, 115, 116, 117, 118, 90, 120, 121, 41, 123, 124, 125, 126, 127, 19, 129, 75, 131, 132, 93, 134, 135, 136, 137, 138, 139, 140, 16, 142, 143, 144, 145, 146, 147, 29, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 26, 164, 165, 166, 167, 168, 169, 0, 171, 172, 173, 174, 175, 176, 177, 178, 179, 103, 181, 182, 183, 184, 185, 186, 187, 188, 189, 51, 81, 22, 193, 194, 195, 70, 197, 111, 199, 43, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 105, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 88, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 87, 240, 241, 242, 243, 244, 112, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255, 3, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 72, 270, 271, 272, 273, 274, 95, 130, 277, 278, 35, 280, 281, 282, 283, 284, 55, 286, 32, 288, 289, 290, 291, 292, 293, 294, 295, 296, 297, 298, 299];
    pub(super) const SORT_300_EQUAL: [i32; 300] = [196, 205, 204, 203, 202, 201, 200, 199, 198, 197, 206, 195, 194, 193, 192, 191, 190, 189, 188, 215, 224, 223, 222, 221, 220, 219, 218, 217, 216, 187, 214, 213, 212, 211, 210, 209, 208, 207, 159, 168, 167, 166, 165, 164, 163, 162, 161, 160, 169, 158, 157, 156, 155, 154, 153, 152, 151, 178, 186, 185, 184, 183, 182, 181, 180, 179, 225, 177, 176, 175, 174, 173, 172, 171, 170, 271, 280, 279, 278, 277, 276, 275, 274, 273, 272, 281, 270, 269, 268, 267, 266, 265, 264, 263, 290, 299, 298, 297, 296, 295, 294, 293, 292, 291, 262, 289, 288, 287, 286, 285, 284, 283, 282, 234, 243, 242, 241, 240, 239, 238, 237, 236, 235, 244, 233, 232, 231, 230, 229, 228, 227, 226, 253, 261, 260, 259, 258, 257, 256, 255, 254, 150, 252, 251, 250, 249, 248, 247, 246, 245, 46, 55, 54, 53, 52, 51, 50, 49, 48, 47, 56, 45, 44, 43, 42, 41, 40, 39, 38, 65, 74, 73, 72, 71, 70, 69, 68, 67, 66, 37, 64, 63, 62, 61, 60, 59, 58, 57, 9, 18, 17, 16, 15, 14, 13, 12, 11, 10, 19, 8, 7, 6, 5, 4, 3, 2, 1, 28, 36, 35, 34, 33, 32, 31, 30, 29, 75, 27, 26, 25, 24, 23, 22, 21, 20, 121, 130, 129, 128, 127, 126, 125, 124, 123, 122, 131, 120, 119, 118, 117, 116, 115, 114, 113, 140, 149, 148, 147, 146, 145, 144, 143, 142, 141, 112, 139, 138, 137, 136, 135, 134, 133, 132, 84, 93, 92, 91, 90, 89, 88, 87, 86, 85, 94, 83, 82, 81, 80, 79, 78, 77, 76, 103, 111, 110, 109, 108, 107, 106, 105, 104, 0, 102, 101, 100, 99, 98, 97, 96, 95];
    }

    /// `n` tokens with id = index and logit = small integer keys from a 32-bit LCG (many ties).
    fn lcg_keys(n: usize, seed: u32, distinct: u32) -> Vec<TokenData> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                TokenData { id: i as i32, logit: ((x >> 16) % distinct) as f32, p: 0.0 }
            })
            .collect()
    }

    fn ids(v: &[TokenData]) -> Vec<i32> {
        v.iter().map(|t| t.id).collect()
    }

    fn tokens(logits: &[f32]) -> Vec<TokenData> {
        logits.iter().enumerate().map(|(i, &l)| TokenData { id: i as i32, logit: l, p: 0.0 }).collect()
    }

    /// Logits sorted descending with a total order (what any correct sort must yield, ties aside).
    fn desc_logits(v: &[TokenData]) -> Vec<f32> {
        let mut l: Vec<f32> = v.iter().map(|t| t.logit).collect();
        l.sort_by(|a, b| b.partial_cmp(a).unwrap());
        l
    }

    #[test]
    fn std_sort_matches_libstdcxx_40() {
        let mut v = lcg_keys(40, 1, 4);
        std_sort(&mut v, logit_before);
        assert_eq!(ids(&v), fixtures::SORT_40);
    }

    #[test]
    fn std_partial_sort_matches_libstdcxx_40() {
        let mut v = lcg_keys(40, 1, 4);
        std_partial_sort(&mut v, 10, logit_before);
        assert_eq!(ids(&v), fixtures::PSORT_40_10);
    }

    #[test]
    fn std_sort_matches_libstdcxx_300() {
        let mut v = lcg_keys(300, 2, 6);
        std_sort(&mut v, logit_before);
        assert_eq!(ids(&v), fixtures::SORT_300);
    }

    #[test]
    fn std_partial_sort_matches_libstdcxx_300() {
        let mut v = lcg_keys(300, 2, 6);
        std_partial_sort(&mut v, 50, logit_before);
        assert_eq!(ids(&v), fixtures::PSORT_300_50);
    }

    #[test]
    fn std_sort_matches_libstdcxx_all_equal() {
        let mut v = lcg_keys(300, 3, 1);
        std_sort(&mut v, logit_before);
        assert_eq!(ids(&v), fixtures::SORT_300_EQUAL);
    }

    #[test]
    fn short_ranges_are_stable() {
        // Ranges of at most 16 only see the insertion sort, which keeps ties in input order.
        let mut v = lcg_keys(16, 9, 3);
        let mut want = v.clone();
        want.sort_by(|a, b| b.logit.partial_cmp(&a.logit).unwrap());
        std_sort(&mut v, logit_before);
        assert_eq!(ids(&v), ids(&want));
    }

    #[test]
    fn partial_sort_zero_middle_swaps_like_libstdcxx() {
        // With an empty heap, every element beating v[0] is swapped with it (libstdc++ quirk).
        let mut v = tokens(&[1.0, 3.0, 2.0, 5.0]);
        std_partial_sort(&mut v, 0, logit_before);
        assert_eq!(ids(&v), [3, 0, 2, 1]);
    }

    #[test]
    fn inplace_small_keeps_first_equal_ids() {
        let mut c = Candidates::from_token_data(tokens(&[0.0; 10]));
        partial_sort_inplace(&mut c, 3);
        assert_eq!(ids(c.as_slice()), [0, 1, 2]);
        assert!(c.is_sorted());
    }

    #[test]
    fn inplace_respects_view_offset() {
        let mut c = Candidates::from_token_data(tokens(&[9.0, 1.0, 4.0, 2.0, 8.0]));
        c.advance(1);
        partial_sort_inplace(&mut c, 2);
        assert_eq!(ids(c.as_slice()), [4, 2]);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn inplace_clamps_n_to_len() {
        let mut c = Candidates::from_token_data(tokens(&[1.0, 3.0, 2.0]));
        partial_sort_inplace(&mut c, 500);
        assert_eq!(ids(c.as_slice()), [1, 2, 0]);
    }

    #[test]
    fn bucket_index_matches_upstream() {
        assert_eq!(bucket_of(-10.0), 0);
        assert_eq!(bucket_of(-100.0), 0);
        assert_eq!(bucket_of(0.0), 64);
        assert_eq!(bucket_of(9.99), 127);
        assert_eq!(bucket_of(100.0), 127);
        // x86 `int()` of NaN / +inf is i32::MIN, which clamps to bucket 0.
        assert_eq!(bucket_of(f32::NAN), 0);
        assert_eq!(bucket_of(f32::INFINITY), 0);
        assert_eq!(bucket_of(f32::NEG_INFINITY), 0);
    }

    #[test]
    fn bucket_path_drops_positive_infinity() {
        // Upstream quirk: +inf lands in bucket 0, so the bucket path (n > 128) loses it when
        // higher buckets already hold n candidates. Checked against the C++ code.
        let mut l: Vec<f32> = (0..300).map(|i| (i % 50) as f32 / 10.0).collect();
        l[0] = f32::INFINITY;
        let mut c = Candidates::from_token_data(tokens(&l));
        partial_sort_inplace(&mut c, 200);
        assert_eq!(c.len(), 200);
        assert!(c.as_slice().iter().all(|t| t.id != 0));
        assert_eq!(ids(&c.as_slice()[..8]), [49, 99, 149, 199, 249, 299, 48, 98]);
    }

    #[test]
    fn bucket_partial_sort_output_layout() {
        let v = tokens(&(0..1000).map(|i| ((i * 7919) % 1000) as f32 / 50.0 - 10.0).collect::<Vec<_>>());
        let mut s = Scratch::default();
        let k = bucket_partial_sort(&v, 300, &mut s);
        assert!(k >= 300);
        assert_eq!(s.tokens.len(), k);
        let want = desc_logits(&v);
        let got: Vec<f32> = s.tokens[..300].iter().map(|t| t.logit).collect();
        assert_eq!(got, want[..300]);
        // Everything written comes from buckets at or above the boundary one.
        let lowest = bucket_of(s.tokens[299].logit);
        assert!(s.tokens.iter().all(|t| bucket_of(t.logit) >= lowest));
        assert_eq!(v.iter().filter(|t| bucket_of(t.logit) >= lowest).count(), k);
    }

    #[test]
    fn no_panic_on_nan_and_inf() {
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, 1.0, -1.0, 20.0, -20.0];
        for n in [0usize, 1, 2, 17, 40, 129, 300, 2000] {
            for pat in 0..6u32 {
                let l: Vec<f32> = (0..n)
                    .map(|i| {
                        let j = (i as u32).wrapping_mul(2_654_435_761).rotate_left(pat) as usize;
                        if pat == 0 {
                            f32::NAN
                        } else {
                            specials[j % specials.len()]
                        }
                    })
                    .collect();
                let mut v = tokens(&l);
                std_sort(&mut v, logit_before);
                let mut v = tokens(&l);
                std_partial_sort(&mut v, n / 3, logit_before);
                let mut s = Scratch::default();
                let k = bucket_partial_sort(&tokens(&l), n / 2, &mut s);
                assert!(k >= n / 2 && k <= n);
                for m in [0, 1, n / 2, n] {
                    let mut c = Candidates::from_token_data(tokens(&l));
                    partial_sort_inplace(&mut c, m);
                    assert_eq!(c.len(), m.min(n));
                    assert!(c.is_sorted());
                }
            }
        }
    }

    #[test]
    fn reuses_scratch_without_growing() {
        let v = lcg_keys(5000, 5, 1000);
        let mut c = Candidates::from_token_data(v.clone());
        partial_sort_inplace(&mut c, 1000);
        let cap = c.scratch_mut().tokens.capacity();
        let ptr = c.scratch_mut().tokens.as_ptr();
        let bptr = c.scratch_mut().buckets.as_ptr();
        for k in [129, 500, 2000, 1000] {
            c.fill_from(&v);
            partial_sort_inplace(&mut c, k);
        }
        assert_eq!(c.scratch_mut().tokens.capacity(), cap);
        assert_eq!(c.scratch_mut().tokens.as_ptr(), ptr);
        assert_eq!(c.scratch_mut().buckets.as_ptr(), bptr);
    }

    fn logit_strategy() -> impl Strategy<Value = f32> {
        prop_oneof![(-30i32..30).prop_map(|x| x as f32 * 0.5), -12.0f32..12.0, Just(f32::NEG_INFINITY),]
    }

    proptest! {
        #[test]
        fn inplace_gives_descending_prefix(l in prop::collection::vec(logit_strategy(), 0..700), frac in 0.0f64..=1.0) {
            let n = ((l.len() as f64) * frac) as usize;
            let v = tokens(&l);
            let mut c = Candidates::from_token_data(v.clone());
            partial_sort_inplace(&mut c, n);
            prop_assert_eq!(c.len(), n);
            let got: Vec<f32> = c.as_slice().iter().map(|t| t.logit).collect();
            prop_assert_eq!(&got[..], &desc_logits(&v)[..n]);
            // Ids are a subset of the input without repeats, each with its own logit.
            let mut seen = vec![false; l.len()];
            for t in c.as_slice() {
                prop_assert!(!seen[t.id as usize]);
                seen[t.id as usize] = true;
                prop_assert_eq!(t.logit.to_bits(), l[t.id as usize].to_bits());
            }
        }

        #[test]
        fn sorts_agree_with_rust_on_distinct_keys(mut keys in prop::collection::hash_set(any::<i32>(), 0..600).prop_map(|s| s.into_iter().collect::<Vec<_>>()), frac in 0.0f64..=1.0) {
            let mut want = keys.clone();
            want.sort();
            let mut a = keys.clone();
            std_sort(&mut a, |x, y| x < y);
            prop_assert_eq!(&a, &want);
            let m = ((keys.len() as f64) * frac) as usize;
            std_partial_sort(&mut keys, m, |x, y| x < y);
            prop_assert_eq!(&keys[..m], &want[..m]);
            let mut rest = keys[m..].to_vec();
            rest.sort();
            prop_assert_eq!(&rest[..], &want[m..]);
        }

        #[test]
        fn std_sort_sorts_with_ties(l in prop::collection::vec(logit_strategy(), 0..700)) {
            let mut v = tokens(&l);
            std_sort(&mut v, logit_before);
            let got: Vec<f32> = v.iter().map(|t| t.logit).collect();
            prop_assert_eq!(got, desc_logits(&tokens(&l)));
        }
    }
}
