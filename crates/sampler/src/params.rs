//! [`SamplingParams`]: every field of llama.cpp's `common_params_sampling` that shapes the
//! chain, with llama.cpp's defaults, validated once, and [`SamplingParams::build`], which
//! constructs the chain in exactly llama.cpp's common order.

use std::sync::Arc;

use crate::candidates::Token;
use crate::chain::Chain;
use crate::error::ParamError;
use crate::fields::DEFAULT_DRY_BREAKERS;
use crate::rng::DEFAULT_SEED;
use crate::sampler_type::{SamplerType, DEFAULT_SAMPLERS};
use crate::samplers::{dry::token_breakers, infill::Infill};
use crate::step_spec::StepSpec;
use crate::vocab::Vocab;

/// Which mirostat variant replaces the normal chain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MirostatMode {
    /// The normal chain (`--mirostat 0`).
    #[default]
    Off,
    /// Mirostat v1 (`--mirostat 1`).
    V1,
    /// Mirostat v2 (`--mirostat 2`).
    V2,
}

impl MirostatMode {
    /// From llama.cpp's integer (0, 1, 2); anything else is an error.
    pub fn from_i32(v: i32) -> Result<Self, ParamError> {
        match v {
            0 => Ok(MirostatMode::Off),
            1 => Ok(MirostatMode::V1),
            2 => Ok(MirostatMode::V2),
            _ => Err(ParamError::new("mirostat", v, "must be 0 (off), 1 or 2")),
        }
    }
}

/// Sampling parameters with llama.cpp's names and defaults (`common_params_sampling`). Each
/// field's names, kind, default, request range and flag are listed once in [`crate::fields`].
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingParams {
    /// RNG seed; [`DEFAULT_SEED`] (`-1` on the command line) means random.
    pub seed: u32,
    /// Minimum candidates kept by top-p, min-p, typical and XTC.
    pub min_keep: usize,
    /// Top-k; `<= 0` disables.
    pub top_k: i32,
    /// Top-p; `1.0` disables.
    pub top_p: f32,
    /// Min-p; `0.0` disables.
    pub min_p: f32,
    /// XTC probability; `0.0` disables.
    pub xtc_probability: f32,
    /// XTC threshold; `> 0.5` disables.
    pub xtc_threshold: f32,
    /// Locally typical sampling; `1.0` disables.
    pub typ_p: f32,
    /// Temperature; `<= 0` keeps only the most likely token.
    pub temp: f32,
    /// Dynamic temperature range (temperature varies in `temp ± range`); `0` disables.
    pub dynatemp_range: f32,
    /// Dynamic temperature exponent.
    pub dynatemp_exponent: f32,
    /// Penalty window in tokens; `0` disables.
    pub penalty_last_n: i32,
    /// Repeat penalty; `1.0` disables.
    pub penalty_repeat: f32,
    /// Frequency penalty; `0.0` disables.
    pub penalty_freq: f32,
    /// Presence penalty; `0.0` disables.
    pub penalty_present: f32,
    /// DRY multiplier; `0.0` disables.
    pub dry_multiplier: f32,
    /// DRY base; `< 1` disables.
    pub dry_base: f32,
    /// DRY: repeats up to this length are not penalised.
    pub dry_allowed_length: i32,
    /// DRY window in tokens; `0` disables.
    pub dry_penalty_last_n: i32,
    /// DRY sequence breakers (strings, resolved through the vocabulary).
    pub dry_sequence_breakers: Vec<String>,
    /// Adaptive-p target probability; negative disables (plain sampling).
    pub adaptive_target: f32,
    /// Adaptive-p EMA decay, in `[0, 0.99]`.
    pub adaptive_decay: f32,
    /// Mirostat mode.
    pub mirostat: MirostatMode,
    /// Mirostat target entropy (tau).
    pub mirostat_tau: f32,
    /// Mirostat learning rate (eta).
    pub mirostat_eta: f32,
    /// Top-n-sigma; `<= 0` disables.
    pub top_n_sigma: f32,
    /// Ban every end-of-generation token (needs a vocabulary).
    pub ignore_eos: bool,
    /// The configurable samplers, in order.
    pub samplers: Vec<SamplerType>,
    /// Logit biases `(token, bias)`, applied first; `-inf` bans a token.
    pub logit_bias: Vec<(Token, f32)>,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            seed: DEFAULT_SEED,
            min_keep: 0,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            xtc_probability: 0.0,
            xtc_threshold: 0.1,
            typ_p: 1.0,
            temp: 0.8,
            dynatemp_range: 0.0,
            dynatemp_exponent: 1.0,
            penalty_last_n: 64,
            penalty_repeat: 1.0,
            penalty_freq: 0.0,
            penalty_present: 0.0,
            dry_multiplier: 0.0,
            dry_base: 1.75,
            dry_allowed_length: 2,
            dry_penalty_last_n: 64,
            dry_sequence_breakers: DEFAULT_DRY_BREAKERS.iter().map(|s| s.to_string()).collect(),
            adaptive_target: -1.0,
            adaptive_decay: 0.9,
            mirostat: MirostatMode::Off,
            mirostat_tau: 5.0,
            mirostat_eta: 0.1,
            top_n_sigma: -1.0,
            ignore_eos: false,
            samplers: DEFAULT_SAMPLERS.to_vec(),
            logit_bias: Vec::new(),
        }
    }
}

