//! The sampling fields of a request (OpenAI's, llama.cpp's and vLLM's names) applied over the
//! server's defaults to give one [`SamplingParams`]. Names, kinds and ranges are
//! [`nucleus_sampler::fields`]'s (OpenAI's ranges for OpenAI fields, llama.cpp's hard limits
//! otherwise; the same table writes them into the OpenAPI document, [`schema_ranges`]);
//! anything outside is a 400 naming the field.

use nucleus_runtime::Model;
use nucleus_sampler::fields::{self, Field, Kind, Range};
use nucleus_sampler::{ParamError, SamplerType, SamplingParams, Token};
use serde_json::{Map, Value};

use crate::body::shapes::{Bias, BiasKey, Breakers, LogitBias, Samplers};
use crate::body::Common;
use crate::errors::ApiError;
use crate::fields::{check_f32, check_int};

/// Applies the request's sampling fields to a copy of `defaults`, in the table's order. The
/// numbers and booleans are read from `body` by the table's names (their JSON types were
/// checked when `body` was decoded into `c`); the structured fields from `c`.
pub fn parse(
    body: &Map<String, Value>,
    c: &Common,
    defaults: &SamplingParams,
    model: &dyn Model,
) -> Result<SamplingParams, ApiError> {
    let mut p = defaults.clone();
    for f in fields::FIELDS {
        // The first of the field's names the body gives (repeat_penalty before vLLM's name).
        let given = f.request.iter().find_map(|&name| body.get(name).filter(|v| !v.is_null()).map(|v| (name, v)));
        let Some((name, v)) = given else { continue };
        match f.kind {
            Kind::Float { set, .. } => {
                let r = range(f);
                let x = v.as_f64().ok_or_else(|| ApiError::wrong_type(name, "a number"))?;
                let x = check_f32(name, x, r.min as f32, r.max as f32)?;
                if let Some(why) = r.min_excluded.filter(|_| x <= r.min as f32) {
                    return Err(ApiError::invalid_value(name, why));
                }
                set(&mut p, x);
            }
            Kind::Int { set, .. } => {
                let r = range(f);
                let x = check_int(name, v, r.min as i64, r.max as i64)?;
                set(&mut p, x).map_err(param_error)?;
            }
            Kind::Bool { set, .. } => set(&mut p, v.as_bool().ok_or_else(|| ApiError::wrong_type(name, "a boolean"))?),
            Kind::Breakers => {
                if let Some(Breakers(list)) = &c.dry_sequence_breakers {
                    if list.is_empty() {
                        return Err(ApiError::invalid_value(name, "must be a non-empty array of strings"));
                    }
                    p.dry_sequence_breakers = list.clone();
                }
            }
            Kind::Samplers => {
                if let Some(v) = &c.samplers {
                    p.samplers = parse_samplers(v)?;
                }
            }
            Kind::LogitBias => {
                if let Some(v) = &c.logit_bias {
                    p.logit_bias = parse_logit_bias(v, model)?;
                }
            }
        }
    }
    Ok(p)
}

/// A numeric field's request range (the table gives every numeric field one; a test checks).
fn range(f: &Field) -> Range {
    f.range.unwrap_or(Range { min: f64::NEG_INFINITY, max: f64::INFINITY, min_excluded: None })
}

/// A sampler-chain error from `SamplingParams::validate`, named as the request names it.
pub fn param_error(e: ParamError) -> ApiError {
    let name = match e.field {
        // The command line's name for a string of codes.
        "sampling_seq" => "samplers",
        other => fields::by_name(other).map_or(other, Field::request_name),
    };
    ApiError::invalid_value(name, format!("{} = {}: {}", name, e.value, e.allowed))
}

/// Writes each sampling field's request range from [`nucleus_sampler::fields`] into a request
/// body's schema (`minimum` or `exclusiveMinimum`, and `maximum`): the ranges [`parse`] checks,
/// published from the same table. A `#[schemars(transform)]` of every body that takes
/// sampling fields.
pub fn schema_ranges(schema: &mut schemars::Schema) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        let (Some(r), Some(prop)) = (fields::by_request_name(name).and_then(|f| f.range), prop.as_object_mut()) else {
            continue;
        };
        let min = if r.min_excluded.is_some() { "exclusiveMinimum" } else { "minimum" };
        prop.insert(min.into(), bound(r.min));
        prop.insert("maximum".into(), bound(r.max));
    }
}

