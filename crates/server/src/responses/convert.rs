//! A Responses request as the chat request the engine runs: `input` items (after the stored
//! conversation of `previous_response_id`) become chat messages, `instructions` the system
//! message, function tools and `tool_choice` the chat shapes, `text.format` the
//! `response_format`, `max_output_tokens` the token limit; every other field (sampling
//! extensions) is the chat endpoint's. The chat parser then checks the values, and its errors
//! are renamed to the Responses fields ([`responses_name`]), so a 400 names what was sent.

use serde_json::{json, Map, Value};

use super::body::{Content, Format, Input, Item, Part, ResponsesBody, ToolChoiceIn, ToolIn};
use super::namespace::{flat_name, Namespaces};
use crate::errors::ApiError;

/// Hosted tools: run by OpenAI's servers, not by the client. This server runs none of them, so
/// they are left out of the prompt when the model may leave them unused (`tool_choice` not
/// naming one, and not `required` without another tool); a request that would need one is a
/// 400 naming it. Codex sends `web_search` unless told `web_search = "disabled"`.
const HOSTED: &[&str] = &[
    "web_search",
    "web_search_preview",
    "web_search_2025_08_26",
    "web_search_preview_2025_03_11",
    "file_search",
    "code_interpreter",
    "image_generation",
    "computer_use_preview",
    "mcp",
];

/// Responses fields read here and not passed to the chat parser.
const OWN: &[&str] = &[
    "input",
    "instructions",
    "max_output_tokens",
    "tools",
    "tool_choice",
    "text",
    "store",
    "previous_response_id",
    "metadata",
    "include",
    "reasoning",
    "truncation",
    "user",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
    "background",
    "top_logprobs",
    "stream_options",
];

/// Chat fields with a Responses counterpart (or none): refused, naming what to use.
const CHAT_ONLY: &[(&str, &str)] = &[
    ("messages", "use 'input' (a string or a list of items) on /v1/responses"),
    ("max_tokens", "use 'max_output_tokens' on /v1/responses"),
    ("max_completion_tokens", "use 'max_output_tokens' on /v1/responses"),
    ("response_format", "use 'text.format' on /v1/responses"),
    ("n", "a response has one output; send several requests"),
    ("n_cmpl", "a response has one output; send several requests"),
    ("best_of", "a response has one output"),
    ("logprobs", "log-probabilities are not supported on /v1/responses; use /v1/chat/completions"),
    ("echo", "'echo' is for /v1/completions"),
    ("trace_steps", "'trace_steps' is supported on /v1/chat/completions only"),
];

/// What `include` may ask for: nothing is produced that it would add.
const INCLUDABLE: &[&str] = &["reasoning.encrypted_content"];

/// One request, converted.
#[derive(Debug)]
pub struct Turn {
    /// The chat request body the engine runs.
    pub chat: Map<String, Value>,
    /// The conversation so far in Responses items (stored conversation, then this input),
    /// without `instructions`; the answer's items are appended when it is stored.
    pub items: Vec<Item>,
    /// The request's settings the response echoes.
    pub echo: super::types::Echo,
    /// Keep the response (`store`, default true).
    pub store: bool,
    /// The flat names of `namespace` members, split again on the way out.
    pub names: Namespaces,
    /// Each chat tool's path in the request (`tools[2]`, `tools[4].tools[1]`), for errors.
    pub tool_paths: Vec<String>,
}

