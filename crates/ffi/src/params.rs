//! `params_json` to [`SamplingParams`]: one JSON object with llama.cpp's
//! `common_params_sampling` field names. Absent fields keep llama.cpp's defaults; an unknown
//! field, a value of the wrong type or one out of range is an error naming the field.

use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams, Token, DEFAULT_SEED};
use serde_json::{Map, Value};

/// Every field `params_json` may hold.
const FIELDS: &[&str] = &[
    "seed",
    "temp",
    "top_k",
    "top_p",
    "min_p",
    "typ_p",
    "xtc_probability",
    "xtc_threshold",
    "penalty_last_n",
    "penalty_repeat",
    "penalty_freq",
    "penalty_present",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "dry_penalty_last_n",
    "dry_sequence_breakers",
    "mirostat",
    "mirostat_tau",
    "mirostat_eta",
    "top_n_sigma",
    "dynatemp_range",
    "dynatemp_exponent",
    "min_keep",
    "samplers",
    "logit_bias",
    "adaptive_target",
    "adaptive_decay",
    "ignore_eos",
];

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON number that fits an `f32` (JSON numbers are always finite).
fn float(field: &str, v: &Value) -> Result<f32, String> {
    let x = v.as_f64().ok_or_else(|| format!("`{field}` must be a number, not {}", type_name(v)))?;
    let f = x as f32;
    if !f.is_finite() {
        return Err(format!("`{field}` = {x} is out of range for a 32-bit float"));
    }
    Ok(f)
}

/// A JSON integer in `[lo, hi]`.
fn int(field: &str, v: &Value, lo: i64, hi: i64) -> Result<i64, String> {
    let x = v.as_i64().ok_or_else(|| match v {
        Value::Number(n) => format!("`{field}` must be an integer, not {n}"),
        other => format!("`{field}` must be an integer, not {}", type_name(other)),
    })?;
    if x < lo || x > hi {
        return Err(format!("`{field}` = {x} is out of range [{lo}, {hi}]"));
    }
    Ok(x)
}

/// `samplers`: a string of `--sampling-seq` codes (`"kypmxt"`) or an array of names.
fn samplers(v: &Value) -> Result<Vec<SamplerType>, String> {
    match v {
        Value::String(s) => SamplerType::parse_codes(s)
            .map_err(|e| format!("`samplers`: unknown sampler code '{}'; known codes: e d s k y p m x t i a", e.value)),
        Value::Array(items) => items
            .iter()
            .map(|x| {
                let name = x.as_str().ok_or_else(|| {
                    format!("`samplers` must be an array of sampler names; found {}", type_name(x))
                })?;
                SamplerType::from_name(name).ok_or_else(|| {
                    format!(
                        "`samplers`: unknown sampler {name:?}; known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, \
                         min_p, xtc, temperature, infill, adaptive_p"
                    )
                })
            })
            .collect(),
        other => Err(format!("`samplers` must be a string of codes or an array of names, not {}", type_name(other))),
    }
}

/// One bias: a number, or `"-inf"` / `false` to ban the token (as llama-server accepts).
fn bias(v: &Value) -> Result<f32, String> {
    match v {
        Value::Bool(false) => Ok(f32::NEG_INFINITY),
        Value::String(s) if matches!(s.to_ascii_lowercase().as_str(), "-inf" | "-infinity") => Ok(f32::NEG_INFINITY),
        Value::Number(_) => float("logit_bias", v),
        other => Err(format!("`logit_bias`: a bias must be a number, \"-inf\" or false, not {}", type_name(other))),
    }
}

fn token(v: &Value) -> Result<Token, String> {
    Ok(int("logit_bias", v, 0, i32::MAX as i64).map_err(|e| format!("{e} (a token id)"))? as Token)
}

/// `logit_bias`: an array of `[token, bias]` pairs, or an object `{"token": bias}`.
fn logit_bias(v: &Value) -> Result<Vec<(Token, f32)>, String> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Array(pair) if pair.len() == 2 => Ok((token(&pair[0])?, bias(&pair[1])?)),
                _ => Err("`logit_bias` must be an array of [token, bias] pairs".to_string()),
            })
            .collect(),
        Value::Object(m) => m
            .iter()
            .map(|(k, b)| {
                let id = k.trim().parse::<i64>().map_err(|_| format!("`logit_bias`: key {k:?} is not a token id"))?;
                Ok((token(&Value::from(id))?, bias(b)?))
            })
            .collect(),
        other => Err(format!("`logit_bias` must be an array of [token, bias] pairs, not {}", type_name(other))),
    }
}

fn string_list(field: &str, v: &Value) -> Result<Vec<String>, String> {
    let items = v.as_array().ok_or_else(|| format!("`{field}` must be an array of strings, not {}", type_name(v)))?;
    items
        .iter()
        .map(|x| x.as_str().map(str::to_string).ok_or_else(|| format!("`{field}` must be an array of strings")))
        .collect()
}

