//! The oracle's side of nucleus-sampler's [`StepSpec`] (one built-in step with its raw
//! parameters): [`SpecExt::to_llama`] builds the same step with llama.cpp's constructor, so
//! one chain description runs on both sides. The nucleus side is [`StepSpec::build`] itself,
//! the constructor `SamplingParams::build` uses.

use nucleus_sampler::StepSpec;

use crate::llama::LlamaSampler;

/// What the oracle adds to a [`StepSpec`].
pub trait SpecExt {
    /// Builds the llama.cpp sampler with the same raw parameters.
    ///
    /// # Panics
    /// On [`StepSpec::GumbelMax`], nucleus's own selector, which llama.cpp does not have (the
    /// case generator never draws it).
    fn to_llama(&self) -> LlamaSampler;

    /// Short kind name (for statistics and messages), independent of the parameters.
    fn kind(&self) -> &'static str;

    /// True for samplers that set `selected` (they end a chain).
    fn is_selector(&self) -> bool;

    /// The same step with every vocabulary size set to `n_vocab` (token ids in biases and
    /// breakers are left alone; used when a failing case is shrunk).
    fn with_vocab(&self, n_vocab: usize) -> StepSpec;
}

impl SpecExt for StepSpec {
    fn to_llama(&self) -> LlamaSampler {
        use StepSpec as S;
        match *self {
            S::Greedy => LlamaSampler::greedy(),
            S::Dist { seed } => LlamaSampler::dist(seed),
            S::TopK { k } => LlamaSampler::top_k(k),
            S::TopP { p, min_keep } => LlamaSampler::top_p(p, min_keep),
            S::MinP { p, min_keep } => LlamaSampler::min_p(p, min_keep),
            S::Typical { p, min_keep } => LlamaSampler::typical(p, min_keep),
            S::Temp { t } => LlamaSampler::temp(t),
            S::TempExt { t, delta, exponent } => LlamaSampler::temp_ext(t, delta, exponent),
            S::Xtc { probability, threshold, min_keep, seed } => {
                LlamaSampler::xtc(probability, threshold, min_keep, seed)
            }
            S::TopNSigma { n } => LlamaSampler::top_n_sigma(n),
            S::Mirostat { n_vocab, seed, tau, eta, m } => LlamaSampler::mirostat(n_vocab as i32, seed, tau, eta, m),
            S::MirostatV2 { seed, tau, eta } => LlamaSampler::mirostat_v2(seed, tau, eta),
            S::Penalties { n_vocab, last_n, repeat, freq, present } => {
                LlamaSampler::penalties(n_vocab as i32, last_n, repeat, freq, present)
            }
            S::Dry { multiplier, base, allowed_length, last_n, ref breakers, .. } => {
                LlamaSampler::dry(multiplier, base, allowed_length, last_n, breakers)
            }
            S::LogitBias { n_vocab, ref biases } => LlamaSampler::logit_bias(n_vocab as i32, biases),
            S::AdaptiveP { target, decay, seed } => LlamaSampler::adaptive_p(target, decay, seed),
            S::GumbelMax { .. } => panic!("gumbel-max is nucleus's own selector; llama.cpp has no counterpart"),
        }
    }

    fn kind(&self) -> &'static str {
        use StepSpec as S;
        match self {
            S::Greedy => "greedy",
            S::Dist { .. } => "dist",
            S::TopK { .. } => "top-k",
            S::TopP { .. } => "top-p",
            S::MinP { .. } => "min-p",
            S::Typical { .. } => "typical",
            S::Temp { .. } => "temp",
            S::TempExt { .. } => "temp-ext",
            S::Xtc { .. } => "xtc",
            S::TopNSigma { .. } => "top-n-sigma",
            S::Mirostat { .. } => "mirostat",
            S::MirostatV2 { .. } => "mirostat-v2",
            S::Penalties { .. } => "penalties",
            S::Dry { .. } => "dry",
            S::LogitBias { .. } => "logit-bias",
            S::AdaptiveP { .. } => "adaptive-p",
            S::GumbelMax { .. } => "gumbel-max",
        }
    }

    fn is_selector(&self) -> bool {
        use StepSpec as S;
        matches!(
            self,
            S::Greedy
                | S::Dist { .. }
                | S::Mirostat { .. }
                | S::MirostatV2 { .. }
                | S::AdaptiveP { .. }
                | S::GumbelMax { .. }
        )
    }

    fn with_vocab(&self, n_vocab: usize) -> StepSpec {
        use StepSpec as S;
        let mut s = self.clone();
        match &mut s {
            S::Mirostat { n_vocab: nv, .. }
            | S::Penalties { n_vocab: nv, .. }
            | S::Dry { n_vocab: nv, .. }
            | S::LogitBias { n_vocab: nv, .. } => *nv = n_vocab,
            _ => {}
        }
        s
    }
}

/// Builds a llama.cpp chain from `specs`, in order.
pub fn llama_chain(specs: &[StepSpec]) -> LlamaSampler {
    let mut c = LlamaSampler::chain();
    for s in specs {
        c.push(s.to_llama());
    }
    c
}

/// Builds a nucleus chain from `specs`, in order.
pub fn nucleus_chain(specs: &[StepSpec]) -> nucleus_sampler::chain::Chain {
    let mut c = nucleus_sampler::chain::Chain::new();
    for s in specs {
        c.push(s.build());
    }
    c
}