/// Converts `body` (its typed form `b`) after the conversation `history` of
/// `previous_response_id` (empty without one).
pub fn convert(map: &Map<String, Value>, b: ResponsesBody, history: Vec<Item>) -> Result<Turn, ApiError> {
    for (name, why) in CHAT_ONLY {
        if map.get(*name).is_some_and(|v| !v.is_null()) {
            return Err(ApiError::unsupported(name, format!("'{name}' is not a Responses field: {why}.")));
        }
    }
    refuse_unsupported(&b)?;
    let mut chat: Map<String, Value> =
        map.iter().filter(|(k, _)| !OWN.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();

    let new_items = match b.input {
        None if history.is_empty() => return Err(ApiError::missing("input")),
        None => Vec::new(),
        Some(Input::Text(s)) => vec![Item {
            kind: Some("message".into()),
            role: Some("user".into()),
            content: Some(Content::Text(s)),
            ..Item::default()
        }],
        Some(Input::Items(items)) => items,
    };
    let tools = offered_tools(b.tools.as_deref().unwrap_or_default())?;
    let mut messages = Vec::new();
    if let Some(i) = &b.instructions {
        messages.push(json!({"role": "system", "content": i}));
    }
    // Stored items were checked when they came in (or were this server's output).
    for (i, item) in history.iter().enumerate() {
        add_item(&mut messages, item, &format!("previous_response_id (item {i})"))?;
    }
    for (i, item) in new_items.iter().enumerate() {
        add_item(&mut messages, item, &format!("input[{i}]"))?;
    }
    if messages.is_empty() {
        return Err(ApiError::invalid("input", "empty_array", "Invalid 'input': no messages to answer."));
    }
    chat.insert("messages".into(), Value::Array(messages));

    if let Some(m) = &b.max_output_tokens {
        chat.insert("max_completion_tokens".into(), m.value());
    }
    let tools_echo: Vec<Value> = b.tools.iter().flatten().map(echo_tool).collect();
    let Offered { chat: chat_tools, paths: tool_paths, names, hosted } = tools;
    let has_chat_tools = !chat_tools.is_empty();
    if has_chat_tools {
        chat.insert("tools".into(), Value::Array(chat_tools));
    }
    let choice_echo = match &b.tool_choice {
        None => json!("auto"),
        Some(ToolChoiceIn::Mode(m)) => {
            if let (false, "required", Some((i, kind))) = (has_chat_tools, m.as_str(), &hosted) {
                return Err(ApiError::unsupported(
                    &format!("tools[{i}].type"),
                    format!("'{kind}' is a hosted tool, which this server cannot run, and tool_choice 'required' needs a function tool"),
                ));
            }
            chat.insert("tool_choice".into(), json!(m));
            json!(m)
        }
        Some(ToolChoiceIn::Named(n)) => {
            match n.kind.as_deref() {
                Some("function") => {}
                Some(other) => {
                    return Err(ApiError::unsupported(
                        "tool_choice.type",
                        format!("tool_choice of type '{other}' is not supported; only 'function'."),
                    ))
                }
                None => return Err(ApiError::missing("tool_choice.type")),
            }
            let name = n.name.clone().ok_or_else(|| ApiError::missing("tool_choice.name"))?;
            chat.insert("tool_choice".into(), json!({"type": "function", "function": {"name": name}}));
            json!({"type": "function", "name": name})
        }
    };
    let format = b.text.as_ref().and_then(|t| t.format.as_ref());
    let format_echo = match format {
        None => json!({"type": "text"}),
        Some(f) => {
            if let Some(rf) = response_format(f)? {
                chat.insert("response_format".into(), rf);
            }
            echo_format(f)
        }
    };
    if let Some(m) = &b.metadata {
        check_metadata(m)?;
    }
    if let Some(effort) = reasoning_effort(b.reasoning.as_ref())? {
        // The chat field of the same meaning, unless the request sent that one too.
        chat.entry("reasoning_effort").or_insert(Value::String(effort));
    }
    let echo = super::types::Echo {
        instructions: b.instructions.clone(),
        metadata: b.metadata.clone().unwrap_or_default(),
        parallel_tool_calls: b.parallel_tool_calls.unwrap_or(true),
        temperature: b.temperature.as_ref().map(|t| t.0),
        top_p: b.top_p.as_ref().map(|t| t.0),
        tool_choice: choice_echo,
        tools: tools_echo,
        max_output_tokens: b.max_output_tokens.as_ref().and_then(|m| m.value().as_u64()),
        previous_response_id: b.previous_response_id.clone(),
        text: json!({"format": format_echo}),
        truncation: b.truncation.clone().unwrap_or_else(|| "disabled".into()),
        store: b.store.unwrap_or(true),
        user: b.user.clone(),
        reasoning: b.reasoning.clone().map(Value::Object),
    };
    let mut items = history;
    items.extend(new_items);
    Ok(Turn { chat, items, store: echo.store, echo, names, tool_paths })
}

/// The tools the model is offered, as chat tools.
struct Offered {
    /// The chat tools, in order.
    chat: Vec<Value>,
    /// Each one's path in the request.
    paths: Vec<String>,
    /// The flat names of namespace members.
    names: Namespaces,
    /// The first hosted tool left out (its index and type).
    hosted: Option<(usize, String)>,
}

/// `tools` as the chat tools the model is offered: functions as they are, `namespace` members
/// flattened ([`super::namespace`]), hosted tools left out ([`HOSTED`]); any other type is a
/// 400 naming it.
fn offered_tools(tools: &[ToolIn]) -> Result<Offered, ApiError> {
    let mut o = Offered { chat: Vec::new(), paths: Vec::new(), names: Namespaces::default(), hosted: None };
    for (i, t) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        match t.kind.as_deref() {
            Some("function") => {
                o.chat.push(chat_tool(&at, t, None)?);
                o.paths.push(at);
            }
            Some("namespace") => {
                let ns = t.name.as_deref().ok_or_else(|| ApiError::missing(&format!("{at}.name")))?;
                let members = t.tools.as_deref().ok_or_else(|| ApiError::missing(&format!("{at}.tools")))?;
                for (j, m) in members.iter().enumerate() {
                    let mat = format!("{at}.tools[{j}]");
                    match m.kind.as_deref() {
                        Some("function") => {}
                        Some(other) => {
                            return Err(ApiError::unsupported(
                                &format!("{mat}.type"),
                                format!("a namespace's tools of type '{other}' are not supported; only 'function' tools"),
                            ))
                        }
                        None => return Err(ApiError::missing(&format!("{mat}.type"))),
                    }
                    let name = m.name.as_deref().ok_or_else(|| ApiError::missing(&format!("{mat}.name")))?;
                    let flat = flat_name(ns, name);
                    if flat.len() > 64 {
                        return Err(ApiError::invalid_value(
                            &format!("{mat}.name"),
                            format!("the namespace and function names joined ('{flat}') must be at most 64 characters"),
                        ));
                    }
                    o.chat.push(chat_tool(&mat, m, Some(o.names.add(ns, name)))?);
                    o.paths.push(mat);
                }
            }
            Some(k) if HOSTED.contains(&k) => {
                o.hosted.get_or_insert((i, k.to_string()));
            }
            Some(other) => {
                return Err(ApiError::unsupported(
                    &format!("{at}.type"),
                    format!("tools of type '{other}' are not supported; only 'function' and 'namespace' tools (hosted tools are left out)"),
                ))
            }
            None => return Err(ApiError::missing(&format!("{at}.type"))),
        }
    }
    Ok(o)
}

