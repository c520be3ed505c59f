//! A request's speculative-decoding fields (the `speculative` object — `type`, `draft_max`,
//! `draft_min`, `ngram_size_n` — and llama-server's flat `speculative.n_max` /
//! `speculative.n_min`), checked once into [`SpecType`] and [`SpecOptions`].
//!
//! One reader for every surface that takes the object: the server (its request bodies), the C
//! ABI (`params_json`), Python (`speculative=`) and Node (`speculative`). Each field's name and
//! range is written once, in [`FIELDS`]; an error names the field and is worded as the server's
//! 400s are, so a bad value reads the same everywhere.

use serde_json::{Number, Value};

use crate::speculative::{SpecOptions, SpecType};

/// A checked integer field: its name in errors and its inclusive range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecField {
    /// The name errors give (`speculative.draft_max`).
    pub name: &'static str,
    /// Smallest value allowed.
    pub min: i64,
    /// Largest value allowed.
    pub max: i64,
}

/// `speculative.draft_max`: most tokens drafted per pass.
pub const DRAFT_MAX: SpecField = SpecField { name: "speculative.draft_max", min: 1, max: 256 };
/// `speculative.draft_min`: shorter drafts are not used.
pub const DRAFT_MIN: SpecField = SpecField { name: "speculative.draft_min", min: 0, max: 256 };
/// `speculative.ngram_size_n`: shortest match that may draft.
pub const NGRAM_SIZE_N: SpecField = SpecField { name: "speculative.ngram_size_n", min: 1, max: 64 };
/// llama-server's flat `speculative.n_max` (as `draft_max`).
pub const FLAT_N_MAX: SpecField = SpecField { name: "speculative.n_max", min: 1, max: 256 };
/// llama-server's flat `speculative.n_min` (as `draft_min`).
pub const FLAT_N_MIN: SpecField = SpecField { name: "speculative.n_min", min: 0, max: 256 };

/// Every integer field, for tables and schemas.
pub const FIELDS: [SpecField; 5] = [DRAFT_MAX, DRAFT_MIN, NGRAM_SIZE_N, FLAT_N_MAX, FLAT_N_MIN];

/// The keys of the `speculative` object.
const OBJECT_KEYS: &str = "type, draft_max, draft_min, ngram_size_n";

/// What is wrong with a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecProblem {
    /// Not of the type named (`an integer`, `a string`, `an object`).
    WrongType(&'static str),
    /// An integer above the field's maximum (`got` as written).
    AboveMax { max: i64, got: String },
    /// An integer below the field's minimum.
    BelowMin { min: i64, got: String },
    /// `type: draft` where no draft model is loaded.
    NoDraftModel,
    /// Any other value that is not allowed, and why.
    Invalid(String),
}

/// A bad speculative field: which one and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecFieldError {
    /// The field's full name (`speculative.draft_max`, `speculative.n_min`, `speculative`).
    pub field: String,
    /// What is wrong.
    pub problem: SpecProblem,
}

impl SpecFieldError {
    fn new(field: impl Into<String>, problem: SpecProblem) -> Self {
        SpecFieldError { field: field.into(), problem }
    }
}

impl std::fmt::Display for SpecFieldError {
    /// The server's 400 messages (OpenAI's wording).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = &self.field;
        match &self.problem {
            SpecProblem::WrongType(what) => write!(f, "Invalid type for '{name}': expected {what}."),
            SpecProblem::AboveMax { max, got } => write!(
                f,
                "Invalid '{name}': integer above maximum value. Expected a value <= {max}, but got {got} instead."
            ),
            SpecProblem::BelowMin { min, got } => write!(
                f,
                "Invalid '{name}': integer below minimum value. Expected a value >= {min}, but got {got} instead."
            ),
            SpecProblem::NoDraftModel => write!(f, "Invalid '{name}': 'draft' needs a draft model, and none is loaded"),
            SpecProblem::Invalid(why) => write!(f, "Invalid '{name}': {why}"),
        }
    }
}

impl std::error::Error for SpecFieldError {}

/// One given value and the field it came from (errors name it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Given {
    value: usize,
    field: SpecField,
}

/// The raw fields of one request, as the caller found them (`None`: absent or `null`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SpecParts<'a> {
    /// `speculative.type`.
    pub kind: Option<&'a Value>,
    /// `speculative.draft_max`.
    pub draft_max: Option<&'a Value>,
    /// `speculative.draft_min`.
    pub draft_min: Option<&'a Value>,
    /// `speculative.ngram_size_n`.
    pub ngram_size_n: Option<&'a Value>,
    /// llama-server's `speculative.n_max`.
    pub flat_n_max: Option<&'a Value>,
    /// llama-server's `speculative.n_min`.
    pub flat_n_min: Option<&'a Value>,
}

