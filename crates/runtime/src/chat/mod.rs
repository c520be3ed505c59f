//! Chat templates: the model's own Jinja template (from the GGUF) rendered with `minijinja`,
//! or a built-in one for models without a template (Gemma's for Gemma models, ChatML
//! otherwise, as llama.cpp falls back to).
//!
//! The environment matches Hugging Face's: `trim_blocks` and `lstrip_blocks` on, Python string
//! methods (`.strip()`, `.startswith()`, ...) through `minijinja-contrib`'s pycompat, plus the
//! `raise_exception` and `strftime_now` helpers templates call.

mod builtin;
mod strftime;

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, Error, ErrorKind, Value};

use crate::error::{Result, RuntimeError};
use crate::model::Model;

pub use builtin::{CHATML_TEMPLATE, GEMMA_TEMPLATE};

/// A function call an assistant message made (OpenAI's `tool_calls` entries), kept so the
/// template can render the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatToolCall {
    /// The call id (`call_...`), echoed by the tool message answering it.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
    /// Assistant messages: the function calls it made.
    pub tool_calls: Vec<ChatToolCall>,
    /// Tool messages: the call this is the result of.
    pub tool_call_id: Option<String>,
    /// The author's name, when the request gave one.
    pub name: Option<String>,
    /// Assistant messages: the thinking that came before the content (Qwen3's templates read
    /// it as `message.reasoning_content`, gpt-oss's as `message.thinking`; templates that drop
    /// earlier thinking ignore it).
    pub reasoning_content: Option<String>,
}

impl ChatMessage {
    /// A message from `role`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            reasoning_content: None,
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content)
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new("system", content)
    }
}

/// Where a template came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateSource {
    /// The model file's `tokenizer.chat_template`.
    Model,
    /// The built-in Gemma template (Gemma models ship none in the GGUF used here).
    BuiltinGemma,
    /// The built-in ChatML template (fallback).
    BuiltinChatMl,
}

/// A chat template with the special-token texts it may use.
#[derive(Clone, Debug)]
pub struct ChatTemplate {
    source: String,
    kind: TemplateSource,
    bos_token: String,
    eos_token: String,
    /// Extra variables the template sees (`chat_template_kwargs`, e.g. `enable_thinking`).
    kwargs: serde_json::Map<String, serde_json::Value>,
}

impl ChatTemplate {
    /// A template from Jinja source.
    pub fn new(
        source: impl Into<String>,
        kind: TemplateSource,
        bos_token: impl Into<String>,
        eos_token: impl Into<String>,
    ) -> Self {
        ChatTemplate {
            source: source.into(),
            kind,
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
            kwargs: serde_json::Map::new(),
        }
    }

    /// The model's template, or the built-in one that fits it.
    pub fn for_model(model: &dyn Model) -> Self {
        Self::for_model_or(model, None)
    }

    /// `source` when given (`--chat-template FILE`, counted as the model's own), else the
    /// model's template or the built-in one that fits it.
    pub fn for_model_or(model: &dyn Model, source: Option<&str>) -> Self {
        let tok = model.tokenizer();
        let sp = tok.special();
        let (source, kind) = match source.or(model.chat_template()) {
            Some(t) => (t.to_string(), TemplateSource::Model),
            None if model.architecture().starts_with("gemma") => {
                (GEMMA_TEMPLATE.to_string(), TemplateSource::BuiltinGemma)
            }
            None => (CHATML_TEMPLATE.to_string(), TemplateSource::BuiltinChatMl),
        };
        ChatTemplate::new(source, kind, sp.bos_text.clone(), sp.eos_text.clone())
    }

    /// This template with `kwargs` as extra variables (llama-server's and vLLM's
    /// `chat_template_kwargs`; later keys win over earlier ones, and none replaces `messages`,
    /// `tools`, `add_generation_prompt` or the special tokens).
    pub fn with_kwargs(mut self, kwargs: &serde_json::Map<String, serde_json::Value>) -> Self {
        for (k, v) in kwargs {
            self.kwargs.insert(k.clone(), v.clone());
        }
        self
    }

    /// Where the template came from.
    pub fn kind(&self) -> TemplateSource {
        self.kind
    }

    /// The Jinja source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The BOS text the template sees as `bos_token`.
    pub fn bos_token(&self) -> &str {
        &self.bos_token
    }

    /// Whether the template renders a `tools` list itself (Hermes / Qwen style templates do;
    /// plain ChatML ones such as SmolLM2's never mention it).
    pub fn takes_tools(&self) -> bool {
        self.source.contains("tools")
    }

