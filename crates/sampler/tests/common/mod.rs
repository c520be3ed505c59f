//! Helpers shared by the integration tests (each test binary includes this with `mod common;`
//! and uses only part of it).
#![allow(dead_code)]

pub mod alloc_count;
pub mod vectors;