/// Fields whose values ask for what this server cannot do.
fn refuse_unsupported(b: &ResponsesBody) -> Result<(), ApiError> {
    if b.background == Some(true) {
        return Err(ApiError::unsupported("background", "'background': background mode is not supported."));
    }
    if let Some(k) = &b.top_logprobs {
        if k.value().as_i64() != Some(0) {
            return Err(ApiError::unsupported("top_logprobs", "'top_logprobs' is not supported on /v1/responses."));
        }
    }
    for (i, inc) in b.include.iter().flatten().enumerate() {
        if !INCLUDABLE.contains(&inc.as_str()) {
            return Err(ApiError::unsupported(
                &format!("include[{i}]"),
                format!("'{inc}' cannot be included: this server does not produce it."),
            ));
        }
    }
    if let Some(t) = b.truncation.as_deref() {
        if t != "disabled" && t != "auto" {
            return Err(ApiError::invalid_value("truncation", format!("'{t}' is not one of 'disabled', 'auto'")));
        }
    }
    if b.stream_options.is_some() && b.stream != Some(true) {
        return Err(ApiError::invalid_value("stream_options", "stream_options is only allowed when stream is true"));
    }
    Ok(())
}

/// `reasoning.effort`, checked (`None` when not sent).
fn reasoning_effort(reasoning: Option<&Map<String, Value>>) -> Result<Option<String>, ApiError> {
    match reasoning.and_then(|r| r.get("effort")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(e)) if crate::reasoning::effort_budget(e).is_some() => Ok(Some(e.clone())),
        Some(Value::String(e)) => Err(ApiError::invalid_value(
            "reasoning.effort",
            format!("'{e}' is not one of {}", crate::reasoning::EFFORTS),
        )),
        Some(_) => Err(ApiError::wrong_type("reasoning.effort", "a string")),
    }
}

