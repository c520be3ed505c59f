//! [`SamplingParams::from_map`]: sampling parameters from a name → value map (`serde_json`)
//! with llama.cpp's `common_params_sampling` field names, the one reader behind the C ABI's
//! `params_json` and the Python and Node keyword arguments (each binding only turns its own
//! values into this map). Only on with the `json` feature, so the default build needs no
//! `serde_json`.
//!
//! The rules, the same for every caller:
//! * an absent field, or one whose value is `null`, keeps llama.cpp's default;
//! * an unknown field is an error of its own kind ([`FieldError::is_unknown`]), so Python can
//!   raise `TypeError` as it does for any unexpected keyword;
//! * floats are numbers, or the strings `"inf"`, `"-inf"`, `"nan"` (JSON has no non-finite
//!   numbers; `"infinity"`, a leading `+` and any letter case are read too), and a finite number
//!   too large for an `f32` is refused rather than rounded to infinity;
//! * only types and shapes are checked here: ranges are judged by [`SamplingParams::validate`],
//!   so every binding refuses exactly what the Rust API refuses, with the same words.

use serde_json::{Map, Value};
use thiserror::Error;

use crate::candidates::Token;
use crate::error::ParamError;
use crate::fields::{self, Kind};
use crate::params::SamplingParams;
use crate::sampler_type::SamplerType;

/// Every field [`SamplingParams::from_map`] reads, in `common_params_sampling`'s order: the
/// names of [`crate::fields::FIELDS`].
pub const FIELDS: &[&str] = &crate::fields::NAMES;

/// What the chain will be built over: the checks that depend on it run in
/// [`SamplingParams::from_map`], so a binding gets every refusal from one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vocabulary {
    /// Token ids `0..n` with no model vocabulary (a standalone sampler). DRY's string breakers
    /// cannot become tokens then, so DRY must be given an empty breaker list explicitly instead
    /// of silently running without them (which would differ from llama.cpp).
    Ids(usize),
    /// A model vocabulary of `n` tokens: string breakers and end-of-generation tokens resolve.
    Model(usize),
}

impl Vocabulary {
    fn n_vocab(self) -> usize {
        match self {
            Vocabulary::Ids(n) | Vocabulary::Model(n) => n,
        }
    }
}

/// A field of the map that cannot become part of a [`SamplingParams`]: which field, why (the
/// message names the field), and whether the field does not exist at all.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{message}")]
pub struct FieldError {
    field: String,
    message: String,
    unknown: bool,
}

impl FieldError {
    fn bad(field: &str, message: String) -> Self {
        FieldError { field: field.to_string(), message, unknown: false }
    }

    /// The field as the map spells it (snake_case).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong, naming the field (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True when the field is not a sampling parameter at all (a `TypeError` in Python), false
    /// when its value is of the wrong type, shape or range.
    pub fn is_unknown(&self) -> bool {
        self.unknown
    }
}

impl From<ParamError> for FieldError {
    fn from(e: ParamError) -> Self {
        FieldError::bad(e.field, e.to_string())
    }
}

/// What kind of JSON value this is, for error messages ("a number", "an array", ...); the
/// server's request errors use the same words.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The non-finite float a string spells, if any.
fn special_float(s: &str) -> Option<f32> {
    match s.trim().to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f32::INFINITY),
        "-inf" | "-infinity" => Some(f32::NEG_INFINITY),
        "nan" => Some(f32::NAN),
        _ => None,
    }
}

/// A number that fits an `f32`, or a string spelling a non-finite float.
fn float(field: &str, v: &Value) -> Result<f32, FieldError> {
    let x = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => special_float(s).map(f64::from),
        _ => None,
    }
    .ok_or_else(|| FieldError::bad(field, format!("`{field}` must be a number, not {}", json_kind(v))))?;
    let f = x as f32;
    if x.is_finite() && !f.is_finite() {
        return Err(FieldError::bad(field, format!("`{field}` = {x} is out of range for a 32-bit float")));
    }
    Ok(f)
}

/// An integer in `[lo, hi]`: what the field's type holds (its range for the chain is
/// [`SamplingParams::validate`]'s to judge).
fn int(field: &str, v: &Value, lo: i64, hi: i64) -> Result<i64, FieldError> {
    let x = v.as_i64().ok_or_else(|| {
        let what = match v {
            Value::Number(n) => n.to_string(),
            other => json_kind(other).to_string(),
        };
        FieldError::bad(field, format!("`{field}` must be an integer, not {what}"))
    })?;
    if x < lo || x > hi {
        return Err(FieldError::bad(field, format!("`{field}` = {x} is out of range [{lo}, {hi}]")));
    }
    Ok(x)
}

