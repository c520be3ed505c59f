//! Python keyword arguments to the `serde_json` map that [`crate::params`] reads: a mechanical
//! conversion (None, bool, int, float, str, list/tuple, dict; NumPy scalars through `int()` /
//! `float()`), with non-finite floats spelled "inf", "-inf", "nan" since JSON has none.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

fn float_value(x: f64) -> Value {
    match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::String("nan".into()),
        None if x > 0.0 => Value::String("inf".into()),
        None => Value::String("-inf".into()),
    }
}

/// One value; `field` names it in errors.
pub(crate) fn to_value(field: &str, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if v.is_instance_of::<PyInt>() {
        return match v.extract::<i64>() {
            Ok(i) => Ok(Value::from(i)),
            Err(_) => Err(PyValueError::new_err(format!("`{field}` = {v} is out of range"))),
        };
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        return Ok(float_value(f.value()));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_string()));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, x) in d.iter() {
            m.insert(k.str()?.to_str()?.to_string(), to_value(field, &x)?);
        }
        return Ok(Value::Object(m));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for x in v.try_iter()? {
            items.push(to_value(field, &x?)?);
        }
        return Ok(Value::Array(items));
    }
    // NumPy scalars and other numbers: integers first (`__index__`), then `__float__`.
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Value::from(i));
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(float_value(f));
    }
    Err(PyValueError::new_err(format!("`{field}` has an unsupported type {}", v.get_type().name()?)))
}

/// Keyword arguments to a name → value map.
pub(crate) fn dict_to_map(d: &Bound<'_, PyDict>) -> PyResult<Map<String, Value>> {
    let mut m = Map::new();
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        let val = to_value(&key, &v)?;
        m.insert(key, val);
    }
    Ok(m)
}
