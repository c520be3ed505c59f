//! The sampling fields of a request (OpenAI's, llama.cpp's and vLLM's names) applied over the
//! server's defaults to give one [`SamplingParams`]. Ranges are OpenAI's for OpenAI fields and
//! llama.cpp's hard limits otherwise; anything outside is a 400 naming the field.

use nucleus_runtime::Model;
use nucleus_sampler::{MirostatMode, ParamError, SamplerType, SamplingParams, Token, DEFAULT_SEED};
use serde_json::Value;

use crate::body::shapes::{Bias, BiasKey, Breakers, LogitBias, Samplers};
use crate::body::Common;
use crate::errors::ApiError;
use crate::fields::{check_f32, check_int, f32_in, int_in};

const BIG: f32 = f32::MAX;
const I32: i64 = i32::MAX as i64;

/// Applies the request's sampling fields to a copy of `defaults`.
pub fn parse(c: &Common, defaults: &SamplingParams, model: &dyn Model) -> Result<SamplingParams, ApiError> {
    let mut p = defaults.clone();
    macro_rules! float {
        ($name:ident, $lo:expr, $hi:expr, $field:ident) => {
            if let Some(v) = f32_in(stringify!($name), c.$name, $lo, $hi)? {
                p.$field = v;
            }
        };
    }
    macro_rules! int {
        ($name:ident, $lo:expr, $hi:expr, $field:ident) => {
            if let Some(v) = int_in(stringify!($name), c.$name.as_ref(), $lo, $hi)? {
                p.$field = v as _;
            }
        };
    }
    float!(temperature, 0.0, 2.0, temp);
    float!(top_p, 0.0, 1.0, top_p);
    float!(presence_penalty, -2.0, 2.0, penalty_present);
    float!(frequency_penalty, -2.0, 2.0, penalty_freq);
    if let Some(s) = int_in("seed", c.seed.as_ref(), -1, u32::MAX as i64)? {
        p.seed = if s < 0 { DEFAULT_SEED } else { s as u32 };
    }
    int!(top_k, -1, I32, top_k);
    float!(min_p, 0.0, 1.0, min_p);
    float!(typical_p, 0.0, 1.0, typ_p);
    let repeat = [("repeat_penalty", c.repeat_penalty), ("repetition_penalty", c.repetition_penalty)];
    if let Some((name, v)) = repeat.into_iter().find(|(_, v)| v.is_some()) {
        if let Some(v) = f32_in(name, v, 0.0, BIG)? {
            p.penalty_repeat = v;
        }
        if p.penalty_repeat <= 0.0 {
            return Err(ApiError::invalid_value(name, "must be > 0 (1.0 disables)"));
        }
    }
    int!(repeat_last_n, 0, I32, penalty_last_n);
    float!(dry_multiplier, 0.0, BIG, dry_multiplier);
    float!(dry_base, -BIG, BIG, dry_base);
    int!(dry_allowed_length, 0, I32, dry_allowed_length);
    int!(dry_penalty_last_n, 0, I32, dry_penalty_last_n);
    if let Some(Breakers(list)) = &c.dry_sequence_breakers {
        if list.is_empty() {
            return Err(ApiError::invalid_value("dry_sequence_breakers", "must be a non-empty array of strings"));
        }
        p.dry_sequence_breakers = list.clone();
    }
    float!(xtc_probability, 0.0, 1.0, xtc_probability);
    float!(xtc_threshold, 0.0, 1.0, xtc_threshold);
    if let Some(m) = int_in("mirostat", c.mirostat.as_ref(), 0, 2)? {
        p.mirostat = MirostatMode::from_i32(m as i32).map_err(param_error)?;
    }
    float!(mirostat_tau, 0.0, BIG, mirostat_tau);
    float!(mirostat_eta, 0.0, BIG, mirostat_eta);
    float!(top_n_sigma, -BIG, BIG, top_n_sigma);
    float!(dynatemp_range, 0.0, BIG, dynatemp_range);
    float!(dynatemp_exponent, 0.0, BIG, dynatemp_exponent);
    float!(adaptive_target, -BIG, 1.0, adaptive_target);
    float!(adaptive_decay, 0.0, 0.99, adaptive_decay);
    int!(min_keep, 0, I32, min_keep);
    if let Some(b) = c.ignore_eos {
        p.ignore_eos = b;
    }
    if let Some(v) = &c.samplers {
        p.samplers = parse_samplers(v)?;
    }
    if let Some(v) = &c.logit_bias {
        p.logit_bias = parse_logit_bias(v, model)?;
    }
    Ok(p)
}