/// A bound as JSON: an integer when it is one (`0`, `2147483647`, as the schema has always
/// written them), else the float (`0.99`, `3.4028234663852886e38`).
fn bound(x: f64) -> Value {
    const EXACT: f64 = (1u64 << 53) as f64;
    if x.fract() == 0.0 && x.abs() <= EXACT {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// `samplers`: an array of names (`["top_k", "temperature"]`) or a string of one-letter codes
/// (`"kt"`), as llama-server takes it. Unknown names are errors (llama.cpp only warns).
fn parse_samplers(v: &Samplers) -> Result<Vec<SamplerType>, ApiError> {
    match v {
        Samplers::Names(names) => names
            .iter()
            .map(|name| {
                SamplerType::from_name(name).ok_or_else(|| {
                    let known: Vec<&str> = SamplerType::ALL.iter().map(|s| s.name()).collect();
                    ApiError::invalid_value(
                        "samplers",
                        format!("unknown sampler '{name}'; known: {}", known.join(", ")),
                    )
                })
            })
            .collect(),
        Samplers::Codes(s) => SamplerType::parse_codes(s).map_err(|e| {
            let known: Vec<String> = SamplerType::ALL.iter().map(|s| s.code().to_string()).collect();
            ApiError::invalid_value(
                "samplers",
                format!("unknown sampler code '{}'; known codes: {}", e.value, known.join(" ")),
            )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anthropic::body::MessagesBody;
    use crate::body::{ChatBody, CompletionBody};
    use crate::responses::body::ResponsesBody;
    use schemars::JsonSchema;
    use serde_json::json;

    fn properties<T: JsonSchema>() -> Map<String, Value> {
        let schema = schemars::SchemaGenerator::default().root_schema_for::<T>();
        schema.get("properties").and_then(Value::as_object).cloned().expect("an object schema")
    }

    /// The generation bodies declare every request name of the table, with a JSON type of the
    /// field's kind and the table's range; the other bodies' sampling fields get the range too.
    #[test]
    fn the_bodies_declare_the_tables_fields_and_ranges() {
        for props in [properties::<ChatBody>(), properties::<CompletionBody>()] {
            for f in fields::FIELDS {
                for name in f.request {
                    let prop = props.get(*name).unwrap_or_else(|| panic!("the body has no {name}"));
                    let ty = prop.get("type").map(Value::to_string).unwrap_or_default();
                    match f.kind {
                        Kind::Float { .. } => assert!(ty.contains("\"number\""), "{name}: {prop}"),
                        Kind::Int { .. } => assert!(ty.contains("\"integer\""), "{name}: {prop}"),
                        Kind::Bool { .. } => assert!(ty.contains("\"boolean\""), "{name}: {prop}"),
                        _ => {}
                    }
                    if let Some(r) = f.range {
                        let min = if r.min_excluded.is_some() { "exclusiveMinimum" } else { "minimum" };
                        assert_eq!(prop.get(min), Some(&bound(r.min)), "{name}: {prop}");
                        assert_eq!(prop.get("maximum"), Some(&bound(r.max)), "{name}: {prop}");
                    }
                }
            }
        }
        for props in [properties::<MessagesBody>(), properties::<ResponsesBody>()] {
            for (name, prop) in &props {
                if let Some(r) = fields::by_request_name(name).and_then(|f| f.range) {
                    assert_eq!(prop.get("maximum"), Some(&bound(r.max)), "{name}: {prop}");
                }
            }
        }
        assert_eq!(bound(2.0), json!(2));
        assert_eq!(bound(0.99), json!(0.99));
        assert_eq!(bound(f32::MAX as f64), json!(f32::MAX as f64));
    }

    #[test]
    fn chain_errors_are_named_as_requests_name_them() {
        let e = param_error(ParamError::new("penalty_repeat", 0, "must be finite and > 0 (1.0 disables)"));
        assert_eq!(e.param.as_deref(), Some("repeat_penalty"));
        assert_eq!(param_error(ParamError::new("temp", "nan", "x")).param.as_deref(), Some("temperature"));
        assert_eq!(param_error(ParamError::new("sampling_seq", "q", "x")).param.as_deref(), Some("samplers"));
        assert_eq!(param_error(ParamError::new("logit_bias", 1, "x")).param.as_deref(), Some("logit_bias"));
    }
}
