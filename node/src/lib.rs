//! The `nucleus-sampler` npm package's native module: thin Node-API bindings over
//! nucleus-sampler (and nucleus-grammar). Every behaviour comes from the Rust crates; this crate
//! converts arguments (camelCase or snake_case parameter names), borrows typed arrays without
//! copying and turns errors into JavaScript exceptions. Every exported function and method is
//! marked `catch_unwind`: a panic (a bug) becomes a JavaScript `Error` instead of aborting the
//! process.

#![deny(clippy::all)]

mod convert;
mod grammar;
mod logits;
mod model;
mod sampler;
