//! Speculative decoding in the server (docs/speculative.md): the server's settings
//! (`--spec-type`, `--draft-max`, `--draft-min`, `--spec-ngram-size-n`), a request's override
//! (the `speculative` extension object, and llama-server's `speculative.n_max` /
//! `speculative.n_min`), checked into the options each sequence drafts with.
//!
//! With a draft model (`--model-draft`, [`nucleus_runtime::DraftModel`]) the engine asks it for
//! the drafts of requests of `type: draft`; they are verified the same way.
//!
//! Drafts ride in the same decode call as the other slots' tokens (the runtime's engine), and
//! each is verified by the request's own sampler chain, so a seeded answer is the same with
//! speculation on or off — provided the model's logits do not depend on batching
//! ([`nucleus_runtime::Model::batch_invariant`]); where they do, speculation stays off.

use std::sync::Arc;

use nucleus_runtime::{NgramCache, SpecFieldError, SpecOptions, SpecParts, SpecProblem, SpecType};

use crate::body::scalars::Integer;
use crate::body::Common;
use crate::engine::SeqJob;
use crate::errors::ApiError;

/// What this server can speculate with (batch invariance, a draft model).
pub use nucleus_runtime::SpecAvailable as Available;
/// The server's speculation settings (the command line's): nucleus-runtime's, which also
/// checks a request's fields ([`nucleus_runtime::SpecRequest`], shared with the C, Python and
/// Node APIs).
pub use nucleus_runtime::SpecDefaults;
/// A request's speculation fields, each checked on its own.
pub use nucleus_runtime::SpecRequest;

/// A bad speculative field as the 400 naming it.
fn api_error(e: SpecFieldError) -> ApiError {
    let name = e.field.as_str();
    match e.problem {
        SpecProblem::WrongType(what) => ApiError::wrong_type(name, what),
        SpecProblem::AboveMax { max, got } => ApiError::above_max(name, max, got, true),
        SpecProblem::BelowMin { min, got } => ApiError::below_min(name, min, got, true),
        SpecProblem::NoDraftModel => ApiError::invalid_value(
            name,
            "'draft' needs a draft model, and this server has none (start it with --model-draft)",
        ),
        SpecProblem::Invalid(why) => ApiError::invalid_value(name, why),
    }
}

/// Reads `speculative` and llama-server's `speculative.n_max` / `speculative.n_min` (the
/// object's values win over those two); each value out of range is a 400 naming its field.
pub fn parse(c: &Common) -> Result<SpecRequest, ApiError> {
    let value = |i: Option<&Integer>| i.map(Integer::value);
    let s = c.speculative.as_ref();
    let kind = s.and_then(|s| s.kind.clone()).map(serde_json::Value::String);
    let (max, min, n) = (
        value(s.and_then(|s| s.draft_max.as_ref())),
        value(s.and_then(|s| s.draft_min.as_ref())),
        value(s.and_then(|s| s.ngram_size_n.as_ref())),
    );
    let (flat_max, flat_min) = (value(c.speculative_n_max.as_ref()), value(c.speculative_n_min.as_ref()));
    SpecRequest::from_parts(SpecParts {
        kind: kind.as_ref(),
        draft_max: max.as_ref(),
        draft_min: min.as_ref(),
        ngram_size_n: n.as_ref(),
        flat_n_max: flat_max.as_ref(),
        flat_n_min: flat_min.as_ref(),
    })
    .map_err(api_error)
}

/// The request's speculation over the server's: the kind and options each of its sequences
/// drafts with, or `None` for none. A `draft_min` above `draft_max` is a 400 naming the
/// request's field; `type: draft` on a server without a draft model too.
pub fn resolve(r: &SpecRequest, d: &SpecDefaults, can: Available) -> Result<Option<(SpecType, SpecOptions)>, ApiError> {
    r.resolve(d, can).map_err(api_error)
}

