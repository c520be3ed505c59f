//! The Responses API's answers as the `openai` SDKs validate them: the `response` object, its
//! output items and usage, and the typed stream events (each with `sequence_number`).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// The request's settings a response repeats (the SDK types require several of them).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "ResponseSettings")]
pub struct Echo {
    /// `instructions`.
    pub instructions: Option<String>,
    /// `metadata` (empty when none).
    pub metadata: Map<String, Value>,
    /// `parallel_tool_calls` (default true).
    pub parallel_tool_calls: bool,
    /// `temperature`.
    pub temperature: Option<f64>,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `tool_choice` (default `auto`).
    pub tool_choice: Value,
    /// `tools`, as Responses function tools.
    pub tools: Vec<Value>,
    /// `max_output_tokens`.
    pub max_output_tokens: Option<u64>,
    /// `previous_response_id`.
    pub previous_response_id: Option<String>,
    /// `text` (`{"format": {...}}`).
    pub text: Value,
    /// `truncation`.
    pub truncation: String,
    /// `store`.
    pub store: bool,
    /// `user`.
    pub user: Option<String>,
    /// `reasoning`, as sent.
    pub reasoning: Option<Value>,
}

/// `status` of a response or item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "ResponseStatus")]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Still generating.
    InProgress,
    /// Done.
    Completed,
    /// Cut (the token limit or the context).
    Incomplete,
    /// Failed.
    Failed,
}

/// `{"reason": "max_output_tokens"}`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "ResponseIncompleteDetails")]
pub struct IncompleteDetails {
    /// Why the response is incomplete.
    pub reason: &'static str,
}

/// `error` of a failed response.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "ResponseErrorObject")]
pub struct ResponseError {
    /// `server_error`.
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
}

/// `input_tokens_details`.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[schemars(rename = "ResponseInputTokensDetails")]
pub struct InputDetails {
    /// Prompt tokens served from the prompt cache.
    pub cached_tokens: usize,
    /// Always 0 (the cache is written as a side effect).
    pub cache_write_tokens: usize,
}

/// `output_tokens_details`.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[schemars(rename = "ResponseOutputTokensDetails")]
pub struct OutputDetails {
    /// Tokens generated inside the reasoning block (0 when answers are not read for one).
    pub reasoning_tokens: usize,
}

/// `usage`.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct ResponseUsage {
    /// Prompt tokens.
    pub input_tokens: usize,
    /// Of those, cached.
    pub input_tokens_details: InputDetails,
    /// Generated tokens.
    pub output_tokens: usize,
    /// Of those, reasoning.
    pub output_tokens_details: OutputDetails,
    /// Their sum.
    pub total_tokens: usize,
}

/// A content part: of an output message (`output_text`) or of a reasoning item
/// (`reasoning_text`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "ResponseOutputPart")]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputPart {
    /// Text.
    OutputText {
        /// The text.
        text: String,
        /// Always empty.
        annotations: Vec<Value>,
    },
    /// The model's thinking, as it wrote it.
    ReasoningText {
        /// The text.
        text: String,
    },
}

impl OutputPart {
    /// The part's text.
    pub fn text(&self) -> &str {
        match self {
            OutputPart::OutputText { text, .. } | OutputPart::ReasoningText { text } => text,
        }
    }

    fn text_mut(&mut self) -> &mut String {
        match self {
            OutputPart::OutputText { text, .. } | OutputPart::ReasoningText { text } => text,
        }
    }

    /// Appends `delta` to the part's text.
    pub fn push_str(&mut self, delta: &str) {
        self.text_mut().push_str(delta)
    }
}

/// An output item.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "ResponseOutputItem")]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// The model's thinking before its answer (when the chat template and request read a
    /// reasoning block): one `reasoning_text` part, no summary.
    Reasoning {
        /// `rs_…`.
        id: String,
        /// Always empty (no summaries are written).
        summary: Vec<Value>,
        /// The thinking.
        content: Vec<OutputPart>,
        /// Its status.
        status: Status,
    },
    /// An assistant message.
    Message {
        /// `msg_…`.
        id: String,
        /// Always `assistant`.
        role: &'static str,
        /// Its status.
        status: Status,
        /// Its parts.
        content: Vec<OutputPart>,
    },
    /// A function call.
    FunctionCall {
        /// `fc_…`.
        id: String,
        /// The id a `function_call_output` answers (`call_…`).
        call_id: String,
        /// The function.
        name: String,
        /// The `namespace` tool holding the function, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// Its arguments (JSON text).
        arguments: String,
        /// Its status.
        status: Status,
    },
}

/// The `response` object.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "Response")]
pub struct ResponseObject {
    /// `resp_…`.
    pub id: String,
    /// Always `response`.
    pub object: &'static str,
    /// Unix seconds.
    pub created_at: u64,
    /// Unix seconds, when done.
    pub completed_at: Option<u64>,
    /// Its status.
    pub status: Status,
    /// The model.
    pub model: String,
    /// The output items.
    pub output: Vec<OutputItem>,
    /// Token counts (once done).
    pub usage: Option<ResponseUsage>,
    /// Why it is incomplete.
    pub incomplete_details: Option<IncompleteDetails>,
    /// Why it failed.
    pub error: Option<ResponseError>,
    /// The request's settings.
    #[serde(flatten)]
    pub echo: Echo,
}

