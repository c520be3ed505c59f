//! [`StepReport`]: what the sampler did at one generated token, for a step-by-step view (the
//! server's `trace_steps`, the playground page): the top candidates of the model's raw softmax
//! and of the final distribution the token was drawn from, entropy, surprisal, how many
//! candidates each chain member left, and how many tokens a constraint allowed.
//!
//! Only the top `n` of each distribution is kept, so a report stays small on a 262k vocabulary.

use nucleus_sampler::probs::{surprisal_bits, top_n_post, top_n_raw, RawDistribution, TokenProb};
use nucleus_sampler::{Logits, Token, TokenSampler};

/// One generated token's sampling step.
#[derive(Clone, Debug, PartialEq)]
pub struct StepReport {
    /// The chosen token.
    pub token: Token,
    /// Its probability under the raw softmax (before the chain).
    pub p: f32,
    /// Its probability in the distribution it was drawn from (after the chain); 1 for a token
    /// taken without a sampling step.
    pub post_p: f32,
    /// Shannon entropy of the raw softmax, in nats.
    pub entropy: f64,
    /// Shannon entropy of the post-chain distribution, in nats (0 without a sampling step).
    pub post_entropy: f64,
    /// Surprisal of the token under the raw softmax, in bits (`-log2 p`).
    pub surprisal: f32,
    /// The top `n` of the raw softmax, best first.
    pub raw_top: Vec<TokenProb>,
    /// The top `n` of the post-chain distribution, best first (zero-probability entries left
    /// out); just the token with `p` 1 when no sampling step chose it.
    pub post_top: Vec<TokenProb>,
    /// Live candidates entering the chain (the vocabulary, less banned or masked tokens).
    pub candidates_in: usize,
    /// Each chain member's name and the live candidates it left, in chain order (empty when no
    /// sampling step chose the token).
    pub chain: Vec<(String, usize)>,
    /// With a grammar or token trie: how many tokens it allowed at this step.
    pub allowed: Option<usize>,
    /// False when the token was taken without the chain (a forced or greedy trie step).
    pub sampled: bool,
    /// The chain's first pick was refused by the grammar and the chain ran again on the masked
    /// candidates (llama.cpp's order); the counts and post-chain top are those of that run.
    pub resampled: bool,
}

/// Receives one report per generated token, in order, before the step returns.
pub type StepSink = Box<dyn FnMut(StepReport) + Send>;

/// What [`crate::Sequence`] records while choosing a token, for the report.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepTrace {
    /// Live candidates after the steer, then after each chain member.
    pub counts: Vec<usize>,
    pub allowed: Option<usize>,
    pub sampled: bool,
    pub resampled: bool,
}

impl StepTrace {
    pub(crate) fn clear(&mut self) {
        self.counts.clear();
        self.allowed = None;
        self.sampled = false;
        self.resampled = false;
    }
}

/// Builds the report of the step that chose `token` from `logits`; `sampler` holds that
/// step's complete final candidates when `trace.sampled` (the traced path always builds them).
pub(crate) fn build(logits: &[f32], token: Token, sampler: &TokenSampler, trace: &StepTrace, n: usize) -> StepReport {
    let dist = RawDistribution::of(Logits::F32(logits));
    let p = logits.get(token as usize).map_or(0.0, |&l| dist.prob(l));
    let mut raw_top = Vec::with_capacity(n);
    top_n_raw(Logits::F32(logits), &dist, n, &mut raw_top);
    let mut post_top = Vec::with_capacity(n);
    let (post_p, post_entropy, chain) = if trace.sampled {
        let cands = sampler.candidates();
        top_n_post(cands, n, &mut post_top);
        let post_p = cands.as_slice().iter().find(|d| d.id == token).map_or(0.0, |d| d.p);
        let h: f64 = cands.as_slice().iter().filter(|d| d.p > 0.0).map(|d| -(d.p as f64) * (d.p as f64).ln()).sum();
        let names = sampler.chain().samplers().iter().map(|s| s.name().to_string());
        (post_p, h.max(0.0), names.zip(trace.counts.iter().skip(1).copied()).collect())
    } else {
        post_top.push(TokenProb { id: token, p: 1.0, logprob: 0.0 });
        (1.0, 0.0, Vec::new())
    };
    StepReport {
        token,
        p,
        post_p,
        entropy: dist.entropy,
        post_entropy,
        surprisal: surprisal_bits(p),
        raw_top,
        post_top,
        candidates_in: trace.counts.first().copied().unwrap_or(logits.len()),
        chain,
        allowed: trace.allowed,
        sampled: trace.sampled,
        resampled: trace.resampled,
    }
}
