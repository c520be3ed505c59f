//! The sampling fields of a request (OpenAI's, llama.cpp's and vLLM's names) applied over the
//! server's defaults to give one [`SamplingParams`]. Ranges are OpenAI's for OpenAI fields and
//! llama.cpp's hard limits otherwise; anything outside is a 400 naming the field.

use nucleus_runtime::Model;
use nucleus_sampler::{MirostatMode, ParamError, SamplerType, SamplingParams, Token, DEFAULT_SEED};
use serde_json::Value;

use crate::errors::ApiError;
use crate::fields::{check_f32, check_int, type_name, Fields};

const BIG: f32 = f32::MAX;
const I32: i64 = i32::MAX as i64;

/// Applies the request's sampling fields to a copy of `defaults`.
pub fn parse(f: &Fields<'_>, defaults: &SamplingParams, model: &dyn Model) -> Result<SamplingParams, ApiError> {
    let mut p = defaults.clone();
    macro_rules! float {
        ($name:expr, $lo:expr, $hi:expr, $field:ident) => {
            if let Some(v) = f.f32_in($name, $lo, $hi)? {
                p.$field = v;
            }
        };
    }
    macro_rules! int {
        ($name:expr, $lo:expr, $hi:expr, $field:ident) => {
            if let Some(v) = f.int_in($name, $lo, $hi)? {
                p.$field = v as _;
            }
        };
    }
    float!("temperature", 0.0, 2.0, temp);
    float!("top_p", 0.0, 1.0, top_p);
    float!("presence_penalty", -2.0, 2.0, penalty_present);
    float!("frequency_penalty", -2.0, 2.0, penalty_freq);
    if let Some(s) = f.int_in("seed", -1, u32::MAX as i64)? {
        p.seed = if s < 0 { DEFAULT_SEED } else { s as u32 };
    }
    int!("top_k", -1, I32, top_k);
    float!("min_p", 0.0, 1.0, min_p);
    float!("typical_p", 0.0, 1.0, typ_p);
    if let Some(name) = f.first_of(&["repeat_penalty", "repetition_penalty"]) {
        float!(name, 0.0, BIG, penalty_repeat);
        if p.penalty_repeat <= 0.0 {
            return Err(ApiError::invalid_value(name, "must be > 0 (1.0 disables)"));
        }
    }
    int!("repeat_last_n", 0, I32, penalty_last_n);
    float!("dry_multiplier", 0.0, BIG, dry_multiplier);
    float!("dry_base", -BIG, BIG, dry_base);
    int!("dry_allowed_length", 0, I32, dry_allowed_length);
    int!("dry_penalty_last_n", 0, I32, dry_penalty_last_n);
    if let Some(v) = f.get("dry_sequence_breakers") {
        let list = match v {
            Value::Array(a) if !a.is_empty() => a
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| ApiError::wrong_type("dry_sequence_breakers", "an array of strings"))?,
            Value::Array(_) => {
                return Err(ApiError::invalid_value("dry_sequence_breakers", "must be a non-empty array of strings"))
            }
            _ => return Err(ApiError::wrong_type("dry_sequence_breakers", "an array of strings")),
        };
        p.dry_sequence_breakers = list;
    }
    float!("xtc_probability", 0.0, 1.0, xtc_probability);
    float!("xtc_threshold", 0.0, 1.0, xtc_threshold);
    if let Some(m) = f.int_in("mirostat", 0, 2)? {
        p.mirostat = MirostatMode::from_i32(m as i32).map_err(param_error)?;
    }
    float!("mirostat_tau", 0.0, BIG, mirostat_tau);
    float!("mirostat_eta", 0.0, BIG, mirostat_eta);
    float!("top_n_sigma", -BIG, BIG, top_n_sigma);
    float!("dynatemp_range", 0.0, BIG, dynatemp_range);
    float!("dynatemp_exponent", 0.0, BIG, dynatemp_exponent);
    float!("adaptive_target", -BIG, 1.0, adaptive_target);
    float!("adaptive_decay", 0.0, 0.99, adaptive_decay);
    int!("min_keep", 0, I32, min_keep);
    if let Some(b) = f.bool("ignore_eos")? {
        p.ignore_eos = b;
    }
    if let Some(v) = f.get("samplers") {
        p.samplers = parse_samplers(v)?;
    }
    if let Some(v) = f.get("logit_bias") {
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
fn parse_samplers(v: &Value) -> Result<Vec<SamplerType>, ApiError> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|x| {
                let name = x.as_str().ok_or_else(|| ApiError::wrong_type("samplers", "an array of sampler names"))?;
                SamplerType::from_name(name).ok_or_else(|| {
                    ApiError::invalid_value(
                        "samplers",
                        format!("unknown sampler '{name}'; known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature, infill, adaptive_p"),
                    )
                })
            })
            .collect(),
        Value::String(s) => SamplerType::parse_codes(s).map_err(|e| {
            ApiError::invalid_value("samplers", format!("unknown sampler code '{}'; known codes: e d s k y p m x t i a", e.value))
        }),
        other => Err(ApiError::wrong_type("samplers", &format!("an array of names or a string of codes, not {}", type_name(other)))),
    }
}

/// `logit_bias` in OpenAI's form (`{"token id": bias}`) or llama.cpp's (`[[id, bias]]`; a text
/// key biases each of its tokens; `false` bans). Biases are in [-100, 100]; ids must exist.
fn parse_logit_bias(v: &Value, model: &dyn Model) -> Result<Vec<(Token, f32)>, ApiError> {
    let n_vocab = model.n_vocab();
    let mut out = Vec::new();
    let mut add = |key: &Value, bias: &Value| -> Result<(), ApiError> {
        let b = match bias {
            Value::Bool(false) => f32::NEG_INFINITY,
            Value::Number(n) => check_f32("logit_bias", n.as_f64().unwrap_or(f64::NAN), -100.0, 100.0)?,
            _ => {
                return Err(ApiError::wrong_type(
                    "logit_bias",
                    "a number in [-100, 100] (or false to ban) for each token",
                ))
            }
        };
        let ids: Vec<Token> = match key {
            Value::Number(_) => vec![check_int("logit_bias", key, 0, n_vocab as i64 - 1)? as Token],
            Value::String(s) => match s.trim().parse::<i64>() {
                Ok(id) => vec![check_int("logit_bias", &Value::from(id), 0, n_vocab as i64 - 1)? as Token],
                Err(_) => {
                    let t = model.vocab().tokenize(s.as_bytes());
                    if t.is_empty() {
                        return Err(ApiError::invalid_value(
                            "logit_bias",
                            format!("key {s:?} is neither a token id nor text that tokenizes"),
                        ));
                    }
                    t
                }
            },
            _ => return Err(ApiError::wrong_type("logit_bias", "an object of token id -> bias")),
        };
        out.extend(ids.into_iter().map(|t| (t, b)));
        Ok(())
    };
    match v {
        Value::Object(m) => {
            for (k, b) in m {
                add(&Value::String(k.clone()), b)?;
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Array(pair) if pair.len() == 2 => add(&pair[0], &pair[1])?,
                    _ => {
                        return Err(ApiError::wrong_type("logit_bias", "an object, or an array of [token, bias] pairs"))
                    }
                }
            }
        }
        other => {
            return Err(ApiError::wrong_type(
                "logit_bias",
                &format!("an object of token id -> bias, not {}", type_name(other)),
            ))
        }
    }
    Ok(out)
}
