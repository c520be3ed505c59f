//! Fuzz target: see `checks/json_schema.rs` (shared with the stable regression tests).
#![no_main]

#[path = "../checks/common.rs"]
mod common;
#[path = "../checks/json_schema.rs"]
mod json_schema;

libfuzzer_sys::fuzz_target!(|data: &[u8]| json_schema::check(data));
