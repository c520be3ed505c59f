//! Fuzz target: see `checks/gbnf.rs` (shared with the stable regression tests).
#![no_main]

#[path = "../checks/common.rs"]
mod common;
#[path = "../checks/gbnf.rs"]
mod gbnf;

libfuzzer_sys::fuzz_target!(|data: &[u8]| gbnf::check(data));
