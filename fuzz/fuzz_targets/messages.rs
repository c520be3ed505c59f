//! Fuzz target: see `checks/messages.rs` (shared with the stable regression tests).
#![no_main]

#[path = "../checks/server_model.rs"]
mod server_model;
#[path = "../checks/messages.rs"]
mod messages;

libfuzzer_sys::fuzz_target!(|data: &[u8]| messages::check(data));
