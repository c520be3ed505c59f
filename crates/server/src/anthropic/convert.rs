//! A Messages request checked and written as the chat request it stands for, then read by the
//! chat endpoint's own parser ([`crate::request::parse`]): so a Messages request and a chat
//! request for the same conversation render the same prompt, build the same sampler chain and
//! tool grammar, and (seeded) give the same tokens. The Anthropic fields are checked here, with
//! errors naming them by their Anthropic paths; the sampling extensions (`min_p`, `samplers`,
//! ...) pass through under their own names.
//!
//! The mapping: `system` becomes a system message (text blocks joined with blank lines); a
//! user message's text blocks become a user message (joined with newlines) and each
//! `tool_result` a tool message (`is_error` results start with `Error: `), in block order; an
//! assistant message's text blocks become its content, its `tool_use` blocks its calls and its
//! `thinking` blocks its `reasoning_content` (the chat template decides whether earlier
//! thinking is written into the prompt; redacted thinking is left out); a mid-conversation
//! `system` message is a system message at its place; `thinking` (or `output_config.effort`)
//! sets the reasoning budget, `output_config.format` the `response_format`. Tools with
//! `defer_loading` are left out until a `tool_reference` block (in a tool result: the client's
//! tool search found them) names them, as Anthropic does.

use nucleus_runtime::Model;
use nucleus_sampler::SamplingParams;
use serde_json::{json, Map, Value};

use std::collections::HashSet;

use super::body::{
    Block, CountBody, Effort, MessageIn, MessagesBody, OutputFormat, Role, TextBlock, TextOr, ThinkingIn, ToolChoiceIn,
    ToolIn,
};
use crate::body;
use crate::errors::ApiError;
use crate::fields::int_in;
use crate::request::{self, Endpoint, GenerationRequest, MAX_STOP};

/// The Anthropic fields: replaced by their chat equivalents before the chat parser reads the
/// body.
const OWN: &[&str] = &[
    "model",
    "max_tokens",
    "system",
    "messages",
    "stop_sequences",
    "metadata",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
    "context_management",
    "stream",
];

/// Chat fields with no place in a Messages answer (or with an Anthropic name): refused.
const REFUSED: &[(&str, &str)] = &[
    ("n", "a Messages answer has one message"),
    ("n_cmpl", "a Messages answer has one message"),
    ("best_of", "a Messages answer has one message"),
    ("stop", "use 'stop_sequences'"),
    ("stream_options", "the stream always ends with the usage"),
    ("logprobs", "Messages answers carry no log-probabilities"),
    ("top_logprobs", "Messages answers carry no log-probabilities"),
    ("n_probs", "Messages answers carry no log-probabilities"),
    ("post_sampling_probs", "Messages answers carry no log-probabilities"),
    ("trace_steps", "Messages answers carry no sampling steps; use /v1/chat/completions"),
    ("echo", "Messages answers do not echo the prompt"),
    ("max_completion_tokens", "use 'max_tokens'"),
    ("n_predict", "use 'max_tokens'"),
    ("parallel_tool_calls", "use 'tool_choice.disable_parallel_tool_use'"),
];

/// Reads a `POST /v1/messages` body into the checked request (the route's `Parse`).
pub fn parse(
    map: &Map<String, Value>,
    defaults: &SamplingParams,
    model: &dyn Model,
) -> Result<GenerationRequest, ApiError> {
    let b: MessagesBody = body::decode(map)?;
    let chat = chat_request(map, &b)?;
    request::parse(Endpoint::Chat, &chat, defaults, model).map_err(rename_param)
}