/// A request's speculation fields, each checked on its own; [`SpecRequest::resolve`] puts
/// them over the defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecRequest {
    kind: Option<SpecType>,
    draft_max: Option<Given>,
    draft_min: Option<Given>,
    ngram_size_n: Option<Given>,
}

/// Where a request's speculation falls back to, and what the caller can run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecDefaults {
    /// Where drafts come from unless a request says otherwise.
    pub kind: SpecType,
    /// Draft lengths and the n-gram match, unless a request says otherwise.
    pub opts: SpecOptions,
}

/// What the caller can speculate with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Available {
    /// The model's logits are the same bits however tokens are batched (else nothing is
    /// drafted: a verify batch could change an answer; [`crate::Model::batch_invariant`]).
    pub batch_invariant: bool,
    /// A draft model is loaded.
    pub draft_model: bool,
}

/// `v` as an integer of `f`'s range (an integral float such as `4.0` is read as 4).
fn int_of(f: SpecField, v: &Value) -> Result<usize, SpecFieldError> {
    let err = |p| Err(SpecFieldError::new(f.name, p));
    let above = |got: &dyn std::fmt::Display| SpecProblem::AboveMax { max: f.max, got: got.to_string() };
    let below = |got: &dyn std::fmt::Display| SpecProblem::BelowMin { min: f.min, got: got.to_string() };
    let Value::Number(n) = v else { return err(SpecProblem::WrongType("an integer")) };
    let x = match integer(n) {
        Ok(x) => x,
        Err(Some(true)) => return err(above(n)),
        Err(Some(false)) => return err(below(n)),
        Err(None) => return err(SpecProblem::WrongType("an integer")),
    };
    if x > f.max {
        return err(above(&x));
    }
    if x < f.min {
        return err(below(&x));
    }
    Ok(x as usize)
}

/// A JSON number as an `i64`: `Err(Some(true))` above its range, `Err(Some(false))` below,
/// `Err(None)` not an integer.
fn integer(n: &Number) -> Result<i64, Option<bool>> {
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    if n.as_u64().is_some() {
        return Err(Some(true));
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.fract() != 0.0 || !f.is_finite() {
        return Err(None);
    }
    if f > i64::MAX as f64 {
        return Err(Some(true));
    }
    if f < i64::MIN as f64 {
        return Err(Some(false));
    }
    Ok(f as i64)
}

impl SpecRequest {
    /// Checks each given field; the object's `draft_max` / `draft_min` win over llama-server's
    /// flat `n_max` / `n_min`.
    pub fn from_parts(p: SpecParts<'_>) -> Result<Self, SpecFieldError> {
        let given = |f: SpecField, v: Option<&Value>| -> Result<Option<Given>, SpecFieldError> {
            match v {
                None | Some(Value::Null) => Ok(None),
                Some(v) => Ok(Some(Given { value: int_of(f, v)?, field: f })),
            }
        };
        let flat_max = given(FLAT_N_MAX, p.flat_n_max)?;
        let flat_min = given(FLAT_N_MIN, p.flat_n_min)?;
        let kind = match p.kind {
            None | Some(Value::Null) => None,
            Some(Value::String(k)) => Some(
                k.parse::<SpecType>().map_err(|e| SpecFieldError::new("speculative.type", SpecProblem::Invalid(e)))?,
            ),
            Some(_) => return Err(SpecFieldError::new("speculative.type", SpecProblem::WrongType("a string"))),
        };
        Ok(SpecRequest {
            kind,
            draft_max: given(DRAFT_MAX, p.draft_max)?.or(flat_max),
            draft_min: given(DRAFT_MIN, p.draft_min)?.or(flat_min),
            ngram_size_n: given(NGRAM_SIZE_N, p.ngram_size_n)?,
        })
    }

    /// Reads the `speculative` object itself (`null`: nothing asked). Keys other than
    /// `type`, `draft_max`, `draft_min` and `ngram_size_n` are refused, so a misspelt one is
    /// not silently ignored.
    pub fn from_json(v: &Value) -> Result<Self, SpecFieldError> {
        let o = match v {
            Value::Null => return Ok(SpecRequest::default()),
            Value::Object(o) => o,
            _ => return Err(SpecFieldError::new("speculative", SpecProblem::WrongType("an object"))),
        };
        if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "type" | "draft_max" | "draft_min" | "ngram_size_n")) {
            let why = format!("unknown field (the fields are {OBJECT_KEYS})");
            return Err(SpecFieldError::new(format!("speculative.{k}"), SpecProblem::Invalid(why)));
        }
        SpecRequest::from_parts(SpecParts {
            kind: o.get("type"),
            draft_max: o.get("draft_max"),
            draft_min: o.get("draft_min"),
            ngram_size_n: o.get("ngram_size_n"),
            ..SpecParts::default()
        })
    }

    /// Whether the request named a `type`.
    pub fn kind(&self) -> Option<SpecType> {
        self.kind
    }

    /// The request over `d`: the kind and options to draft with, or `None` for none (also
    /// for a model whose logits depend on batching). A `draft_min` above `draft_max` names
    /// the request's field; `type: draft` without a draft model is [`SpecProblem::NoDraftModel`].
    pub fn resolve(&self, d: &SpecDefaults, can: Available) -> Result<Option<(SpecType, SpecOptions)>, SpecFieldError> {
        let kind = self.kind.unwrap_or(d.kind);
        let pick = |g: Option<Given>, default| g.map_or(default, |g| g.value);
        let opts = SpecOptions {
            draft_max: pick(self.draft_max, d.opts.draft_max),
            draft_min: pick(self.draft_min, d.opts.draft_min),
            min_match: pick(self.ngram_size_n, d.opts.min_match),
        };
        if opts.draft_min > opts.draft_max {
            let name = self.draft_min.or(self.draft_max).map_or(DRAFT_MIN.name, |g| g.field.name);
            let why = format!("draft_min ({}) must not exceed draft_max ({})", opts.draft_min, opts.draft_max);
            return Err(SpecFieldError::new(name, SpecProblem::Invalid(why)));
        }
        match kind {
            SpecType::None => Ok(None),
            SpecType::Draft if !can.draft_model => {
                Err(SpecFieldError::new("speculative.type", SpecProblem::NoDraftModel))
            }
            _ if !can.batch_invariant => Ok(None),
            kind => Ok(Some((kind, opts))),
        }
    }
}

