//! # nucleus-parity
//!
//! A differential oracle: runs the same randomized sampler chains, logits and histories
//! through the real llama.cpp (built from source by `llama-cpp-sys-2`) and through
//! `nucleus-sampler`, and requires the same selected token at every step and the same
//! candidates (ids exact, `p` and `logit` within [`harness::REL_TOL`] relative).
//!
//! - [`llama`]: a small safe wrapper over llama.cpp's sampler API on plain logits;
//! - [`spec`]: [`spec::SpecExt`], the llama.cpp side of nucleus-sampler's `StepSpec` (one
//!   built-in step with its raw parameters), so one chain description runs on both sides;
//! - [`cases`]: the deterministic random case generator;
//! - [`harness`]: running, comparing, shrinking, and many cases on several threads;
//! - [`common_sampler`]: llama.cpp's own `common_sampler_init` / `common_sampler_sample` (the
//!   `common` library, through a C++ shim) on a real model, the reference for
//!   `SamplingParams::build` (`tests/common_sampler.rs`); [`common_chain`] builds the llama.cpp
//!   side of model-free benchmarks from the descriptions `SamplingParams::specs` gives;
//! - [`reference_grammar`] and [`mask_walk`]: llama.cpp's grammar sampler and the mask walk that
//!   compares nucleus-grammar's masks with it bit for bit (`tests/grammar_masks.rs`, `nucleus
//!   bench --grammar`);
//! - [`reference_llguidance`]: llguidance (its own JSON Schema compiler and masks) over the same
//!   vocabulary, the third side of `nucleus bench --grammar`.
//!
//! Run: `cargo test --release -p nucleus-parity` (20,000 cases with a fixed harness seed;
//! `NUCLEUS_PARITY_CASES`, `NUCLEUS_PARITY_SEED=<n>|random`, `NUCLEUS_PARITY_ONLY=<index>` and
//! friends are documented in `tests/differential.rs`). A failure prints the harness seed, the
//! case index, the case, and a shrunk case with explicit logits to paste into
//! `tests/regressions.rs`.
//!
//! The reference is the llama.cpp that `llama-cpp-sys-2` builds on this machine (libstdc++'s
//! sorts and random distributions, glibc's `expf`/`logf`/`powf`); both sides run in one
//! process, so they share the same libm.
//!
//! In the random-case oracle, DRY runs through llama.cpp's internal test constructor
//! `llama_sampler_init_dry_testing` (token-id breakers, no vocabulary) via a tiny C++ shim;
//! infill and string breakers need a model vocabulary and are covered by
//! `tests/common_sampler.rs` on SmolLM2 instead.

pub mod bench;
pub mod cases;
pub mod common_chain;
pub mod common_sampler;
pub mod harness;
pub mod llama;
pub mod mask_walk;
pub mod reference_grammar;
pub mod reference_llguidance;
pub mod spec;

pub use cases::{generate, Case};
pub use harness::{run_case, run_many, RunOptions};
pub use spec::SpecExt;