    /// Renders `messages`; with `add_generation_prompt` the text ends with the opening of the
    /// assistant's turn.
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        self.render_with_tools(messages, add_generation_prompt, None)
    }

    /// [`ChatTemplate::render`] with OpenAI's tool objects given to the template as `tools`
    /// (left undefined when `None`). Messages carry `tool_calls` (arguments parsed back into
    /// JSON when they are JSON, as Hugging Face templates expect), `tool_call_id` and `name`.
    pub fn render_with_tools(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
        tools: Option<&serde_json::Value>,
    ) -> Result<String> {
        let env = environment();
        let harmony = crate::reasoning::is_harmony_template(&self.source);
        let msgs: Vec<Value> = messages.iter().map(|m| message_value(m, harmony)).collect();
        let mut ctx = std::collections::BTreeMap::new();
        for (k, v) in &self.kwargs {
            ctx.insert(k.as_str(), json_value(v));
        }
        ctx.insert("messages", Value::from(msgs));
        ctx.insert("add_generation_prompt", Value::from(add_generation_prompt));
        ctx.insert("bos_token", Value::from(self.bos_token.as_str()));
        ctx.insert("eos_token", Value::from(self.eos_token.as_str()));
        if let Some(t) = tools {
            ctx.insert("tools", json_value(t));
        }
        env.render_str(&self.source, Value::from(ctx)).map_err(|e| RuntimeError::Template(describe(&e)))
    }
}

/// A JSON value as a template value (objects keep their key order).
fn json_value(v: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match v {
        J::Null => Value::from(()),
        J::Bool(b) => Value::from(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().unwrap_or(0.0)),
        },
        J::String(s) => Value::from(s.as_str()),
        J::Array(a) => Value::from(a.iter().map(json_value).collect::<Vec<_>>()),
        J::Object(o) => Value::from_pairs(o.iter().map(|(k, v)| (k.as_str(), json_value(v)))),
    }
}

/// One message as templates see it: `role` and `content`, plus `tool_calls`, `tool_call_id`,
/// `name` and `reasoning_content` when the message has them (left undefined otherwise, so a
/// template's `is defined` tests work as with Hugging Face's renderer). Under a harmony template
/// (`harmony`) the reasoning is also `thinking`, the field gpt-oss's template reads (and writes
/// into an `analysis` message).
fn message_value(m: &ChatMessage, harmony: bool) -> Value {
    let mut map = std::collections::BTreeMap::new();
    map.insert("role", Value::from(m.role.as_str()));
    map.insert("content", Value::from(m.content.as_str()));
    if !m.tool_calls.is_empty() {
        let calls: Vec<serde_json::Value> = m
            .tool_calls
            .iter()
            .map(|c| {
                let args = serde_json::from_str::<serde_json::Value>(&c.arguments)
                    .unwrap_or_else(|_| serde_json::Value::String(c.arguments.clone()));
                serde_json::json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": args}})
            })
            .collect();
        map.insert("tool_calls", json_value(&serde_json::Value::Array(calls)));
    }
    if let Some(id) = &m.tool_call_id {
        map.insert("tool_call_id", Value::from(id.as_str()));
    }
    if let Some(n) = &m.name {
        map.insert("name", Value::from(n.as_str()));
    }
    if let Some(r) = &m.reasoning_content {
        map.insert("reasoning_content", Value::from(r.as_str()));
        if harmony {
            map.insert("thinking", Value::from(r.as_str()));
        }
    }
    Value::from(map)
}

/// The Jinja environment chat templates expect.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    if let Ok(syntax) = SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build() {
        env.set_syntax(syntax);
    }
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |msg: String| -> std::result::Result<Value, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, format!("the template raised: {msg}")))
    });
    env.add_function("strftime_now", |fmt: String| strftime::now(&fmt));
    env
}