/// Reads a `POST /v1/messages/count_tokens` body into the request whose prompt is counted.
pub fn parse_count(
    map: &Map<String, Value>,
    defaults: &SamplingParams,
    model: &dyn Model,
) -> Result<GenerationRequest, ApiError> {
    let c: CountBody = body::decode(map)?;
    let b = MessagesBody {
        system: c.system,
        messages: c.messages,
        tools: c.tools,
        tool_choice: c.tool_choice,
        thinking: c.thinking,
        output_config: c.output_config,
        ..MessagesBody::default()
    };
    let mut chat = Map::new();
    conversation(&b, &mut chat)?;
    request::parse(Endpoint::Chat, &chat, defaults, model).map_err(rename_param)
}

/// The chat request body `b` (read from `map`) stands for.
pub fn chat_request(map: &Map<String, Value>, b: &MessagesBody) -> Result<Map<String, Value>, ApiError> {
    for (name, why) in REFUSED {
        if map.get(*name).is_some_and(|v| !v.is_null()) {
            return Err(ApiError::unsupported(name, format!("'{name}' is not taken by POST /v1/messages: {why}.")));
        }
    }
    let mut chat: Map<String, Value> =
        map.iter().filter(|(k, _)| !OWN.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    match &b.max_tokens {
        None => return Err(ApiError::missing("max_tokens")),
        Some(n) => chat.insert("max_tokens".into(), n.value()),
    };
    if let Some(stops) = &b.stop_sequences {
        if stops.len() > MAX_STOP {
            return Err(ApiError::invalid_value(
                "stop_sequences",
                format!("at most {MAX_STOP} stop sequences are supported, got {}", stops.len()),
            ));
        }
        if stops.iter().any(String::is_empty) {
            return Err(ApiError::invalid_value("stop_sequences", "stop sequences must not be empty"));
        }
        if !stops.is_empty() {
            chat.insert("stop".into(), json!(stops));
        }
    }
    if let Some(s) = b.stream {
        chat.insert("stream".into(), Value::Bool(s));
    }
    conversation(b, &mut chat)?;
    Ok(chat)
}

/// `system`, `messages`, `tools` and `tool_choice` into `chat` (and `thinking` checked).
fn conversation(b: &MessagesBody, chat: &mut Map<String, Value>) -> Result<(), ApiError> {
    // `thinking` is the reasoning budget (docs/reasoning.md), unless the request set
    // Nucleus's own `reasoning_budget`: enabled with `budget_tokens`, disabled as budget 0.
    // With adaptive (or no) thinking, `output_config.effort` sets it.
    let effort = b.output_config.as_ref().and_then(|o| o.effort);
    let budget = match &b.thinking {
        Some(ThinkingIn::Enabled { budget_tokens, .. }) => {
            int_in("thinking.budget_tokens", budget_tokens.as_ref(), 1, i32::MAX as i64)?
        }
        Some(ThinkingIn::Disabled) => Some(0),
        Some(ThinkingIn::Adaptive { .. }) | None => effort.map(|e| effort_budget(e).map_or(-1, |n| n as i64)),
    };
    if let Some(n) = budget {
        chat.entry("reasoning_budget").or_insert(json!(n));
    }
    if let Some(OutputFormat::JsonSchema { schema }) = b.output_config.as_ref().and_then(|o| o.format.as_ref()) {
        let js = json!({"name": "output", "schema": Value::Object(schema.0.clone()), "strict": true});
        chat.insert("response_format".into(), json!({"type": "json_schema", "json_schema": js}));
    }
    let mut messages = Vec::new();
    match &b.system {
        None => {}
        Some(TextOr::Text(s)) => messages.push(json!({"role": "system", "content": s})),
        Some(TextOr::Blocks(blocks)) => {
            let text: Vec<&str> = blocks.iter().map(TextBlock::text).collect();
            if !text.is_empty() {
                messages.push(json!({"role": "system", "content": text.join("\n\n")}));
            }
        }
    }
    let Some(list) = &b.messages else { return Err(ApiError::missing("messages")) };
    if list.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "empty_array",
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
        ));
    }
    if list.last().is_some_and(|m| m.role == Role::Assistant) {
        return Err(ApiError::unsupported(
            &format!("messages[{}].role", list.len() - 1),
            "a final assistant message (prefill) is not supported: the last message must be the user's",
        ));
    }
    check_system_turns(list)?;
    for (i, m) in list.iter().enumerate() {
        message(i, m, &mut messages)?;
    }
    chat.insert("messages".into(), Value::Array(messages));
    // Deferred tools are offered once a tool search has referenced them.
    let referenced = referenced_tools(list);
    let offered = |t: &ToolIn| t.defer_loading != Some(true) || t.name.as_ref().is_some_and(|n| referenced.contains(n));
    if let Some(tools) = &b.tools {
        let mut list = Vec::new();
        for (i, t) in tools.iter().enumerate() {
            let chat_tool = tool(i, t)?;
            if offered(t) {
                list.push(chat_tool);
            }
        }
        if !list.is_empty() {
            chat.insert("tools".into(), Value::Array(list));
        }
    }
    if let Some(choice) = &b.tool_choice {
        let has_tools = b.tools.iter().flatten().any(offered);
        let (value, disable) = match choice {
            ToolChoiceIn::None => (json!("none"), None),
            _ if !has_tools => {
                return Err(ApiError::invalid_value("tool_choice", "'tool_choice' is only allowed with 'tools'"));
            }
            ToolChoiceIn::Auto { disable_parallel_tool_use } => (json!("auto"), *disable_parallel_tool_use),
            ToolChoiceIn::Any { disable_parallel_tool_use } => (json!("required"), *disable_parallel_tool_use),
            ToolChoiceIn::Tool { name, .. } => {
                if !b.tools.iter().flatten().any(|t| offered(t) && t.name.as_deref() == Some(name.as_str())) {
                    return Err(ApiError::invalid_value(
                        "tool_choice.name",
                        format!("'{name}' is not the name of a tool in 'tools' (deferred tools count once referenced)"),
                    ));
                }
                (json!({"type": "function", "function": {"name": name}}), None)
            }
        };
        if has_tools || value != "none" {
            chat.insert("tool_choice".into(), value);
        }
        if disable == Some(true) {
            chat.insert("parallel_tool_calls".into(), Value::Bool(false));
        }
    }
    Ok(())
}

