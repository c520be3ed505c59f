//! A chat or completions request body, read into a [`GenerationRequest`]: OpenAI's fields plus
//! llama.cpp's and vLLM's sampling extras, each checked (out-of-range values are 400s naming
//! the field, never clamped). Unknown fields are ignored, as vLLM and llama.cpp do; fields that
//! ask for something this server cannot do are refused rather than ignored.

use nucleus_runtime::{ChatMessage, ChatToolCall, Model, Prompt};
use nucleus_sampler::{SamplingParams, Token};
use serde_json::{Map, Value};

use crate::constraint::{self, Constraint};
use crate::errors::ApiError;
use crate::fields::{check_int, Fields};
use crate::sampling_fields;
use crate::tools::{self, ToolRequest};

/// Which route a request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/chat/completions`
    Chat,
    /// `POST /v1/completions`
    Completions,
}

/// Most alternatives per token (`top_logprobs`, legacy `logprobs`, `n_probs`).
pub const MAX_LOGPROBS: i64 = 20;
/// Most choices per request (OpenAI's limit; `--parallel` usually limits first).
pub const MAX_N: i64 = 128;
/// Most stop strings.
pub const MAX_STOP: usize = 4;

/// Everything a generation request asks for, checked.
#[derive(Clone, Debug)]
pub struct GenerationRequest {
    /// The route.
    pub endpoint: Endpoint,
    /// One prompt for chat; one or more for completions.
    pub prompts: Vec<Prompt>,
    /// Choices per prompt.
    pub n: usize,
    /// Stream server-sent events.
    pub stream: bool,
    /// Send a usage chunk at the end of the stream.
    pub include_usage: bool,
    /// Most tokens per choice (`None`: until the end of generation or of the context).
    pub max_tokens: Option<usize>,
    /// The field `max_tokens` came from, for errors.
    pub max_tokens_param: &'static str,
    /// Sampling parameters of choice 0 (later choices get the next seeds).
    pub params: SamplingParams,
    /// Stop strings.
    pub stop: Vec<String>,
    /// With logprobs: how many alternatives per token (0 = just the token's own).
    pub logprobs: Option<usize>,
    /// Report the distribution sampled from instead of the raw model softmax.
    pub post_sampling_probs: bool,
    /// Completions: put the prompt in front of the text (with its logprobs if asked).
    pub echo: bool,
    /// End-of-generation and stop tokens are banned until this many tokens exist.
    pub min_tokens: usize,
    /// Tokens that end the generation.
    pub stop_tokens: Vec<Token>,
    /// An output constraint, enforced per sequence by [`constraint::enforce`].
    pub constraint: Option<Constraint>,
    /// Chat: the tools the model may call ([`crate::tools`]).
    pub tools: Option<ToolRequest>,
    /// Start from a slot's cached prefix of the prompt (llama.cpp's `cache_prompt`, default on).
    pub cache_prompt: bool,
    /// The token-trie constraint extension (`token_trie: {descriptor, path, mode}`).
    pub token_trie: Option<TokenTrieRequest>,
}

/// `token_trie`: the output is one of a descriptor path's leaves (token sequences).
#[derive(Clone, Debug)]
pub struct TokenTrieRequest {
    /// `{"modelId", "descriptors": [{"path", "leaves": [{"name", "tokens"}]}]}`.
    pub descriptor: Value,
    /// Which path's leaves.
    pub path: String,
    /// `greedy` (the most likely allowed token) or `sampled` (the chain over allowed tokens).
    pub greedy: bool,
}

/// Fields that ask for features this server does not have: refused, never silently ignored.
const REFUSED: &[(&str, &str)] = &[
    ("functions", "function calling is not supported"),
    ("audio", "audio output is not supported"),
    ("prediction", "predicted outputs are not supported"),
    ("suffix", "suffix (insertion) is not supported"),
    ("prompt_logprobs", "prompt_logprobs is not supported; use echo with logprobs on /v1/completions"),
    ("structured_outputs", "structured outputs are not supported yet"),
    ("guided_json", "guided decoding is not supported yet"),
    ("guided_regex", "guided decoding is not supported yet"),
    ("guided_choice", "guided decoding is not supported yet"),
    ("guided_grammar", "guided decoding is not supported yet"),
    ("lora", "LoRA adapters are not supported"),
];

