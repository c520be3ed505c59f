//! Tie order of `partial_sort_inplace` (top-k on an unsorted array) against the real
//! llama.cpp results recorded in the shared vectors file (`derived_reference.tie_order`),
//! plus a check that sorting allocates nothing once warm.

mod common;

use common::alloc_count::{allocs, CountingAlloc};
use common::vectors::{check_tie_case, generated_logits, load, tie_case, tie_input};
use nucleus_sampler::sort::partial_sort_inplace;
use nucleus_sampler::Candidates;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Runs `partial_sort_inplace(k)` on the case's input and compares with the recorded case.
fn check_topk(case_id: &str, k: usize) {
    let v = load();
    let case = tie_case(&v, case_id);
    let mut c = Candidates::new();
    c.fill_f32(&tie_input(&v, case));
    partial_sort_inplace(&mut c, k);
    check_tie_case(case, &c);
}

#[test]
fn tie_topk3() {
    check_topk("tie_topk3", 3);
}

#[test]
fn tie_topk200() {
    check_topk("tie_topk200", 200);
}

#[test]
fn bucket_topk200() {
    check_topk("bucket_topk200", 200);
}

#[test]
fn no_allocation_after_warm_up() {
    let logits = generated_logits(11, 4096);
    let mut c = Candidates::with_capacity(logits.len());
    // Warm-up: grows the scratch buffers once.
    c.fill_f32(&logits);
    partial_sort_inplace(&mut c, logits.len());
    // Positive control: the counter does see allocations on this thread.
    let probe = allocs();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(16)));
    assert!(allocs() > probe, "allocation counter is not counting");
    let before = allocs();
    for k in [1, 40, 128, 129, 200, 1000, 4096] {
        c.fill_f32(&logits);
        partial_sort_inplace(&mut c, k);
        assert_eq!(c.len(), k);
    }
    assert_eq!(allocs(), before, "partial_sort_inplace allocated after warm-up");
}
