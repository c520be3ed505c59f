//! # nucleus-sampler
//!
//! Turns logits into a token the way llama.cpp does, bit for bit: the same samplers, the same
//! chain order and defaults, and the same seeded random stream.

pub mod candidates;
pub mod error;
pub mod logits;
pub mod rng;
pub mod sampler;
pub mod samplers;
pub mod softmax;
pub mod sort;
pub mod vocab;

pub use candidates::{Candidates, Token, TokenData};
pub use error::{ParamError, SampleError};
pub use logits::Logits;
pub use rng::{LlamaRng, DEFAULT_SEED};
pub use sampler::Sampler;
pub use vocab::Vocab;
