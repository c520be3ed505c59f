//! Typical, temp-ext, XTC, top-n-sigma, mirostat v1/v2 and adaptive-p beyond what the
//! reference vectors check (their upstream cases and recorded chains, with reset and clone,
//! run in `llama_vectors.rs`).

mod common;

use common::vectors::{input, load, run_chain};
use nucleus_sampler::samplers::adaptive_p::AdaptiveP;
use nucleus_sampler::samplers::min_p::MinP;
use nucleus_sampler::Sampler;

/// Adaptive-p's clone keeps the EMA but restarts its random stream, so it matches a fresh
/// sampler carrying the same EMA history rather than the original.
#[test]
fn adaptive_p_clone_restarts_stream() {
    let logits = input(&load(), "logits_256");
    let mk =
        || -> Vec<Box<dyn Sampler>> { vec![Box::new(MinP::new(0.05, 1)), Box::new(AdaptiveP::new(-1.0, 0.9, 42))] };
    let mut a = mk();
    run_chain(&mut a, &logits, 5);
    let mut cl: Vec<Box<dyn Sampler>> = a.iter().map(|s| s.clone_box()).collect();
    let mut fresh = mk();
    // With a negative target the EMA plays no part: the clone must replay the fresh stream.
    assert_eq!(run_chain(&mut cl, &logits, 10).0, run_chain(&mut fresh, &logits, 10).0);
}
