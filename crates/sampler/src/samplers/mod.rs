//! Every llama.cpp CPU sampler, one module each.
//!
//! Constructors mirror llama.cpp's `llama_sampler_init_*` functions and accept the same raw
//! values (no validation); "off" values build a no-op sampler whose name starts with `?`.
//! Validation of user input happens once, in [`crate::params::SamplingParams::validate`].

pub mod adaptive_p;
pub mod dist;
pub mod dry;
pub mod greedy;
pub mod gumbel;
pub mod infill;
pub mod logit_bias;
pub mod min_p;
pub mod mirostat;
pub(crate) mod mirostat_core;
pub mod mirostat_v2;
pub mod penalties;
pub(crate) mod ring;
pub mod temp;
pub mod temp_ext;
#[cfg(test)]
pub(crate) mod test_util;
pub mod top_k;
pub mod top_n_sigma;
pub mod top_p;
pub mod typical;
pub mod xtc;
