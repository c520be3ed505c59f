//! The sampling flags shared by `sample`, `generate` and `serve`, with llama.cpp's names,
//! meanings and defaults, turned into a validated [`SamplingParams`].

use clap::Args;
use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams, Token, DEFAULT_SEED};

/// llama.cpp's sampling command-line flags.
#[derive(Args, Debug, Clone)]
pub struct SamplingArgs {
    /// RNG seed (-1 = random)
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub seed: i64,
    /// Temperature (<= 0: always the most likely token)
    #[arg(long, default_value_t = 0.8, allow_negative_numbers = true)]
    pub temp: f32,
    /// Top-k sampling (<= 0 disables)
    #[arg(long, default_value_t = 40, allow_negative_numbers = true)]
    pub top_k: i32,
    /// Top-p sampling (1.0 disables)
    #[arg(long, default_value_t = 0.95)]
    pub top_p: f32,
    /// Min-p sampling (0.0 disables)
    #[arg(long, default_value_t = 0.05)]
    pub min_p: f32,
    /// Locally typical sampling (1.0 disables)
    #[arg(long = "typical", default_value_t = 1.0)]
    pub typ_p: f32,
    /// Top-n-sigma sampling (<= 0 disables)
    #[arg(long, default_value_t = -1.0, allow_negative_numbers = true)]
    pub top_n_sigma: f32,
    /// XTC probability (0.0 disables)
    #[arg(long, default_value_t = 0.0)]
    pub xtc_probability: f32,
    /// XTC threshold (> 0.5 disables)
    #[arg(long, default_value_t = 0.1)]
    pub xtc_threshold: f32,
    /// Last n tokens considered for penalties (0 disables)
    #[arg(long, default_value_t = 64, allow_negative_numbers = true)]
    pub repeat_last_n: i32,
    /// Repeat penalty (1.0 disables)
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub repeat_penalty: f32,
    /// Presence penalty (0.0 disables)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub presence_penalty: f32,
    /// Frequency penalty (0.0 disables)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub frequency_penalty: f32,
    /// DRY multiplier (0.0 disables)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub dry_multiplier: f32,
    /// DRY base
    #[arg(long, default_value_t = 1.75, allow_negative_numbers = true)]
    pub dry_base: f32,
    /// DRY allowed length
    #[arg(long, default_value_t = 2, allow_negative_numbers = true)]
    pub dry_allowed_length: i32,
    /// DRY window (0 disables)
    #[arg(long, default_value_t = 64, allow_negative_numbers = true)]
    pub dry_penalty_last_n: i32,
    /// DRY sequence breaker (repeatable; `none` clears the list)
    #[arg(long = "dry-sequence-breaker")]
    pub dry_sequence_breaker: Vec<String>,
    /// Dynamic temperature range (0.0 disables)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub dynatemp_range: f32,
    /// Dynamic temperature exponent
    #[arg(long = "dynatemp-exp", default_value_t = 1.0, allow_negative_numbers = true)]
    pub dynatemp_exponent: f32,
    /// Mirostat (0 off, 1 v1, 2 v2)
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub mirostat: i32,
    /// Mirostat learning rate (eta)
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    pub mirostat_lr: f32,
    /// Mirostat target entropy (tau)
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    pub mirostat_ent: f32,
    /// Adaptive-p target probability (negative disables)
    #[arg(long, default_value_t = -1.0, allow_negative_numbers = true)]
    pub adaptive_target: f32,
    /// Adaptive-p decay, in [0, 0.99]
    #[arg(long, default_value_t = 0.9, allow_negative_numbers = true)]
    pub adaptive_decay: f32,
    /// Minimum candidates kept by top-p, min-p, typical and XTC
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub min_keep: i32,
    /// Sampler order, ';'-separated names (e.g. "top_k;top_p;temperature")
    #[arg(long)]
    pub samplers: Option<String>,
    /// Sampler order as one-letter codes (e.g. "edskypmxt")
    #[arg(long)]
    pub sampling_seq: Option<String>,
    /// Logit bias TOKEN(+|-)BIAS, e.g. 15043+1 or 15043-inf (repeatable)
    #[arg(long = "logit-bias", allow_hyphen_values = true)]
    pub logit_bias: Vec<String>,
}

