//! Reads a logits file for `nucleus sample`: a JSON array of numbers, a JSON object
//! `{"logits": [...]}`, or raw little-endian `f32` (`.f32` files).
//!
//! JSON cannot spell infinity, so the strings `"-inf"`, `"inf"` and `"nan"` are accepted too
//! (NaN is then rejected by the sampler with a clear error).

use std::path::Path;

use serde_json::Value;

/// Loads the logits row from `path`.
pub fn read_logits(path: &Path) -> Result<Vec<f32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read logits file {}: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("f32")) {
        if bytes.len() % 4 != 0 {
            return Err(format!("{}: raw f32 file has {} bytes, not a multiple of 4", path.display(), bytes.len()));
        }
        return Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect());
    }
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{}: malformed JSON: {e}", path.display()))?;
    let arr = match &v {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("logits") {
            Some(Value::Array(a)) => a,
            _ => return Err(format!("{}: expected an array or an object with a \"logits\" array", path.display())),
        },
        _ => return Err(format!("{}: expected an array or an object with a \"logits\" array", path.display())),
    };
    arr.iter()
        .enumerate()
        .map(|(i, x)| match x {
            Value::Number(n) => {
                n.as_f64().map(|f| f as f32).ok_or_else(|| format!("{}: logit {i} is not a number", path.display()))
            }
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "-inf" | "-infinity" => Ok(f32::NEG_INFINITY),
                "inf" | "+inf" | "infinity" | "+infinity" => Ok(f32::INFINITY),
                "nan" => Ok(f32::NAN),
                _ => Err(format!("{}: logit {i} is the string {s:?}, not a number", path.display())),
            },
            _ => Err(format!("{}: logit {i} is not a number", path.display())),
        })
        .collect()
}
