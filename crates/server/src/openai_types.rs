//! The response shapes of the OpenAI API, exactly as the official clients validate them:
//! chat completions and their stream chunks, legacy text completions, log-probabilities in
//! both formats, usage, the model list. Extra keys (`id` of a token, `prob`) are llama.cpp's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

/// A JSON response with `status`.
pub fn json_response(status: StatusCode, body: &impl Serialize) -> Response {
    let text = serde_json::to_string(body).unwrap_or_else(|_| "{}".into());
    let mut r = (status, text).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// A fresh id with `prefix` (`chatcmpl-`, `cmpl-`): random-looking, unique within the process.
pub fn new_id(prefix: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    format!("{prefix}{:016x}{:08x}", h.finish(), COUNTER.load(Ordering::Relaxed) as u32)
}

/// Token counts.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens (each prompt once, whatever `n`).
    pub prompt_tokens: usize,
    /// Generated tokens, all choices together.
    pub completion_tokens: usize,
    /// The sum.
    pub total_tokens: usize,
}

impl Usage {
    /// Usage from the two counts.
    pub fn new(prompt_tokens: usize, completion_tokens: usize) -> Self {
        Usage { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
    }
}

/// An alternative token in chat logprobs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TopLogprob {
    /// Its text (lossy UTF-8).
    pub token: String,
    /// Natural-log probability.
    pub logprob: f32,
    /// Its exact bytes.
    pub bytes: Vec<u8>,
    /// Token id (llama.cpp's extra).
    pub id: i32,
    /// Probability, with `post_sampling_probs` (llama.cpp's extra).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prob: Option<f32>,
}

/// One generated token in chat logprobs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LogprobEntry {
    /// Its text (lossy UTF-8).
    pub token: String,
    /// Natural-log probability.
    pub logprob: f32,
    /// Its exact bytes.
    pub bytes: Vec<u8>,
    /// Token id (llama.cpp's extra).
    pub id: i32,
    /// Probability, with `post_sampling_probs` (llama.cpp's extra).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prob: Option<f32>,
    /// The most likely alternatives, best first.
    pub top_logprobs: Vec<TopLogprob>,
}

/// `choices[].logprobs` of a chat completion or chunk.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ChatLogprobs {
    /// One entry per token.
    pub content: Vec<LogprobEntry>,
    /// Always null.
    pub refusal: Option<Vec<LogprobEntry>>,
}

/// `choices[].message` of a chat completion.
#[derive(Clone, Debug, Serialize)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: &'static str,
    /// The generated text.
    pub content: String,
    /// Always null.
    pub refusal: Option<String>,
    /// Always empty.
    pub annotations: Vec<Value>,
}

/// One choice of a chat completion.
#[derive(Clone, Debug, Serialize)]
pub struct ChatChoice {
    /// Its index.
    pub index: usize,
    /// The reply.
    pub message: AssistantMessage,
    /// Log-probabilities, when asked for.
    pub logprobs: Option<ChatLogprobs>,
    /// `stop` or `length`.
    pub finish_reason: &'static str,
}

/// `chat.completion`.
#[derive(Clone, Debug, Serialize)]
pub struct ChatCompletion {
    /// `chatcmpl-...`
    pub id: String,
    /// Always `chat.completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// The model id.
    pub model: String,
    /// Identifies the server build and model.
    pub system_fingerprint: String,
    /// The choices, by index.
    pub choices: Vec<ChatChoice>,
    /// Token counts.
    pub usage: Usage,
}

/// `delta` of a chat chunk.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Delta {
    /// `assistant` in a choice's first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// New text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// One choice of a chat chunk.
#[derive(Clone, Debug, Serialize)]
pub struct ChunkChoice {
    /// Its index.
    pub index: usize,
    /// What is new.
    pub delta: Delta,
    /// Log-probabilities of the tokens in this chunk, when asked for.
    pub logprobs: Option<ChatLogprobs>,
    /// Set in the choice's last chunk.
    pub finish_reason: Option<&'static str>,
}

/// `chat.completion.chunk`.
#[derive(Clone, Debug, Serialize)]
pub struct ChatChunk {
    /// Same for every chunk of a stream.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: &'static str,
    /// Same for every chunk of a stream.
    pub created: u64,
    /// The model id.
    pub model: String,
    /// Identifies the server build and model.
    pub system_fingerprint: String,
    /// The choices this chunk is about (empty in the usage chunk).
    pub choices: Vec<ChunkChoice>,
    /// With `include_usage`: null, except in the final usage chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<Usage>>,
}

/// Legacy (completions) log-probabilities: parallel arrays.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LegacyLogprobs {
    /// Token texts.
    pub tokens: Vec<String>,
    /// Their log-probabilities (null for the first echoed prompt token).
    pub token_logprobs: Vec<Option<f32>>,
    /// Alternatives per position, token text -> logprob (null for the first prompt token).
    pub top_logprobs: Vec<Option<Map<String, Value>>>,
    /// Character offset of each token in the choice's text.
    pub text_offset: Vec<usize>,
}

impl LegacyLogprobs {
    /// Appends another block (a later chunk) to this one.
    pub fn extend(&mut self, other: LegacyLogprobs) {
        self.tokens.extend(other.tokens);
        self.token_logprobs.extend(other.token_logprobs);
        self.top_logprobs.extend(other.top_logprobs);
        self.text_offset.extend(other.text_offset);
    }

    /// True when no token is in it.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// One choice of a text completion (or of a chunk).
#[derive(Clone, Debug, Serialize)]
pub struct TextChoice {
    /// Its index (prompt index × n + choice).
    pub index: usize,
    /// The text (with the prompt in front when echoing).
    pub text: String,
    /// Log-probabilities, when asked for.
    pub logprobs: Option<LegacyLogprobs>,
    /// `stop` or `length`; null in stream chunks before the last.
    pub finish_reason: Option<&'static str>,
}

/// `text_completion` (responses and stream chunks alike).
#[derive(Clone, Debug, Serialize)]
pub struct TextCompletion {
    /// `cmpl-...`
    pub id: String,
    /// Always `text_completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// The model id.
    pub model: String,
    /// Identifies the server build and model.
    pub system_fingerprint: String,
    /// The choices.
    pub choices: Vec<TextChoice>,
    /// Token counts (in stream chunks only with `include_usage`: null, then the usage chunk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<Usage>>,
}

/// An entry of `GET /v1/models`.
#[derive(Clone, Debug, Serialize)]
pub struct ModelCard {
    /// The id to send as `model`.
    pub id: String,
    /// Always `model`.
    pub object: &'static str,
    /// Unix seconds (when the server loaded it).
    pub created: u64,
    /// Always `nucleus`.
    pub owned_by: &'static str,
    /// Context tokens per request (llama.cpp's and vLLM's extra).
    pub max_model_len: usize,
    /// Model facts (llama.cpp's extra).
    pub meta: Value,
}

/// `GET /v1/models`.
#[derive(Clone, Debug, Serialize)]
pub struct ModelList {
    /// Always `list`.
    pub object: &'static str,
    /// The one model served.
    pub data: Vec<ModelCard>,
}