/// Parses `TOKEN(+|-)BIAS` (llama.cpp's `--logit-bias` syntax; the bias may be `inf`).
pub fn parse_logit_bias(s: &str) -> Result<(Token, f32), String> {
    let err = || format!("invalid --logit-bias `{s}`: expected TOKEN+BIAS or TOKEN-BIAS, e.g. 15043+1 or 15043-inf");
    let pos = s.char_indices().skip(1).find(|&(_, c)| c == '+' || c == '-').map(|(i, _)| i).ok_or_else(err)?;
    let tok: Token = s[..pos].trim().parse().map_err(|_| err())?;
    let bias: f32 = s[pos..].trim().parse().map_err(|_| err())?;
    if bias.is_nan() {
        return Err(err());
    }
    Ok((tok, bias))
}

impl SamplingArgs {
    /// Builds validated parameters; `has_vocab` says whether string DRY breakers can be resolved.
    pub fn to_params(&self, has_vocab: bool) -> Result<SamplingParams, String> {
        let seed = match self.seed {
            -1 => DEFAULT_SEED,
            s if (0..=u32::MAX as i64).contains(&s) => s as u32,
            s => return Err(format!("invalid --seed {s}: expected -1 (random) or 0..=4294967295")),
        };
        if self.min_keep < 0 {
            return Err(format!("invalid --min-keep {}: must be >= 0", self.min_keep));
        }
        let mut p = SamplingParams {
            seed,
            min_keep: self.min_keep as usize,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            xtc_probability: self.xtc_probability,
            xtc_threshold: self.xtc_threshold,
            typ_p: self.typ_p,
            temp: self.temp,
            dynatemp_range: self.dynatemp_range,
            dynatemp_exponent: self.dynatemp_exponent,
            penalty_last_n: self.repeat_last_n,
            penalty_repeat: self.repeat_penalty,
            penalty_freq: self.frequency_penalty,
            penalty_present: self.presence_penalty,
            dry_multiplier: self.dry_multiplier,
            dry_base: self.dry_base,
            dry_allowed_length: self.dry_allowed_length,
            dry_penalty_last_n: self.dry_penalty_last_n,
            adaptive_target: self.adaptive_target,
            adaptive_decay: self.adaptive_decay,
            mirostat: MirostatMode::from_i32(self.mirostat).map_err(|e| e.to_string())?,
            mirostat_tau: self.mirostat_ent,
            mirostat_eta: self.mirostat_lr,
            top_n_sigma: self.top_n_sigma,
            ..Default::default()
        };
        if !self.dry_sequence_breaker.is_empty() {
            let mut list = Vec::new();
            for b in &self.dry_sequence_breaker {
                if b == "none" {
                    list.clear();
                } else {
                    list.push(b.clone());
                }
            }
            if !list.is_empty() && !has_vocab {
                return Err("--dry-sequence-breaker with a string needs a model vocabulary; without one only `none` is meaningful".into());
            }
            p.dry_sequence_breakers = list;
        }
        if let Some(s) = &self.samplers {
            p.samplers = SamplerType::parse_names(s).map_err(|e| e.to_string())?;
        }
        if let Some(s) = &self.sampling_seq {
            p.samplers = SamplerType::parse_codes(s).map_err(|e| e.to_string())?;
        }
        for b in &self.logit_bias {
            p.logit_bias.push(parse_logit_bias(b)?);
        }
        p.validate(None).map_err(|e| e.to_string())?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logit_bias_syntax() {
        assert_eq!(parse_logit_bias("15043+1").unwrap(), (15043, 1.0));
        assert_eq!(parse_logit_bias("15043-0.5").unwrap(), (15043, -0.5));
        assert_eq!(parse_logit_bias("7-inf").unwrap(), (7, f32::NEG_INFINITY));
        assert!(parse_logit_bias("abc+1").is_err());
        assert!(parse_logit_bias("12").is_err());
        assert!(parse_logit_bias("12+nan").is_err());
    }
}
