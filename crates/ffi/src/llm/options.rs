//! `options_json` of `nucleus_llm_open`: the context and prompt settings of a handle. Absent
//! fields take `nucleus generate`'s defaults; an unknown field or a bad value is an error naming
//! the field.

use serde_json::{Map, Value};

/// What a handle is opened with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpenOptions {
    /// Context size in tokens (`None`: 4096, or the model's training context if smaller).
    pub(crate) n_ctx: Option<usize>,
    /// Most tokens decoded in one forward pass of a prefill (`None`: 512).
    pub(crate) n_batch: Option<usize>,
    /// CPU threads (`None`: the cores minus one, as `nucleus generate`).
    pub(crate) threads: Option<usize>,
    /// A Jinja chat template used instead of the model's own by `nucleus_llm_tokenize_chat`.
    pub(crate) chat_template: Option<String>,
    /// Mirror llama.cpp's own log to stderr.
    pub(crate) verbose: bool,
}

const FIELDS: &str = "n_ctx, n_batch, threads, chat_template, verbose";

/// A positive integer field.
fn count(field: &str, v: &Value) -> Result<usize, String> {
    v.as_u64()
        .filter(|&n| n >= 1 && n <= i32::MAX as u64)
        .map(|n| n as usize)
        .ok_or_else(|| format!("`{field}` must be an integer in 1..={}, got {v}", i32::MAX))
}

/// Parses `options_json` (an empty string means `{}`).
pub(crate) fn parse(json: &str) -> Result<OpenOptions, String> {
    let mut o = OpenOptions::default();
    if json.trim().is_empty() {
        return Ok(o);
    }
    let value: Value = serde_json::from_str(json).map_err(|e| format!("options_json is not valid JSON: {e}"))?;
    let obj: &Map<String, Value> = value.as_object().ok_or("options_json must be a JSON object")?;
    for (field, v) in obj {
        match field.as_str() {
            "n_ctx" => o.n_ctx = Some(count(field, v)?),
            "n_batch" => o.n_batch = Some(count(field, v)?),
            "threads" => o.threads = Some(count(field, v)?),
            "chat_template" => {
                let t = v.as_str().ok_or("`chat_template` must be a string (Jinja source)")?;
                o.chat_template = Some(t.to_string());
            }
            "verbose" => o.verbose = v.as_bool().ok_or("`verbose` must be true or false")?,
            other => return Err(format!("unknown field `{other}` in options_json; known fields: {FIELDS}")),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_errors() {
        assert_eq!(parse("").unwrap(), OpenOptions::default());
        let o = parse(r#"{"n_ctx": 512, "threads": 1, "n_batch": 64, "chat_template": "{{x}}", "verbose": false}"#)
            .unwrap();
        assert_eq!((o.n_ctx, o.threads, o.n_batch), (Some(512), Some(1), Some(64)));
        assert_eq!(o.chat_template.as_deref(), Some("{{x}}"));
        for (json, needle) in [
            (r#"{"ctx": 1}"#, "`ctx`"),
            (r#"{"threads": 0}"#, "`threads`"),
            (r#"{"n_ctx": -5}"#, "`n_ctx`"),
            (r#"{"n_batch": 1.5}"#, "`n_batch`"),
            (r#"{"chat_template": 3}"#, "`chat_template`"),
            (r#"{"verbose": 1}"#, "`verbose`"),
            ("[]", "JSON object"),
            ("{", "not valid JSON"),
        ] {
            let e = parse(json).unwrap_err();
            assert!(e.contains(needle), "{json}: {e}");
        }
    }
}
