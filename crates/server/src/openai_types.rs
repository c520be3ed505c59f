//! The response shapes of the OpenAI API, exactly as the official clients validate them:
//! chat completions and their stream chunks, legacy text completions, log-probabilities in
//! both formats, usage, the model list. Extra keys (`id` of a token, `prob`) are llama.cpp's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
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
#[derive(Clone, Copy, Debug, Default, Serialize, JsonSchema, PartialEq)]
pub struct Usage {
    /// Prompt tokens (each prompt once, whatever `n`).
    pub prompt_tokens: usize,
    /// Generated tokens, all choices together.
    pub completion_tokens: usize,
    /// The sum.
    pub total_tokens: usize,
    /// How many prompt tokens came from the prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// How many generated tokens were reasoning (when answers are read for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
    /// What speculative decoding did, all choices together (this server's extension; only
    /// when the request speculated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpeculativeUsage>,
}

/// `usage.speculative` (this server's extension): the drafts of a speculating request.
#[derive(Clone, Copy, Debug, Default, Serialize, JsonSchema, PartialEq)]
pub struct SpeculativeUsage {
    /// Draft tokens decoded for verification.
    pub drafted: usize,
    /// Draft tokens the request's sampler confirmed.
    pub accepted: usize,
    /// `accepted / drafted` (0 without drafts).
    pub acceptance_rate: f64,
    /// Forward passes plain decoding would have needed and speculation did not (one per
    /// accepted token).
    pub passes_saved: usize,
    /// Forward passes that carried a draft.
    pub verify_passes: usize,
}

impl From<&nucleus_runtime::SpecStats> for SpeculativeUsage {
    fn from(s: &nucleus_runtime::SpecStats) -> Self {
        SpeculativeUsage {
            drafted: s.drafted,
            accepted: s.accepted,
            acceptance_rate: s.acceptance_rate(),
            passes_saved: s.accepted,
            verify_passes: s.verify_passes,
        }
    }
}

/// `usage.completion_tokens_details`.
#[derive(Clone, Copy, Debug, Default, Serialize, JsonSchema, PartialEq, Eq)]
pub struct CompletionTokensDetails {
    /// Tokens generated inside reasoning blocks.
    pub reasoning_tokens: usize,
}

/// `usage.prompt_tokens_details`.
#[derive(Clone, Copy, Debug, Default, Serialize, JsonSchema, PartialEq, Eq)]
pub struct PromptTokensDetails {
    /// Prompt tokens taken from a slot's prompt cache.
    pub cached_tokens: usize,
}

impl Usage {
    /// Usage from the two counts.
    pub fn new(prompt_tokens: usize, completion_tokens: usize) -> Self {
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            prompt_tokens_details: None,
            completion_tokens_details: None,
            speculative: None,
        }
    }

    /// Usage with the count of cached prompt tokens.
    pub fn with_cached(prompt_tokens: usize, completion_tokens: usize, cached_tokens: usize) -> Self {
        Usage {
            prompt_tokens_details: Some(PromptTokensDetails { cached_tokens }),
            ..Usage::new(prompt_tokens, completion_tokens)
        }
    }
}

/// An alternative token in chat logprobs.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
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
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
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
#[derive(Clone, Debug, Default, Serialize, JsonSchema, PartialEq)]
pub struct ChatLogprobs {
    /// One entry per token.
    pub content: Vec<LogprobEntry>,
    /// Always null.
    pub refusal: Option<Vec<LogprobEntry>>,
}

/// A candidate in a [`StepEntry`]: a token and its probability in one distribution.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
pub struct StepCandidate {
    /// Token id.
    pub id: i32,
    /// Its text (lossy UTF-8).
    pub token: String,
    /// Probability in `[0, 1]`.
    pub p: f32,
}

/// A sampler of the chain and the candidates it left, in a [`StepEntry`].
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
pub struct ChainCount {
    /// The sampler's name as llama.cpp prints it (`top-k`, `min-p`, `dist`, ...).
    pub sampler: String,
    /// Candidates with a logit above `-inf` after it.
    pub candidates: usize,
}

