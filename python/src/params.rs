//! Sampling parameters from a name → value map, shared by the Python and Node bindings (the
//! Node crate includes this file): each language turns its keyword arguments or object into a
//! `serde_json` map, and this module maps llama.cpp's `common_params_sampling` field names onto
//! [`SamplingParams`]. Only types and shapes are checked here; ranges are checked by
//! [`SamplingParams::validate`], so every binding refuses exactly what the Rust API refuses.

use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams, Token, DEFAULT_SEED};
use serde_json::{Map, Value};

/// A parameter that cannot be read: the field it names and why.
#[derive(Debug)]
pub(crate) struct BadParam {
    /// The field name as the caller spelled it (snake_case).
    pub(crate) field: String,
    /// What is wrong, naming the field.
    pub(crate) message: String,
    /// True when the field does not exist at all (a `TypeError` in Python).
    pub(crate) unknown: bool,
}

impl BadParam {
    fn new(field: &str, message: String) -> Self {
        BadParam { field: field.to_string(), message, unknown: false }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "None/null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a dict/object",
    }
}

/// A number that fits an `f32`; the strings "inf", "-inf" and "nan" stand for the non-finite
/// floats (JSON has none), which [`SamplingParams::validate`] then judges.
fn float(field: &str, v: &Value) -> Result<f32, BadParam> {
    match v {
        Value::Number(n) => n.as_f64().map(|x| x as f32),
        Value::String(s) => match s.as_str() {
            "inf" => Some(f32::INFINITY),
            "-inf" => Some(f32::NEG_INFINITY),
            "nan" => Some(f32::NAN),
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| BadParam::new(field, format!("`{field}` must be a number, not {}", kind(v))))
}

/// An integer in `[lo, hi]`.
fn int(field: &str, v: &Value, lo: i64, hi: i64) -> Result<i64, BadParam> {
    let x = v.as_i64().ok_or_else(|| BadParam::new(field, format!("`{field}` must be an integer, not {v}")))?;
    if x < lo || x > hi {
        return Err(BadParam::new(field, format!("`{field}` = {x} is out of range [{lo}, {hi}]")));
    }
    Ok(x)
}

fn i32_of(field: &str, v: &Value) -> Result<i32, BadParam> {
    Ok(int(field, v, i32::MIN as i64, i32::MAX as i64)? as i32)
}

/// `samplers`: a `--sampling-seq` string of codes (`"kypmxt"`), a `;`-separated list of names
/// (`"top_k;min_p;temperature"`), or a list of names.
fn samplers(v: &Value) -> Result<Vec<SamplerType>, BadParam> {
    let err = |e: nucleus_sampler::ParamError| BadParam::new("samplers", format!("`samplers`: {e}"));
    match v {
        Value::String(s) if s.contains(';') || SamplerType::from_name(s).is_some() => {
            SamplerType::parse_names(s).map_err(err)
        }
        Value::String(s) => SamplerType::parse_codes(s).map_err(err),
        Value::Array(items) => items
            .iter()
            .map(|x| match x {
                Value::String(name) => SamplerType::from_name(name).ok_or_else(|| {
                    BadParam::new(
                        "samplers",
                        format!(
                            "`samplers`: unknown sampler {name:?} (known: penalties, dry, top_n_sigma, top_k, typ_p, \
                             top_p, min_p, xtc, temperature, infill, adaptive_p)"
                        ),
                    )
                }),
                other => Err(BadParam::new("samplers", format!("`samplers` must hold names, not {}", kind(other)))),
            })
            .collect(),
        other => Err(BadParam::new(
            "samplers",
            format!("`samplers` must be a list of names or a string of codes, not {}", kind(other)),
        )),
    }
}

/// One logit bias: a number (`-inf` bans the token) or `false` (bans it, as llama-server reads).
fn bias(v: &Value) -> Result<f32, BadParam> {
    match v {
        Value::Bool(false) => Ok(f32::NEG_INFINITY),
        _ => float("logit_bias", v),
    }
}

fn token(v: &Value) -> Result<Token, BadParam> {
    let t = match v {
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => v.as_i64(),
    }
    .ok_or_else(|| BadParam::new("logit_bias", format!("`logit_bias`: {v} is not a token id")))?;
    Token::try_from(t).map_err(|_| BadParam::new("logit_bias", format!("`logit_bias`: token id {t} is out of range")))
}

/// `logit_bias`: a map `{token: bias}` or a list of `[token, bias]` pairs.
fn logit_bias(v: &Value) -> Result<Vec<(Token, f32)>, BadParam> {
    match v {
        Value::Object(m) => m.iter().map(|(k, b)| Ok((token(&Value::String(k.clone()))?, bias(b)?))).collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Array(pair) if pair.len() == 2 => Ok((token(&pair[0])?, bias(&pair[1])?)),
                _ => Err(BadParam::new("logit_bias", "`logit_bias` pairs must be [token, bias]".to_string())),
            })
            .collect(),
        other => Err(BadParam::new(
            "logit_bias",
            format!("`logit_bias` must be a dict of token -> bias or a list of pairs, not {}", kind(other)),
        )),
    }
}

