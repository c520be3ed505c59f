//! # nucleus-sampler
//!
//! Turns logits into a token the way llama.cpp does, bit for bit: the same samplers, the same
//! chain order and defaults, and the same seeded random stream.
//!
//! ```
//! use nucleus_sampler::{SamplingParams, TokenSampler};
//!
//! let params = SamplingParams { seed: 42, ..Default::default() };
//! let logits = vec![0.5f32, 2.0, -1.0, 1.5];
//! let mut sampler = TokenSampler::new(params.build(logits.len(), None).unwrap());
//! let token = sampler.sample(&logits).unwrap();
//! assert!((0..4).contains(&token));
//! ```
//!
//! * [`samplers`] has one module per llama.cpp sampler; [`Chain`] strings them together.
//! * [`SamplingParams`] holds llama.cpp's `common_params_sampling` fields and builds the
//!   chain in llama.cpp's order.
//! * [`TokenSampler`] is the per-sequence loop object: logits in, token out, no allocation.
//! * [`probs`] reports log-probabilities, top alternatives, entropy and perplexity.
//! * [`Step`] is one chain member: a built-in sampler (a closed set the fast paths recognise)
//!   or your own [`Sampler`] as [`Step::Custom`], which can go anywhere in a chain.
//! * [`StepSpec`] describes a built-in step as plain data (its raw parameters) and builds it;
//!   [`SamplingParams::specs`] gives the chain [`SamplingParams::build`] makes that way.
//! * [`fields`] lists every sampling field once: its names (llama.cpp's, the HTTP API's,
//!   camelCase), kind, default, request range and command-line flag.
//! * [`SimdLevel`] reports, and can lower, the SIMD backend of the whole-vocabulary kernels.

#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod batch;
pub mod candidates;
pub mod chain;
pub mod error;
mod fast;
pub mod fields;
pub mod logits;
pub mod params;
#[cfg(feature = "json")]
pub mod params_map;
pub mod probs;
pub mod rng;
mod role;
pub mod sampler;
pub mod sampler_type;
pub mod samplers;
pub mod session;
pub mod softmax;
pub mod sort;
pub mod step;
pub mod step_spec;
pub mod vocab;

pub use batch::BatchSampler;
pub use candidates::{Candidates, Token, TokenData};
pub use chain::Chain;
pub use error::{ParamError, SampleError};
pub use fast::simd::Level as SimdLevel;
pub use logits::Logits;
pub use params::{MirostatMode, SamplingParams};
pub use rng::{LlamaRng, DEFAULT_SEED};
pub use sampler::Sampler;
pub use sampler_type::SamplerType;
pub use session::TokenSampler;
pub use step::Step;
pub use step_spec::StepSpec;
pub use vocab::Vocab;

/// How often each tier of each whole-vocabulary fast path decided, process-wide (counted only
/// with the `tier-counts` feature; zeros without it). For benchmarks and tests, not a stable
/// API; see `fast::plan`.
#[doc(hidden)]
pub mod tier_counts {
    #[cfg(feature = "tier-counts")]
    pub use crate::fast::plan::mirostat_margin_scale;
    pub use crate::fast::plan::{
        dist_partial_counts, dist_tier_counts, mirostat_tier_counts, sigma_tier_counts, top_p_tier_counts,
        top_p_wide_min_p_count, top_p_wide_tier_counts,
    };
}