/// `metadata`: at most 16 pairs, string values, keys up to 64 and values up to 512 characters.
fn check_metadata(m: &Map<String, Value>) -> Result<(), ApiError> {
    if m.len() > 16 {
        return Err(ApiError::invalid_value("metadata", "at most 16 key-value pairs"));
    }
    for (k, v) in m {
        if k.chars().count() > 64 {
            return Err(ApiError::invalid_value("metadata", format!("the key '{k}' is longer than 64 characters")));
        }
        match v {
            Value::String(s) if s.chars().count() <= 512 => {}
            Value::String(_) => {
                return Err(ApiError::invalid_value(&format!("metadata.{k}"), "values are at most 512 characters"))
            }
            _ => return Err(ApiError::wrong_type(&format!("metadata.{k}"), "a string")),
        }
    }
    Ok(())
}

/// Text of content parts (`input_text`, `output_text`, `refusal`), joined.
fn content_text(c: &Content, name: &str) -> Result<String, ApiError> {
    joined(c, name, |p, kind, pname| match kind {
        "input_text" | "output_text" | "text" => part_text(p, pname),
        "refusal" => Ok(p.refusal.as_deref().unwrap_or_default()),
        other => Err(ApiError::unsupported(
            &format!("{pname}.type"),
            format!("content parts of type '{other}' are not supported: this model reads text only"),
        )),
    })
}

/// A content given as a string, or the text `text_of` reads from each of its parts (called
/// with the part, its type and its field name), joined.
fn joined<'a>(
    c: &'a Content,
    name: &str,
    text_of: impl Fn(&'a Part, &str, &str) -> Result<&'a str, ApiError>,
) -> Result<String, ApiError> {
    let parts = match c {
        Content::Text(s) => return Ok(s.clone()),
        Content::Parts(p) => p,
    };
    let mut text = String::new();
    for (j, p) in parts.iter().enumerate() {
        let pname = format!("{name}[{j}]");
        let kind = p.kind.as_deref().ok_or_else(|| ApiError::missing(&format!("{pname}.type")))?;
        text.push_str(text_of(p, kind, &pname)?);
    }
    Ok(text)
}

/// A part's `text`, which its type requires.
fn part_text<'a>(p: &'a Part, pname: &str) -> Result<&'a str, ApiError> {
    p.text.as_deref().ok_or_else(|| ApiError::missing(&format!("{pname}.text")))
}

/// Appends `item` to the chat `messages`: a message; a function call (joined to the assistant
/// message before it, so parallel calls are one turn); a call's output (a `tool` message).
fn add_item(messages: &mut Vec<Value>, item: &Item, name: &str) -> Result<(), ApiError> {
    let field = |f: &str| format!("{name}.{f}");
    match item.kind.as_deref() {
        None | Some("message") => {
            let role = match item.role.as_deref() {
                None => return Err(ApiError::missing(&field("role"))),
                Some(r @ ("user" | "system" | "assistant")) => r,
                Some("developer") => "system",
                Some(other) => {
                    return Err(ApiError::invalid_value(
                        &field("role"),
                        format!("'{other}' is not one of 'user', 'system', 'developer', 'assistant'"),
                    ))
                }
            };
            let content = match &item.content {
                Some(c) => content_text(c, &field("content"))?,
                None => return Err(ApiError::missing(&field("content"))),
            };
            match messages.last_mut() {
                // The answer after a reasoning item: one assistant turn.
                Some(Value::Object(last)) if role == "assistant" && thinking_only(last) => {
                    last.insert("content".into(), Value::String(content));
                }
                _ => messages.push(json!({"role": role, "content": content})),
            }
        }
        Some("function_call") => {
            let call_id = item.call_id.clone().ok_or_else(|| ApiError::missing(&field("call_id")))?;
            let fname = item.name.clone().ok_or_else(|| ApiError::missing(&field("name")))?;
            // A namespace member's call, as the model was offered it.
            let fname = match &item.namespace {
                Some(ns) => flat_name(ns, &fname),
                None => fname,
            };
            let arguments = item.arguments.clone().unwrap_or_else(|| "{}".into());
            let call = json!({"id": call_id, "type": "function", "function": {"name": fname, "arguments": arguments}});
            let joins = messages.last().is_some_and(|m| m["role"] == "assistant");
            if !joins {
                messages.push(json!({"role": "assistant", "content": ""}));
            }
            if let Some(Value::Object(last)) = messages.last_mut() {
                match last.get_mut("tool_calls") {
                    Some(Value::Array(calls)) => calls.push(call),
                    _ => {
                        last.insert("tool_calls".into(), json!([call]));
                    }
                }
            }
        }
        Some("function_call_output") => {
            let call_id = item.call_id.clone().ok_or_else(|| ApiError::missing(&field("call_id")))?;
            let output = match &item.output {
                Some(c) => content_text(c, &field("output"))?,
                None => return Err(ApiError::missing(&field("output"))),
            };
            messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": output}));
        }
        // Thinking before the next assistant turn (a message or calls): that turn's
        // `reasoning_content`, which the chat template writes or drops.
        Some("reasoning") => {
            let text = match &item.content {
                Some(c) => reasoning_text(c, &field("content"))?,
                None => String::new(),
            };
            match messages.last_mut() {
                _ if text.is_empty() => {}
                Some(Value::Object(last)) if thinking_only(last) => {
                    if let Some(Value::String(r)) = last.get_mut("reasoning_content") {
                        r.push_str("\n\n");
                        r.push_str(&text);
                    }
                }
                _ => messages.push(json!({"role": "assistant", "content": "", "reasoning_content": text})),
            }
        }
        Some(other) => {
            return Err(ApiError::unsupported(
                &field("type"),
                format!("input items of type '{other}' are not supported; only 'message', 'function_call', 'function_call_output'"),
            ))
        }
    }
    Ok(())
}

