//! Fuzz target: see `checks/grammar_check.rs` (shared with the stable regression tests).
#![no_main]

#[path = "../checks/common.rs"]
mod common;
#[path = "../checks/grammar_check.rs"]
mod grammar_check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| grammar_check::check(data));
