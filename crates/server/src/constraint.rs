//! Output constraints (`response_format` json_object / json_schema, llama.cpp's `grammar` and
//! `json_schema`): read and checked here, and enforced in exactly one place, [`enforce`].
//!
//! [`enforce`] compiles the constraint with nucleus-grammar (through the runtime) and attaches
//! it to the sequence; a grammar that does not parse or a schema the strict compiler refuses
//! is a 400 naming the field, with line/column or keyword/pointer in the message.

use nucleus_runtime::{grammar_sampler, Model, OutputConstraint, Sequence};
use serde_json::Value;

use crate::body::shapes::{Grammar, SchemaValue};
use crate::body::Common;
use crate::errors::ApiError;

/// A constraint on the generated text.
#[derive(Clone, Debug, PartialEq)]
pub enum Constraint {
    /// Any JSON object (`response_format: {"type": "json_object"}`).
    JsonObject,
    /// JSON matching a schema (`response_format` json_schema, or llama.cpp's `json_schema`).
    JsonSchema {
        /// The field it came from, for errors.
        param: &'static str,
        /// The schema.
        schema: Value,
    },
    /// A GBNF grammar (llama.cpp's `grammar`).
    Grammar(String),
}

/// Reads `response_format`, `json_schema` and `grammar`. Malformed values are 400s; `text` (or
/// nothing) is no constraint.
pub fn parse(c: &Common) -> Result<Option<Constraint>, ApiError> {
    let mut found = None;
    if let Some(rf) = &c.response_format {
        match rf.kind.as_deref() {
            None => return Err(ApiError::missing("response_format.type")),
            Some("text") => {}
            Some("json_object") => found = Some(Constraint::JsonObject),
            Some("json_schema") => {
                let Some(js) = &rf.json_schema else {
                    return Err(ApiError::missing("response_format.json_schema"));
                };
                match js.name.as_deref() {
                    None => return Err(ApiError::missing("response_format.json_schema.name")),
                    Some(n)
                        if n.is_empty()
                            || n.len() > 64
                            || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
                    {
                        return Err(ApiError::invalid_value(
                            "response_format.json_schema.name",
                            "must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'",
                        ))
                    }
                    Some(_) => {}
                }
                let schema = js.schema.as_ref().map_or(Value::Object(Default::default()), |s| s.0.clone());
                found = Some(Constraint::JsonSchema { param: "response_format", schema });
            }
            Some(other) => {
                return Err(ApiError::invalid_value(
                    "response_format.type",
                    format!("'{other}' is not one of 'text', 'json_object', 'json_schema'"),
                ))
            }
        }
    }
    if let Some(SchemaValue(s)) = &c.json_schema {
        found = Some(Constraint::JsonSchema { param: "json_schema", schema: s.clone() });
    } else if let Some(Grammar(g)) = &c.grammar {
        if !g.trim().is_empty() && found.is_none() {
            found = Some(Constraint::Grammar(g.clone()));
        }
    }
    Ok(found)
}

/// The seam where constrained decoding plugs in: called for every sequence of a request
/// before it is queued, it makes `seq` obey `constraint` (a grammar sampler over `model`'s
/// shared vocabulary index). Bad grammars and unenforceable schemas are 400s.
pub fn enforce(constraint: Option<&Constraint>, model: &dyn Model, seq: &mut Sequence) -> Result<(), ApiError> {
    let Some(c) = constraint else { return Ok(()) };
    let (param, spec) = match c {
        Constraint::JsonObject => ("response_format", OutputConstraint::JsonObject),
        Constraint::JsonSchema { param, schema } => (*param, OutputConstraint::JsonSchema(schema.clone())),
        Constraint::Grammar(g) => ("grammar", OutputConstraint::Gbnf(g.clone())),
    };
    let grammar = grammar_sampler(model, &spec).map_err(|e| ApiError::invalid_value(param, e.to_string()))?;
    seq.set_grammar(grammar);
    Ok(())
}