/// Whether a chat message is an assistant turn holding only thinking so far (a reasoning item
/// the turn's message or calls join).
fn thinking_only(m: &Map<String, Value>) -> bool {
    m.get("role").is_some_and(|r| r == "assistant")
        && m.contains_key("reasoning_content")
        && m.get("content").is_some_and(|c| c == "")
        && !m.contains_key("tool_calls")
}

/// A reasoning item's text: its `reasoning_text` parts, joined.
fn reasoning_text(c: &Content, name: &str) -> Result<String, ApiError> {
    joined(c, name, |p, kind, pname| match kind {
        "reasoning_text" | "text" => part_text(p, pname),
        other => Err(ApiError::invalid_value(
            &format!("{pname}.type"),
            format!("'{other}' is not a reasoning content part; only 'reasoning_text'"),
        )),
    })
}

/// A Responses function tool (at `at` in the request) in the chat shape, named `name` when
/// given (a namespace member's flat name).
fn chat_tool(at: &str, t: &ToolIn, name: Option<String>) -> Result<Value, ApiError> {
    let mut f = Map::new();
    let name = name.or_else(|| t.name.clone()).ok_or_else(|| ApiError::missing(&format!("{at}.name")))?;
    f.insert("name".into(), Value::String(name));
    if let Some(d) = &t.description {
        f.insert("description".into(), json!(d));
    }
    if let Some(p) = &t.parameters {
        f.insert("parameters".into(), Value::Object(p.clone()));
    }
    if let Some(s) = t.strict {
        f.insert("strict".into(), json!(s));
    }
    Ok(json!({"type": "function", "function": f}))
}

/// A tool as the response echoes it.
fn echo_tool(t: &ToolIn) -> Value {
    match t.kind.as_deref() {
        Some("namespace") => json!({
            "type": "namespace",
            "name": t.name,
            "description": t.description,
            "tools": t.tools.iter().flatten().map(echo_tool).collect::<Vec<_>>(),
        }),
        Some(k) if HOSTED.contains(&k) => json!({"type": k}),
        _ => json!({
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": t.strict.unwrap_or(true),
        }),
    }
}

/// `text.format` as the chat `response_format` (`None` for plain text).
fn response_format(f: &Format) -> Result<Option<Value>, ApiError> {
    match f.kind.as_deref() {
        None => Err(ApiError::missing("text.format.type")),
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(json!({"type": "json_object"}))),
        Some("json_schema") => {
            let schema = f.schema.clone().ok_or_else(|| ApiError::missing("text.format.schema"))?;
            let name = f.name.clone().ok_or_else(|| ApiError::missing("text.format.name"))?;
            let mut js = json!({"name": name, "schema": schema, "strict": f.strict.unwrap_or(true)});
            if let Some(d) = &f.description {
                js["description"] = json!(d);
            }
            Ok(Some(json!({"type": "json_schema", "json_schema": js})))
        }
        Some(other) => Err(ApiError::invalid_value(
            "text.format.type",
            format!("'{other}' is not one of 'text', 'json_object', 'json_schema'"),
        )),
    }
}

