//! The `POST /v1/responses` body as typed values (serde for the parser, schemars for
//! `/openapi.json`): only the Responses API's own fields. Nucleus's sampling extensions
//! (`min_p`, `samplers`, …) are the chat endpoint's and are read by it ([`super::convert`]).
//! Shapes only here: a wrong JSON type is a 400 naming the field by its path
//! (`input[2].content[0].text`); the values are checked in [`super::convert`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::body::scalars::{Integer, Number};

/// `POST /v1/responses`: OpenAI's Responses fields (function tools, text formats, chaining by
/// `previous_response_id`), plus `seed` and the chat endpoint's sampling extensions
/// (`top_k`, `min_p`, `samplers`, `repeat_penalty`, …, as on `/v1/chat/completions`).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[schemars(rename = "CreateResponseRequest")]
#[schemars(transform = crate::sampling_fields::schema_ranges)]
#[serde(expecting = "a JSON object")]
pub struct ResponsesBody {
    /// The model id (see `GET /v1/models`). Default: the one served.
    pub model: Option<String>,
    /// The new input: a string (one user message) or a list of items.
    pub input: Option<Input>,
    /// A system message put in front of the conversation (not carried to chained turns).
    pub instructions: Option<String>,
    /// Most tokens to generate (default: until the end of generation or of the context).
    #[schemars(range(min = 1, max = 2147483647))]
    pub max_output_tokens: Option<Integer>,
    /// Sampling temperature (0: greedy).
    pub temperature: Option<Number>,
    /// Nucleus sampling.
    pub top_p: Option<Number>,
    /// Seed of the sampler's random numbers (this server's extension, as on chat).
    pub seed: Option<Integer>,
    /// Functions the model may call: `function` tools, `namespace` groups of them, and hosted
    /// tools (`web_search`, …) that are left out when the model may leave them unused.
    pub tools: Option<Vec<ToolIn>>,
    /// `none`, `auto`, `required`, or `{"type": "function", "name": ...}`.
    pub tool_choice: Option<ToolChoiceIn>,
    /// Several calls may come in one answer (default true).
    pub parallel_tool_calls: Option<bool>,
    /// The output's format: `{"format": {"type": "text" | "json_object" | "json_schema", ...}}`.
    pub text: Option<TextConfig>,
    /// Stream typed server-sent events.
    pub stream: Option<bool>,
    /// Keep the response for `GET /v1/responses/{id}` and `previous_response_id` (default true).
    pub store: Option<bool>,
    /// Continue the conversation of a stored response.
    pub previous_response_id: Option<String>,
    /// Up to 16 string pairs (keys up to 64, values up to 512 characters), echoed in the
    /// response.
    #[schemars(with = "Option<std::collections::BTreeMap<String, String>>", extend("maxProperties" = 16))]
    pub metadata: Option<Map<String, Value>>,
    /// Extra output to include: only `reasoning.encrypted_content` (there is none to include).
    #[schemars(with = "Option<Vec<Includable>>")]
    pub include: Option<Vec<String>>,
    /// `{"effort": "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max"}`: the
    /// thinking budget, as `reasoning_effort` on chat (docs/reasoning.md; `reasoning_budget`
    /// wins); `summary` and the rest are accepted and ignored (no summaries are written).
    pub reasoning: Option<Map<String, Value>>,
    /// `disabled` or `auto` (a prompt longer than the context is a 400 either way).
    #[schemars(extend("enum" = ["disabled", "auto", null]))]
    pub truncation: Option<String>,
    /// An end-user id (accepted and echoed).
    pub user: Option<String>,
    /// Accepted and ignored (one tier here).
    pub service_tier: Option<String>,
    /// Accepted and ignored: the prompt cache is automatic and keyed by the prompt's tokens.
    pub prompt_cache_key: Option<String>,
    /// Accepted and ignored.
    pub safety_identifier: Option<String>,
    /// Only false (no background mode).
    #[schemars(extend("enum" = [false, null]))]
    pub background: Option<bool>,
    /// Only 0 (no logprobs in the Responses API here).
    #[schemars(range(min = 0, max = 0))]
    pub top_logprobs: Option<Integer>,
    /// Stream options (accepted with `stream: true`).
    pub stream_options: Option<Map<String, Value>>,
}

/// `input`: a string, or a list of items.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ResponseInput")]
#[serde(untagged, expecting = "a string or an array of input items")]
pub enum Input {
    /// One user message.
    Text(String),
    /// Items in order.
    Items(Vec<Item>),
}

/// One input item: `message` (`type` may be left out), `function_call`,
/// `function_call_output`, `reasoning` (its `reasoning_text` parts become the next assistant
/// turn's thinking, for the chat template). Which fields an item needs depends
/// on its type; [`super::convert`] checks them.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[schemars(rename = "ResponseInputItem")]
#[serde(expecting = "an input item object")]
pub struct Item {
    /// `message` (default), `function_call`, `function_call_output` or `reasoning`.
    #[schemars(extend("enum" = ["message", "function_call", "function_call_output", "reasoning", null]))]
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// An id (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// message: `user`, `system`, `developer` or `assistant`.
    #[schemars(extend("enum" = ["user", "system", "developer", "assistant", null]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// message: a string or a list of `input_text` / `output_text` parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// function_call / function_call_output: the call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// function_call: the function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// function_call: the `namespace` tool holding the function, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// function_call: the arguments (JSON text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// function_call_output: the result, a string or a list of `input_text` parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Content>,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// reasoning: summary parts (accepted and ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Vec<Part>>,
    /// reasoning: accepted and ignored (this server encrypts nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
}