/// Reads a request body (already parsed as JSON) for `endpoint`. `defaults` are the server's
/// sampling defaults; `model` resolves token ids and text in `logit_bias`.
pub fn parse(
    endpoint: Endpoint,
    body: &Map<String, Value>,
    defaults: &SamplingParams,
    model: &dyn Model,
) -> Result<GenerationRequest, ApiError> {
    let f = Fields::new(body);
    refuse_unsupported(&f, endpoint)?;
    let constraint = constraint::parse(&f)?;
    let tools = match endpoint {
        Endpoint::Chat => tools::parse(&f)?,
        Endpoint::Completions => None,
    };
    if constraint.is_some() && tools.as_ref().is_some_and(ToolRequest::active) {
        let param = if f.has("response_format") { "response_format" } else { "grammar" };
        return Err(ApiError::unsupported(
            param,
            format!("'{param}' cannot be combined with tools; the tool-call grammar already constrains the answer"),
        ));
    }

    let prompts = match endpoint {
        Endpoint::Chat => vec![Prompt::Chat(parse_messages(&f)?)],
        Endpoint::Completions => parse_prompts(&f, model.n_vocab())?,
    };

    let n = match f.first_of(&["n", "n_cmpl"]) {
        Some(name) => f.int_in(name, 1, MAX_N)?.unwrap_or(1) as usize,
        None => 1,
    };
    if let Some(best_of) = f.int_in("best_of", 1, MAX_N)? {
        if best_of as usize != n && best_of != 1 {
            return Err(ApiError::unsupported(
                "best_of",
                "best_of other than n is not supported (no server-side ranking)",
            ));
        }
    }

    let stream = f.bool("stream")?.unwrap_or(false);
    let mut include_usage = false;
    if let Some(so) = f.get("stream_options") {
        let Value::Object(so) = so else { return Err(ApiError::wrong_type("stream_options", "an object")) };
        if !stream {
            return Err(ApiError::invalid_value(
                "stream_options",
                "stream_options is only allowed when stream is true",
            ));
        }
        include_usage = Fields::nested(so, "stream_options.").bool("include_usage")?.unwrap_or(false);
    }
    f.str("user")?;

    let (max_tokens, max_tokens_param) = match f.first_of(&["max_completion_tokens", "max_tokens", "n_predict"]) {
        Some(name) => {
            let min = if endpoint == Endpoint::Chat { 1 } else { 0 };
            let lo = if name == "n_predict" { -1 } else { min };
            let v = f.int_in(name, lo, i32::MAX as i64)?;
            (v.filter(|&v| v >= 0).map(|v| v as usize), name)
        }
        None if endpoint == Endpoint::Completions => (Some(16), "max_tokens"),
        None => (None, "max_tokens"),
    };

    let (logprobs, echo) = match endpoint {
        Endpoint::Chat => {
            let on = match f.get("logprobs") {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(ApiError::wrong_type("logprobs", "a boolean")),
            };
            let top = f.int_in("top_logprobs", 0, MAX_LOGPROBS)?;
            if top.is_some() && !on {
                return Err(ApiError::invalid_value(
                    "top_logprobs",
                    "top_logprobs is only allowed when logprobs is true",
                ));
            }
            let n_probs = f.int_in("n_probs", 0, MAX_LOGPROBS)?.filter(|&k| k > 0);
            let lp = match (on, n_probs) {
                (true, _) => Some(top.or(n_probs).unwrap_or(0) as usize),
                (false, Some(k)) => Some(k as usize),
                (false, None) => None,
            };
            if f.has("echo") {
                f.bool("echo")?;
            }
            (lp, false)
        }
        Endpoint::Completions => {
            let lp = match f.int_in("logprobs", 0, MAX_LOGPROBS)? {
                Some(k) => Some(k as usize),
                None => f.int_in("n_probs", 0, MAX_LOGPROBS)?.filter(|&k| k > 0).map(|k| k as usize),
            };
            (lp, f.bool("echo")?.unwrap_or(false))
        }
    };
    let post_sampling_probs = f.bool("post_sampling_probs")?.unwrap_or(false);
    let cache_prompt = f.bool("cache_prompt")?.unwrap_or(true);
    let token_trie = parse_token_trie(&f)?;
    if token_trie.is_some() && (constraint.is_some() || tools.as_ref().is_some_and(ToolRequest::active)) {
        return Err(ApiError::unsupported(
            "token_trie",
            "'token_trie' cannot be combined with a grammar, a response_format or tools",
        ));
    }

    let stop = parse_stop(&f)?;
    let params = sampling_fields::parse(&f, defaults, model)?;
    let stop_tokens = parse_stop_token_ids(&f, model.n_vocab())?;
    let min_tokens = f.int_in("min_tokens", 0, i32::MAX as i64)?.unwrap_or(0) as usize;
    if let Some(m) = max_tokens {
        if min_tokens > m {
            return Err(ApiError::invalid_value(
                "min_tokens",
                format!("min_tokens ({min_tokens}) must not exceed {max_tokens_param} ({m})"),
            ));
        }
    }
    params.validate(Some(model.n_vocab())).map_err(sampling_fields::param_error)?;

    Ok(GenerationRequest {
        endpoint,
        prompts,
        n,
        stream,
        include_usage,
        max_tokens,
        max_tokens_param,
        params,
        stop,
        logprobs,
        post_sampling_probs,
        echo,
        min_tokens,
        stop_tokens,
        constraint,
        tools,
        cache_prompt,
        token_trie,
    })
}

