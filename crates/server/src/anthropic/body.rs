//! The bodies of `POST /v1/messages` and `POST /v1/messages/count_tokens` as typed values
//! (serde for the parser, schemars for `/openapi.json`: one definition for both). Shapes only:
//! a field of the wrong JSON type is a 400 naming its path (`messages[0].content[1]`); values
//! (roles, names, ranges, which block goes where) are checked by [`super::convert`]. Nucleus's
//! sampling extensions (`min_p`, `samplers`, ...) are not declared here: they are read by the
//! chat endpoint's parser, under the same names ([`super::convert`]).

use std::fmt;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::value::SeqAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use crate::body::scalars::{Integer, JsonObject, Number};

/// `POST /v1/messages`: Anthropic's Messages fields; any sampling field of
/// `CreateChatCompletionRequest` (`min_p`, `samplers`, `repeat_penalty`, ...) is taken too.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a JSON object")]
#[schemars(rename = "CreateMessageRequest")]
#[schemars(transform = crate::sampling_fields::schema_ranges)]
pub struct MessagesBody {
    /// The model id (see `GET /v1/models`). Default: the one served.
    pub model: Option<String>,
    /// Most tokens to generate (required).
    #[schemars(range(min = 1, max = 2147483647))]
    pub max_tokens: Option<Integer>,
    /// Instructions: a string or text blocks (joined with blank lines).
    pub system: Option<TextOr<TextBlock>>,
    /// The conversation, oldest first, alternating `user` and `assistant` (at least one).
    #[schemars(with = "Vec<MessageIn>", length(min = 1))]
    pub messages: Option<Vec<MessageIn>>,
    /// Strings that end the generation (not included; the one met is `stop_sequence`).
    pub stop_sequences: Option<Vec<String>>,
    /// Sampling temperature (0: greedy).
    pub temperature: Option<Number>,
    /// Nucleus sampling.
    pub top_p: Option<Number>,
    /// Keep the k most likely tokens (0: all).
    pub top_k: Option<Integer>,
    /// Seed of the sampler's random numbers (an extension, as llama-server takes it).
    pub seed: Option<Integer>,
    /// Request metadata (`user_id`): accepted and ignored.
    pub metadata: Option<JsonObject>,
    /// Tools the model may call.
    pub tools: Option<Vec<ToolIn>>,
    /// Whether and which tool the model calls.
    pub tool_choice: Option<ToolChoiceIn>,
    /// Extended thinking: the reasoning budget (a reasoning model's thinking comes as
    /// `thinking` blocks).
    pub thinking: Option<ThinkingIn>,
    /// `effort` (the reasoning budget when `thinking` sets none) and `format` (a JSON Schema
    /// the text follows).
    pub output_config: Option<OutputConfig>,
    /// Context editing (`clear_thinking_*`, `clear_tool_uses_*`): accepted; the prompt is
    /// never edited (earlier thinking is never in it anyway).
    pub context_management: Option<ContextManagement>,
    /// Stream the answer as Anthropic's server-sent events.
    pub stream: Option<bool>,
}

/// `POST /v1/messages/count_tokens`: the prompt-making fields of [`MessagesBody`].
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a JSON object")]
#[schemars(rename = "CountMessageTokensRequest")]
pub struct CountBody {
    /// The model id.
    pub model: Option<String>,
    /// Instructions.
    pub system: Option<TextOr<TextBlock>>,
    /// The conversation.
    #[schemars(with = "Vec<MessageIn>", length(min = 1))]
    pub messages: Option<Vec<MessageIn>>,
    /// Tools (their descriptions are part of the prompt).
    pub tools: Option<Vec<ToolIn>>,
    /// Whether and which tool the model calls (`none` leaves the tools out of the prompt).
    pub tool_choice: Option<ToolChoiceIn>,
    /// Accepted and ignored.
    pub thinking: Option<ThinkingIn>,
    /// Accepted and ignored.
    pub output_config: Option<OutputConfig>,
    /// Accepted and ignored.
    pub context_management: Option<ContextManagement>,
}