/// Message content: a string or parts.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[schemars(rename = "ResponseInputContent")]
#[serde(untagged, expecting = "a string or an array of content parts")]
pub enum Content {
    /// Text.
    Text(String),
    /// Parts.
    Parts(Vec<Part>),
}

/// A content part: `input_text` or `output_text` (`refusal` too) in messages, `reasoning_text`
/// in reasoning items (and `summary_text` in their summaries); other types are refused.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[schemars(rename = "ResponseInputPart")]
#[serde(expecting = "a content part object")]
pub struct Part {
    /// `input_text`, `output_text`, `refusal`, `reasoning_text`, `summary_text`.
    #[schemars(extend("enum" = ["input_text", "output_text", "text", "refusal", "reasoning_text", "summary_text", null]))]
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A refusal's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

/// A tool: `{"type": "function", "name", "description", "parameters", "strict"}`, a
/// `{"type": "namespace", "name", "description", "tools": [functions]}` group, or a hosted
/// tool (`{"type": "web_search", …}`: this server runs none, see [`super::convert`]).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[schemars(rename = "ResponseFunctionTool")]
#[serde(expecting = "a tool object")]
pub struct ToolIn {
    /// `function`, `namespace`, or a hosted tool's type.
    #[schemars(extend("enum" = ["function", "namespace", "web_search", "web_search_preview", "file_search", "code_interpreter", "image_generation", "computer_use_preview", "mcp", null]))]
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The function's (or namespace's) name.
    #[schemars(regex(pattern = r"^[a-zA-Z0-9_-]{1,64}$"))]
    pub name: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// Its arguments' JSON Schema (arguments are always generated under it).
    pub parameters: Option<Map<String, Value>>,
    /// Accepted: arguments always follow the schema.
    pub strict: Option<bool>,
    /// namespace: its function tools.
    #[schemars(with = "Option<Vec<NamespaceMember>>")]
    pub tools: Option<Vec<ToolIn>>,
}

/// A function inside a `namespace` tool (the schema's view; parsed as a [`ToolIn`]).
#[derive(JsonSchema)]
#[schemars(rename = "ResponseNamespaceMember")]
#[allow(dead_code)]
struct NamespaceMember {
    /// Only `function`.
    #[schemars(extend("enum" = ["function"]))]
    #[serde(rename = "type")]
    kind: String,
    /// The function's name (called as this name with the namespace's).
    #[schemars(regex(pattern = r"^[a-zA-Z0-9_-]{1,64}$"))]
    name: String,
    /// What it does.
    description: Option<String>,
    /// Its arguments' JSON Schema.
    parameters: Option<Map<String, Value>>,
    /// Accepted.
    strict: Option<bool>,
}

/// `tool_choice`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ResponseToolChoice")]
#[serde(untagged, expecting = "a string or an object")]
pub enum ToolChoiceIn {
    /// `none`, `auto`, `required`.
    Mode(#[schemars(extend("enum" = ["none", "auto", "required"]))] String),
    /// `{"type": "function", "name"}`.
    Named(NamedTool),
}

/// `{"type": "function", "name"}`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ResponseNamedFunction")]
#[serde(expecting = "an object")]
pub struct NamedTool {
    /// Only `function`.
    #[schemars(extend("enum" = ["function", null]))]
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The function.
    pub name: Option<String>,
}

/// `text`: the output format (and `verbosity`, accepted and ignored).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[schemars(rename = "ResponseTextConfig")]
#[serde(expecting = "an object")]
pub struct TextConfig {
    /// The format.
    pub format: Option<Format>,
    /// Accepted and ignored.
    pub verbosity: Option<String>,
}

/// `text.format`: `{"type": "text"}`, `{"type": "json_object"}` or
/// `{"type": "json_schema", "name", "schema", "strict", "description"}`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[schemars(rename = "ResponseTextFormat")]
#[serde(expecting = "an object")]
pub struct Format {
    /// `text`, `json_object`, `json_schema`.
    #[schemars(extend("enum" = ["text", "json_object", "json_schema", null]))]
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// json_schema: its name.
    pub name: Option<String>,
    /// json_schema: the schema.
    pub schema: Option<Value>,
    /// json_schema: accepted (the output always follows the schema).
    pub strict: Option<bool>,
    /// json_schema: what it is.
    pub description: Option<String>,
}

/// What `include` may name.
#[derive(JsonSchema)]
#[schemars(rename = "ResponseIncludable")]
#[allow(dead_code)]
enum Includable {
    /// Encrypted reasoning (none is produced).
    #[serde(rename = "reasoning.encrypted_content")]
    ReasoningEncryptedContent,
}