/// One generated token's sampling step (Nucleus extension, asked for with `trace_steps`):
/// `choices[].steps` holds one per token, in order, in the same chunk as its text.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
pub struct StepEntry {
    /// Token id.
    pub id: i32,
    /// Its text (lossy UTF-8; a piece of a character shows as U+FFFD).
    pub token: String,
    /// Its exact bytes.
    pub bytes: Vec<u8>,
    /// An end-of-generation or stop token (no text of its own).
    pub end: bool,
    /// Its probability under the model's raw softmax.
    pub p: f32,
    /// Its probability in the distribution it was drawn from (after the chain).
    pub post_p: f32,
    /// Entropy of the raw softmax, nats.
    pub entropy: f64,
    /// Entropy of the post-chain distribution, nats.
    pub post_entropy: f64,
    /// Surprisal of the token under the raw softmax, bits (`-log2 p`).
    pub surprisal: f32,
    /// Top candidates of the raw softmax, best first.
    pub raw_top: Vec<StepCandidate>,
    /// Top candidates after the chain (what was sampled from), best first.
    pub post_top: Vec<StepCandidate>,
    /// Live candidates entering the chain (after bans and the constraint's mask).
    pub candidates_in: usize,
    /// Each sampler of the chain and the candidates it left, in order.
    pub chain: Vec<ChainCount>,
    /// With a grammar, JSON schema or token trie: tokens it allowed at this step.
    pub allowed: Option<usize>,
    /// False when the token was taken without a sampling step (a forced or greedy trie step).
    pub sampled: bool,
    /// The grammar refused the chain's first pick and the chain ran again on the masked
    /// candidates; `chain` and `post_top` are that run's.
    pub resampled: bool,
}

/// `choices[].message` of a chat completion.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: &'static str,
    /// The generated text (null when the answer is only tool calls).
    pub content: Option<String>,
    /// The reasoning block's text, when the answer is read for one (llama-server's and
    /// DeepSeek's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The same text under vLLM's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Always null.
    pub refusal: Option<String>,
    /// Always empty.
    pub annotations: Vec<Value>,
    /// The calls the answer made, when it made any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
}

/// A function call in `message.tool_calls`.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq, Eq)]
pub struct ToolCall {
    /// `call_...`.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Name and arguments.
    pub function: FunctionCall,
}

impl Default for ToolCall {
    /// A function call with nothing in it yet (a stream's first piece of it fills it in).
    fn default() -> Self {
        ToolCall { id: String::new(), kind: "function", function: FunctionCall::default() }
    }
}

/// The function part of a [`ToolCall`].
#[derive(Clone, Debug, Default, Serialize, JsonSchema, PartialEq, Eq)]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// The arguments, a string of JSON.
    pub arguments: String,
}

/// A piece of a call in a stream chunk's `delta.tool_calls`: the first carries id, type and
/// name (with empty arguments), later ones only argument text.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq, Eq)]
pub struct ToolCallDelta {
    /// Which call of the answer.
    pub index: usize,
    /// `call_...`, in the call's first piece.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `function`, in the call's first piece.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// Name (first piece) and arguments text.
    pub function: FunctionDelta,
}

/// The function part of a [`ToolCallDelta`].
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq, Eq)]
pub struct FunctionDelta {
    /// The name, in the call's first piece.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The next piece of the arguments.
    pub arguments: String,
}

/// One choice of a chat completion.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChatChoice {
    /// Its index.
    pub index: usize,
    /// The reply.
    pub message: AssistantMessage,
    /// Log-probabilities, when asked for.
    pub logprobs: Option<ChatLogprobs>,
    /// `stop`, `length` or `tool_calls`.
    pub finish_reason: &'static str,
    /// Each token's sampling step, with `trace_steps` (Nucleus extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepEntry>>,
}

/// `delta` of a chat chunk.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct Delta {
    /// `assistant` in a choice's first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// New text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// New reasoning text (llama-server's and DeepSeek's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The same under vLLM's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// New pieces of tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// One choice of a chat chunk.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChunkChoice {
    /// Its index.
    pub index: usize,
    /// What is new.
    pub delta: Delta,
    /// Log-probabilities of the tokens in this chunk, when asked for.
    pub logprobs: Option<ChatLogprobs>,
    /// Set in the choice's last chunk.
    pub finish_reason: Option<&'static str>,
    /// The sampling steps of the tokens in this chunk, with `trace_steps` (Nucleus extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepEntry>>,
}