/// The thinking budget of an `output_config.effort` (`None`: no limit).
fn effort_budget(e: Effort) -> Option<usize> {
    match e {
        Effort::Low => Some(512),
        Effort::Medium => Some(2048),
        Effort::High => Some(8192),
        Effort::Xhigh | Effort::Max => None,
    }
}

/// Anthropic's placement rules for mid-conversation `system` messages: not first, right after
/// a user message, last or followed by an assistant message, never two in a row.
fn check_system_turns(list: &[MessageIn]) -> Result<(), ApiError> {
    for (i, m) in list.iter().enumerate() {
        if m.role != Role::System {
            continue;
        }
        let at = format!("messages[{i}].role");
        let why = if i == 0 {
            "a system message cannot come first: use the top-level 'system' field"
        } else if list[i - 1].role != Role::User {
            "a system message must follow a user message"
        } else if list.get(i + 1).is_some_and(|n| n.role != Role::Assistant) {
            "a system message must be the last message or be followed by an assistant message"
        } else {
            continue;
        };
        return Err(ApiError::invalid_value(&at, why));
    }
    Ok(())
}

/// The names `tool_reference` blocks (in tool results) point at.
fn referenced_tools(list: &[MessageIn]) -> HashSet<String> {
    let mut names = HashSet::new();
    for m in list {
        let TextOr::Blocks(blocks) = &m.content else { continue };
        for b in blocks {
            if let Block::ToolResult { content: Some(TextOr::Blocks(inner)), .. } = b {
                for r in inner {
                    if let Block::ToolReference { tool_name, .. } = r {
                        names.insert(tool_name.clone());
                    }
                }
            }
        }
    }
    names
}

