//! A Messages answer as the events Anthropic streams, in its order: `message_start`, `ping`,
//! then per content block `content_block_start`, its deltas (`text_delta`, `input_json_delta`)
//! and `content_block_stop`, then `message_delta` (stop reason, usage) and `message_stop`.
//! [`EventMaker`] makes them from the engine's events through the protocol-neutral
//! [`AnswerReader`]; the stream writes them ([`super::sse`]) and the whole answer is their
//! fold ([`super::assemble`]), so the two cannot differ. A reasoning block the answer reader
//! finds is a `thinking` block (`thinking_delta`s), before the text.

use nucleus_runtime::StopReason;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::answer::{AnswerReader, Ending, Piece};
use crate::collect::failure;
use crate::engine::Event;
use crate::errors::ApiError;
use crate::render::ResponseMeta;

/// A whole answer (and, empty, the message of `message_start`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "AnthropicMessage")]
pub struct Message {
    /// `msg_...`.
    pub id: String,
    /// `message`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `assistant`.
    pub role: &'static str,
    /// The model id.
    pub model: String,
    /// Text and `tool_use` blocks, in order.
    pub content: Vec<Block>,
    /// `end_turn`, `max_tokens`, `stop_sequence` or `tool_use` (null in `message_start`).
    pub stop_reason: Option<&'static str>,
    /// The stop sequence met, with `stop_reason: stop_sequence`.
    pub stop_sequence: Option<String>,
    /// Token counts.
    pub usage: Usage,
}

/// A content block of an answer.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(rename = "AnthropicBlock")]
pub enum Block {
    /// The model's reasoning, before its answer (when the chat template and request read one).
    Thinking {
        /// The reasoning.
        thinking: String,
        /// Always empty (no signature is made).
        signature: String,
    },
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call, its input generated under the tool's `input_schema`.
    ToolUse {
        /// `toolu_...`.
        id: String,
        /// The tool.
        name: String,
        /// The input object (in `content_block_start`: `{}`, the input follows as
        /// `input_json_delta`s).
        input: Value,
    },
}

/// What a `content_block_delta` adds to its block.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(rename = "AnthropicBlockDelta")]
pub enum BlockDelta {
    /// More reasoning.
    ThinkingDelta {
        /// The text.
        thinking: String,
    },
    /// More text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// More of a tool call's input, as JSON text (the pieces joined are the input).
    InputJsonDelta {
        /// The piece.
        partial_json: String,
    },
}

/// Token counts (Anthropic's: `input_tokens` excludes the tokens read from the prompt cache).
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "AnthropicUsage")]
pub struct Usage {
    /// Prompt tokens evaluated for this request.
    pub input_tokens: usize,
    /// Tokens generated.
    pub output_tokens: usize,
    /// Always 0 (the prompt cache is automatic).
    pub cache_creation_input_tokens: usize,
    /// Prompt tokens whose state came from the prompt cache.
    pub cache_read_input_tokens: usize,
}

/// `message_delta`'s `delta`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "AnthropicMessageDelta")]
pub struct MessageDelta {
    /// Why the answer ended.
    pub stop_reason: Option<&'static str>,
    /// The stop sequence met.
    pub stop_sequence: Option<String>,
}

/// One event of the stream.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(rename = "AnthropicStreamEvent")]
pub enum StreamEvent {
    /// The message, still empty.
    MessageStart {
        /// Its id, model and input usage.
        message: Message,
    },
    /// Keep-alive.
    Ping,
    /// A block begins.
    ContentBlockStart {
        /// Its index in `content`.
        index: usize,
        /// The block, empty.
        content_block: Block,
    },
    /// A block grows.
    ContentBlockDelta {
        /// The block's index.
        index: usize,
        /// What it adds.
        delta: BlockDelta,
    },
    /// A block is complete.
    ContentBlockStop {
        /// The block's index.
        index: usize,
    },
    /// The answer ended.
    MessageDelta {
        /// Why.
        delta: MessageDelta,
        /// The final counts.
        usage: Usage,
    },
    /// Nothing follows.
    MessageStop,
}