/// Makes every sequence of `seqs` draft with `opts`: n-gram drafts over its prompt and output
/// (and over recent requests' tokens, with the server's `cache`), or the draft model's.
pub fn attach(kind: SpecType, opts: SpecOptions, cache: Option<&Arc<NgramCache>>, seqs: &mut [SeqJob]) {
    for s in seqs {
        match kind {
            SpecType::None => {}
            SpecType::Ngram => {
                s.sequence.set_speculation_over(opts, &s.prompt);
                if let Some(c) = cache {
                    s.sequence.set_speculation_cache(c.clone());
                }
            }
            SpecType::Draft => s.sequence.set_model_speculation(opts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{decode, ChatBody};

    fn request(text: &str) -> Result<SpecRequest, ApiError> {
        let body: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).unwrap();
        let (_, c) = decode::<ChatBody>(&body)?.split();
        parse(&c)
    }

    const ALL: Available = Available { batch_invariant: true, draft_model: false };

    #[test]
    fn the_request_goes_over_the_server() {
        let ngram = SpecDefaults { kind: SpecType::Ngram, opts: SpecOptions::default() };
        let r = request(r#"{"speculative": {"draft_max": 4, "ngram_size_n": 2}}"#).unwrap();
        let (kind, o) = resolve(&r, &ngram, ALL).unwrap().unwrap();
        assert_eq!((kind, o.draft_max, o.draft_min, o.min_match), (SpecType::Ngram, 4, 1, 2));
        // Off by the request; off by the server unless the request turns it on.
        let off = request(r#"{"speculative": {"type": "none"}}"#).unwrap();
        assert_eq!(resolve(&off, &ngram, ALL).unwrap(), None);
        assert_eq!(resolve(&request("{}").unwrap(), &SpecDefaults::default(), ALL).unwrap(), None);
        let on = request(r#"{"speculative": {"type": "ngram"}}"#).unwrap();
        assert!(resolve(&on, &SpecDefaults::default(), ALL).unwrap().is_some());
        // Not on a model whose logits depend on batching.
        let batchy = Available { batch_invariant: false, draft_model: false };
        assert_eq!(resolve(&on, &ngram, batchy).unwrap(), None);
        // llama-server's flat fields; the object's win.
        let r = request(r#"{"speculative.n_max": 5, "speculative.n_min": 2}"#).unwrap();
        let (_, o) = resolve(&r, &ngram, ALL).unwrap().unwrap();
        assert_eq!((o.draft_max, o.draft_min), (5, 2));
        let r = request(r#"{"speculative.n_max": 5, "speculative": {"draft_max": 7}}"#).unwrap();
        assert_eq!(resolve(&r, &ngram, ALL).unwrap().unwrap().1.draft_max, 7);
    }

    /// `/openapi.json`'s ranges (written as attributes on the body's `Speculative`) are the
    /// ones nucleus-runtime checks.
    #[test]
    fn the_schema_ranges_are_the_checked_ones() {
        let schema = serde_json::to_value(schemars::schema_for!(crate::body::shapes::Speculative)).unwrap();
        use nucleus_runtime::spec_request::{DRAFT_MAX, DRAFT_MIN, NGRAM_SIZE_N};
        for f in [DRAFT_MAX, DRAFT_MIN, NGRAM_SIZE_N] {
            let key = f.name.strip_prefix("speculative.").unwrap();
            let p = &schema["properties"][key];
            assert_eq!((p["minimum"].as_i64(), p["maximum"].as_i64()), (Some(f.min), Some(f.max)), "{key}: {p}");
        }
    }

    #[test]
    fn bad_values_name_their_field() {
        let ngram = SpecDefaults { kind: SpecType::Ngram, opts: SpecOptions::default() };
        let cases = [
            (r#"{"speculative": {"type": "medusa"}}"#, "speculative.type"),
            (r#"{"speculative": {"draft_max": 0}}"#, "speculative.draft_max"),
            (r#"{"speculative": {"draft_max": 257}}"#, "speculative.draft_max"),
            (r#"{"speculative": {"draft_min": -1}}"#, "speculative.draft_min"),
            (r#"{"speculative": {"ngram_size_n": 65}}"#, "speculative.ngram_size_n"),
            (r#"{"speculative": {"draft_max": 1.5}}"#, "speculative.draft_max"),
            (r#"{"speculative": {"draft_max": "8"}}"#, "speculative.draft_max"),
            (r#"{"speculative": 3}"#, "speculative"),
            (r#"{"speculative.n_max": 0}"#, "speculative.n_max"),
            (r#"{"speculative.n_min": true}"#, "speculative.n_min"),
        ];
        for (text, param) in cases {
            let e = request(text).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{text}: {}", e.message);
            assert_eq!(e.status.as_u16(), 400, "{text}");
        }
        let e = resolve(&request(r#"{"speculative": {"draft_min": 9, "draft_max": 4}}"#).unwrap(), &ngram, ALL);
        assert_eq!(e.unwrap_err().param.as_deref(), Some("speculative.draft_min"));
        let e = request(r#"{"speculative": {"draft_max": 0}}"#);
        assert!(e.is_err());
        let e = resolve(&request(r#"{"speculative.n_max": 4, "speculative.n_min": 6}"#).unwrap(), &ngram, ALL);
        assert_eq!(e.unwrap_err().param.as_deref(), Some("speculative.n_min"));
        let e = resolve(&request(r#"{"speculative": {"type": "draft"}}"#).unwrap(), &ngram, ALL);
        assert_eq!(e.unwrap_err().param.as_deref(), Some("speculative.type"));
    }
}