fn refuse_unsupported(f: &Fields<'_>, endpoint: Endpoint) -> Result<(), ApiError> {
    for (name, why) in REFUSED {
        if f.has(name) {
            return Err(ApiError::unsupported(name, format!("'{name}': {why} by this server.")));
        }
    }
    if endpoint == Endpoint::Completions {
        for name in ["tools", "tool_choice"] {
            if f.has(name) {
                return Err(ApiError::invalid_value(name, format!("'{name}' is only for POST /v1/chat/completions")));
            }
        }
    }
    if let Some(m) = f.get("modalities") {
        let ok = matches!(m, Value::Array(a) if a.iter().all(|x| x == "text"));
        if !ok {
            return Err(ApiError::unsupported("modalities", "'modalities': only [\"text\"] is supported."));
        }
    }
    for name in ["include_stop_str_in_output", "use_beam_search"] {
        if f.bool(name)? == Some(true) {
            return Err(ApiError::unsupported(name, format!("'{name}' is not supported by this server.")));
        }
    }
    if endpoint == Endpoint::Completions && f.has("messages") {
        return Err(ApiError::invalid_value(
            "messages",
            "use POST /v1/chat/completions for messages; /v1/completions takes a prompt",
        ));
    }
    Ok(())
}

/// `messages` into chat messages: text content only (a string, or text parts concatenated).
fn parse_messages(f: &Fields<'_>) -> Result<Vec<ChatMessage>, ApiError> {
    let Some(v) = f.get("messages") else { return Err(ApiError::missing("messages")) };
    let Value::Array(items) = v else { return Err(ApiError::wrong_type("messages", "an array of message objects")) };
    if items.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "empty_array",
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let name = format!("messages[{i}]");
        let Value::Object(m) = item else { return Err(ApiError::wrong_type(&name, "an object")) };
        let prefix = format!("{name}.");
        let mf = Fields::nested(m, &prefix);
        let role = match mf.str("role")? {
            None => return Err(ApiError::missing(&format!("{name}.role"))),
            Some(r @ ("system" | "user" | "assistant" | "tool" | "function")) => r,
            Some("developer") => "system",
            Some(other) => {
                return Err(ApiError::invalid_value(
                    &format!("{name}.role"),
                    format!("'{other}' is not one of 'system', 'developer', 'user', 'assistant', 'tool'"),
                ))
            }
        };
        let content = match mf.get("content") {
            None | Some(Value::Null) if role == "assistant" => String::new(),
            None => return Err(ApiError::missing(&format!("{name}.content"))),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                let mut text = String::new();
                for (j, part) in parts.iter().enumerate() {
                    let pname = format!("{name}.content[{j}]");
                    let Value::Object(p) = part else {
                        return Err(ApiError::wrong_type(&pname, "a content part object"));
                    };
                    let pprefix = format!("{pname}.");
                    let pf = Fields::nested(p, &pprefix);
                    match pf.str("type")? {
                        Some("text") => match pf.str("text")? {
                            Some(t) => text.push_str(t),
                            None => return Err(ApiError::missing(&format!("{pname}.text"))),
                        },
                        Some(other) => {
                            return Err(ApiError::unsupported(
                                &format!("{pname}.type"),
                                format!(
                                    "content parts of type '{other}' are not supported: this model reads text only"
                                ),
                            ))
                        }
                        None => return Err(ApiError::missing(&format!("{pname}.type"))),
                    }
                }
                text
            }
            Some(_) => {
                return Err(ApiError::wrong_type(&format!("{name}.content"), "a string or an array of text parts"))
            }
        };
        let mut msg = ChatMessage::new(role, content);
        msg.name = mf.str("name")?.map(str::to_string);
        if role == "assistant" {
            msg.tool_calls = parse_tool_calls(&mf, &name)?;
        }
        if role == "tool" {
            match mf.str("tool_call_id")? {
                Some(id) => msg.tool_call_id = Some(id.to_string()),
                None => return Err(ApiError::missing(&format!("{name}.tool_call_id"))),
            }
        }
        out.push(msg);
    }
    Ok(out)
}

