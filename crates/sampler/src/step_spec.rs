//! [`StepSpec`]: a built-in chain step written down as plain data — which sampler, with which
//! raw parameters — so it can be printed, compared, stored and built again.
//!
//! A [`Step`] is live: it holds random streams, histories and scratch buffers. A `StepSpec` is
//! only what its constructor was given. [`StepSpec::build`] is the one place that turns the
//! parameters into a sampler; [`crate::SamplingParams::build`] and the llama.cpp parity oracle
//! both go through it, so a chain's description and the chain it builds cannot disagree.

use crate::candidates::Token;
use crate::samplers::{
    adaptive_p::AdaptiveP, dist::Dist, dry::Dry, greedy::Greedy, gumbel::GumbelMax, logit_bias::LogitBias, min_p::MinP,
    mirostat::Mirostat, mirostat_v2::MirostatV2, penalties::Penalties, temp::Temp, temp_ext::TempExt, top_k::TopK,
    top_n_sigma::TopNSigma, top_p::TopP, typical::Typical, xtc::Xtc,
};
use crate::step::Step;

/// One built-in sampler with its raw parameters: the values llama.cpp's
/// `llama_sampler_init_*` take, unvalidated ("off" and edge values build llama.cpp's no-op or
/// edge behaviour, exactly as the constructors in [`crate::samplers`] do).
///
/// Every built-in [`Step`] has a variant except infill, whose one parameter is the model's
/// vocabulary (not plain data). The enum is deliberately exhaustive: code that mirrors every
/// sampler elsewhere (the parity oracle's llama.cpp side) must say what to do with a new one.
#[derive(Clone, Debug, PartialEq)]
pub enum StepSpec {
    /// Always the most likely candidate (`llama_sampler_init_greedy`).
    Greedy,
    /// Draw from the softmax (`llama_sampler_init_dist`).
    Dist {
        /// RNG seed; [`crate::DEFAULT_SEED`] picks a random one.
        seed: u32,
    },
    /// Keep the `k` most likely (`llama_sampler_init_top_k`).
    TopK {
        /// Candidates kept; `<= 0` is off.
        k: i32,
    },
    /// Nucleus sampling (`llama_sampler_init_top_p`).
    TopP {
        /// Cumulative probability kept; `>= 1` is off.
        p: f32,
        /// Candidates always kept.
        min_keep: usize,
    },
    /// Drop candidates below `p` times the best probability (`llama_sampler_init_min_p`).
    MinP {
        /// Relative probability floor; `<= 0` is off.
        p: f32,
        /// Candidates always kept.
        min_keep: usize,
    },
    /// Locally typical sampling (`llama_sampler_init_typical`).
    Typical {
        /// Cumulative probability kept; `>= 1` is off.
        p: f32,
        /// Candidates always kept.
        min_keep: usize,
    },
    /// Divide logits by `t` (`llama_sampler_init_temp`).
    Temp {
        /// Temperature; `<= 0` keeps only the best candidate.
        t: f32,
    },
    /// Temperature, dynamic when `delta > 0` (`llama_sampler_init_temp_ext`).
    TempExt {
        /// Temperature.
        t: f32,
        /// Dynamic range (`t ± delta`); `<= 0` is plain temperature.
        delta: f32,
        /// Dynamic temperature exponent.
        exponent: f32,
    },
    /// Exclude top choices (`llama_sampler_init_xtc`).
    Xtc {
        /// Chance of acting at each step; `<= 0` is off.
        probability: f32,
        /// Probability above which candidates are removed; `> 0.5` is off.
        threshold: f32,
        /// Candidates always kept.
        min_keep: usize,
        /// RNG seed; [`crate::DEFAULT_SEED`] picks a random one.
        seed: u32,
    },
    /// Keep logits within `n` standard deviations of the best (`llama_sampler_init_top_n_sigma`).
    TopNSigma {
        /// Width in standard deviations; `<= 0` is off.
        n: f32,
    },
    /// Mirostat 1.0 selector (`llama_sampler_init_mirostat`).
    Mirostat {
        /// Vocabulary size.
        n_vocab: usize,
        /// RNG seed; [`crate::DEFAULT_SEED`] picks a random one.
        seed: u32,
        /// Target surprise.
        tau: f32,
        /// Learning rate.
        eta: f32,
        /// Candidates used to estimate the Zipf exponent.
        m: i32,
    },
    /// Mirostat 2.0 selector (`llama_sampler_init_mirostat_v2`).
    MirostatV2 {
        /// RNG seed; [`crate::DEFAULT_SEED`] picks a random one.
        seed: u32,
        /// Target surprise.
        tau: f32,
        /// Learning rate.
        eta: f32,
    },
    /// Repeat, frequency and presence penalties (`llama_sampler_init_penalties`).
    Penalties {
        /// Vocabulary size.
        n_vocab: usize,
        /// Window of accepted tokens; `<= 0` is off.
        last_n: i32,
        /// Repeat penalty; `1` is off.
        repeat: f32,
        /// Frequency penalty; `0` is off.
        freq: f32,
        /// Presence penalty; `0` is off.
        present: f32,
    },
    /// DRY with sequence breakers as token ids (llama.cpp's `llama_sampler_init_dry_testing`;
    /// string breakers are resolved to these by [`crate::SamplingParams::specs`]).
    Dry {
        /// Vocabulary size.
        n_vocab: usize,
        /// Penalty multiplier; `0` is off.
        multiplier: f32,
        /// Penalty base; `< 1` is off.
        base: f32,
        /// Repeats up to this length are not penalised.
        allowed_length: i32,
        /// Window of accepted tokens; `<= 0` is off.
        last_n: i32,
        /// Breaker sequences: the first token, then the tokens that must follow it.
        breakers: Vec<Vec<Token>>,
    },
    /// Add a bias to some tokens' logits (`llama_sampler_init_logit_bias`).
    LogitBias {
        /// Vocabulary size.
        n_vocab: usize,
        /// `(token, bias)` pairs; `-inf` bans the token.
        biases: Vec<(Token, f32)>,
    },
    /// Adaptive-p selector (`llama_sampler_init_adaptive_p`).
    AdaptiveP {
        /// Target probability; negative samples plainly.
        target: f32,
        /// EMA decay.
        decay: f32,
        /// RNG seed; [`crate::DEFAULT_SEED`] picks a random one.
        seed: u32,
    },
    /// Gumbel-max selector: nucleus's own, exact in distribution but not llama.cpp's stream.
    GumbelMax {
        /// Noise key; [`crate::DEFAULT_SEED`] picks a random one.
        seed: u32,
    },
}