/// The `speculative` option of the C, Python and Node generation APIs: absent or `null` is
/// off; an object drafts with the model's draft model when it has one (`draft_model`: the C
/// handle's `nucleus_llm_set_draft_model`, Python's `Model(..., draft_model=)`, Node's
/// `new Model(..., { draftModel })`), else n-grams, unless its `type` says otherwise, with
/// [`SpecOptions::default`] under the fields it gives. `type: draft` without a draft model is
/// refused; for a model whose logits depend on batching nothing is drafted.
pub fn binding_option(
    v: Option<&Value>,
    batch_invariant: bool,
    draft_model: bool,
) -> Result<Option<(SpecType, SpecOptions)>, SpecFieldError> {
    let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(None) };
    let kind = if draft_model { SpecType::Draft } else { SpecType::Ngram };
    let defaults = SpecDefaults { kind, opts: SpecOptions::default() };
    let can = Available { batch_invariant, draft_model };
    SpecRequest::from_json(v)?.resolve(&defaults, can).map_err(|e| match e.problem {
        SpecProblem::NoDraftModel => SpecFieldError::new(
            e.field,
            SpecProblem::Invalid(
                "'draft' needs a draft model, and this model has none (give it a draft model of its vocabulary, \
                 or use 'ngram')"
                    .into(),
            ),
        ),
        _ => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Available = Available { batch_invariant: true, draft_model: false };
    const NGRAM: SpecDefaults =
        SpecDefaults { kind: SpecType::Ngram, opts: SpecOptions { draft_max: 16, draft_min: 1, min_match: 3 } };

    fn object(text: &str) -> Result<SpecRequest, SpecFieldError> {
        SpecRequest::from_json(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn fields_over_defaults() {
        let r = object(r#"{"draft_max": 4, "ngram_size_n": 2}"#).unwrap();
        let (kind, o) = r.resolve(&NGRAM, ALL).unwrap().unwrap();
        assert_eq!((kind, o.draft_max, o.draft_min, o.min_match), (SpecType::Ngram, 4, 1, 2));
        assert_eq!(object(r#"{"type": "none"}"#).unwrap().resolve(&NGRAM, ALL).unwrap(), None);
        assert_eq!(object("null").unwrap().resolve(&SpecDefaults::default(), ALL).unwrap(), None);
        assert_eq!(object(r#"{"draft_max": 8.0, "draft_min": null}"#).unwrap().draft_max.unwrap().value, 8);
        let batchy = Available { batch_invariant: false, draft_model: false };
        assert_eq!(object(r#"{"type": "ngram"}"#).unwrap().resolve(&NGRAM, batchy).unwrap(), None);
        let v = serde_json::json!(5);
        let flat = SpecRequest::from_parts(SpecParts { flat_n_max: Some(&v), ..Default::default() }).unwrap();
        assert_eq!(flat.resolve(&NGRAM, ALL).unwrap().unwrap().1.draft_max, 5);
    }

    #[test]
    fn errors_name_the_field_in_the_servers_words() {
        let cases = [
            (r#"{"type": "medusa"}"#, "Invalid 'speculative.type': 'medusa' is not one of 'none', 'ngram', 'draft'"),
            (r#"{"type": 1}"#, "Invalid type for 'speculative.type': expected a string."),
            (
                r#"{"draft_max": 257}"#,
                "Invalid 'speculative.draft_max': integer above maximum value. Expected a value <= 256, but got 257 instead.",
            ),
            (
                r#"{"draft_min": -1}"#,
                "Invalid 'speculative.draft_min': integer below minimum value. Expected a value >= 0, but got -1 instead.",
            ),
            (r#"{"ngram_size_n": 1.5}"#, "Invalid type for 'speculative.ngram_size_n': expected an integer."),
            (r#"{"draft_max": "8"}"#, "Invalid type for 'speculative.draft_max': expected an integer."),
            (r#"{"draft_mx": 8}"#, "Invalid 'speculative.draft_mx': unknown field (the fields are type, draft_max, draft_min, ngram_size_n)"),
            ("3", "Invalid type for 'speculative': expected an object."),
        ];
        for (text, message) in cases {
            assert_eq!(object(text).unwrap_err().to_string(), message, "{text}");
        }
        let e = object(r#"{"draft_min": 9, "draft_max": 4}"#).unwrap().resolve(&NGRAM, ALL).unwrap_err();
        assert_eq!(e.field, "speculative.draft_min");
        assert_eq!(e.to_string(), "Invalid 'speculative.draft_min': draft_min (9) must not exceed draft_max (4)");
        let e = object(r#"{"type": "draft"}"#).unwrap().resolve(&NGRAM, ALL).unwrap_err();
        assert_eq!((e.field.as_str(), e.problem), ("speculative.type", SpecProblem::NoDraftModel));
    }

    #[test]
    fn the_bindings_option() {
        let on = |text: &str| binding_option(Some(&serde_json::from_str(text).unwrap()), true, false);
        assert_eq!(binding_option(None, true, false).unwrap(), None);
        assert_eq!(on("null").unwrap(), None);
        assert_eq!(on("{}").unwrap(), Some((SpecType::Ngram, SpecOptions::default())));
        assert_eq!(on(r#"{"type": "none", "draft_max": 4}"#).unwrap(), None);
        assert_eq!(on(r#"{"draft_max": 4}"#).unwrap().unwrap().1.draft_max, 4);
        assert_eq!(binding_option(Some(&serde_json::json!({})), false, false).unwrap(), None);
        let e = on(r#"{"type": "draft"}"#).unwrap_err();
        assert_eq!(e.field, "speculative.type");
        assert!(e.to_string().contains("this model has none"), "{e}");
        assert_eq!(on(r#"{"draft_max": 0}"#).unwrap_err().field, "speculative.draft_max");
    }

    #[test]
    fn the_bindings_option_with_a_draft_model() {
        let on = |text: &str| binding_option(Some(&serde_json::from_str(text).unwrap()), true, true);
        // With a draft model an object drafts with it unless it asks for n-grams.
        assert_eq!(on("{}").unwrap(), Some((SpecType::Draft, SpecOptions::default())));
        let (kind, o) = on(r#"{"type": "draft", "draft_max": 4, "draft_min": 2}"#).unwrap().unwrap();
        assert_eq!((kind, o.draft_max, o.draft_min), (SpecType::Draft, 4, 2));
        assert_eq!(on(r#"{"type": "ngram"}"#).unwrap().unwrap().0, SpecType::Ngram);
        assert_eq!(on(r#"{"type": "none"}"#).unwrap(), None);
        assert_eq!(binding_option(None, true, true).unwrap(), None);
        assert_eq!(binding_option(Some(&serde_json::json!({"type": "draft"})), false, true).unwrap(), None);
        assert_eq!(
            on(r#"{"type": "draft", "draft_min": 9, "draft_max": 4}"#).unwrap_err().field,
            "speculative.draft_min"
        );
    }
}
