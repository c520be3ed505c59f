//! A stream's chunks folded into the whole response, the way the official SDKs assemble a
//! stream (the `openai` package's `ChatCompletionStreamState`): a choice's fields come from its
//! chunks' deltas — text joined, each tool call's id, name and arguments joined by the call's
//! index, logprobs and steps appended, the last finish reason and usage kept. The unstreamed
//! response is this fold over the chunks the stream would have sent ([`crate::chunks`]), so a
//! client that streams and one that does not read the same answer.

use crate::chunks::Chunk;
use crate::errors::ApiError;
use crate::openai_types::{
    AssistantMessage, ChatChoice, ChatCompletion, ChatLogprobs, LegacyLogprobs, LogprobEntry, StepEntry, TextChoice,
    TextCompletion, ToolCall, Usage,
};
use crate::render::ResponseMeta;

#[derive(Default)]
struct ChatAcc {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    calls: Vec<ToolCall>,
    logprobs: Option<Vec<LogprobEntry>>,
    finish: Option<&'static str>,
    steps: Vec<StepEntry>,
}

#[derive(Default)]
struct TextAcc {
    text: String,
    logprobs: Option<LegacyLogprobs>,
    finish: Option<&'static str>,
    steps: Vec<StepEntry>,
}

/// The fold of one request's chunks.
#[derive(Default)]
pub struct Assembler {
    chat: Vec<ChatAcc>,
    text: Vec<TextAcc>,
    usage: Option<Usage>,
    failed: Option<ApiError>,
}

/// The slot of `index` in `v`, made when first seen.
fn at<T: Default>(v: &mut Vec<T>, index: usize) -> &mut T {
    if v.len() <= index {
        v.resize_with(index + 1, T::default);
    }
    &mut v[index]
}

impl Assembler {
    /// Folds one chunk in.
    pub fn add(&mut self, chunk: Chunk) {
        match chunk {
            Chunk::Chat(c) => {
                if let Some(Some(u)) = c.usage {
                    self.usage = Some(u);
                }
                for ch in c.choices {
                    let acc = at(&mut self.chat, ch.index);
                    let join = |acc: &mut Option<String>, t: Option<String>| {
                        if let Some(t) = t {
                            acc.get_or_insert_with(String::new).push_str(&t);
                        }
                    };
                    join(&mut acc.content, ch.delta.content);
                    join(&mut acc.reasoning_content, ch.delta.reasoning_content);
                    join(&mut acc.reasoning, ch.delta.reasoning);
                    for d in ch.delta.tool_calls.unwrap_or_default() {
                        let call = at(&mut acc.calls, d.index);
                        if let Some(id) = d.id {
                            call.id.push_str(&id);
                        }
                        if let Some(kind) = d.kind {
                            call.kind = kind;
                        }
                        if let Some(name) = d.function.name {
                            call.function.name.push_str(&name);
                        }
                        call.function.arguments.push_str(&d.function.arguments);
                    }
                    if let Some(lp) = ch.logprobs {
                        acc.logprobs.get_or_insert_with(Vec::new).extend(lp.content);
                    }
                    if ch.finish_reason.is_some() {
                        acc.finish = ch.finish_reason;
                    }
                    acc.steps.extend(ch.steps.unwrap_or_default());
                }
            }
            Chunk::Text(c) => {
                if let Some(Some(u)) = c.usage {
                    self.usage = Some(u);
                }
                for ch in c.choices {
                    let acc = at(&mut self.text, ch.index);
                    acc.text.push_str(&ch.text);
                    if let Some(lp) = ch.logprobs {
                        acc.logprobs.get_or_insert_with(LegacyLogprobs::default).extend(lp);
                    }
                    if ch.finish_reason.is_some() {
                        acc.finish = ch.finish_reason;
                    }
                    acc.steps.extend(ch.steps.unwrap_or_default());
                }
            }
            Chunk::Failed(e) => self.failed = Some(e),
        }
    }

    /// The whole `chat.completion`.
    pub fn chat(self, meta: &ResponseMeta) -> Result<ChatCompletion, ApiError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let traced = meta.steps.is_some();
        let choices = self
            .chat
            .into_iter()
            .enumerate()
            .map(|(index, c)| ChatChoice {
                index,
                message: AssistantMessage {
                    role: "assistant",
                    content: c.content,
                    reasoning_content: c.reasoning_content,
                    reasoning: c.reasoning,
                    refusal: None,
                    annotations: Vec::new(),
                    tool_calls: (!c.calls.is_empty()).then_some(c.calls),
                },
                logprobs: c.logprobs.map(|content| ChatLogprobs { content, refusal: None }),
                finish_reason: c.finish.unwrap_or("stop"),
                steps: traced.then_some(c.steps),
            })
            .collect();
        Ok(meta.completion("chat.completion", choices, self.usage.unwrap_or_default()))
    }

    /// The whole `text_completion`.
    pub fn text(self, meta: &ResponseMeta) -> Result<TextCompletion, ApiError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let traced = meta.steps.is_some();
        let choices = self
            .text
            .into_iter()
            .enumerate()
            .map(|(index, c)| TextChoice {
                index,
                text: c.text,
                logprobs: c.logprobs,
                finish_reason: Some(c.finish.unwrap_or("stop")),
                steps: traced.then_some(c.steps),
            })
            .collect();
        Ok(meta.completion("text_completion", choices, Some(Some(self.usage.unwrap_or_default()))))
    }
}
