//! [`SamplerSpec`]: one sampler with its parameters, buildable both as a llama.cpp sampler and
//! as a nucleus-sampler sampler, so the same chain can run on both sides.

use nucleus_sampler::samplers::{
    adaptive_p::AdaptiveP, dist::Dist, dry::Dry, greedy::Greedy, logit_bias::LogitBias, min_p::MinP,
    mirostat::Mirostat, mirostat_v2::MirostatV2, penalties::Penalties, temp::Temp, temp_ext::TempExt, top_k::TopK,
    top_n_sigma::TopNSigma, top_p::TopP, typical::Typical, xtc::Xtc,
};
use nucleus_sampler::Step;

use crate::llama::LlamaSampler;

/// A sampler and its raw parameters, exactly as passed to `llama_sampler_init_*`
/// (no validation: "off" and edge values are the point).
#[derive(Clone, Debug, PartialEq)]
pub enum SamplerSpec {
    /// `llama_sampler_init_greedy`.
    Greedy,
    /// `llama_sampler_init_dist`.
    Dist { seed: u32 },
    /// `llama_sampler_init_top_k`.
    TopK { k: i32 },
    /// `llama_sampler_init_top_p`.
    TopP { p: f32, min_keep: usize },
    /// `llama_sampler_init_min_p`.
    MinP { p: f32, min_keep: usize },
    /// `llama_sampler_init_typical`.
    Typical { p: f32, min_keep: usize },
    /// `llama_sampler_init_temp`.
    Temp { t: f32 },
    /// `llama_sampler_init_temp_ext`.
    TempExt { t: f32, delta: f32, exponent: f32 },
    /// `llama_sampler_init_xtc`.
    Xtc { probability: f32, threshold: f32, min_keep: usize, seed: u32 },
    /// `llama_sampler_init_top_n_sigma`.
    TopNSigma { n: f32 },
    /// `llama_sampler_init_mirostat`.
    Mirostat { n_vocab: i32, seed: u32, tau: f32, eta: f32, m: i32 },
    /// `llama_sampler_init_mirostat_v2`.
    MirostatV2 { seed: u32, tau: f32, eta: f32 },
    /// `llama_sampler_init_penalties`.
    Penalties { n_vocab: i32, last_n: i32, repeat: f32, freq: f32, present: f32 },
    /// DRY with token-id sequence breakers (llama.cpp's `llama_sampler_init_dry_testing`).
    Dry { n_vocab: i32, multiplier: f32, base: f32, allowed_length: i32, last_n: i32, breakers: Vec<Vec<i32>> },
    /// `llama_sampler_init_logit_bias`.
    LogitBias { n_vocab: i32, biases: Vec<(i32, f32)> },
    /// `llama_sampler_init_adaptive_p`.
    AdaptiveP { target: f32, decay: f32, seed: u32 },
}

impl SamplerSpec {
    /// Builds the llama.cpp sampler.
    pub fn to_llama(&self) -> LlamaSampler {
        use SamplerSpec::*;
        match *self {
            Greedy => LlamaSampler::greedy(),
            Dist { seed } => LlamaSampler::dist(seed),
            TopK { k } => LlamaSampler::top_k(k),
            TopP { p, min_keep } => LlamaSampler::top_p(p, min_keep),
            MinP { p, min_keep } => LlamaSampler::min_p(p, min_keep),
            Typical { p, min_keep } => LlamaSampler::typical(p, min_keep),
            Temp { t } => LlamaSampler::temp(t),
            TempExt { t, delta, exponent } => LlamaSampler::temp_ext(t, delta, exponent),
            Xtc { probability, threshold, min_keep, seed } => LlamaSampler::xtc(probability, threshold, min_keep, seed),
            TopNSigma { n } => LlamaSampler::top_n_sigma(n),
            Mirostat { n_vocab, seed, tau, eta, m } => LlamaSampler::mirostat(n_vocab, seed, tau, eta, m),
            MirostatV2 { seed, tau, eta } => LlamaSampler::mirostat_v2(seed, tau, eta),
            Penalties { n_vocab, last_n, repeat, freq, present } => {
                LlamaSampler::penalties(n_vocab, last_n, repeat, freq, present)
            }
            Dry { multiplier, base, allowed_length, last_n, ref breakers, .. } => {
                LlamaSampler::dry(multiplier, base, allowed_length, last_n, breakers)
            }
            LogitBias { n_vocab, ref biases } => LlamaSampler::logit_bias(n_vocab, biases),
            AdaptiveP { target, decay, seed } => LlamaSampler::adaptive_p(target, decay, seed),
        }
    }