fn finite(field: &'static str, v: f32) -> Result<(), ParamError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(ParamError::new(field, v, "must be a finite number"))
    }
}

fn in_range(field: &'static str, v: f32, lo: f32, hi: f32, allowed: &'static str) -> Result<(), ParamError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ParamError::new(field, v, allowed))
    }
}

fn non_negative(field: &'static str, v: i32) -> Result<(), ParamError> {
    if v >= 0 {
        Ok(())
    } else {
        Err(ParamError::new(field, v, "must be >= 0 (0 disables; -1 is no longer accepted)"))
    }
}

impl SamplingParams {
    /// Checks every field. llama.cpp's own rules where it has them (repeat penalty finite,
    /// `> 0`, with a finite reciprocal; finite frequency/presence penalties; windows `>= 0`;
    /// adaptive decay in `[0, 0.99]`); otherwise: no NaN or infinity anywhere, probabilities
    /// in `[0, 1]`. With `n_vocab`, logit-bias tokens must be in the vocabulary.
    pub fn validate(&self, n_vocab: Option<usize>) -> Result<(), ParamError> {
        let r = self.penalty_repeat;
        if !r.is_finite() || r <= 0.0 || !(1.0 / r).is_finite() {
            return Err(ParamError::new("penalty_repeat", r, "must be finite and > 0 (1.0 disables)"));
        }
        finite("penalty_freq", self.penalty_freq)?;
        finite("penalty_present", self.penalty_present)?;
        non_negative("penalty_last_n", self.penalty_last_n)?;
        non_negative("dry_penalty_last_n", self.dry_penalty_last_n)?;
        non_negative("dry_allowed_length", self.dry_allowed_length)?;
        in_range("dry_multiplier", self.dry_multiplier, 0.0, f32::MAX, "must be finite and >= 0 (0 disables)")?;
        finite("dry_base", self.dry_base)?;
        finite("temp", self.temp)?;
        finite("dynatemp_range", self.dynatemp_range)?;
        finite("dynatemp_exponent", self.dynatemp_exponent)?;
        in_range("top_p", self.top_p, 0.0, 1.0, "must be in [0, 1] (1 disables)")?;
        in_range("min_p", self.min_p, 0.0, 1.0, "must be in [0, 1] (0 disables)")?;
        in_range("typ_p", self.typ_p, 0.0, 1.0, "must be in [0, 1] (1 disables)")?;
        in_range("xtc_probability", self.xtc_probability, 0.0, 1.0, "must be in [0, 1] (0 disables)")?;
        in_range("xtc_threshold", self.xtc_threshold, 0.0, 1.0, "must be in [0, 1] (> 0.5 disables)")?;
        finite("top_n_sigma", self.top_n_sigma)?;
        finite("mirostat_tau", self.mirostat_tau)?;
        finite("mirostat_eta", self.mirostat_eta)?;
        in_range("adaptive_target", self.adaptive_target, -f32::MAX, 1.0, "must be <= 1 (negative disables)")?;
        in_range("adaptive_decay", self.adaptive_decay, 0.0, 0.99, "must be in [0, 0.99]")?;
        for &(tok, bias) in &self.logit_bias {
            if bias.is_nan() || bias == f32::INFINITY {
                return Err(ParamError::new("logit_bias", format!("{tok}: {bias}"), "bias must be a number or -inf"));
            }
            let out = tok < 0 || n_vocab.is_some_and(|n| tok as usize >= n);
            if out {
                return Err(ParamError::new("logit_bias", tok, "token id must be in [0, n_vocab)"));
            }
        }
        Ok(())
    }

