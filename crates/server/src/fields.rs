//! [`Fields`]: typed, range-checked reads of a JSON request object, each error naming the
//! field. Requests are read by hand rather than through serde derive so that every error is a
//! 400 that says which field is wrong and why; `null` means "absent" everywhere.

use serde_json::{Map, Value};

use crate::errors::ApiError;

/// A JSON object being read as request fields.
#[derive(Clone, Copy, Debug)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    /// Prefix for error names of nested objects (`stream_options.`).
    prefix: &'a str,
}

/// What kind of JSON value this is, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> Fields<'a> {
    /// Reads the top-level object `map`.
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Fields { map, prefix: "" }
    }

    /// Reads a nested object, naming errors `prefix.field`.
    pub fn nested(map: &'a Map<String, Value>, prefix: &'a str) -> Self {
        Fields { map, prefix }
    }

    /// The full name of `field` for errors.
    pub fn name(&self, field: &str) -> String {
        format!("{}{}", self.prefix, field)
    }

    /// The raw value, `None` when absent or null.
    pub fn get(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    /// Whether the field is present and not null.
    pub fn has(&self, field: &str) -> bool {
        self.get(field).is_some()
    }

    /// The first present field among aliases, with its name.
    pub fn first_of(&self, fields: &[&'static str]) -> Option<&'static str> {
        fields.iter().copied().find(|f| self.has(f))
    }

    /// A boolean.
    pub fn bool(&self, field: &str) -> Result<Option<bool>, ApiError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(ApiError::wrong_type(&self.name(field), "a boolean")),
        }
    }

    /// A string.
    pub fn str(&self, field: &str) -> Result<Option<&'a str>, ApiError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(ApiError::wrong_type(&self.name(field), "a string")),
        }
    }

    /// A number in `[lo, hi]` (as f32; values that are not finite as f32 are out of range).
    pub fn f32_in(&self, field: &str, lo: f32, hi: f32) -> Result<Option<f32>, ApiError> {
        let Some(v) = self.get(field) else { return Ok(None) };
        let name = self.name(field);
        let x = v.as_f64().ok_or_else(|| ApiError::wrong_type(&name, "a number"))?;
        check_f32(&name, x, lo, hi).map(Some)
    }

    /// An integer in `[lo, hi]`. Integral floats (`5.0`) are accepted as integers.
    pub fn int_in(&self, field: &str, lo: i64, hi: i64) -> Result<Option<i64>, ApiError> {
        let Some(v) = self.get(field) else { return Ok(None) };
        check_int(&self.name(field), v, lo, hi).map(Some)
    }
}

/// `x` as an f32 in `[lo, hi]`.
pub fn check_f32(name: &str, x: f64, lo: f32, hi: f32) -> Result<f32, ApiError> {
    let f = x as f32;
    if x.is_nan() || f.is_nan() {
        return Err(ApiError::wrong_type(name, "a number"));
    }
    if x > hi as f64 || f.is_infinite() && f > 0.0 {
        return Err(ApiError::above_max(name, hi, x, false));
    }
    if x < lo as f64 || f.is_infinite() {
        return Err(ApiError::below_min(name, lo, x, false));
    }
    Ok(f)
}

/// `v` as an integer in `[lo, hi]`.
pub fn check_int(name: &str, v: &Value, lo: i64, hi: i64) -> Result<i64, ApiError> {
    let Value::Number(n) = v else { return Err(ApiError::wrong_type(name, "an integer")) };
    let x = if let Some(i) = n.as_i64() {
        i
    } else if n.as_u64().is_some() {
        return Err(ApiError::above_max(name, hi, n, true));
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN);
        if f.fract() != 0.0 || !f.is_finite() {
            return Err(ApiError::wrong_type(name, "an integer"));
        }
        if f > i64::MAX as f64 {
            return Err(ApiError::above_max(name, hi, n, true));
        }
        if f < i64::MIN as f64 {
            return Err(ApiError::below_min(name, lo, n, true));
        }
        f as i64
    };
    if x > hi {
        return Err(ApiError::above_max(name, hi, x, true));
    }
    if x < lo {
        return Err(ApiError::below_min(name, lo, x, true));
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn numbers_are_range_checked_and_named() {
        let m =
            obj(json!({"t": 3.0, "k": 2.5, "n": 5, "big": 1e300, "s": "x", "z": null, "u": 18446744073709551615u64}));
        let f = Fields::new(&m);
        assert_eq!(f.f32_in("t", 0.0, 2.0).unwrap_err().code, Some("decimal_above_max_value"));
        assert_eq!(f.f32_in("t", 0.0, 2.0).unwrap_err().param.as_deref(), Some("t"));
        assert_eq!(f.int_in("k", 0, 10).unwrap_err().code, Some("invalid_type"));
        assert_eq!(f.int_in("n", 0, 10).unwrap(), Some(5));
        assert_eq!(f.int_in("n", 6, 10).unwrap_err().code, Some("integer_below_min_value"));
        assert_eq!(f.f32_in("big", -1e30, 1e30).unwrap_err().code, Some("decimal_above_max_value"));
        assert_eq!(f.f32_in("s", 0.0, 1.0).unwrap_err().code, Some("invalid_type"));
        assert_eq!(f.f32_in("z", 0.0, 1.0).unwrap(), None);
        assert_eq!(f.int_in("u", 0, 10).unwrap_err().code, Some("integer_above_max_value"));
        assert_eq!(f.bool("n").unwrap_err().code, Some("invalid_type"));
        let n = obj(json!({"include_usage": 1}));
        assert_eq!(
            Fields::nested(&n, "stream_options.").bool("include_usage").unwrap_err().param.as_deref(),
            Some("stream_options.include_usage")
        );
    }
}