/// A stream event (without its `sequence_number`, added as it is written).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "ResponseStreamEventBody")]
#[serde(tag = "type")]
pub enum StreamEvent {
    /// The response exists.
    #[serde(rename = "response.created")]
    Created {
        /// As it is now.
        response: ResponseObject,
    },
    /// Generation started.
    #[serde(rename = "response.in_progress")]
    InProgress {
        /// As it is now.
        response: ResponseObject,
    },
    /// An output item begins.
    #[serde(rename = "response.output_item.added")]
    ItemAdded {
        /// Its index in `output`.
        output_index: usize,
        /// The item (empty so far).
        item: OutputItem,
    },
    /// A content part begins.
    #[serde(rename = "response.content_part.added")]
    PartAdded {
        /// The message's id.
        item_id: String,
        /// Its index in `output`.
        output_index: usize,
        /// The part's index.
        content_index: usize,
        /// The part (empty so far).
        part: OutputPart,
    },
    /// More text.
    #[serde(rename = "response.output_text.delta")]
    TextDelta {
        /// The message's id.
        item_id: String,
        /// Its index in `output`.
        output_index: usize,
        /// The part's index.
        content_index: usize,
        /// The text.
        delta: String,
        /// Always empty.
        logprobs: Vec<Value>,
    },
    /// More thinking.
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningDelta {
        /// The reasoning item's id.
        item_id: String,
        /// Its index in `output`.
        output_index: usize,
        /// The part's index.
        content_index: usize,
        /// The text.
        delta: String,
    },
    /// The thinking is complete.
    #[serde(rename = "response.reasoning_text.done")]
    ReasoningDone {
        /// The reasoning item's id.
        item_id: String,
        /// Its index in `output`.
        output_index: usize,
        /// The part's index.
        content_index: usize,
        /// The whole text.
        text: String,
    },
    /// A part's text is complete.
    #[serde(rename = "response.output_text.done")]
    TextDone {
        /// The message's id.
        item_id: String,
        /// Its index in `output`.
        output_index: usize,
        /// The part's index.
        content_index: usize,
        /// The whole text.
        text: String,
        /// Always empty.
        logprobs: Vec<Value>,
    },
    /// A content part is complete.
    #[serde(rename = "response.content_part.done")]
    PartDone {
        /// The message's id.
        item_id: String,
        /// Its index in `output`.
        output_index: usize,
        /// The part's index.
        content_index: usize,
        /// The whole part.
        part: OutputPart,
    },
    /// More of a call's arguments.
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgsDelta {
        /// The call item's id.
        item_id: String,
        /// Its index in `output`.
        output_index: usize,
        /// The text.
        delta: String,
    },
    /// A call's arguments are complete.
    #[serde(rename = "response.function_call_arguments.done")]
    ArgsDone {
        /// The call item's id.
        item_id: String,
        /// Its index in `output`.
        output_index: usize,
        /// The function.
        name: String,
        /// The whole arguments.
        arguments: String,
    },
    /// An output item is complete.
    #[serde(rename = "response.output_item.done")]
    ItemDone {
        /// Its index in `output`.
        output_index: usize,
        /// The whole item.
        item: OutputItem,
    },
    /// The response is complete.
    #[serde(rename = "response.completed")]
    Completed {
        /// The whole response.
        response: ResponseObject,
    },
    /// The response was cut.
    #[serde(rename = "response.incomplete")]
    Incomplete {
        /// The whole response.
        response: ResponseObject,
    },
    /// The response failed.
    #[serde(rename = "response.failed")]
    Failed {
        /// The response with its error.
        response: ResponseObject,
    },
}

/// A written event: the event and its place in the stream.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "ResponseStreamEvent")]
pub struct Sequenced<'a> {
    /// The event.
    #[serde(flatten)]
    pub event: &'a StreamEvent,
    /// 0, 1, 2, … in stream order.
    pub sequence_number: usize,
}

impl StreamEvent {
    /// The SSE `event:` name.
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::Created { .. } => "response.created",
            StreamEvent::InProgress { .. } => "response.in_progress",
            StreamEvent::ItemAdded { .. } => "response.output_item.added",
            StreamEvent::PartAdded { .. } => "response.content_part.added",
            StreamEvent::TextDelta { .. } => "response.output_text.delta",
            StreamEvent::TextDone { .. } => "response.output_text.done",
            StreamEvent::ReasoningDelta { .. } => "response.reasoning_text.delta",
            StreamEvent::ReasoningDone { .. } => "response.reasoning_text.done",
            StreamEvent::PartDone { .. } => "response.content_part.done",
            StreamEvent::ArgsDelta { .. } => "response.function_call_arguments.delta",
            StreamEvent::ArgsDone { .. } => "response.function_call_arguments.done",
            StreamEvent::ItemDone { .. } => "response.output_item.done",
            StreamEvent::Completed { .. } => "response.completed",
            StreamEvent::Incomplete { .. } => "response.incomplete",
            StreamEvent::Failed { .. } => "response.failed",
        }
    }

    /// The response a terminal event carries.
    pub fn terminal(&self) -> Option<&ResponseObject> {
        match self {
            StreamEvent::Completed { response }
            | StreamEvent::Incomplete { response }
            | StreamEvent::Failed { response } => Some(response),
            _ => None,
        }
    }
}