/// Applies one field to `p`.
fn apply(p: &mut SamplingParams, field: &str, v: &Value) -> Result<(), String> {
    const I32: i64 = i32::MAX as i64;
    match field {
        "seed" => {
            let s = int(field, v, -1, u32::MAX as i64)?;
            p.seed = if s < 0 { DEFAULT_SEED } else { s as u32 };
        }
        "temp" => p.temp = float(field, v)?,
        "top_k" => p.top_k = int(field, v, i32::MIN as i64, I32)? as i32,
        "top_p" => p.top_p = float(field, v)?,
        "min_p" => p.min_p = float(field, v)?,
        "typ_p" => p.typ_p = float(field, v)?,
        "xtc_probability" => p.xtc_probability = float(field, v)?,
        "xtc_threshold" => p.xtc_threshold = float(field, v)?,
        "penalty_last_n" => p.penalty_last_n = int(field, v, 0, I32)? as i32,
        "penalty_repeat" => p.penalty_repeat = float(field, v)?,
        "penalty_freq" => p.penalty_freq = float(field, v)?,
        "penalty_present" => p.penalty_present = float(field, v)?,
        "dry_multiplier" => p.dry_multiplier = float(field, v)?,
        "dry_base" => p.dry_base = float(field, v)?,
        "dry_allowed_length" => p.dry_allowed_length = int(field, v, 0, I32)? as i32,
        "dry_penalty_last_n" => p.dry_penalty_last_n = int(field, v, 0, I32)? as i32,
        "dry_sequence_breakers" => p.dry_sequence_breakers = string_list(field, v)?,
        "mirostat" => {
            p.mirostat = MirostatMode::from_i32(int(field, v, 0, 2)? as i32).map_err(|e| e.to_string())?;
        }
        "mirostat_tau" => p.mirostat_tau = float(field, v)?,
        "mirostat_eta" => p.mirostat_eta = float(field, v)?,
        "top_n_sigma" => p.top_n_sigma = float(field, v)?,
        "dynatemp_range" => p.dynatemp_range = float(field, v)?,
        "dynatemp_exponent" => p.dynatemp_exponent = float(field, v)?,
        "min_keep" => p.min_keep = int(field, v, 0, I32)? as usize,
        "samplers" => p.samplers = samplers(v)?,
        "logit_bias" => p.logit_bias = logit_bias(v)?,
        "adaptive_target" => p.adaptive_target = float(field, v)?,
        "adaptive_decay" => p.adaptive_decay = float(field, v)?,
        "ignore_eos" => {
            p.ignore_eos = v.as_bool().ok_or_else(|| format!("`ignore_eos` must be a boolean, not {}", type_name(v)))?
        }
        other => return Err(format!("unknown field `{other}`; known fields: {}", FIELDS.join(", "))),
    }
    Ok(())
}

/// Parses `params_json` over llama.cpp's defaults and validates the result for `n_vocab`.
pub(crate) fn parse(json: &str, n_vocab: usize) -> Result<SamplingParams, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| format!("params_json is not valid JSON: {e}"))?;
    let obj: &Map<String, Value> =
        value.as_object().ok_or_else(|| format!("params_json must be a JSON object, not {}", type_name(&value)))?;
    let mut p = SamplingParams::default();
    for (field, v) in obj {
        apply(&mut p, field, v)?;
    }
    p.validate(Some(n_vocab)).map_err(|e| e.to_string())?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_fields() {
        assert_eq!(parse("{}", 10).unwrap(), SamplingParams::default());
        let p = parse(
            r#"{"seed": 7, "temp": 0.5, "top_k": 3, "samplers": "kt", "mirostat": 2,
                "logit_bias": [[1, -1.5], [2, "-inf"], [3, false]], "dry_sequence_breakers": ["\n"]}"#,
            10,
        )
        .unwrap();
        assert_eq!((p.seed, p.temp, p.top_k, p.mirostat), (7, 0.5, 3, MirostatMode::V2));
        assert_eq!(p.samplers, vec![SamplerType::TopK, SamplerType::Temperature]);
        assert_eq!(p.logit_bias, vec![(1, -1.5), (2, f32::NEG_INFINITY), (3, f32::NEG_INFINITY)]);
        assert_eq!(parse(r#"{"seed": -1}"#, 10).unwrap().seed, DEFAULT_SEED);
        let names = parse(r#"{"samplers": ["top_k", "temperature"]}"#, 10).unwrap();
        assert_eq!(names.samplers, vec![SamplerType::TopK, SamplerType::Temperature]);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (r#"{"tmp": 1}"#, "`tmp`"),
            (r#"{"top_k": 1.5}"#, "`top_k`"),
            (r#"{"top_p": "x"}"#, "`top_p`"),
            (r#"{"top_p": 2}"#, "top_p"),
            (r#"{"temp": 1e300}"#, "`temp`"),
            (r#"{"seed": -2}"#, "`seed`"),
            (r#"{"mirostat": 3}"#, "`mirostat`"),
            (r#"{"samplers": "kq"}"#, "`samplers`"),
            (r#"{"samplers": ["top_q"]}"#, "`samplers`"),
            (r#"{"logit_bias": [[10, 1]]}"#, "logit_bias"),
            (r#"{"logit_bias": [[1, "inf"]]}"#, "`logit_bias`"),
            (r#"{"penalty_repeat": 0}"#, "penalty_repeat"),
            (r#"{"ignore_eos": 1}"#, "`ignore_eos`"),
            ("[1]", "JSON object"),
            ("{", "not valid JSON"),
        ];
        for (json, needle) in cases {
            let e = parse(json, 10).unwrap_err();
            assert!(e.contains(needle), "{json}: {e}");
        }
    }
}