/// A string, or an array of blocks.
#[derive(Clone, Debug, JsonSchema)]
#[schemars(untagged)]
#[schemars(rename = "AnthropicTextOr_{T}")]
pub enum TextOr<T> {
    /// Plain text.
    Text(String),
    /// Blocks, in order.
    Blocks(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for TextOr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = TextOr<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TextOr::Text(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(SeqAccessDeserializer::new(s)).map(TextOr::Blocks)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A `system` block: only `text`.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", expecting = "a text block object")]
#[schemars(rename = "AnthropicTextBlock")]
pub enum TextBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Prompt-caching hint: accepted and ignored (the prompt cache is automatic).
        cache_control: Option<Value>,
    },
}

impl TextBlock {
    /// The block's text.
    pub fn text(&self) -> &str {
        match self {
            TextBlock::Text { text, .. } => text,
        }
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "AnthropicRole")]
pub enum Role {
    /// The user (and tool results).
    User,
    /// The model (text and tool calls).
    Assistant,
    /// A mid-conversation system instruction (text only): never first, right after a user
    /// message, last or followed by an assistant message, never two in a row.
    System,
}

/// One message of `messages`.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a message object")]
#[schemars(rename = "AnthropicMessageIn")]
pub struct MessageIn {
    /// `user` or `assistant`.
    pub role: Role,
    /// A string, or content blocks.
    pub content: TextOr<Block>,
}

/// A content block of a message.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", expecting = "a content block object")]
#[schemars(rename = "AnthropicBlockIn")]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Accepted and ignored.
        cache_control: Option<Value>,
    },
    /// An assistant's tool call.
    ToolUse {
        /// `toolu_...`: the `tool_result` answering it names it.
        id: String,
        /// The tool.
        name: String,
        /// Its input.
        input: JsonObject,
        /// Accepted and ignored.
        cache_control: Option<Value>,
    },
    /// In a `tool_result`'s content: the tool search found this (deferred) tool, which is
    /// offered to the model from then on.
    ToolReference {
        /// The tool's name.
        tool_name: String,
        /// Accepted and ignored.
        cache_control: Option<Value>,
    },
    /// A user's answer to a tool call.
    ToolResult {
        /// The `tool_use` block's id.
        tool_use_id: String,
        /// The result: a string or text blocks.
        content: Option<TextOr<Block>>,
        /// The tool failed.
        is_error: Option<bool>,
        /// Accepted and ignored.
        cache_control: Option<Value>,
    },
    /// An assistant's earlier reasoning: given to the chat template as the message's
    /// `reasoning_content` (templates that drop earlier thinking leave it out).
    Thinking {
        /// The reasoning.
        thinking: Option<String>,
        /// Its signature.
        signature: Option<String>,
    },
    /// Reasoning redacted: accepted and left out of the prompt.
    RedactedThinking {
        /// Opaque.
        data: Option<String>,
    },
    /// Refused: the models read text only.
    Image {
        /// The image.
        source: Option<Value>,
    },
    /// Refused: the models read text only.
    Document {
        /// The document.
        source: Option<Value>,
    },
}

/// One tool of `tools`: a custom tool (`type` absent or `custom`).
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a tool object")]
#[schemars(rename = "AnthropicToolIn")]
pub struct ToolIn {
    /// `custom` or absent (server tools such as `web_search_20250305` are refused).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The tool's name (`^[a-zA-Z0-9_-]{1,64}$`).
    #[schemars(with = "String")]
    pub name: Option<String>,
    /// What it does (shown to the model).
    pub description: Option<String>,
    /// JSON Schema of its input (an object schema); calls are generated under it, strictly.
    #[schemars(with = "JsonObject")]
    pub input_schema: Option<JsonObject>,
    /// Left out of the prompt until a `tool_reference` block names it (tool search).
    pub defer_loading: Option<bool>,
    /// Accepted and ignored.
    pub cache_control: Option<Value>,
}

