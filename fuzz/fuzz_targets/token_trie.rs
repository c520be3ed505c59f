//! Fuzz target: see `checks/token_trie.rs` (shared with the stable regression tests).
#![no_main]

#[path = "../checks/token_trie.rs"]
mod token_trie;

libfuzzer_sys::fuzz_target!(|data: &[u8]| token_trie::check(data));