/// `token_trie: {descriptor, path, mode}` (mode `greedy` by default).
fn parse_token_trie(f: &Fields<'_>) -> Result<Option<TokenTrieRequest>, ApiError> {
    let Some(v) = f.get("token_trie") else { return Ok(None) };
    let Value::Object(o) = v else { return Err(ApiError::wrong_type("token_trie", "an object")) };
    let tf = Fields::nested(o, "token_trie.");
    let descriptor = match o.get("descriptor") {
        Some(d @ Value::Object(_)) => d.clone(),
        Some(_) => return Err(ApiError::wrong_type("token_trie.descriptor", "an object")),
        None => return Err(ApiError::missing("token_trie.descriptor")),
    };
    let path = tf.str("path")?.ok_or_else(|| ApiError::missing("token_trie.path"))?.to_string();
    let greedy = match tf.str("mode")? {
        None | Some("greedy") => true,
        Some("sampled") => false,
        Some(other) => {
            return Err(ApiError::invalid_value(
                "token_trie.mode",
                format!("'{other}' is not one of 'greedy', 'sampled'"),
            ))
        }
    };
    Ok(Some(TokenTrieRequest { descriptor, path, greedy }))
}

/// An assistant message's `tool_calls`: `[{id, type: "function", function: {name, arguments}}]`.
fn parse_tool_calls(mf: &Fields<'_>, name: &str) -> Result<Vec<ChatToolCall>, ApiError> {
    let calls = match mf.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(ApiError::wrong_type(&format!("{name}.tool_calls"), "an array of tool calls")),
    };
    let mut out = Vec::with_capacity(calls.len());
    for (k, c) in calls.iter().enumerate() {
        let cname = format!("{name}.tool_calls[{k}]");
        let Value::Object(c) = c else { return Err(ApiError::wrong_type(&cname, "a tool call object")) };
        let prefix = format!("{cname}.");
        let cf = Fields::nested(c, &prefix);
        let id = cf.str("id")?.ok_or_else(|| ApiError::missing(&format!("{cname}.id")))?.to_string();
        let Some(Value::Object(func)) = c.get("function") else {
            return Err(ApiError::missing(&format!("{cname}.function")));
        };
        let fprefix = format!("{cname}.function.");
        let ff = Fields::nested(func, &fprefix);
        let fname = ff.str("name")?.ok_or_else(|| ApiError::missing(&format!("{cname}.function.name")))?.to_string();
        let arguments = match func.get("arguments") {
            None | Some(Value::Null) => "{}".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(v @ Value::Object(_)) => v.to_string(),
            Some(_) => {
                return Err(ApiError::wrong_type(&format!("{cname}.function.arguments"), "a string of JSON"));
            }
        };
        out.push(ChatToolCall { id, name: fname, arguments });
    }
    Ok(out)
}