/// A sampler-chain error from `SamplingParams::validate`, named as the request names it.
pub fn param_error(e: ParamError) -> ApiError {
    let name = match e.field {
        "temp" => "temperature",
        "typ_p" => "typical_p",
        "penalty_repeat" => "repeat_penalty",
        "penalty_last_n" => "repeat_last_n",
        "penalty_freq" => "frequency_penalty",
        "penalty_present" => "presence_penalty",
        "sampling_seq" => "samplers",
        other => other,
    };
    ApiError::invalid_value(name, format!("{} = {}: {}", name, e.value, e.allowed))
}

/// `samplers`: an array of names (`["top_k", "temperature"]`) or a string of one-letter codes
/// (`"kt"`), as llama-server takes it. Unknown names are errors (llama.cpp only warns).
fn parse_samplers(v: &Samplers) -> Result<Vec<SamplerType>, ApiError> {
    match v {
        Samplers::Names(names) => names
            .iter()
            .map(|name| {
                SamplerType::from_name(name).ok_or_else(|| {
                    ApiError::invalid_value(
                        "samplers",
                        format!("unknown sampler '{name}'; known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature, infill, adaptive_p"),
                    )
                })
            })
            .collect(),
        Samplers::Codes(s) => SamplerType::parse_codes(s).map_err(|e| {
            ApiError::invalid_value("samplers", format!("unknown sampler code '{}'; known codes: e d s k y p m x t i a", e.value))
        }),
    }
}

/// `logit_bias` in OpenAI's form (`{"token id": bias}`) or llama.cpp's (`[[id, bias]]`; a text
/// key biases each of its tokens; `false` bans). Biases are in [-100, 100]; ids must exist.
fn parse_logit_bias(v: &LogitBias, model: &dyn Model) -> Result<Vec<(Token, f32)>, ApiError> {
    let n_vocab = model.n_vocab();
    let check_id = |id: &Value| check_int("logit_bias", id, 0, n_vocab as i64 - 1).map(|t| t as Token);
    let text = |s: &str| -> Result<Vec<Token>, ApiError> {
        let t = model.vocab().tokenize(s.as_bytes());
        if t.is_empty() {
            return Err(ApiError::invalid_value(
                "logit_bias",
                format!("key {s:?} is neither a token id nor text that tokenizes"),
            ));
        }
        Ok(t)
    };
    let mut out = Vec::new();
    let mut add = |ids: Vec<Token>, bias: &Bias| -> Result<(), ApiError> {
        let b = match bias {
            Bias::Ban => f32::NEG_INFINITY,
            Bias::Add(n) => check_f32("logit_bias", n.0, -100.0, 100.0)?,
        };
        out.extend(ids.into_iter().map(|t| (t, b)));
        Ok(())
    };
    match v {
        LogitBias::Map(entries) => {
            for (k, b) in entries {
                // The bias is checked before the key, as the pairs are read.
                if let Bias::Add(n) = b {
                    check_f32("logit_bias", n.0, -100.0, 100.0)?;
                }
                let ids = match k.trim().parse::<i64>() {
                    Ok(id) => vec![check_id(&Value::from(id))?],
                    Err(_) => text(k)?,
                };
                add(ids, b)?;
            }
        }
        LogitBias::Pairs(pairs) => {
            for (k, b) in pairs {
                if let Bias::Add(n) = b {
                    check_f32("logit_bias", n.0, -100.0, 100.0)?;
                }
                let ids = match k {
                    BiasKey::Id(id) => vec![check_id(&id.0.value())?],
                    BiasKey::Text(s) => match s.trim().parse::<i64>() {
                        Ok(id) => vec![check_id(&Value::from(id))?],
                        Err(_) => text(s)?,
                    },
                };
                add(ids, b)?;
            }
        }
    }
    Ok(out)
}
