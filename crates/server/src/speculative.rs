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

use nucleus_runtime::{SpecOptions, SpecType};

use crate::body::Common;
use crate::engine::SeqJob;
use crate::errors::ApiError;
use crate::fields::int_in;

/// The server's speculation settings (the command line's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecDefaults {
    /// Where drafts come from unless a request says otherwise.
    pub kind: SpecType,
    /// Draft lengths and the n-gram match, unless a request says otherwise.
    pub opts: SpecOptions,
}

/// One overridden value and the field it came from (errors name it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    value: usize,
    name: &'static str,
}

/// A request's speculation fields, each checked on its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecRequest {
    kind: Option<SpecType>,
    draft_max: Option<Field>,
    draft_min: Option<Field>,
    ngram_size_n: Option<Field>,
}

/// Reads `speculative` and llama-server's `speculative.n_max` / `speculative.n_min` (the
/// object's values win over those two); each value out of range is a 400 naming its field.
pub fn parse(c: &Common) -> Result<SpecRequest, ApiError> {
    let field = |name: &'static str, v, lo, hi| -> Result<Option<Field>, ApiError> {
        Ok(int_in(name, v, lo, hi)?.map(|x| Field { value: x as usize, name }))
    };
    let flat_max = field("speculative.n_max", c.speculative_n_max.as_ref(), 1, 256)?;
    let flat_min = field("speculative.n_min", c.speculative_n_min.as_ref(), 0, 256)?;
    let Some(s) = &c.speculative else {
        return Ok(SpecRequest { draft_max: flat_max, draft_min: flat_min, ..Default::default() });
    };
    let kind = match s.kind.as_deref() {
        None => None,
        Some(k) => Some(k.parse::<SpecType>().map_err(|e| ApiError::invalid_value("speculative.type", e))?),
    };
    Ok(SpecRequest {
        kind,
        draft_max: field("speculative.draft_max", s.draft_max.as_ref(), 1, 256)?.or(flat_max),
        draft_min: field("speculative.draft_min", s.draft_min.as_ref(), 0, 256)?.or(flat_min),
        ngram_size_n: field("speculative.ngram_size_n", s.ngram_size_n.as_ref(), 1, 64)?,
    })
}

/// What this server can speculate with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Available {
    /// The model's logits are the same bits however tokens are batched (else nothing is
    /// drafted: a verify batch could change an answer).
    pub batch_invariant: bool,
    /// A draft model was loaded (`--model-draft`).
    pub draft_model: bool,
}

impl SpecRequest {
    /// The request's speculation over the server's: the kind and options each of its
    /// sequences drafts with, or `None` for none. A `draft_min` above `draft_max` is a 400
    /// naming the request's field; `type: draft` on a server without a draft model too.
    pub fn resolve(&self, d: &SpecDefaults, can: Available) -> Result<Option<(SpecType, SpecOptions)>, ApiError> {
        let kind = self.kind.unwrap_or(d.kind);
        let pick = |f: Option<Field>, default| f.map_or(default, |f| f.value);
        let opts = SpecOptions {
            draft_max: pick(self.draft_max, d.opts.draft_max),
            draft_min: pick(self.draft_min, d.opts.draft_min),
            min_match: pick(self.ngram_size_n, d.opts.min_match),
        };
        if opts.draft_min > opts.draft_max {
            let name = self.draft_min.or(self.draft_max).map_or("speculative.draft_min", |f| f.name);
            return Err(ApiError::invalid_value(
                name,
                format!("draft_min ({}) must not exceed draft_max ({})", opts.draft_min, opts.draft_max),
            ));
        }
        match kind {
            SpecType::None => Ok(None),
            SpecType::Draft if !can.draft_model => Err(ApiError::invalid_value(
                "speculative.type",
                "'draft' needs a draft model, and this server has none (start it with --model-draft)",
            )),
            _ if !can.batch_invariant => Ok(None),
            kind => Ok(Some((kind, opts))),
        }
    }
}

/// Makes every sequence of `seqs` draft with `opts`: n-gram drafts over its prompt and output,
/// or the draft model's.
pub fn attach(kind: SpecType, opts: SpecOptions, seqs: &mut [SeqJob]) {
    for s in seqs {
        match kind {
            SpecType::None => {}
            SpecType::Ngram => s.sequence.set_speculation_over(opts, &s.prompt),
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
        let (kind, o) = r.resolve(&ngram, ALL).unwrap().unwrap();
        assert_eq!((kind, o.draft_max, o.draft_min, o.min_match), (SpecType::Ngram, 4, 1, 2));
        // Off by the request; off by the server unless the request turns it on.
        let off = request(r#"{"speculative": {"type": "none"}}"#).unwrap();
        assert_eq!(off.resolve(&ngram, ALL).unwrap(), None);
        assert_eq!(request("{}").unwrap().resolve(&SpecDefaults::default(), ALL).unwrap(), None);
        let on = request(r#"{"speculative": {"type": "ngram"}}"#).unwrap();
        assert!(on.resolve(&SpecDefaults::default(), ALL).unwrap().is_some());
        // Not on a model whose logits depend on batching.
        let batchy = Available { batch_invariant: false, draft_model: false };
        assert_eq!(on.resolve(&ngram, batchy).unwrap(), None);
        // llama-server's flat fields; the object's win.
        let r = request(r#"{"speculative.n_max": 5, "speculative.n_min": 2}"#).unwrap();
        let (_, o) = r.resolve(&ngram, ALL).unwrap().unwrap();
        assert_eq!((o.draft_max, o.draft_min), (5, 2));
        let r = request(r#"{"speculative.n_max": 5, "speculative": {"draft_max": 7}}"#).unwrap();
        assert_eq!(r.resolve(&ngram, ALL).unwrap().unwrap().1.draft_max, 7);
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
        let e = request(r#"{"speculative": {"draft_min": 9, "draft_max": 4}}"#).unwrap().resolve(&ngram, ALL);
        assert_eq!(e.unwrap_err().param.as_deref(), Some("speculative.draft_min"));
        let e = request(r#"{"speculative": {"draft_max": 0}}"#);
        assert!(e.is_err());
        let e = request(r#"{"speculative.n_max": 4, "speculative.n_min": 6}"#).unwrap().resolve(&ngram, ALL);
        assert_eq!(e.unwrap_err().param.as_deref(), Some("speculative.n_min"));
        let e = request(r#"{"speculative": {"type": "draft"}}"#).unwrap().resolve(&ngram, ALL);
        assert_eq!(e.unwrap_err().param.as_deref(), Some("speculative.type"));
    }
}
