//! Tools and call history into the prompt.
//!
//! * Hermes format: the template gets the tool objects as `tools` and the messages with their
//!   `tool_calls` / `tool_call_id`, and writes them in its own way.
//! * Generic format: the template knows nothing of tools, so the tools and the answer format
//!   are described in the system message, an assistant's earlier calls are written as the JSON
//!   object it would have answered, and tool results become user messages quoting them.

use nucleus_runtime::{rendered_chat_tokens, ChatMessage, ChatTemplate, Model, RuntimeError};
use nucleus_sampler::Token;
use serde_json::{json, Value};

use super::{ToolChoice, ToolFormat, ToolRequest};

/// The prompt's tokens for `messages` with `tools` (when given and in use) in `format`: the
/// tokens of [`chat_text`].
pub fn chat_tokens(
    model: &dyn Model,
    template: &ChatTemplate,
    messages: &[ChatMessage],
    tools: Option<&ToolRequest>,
    format: ToolFormat,
) -> Result<Vec<Token>, RuntimeError> {
    let text = chat_text(template, messages, tools, format)?;
    rendered_chat_tokens(model, template, &text)
}

/// The prompt's text for `messages` with `tools` (when given and in use) in `format`, as the
/// template renders it (ending with the assistant's turn); `/apply-template` answers it.
pub fn chat_text(
    template: &ChatTemplate,
    messages: &[ChatMessage],
    tools: Option<&ToolRequest>,
    format: ToolFormat,
) -> Result<String, RuntimeError> {
    let active = tools.filter(|t| t.active());
    match format {
        ToolFormat::Hermes => {
            let list = active.map(|t| Value::Array(t.tools.iter().map(|s| s.tool.clone()).collect()));
            template.render_with_tools(messages, true, list.as_ref())
        }
        ToolFormat::Generic => {
            let mut msgs = generic_history(messages);
            if let Some(t) = active {
                let text = generic_instructions(t);
                match msgs.first_mut() {
                    Some(m) if m.role == "system" => m.content = format!("{}\n\n{text}", m.content),
                    _ => msgs.insert(0, ChatMessage::system(text)),
                }
            }
            template.render_with_tools(&msgs, true, None)
        }
    }
}

/// The system-prompt text of the generic format.
fn generic_instructions(t: &ToolRequest) -> String {
    let functions: Vec<Value> = t.callable().iter().map(|s| s.function.clone()).collect();
    let list: Vec<String> = functions.iter().map(Value::to_string).collect();
    let list = list.join("\n");
    let call = if t.several() {
        "{\"tool_calls\": [{\"name\": <function name>, \"arguments\": <arguments object>}, ...]}"
    } else {
        "{\"tool_call\": {\"name\": <function name>, \"arguments\": <arguments object>}}"
    };
    let how = match &t.choice {
        ToolChoice::Auto => format!(
            "Reply with a single JSON object. To call a function, write {call}. To answer the user \
             directly, write {{\"response\": <your answer as a string>}}."
        ),
        ToolChoice::Named(n) => format!("Reply with a single JSON object that calls the function '{n}': {call}."),
        _ => format!("Reply with a single JSON object that calls one of the functions: {call}."),
    };
    format!("You can call these functions:\n{list}\n\n{how}")
}

/// Messages with calls and results written as plain text for a template without tools.
fn generic_history(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        if m.role == "assistant" && !m.tool_calls.is_empty() {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    let args =
                        serde_json::from_str::<Value>(&c.arguments).unwrap_or(Value::String(c.arguments.clone()));
                    json!({"name": c.name, "arguments": args})
                })
                .collect();
            let v = if calls.len() == 1 { json!({"tool_call": calls[0]}) } else { json!({"tool_calls": calls}) };
            let mut call = ChatMessage::new("assistant", v.to_string());
            call.reasoning_content = m.reasoning_content.clone();
            out.push(call);
        } else if m.role == "tool" {
            let name = m.tool_call_id.as_ref().and_then(|id| {
                messages.iter().flat_map(|x| x.tool_calls.iter()).find(|c| &c.id == id).map(|c| c.name.clone())
            });
            let v = json!({"tool_response": {"name": name.or_else(|| m.name.clone()), "content": m.content}});
            out.push(ChatMessage::user(v.to_string()));
        } else {
            out.push(m.clone());
        }
    }
    out
}