    /// Builds the nucleus-sampler step (the built-in variant of the closed [`Step`] enum, so
    /// the fast paths see exactly what `SamplingParams::build` gives them).
    pub fn to_nucleus(&self) -> Step {
        use SamplerSpec as S;
        match *self {
            S::Greedy => Step::from(Greedy::new()),
            S::Dist { seed } => Step::from(Dist::new(seed)),
            S::TopK { k } => Step::from(TopK::new(k)),
            S::TopP { p, min_keep } => Step::from(TopP::new(p, min_keep)),
            S::MinP { p, min_keep } => Step::from(MinP::new(p, min_keep)),
            S::Typical { p, min_keep } => Step::from(Typical::new(p, min_keep)),
            S::Temp { t } => Step::from(Temp::new(t)),
            S::TempExt { t, delta, exponent } => Step::from(TempExt::new(t, delta, exponent)),
            S::Xtc { probability, threshold, min_keep, seed } => {
                Step::from(Xtc::new(probability, threshold, min_keep, seed))
            }
            S::TopNSigma { n } => Step::from(TopNSigma::new(n)),
            S::Mirostat { n_vocab, seed, tau, eta, m } => {
                Step::from(Mirostat::new(n_vocab as usize, seed, tau, eta, m))
            }
            S::MirostatV2 { seed, tau, eta } => Step::from(MirostatV2::new(seed, tau, eta)),
            S::Penalties { n_vocab, last_n, repeat, freq, present } => {
                Step::from(Penalties::new(n_vocab as usize, last_n, repeat, freq, present))
            }
            S::Dry { n_vocab, multiplier, base, allowed_length, last_n, ref breakers } => Step::from(
                Dry::from_token_breakers(n_vocab as usize, multiplier, base, allowed_length, last_n, breakers),
            ),
            S::LogitBias { n_vocab, ref biases } => Step::from(LogitBias::new(n_vocab as usize, biases.clone())),
            S::AdaptiveP { target, decay, seed } => Step::from(AdaptiveP::new(target, decay, seed)),
        }
    }

    /// Short kind name (for statistics and messages), independent of the parameters.
    pub fn kind(&self) -> &'static str {
        use SamplerSpec::*;
        match self {
            Greedy => "greedy",
            Dist { .. } => "dist",
            TopK { .. } => "top-k",
            TopP { .. } => "top-p",
            MinP { .. } => "min-p",
            Typical { .. } => "typical",
            Temp { .. } => "temp",
            TempExt { .. } => "temp-ext",
            Xtc { .. } => "xtc",
            TopNSigma { .. } => "top-n-sigma",
            Mirostat { .. } => "mirostat",
            MirostatV2 { .. } => "mirostat-v2",
            Penalties { .. } => "penalties",
            Dry { .. } => "dry",
            LogitBias { .. } => "logit-bias",
            AdaptiveP { .. } => "adaptive-p",
        }
    }

    /// True for samplers that set `selected` (they end a chain).
    pub fn is_selector(&self) -> bool {
        matches!(
            self,
            SamplerSpec::Greedy
                | SamplerSpec::Dist { .. }
                | SamplerSpec::Mirostat { .. }
                | SamplerSpec::MirostatV2 { .. }
                | SamplerSpec::AdaptiveP { .. }
        )
    }

    /// The same sampler with every `n_vocab` parameter set to `n_vocab` (token ids in biases
    /// and breakers are left alone; used when a failing case is shrunk).
    pub fn with_vocab(&self, n_vocab: usize) -> SamplerSpec {
        let nv = n_vocab as i32;
        let mut s = self.clone();
        match &mut s {
            SamplerSpec::Mirostat { n_vocab, .. }
            | SamplerSpec::Penalties { n_vocab, .. }
            | SamplerSpec::Dry { n_vocab, .. }
            | SamplerSpec::LogitBias { n_vocab, .. } => *n_vocab = nv,
            _ => {}
        }
        s
    }
}

/// Builds a llama.cpp chain from `specs`, in order.
pub fn llama_chain(specs: &[SamplerSpec]) -> LlamaSampler {
    let mut c = LlamaSampler::chain();
    for s in specs {
        c.push(s.to_llama());
    }
    c
}

/// Builds a nucleus chain from `specs`, in order.
pub fn nucleus_chain(specs: &[SamplerSpec]) -> nucleus_sampler::chain::Chain {
    let mut c = nucleus_sampler::chain::Chain::new();
    for s in specs {
        c.push(s.to_nucleus());
    }
    c
}
