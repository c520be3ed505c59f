//! Fuzz target: see `checks/sampler.rs` (shared with the stable regression tests).
#![no_main]

#[path = "../checks/sampler.rs"]
mod sampler;

libfuzzer_sys::fuzz_target!(|data: &[u8]| sampler::check(data));
