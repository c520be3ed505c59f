//! Tie order of top-k against the real llama.cpp results recorded in the shared vectors file
//! (`derived_reference.tie_order`), plus a check that sorting allocates nothing once warm.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use nucleus_sampler::sort::partial_sort_inplace;
use nucleus_sampler::Candidates;
use serde_json::Value;

const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/vectors/llama-test-sampling.json"
);

/// Counts allocations made by the current thread, so parallel tests do not disturb each other.
struct CountingAlloc;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocs() -> usize {
    ALLOCS.with(|a| a.get())
}

/// The vectors file's input generator: a 32-bit LCG, logits in [-10, 10) with 0.001 steps.
fn generator(seed: u32, n: usize) -> Vec<f32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((x >> 8) % 20_000) as f32 / 1000.0f32 - 10.0f32
        })
        .collect()
}

fn tie_case(id: &str) -> Value {
    let text = std::fs::read_to_string(VECTORS).expect("read vectors file");
    let json: Value = serde_json::from_str(&text).expect("parse vectors file");
    json["derived_reference"]["tie_order"]
        .as_array()
        .expect("tie_order list")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("tie_order case {id} missing"))
        .clone()
}

/// Runs top-k (`partial_sort_inplace` on an unsorted array) and compares with the recorded case.
fn check_topk(case_id: &str, logits: &[f32], k: usize) {
    let case = tie_case(case_id);
    let mut c = Candidates::new();
    c.fill_f32(logits);
    partial_sort_inplace(&mut c, k);

    assert_eq!(
        c.len() as u64,
        case["out_size"].as_u64().unwrap(),
        "{case_id}: size"
    );
    assert_eq!(
        c.is_sorted(),
        case["out_sorted"].as_bool().unwrap(),
        "{case_id}: sorted"
    );
    let want_ids: Vec<i32> = case["out_ids_head"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap() as i32)
        .collect();
    let want_logits: Vec<f32> = case["out_logits_head"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    let head = &c.as_slice()[..want_ids.len()];
    let got_ids: Vec<i32> = head.iter().map(|t| t.id).collect();
    let got_logits: Vec<f32> = head.iter().map(|t| t.logit).collect();
    assert_eq!(got_ids, want_ids, "{case_id}: ids");
    assert_eq!(got_logits, want_logits, "{case_id}: logits");
}

#[test]
fn tie_topk3() {
    check_topk("tie_topk3", &[0.0; 10], 3);
}

#[test]
fn tie_topk200() {
    check_topk("tie_topk200", &[0.0; 300], 200);
}

#[test]
fn bucket_topk200() {
    check_topk("bucket_topk200", &generator(11, 4096), 200);
}

#[test]
fn no_allocation_after_warm_up() {
    let logits = generator(11, 4096);
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
    assert_eq!(
        allocs(),
        before,
        "partial_sort_inplace allocated after warm-up"
    );
}
