//! Scoring a known token under the model's raw softmax: its log-probability and the top
//! alternatives. A generated token's logprobs ([`crate::Sequence`] with `n_probs`) and a
//! scored prompt token (echo with logprobs, [`crate::engine`]) are the same computation.

use nucleus_sampler::probs::{top_n_raw, RawDistribution, TokenProb};
use nucleus_sampler::{Logits, Token};

/// Log-probability of `token` under the softmax of `logits` (`None` if the token is outside the
/// row), with the `k` most likely tokens written to `top` (cleared first), best first.
pub(crate) fn raw_score(logits: &[f32], token: Token, k: usize, top: &mut Vec<TokenProb>) -> Option<f32> {
    let dist = RawDistribution::of(Logits::F32(logits));
    let logprob = logits.get(token as usize).map(|&l| dist.logprob(l));
    top_n_raw(Logits::F32(logits), &dist, k, top);
    logprob
}