/// One Anthropic message as chat messages (appended to `out`).
fn message(i: usize, m: &MessageIn, out: &mut Vec<Value>) -> Result<(), ApiError> {
    let name = format!("messages[{i}]");
    let blocks = match &m.content {
        TextOr::Text(s) => {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::System => "system",
            };
            out.push(json!({"role": role, "content": s}));
            return Ok(());
        }
        TextOr::Blocks(b) => b,
    };
    let mut text: Vec<&str> = Vec::new();
    match m.role {
        Role::System => {
            for (j, block) in blocks.iter().enumerate() {
                match block {
                    Block::Text { text: t, .. } => text.push(t),
                    other => {
                        return Err(ApiError::invalid_value(
                            &format!("{name}.content[{j}].type"),
                            format!("a system message holds text blocks only, not '{}'", kind(other)),
                        ))
                    }
                }
            }
            out.push(json!({"role": "system", "content": text.join("\n\n")}));
        }
        Role::User => {
            for (j, block) in blocks.iter().enumerate() {
                let at = format!("{name}.content[{j}]");
                match block {
                    Block::Text { text: t, .. } => text.push(t),
                    Block::ToolResult { tool_use_id, content, is_error, .. } => {
                        flush_user(&mut text, out);
                        let mut result = match content {
                            None => String::new(),
                            Some(TextOr::Text(s)) => s.clone(),
                            Some(TextOr::Blocks(inner)) => result_text(&format!("{at}.content"), inner)?,
                        };
                        if *is_error == Some(true) {
                            result = format!("Error: {result}");
                        }
                        out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": result}));
                    }
                    Block::ToolUse { .. } => {
                        return Err(misplaced(&at, "tool_use", "assistant"));
                    }
                    other => skip_or_refuse(&at, other)?,
                }
            }
            flush_user(&mut text, out);
        }
        Role::Assistant => {
            let mut calls = Vec::new();
            let mut thinking: Vec<&str> = Vec::new();
            for (j, block) in blocks.iter().enumerate() {
                let at = format!("{name}.content[{j}]");
                match block {
                    Block::Text { text: t, .. } => text.push(t),
                    Block::Thinking { thinking: Some(t), .. } => thinking.push(t),
                    Block::ToolUse { id, name, input, .. } => calls.push(json!({
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": Value::Object(input.0.clone()).to_string()},
                    })),
                    Block::ToolResult { .. } => return Err(misplaced(&at, "tool_result", "user")),
                    other => skip_or_refuse(&at, other)?,
                }
            }
            let mut msg = json!({"role": "assistant", "content": text.concat()});
            if !thinking.is_empty() {
                msg["reasoning_content"] = json!(thinking.join("\n\n"));
            }
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            out.push(msg);
        }
    }
    Ok(())
}

/// The text blocks gathered so far as one user message.
fn flush_user(text: &mut Vec<&str>, out: &mut Vec<Value>) {
    if !text.is_empty() {
        out.push(json!({"role": "user", "content": text.join("\n")}));
        text.clear();
    }
}

/// A `tool_result`'s block content: its text blocks, joined with newlines.
fn result_text(at: &str, blocks: &[Block]) -> Result<String, ApiError> {
    let mut text = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        match b {
            Block::Text { text: t, .. } => text.push(t.as_str()),
            // The tool it names is offered from now on ([`referenced_tools`]).
            Block::ToolReference { .. } => {}
            _ => {
                return Err(ApiError::unsupported(
                    &format!("{at}[{k}].type"),
                    format!("a tool_result's content holds text blocks only, not '{}'", kind(b)),
                ))
            }
        }
    }
    Ok(text.join("\n"))
}

