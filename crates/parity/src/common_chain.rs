//! llama.cpp's common-layer chain (`common_sampler_init`) for model-free benchmarks: built on
//! the llama.cpp side from the very descriptions [`SamplingParams::build`] builds nucleus's
//! chain from ([`SamplingParams::specs`]), so both sides run the same steps with the same
//! parameters. That this order is llama.cpp's own is checked against `common_sampler_init`
//! itself in `tests/common_sampler.rs`.

use nucleus_sampler::SamplingParams;

use crate::llama::LlamaSampler;

/// The llama.cpp chain for `p` over a vocabulary of `n_vocab` (no model: DRY has no string
/// breakers).
///
/// # Panics
/// When `p` does not validate or lists infill or `ignore_eos` (they need a model vocabulary):
/// benchmark parameters are fixed, valid and model-free.
pub fn llama_chain(p: &SamplingParams, n_vocab: usize) -> LlamaSampler {
    let specs = p.specs(n_vocab, None).expect("benchmark params are valid and need no model vocabulary");
    crate::spec::llama_chain(&specs)
}