/// `samplers`: a `--sampling-seq` string of codes (`"kypmxt"`), a `;`-separated list of names
/// (`"top_k;min_p;temperature"`, or one name), or an array of names.
fn samplers(v: &Value) -> Result<Vec<SamplerType>, FieldError> {
    let unknown = |what: &str, e: ParamError| {
        FieldError::bad("samplers", format!("`samplers`: unknown sampler {what} {:?} ({})", e.value, e.allowed))
    };
    match v {
        Value::String(s) if s.contains(';') || SamplerType::from_name(s).is_some() => {
            SamplerType::parse_names(s).map_err(|e| unknown("name", e))
        }
        Value::String(s) => SamplerType::parse_codes(s).map_err(|e| unknown("code", e)),
        Value::Array(items) => items
            .iter()
            .map(|x| match x {
                // One name, so a `;` inside it is no separator: parse_names would split it.
                Value::String(name) if name.contains(';') => {
                    Err(FieldError::bad("samplers", format!("`samplers`: unknown sampler name {name:?}")))
                }
                Value::String(name) => match SamplerType::parse_names(name).map_err(|e| unknown("name", e))?[..] {
                    [t] => Ok(t),
                    _ => Err(FieldError::bad("samplers", format!("`samplers`: unknown sampler name {name:?}"))),
                },
                other => {
                    Err(FieldError::bad("samplers", format!("`samplers` must hold names, not {}", json_kind(other))))
                }
            })
            .collect(),
        other => Err(FieldError::bad(
            "samplers",
            format!("`samplers` must be an array of names or a string of codes, not {}", json_kind(other)),
        )),
    }
}

/// One logit bias: a number (`"-inf"` bans the token) or `false` (bans it, as llama-server
/// reads it).
fn bias(v: &Value) -> Result<f32, FieldError> {
    match v {
        Value::Bool(false) => Ok(f32::NEG_INFINITY),
        Value::Number(_) | Value::String(_) => float("logit_bias", v).map_err(|_| bad_bias(v)),
        other => Err(bad_bias(other)),
    }
}

fn bad_bias(v: &Value) -> FieldError {
    let what = match v {
        Value::Number(n) => format!("{n} (out of range for a 32-bit float)"),
        Value::String(s) => format!("{s:?}"),
        other => json_kind(other).to_string(),
    };
    FieldError::bad("logit_bias", format!("`logit_bias`: a bias must be a number, \"-inf\" or false, not {what}"))
}

/// A token id: an integer, or a string holding one (object keys are strings). Whether it is in
/// the vocabulary is [`SamplingParams::validate`]'s to judge.
fn token(v: &Value) -> Result<Token, FieldError> {
    let t = match v {
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => v.as_i64(),
    }
    .ok_or_else(|| FieldError::bad("logit_bias", format!("`logit_bias`: {v} is not a token id")))?;
    Token::try_from(t).map_err(|_| FieldError::bad("logit_bias", format!("`logit_bias`: token id {t} is out of range")))
}

/// `logit_bias`: an object `{"token": bias}` or an array of `[token, bias]` pairs.
fn logit_bias(v: &Value) -> Result<Vec<(Token, f32)>, FieldError> {
    match v {
        Value::Object(m) => m.iter().map(|(k, b)| Ok((token(&Value::String(k.clone()))?, bias(b)?))).collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Array(pair) if pair.len() == 2 => Ok((token(&pair[0])?, bias(&pair[1])?)),
                _ => Err(FieldError::bad("logit_bias", "`logit_bias` must be an array of [token, bias] pairs".into())),
            })
            .collect(),
        other => Err(FieldError::bad(
            "logit_bias",
            format!(
                "`logit_bias` must be an object of token -> bias or an array of [token, bias] pairs, not {}",
                json_kind(other)
            ),
        )),
    }
}

fn strings(field: &str, v: &Value) -> Result<Vec<String>, FieldError> {
    let bad =
        |x: &Value| FieldError::bad(field, format!("`{field}` must be an array of strings, not {}", json_kind(x)));
    let items = v.as_array().ok_or_else(|| bad(v))?;
    items.iter().map(|x| x.as_str().map(str::to_string).ok_or_else(|| bad(x))).collect()
}

