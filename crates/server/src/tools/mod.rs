//! Tool calling (OpenAI's `tools`, `tool_choice`, `parallel_tool_calls`).
//!
//! * this module reads and checks the request fields into a [`ToolRequest`]; every tool's
//!   `parameters` schema is compiled here (strict: a keyword that cannot be enforced is a 400
//!   naming it), so a request with a bad schema never reaches the engine;
//! * [`prompt`] puts the tools and the call history into the prompt, in the [`ToolFormat`]
//!   the chat template supports;
//! * [`grammar`] builds the grammar the calls are generated under, so arguments always match
//!   their schema;
//! * [`output`] reads the generated text back into content and calls, incrementally (stream
//!   chunks) or whole.

pub mod grammar;
pub mod output;
pub mod prompt;

use nucleus_runtime::{tool_arguments_rules, ChatTemplate, RuleSet};
use serde_json::{json, Map, Value};

use crate::body::messages::{ObjectOrMissing, Parameters, Tool, ToolChoiceIn, Tools};
use crate::body::ChatFields;
use crate::errors::ApiError;

/// One function tool of a request.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    /// The function's name (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// The tool object as the request gave it (handed to chat templates).
    pub tool: Value,
    /// The `function` object (name, description, parameters), for the generic prompt.
    pub function: Value,
    /// The rules of the arguments (start rule `root`), compiled from `parameters`.
    pub args_rules: RuleSet,
}

/// `tool_choice`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model never calls a tool (the tools are not shown to it).
    None,
    /// The model answers or calls tools, as it decides.
    Auto,
    /// The model calls at least one tool.
    Required,
    /// The model calls exactly this function.
    Named(String),
}

/// The tool fields of a chat request, checked.
#[derive(Clone, Debug)]
pub struct ToolRequest {
    /// The tools, in request order.
    pub tools: Vec<ToolSpec>,
    /// What the model may do with them.
    pub choice: ToolChoice,
    /// `parallel_tool_calls`: several calls may come in one answer (see [`Self::several`]).
    pub parallel: bool,
}

impl ToolRequest {
    /// Whether the model sees the tools and its output is read for calls.
    pub fn active(&self) -> bool {
        self.choice != ToolChoice::None
    }

    /// Whether one answer may hold several calls: with `parallel_tool_calls` (the default)
    /// under `auto` and `required`; a named choice is exactly one call to that function, as
    /// OpenAI, vLLM and llama.cpp answer it.
    pub fn several(&self) -> bool {
        self.parallel && !matches!(self.choice, ToolChoice::Named(_))
    }

    /// The tools the model may call under the choice (one for a named choice).
    pub fn callable(&self) -> Vec<&ToolSpec> {
        match &self.choice {
            ToolChoice::Named(n) => self.tools.iter().filter(|t| &t.name == n).collect(),
            _ => self.tools.iter().collect(),
        }
    }
}

/// How calls are written, chosen from the chat template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolFormat {
    /// The template renders `tools` itself (Hermes / Qwen style): free text, then calls as
    /// `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>` blocks.
    Hermes,
    /// The template knows nothing of tools (SmolLM2's ChatML): the tools are described in the
    /// system prompt and the whole answer is one JSON object, `{"response": text}` or
    /// `{"tool_call": call}` / `{"tool_calls": [calls]}` (llama.cpp's generic format).
    Generic,
}

impl ToolFormat {
    /// The format `template` supports.
    pub fn for_template(template: &ChatTemplate) -> Self {
        if template.takes_tools() {
            ToolFormat::Hermes
        } else {
            ToolFormat::Generic
        }
    }
}

