//! Leaf types of the request bodies: JSON numbers kept as the client sent them (ranges are
//! checked later, with errors naming the field), objects, and the helpers that turn a JSON
//! value of the wrong shape into the "invalid type" error the server answers with.

use std::borrow::Cow;
use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use nucleus_sampler::params_map::json_kind;

/// A JSON number read where an integer is expected. It keeps the number as sent, so that the
/// range check can tell `5.0` (accepted), `5.5` (not an integer) and 2^64 (above the maximum)
/// apart; anything but a number is an "expected an integer" error.
#[derive(Clone, Debug, PartialEq)]
pub struct Integer(pub serde_json::Number);

impl Integer {
    /// The number as a JSON value (what [`crate::fields::check_int`] reads).
    pub fn value(&self) -> Value {
        Value::Number(self.0.clone())
    }
}

impl<'de> Deserialize<'de> for Integer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Integer;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Integer, E> {
                Ok(Integer(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Integer, E> {
                Ok(Integer(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Integer, E> {
                serde_json::Number::from_f64(v).map(Integer).ok_or_else(|| E::custom(type_error("an integer")))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Integer {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Integer".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer" })
    }
}

/// A JSON number read where a decimal is expected (as f64; the range check narrows to f32).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Number(pub f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
                Ok(Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
                Ok(Number(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
                Ok(Number(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Number {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Number".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "number" })
    }
}

/// Any JSON object, kept as sent (a token-trie descriptor, a tool's parameters); anything else
/// is an "expected an object" error.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonObject(pub Map<String, Value>);

impl<'de> Deserialize<'de> for JsonObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JsonObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<JsonObject, A::Error> {
                let mut out = Map::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    out.insert(k, v);
                }
                Ok(JsonObject(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl JsonSchema for JsonObject {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "JsonObject".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "object" })
    }
}

/// The message of a wrong-type error the body reader turns into
/// [`crate::errors::ApiError::wrong_type`] at the failing path (see [`super::decode`]).
pub fn type_error(expected: &str) -> String {
    format!("invalid type, expected {expected}")
}

/// The message of a missing-field error at the failing path.
pub const MISSING: &str = "\u{1}missing";

/// Reads a whole JSON value and gives it to `shape`, which returns the typed value or the
/// "expected ..." text of the wrong-type error (for fields whose errors name the field itself,
/// not a position inside it: `prompt`, `stop`, `logit_bias`, ...).
pub fn shaped<'de, D, T>(d: D, shape: impl FnOnce(Value) -> Result<T, String>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let v = Value::deserialize(d)?;
    shape(v).map_err(|expected| de::Error::custom(type_error(&expected)))
}

/// "`what`, not a string" for the wrong-type errors that say what was sent.
pub fn not(what: &str, v: &Value) -> String {
    format!("{what}, not {}", json_kind(v))
}