fn echo_format(f: &Format) -> Value {
    match f.kind.as_deref() {
        Some("json_schema") => json!({
            "type": "json_schema",
            "name": f.name,
            "schema": f.schema,
            "strict": f.strict.unwrap_or(true),
            "description": f.description,
        }),
        Some(k) => json!({"type": k}),
        None => json!({"type": "text"}),
    }
}

/// A chat field's name as the Responses API spells it (the chat parser's errors name the chat
/// request built here), the chat tools at `tool_paths` (their paths in the request).
pub fn responses_name_in(param: &str, tool_paths: &[String]) -> String {
    if let Some(rest) = param.strip_prefix("tools[") {
        if let Some((index, tail)) = rest.split_once(']') {
            if let Some(path) = index.parse::<usize>().ok().and_then(|k| tool_paths.get(k)) {
                let tail = tail.strip_prefix(".function").unwrap_or(tail);
                return format!("{path}{tail}");
            }
        }
    }
    responses_name(param)
}

/// A chat field's name as the Responses API spells it, tools counted as sent.
pub fn responses_name(param: &str) -> String {
    if param == "max_completion_tokens" {
        return "max_output_tokens".into();
    }
    if let Some(rest) = param.strip_prefix("response_format") {
        let rest = rest.strip_prefix(".json_schema").unwrap_or(rest);
        return format!("text.format{rest}");
    }
    if let Some(rest) = param.strip_prefix("tool_choice.function") {
        return format!("tool_choice{rest}");
    }
    if let Some(rest) = param.strip_prefix("tools[") {
        if let Some((index, tail)) = rest.split_once(']') {
            let tail = tail.strip_prefix(".function").unwrap_or(tail);
            return format!("tools[{index}]{tail}");
        }
    }
    if param.starts_with("messages") {
        return "input".into();
    }
    param.to_string()
}