/// An error with its chain of causes, on one line.
fn describe(e: &Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv() -> Vec<ChatMessage> {
        vec![ChatMessage::system("Be brief."), ChatMessage::user("Hi!")]
    }

    #[test]
    fn chatml_builtin() {
        let t = ChatTemplate::new(CHATML_TEMPLATE, TemplateSource::BuiltinChatMl, "", "<|im_end|>");
        assert_eq!(
            t.render(&conv(), true).unwrap(),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(t.render(&conv()[1..], false).unwrap(), "<|im_start|>user\nHi!<|im_end|>\n");
    }

    #[test]
    fn gemma_builtin_folds_the_system_prompt_into_the_first_turn() {
        let t = ChatTemplate::new(GEMMA_TEMPLATE, TemplateSource::BuiltinGemma, "<bos>", "<eos>");
        let mut c = conv();
        c.push(ChatMessage::new("assistant", " Hello. "));
        c.push(ChatMessage::user("Bye"));
        assert_eq!(
            t.render(&c, true).unwrap(),
            "<bos><start_of_turn>user\nBe brief.\n\nHi!<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n\
             <start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"
        );
        assert_eq!(t.render(&[ChatMessage::user("x")], false).unwrap(), "<bos><start_of_turn>user\nx<end_of_turn>\n");
    }

    #[test]
    fn tools_and_tool_calls_reach_the_template() {
        let src = "{% for t in tools %}{{ t.function.name }};{% endfor %}{% for m in messages %}{{ m.role }}:\
                   {% for c in m.tool_calls %}{{ c.id }}={{ c.function.name }}({{ c.function.arguments.city }}){% endfor %}\
                   {{ m.tool_call_id }}|{% endfor %}{% if tools is undefined %}none{% endif %}";
        let t = ChatTemplate::new(src, TemplateSource::Model, "", "");
        let mut call = ChatMessage::new("assistant", "");
        call.tool_calls.push(ChatToolCall {
            id: "c1".into(),
            name: "w".into(),
            arguments: r#"{"city": "Oslo"}"#.into(),
        });
        let mut result = ChatMessage::new("tool", "sunny");
        result.tool_call_id = Some("c1".into());
        let tools = serde_json::json!([{"type": "function", "function": {"name": "w"}}]);
        let msgs = [ChatMessage::user("hi"), call, result];
        assert_eq!(t.render_with_tools(&msgs, false, Some(&tools)).unwrap(), "w;user:|assistant:c1=w(Oslo)|tool:c1|");
        assert!(t.render(&msgs, false).unwrap().ends_with("none"));
        assert!(t.takes_tools());
    }

    #[test]
    fn reasoning_content_is_defined_only_when_given() {
        let src =
            "{% for m in messages %}{{ m.role }}:{% if m.reasoning_content is defined %}[{{ m.reasoning_content }}]\
                   {% endif %}{{ m.content }}|{% endfor %}";
        let t = ChatTemplate::new(src, TemplateSource::Model, "", "");
        let mut answer = ChatMessage::new("assistant", "4");
        answer.reasoning_content = Some("2+2".into());
        let msgs = [ChatMessage::user("2+2?"), answer, ChatMessage::new("assistant", "ok")];
        assert_eq!(t.render(&msgs, false).unwrap(), "user:2+2?|assistant:[2+2]4|assistant:ok|");
    }

    #[test]
    fn a_harmony_template_reads_reasoning_as_thinking() {
        let src = "{% for m in messages %}<|start|>{{ m.role }}{% if m.thinking is defined %}<|channel|>analysis\
                   <|message|>{{ m.thinking }}<|end|><|start|>{{ m.role }}{% endif %}<|message|>{{ m.content }}<|end|>\
                   {% endfor %}";
        let t = ChatTemplate::new(src, TemplateSource::Model, "", "");
        let mut answer = ChatMessage::new("assistant", "4");
        answer.reasoning_content = Some("2+2".into());
        let want = "<|start|>user<|message|>2+2?<|end|><|start|>assistant<|channel|>analysis<|message|>2+2<|end|>\
                    <|start|>assistant<|message|>4<|end|>";
        assert_eq!(t.render(&[ChatMessage::user("2+2?"), answer.clone()], false).unwrap(), want);
        // Other templates do not see `thinking`.
        let think = ChatTemplate::new("{{ messages[0].thinking is defined }}", TemplateSource::Model, "", "");
        assert_eq!(think.render(&[answer], false).unwrap(), "False");
    }

    #[test]
    fn hugging_face_idioms_work() {
        let src = "{% for m in messages %}{% if m.role not in ['user', 'system'] %}{{ raise_exception('bad role ' + m.role) }}{% endif %}\n\
                   {{ m.content.strip().upper() }}|{% endfor %}{{ strftime_now('%Y')|length }}";
        let t = ChatTemplate::new(src, TemplateSource::Model, "", "");
        assert_eq!(t.render(&[ChatMessage::user("  hi ")], false).unwrap(), "HI|4");
        let err = t.render(&[ChatMessage::new("tool", "x")], false).unwrap_err().to_string();
        assert!(err.contains("bad role tool"), "{err}");
        let bad = ChatTemplate::new("{% for %}", TemplateSource::Model, "", "");
        assert!(matches!(bad.render(&[], false), Err(RuntimeError::Template(_))));
    }
}