fn strings(field: &str, v: &Value) -> Result<Vec<String>, BadParam> {
    let bad = || BadParam::new(field, format!("`{field}` must be a list of strings"));
    v.as_array().ok_or_else(bad)?.iter().map(|x| x.as_str().map(str::to_string).ok_or_else(bad)).collect()
}

/// Sets one field of `p`.
fn apply(p: &mut SamplingParams, field: &str, v: &Value) -> Result<(), BadParam> {
    match field {
        "seed" => {
            let s = int(field, v, -1, u32::MAX as i64)?;
            p.seed = if s < 0 { DEFAULT_SEED } else { s as u32 };
        }
        "temp" => p.temp = float(field, v)?,
        "top_k" => p.top_k = i32_of(field, v)?,
        "top_p" => p.top_p = float(field, v)?,
        "min_p" => p.min_p = float(field, v)?,
        "typ_p" => p.typ_p = float(field, v)?,
        "xtc_probability" => p.xtc_probability = float(field, v)?,
        "xtc_threshold" => p.xtc_threshold = float(field, v)?,
        "penalty_last_n" => p.penalty_last_n = i32_of(field, v)?,
        "penalty_repeat" => p.penalty_repeat = float(field, v)?,
        "penalty_freq" => p.penalty_freq = float(field, v)?,
        "penalty_present" => p.penalty_present = float(field, v)?,
        "dry_multiplier" => p.dry_multiplier = float(field, v)?,
        "dry_base" => p.dry_base = float(field, v)?,
        "dry_allowed_length" => p.dry_allowed_length = i32_of(field, v)?,
        "dry_penalty_last_n" => p.dry_penalty_last_n = i32_of(field, v)?,
        "dry_sequence_breakers" => p.dry_sequence_breakers = strings(field, v)?,
        "mirostat" => {
            p.mirostat = MirostatMode::from_i32(i32_of(field, v)?).map_err(|e| BadParam::new(field, e.to_string()))?
        }
        "mirostat_tau" => p.mirostat_tau = float(field, v)?,
        "mirostat_eta" => p.mirostat_eta = float(field, v)?,
        "top_n_sigma" => p.top_n_sigma = float(field, v)?,
        "dynatemp_range" => p.dynatemp_range = float(field, v)?,
        "dynatemp_exponent" => p.dynatemp_exponent = float(field, v)?,
        "min_keep" => p.min_keep = int(field, v, 0, i32::MAX as i64)? as usize,
        "samplers" => p.samplers = samplers(v)?,
        "logit_bias" => p.logit_bias = logit_bias(v)?,
        "adaptive_target" => p.adaptive_target = float(field, v)?,
        "adaptive_decay" => p.adaptive_decay = float(field, v)?,
        "ignore_eos" => {
            p.ignore_eos =
                v.as_bool().ok_or_else(|| BadParam::new(field, format!("`{field}` must be a boolean, not {v}")))?
        }
        _ => {
            return Err(BadParam {
                field: field.to_string(),
                message: format!("unknown sampling parameter `{field}`"),
                unknown: true,
            })
        }
    }
    Ok(())
}

/// llama.cpp's defaults overridden by `fields` (snake_case names; a `None`/`null` value keeps
/// the default), then validated for a vocabulary of `n_vocab` tokens. Without a model
/// vocabulary, DRY's string breakers cannot become tokens, so DRY must be given
/// `dry_sequence_breakers=[]` explicitly rather than silently running without them.
pub(crate) fn parse(fields: &Map<String, Value>, n_vocab: usize, has_vocab: bool) -> Result<SamplingParams, BadParam> {
    let mut p = SamplingParams::default();
    for (k, v) in fields {
        if !v.is_null() {
            apply(&mut p, k, v)?;
        }
    }
    if !has_vocab && p.dry_multiplier > 0.0 && !p.dry_sequence_breakers.is_empty() {
        return Err(BadParam::new(
            "dry_sequence_breakers",
            "`dry_sequence_breakers`: a sampler without a model vocabulary cannot turn breaker strings into tokens; \
             pass dry_sequence_breakers=[] to run DRY without breakers"
                .to_string(),
        ));
    }
    p.validate(Some(n_vocab)).map_err(|e| BadParam::new(e.field, e.to_string()))?;
    Ok(p)
}
