//! # nucleus-parity
//!
//! A differential oracle: runs the same randomized sampler chains, logits and histories
//! through the real llama.cpp (built from source by `llama-cpp-sys-2`) and through
//! `nucleus-sampler`, and requires the same selected token at every step and the same
//! candidates (ids exact, `p` and `logit` within [`harness::REL_TOL`] relative).
//!
//! - [`llama`]: a small safe wrapper over llama.cpp's sampler API on plain logits;
//! - [`spec`]: [`spec::SamplerSpec`], one sampler buildable on both sides;
//! - [`cases`]: the deterministic random case generator;
//! - [`harness`]: running, comparing, shrinking, and many cases on several threads.
//!
//! DRY runs through llama.cpp's internal test constructor `llama_sampler_init_dry_testing`
//! (token-id breakers, no vocabulary) via a tiny C++ shim. Infill needs a model vocabulary
//! and is not covered.

pub mod cases;
pub mod harness;
pub mod llama;
pub mod spec;

pub use cases::{generate, Case};
pub use harness::{run_case, run_many, RunOptions};
pub use spec::SamplerSpec;