/// Thinking blocks outside an assistant message, and redacted ones, are left out of the
/// prompt; images and documents are refused.
fn skip_or_refuse(at: &str, b: &Block) -> Result<(), ApiError> {
    match b {
        Block::Thinking { .. } | Block::RedactedThinking { .. } => Ok(()),
        _ => Err(ApiError::unsupported(
            &format!("{at}.type"),
            format!("'{}' content blocks are not supported: this model reads text only", kind(b)),
        )),
    }
}

fn misplaced(at: &str, kind: &str, role: &str) -> ApiError {
    ApiError::invalid_value(&format!("{at}.type"), format!("'{kind}' blocks belong in '{role}' messages"))
}

/// A block's `type`.
fn kind(b: &Block) -> &'static str {
    match b {
        Block::Text { .. } => "text",
        Block::ToolUse { .. } => "tool_use",
        Block::ToolResult { .. } => "tool_result",
        Block::ToolReference { .. } => "tool_reference",
        Block::Thinking { .. } => "thinking",
        Block::RedactedThinking { .. } => "redacted_thinking",
        Block::Image { .. } => "image",
        Block::Document { .. } => "document",
    }
}

/// One Anthropic tool as a chat function tool.
fn tool(i: usize, t: &ToolIn) -> Result<Value, ApiError> {
    let at = format!("tools[{i}]");
    match t.kind.as_deref() {
        None | Some("custom") => {}
        Some(other) => {
            return Err(ApiError::unsupported(
                &format!("{at}.type"),
                format!("'{other}' tools are not supported: only custom tools (name, description, input_schema)"),
            ))
        }
    }
    let Some(name) = &t.name else { return Err(ApiError::missing(&format!("{at}.name"))) };
    let Some(schema) = &t.input_schema else { return Err(ApiError::missing(&format!("{at}.input_schema"))) };
    let mut function = json!({"name": name, "parameters": Value::Object(schema.0.clone())});
    if let Some(d) = &t.description {
        function["description"] = json!(d);
    }
    Ok(json!({"type": "function", "function": function}))
}

