//! Output constraints (`response_format` json_object / json_schema, llama.cpp's `grammar` and
//! `json_schema`): read and checked here, and enforced in exactly one place, [`enforce`].
//!
//! [`enforce`] compiles the constraint with nucleus-grammar (through the runtime) and attaches
//! it to the sequence; a grammar that does not parse or a schema the strict compiler refuses
//! is a 400 naming the field, with line/column or keyword/pointer in the message.

use nucleus_runtime::{grammar_sampler, Model, OutputConstraint, Sequence};
use serde_json::Value;

use crate::errors::ApiError;
use crate::fields::{type_name, Fields};

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
pub fn parse(f: &Fields<'_>) -> Result<Option<Constraint>, ApiError> {
    let mut found = None;
    if let Some(rf) = f.get("response_format") {
        let Value::Object(map) = rf else { return Err(ApiError::wrong_type("response_format", "an object")) };
        let rf = Fields::nested(map, "response_format.");
        match rf.str("type")? {
            None => return Err(ApiError::missing("response_format.type")),
            Some("text") => {}
            Some("json_object") => found = Some(Constraint::JsonObject),
            Some("json_schema") => {
                let Some(js) = rf.get("json_schema") else {
                    return Err(ApiError::missing("response_format.json_schema"));
                };
                let Value::Object(js) = js else {
                    return Err(ApiError::wrong_type("response_format.json_schema", "an object"));
                };
                let js = Fields::nested(js, "response_format.json_schema.");
                match js.str("name")? {
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
                js.bool("strict")?;
                let schema = js.get("schema").cloned().unwrap_or(Value::Object(Default::default()));
                if !schema.is_object() && !schema.is_boolean() {
                    return Err(ApiError::wrong_type("response_format.json_schema.schema", "an object"));
                }
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
    if let Some(s) = f.get("json_schema") {
        if !s.is_object() && !s.is_boolean() {
            return Err(ApiError::wrong_type("json_schema", "an object"));
        }
        found = Some(Constraint::JsonSchema { param: "json_schema", schema: s.clone() });
    } else if let Some(g) = f.get("grammar") {
        let Value::String(g) = g else {
            return Err(ApiError::wrong_type("grammar", &format!("a string (GBNF), not {}", type_name(g))));
        };
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
