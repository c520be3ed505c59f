//! What users want to know about a step besides the token: log-probabilities of the chosen
//! token and of the top alternatives (before and after the chain), entropy, surprisal and
//! perplexity.
//!
//! "Before the chain" is llama-server's default `n_probs`: a plain softmax of the raw model
//! logits over the whole vocabulary. "After the chain" (`post_sampling_probs`) is the final
//! candidate distribution the token was drawn from.

use crate::candidates::{Candidates, Token, TokenData};
use crate::logits::Logits;

/// A token with its probability (after the chain) or log-probability (before it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenProb {
    /// Token id.
    pub id: Token,
    /// Probability in `[0, 1]`.
    pub p: f32,
    /// Natural log of `p` (`f32::MIN` instead of `-inf` for `p == 0`, as llama-server reports).
    pub logprob: f32,
}

impl TokenProb {
    fn new(id: Token, p: f32) -> Self {
        let logprob = if p > 0.0 { p.ln() } else { f32::MIN };
        TokenProb { id, p, logprob }
    }
}

/// Summary of the model's own distribution (softmax of the raw logits) at one step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RawDistribution {
    /// Largest logit.
    pub max_logit: f32,
    /// `sum(exp(l - max_logit))`, accumulated left to right in `f32` as llama-server does.
    pub sum_exp: f32,
    /// Shannon entropy in nats (computed in `f64`).
    pub entropy: f64,
}

impl RawDistribution {
    /// One pass over the logits (two for the entropy). `-inf` logits contribute nothing.
    pub fn of(logits: Logits<'_>) -> Self {
        let n = logits.len();
        if n == 0 {
            return RawDistribution::default();
        }
        let mut m = f32::NEG_INFINITY;
        for i in 0..n {
            let x = logits.get(i);
            if x > m {
                m = x;
            }
        }
        let mut s = 0.0f32;
        let mut s64 = 0.0f64;
        let mut sl = 0.0f64;
        for i in 0..n {
            let x = logits.get(i);
            let e = (x - m).exp();
            s += e;
            if e > 0.0 {
                let d = (x - m) as f64;
                let e64 = d.exp();
                s64 += e64;
                sl += e64 * d;
            }
        }
        // H = log(S) - E[l - m] with weights exp(l - m) / S.
        let entropy = if s64 > 0.0 { s64.ln() - sl / s64 } else { 0.0 };
        RawDistribution { max_logit: m, sum_exp: s, entropy }
    }

    /// Probability of a token whose raw logit is `logit`.
    pub fn prob(&self, logit: f32) -> f32 {
        if self.sum_exp > 0.0 {
            (logit - self.max_logit).exp() / self.sum_exp
        } else {
            0.0
        }
    }

    /// Natural-log probability of a token whose raw logit is `logit`.
    pub fn logprob(&self, logit: f32) -> f32 {
        TokenProb::new(0, self.prob(logit)).logprob
    }
}

/// Surprisal of a probability in bits (`-log2 p`), the unit mirostat uses.
pub fn surprisal_bits(p: f32) -> f32 {
    if p > 0.0 {
        -p.log2()
    } else {
        f32::INFINITY
    }
}

/// The `n` most likely tokens under the raw softmax, best first (ties: lower id first),
/// written into `out` (cleared first; no allocation once `out` has capacity `n`).
pub fn top_n_raw(logits: Logits<'_>, dist: &RawDistribution, n: usize, out: &mut Vec<TokenProb>) {
    out.clear();
    if n == 0 {
        return;
    }
    // Keep a small array sorted by (logit desc, id asc); reject most entries with one compare.
    let len = logits.len();
    let mut worst = f32::NEG_INFINITY;
    for i in 0..len {
        let x = logits.get(i);
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if out.len() == n && !(x > worst) {
            continue;
        }
        let e = TokenProb { id: i as Token, p: x, logprob: 0.0 }; // p holds the logit for now
        let pos = out.iter().position(|o| x > o.p).unwrap_or(out.len());
        if out.len() == n {
            out.pop();
        }
        out.insert(pos, e);
        if out.len() == n {
            worst = out[n - 1].p;
        }
    }
    for o in out.iter_mut() {
        *o = TokenProb::new(o.id, dist.prob(o.p));
    }
}

