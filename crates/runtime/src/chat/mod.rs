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
use minijinja::{context, Environment, Error, ErrorKind, Value};

use crate::error::{Result, RuntimeError};
use crate::model::Model;

pub use builtin::{CHATML_TEMPLATE, GEMMA_TEMPLATE};

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message from `role`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage { role: role.into(), content: content.into() }
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
}

impl ChatTemplate {
    /// A template from Jinja source.
    pub fn new(
        source: impl Into<String>,
        kind: TemplateSource,
        bos_token: impl Into<String>,
        eos_token: impl Into<String>,
    ) -> Self {
        ChatTemplate { source: source.into(), kind, bos_token: bos_token.into(), eos_token: eos_token.into() }
    }

    /// The model's template, or the built-in one that fits it.
    pub fn for_model(model: &dyn Model) -> Self {
        let tok = model.tokenizer();
        let sp = tok.special();
        let (source, kind) = match model.chat_template() {
            Some(t) => (t.to_string(), TemplateSource::Model),
            None if model.architecture().starts_with("gemma") => {
                (GEMMA_TEMPLATE.to_string(), TemplateSource::BuiltinGemma)
            }
            None => (CHATML_TEMPLATE.to_string(), TemplateSource::BuiltinChatMl),
        };
        ChatTemplate::new(source, kind, sp.bos_text.clone(), sp.eos_text.clone())
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

    /// Renders `messages`; with `add_generation_prompt` the text ends with the opening of the
    /// assistant's turn.
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        let env = environment();
        let msgs: Vec<Value> =
            messages.iter().map(|m| context! { role => m.role.as_str(), content => m.content.as_str() }).collect();
        let ctx = context! {
            messages => msgs,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
        };
        env.render_str(&self.source, ctx).map_err(|e| RuntimeError::Template(describe(&e)))
    }
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