/// `tool_choice`.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", expecting = "a tool_choice object")]
#[schemars(rename = "AnthropicToolChoice")]
pub enum ToolChoiceIn {
    /// The model decides.
    Auto {
        /// At most one call.
        disable_parallel_tool_use: Option<bool>,
    },
    /// The model calls at least one tool.
    Any {
        /// Exactly one call.
        disable_parallel_tool_use: Option<bool>,
    },
    /// The model calls this tool (once).
    Tool {
        /// The tool.
        name: String,
        /// Accepted (a named choice is one call).
        disable_parallel_tool_use: Option<bool>,
    },
    /// The model calls no tool.
    None,
}

/// `thinking`: `{"type": "enabled", "budget_tokens": N}`, `disabled` or `adaptive`.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", expecting = "a thinking object")]
#[schemars(rename = "AnthropicThinking")]
pub enum ThinkingIn {
    /// Thinking on, with a budget.
    Enabled {
        /// Tokens the reasoning may take.
        #[schemars(range(min = 1, max = 2147483647))]
        budget_tokens: Option<Integer>,
        /// `summarized` or `omitted` (thinking blocks come with empty text).
        display: Option<ThinkingDisplay>,
    },
    /// Thinking off.
    Disabled,
    /// The model decides (the budget is `output_config.effort`'s, if given).
    Adaptive {
        /// `summarized` or `omitted` (thinking blocks come with empty text).
        display: Option<ThinkingDisplay>,
    },
}

impl ThinkingIn {
    /// Thinking blocks come without their text (`display: "omitted"`).
    pub fn omitted(&self) -> bool {
        matches!(
            self,
            ThinkingIn::Enabled { display: Some(ThinkingDisplay::Omitted), .. }
                | ThinkingIn::Adaptive { display: Some(ThinkingDisplay::Omitted) }
        )
    }
}

/// How thinking blocks are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "AnthropicThinkingDisplay")]
pub enum ThinkingDisplay {
    /// With their text (here the whole reasoning: nothing is summarized).
    Summarized,
    /// Empty text.
    Omitted,
}

/// `output_config`. Read from an object only (a derived struct would also take an array of its
/// fields in order, which Anthropic's API refuses).
#[derive(Clone, Debug, Default, JsonSchema)]
#[schemars(rename = "AnthropicOutputConfig")]
pub struct OutputConfig {
    /// `low`, `medium`, `high`, `xhigh` or `max`: the reasoning budget (512, 2048, 8192 tokens,
    /// no limit for the last two) unless `thinking` sets one.
    pub effort: Option<Effort>,
    /// `{"type": "json_schema", "schema": {...}}`: the text follows the schema.
    pub format: Option<OutputFormat>,
}

impl<'de> serde::Deserialize<'de> for OutputConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// The fields, as read from the object's members.
        #[derive(serde::Deserialize)]
        struct Members {
            effort: Option<Effort>,
            format: Option<OutputFormat>,
        }
        struct ObjectOnly;
        impl<'de> serde::de::Visitor<'de> for ObjectOnly {
            type Value = OutputConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an output_config object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<OutputConfig, A::Error> {
                let m = Members::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(OutputConfig { effort: m.effort, format: m.format })
            }
        }
        d.deserialize_map(ObjectOnly)
    }
}

/// `output_config.effort`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "AnthropicEffort")]
pub enum Effort {
    /// 512 tokens of thinking.
    Low,
    /// 2048.
    Medium,
    /// 8192.
    High,
    /// No limit.
    Xhigh,
    /// No limit.
    Max,
}

/// `output_config.format`.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", expecting = "a format object")]
#[schemars(rename = "AnthropicOutputFormat")]
pub enum OutputFormat {
    /// The text is JSON valid under `schema` (generated under it, strictly).
    JsonSchema {
        /// The JSON Schema.
        #[schemars(with = "JsonObject")]
        schema: JsonObject,
    },
}

/// `context_management`: the edits Anthropic would make to a long prompt.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a context_management object")]
#[schemars(rename = "AnthropicContextManagement")]
pub struct ContextManagement {
    /// The edits (each with a `type` such as `clear_thinking_20251015`): accepted, not applied.
    pub edits: Option<Vec<JsonObject>>,
}