/// The chat parser's names for tool fields, back to the Anthropic ones.
fn rename_param(mut e: ApiError) -> ApiError {
    if let Some(p) = e.param.take() {
        let renamed = p.replace(".function.parameters", ".input_schema").replace(".function.name", ".name");
        e.message = e.message.replace(&p, &renamed);
        e.param = Some(renamed);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(text: &str) -> Result<Map<String, Value>, ApiError> {
        let map: Map<String, Value> = serde_json::from_str(text).unwrap();
        let b: MessagesBody = body::decode(&map)?;
        chat_request(&map, &b)
    }

    #[test]
    fn a_conversation_with_tools_becomes_the_chat_request() {
        let chat = convert(
            r#"{"model": "m", "max_tokens": 9, "system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B", "cache_control": {"type": "ephemeral"}}],
                "messages": [
                  {"role": "user", "content": "hi"},
                  {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "ok"}, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": 1}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "42"}], "is_error": true}, {"type": "text", "text": "go on"}]}
                ],
                "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
                "stop_sequences": ["\n"], "min_p": 0.1, "metadata": {"user_id": "u"}, "thinking": {"type": "enabled", "budget_tokens": 100}}"#,
        )
        .unwrap();
        assert_eq!(
            Value::Object(chat),
            json!({
                "max_tokens": 9, "stop": ["\n"], "min_p": 0.1, "reasoning_budget": 100,
                "messages": [
                    {"role": "system", "content": "A\n\nB"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "ok", "reasoning_content": "t", "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
                    {"role": "tool", "tool_call_id": "toolu_1", "content": "Error: 42"},
                    {"role": "user", "content": "go on"}
                ],
                "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
                "tool_choice": "required", "parallel_tool_calls": false
            })
        );
    }

    #[test]
    fn claude_code_fields_mean_what_they_do_at_anthropic() {
        // As Claude Code 2.1.332 sends them: a mid-conversation system message, adaptive
        // thinking with omitted display, effort, context editing, a deferred tool.
        let chat = convert(
            r#"{"model": "m", "max_tokens": 9,
                "messages": [
                  {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                  {"role": "system", "content": [{"type": "text", "text": "env", "cache_control": {"type": "ephemeral"}}]}
                ],
                "tools": [{"name": "Read", "input_schema": {"type": "object"}},
                          {"name": "Later", "input_schema": {"type": "object"}, "defer_loading": true}],
                "thinking": {"type": "adaptive", "display": "omitted"},
                "output_config": {"effort": "high"},
                "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}}"#,
        )
        .unwrap();
        assert_eq!(chat["messages"], json!([{"role": "user", "content": "hi"}, {"role": "system", "content": "env"}]));
        assert_eq!(chat["tools"].as_array().unwrap().len(), 1);
        assert_eq!(chat["reasoning_budget"], 8192);
        assert!(!chat.contains_key("context_management") && !chat.contains_key("output_config"));

        // Once a tool search references the deferred tool, it is offered.
        let chat = convert(
            r#"{"max_tokens": 9, "output_config": {"effort": "max", "format": {"type": "json_schema", "schema": {"type": "object"}}},
                "messages": [
                  {"role": "user", "content": "find it"},
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Search", "input": {}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "tool_reference", "tool_name": "Later"}]}]}
                ],
                "tools": [{"name": "Search", "input_schema": {"type": "object"}},
                          {"name": "Later", "input_schema": {"type": "object"}, "defer_loading": true}]}"#,
        )
        .unwrap();
        assert_eq!(chat["tools"].as_array().unwrap().len(), 2);
        assert_eq!(chat["reasoning_budget"], -1);
        assert_eq!(chat["response_format"]["type"], "json_schema");
        assert_eq!(chat["messages"][2], json!({"role": "tool", "tool_call_id": "toolu_1", "content": ""}));
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (r#"{"messages": [{"role": "user", "content": "x"}]}"#, "max_tokens"),
            (r#"{"max_tokens": 5}"#, "messages"),
            (r#"{"max_tokens": 5, "messages": []}"#, "messages"),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}"#,
                "messages[0].content[0].type",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]}"#,
                "messages[0].content[0].type",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "image"}]}]}]}"#,
                "messages[0].content[0].content[0].type",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}"#,
                "messages[1].role",
            ),
            (r#"{"max_tokens": 5, "messages": [{"role": "robot", "content": "x"}]}"#, "messages[0].role"),
            (r#"{"max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}"#, "messages[0].role"),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}, {"role": "system", "content": "s"}, {"role": "user", "content": "y"}]}"#,
                "messages[1].role",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}, {"role": "system", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]}"#,
                "messages[1].content[0].type",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "thinking": {"type": "adaptive", "display": "full"}}"#,
                "thinking",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "output_config": {"effort": "huge"}}"#,
                "output_config.effort",
            ),
            // An array of the fields in order is not the object (schemathesis found it accepted).
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "output_config": [null, null]}"#,
                "output_config",
            ),
            (r#"{"max_tokens": 5, "messages": [{"role": "user", "content": 3}]}"#, "messages[0].content"),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "web_search_20250305", "name": "w"}]}"#,
                "tools[0].type",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "w"}]}"#,
                "tools[0].input_schema",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "auto"}}"#,
                "tool_choice",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "tool", "name": "g"}}"#,
                "tool_choice.name",
            ),
            (
                r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "stop_sequences": ["a", "b", "c", "d", "e"]}"#,
                "stop_sequences",
            ),
            (r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "stop": "a"}"#, "stop"),
            (r#"{"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "n": 2}"#, "n"),
            (r#"{"max_tokens": "5", "messages": [{"role": "user", "content": "x"}]}"#, "max_tokens"),
        ];
        for (text, param) in cases {
            let e = convert(text).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{text}: {e:?}");
            assert_eq!(e.status, 400, "{text}");
        }
    }
}