    /// Validates, then builds the chain exactly as llama.cpp's `common_sampler_init` does:
    /// logit-bias (if any), then either the configured samplers followed by dist (or adaptive-p
    /// when listed), or `temp` + mirostat. `vocab` is needed for DRY string breakers,
    /// `ignore_eos` and infill; without it DRY runs with no breakers.
    pub fn build(&self, n_vocab: usize, vocab: Option<Arc<dyn Vocab>>) -> Result<Chain, ParamError> {
        let mut chain = Chain::new();
        for member in self.members(n_vocab, vocab.as_deref())? {
            match member {
                Member::Step(spec) => chain.push(spec.build()),
                Member::Infill => chain.push(Infill::new(vocab.clone().ok_or_else(infill_needs_vocab)?)),
            }
        }
        Ok(chain)
    }

    /// The chain [`SamplingParams::build`] makes, as descriptions (validated the same way):
    /// what a model-free comparison or a printout needs. DRY's string breakers are resolved
    /// through `vocab` into token sequences. Infill has no plain-data description (its one
    /// parameter is the vocabulary), so a chain listing it is an error here.
    pub fn specs(&self, n_vocab: usize, vocab: Option<&dyn Vocab>) -> Result<Vec<StepSpec>, ParamError> {
        self.members(n_vocab, vocab)?
            .into_iter()
            .map(|member| match member {
                Member::Step(spec) => Ok(spec),
                Member::Infill => Err(ParamError::new(
                    "samplers",
                    "infill",
                    "the infill sampler has no plain-data description (its parameter is the vocabulary)",
                )),
            })
            .collect()
    }

    /// Validates, then lists the chain's members in llama.cpp's common order (the one place
    /// that order is written).
    fn members(&self, n_vocab: usize, vocab: Option<&dyn Vocab>) -> Result<Vec<Member>, ParamError> {
        self.validate(Some(n_vocab))?;
        let mut chain = Vec::new();

        let mut biases = self.logit_bias.clone();
        if self.ignore_eos {
            let v = vocab.ok_or_else(|| {
                ParamError::new("ignore_eos", true, "needs a model vocabulary to know the end-of-generation tokens")
            })?;
            biases.extend((0..n_vocab as Token).filter(|&t| v.is_eog(t)).map(|t| (t, f32::NEG_INFINITY)));
        }
        if !biases.is_empty() {
            chain.push(Member::Step(StepSpec::LogitBias { n_vocab, biases }));
        }

        let seed = self.seed;
        match self.mirostat {
            MirostatMode::Off => {
                let mut use_adaptive = false;
                for &s in &self.samplers {
                    let spec = match s {
                        SamplerType::Penalties => StepSpec::Penalties {
                            n_vocab,
                            last_n: self.penalty_last_n,
                            repeat: self.penalty_repeat,
                            freq: self.penalty_freq,
                            present: self.penalty_present,
                        },
                        SamplerType::Dry => self.dry(n_vocab, vocab),
                        SamplerType::TopNSigma => StepSpec::TopNSigma { n: self.top_n_sigma },
                        SamplerType::TopK => StepSpec::TopK { k: self.top_k },
                        SamplerType::TypicalP => StepSpec::Typical { p: self.typ_p, min_keep: self.min_keep },
                        SamplerType::TopP => StepSpec::TopP { p: self.top_p, min_keep: self.min_keep },
                        SamplerType::MinP => StepSpec::MinP { p: self.min_p, min_keep: self.min_keep },
                        SamplerType::Xtc => StepSpec::Xtc {
                            probability: self.xtc_probability,
                            threshold: self.xtc_threshold,
                            min_keep: self.min_keep,
                            seed,
                        },
                        SamplerType::Temperature => StepSpec::TempExt {
                            t: self.temp,
                            delta: self.dynatemp_range,
                            exponent: self.dynatemp_exponent,
                        },
                        SamplerType::Infill => {
                            vocab.ok_or_else(infill_needs_vocab)?;
                            chain.push(Member::Infill);
                            continue;
                        }
                        SamplerType::AdaptiveP => {
                            use_adaptive = true;
                            continue;
                        }
                    };
                    chain.push(Member::Step(spec));
                }
                if use_adaptive {
                    chain.push(Member::Step(StepSpec::AdaptiveP {
                        target: self.adaptive_target,
                        decay: self.adaptive_decay,
                        seed,
                    }));
                } else {
                    chain.push(Member::Step(StepSpec::Dist { seed }));
                }
            }
            MirostatMode::V1 => {
                chain.push(Member::Step(StepSpec::Temp { t: self.temp }));
                chain.push(Member::Step(StepSpec::Mirostat {
                    n_vocab,
                    seed,
                    tau: self.mirostat_tau,
                    eta: self.mirostat_eta,
                    m: 100,
                }));
            }
            MirostatMode::V2 => {
                chain.push(Member::Step(StepSpec::Temp { t: self.temp }));
                chain.push(Member::Step(StepSpec::MirostatV2 { seed, tau: self.mirostat_tau, eta: self.mirostat_eta }));
            }
        }
        Ok(chain)
    }

