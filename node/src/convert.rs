//! A JavaScript parameter object to the `serde_json` map that `params` reads: keys in camelCase
//! become snake_case (`topK` → `top_k`; snake_case keys pass through), and non-finite numbers
//! are spelled "inf", "-inf", "nan" (JSON has none), so `-Infinity` bans a token in `logitBias`.

use napi::bindgen_prelude::{Object, Unknown};
use napi::{Error, JsValue, Result, Status, ValueType};
use serde_json::{Map, Number, Value};

/// `topK` → `top_k`, `penaltyLastN` → `penalty_last_n`; snake_case is unchanged.
pub(crate) fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn number(x: f64) -> Value {
    if x.is_finite() && x.fract() == 0.0 && x.abs() <= 9.007_199_254_740_992e15 {
        return Value::from(x as i64);
    }
    match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::String("nan".into()),
        None if x > 0.0 => Value::String("inf".into()),
        None => Value::String("-inf".into()),
    }
}

/// One JavaScript value as JSON; object keys are kept as written (token ids in `logitBias`).
pub(crate) fn to_value(field: &str, v: &Unknown<'_>) -> Result<Value> {
    // SAFETY (each `cast` below): the value's type was checked just before, so the conversion
    // reads a value of the type it expects.
    Ok(match v.get_type()? {
        ValueType::Undefined | ValueType::Null => Value::Null,
        ValueType::Boolean => Value::Bool(unsafe { v.cast::<bool>()? }),
        ValueType::Number => number(unsafe { v.cast::<f64>()? }),
        ValueType::String => Value::String(unsafe { v.cast::<String>()? }),
        ValueType::Object if v.is_array()? => {
            let items = unsafe { v.cast::<Vec<Unknown<'_>>>()? };
            Value::Array(items.iter().map(|x| to_value(field, x)).collect::<Result<_>>()?)
        }
        ValueType::Object => {
            let obj = unsafe { v.cast::<Object<'_>>()? };
            let mut m = Map::new();
            for k in Object::keys(&obj)? {
                if let Some(x) = obj.get::<Unknown<'_>>(&k)? {
                    m.insert(k, to_value(field, &x)?);
                }
            }
            Value::Object(m)
        }
        other => {
            return Err(Error::new(Status::InvalidArg, format!("`{field}` has an unsupported type {other}")));
        }
    })
}

/// A parameter object (camelCase or snake_case keys) as a snake_case name → value map, without
/// the (snake_case) keys in `skip`, which the caller reads itself.
pub(crate) fn params_map(obj: Option<&Object<'_>>, skip: &[&str]) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    if let Some(obj) = obj {
        for k in Object::keys(obj)? {
            let key = snake_case(&k);
            if skip.contains(&key.as_str()) {
                continue;
            }
            if let Some(x) = obj.get::<Unknown<'_>>(&k)? {
                let v = to_value(&key, &x)?;
                m.insert(key, v);
            }
        }
    }
    Ok(m)
}