/// The `n` most likely tokens of the final candidate distribution (llama-server's
/// `post_sampling_probs`): sorted by `p` descending, at most `min(n, size)` entries, stopping
/// at the first `p == 0`. Call after the chain has run (a selector normalises `p`).
pub fn top_n_post(c: &Candidates, n: usize, out: &mut Vec<TokenProb>) {
    out.clear();
    if n == 0 {
        return;
    }
    let data = c.as_slice();
    for d in data {
        // The negation is how NaN is caught: it holds for NaN, where the flipped comparison does not.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if out.len() == n && !(d.p > out[n - 1].p) {
            continue;
        }
        let pos = out.iter().position(|o| d.p > o.p).unwrap_or(out.len());
        if out.len() == n {
            out.pop();
        }
        out.insert(pos, TokenProb::new(d.id, d.p));
    }
    if let Some(z) = out.iter().position(|o| o.p == 0.0) {
        out.truncate(z);
    }
}

/// The post-chain probability of the selected candidate, if any.
pub fn selected_prob(c: &Candidates) -> Option<TokenData> {
    c.selected_token()
}

/// Rolling perplexity: `exp(mean(-ln p))` over the tokens seen so far, optionally over a
/// sliding window of the last `window` tokens.
#[derive(Clone, Debug, Default)]
pub struct Perplexity {
    window: Option<usize>,
    nll: std::collections::VecDeque<f64>,
    sum: f64,
    count: u64,
}

impl Perplexity {
    /// A tracker over all tokens.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tracker over the last `window` tokens (at least 1).
    pub fn windowed(window: usize) -> Self {
        let w = window.max(1);
        Perplexity { window: Some(w), nll: std::collections::VecDeque::with_capacity(w), ..Default::default() }
    }

    /// Records a token by its natural-log probability.
    pub fn push_logprob(&mut self, logprob: f32) {
        let nll = -(logprob as f64);
        self.count += 1;
        self.sum += nll;
        if let Some(w) = self.window {
            if self.nll.len() == w {
                if let Some(old) = self.nll.pop_front() {
                    self.sum -= old;
                }
            }
            self.nll.push_back(nll);
        }
    }

    /// Tokens recorded in total.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Current perplexity (1.0 before any token).
    pub fn value(&self) -> f64 {
        let n = match self.window {
            Some(_) => self.nll.len() as f64,
            None => self.count as f64,
        };
        if n == 0.0 {
            1.0
        } else {
            (self.sum / n).exp()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_stats_of_uniform() {
        let l = [0.0f32; 4];
        let d = RawDistribution::of(Logits::F32(&l));
        assert!((d.entropy - 4f64.ln()).abs() < 1e-12);
        assert!((d.prob(0.0) - 0.25).abs() < 1e-7);
        let mut out = Vec::new();
        top_n_raw(Logits::F32(&l), &d, 2, &mut out);
        assert_eq!(out.iter().map(|t| t.id).collect::<Vec<_>>(), vec![0, 1]);
    }

    #[test]
    fn top_n_raw_orders_by_logit() {
        let l = [1.0f32, 5.0, f32::NEG_INFINITY, 3.0, 5.0];
        let d = RawDistribution::of(Logits::F32(&l));
        let mut out = Vec::new();
        top_n_raw(Logits::F32(&l), &d, 3, &mut out);
        assert_eq!(out.iter().map(|t| t.id).collect::<Vec<_>>(), vec![1, 4, 3]);
        let s: f32 = l.iter().map(|x| d.prob(*x)).sum();
        assert!((s - 1.0).abs() < 1e-6);
    }

    #[test]
    fn perplexity_window() {
        let mut p = Perplexity::windowed(2);
        p.push_logprob((0.5f32).ln());
        p.push_logprob((0.25f32).ln());
        p.push_logprob((0.25f32).ln());
        assert!((p.value() - 4.0).abs() < 1e-5);
        assert_eq!(p.count(), 3);
    }
}