impl StreamEvent {
    /// The SSE `event:` name (the `type`).
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::MessageStart { .. } => "message_start",
            StreamEvent::Ping => "ping",
            StreamEvent::ContentBlockStart { .. } => "content_block_start",
            StreamEvent::ContentBlockDelta { .. } => "content_block_delta",
            StreamEvent::ContentBlockStop { .. } => "content_block_stop",
            StreamEvent::MessageDelta { .. } => "message_delta",
            StreamEvent::MessageStop => "message_stop",
        }
    }
}

/// What the maker gives out: an event, or the failure that ends the answer.
#[derive(Clone, Debug)]
pub enum Out {
    /// An event.
    Event(StreamEvent),
    /// The request failed; nothing follows.
    Failed(ApiError),
}

/// Anthropic's `stop_reason` for an ending, and the stop sequence met. A stop sequence met
/// after calls began is still `stop_sequence`: it may have cut the last call, as `max_tokens`
/// does.
pub fn stop_reason(e: &Ending) -> (&'static str, Option<String>) {
    match &e.reason {
        StopReason::EndOfGeneration if e.calls > 0 => ("tool_use", None),
        StopReason::EndOfGeneration => ("end_turn", None),
        StopReason::StopString(s) => ("stop_sequence", Some(s.clone())),
        StopReason::MaxTokens | StopReason::ContextFull | StopReason::Cancelled => ("max_tokens", None),
    }
}

/// The block open now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    Thinking,
    Text,
    Call(usize),
}

/// Turns one request's engine events (one choice) into its stream events.
pub struct EventMaker {
    meta: ResponseMeta,
    reader: AnswerReader,
    /// The block open and its index.
    open: Option<(Open, usize)>,
    /// Blocks begun.
    blocks: usize,
    done: bool,
    /// `thinking.display: "omitted"`: thinking blocks without their text.
    omit_thinking: bool,
}

impl EventMaker {
    /// A maker for `meta`'s request, and the events that open its stream.
    pub fn new(meta: ResponseMeta) -> (Self, Vec<Out>) {
        let message = Message {
            id: meta.id.clone(),
            kind: "message",
            role: "assistant",
            model: meta.model.clone(),
            content: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: Usage { input_tokens: meta.prompt_tokens, ..Usage::default() },
        };
        let reader = meta.answer_reader();
        let m = EventMaker { meta, reader, open: None, blocks: 0, done: false, omit_thinking: false };
        (m, vec![Out::Event(StreamEvent::MessageStart { message }), Out::Event(StreamEvent::Ping)])
    }

    /// Thinking blocks come with empty text (`thinking.display: "omitted"`).
    pub fn omitting_thinking(mut self, omit: bool) -> Self {
        self.omit_thinking = omit;
        self
    }

    /// What the responses share.
    pub fn meta(&self) -> &ResponseMeta {
        &self.meta
    }

    /// The answer ended (or failed): nothing follows.
    pub fn done(&self) -> bool {
        self.done
    }

    /// The events `ev` adds, appended to `out`.
    pub fn on_event(&mut self, ev: Event, out: &mut Vec<Out>) {
        if self.done {
            return;
        }
        match ev {
            Event::Token { choice: 0, token } => {
                let mut pieces = Vec::new();
                self.reader.push(&token.text, &mut pieces);
                self.pieces(pieces, out);
            }
            Event::Finished { choice: 0, reason, completion_tokens, cached_tokens, .. } => {
                let mut pieces = Vec::new();
                self.reader.finish(&mut pieces);
                self.pieces(pieces, out);
                self.close(out);
                let (stop_reason, stop_sequence) = stop_reason(&Ending { reason, calls: self.reader.calls() });
                let cached = cached_tokens.min(self.meta.prompt_tokens);
                let usage = Usage {
                    input_tokens: self.meta.prompt_tokens - cached,
                    output_tokens: completion_tokens,
                    cache_creation_input_tokens: 0,
                    cache_read_input_tokens: cached,
                };
                let delta = MessageDelta { stop_reason: Some(stop_reason), stop_sequence };
                out.push(Out::Event(StreamEvent::MessageDelta { delta, usage }));
                out.push(Out::Event(StreamEvent::MessageStop));
                self.done = true;
            }
            Event::Failed { message, bad_input, shutting_down } => {
                out.push(Out::Failed(failure(message, bad_input, shutting_down)));
                self.done = true;
            }
            Event::Started | Event::PromptToken { .. } | Event::Token { .. } | Event::Finished { .. } => {}
        }
    }

