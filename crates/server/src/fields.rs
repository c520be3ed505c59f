//! Range checks of request numbers (read as [`Integer`] and [`Number`] by [`crate::body`]),
//! each error a 400 naming the field and saying why.

use serde_json::Value;

use crate::body::scalars::{Integer, Number};
use crate::errors::ApiError;

/// An integer field in `[lo, hi]`, `None` when absent. Integral floats (`5.0`) are accepted
/// as integers.
pub fn int_in(name: &str, v: Option<&Integer>, lo: i64, hi: i64) -> Result<Option<i64>, ApiError> {
    let Some(v) = v else { return Ok(None) };
    check_int(name, &v.value(), lo, hi).map(Some)
}

/// A decimal field in `[lo, hi]` (as f32; values that are not finite as f32 are out of range),
/// `None` when absent.
pub fn f32_in(name: &str, v: Option<Number>, lo: f32, hi: f32) -> Result<Option<f32>, ApiError> {
    let Some(Number(x)) = v else { return Ok(None) };
    check_f32(name, x, lo, hi).map(Some)
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

    fn int(v: Value) -> Integer {
        let Value::Number(n) = v else { panic!("not a number") };
        Integer(n)
    }

    #[test]
    fn numbers_are_range_checked_and_named() {
        let t = Some(Number(3.0));
        assert_eq!(f32_in("t", t, 0.0, 2.0).unwrap_err().code, Some("decimal_above_max_value"));
        assert_eq!(f32_in("t", t, 0.0, 2.0).unwrap_err().param.as_deref(), Some("t"));
        assert_eq!(int_in("k", Some(&int(json!(2.5))), 0, 10).unwrap_err().code, Some("invalid_type"));
        assert_eq!(int_in("n", Some(&int(json!(5))), 0, 10).unwrap(), Some(5));
        assert_eq!(int_in("n", Some(&int(json!(5.0))), 0, 10).unwrap(), Some(5));
        assert_eq!(int_in("n", Some(&int(json!(5))), 6, 10).unwrap_err().code, Some("integer_below_min_value"));
        assert_eq!(f32_in("big", Some(Number(1e300)), -1e30, 1e30).unwrap_err().code, Some("decimal_above_max_value"));
        assert_eq!(f32_in("z", None, 0.0, 1.0).unwrap(), None);
        let u = int(json!(18446744073709551615u64));
        assert_eq!(int_in("u", Some(&u), 0, 10).unwrap_err().code, Some("integer_above_max_value"));
    }
}
