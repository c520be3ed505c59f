//! Sorting exactly as llama.cpp's sampler code sorts, including the order of equal logits.
//! (Placeholder signatures; the implementation emulates libstdc++ 12.)

use crate::candidates::{Candidates, Scratch, TokenData};

/// `std::partial_sort(v, v + middle, v + len, less)`.
pub fn std_partial_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], middle: usize, mut less: F) {
    let _ = middle;
    v.sort_by(|a, b| if less(a, b) { std::cmp::Ordering::Less } else if less(b, a) { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Equal });
}

/// `std::sort(v, v + len, less)` (introsort).
pub fn std_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], mut less: F) {
    v.sort_by(|a, b| if less(a, b) { std::cmp::Ordering::Less } else if less(b, a) { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Equal });
}

/// llama.cpp's `llama_token_data_array_partial_sort`: writes into `scratch.tokens` the
/// candidates of the buckets needed for the best `n` (first `n` sorted descending by logit)
/// and returns how many were written (>= n).
pub fn bucket_partial_sort(view: &[TokenData], n: usize, scratch: &mut Scratch) -> usize {
    scratch.tokens.clear();
    scratch.tokens.extend_from_slice(view);
    std_sort(&mut scratch.tokens, |a, b| a.logit > b.logit);
    let _ = n;
    view.len()
}

/// llama.cpp's `llama_token_data_array_partial_sort_inplace`: keep the best `n`, sorted
/// descending; sets `len = n` and `sorted = true`.
pub fn partial_sort_inplace(c: &mut Candidates, n: usize) {
    let n = n.min(c.len());
    c.as_mut_slice().sort_by(|a, b| b.logit.partial_cmp(&a.logit).unwrap_or(std::cmp::Ordering::Equal));
    c.truncate(n);
    c.set_sorted(true);
}
