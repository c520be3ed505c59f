//! Fuzz target: see `checks/responses.rs` (shared with the stable regression tests).
#![no_main]

#[path = "../checks/server_model.rs"]
mod server_model;
#[path = "../checks/responses.rs"]
mod responses;

libfuzzer_sys::fuzz_target!(|data: &[u8]| responses::check(data));