/// Sets one field of `p`, read as the table ([`crate::fields`]) says its kind is; `null`
/// leaves a known field at its default.
fn apply(p: &mut SamplingParams, field: &str, v: &Value) -> Result<(), FieldError> {
    let Some(f) = fields::by_name(field) else {
        return Err(FieldError {
            field: field.to_string(),
            message: format!("unknown sampling parameter `{field}` (known: {})", FIELDS.join(", ")),
            unknown: true,
        });
    };
    if v.is_null() {
        return Ok(());
    }
    match f.kind {
        Kind::Float { set, .. } => set(p, float(field, v)?),
        Kind::Int { min, max, set, .. } => set(p, int(field, v, min, max)?)?,
        Kind::Bool { set, .. } => set(
            p,
            v.as_bool()
                .ok_or_else(|| FieldError::bad(field, format!("`{field}` must be a boolean, not {}", json_kind(v))))?,
        ),
        Kind::Breakers => p.dry_sequence_breakers = strings(field, v)?,
        Kind::Samplers => p.samplers = samplers(v)?,
        Kind::LogitBias => p.logit_bias = logit_bias(v)?,
    }
    Ok(())
}

impl SamplingParams {
    /// llama.cpp's defaults overridden by `fields` (llama.cpp's snake_case names; a `null`
    /// value keeps the default), then validated for `vocab` ([`SamplingParams::validate`] with
    /// its size; DRY's string breakers need [`Vocabulary::Model`]). The first field in map order
    /// that cannot be read is the error. Needs the `json` feature.
    ///
    /// ```
    /// use nucleus_sampler::{params_map::Vocabulary, SamplingParams};
    ///
    /// let fields = serde_json::json!({"seed": 7, "top_k": 3, "logit_bias": [[2, "-inf"]]});
    /// let p = SamplingParams::from_map(fields.as_object().unwrap(), Vocabulary::Ids(10)).unwrap();
    /// assert_eq!((p.seed, p.top_k, p.logit_bias[0]), (7, 3, (2, f32::NEG_INFINITY)));
    /// ```
    pub fn from_map(fields: &Map<String, Value>, vocab: Vocabulary) -> Result<SamplingParams, FieldError> {
        let mut p = SamplingParams::default();
        for (field, v) in fields {
            apply(&mut p, field, v)?;
        }
        p.validate(Some(vocab.n_vocab()))?;
        if matches!(vocab, Vocabulary::Ids(_)) && p.dry_multiplier > 0.0 && !p.dry_sequence_breakers.is_empty() {
            return Err(FieldError::bad(
                "dry_sequence_breakers",
                "`dry_sequence_breakers`: a sampler without a model vocabulary cannot turn breaker strings into \
                 tokens; give DRY an empty dry_sequence_breakers list to run it without breakers"
                    .to_string(),
            ));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::MirostatMode;
    use crate::rng::DEFAULT_SEED;
    use serde_json::json;

    fn parse(v: Value) -> Result<SamplingParams, FieldError> {
        SamplingParams::from_map(v.as_object().expect("an object"), Vocabulary::Ids(10))
    }

    fn err(v: Value) -> FieldError {
        parse(v.clone()).expect_err(&v.to_string())
    }

    #[test]
    fn empty_map_and_nulls_are_the_defaults() {
        assert_eq!(parse(json!({})).unwrap(), SamplingParams::default());
        let nulls: Map<String, Value> = FIELDS.iter().map(|f| (f.to_string(), Value::Null)).collect();
        assert_eq!(SamplingParams::from_map(&nulls, Vocabulary::Ids(10)).unwrap(), SamplingParams::default());
    }

    #[test]
    fn every_field_is_read() {
        let p = parse(json!({
            "seed": 7, "temp": 0.5, "top_k": 3, "top_p": 0.9, "min_p": 0.1, "typ_p": 0.8,
            "xtc_probability": 0.2, "xtc_threshold": 0.3, "penalty_last_n": 5, "penalty_repeat": 1.1,
            "penalty_freq": 0.25, "penalty_present": 0.5, "dry_multiplier": 0.8, "dry_base": 2.0,
            "dry_allowed_length": 4, "dry_penalty_last_n": 6, "dry_sequence_breakers": [],
            "mirostat": 2, "mirostat_tau": 4.0, "mirostat_eta": 0.2, "top_n_sigma": 1.5,
            "dynatemp_range": 0.1, "dynatemp_exponent": 1.5, "min_keep": 2, "samplers": "kt",
            "logit_bias": [[1, -1.5]], "adaptive_target": 0.5, "adaptive_decay": 0.5, "ignore_eos": true,
        }))
        .unwrap();
        let want = SamplingParams {
            seed: 7,
            temp: 0.5,
            top_k: 3,
            top_p: 0.9,
            min_p: 0.1,
            typ_p: 0.8,
            xtc_probability: 0.2,
            xtc_threshold: 0.3,
            penalty_last_n: 5,
            penalty_repeat: 1.1,
            penalty_freq: 0.25,
            penalty_present: 0.5,
            dry_multiplier: 0.8,
            dry_base: 2.0,
            dry_allowed_length: 4,
            dry_penalty_last_n: 6,
            dry_sequence_breakers: vec![],
            mirostat: MirostatMode::V2,
            mirostat_tau: 4.0,
            mirostat_eta: 0.2,
            top_n_sigma: 1.5,
            dynatemp_range: 0.1,
            dynatemp_exponent: 1.5,
            min_keep: 2,
            samplers: vec![SamplerType::TopK, SamplerType::Temperature],
            logit_bias: vec![(1, -1.5)],
            adaptive_target: 0.5,
            adaptive_decay: 0.5,
            ignore_eos: true,
        };
        assert_eq!(p, want);
        // The list of fields and the parser agree.
        assert_eq!(FIELDS.len(), 29);
        for f in FIELDS {
            let fields = Map::from_iter([(f.to_string(), json!([[]]))]);
            let e = SamplingParams::from_map(&fields, Vocabulary::Ids(10)).unwrap_err();
            assert!(!e.is_unknown() && e.field() == *f, "{f}: {e}");
        }
    }

    /// Every field of the table, given a value other than its default under its name, comes
    /// out of the parser as the table's own setter writes it, and nothing else changes.
    #[test]
    fn every_table_field_round_trips() {
        for f in fields::FIELDS {
            let mut want = SamplingParams::default();
            let v = match f.kind {
                Kind::Float { default, set, .. } => {
                    let x = if default == 0.5 { 0.25 } else { 0.5 };
                    set(&mut want, x);
                    json!(x)
                }
                Kind::Int { default, set, .. } => {
                    let x = if default == 1 { 2 } else { 1 };
                    set(&mut want, x).unwrap();
                    json!(x)
                }
                Kind::Bool { default, set, .. } => {
                    set(&mut want, !default);
                    json!(!default)
                }
                Kind::Breakers => {
                    want.dry_sequence_breakers = vec!["x".into()];
                    json!(["x"])
                }
                Kind::Samplers => {
                    want.samplers = vec![SamplerType::TopK];
                    json!(["top_k"])
                }
                Kind::LogitBias => {
                    want.logit_bias = vec![(1, 2.0)];
                    json!([[1, 2.0]])
                }
            };
            assert_ne!(want, SamplingParams::default(), "{}", f.name);
            let map = Map::from_iter([(f.name.to_string(), v)]);
            assert_eq!(SamplingParams::from_map(&map, Vocabulary::Model(10)).unwrap(), want, "{}", f.name);
        }
    }

    #[test]
    fn spellings_of_samplers_seed_and_biases() {
        assert_eq!(parse(json!({"seed": -1})).unwrap().seed, DEFAULT_SEED);
        let both = vec![SamplerType::TopK, SamplerType::Temperature];
        for s in [json!(["top_k", "temperature"]), json!("top_k;temperature"), json!("kt")] {
            assert_eq!(parse(json!({ "samplers": s })).unwrap().samplers, both);
        }
        assert_eq!(parse(json!({"samplers": "top-k"})).unwrap().samplers, vec![SamplerType::TopK]);
        assert_eq!(parse(json!({"samplers": []})).unwrap().samplers, vec![]);
        let p = parse(json!({"logit_bias": [[1, -1.5], ["2", "-inf"], [3, false], [4, "-Infinity"]]})).unwrap();
        let ban = f32::NEG_INFINITY;
        assert_eq!(p.logit_bias, vec![(1, -1.5), (2, ban), (3, ban), (4, ban)]);
        let p = parse(json!({"logit_bias": {"5": 2, " 6 ": "-inf"}})).unwrap();
        assert_eq!(p.logit_bias, vec![(5, 2.0), (6, ban)]);
    }

    #[test]
    fn unknown_field_is_its_own_kind() {
        let e = err(json!({"tmp": 1}));
        assert!(e.is_unknown());
        assert_eq!(e.field(), "tmp");
        assert!(e.message().contains("`tmp`") && e.message().contains("temp"), "{e}");
        // Unknown even when null: a typo must not pass silently.
        assert!(err(json!({"topk": null})).is_unknown());
    }

    #[test]
    fn wrong_types_name_the_field() {
        let cases = [
            (json!({"top_k": 1.5}), "top_k", "must be an integer, not 1.5"),
            (json!({"top_k": "40"}), "top_k", "must be an integer, not a string"),
            (json!({"top_p": "x"}), "top_p", "must be a number, not a string"),
            (json!({"temp": [1]}), "temp", "must be a number, not an array"),
            (json!({"temp": 1e300}), "temp", "out of range for a 32-bit float"),
            (json!({"seed": -2}), "seed", "out of range"),
            (json!({"seed": 4294967296u64}), "seed", "out of range"),
            (json!({"min_keep": -1}), "min_keep", "out of range"),
            (json!({"penalty_last_n": 3_000_000_000u64}), "penalty_last_n", "out of range"),
            (json!({"samplers": "kq"}), "samplers", "unknown sampler code \"q\""),
            (json!({"samplers": "top_k;top_q"}), "samplers", "unknown sampler name \"top_q\""),
            (json!({"samplers": ["top_q"]}), "samplers", "unknown sampler name \"top_q\""),
            (json!({"samplers": ["top_k;min_p"]}), "samplers", "unknown sampler name"),
            (json!({"samplers": [1]}), "samplers", "must hold names"),
            (json!({"samplers": 1}), "samplers", "must be an array of names"),
            (json!({"logit_bias": [[1, true]]}), "logit_bias", "a bias must be"),
            (json!({"logit_bias": [[1, "x"]]}), "logit_bias", "a bias must be"),
            (json!({"logit_bias": [[1, -1e300]]}), "logit_bias", "out of range"),
            (json!({"logit_bias": [[1]]}), "logit_bias", "[token, bias] pairs"),
            (json!({"logit_bias": {"x": 1}}), "logit_bias", "not a token id"),
            (json!({"logit_bias": [[1e10, 1]]}), "logit_bias", "not a token id"),
            (json!({"logit_bias": [[3_000_000_000u64, 1]]}), "logit_bias", "out of range"),
            (json!({"logit_bias": 1}), "logit_bias", "must be an object"),
            (json!({"dry_sequence_breakers": "\n"}), "dry_sequence_breakers", "array of strings, not a string"),
            (json!({"dry_sequence_breakers": [1]}), "dry_sequence_breakers", "array of strings, not a number"),
            (json!({"ignore_eos": 1}), "ignore_eos", "must be a boolean, not a number"),
        ];
        for (v, field, needle) in cases {
            let e = err(v.clone());
            assert!(!e.is_unknown());
            assert_eq!(e.field(), field, "{v}");
            assert!(e.message().contains(&format!("`{field}`")) && e.message().contains(needle), "{v}: {e}");
        }
    }

    #[test]
    fn ranges_are_judged_by_validate() {
        let cases = [
            (json!({"top_p": 2}), "top_p"),
            (json!({"temp": "nan"}), "temp"),
            (json!({"temp": "inf"}), "temp"),
            (json!({"penalty_repeat": 0}), "penalty_repeat"),
            (json!({"penalty_last_n": -1}), "penalty_last_n"),
            (json!({"mirostat": 3}), "mirostat"),
            (json!({"adaptive_decay": 1.0}), "adaptive_decay"),
            (json!({"logit_bias": [[10, 1]]}), "logit_bias"),
            (json!({"logit_bias": [[-1, 1]]}), "logit_bias"),
            (json!({"logit_bias": [[1, "inf"]]}), "logit_bias"),
            (json!({"logit_bias": {"1": "nan"}}), "logit_bias"),
        ];
        for (v, field) in cases {
            let e = err(v.clone());
            assert!(!e.is_unknown());
            assert_eq!(e.field(), field, "{v}");
            assert!(e.message().starts_with("invalid sampling parameter"), "{v}: {e}");
        }
        // The strings stand for floats everywhere, and validate judges them like any float.
        assert_eq!(parse(json!({"temp": "-inf"})).unwrap_err().field(), "temp");
        assert_eq!(parse(json!({"adaptive_target": "-INF"})).unwrap_err().field(), "adaptive_target");
    }

    #[test]
    fn dry_breakers_need_a_model_vocabulary() {
        let dry = json!({"dry_multiplier": 0.8});
        let fields = dry.as_object().unwrap();
        let e = SamplingParams::from_map(fields, Vocabulary::Ids(10)).unwrap_err();
        assert_eq!(e.field(), "dry_sequence_breakers");
        assert!(SamplingParams::from_map(fields, Vocabulary::Model(10)).is_ok());
        assert!(parse(json!({"dry_multiplier": 0.8, "dry_sequence_breakers": []})).is_ok());
    }
}