    /// DRY: with a vocabulary, its string breakers resolved as `llama_sampler_init_dry` does
    /// (over the vocabulary's own size); without one, no breakers.
    fn dry(&self, n_vocab: usize, vocab: Option<&dyn Vocab>) -> StepSpec {
        let (n_vocab, breakers) = match vocab {
            Some(v) => {
                let strings: Vec<&str> = self.dry_sequence_breakers.iter().map(String::as_str).collect();
                (v.n_vocab(), token_breakers(v, self.dry_multiplier, self.dry_base, self.dry_penalty_last_n, &strings))
            }
            None => (n_vocab, Vec::new()),
        };
        StepSpec::Dry {
            n_vocab,
            multiplier: self.dry_multiplier,
            base: self.dry_base,
            allowed_length: self.dry_allowed_length,
            last_n: self.dry_penalty_last_n,
            breakers,
        }
    }
}

/// One member of the chain [`SamplingParams::build`] makes: a described built-in step, or
/// infill (built from the vocabulary itself).
enum Member {
    Step(StepSpec),
    Infill,
}

fn infill_needs_vocab() -> ParamError {
    ParamError::new("samplers", "infill", "the infill sampler needs a model vocabulary")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_chain_order() {
        let c = SamplingParams::default().build(100, None).unwrap();
        assert_eq!(
            c.describe(),
            "?penalties -> ?dry -> ?top-n-sigma -> top-k -> ?typical -> top-p -> min-p -> ?xtc -> temp-ext -> dist"
        );
    }

    #[test]
    fn mirostat_branch() {
        let p = SamplingParams { mirostat: MirostatMode::V2, logit_bias: vec![(3, 1.0)], ..Default::default() };
        assert_eq!(p.build(10, None).unwrap().describe(), "logit-bias -> temp -> mirostat-v2");
    }

    #[test]
    fn validation_names_the_field() {
        let bad = |p: SamplingParams| p.validate(Some(10)).unwrap_err().field;
        assert_eq!(bad(SamplingParams { penalty_repeat: 0.0, ..Default::default() }), "penalty_repeat");
        assert_eq!(bad(SamplingParams { penalty_repeat: f32::NAN, ..Default::default() }), "penalty_repeat");
        assert_eq!(bad(SamplingParams { penalty_freq: f32::INFINITY, ..Default::default() }), "penalty_freq");
        assert_eq!(bad(SamplingParams { penalty_last_n: -1, ..Default::default() }), "penalty_last_n");
        assert_eq!(bad(SamplingParams { top_p: 1.5, ..Default::default() }), "top_p");
        assert_eq!(bad(SamplingParams { temp: f32::NAN, ..Default::default() }), "temp");
        assert_eq!(bad(SamplingParams { adaptive_decay: 1.0, ..Default::default() }), "adaptive_decay");
        assert_eq!(bad(SamplingParams { logit_bias: vec![(10, 1.0)], ..Default::default() }), "logit_bias");
        assert_eq!(bad(SamplingParams { logit_bias: vec![(1, f32::NAN)], ..Default::default() }), "logit_bias");
        assert!(SamplingParams { logit_bias: vec![(1, f32::NEG_INFINITY)], ..Default::default() }
            .validate(Some(10))
            .is_ok());
        assert!(MirostatMode::from_i32(3).is_err());
    }

    #[test]
    fn specs_are_the_built_chain() {
        let p = SamplingParams { logit_bias: vec![(3, 1.0)], top_k: 7, ..Default::default() };
        let specs = p.specs(10, None).unwrap();
        assert_eq!(specs[0], StepSpec::LogitBias { n_vocab: 10, biases: vec![(3, 1.0)] });
        assert_eq!(specs[4], StepSpec::TopK { k: 7 });
        let mut from_specs = Chain::new();
        for s in &specs {
            from_specs.push(s.build());
        }
        assert_eq!(from_specs.describe(), p.build(10, None).unwrap().describe());
        let p = SamplingParams { samplers: vec![SamplerType::Infill], ..Default::default() };
        assert_eq!(p.specs(10, None).unwrap_err().field, "samplers");
    }

    #[test]
    fn infill_and_ignore_eos_need_a_vocab() {
        let p = SamplingParams { samplers: vec![SamplerType::Infill], ..Default::default() };
        assert_eq!(p.build(10, None).unwrap_err().field, "samplers");
        let p = SamplingParams { ignore_eos: true, ..Default::default() };
        assert_eq!(p.build(10, None).unwrap_err().field, "ignore_eos");
    }
}
