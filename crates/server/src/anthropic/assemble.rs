//! A Messages stream's events folded into the whole message, the way the official SDKs
//! assemble a stream (`messages.stream(...).get_final_message()`): `message_start` gives the
//! message, each `content_block_start` appends a block, text deltas are joined into their
//! block and `input_json_delta`s into their call's input (parsed when the block stops),
//! `message_delta` sets the stop reason and the usage. The unstreamed answer is this fold over
//! the events the stream would have sent.

use serde_json::{Map, Value};

use super::events::{Block, BlockDelta, Message, Out, StreamEvent};
use crate::errors::ApiError;

/// The fold of one answer's events.
#[derive(Default)]
pub struct Assembler {
    message: Option<Message>,
    /// Per block: the input JSON of a call, so far.
    json: Vec<String>,
    failed: Option<ApiError>,
}

impl Assembler {
    /// Folds one event in.
    pub fn add(&mut self, out: Out) {
        let ev = match out {
            Out::Event(ev) => ev,
            Out::Failed(e) => {
                self.failed = Some(e);
                return;
            }
        };
        if let StreamEvent::MessageStart { message } = ev {
            self.message = Some(message);
            return;
        }
        let Some(m) = self.message.as_mut() else { return };
        match ev {
            StreamEvent::ContentBlockStart { index, content_block } if index == m.content.len() => {
                m.content.push(content_block);
                self.json.push(String::new());
            }
            StreamEvent::ContentBlockDelta { index, delta } => match (m.content.get_mut(index), delta) {
                (Some(Block::Text { text }), BlockDelta::TextDelta { text: t }) => text.push_str(&t),
                (Some(Block::Thinking { thinking, .. }), BlockDelta::ThinkingDelta { thinking: t }) => {
                    thinking.push_str(&t)
                }
                (Some(Block::ToolUse { .. }), BlockDelta::InputJsonDelta { partial_json }) => {
                    self.json[index].push_str(&partial_json)
                }
                _ => {}
            },
            StreamEvent::ContentBlockStop { index } => {
                if let Some(Block::ToolUse { input, .. }) = m.content.get_mut(index) {
                    *input = parse_input(&self.json[index]);
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                m.stop_reason = delta.stop_reason;
                m.stop_sequence = delta.stop_sequence;
                m.usage = usage;
            }
            _ => {}
        }
    }

    /// The whole message (or the failure).
    pub fn message(self) -> Result<Message, ApiError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        self.message.ok_or_else(|| ApiError::internal("the answer ended before it began"))
    }
}

/// A call's input: the JSON object its pieces spell; `{}` for none, or for a call cut by
/// `max_tokens` before its input was complete.
fn parse_input(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Map::new()),
    }
}