/// `e` with its field named as the Responses API spells it (in `param` and the message), the
/// chat tools at `tool_paths`.
pub fn rename_error(mut e: ApiError, tool_paths: &[String]) -> ApiError {
    if let Some(p) = e.param.take() {
        let new = responses_name_in(&p, tool_paths);
        if new != p {
            e.message = e.message.replace(&format!("'{p}'"), &format!("'{new}'"));
        }
        e.param = Some(new);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_names_become_responses_names() {
        assert_eq!(responses_name("max_completion_tokens"), "max_output_tokens");
        assert_eq!(responses_name("response_format.json_schema.schema"), "text.format.schema");
        assert_eq!(responses_name("response_format"), "text.format");
        assert_eq!(responses_name("tools[2].function.parameters"), "tools[2].parameters");
        assert_eq!(responses_name("tool_choice.function.name"), "tool_choice.name");
        assert_eq!(responses_name("temperature"), "temperature");
    }

    fn body(text: &str) -> (Map<String, Value>, ResponsesBody) {
        let m: Map<String, Value> = serde_json::from_str(text).unwrap();
        let b = crate::body::decode(&m).unwrap();
        (m, b)
    }

    #[test]
    fn calls_join_the_assistant_turn_and_outputs_are_tool_messages() {
        let (m, b) = body(
            r#"{"instructions": "Be brief.", "input": [
                {"role": "user", "content": "Weather?"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
                {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "w", "arguments": "{\"a\":1}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
            ]}"#,
        );
        let t = convert(&m, b, Vec::new()).unwrap();
        let msgs = t.chat["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 4);
        assert_eq!(msgs[0], json!({"role": "system", "content": "Be brief."}));
        assert_eq!(msgs[2]["content"], "Checking.");
        assert_eq!(msgs[2]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(msgs[3], json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}));
        assert_eq!(t.items.len(), 5);
    }

    #[test]
    fn namespaces_are_flattened_and_hosted_tools_left_out() {
        let (m, b) = body(
            r#"{"input": [
                    {"role": "user", "content": "go"},
                    {"type": "function_call", "call_id": "c1", "namespace": "agents", "name": "spawn", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "c1", "output": "ok"}
                ],
                "tools": [
                    {"type": "function", "name": "exec", "parameters": {"type": "object"}},
                    {"type": "namespace", "name": "agents", "description": "Sub-agents.", "tools": [
                        {"type": "function", "name": "spawn", "parameters": {"type": "object"}},
                        {"type": "function", "name": "close", "parameters": {"type": "object"}}
                    ]},
                    {"type": "web_search", "external_web_access": false}
                ]}"#,
        );
        let t = convert(&m, b, Vec::new()).unwrap();
        let names: Vec<&str> =
            t.chat["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["exec", "agents__spawn", "agents__close"]);
        assert_eq!(t.tool_paths, ["tools[0]", "tools[1].tools[0]", "tools[1].tools[1]"]);
        assert_eq!(t.chat["messages"][1]["tool_calls"][0]["function"]["name"], "agents__spawn");
        assert_eq!(responses_name_in("tools[2].function.parameters", &t.tool_paths), "tools[1].tools[1].parameters");
        assert_eq!(t.echo.tools[1]["tools"][0]["name"], "spawn");
        assert_eq!(t.echo.tools[2], json!({"type": "web_search"}));
    }

    #[test]
    fn reasoning_items_are_the_next_assistant_turns_thinking() {
        let (m, b) = body(
            r#"{"reasoning": {"effort": "low", "summary": "auto"}, "input": [
                {"role": "user", "content": "Weather?"},
                {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Call it."}]},
                {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}], "content": [{"type": "reasoning_text", "text": "Sunny."}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
                {"type": "reasoning", "summary": []},
                {"role": "user", "content": "Thanks"}
            ]}"#,
        );
        let t = convert(&m, b, Vec::new()).unwrap();
        let msgs = t.chat["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 5, "{msgs:?}");
        assert_eq!(msgs[1]["reasoning_content"], "Call it.");
        assert_eq!(msgs[1]["tool_calls"].as_array().unwrap().len(), 1);
        assert_eq!(msgs[3], json!({"role": "assistant", "content": "It is sunny.", "reasoning_content": "Sunny."}));
        assert_eq!(t.chat["reasoning_effort"], "low");
        let (m, b) = body(r#"{"input": "x", "reasoning": {"effort": "huge"}}"#);
        assert_eq!(convert(&m, b, Vec::new()).unwrap_err().param.as_deref(), Some("reasoning.effort"));
    }

    #[test]
    fn refusals_name_the_field() {
        let cases = [
            (r#"{"input": "x", "tools": [{"type": "custom", "name": "c"}]}"#, "tools[0].type"),
            (r#"{"input": "x", "tools": [{"type": "web_search"}], "tool_choice": "required"}"#, "tools[0].type"),
            (
                r#"{"input": "x", "tools": [{"type": "web_search"}], "tool_choice": {"type": "web_search"}}"#,
                "tool_choice.type",
            ),
            (
                r#"{"input": "x", "tools": [{"type": "namespace", "name": "n", "tools": [{"type": "custom", "name": "c"}]}]}"#,
                "tools[0].tools[0].type",
            ),
            (r#"{"input": "x", "tools": [{"type": "namespace", "name": "n"}]}"#, "tools[0].tools"),
            (r#"{"input": [{"role": "user", "content": [{"type": "input_image"}]}]}"#, "input[0].content[0].type"),
            (r#"{"input": [{"type": "item_reference", "id": "x"}]}"#, "input[0].type"),
            (r#"{"input": [{"type": "function_call_output"}]}"#, "input[0].call_id"),
            (r#"{"input": "x", "messages": []}"#, "messages"),
            (r#"{"input": "x", "include": ["file_search_call.results"]}"#, "include[0]"),
            (r#"{"input": "x", "text": {"format": {"type": "json_schema", "name": "n"}}}"#, "text.format.schema"),
            (r#"{}"#, "input"),
        ];
        for (text, param) in cases {
            let (m, b) = body(text);
            let e = convert(&m, b, Vec::new()).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{text}");
            assert_eq!(e.status.as_u16(), 400, "{text}");
        }
    }
}