    /// The engine went away before the answer ended.
    pub fn engine_gone(&mut self, out: &mut Vec<Out>) {
        if !self.done {
            out.push(Out::Failed(ApiError::internal("the engine stopped before the generation finished")));
            self.done = true;
        }
    }

    fn pieces(&mut self, pieces: Vec<Piece>, out: &mut Vec<Out>) {
        for p in pieces {
            match p {
                Piece::Reasoning(thinking) => {
                    let block = Block::Thinking { thinking: String::new(), signature: String::new() };
                    let index = self.begin(Open::Thinking, block, out);
                    if !thinking.is_empty() && !self.omit_thinking {
                        out.push(delta(index, BlockDelta::ThinkingDelta { thinking }));
                    }
                }
                Piece::Text(text) => {
                    let index = self.begin(Open::Text, Block::Text { text: String::new() }, out);
                    if !text.is_empty() {
                        out.push(delta(index, BlockDelta::TextDelta { text }));
                    }
                }
                Piece::CallStart { index, id, name } => {
                    let id = format!("toolu_{}", id.strip_prefix("call_").unwrap_or(&id));
                    self.close(out);
                    self.begin(
                        Open::Call(index),
                        Block::ToolUse { id, name, input: Value::Object(Default::default()) },
                        out,
                    );
                }
                Piece::CallArgs { index, text } => {
                    if let Some((Open::Call(i), at)) = self.open {
                        if i == index && !text.is_empty() {
                            out.push(delta(at, BlockDelta::InputJsonDelta { partial_json: text }));
                        }
                    }
                }
            }
        }
    }

    /// The index of the open block of kind `kind`, opening `block` (after closing another) if
    /// none is.
    fn begin(&mut self, kind: Open, block: Block, out: &mut Vec<Out>) -> usize {
        if let Some((k, at)) = self.open {
            if k == kind {
                return at;
            }
            self.close(out);
        }
        let index = self.blocks;
        self.blocks += 1;
        self.open = Some((kind, index));
        out.push(Out::Event(StreamEvent::ContentBlockStart { index, content_block: block }));
        index
    }

    fn close(&mut self, out: &mut Vec<Out>) {
        if let Some((_, index)) = self.open.take() {
            out.push(Out::Event(StreamEvent::ContentBlockStop { index }));
        }
    }
}

fn delta(index: usize, delta: BlockDelta) -> Out {
    Out::Event(StreamEvent::ContentBlockDelta { index, delta })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons() {
        let r = |reason, calls| stop_reason(&Ending { reason, calls });
        assert_eq!(r(StopReason::EndOfGeneration, 0), ("end_turn", None));
        assert_eq!(r(StopReason::EndOfGeneration, 1), ("tool_use", None));
        assert_eq!(r(StopReason::StopString("\n".into()), 0), ("stop_sequence", Some("\n".into())));
        assert_eq!(r(StopReason::StopString("}".into()), 1), ("stop_sequence", Some("}".into())));
        assert_eq!(r(StopReason::MaxTokens, 1), ("max_tokens", None));
        assert_eq!(r(StopReason::ContextFull, 0), ("max_tokens", None));
    }
}