/// Legacy (completions) log-probabilities: parallel arrays.
#[derive(Clone, Debug, Default, Serialize, JsonSchema, PartialEq)]
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
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TextChoice {
    /// Its index (prompt index × n + choice).
    pub index: usize,
    /// The text (with the prompt in front when echoing).
    pub text: String,
    /// Log-probabilities, when asked for.
    pub logprobs: Option<LegacyLogprobs>,
    /// `stop` or `length`; null in stream chunks before the last.
    pub finish_reason: Option<&'static str>,
    /// The sampling steps of its tokens, with `trace_steps` (Nucleus extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepEntry>>,
}

/// The body every completion response and stream chunk shares; only the choices and the
/// rule for `usage` differ (see [`ChatCompletion`], [`ChatChunk`], [`TextCompletion`]).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "CompletionOf{C}")]
pub struct Completion<C, U: UsageField> {
    /// `chatcmpl-...` or `cmpl-...`, the same in every chunk of a stream.
    pub id: String,
    /// `chat.completion`, `chat.completion.chunk` or `text_completion`.
    pub object: &'static str,
    /// Unix seconds, the same in every chunk of a stream.
    pub created: u64,
    /// The model id.
    pub model: String,
    /// Identifies the server build and model.
    pub system_fingerprint: String,
    /// The choices, by index (in a stream, the ones this chunk is about; none in the usage chunk).
    pub choices: Vec<C>,
    /// Token counts (see [`UsageField`]).
    #[serde(skip_serializing_if = "UsageField::is_absent")]
    pub usage: U,
}

/// What `usage` of a [`Completion`] holds: a [`Usage`], always written (`chat.completion`), or
/// `Option<Option<Usage>>`, left out when `None`, null for `Some(None)` (stream chunks with
/// `include_usage`, except the final usage chunk) and written for `Some(Some(_))`.
pub trait UsageField: Serialize {
    /// True when the key is left out.
    fn is_absent(&self) -> bool;
}

impl UsageField for Usage {
    fn is_absent(&self) -> bool {
        false
    }
}

impl UsageField for Option<Option<Usage>> {
    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

/// `chat.completion`.
pub type ChatCompletion = Completion<ChatChoice, Usage>;

/// `chat.completion.chunk`.
pub type ChatChunk = Completion<ChunkChoice, Option<Option<Usage>>>;

/// `text_completion` (responses and stream chunks alike; usage in stream chunks only with
/// `include_usage`).
pub type TextCompletion = Completion<TextChoice, Option<Option<Usage>>>;

/// An entry of `GET /v1/models`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
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
    pub meta: ModelMeta,
}

/// `meta` of a [`ModelCard`].
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ModelMeta {
    /// llama.cpp's architecture name (`llama`, `gemma3`, ...).
    pub architecture: String,
    /// Vocabulary size (token ids are below it).
    pub n_vocab: usize,
    /// The context the model was trained with.
    pub n_ctx_train: usize,
    /// Context tokens each request gets (`--ctx-size / --parallel`).
    pub n_ctx_per_request: usize,
    /// Slots (`--parallel`).
    pub parallel: usize,
}