/// `prompt`: a string, a list of strings, a list of token ids, or a list of token-id lists.
fn parse_prompts(f: &Fields<'_>, n_vocab: usize) -> Result<Vec<Prompt>, ApiError> {
    let Some(v) = f.get("prompt") else { return Err(ApiError::missing("prompt")) };
    let tokens = |name: &str, items: &[Value]| -> Result<Vec<Token>, ApiError> {
        items.iter().map(|x| check_int(name, x, 0, n_vocab as i64 - 1).map(|t| t as Token)).collect()
    };
    let shape = "a string, an array of strings, an array of token ids or an array of token-id arrays";
    match v {
        Value::String(s) => Ok(vec![Prompt::Text(s.clone())]),
        Value::Array(items) if items.is_empty() => {
            Err(ApiError::invalid("prompt", "empty_array", "Invalid 'prompt': empty array."))
        }
        Value::Array(items) => match &items[0] {
            Value::String(_) => items
                .iter()
                .map(|x| match x {
                    Value::String(s) => Ok(Prompt::Text(s.clone())),
                    _ => Err(ApiError::wrong_type("prompt", shape)),
                })
                .collect(),
            Value::Number(_) => Ok(vec![Prompt::Tokens(tokens("prompt", items)?)]),
            Value::Array(_) => items
                .iter()
                .map(|x| match x {
                    Value::Array(t) if !t.is_empty() => Ok(Prompt::Tokens(tokens("prompt", t)?)),
                    Value::Array(_) => {
                        Err(ApiError::invalid("prompt", "empty_array", "Invalid 'prompt': empty token array."))
                    }
                    _ => Err(ApiError::wrong_type("prompt", shape)),
                })
                .collect(),
            _ => Err(ApiError::wrong_type("prompt", shape)),
        },
        _ => Err(ApiError::wrong_type("prompt", shape)),
    }
}

/// `stop`: a string or up to four strings, none empty.
fn parse_stop(f: &Fields<'_>) -> Result<Vec<String>, ApiError> {
    let list = match f.get("stop") {
        None => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => {
            if a.len() > MAX_STOP {
                return Err(ApiError::invalid(
                    "stop",
                    "array_above_max_length",
                    format!("Invalid 'stop': array too long. Expected an array with maximum length {MAX_STOP}, but got an array with length {} instead.", a.len()),
                ));
            }
            a.iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(ApiError::wrong_type("stop", "a string or an array of strings")),
                })
                .collect::<Result<_, _>>()?
        }
        Some(_) => return Err(ApiError::wrong_type("stop", "a string or an array of strings")),
    };
    if list.iter().any(|s| s.is_empty()) {
        return Err(ApiError::invalid_value("stop", "stop strings must not be empty"));
    }
    Ok(list)
}

/// vLLM's `stop_token_ids`: token ids in the vocabulary.
fn parse_stop_token_ids(f: &Fields<'_>, n_vocab: usize) -> Result<Vec<Token>, ApiError> {
    match f.get("stop_token_ids") {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => {
            a.iter().map(|x| check_int("stop_token_ids", x, 0, n_vocab as i64 - 1).map(|t| t as Token)).collect()
        }
        Some(_) => Err(ApiError::wrong_type("stop_token_ids", "an array of token ids")),
    }
}