/// Reads `tools`, `tool_choice` and `parallel_tool_calls` (typed in `f`; `body` is the raw
/// request, whose tool objects are handed to chat templates as sent). `None` when the request
/// has no tools (then `tool_choice` is refused, except `none`/`auto` sent as defaults by some
/// clients).
pub fn parse(f: &ChatFields, body: &Map<String, Value>) -> Result<Option<ToolRequest>, ApiError> {
    let parallel = f.parallel_tool_calls.unwrap_or(true);
    let tools = match &f.tools {
        None => None,
        Some(Tools(a)) if a.is_empty() => {
            return Err(ApiError::invalid(
                "tools",
                "empty_array",
                "Invalid 'tools': empty array. Expected an array with minimum length 1, or leave 'tools' out.",
            ))
        }
        Some(Tools(a)) => {
            let raw = body.get("tools").and_then(Value::as_array);
            let raw_tool = |i: usize| raw.and_then(|r| r.get(i)).cloned().unwrap_or(Value::Null);
            Some(a.iter().enumerate().map(|(i, t)| parse_tool(i, t, raw_tool(i))).collect::<Result<Vec<_>, _>>()?)
        }
    };
    let choice = match &f.tool_choice {
        None => None,
        Some(ToolChoiceIn::Mode(s)) => Some(match s.as_str() {
            "none" => ToolChoice::None,
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            other => {
                return Err(ApiError::invalid_value(
                    "tool_choice",
                    format!("'{other}' is not one of 'none', 'auto', 'required' or a named function object"),
                ))
            }
        }),
        Some(ToolChoiceIn::Function(o)) => {
            match o.kind.as_deref() {
                Some("function") => {}
                Some(t) => return Err(ApiError::invalid_value("tool_choice.type", format!("'{t}' is not 'function'"))),
                None => return Err(ApiError::missing("tool_choice.type")),
            }
            let Some(ObjectOrMissing(func)) = &o.function else {
                return Err(ApiError::missing("tool_choice.function"));
            };
            match &func.name {
                Some(n) => Some(ToolChoice::Named(n.clone())),
                None => return Err(ApiError::missing("tool_choice.function.name")),
            }
        }
    };
    let Some(tools) = tools else {
        return match choice {
            None => Ok(None),
            Some(_) => {
                Err(ApiError::invalid_value("tool_choice", "'tool_choice' is only allowed when 'tools' are specified"))
            }
        };
    };
    let choice = choice.unwrap_or(ToolChoice::Auto);
    if let ToolChoice::Named(n) = &choice {
        if !tools.iter().any(|t| &t.name == n) {
            return Err(ApiError::invalid_value(
                "tool_choice",
                format!("tool_choice names the function '{n}', which is not in 'tools'"),
            ));
        }
    }
    let req = ToolRequest { tools, choice, parallel };
    check_unique(&req)?;
    Ok(Some(req))
}

/// Whether `n` is a valid function name.
fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One tool: `t` typed, `raw` as the request sent it.
fn parse_tool(i: usize, t: &Tool, raw: Value) -> Result<ToolSpec, ApiError> {
    let name = format!("tools[{i}]");
    match t.kind.as_deref() {
        Some("function") => {}
        Some(other) => {
            return Err(ApiError::invalid_value(
                &format!("{name}.type"),
                format!("'{other}' tools are not supported; only 'function'"),
            ))
        }
        None => return Err(ApiError::missing(&format!("{name}.type"))),
    }
    let fname = format!("{name}.function");
    let Some(func) = &t.function else { return Err(ApiError::missing(&fname)) };
    let fn_name = match func.name.as_deref() {
        None => return Err(ApiError::missing(&format!("{fname}.name"))),
        Some(n) if !valid_name(n) => {
            return Err(ApiError::invalid_value(
                &format!("{fname}.name"),
                "must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'",
            ))
        }
        Some(n) => n.to_string(),
    };
    let params_name = format!("{fname}.parameters");
    let parameters = match &func.parameters {
        None => json!({"type": "object", "properties": {}}),
        Some(Parameters(p)) => Value::Object(p.0.clone()),
    };
    let args_rules = tool_arguments_rules(&parameters)
        .map_err(|e| ApiError::invalid_value(&params_name, format!("Invalid schema for function '{fn_name}': {e}")))?;
    let mut function = raw.get("function").and_then(Value::as_object).cloned().unwrap_or_default();
    function.insert("parameters".into(), parameters);
    Ok(ToolSpec { name: fn_name, tool: raw, function: Value::Object(function), args_rules })
}

/// Refuses a duplicated function name (calls are told apart by name).
fn check_unique(req: &ToolRequest) -> Result<(), ApiError> {
    for (i, t) in req.tools.iter().enumerate() {
        if req.tools[..i].iter().any(|u| u.name == t.name) {
            return Err(ApiError::invalid_value(
                &format!("tools[{i}].function.name"),
                format!("the function name '{}' is used by more than one tool", t.name),
            ));
        }
    }
    Ok(())
}