/// `GET /v1/models`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: &'static str,
    /// The one model served.
    pub data: Vec<ModelCard>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logprobs() -> ChatLogprobs {
        let top = TopLogprob { token: "a".into(), logprob: -0.25, bytes: vec![97], id: 7, prob: None };
        let entry = LogprobEntry {
            token: "b".into(),
            logprob: -1.5,
            bytes: vec![98],
            id: 8,
            prob: Some(0.5),
            top_logprobs: vec![top.clone(), TopLogprob { prob: Some(0.75), ..top }],
        };
        ChatLogprobs { content: vec![entry], refusal: None }
    }

    fn legacy() -> LegacyLogprobs {
        let mut m = Map::new();
        m.insert("x".into(), Value::from(-0.5f32));
        LegacyLogprobs {
            tokens: vec!["x".into(), "y".into()],
            token_logprobs: vec![None, Some(-0.125)],
            top_logprobs: vec![None, Some(m)],
            text_offset: vec![0, 1],
        }
    }

    /// The JSON the clients see, byte for byte, for each response shape and `usage` state.
    #[test]
    fn response_json_is_stable() {
        let chat = ChatCompletion {
            id: "chatcmpl-1".into(),
            object: "chat.completion",
            created: 5,
            model: "m".into(),
            system_fingerprint: "fp".into(),
            choices: vec![ChatChoice {
                index: 0,
                message: AssistantMessage {
                    role: "assistant",
                    content: Some("hi".into()),
                    reasoning_content: None,
                    reasoning: None,
                    refusal: None,
                    annotations: Vec::new(),
                    tool_calls: None,
                },
                logprobs: Some(logprobs()),
                finish_reason: "stop",
                steps: None,
            }],
            usage: Usage::new(3, 4),
        };
        let chat_json = concat!(
            r#"{"id":"chatcmpl-1","object":"chat.completion","created":5,"model":"m","system_fingerprint":"fp","#,
            r#""choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null,"#,
            r#""annotations":[]},"logprobs":{"content":[{"token":"b","logprob":-1.5,"bytes":[98],"#,
            r#""id":8,"prob":0.5,"top_logprobs":[{"token":"a","logprob":-0.25,"bytes":[97],"id":7},"#,
            r#"{"token":"a","logprob":-0.25,"bytes":[97],"id":7,"prob":0.75}]}],"refusal":null},"#,
            r#""finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
        );
        assert_eq!(serde_json::to_string(&chat).unwrap(), chat_json);

        let chunk_json = concat!(
            r#"{"id":"chatcmpl-2","object":"chat.completion.chunk","created":6,"model":"m","system_fingerprint":"fp","#,
            r#""choices":[{"index":1,"delta":{"role":"assistant"},"logprobs":null,"finish_reason":null},"#,
            r#"{"index":2,"delta":{"content":"x"},"logprobs":{"content":[{"token":"b","logprob":-1.5,"#,
            r#""bytes":[98],"id":8,"prob":0.5,"top_logprobs":[{"token":"a","logprob":-0.25,"bytes":[97],"#,
            r#""id":7},{"token":"a","logprob":-0.25,"bytes":[97],"id":7,"prob":0.75}]}],"refusal":null},"#,
            r#""finish_reason":"length"}]"#,
        );
        let text_json = concat!(
            r#"{"id":"cmpl-3","object":"text_completion","created":7,"model":"m","system_fingerprint":"fp","#,
            r#""choices":[{"index":0,"text":"t","logprobs":{"tokens":["x","y"],"token_logprobs":[null,"#,
            r#"-0.125],"top_logprobs":[null,{"x":-0.5}],"text_offset":[0,1]},"finish_reason":"stop"},"#,
            r#"{"index":1,"text":"","logprobs":null,"finish_reason":null}]"#,
        );
        let usage_json = r#","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#;
        for (usage, tail) in
            [(None, "}"), (Some(None), r#","usage":null}"#), (Some(Some(Usage::new(1, 2))), usage_json)]
        {
            let chunk = ChatChunk {
                id: "chatcmpl-2".into(),
                object: "chat.completion.chunk",
                created: 6,
                model: "m".into(),
                system_fingerprint: "fp".into(),
                choices: vec![
                    ChunkChoice {
                        index: 1,
                        delta: Delta { role: Some("assistant"), ..Delta::default() },
                        logprobs: None,
                        finish_reason: None,
                        steps: None,
                    },
                    ChunkChoice {
                        index: 2,
                        delta: Delta { content: Some("x".into()), ..Delta::default() },
                        logprobs: Some(logprobs()),
                        finish_reason: Some("length"),
                        steps: None,
                    },
                ],
                usage,
            };
            assert_eq!(serde_json::to_string(&chunk).unwrap(), format!("{chunk_json}{tail}"));
            let text = TextCompletion {
                id: "cmpl-3".into(),
                object: "text_completion",
                created: 7,
                model: "m".into(),
                system_fingerprint: "fp".into(),
                choices: vec![
                    TextChoice {
                        index: 0,
                        text: "t".into(),
                        logprobs: Some(legacy()),
                        finish_reason: Some("stop"),
                        steps: None,
                    },
                    TextChoice { index: 1, text: String::new(), logprobs: None, finish_reason: None, steps: None },
                ],
                usage,
            };
            assert_eq!(serde_json::to_string(&text).unwrap(), format!("{text_json}{tail}"));
        }
    }
}