impl StepSpec {
    /// Builds the live step, exactly as the sampler's own constructor does with these values.
    pub fn build(&self) -> Step {
        use StepSpec as S;
        match *self {
            S::Greedy => Greedy::new().into(),
            S::Dist { seed } => Dist::new(seed).into(),
            S::TopK { k } => TopK::new(k).into(),
            S::TopP { p, min_keep } => TopP::new(p, min_keep).into(),
            S::MinP { p, min_keep } => MinP::new(p, min_keep).into(),
            S::Typical { p, min_keep } => Typical::new(p, min_keep).into(),
            S::Temp { t } => Temp::new(t).into(),
            S::TempExt { t, delta, exponent } => TempExt::new(t, delta, exponent).into(),
            S::Xtc { probability, threshold, min_keep, seed } => {
                Xtc::new(probability, threshold, min_keep, seed).into()
            }
            S::TopNSigma { n } => TopNSigma::new(n).into(),
            S::Mirostat { n_vocab, seed, tau, eta, m } => Mirostat::new(n_vocab, seed, tau, eta, m).into(),
            S::MirostatV2 { seed, tau, eta } => MirostatV2::new(seed, tau, eta).into(),
            S::Penalties { n_vocab, last_n, repeat, freq, present } => {
                Penalties::new(n_vocab, last_n, repeat, freq, present).into()
            }
            S::Dry { n_vocab, multiplier, base, allowed_length, last_n, ref breakers } => {
                Dry::from_token_breakers(n_vocab, multiplier, base, allowed_length, last_n, breakers).into()
            }
            S::LogitBias { n_vocab, ref biases } => LogitBias::new(n_vocab, biases.clone()).into(),
            S::AdaptiveP { target, decay, seed } => AdaptiveP::new(target, decay, seed).into(),
            S::GumbelMax { seed } => GumbelMax::new(seed).into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StepSpec as S;
    use crate::step::Step;

    /// Each description builds its own variant, with llama.cpp's name ("?name" when off).
    #[test]
    fn builds_the_described_variant() {
        let cases: Vec<(S, &str)> = vec![
            (S::Greedy, "greedy"),
            (S::Dist { seed: 1 }, "dist"),
            (S::TopK { k: 40 }, "top-k"),
            (S::TopK { k: 0 }, "?top-k"),
            (S::TopP { p: 0.9, min_keep: 1 }, "top-p"),
            (S::MinP { p: 0.05, min_keep: 0 }, "min-p"),
            (S::Typical { p: 1.0, min_keep: 0 }, "?typical"),
            (S::Temp { t: 0.8 }, "temp"),
            (S::TempExt { t: 0.8, delta: 0.0, exponent: 1.0 }, "temp-ext"),
            (S::Xtc { probability: 0.0, threshold: 0.1, min_keep: 0, seed: 1 }, "?xtc"),
            (S::TopNSigma { n: 1.0 }, "top-n-sigma"),
            (S::Mirostat { n_vocab: 10, seed: 1, tau: 5.0, eta: 0.1, m: 100 }, "mirostat"),
            (S::MirostatV2 { seed: 1, tau: 5.0, eta: 0.1 }, "mirostat-v2"),
            (S::Penalties { n_vocab: 10, last_n: 64, repeat: 1.1, freq: 0.0, present: 0.0 }, "penalties"),
            (
                S::Dry { n_vocab: 10, multiplier: 0.8, base: 1.75, allowed_length: 2, last_n: 64, breakers: vec![] },
                "dry",
            ),
            (S::LogitBias { n_vocab: 10, biases: vec![(3, 1.0)] }, "logit-bias"),
            (S::AdaptiveP { target: 0.5, decay: 0.9, seed: 1 }, "adaptive-p"),
            (S::GumbelMax { seed: 1 }, "gumbel-max"),
        ];
        for (spec, name) in cases {
            let step = spec.build();
            assert_eq!(step.name(), name, "{spec:?}");
            assert!(!matches!(step, Step::Custom(_)), "{spec:?} built a custom step");
        }
    }
}
