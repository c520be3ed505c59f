//! `params_json` to [`SamplingParams`]: the text is parsed as one JSON object and read by
//! nucleus-sampler's [`SamplingParams::from_map`] (llama.cpp's `common_params_sampling` field
//! names, the same reader as the Python and Node bindings). Only the JSON text itself is this
//! crate's to check.

use nucleus_sampler::params_map::Vocabulary;
use nucleus_sampler::SamplingParams;
use serde_json::{Map, Value};

/// Parses `params_json` over llama.cpp's defaults and validates the result for `vocab`.
pub(crate) fn parse(json: &str, vocab: Vocabulary) -> Result<SamplingParams, String> {
    SamplingParams::from_map(&object(json)?, vocab).map_err(|e| e.to_string())
}

/// `params_json` as a JSON object.
fn object(json: &str) -> Result<Map<String, Value>, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| format!("params_json is not valid JSON: {e}"))?;
    let Value::Object(fields) = value else {
        return Err("params_json must be a JSON object of sampling parameters".to_string());
    };
    Ok(fields)
}

/// A generation's `params_json`: the sampling parameters, and the `speculative` object the
/// generation functions take besides them (unread here: nucleus-runtime checks it).
#[cfg(feature = "llm")]
pub(crate) fn parse_generation(json: &str, vocab: Vocabulary) -> Result<(SamplingParams, Option<Value>), String> {
    let mut fields = object(json)?;
    let speculative = fields.remove("speculative");
    let params = SamplingParams::from_map(&fields, vocab).map_err(|e| e.to_string())?;
    Ok((params, speculative))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleus_sampler::{MirostatMode, SamplerType, DEFAULT_SEED};

    const IDS: Vocabulary = Vocabulary::Ids(10);

    #[test]
    fn defaults_and_fields() {
        assert_eq!(parse("{}", IDS).unwrap(), SamplingParams::default());
        let p = parse(
            r#"{"seed": 7, "temp": 0.5, "top_k": 3, "samplers": "kt", "mirostat": 2,
                "logit_bias": [[1, -1.5], [2, "-inf"], [3, false]], "dry_sequence_breakers": ["\n"]}"#,
            IDS,
        )
        .unwrap();
        assert_eq!((p.seed, p.temp, p.top_k, p.mirostat), (7, 0.5, 3, MirostatMode::V2));
        assert_eq!(p.samplers, vec![SamplerType::TopK, SamplerType::Temperature]);
        assert_eq!(p.logit_bias, vec![(1, -1.5), (2, f32::NEG_INFINITY), (3, f32::NEG_INFINITY)]);
        assert_eq!(parse(r#"{"seed": -1}"#, IDS).unwrap().seed, DEFAULT_SEED);
        let names = parse(r#"{"samplers": ["top_k", "temperature"]}"#, IDS).unwrap();
        assert_eq!(names.samplers, vec![SamplerType::TopK, SamplerType::Temperature]);
        assert_eq!(parse(r#"{"temp": null}"#, IDS).unwrap(), SamplingParams::default());
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
            (r#"{"dry_multiplier": 0.8}"#, "`dry_sequence_breakers`"),
            ("[1]", "JSON object"),
            ("{", "not valid JSON"),
        ];
        for (json, needle) in cases {
            let e = parse(json, IDS).unwrap_err();
            assert!(e.contains(needle), "{json}: {e}");
        }
        assert!(parse(r#"{"dry_multiplier": 0.8}"#, Vocabulary::Model(10)).is_ok());
    }
}
