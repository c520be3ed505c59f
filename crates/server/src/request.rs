//! A chat or completions request body, read into a [`GenerationRequest`]: OpenAI's fields plus
//! llama.cpp's and vLLM's sampling extras, first as the typed body of [`crate::body`] (the
//! types `GET /openapi.json` is generated from), then each value checked (out-of-range values
//! are 400s naming the field, never clamped). Unknown fields are ignored, as vLLM and llama.cpp
//! do; fields that ask for something this server cannot do are refused rather than ignored.

use nucleus_runtime::{ChatMessage, ChatToolCall, Model, Prompt};
use nucleus_sampler::{SamplingParams, Token};
use serde_json::{Map, Value};

use crate::body::messages::{Content, MessageToolCalls, Messages, ObjectOrMissing};
use crate::body::scalars::Integer;
use crate::body::shapes::{Modalities, PromptIn, Stop, TokenId, TokenIds, TokenTrie};
use crate::body::{self, ChatBody, ChatFields, Common, CompletionBody, CompletionFields};
use crate::constraint::{self, Constraint};
use crate::errors::ApiError;
use crate::fields::{check_int, int_in};
use crate::reasoning::{self, ReasoningFields};
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
    /// Chat: how the answer is read for reasoning and how long the model may think.
    pub reasoning: ReasoningFields,
    /// Speculative decoding asked for (over the server's settings, [`crate::speculative`]).
    pub speculative: crate::speculative::SpecRequest,
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

/// Reads a request body (already parsed as JSON) for `endpoint`: first into the typed body
/// ([`body::decode`]: shapes), then its values into a [`GenerationRequest`]. `defaults` are the
/// server's sampling defaults; `model` resolves token ids and text in `logit_bias`.
pub fn parse(
    endpoint: Endpoint,
    body: &Map<String, Value>,
    defaults: &SamplingParams,
    model: &dyn Model,
) -> Result<GenerationRequest, ApiError> {
    refuse_present(body, endpoint)?;
    let (own, c) = match endpoint {
        Endpoint::Chat => {
            let (f, c) = body::decode::<ChatBody>(body)?.split();
            (Own::Chat(f), c)
        }
        Endpoint::Completions => {
            let (f, c) = body::decode::<CompletionBody>(body)?.split();
            (Own::Completions(f), c)
        }
    };
    refuse_values(&c)?;
    let constraint = constraint::parse(&c)?;
    let tools = match &own {
        Own::Chat(f) => tools::parse(f, body)?,
        Own::Completions(_) => None,
    };
    if constraint.is_some() && tools.as_ref().is_some_and(ToolRequest::active) {
        let param = if c.response_format.is_some() { "response_format" } else { "grammar" };
        return Err(ApiError::unsupported(
            param,
            format!("'{param}' cannot be combined with tools; the tool-call grammar already constrains the answer"),
        ));
    }

    let prompts = match &own {
        Own::Chat(f) => vec![Prompt::Chat(parse_messages(f.messages.as_ref())?)],
        Own::Completions(f) => parse_prompts(f.prompt.as_ref(), model.n_vocab())?,
    };

    let n = match first_of(&[("n", &c.n), ("n_cmpl", &c.n_cmpl)]) {
        Some((name, v)) => int_in(name, Some(v), 1, MAX_N)?.unwrap_or(1) as usize,
        None => 1,
    };
    if let Some(best_of) = int_in("best_of", c.best_of.as_ref(), 1, MAX_N)? {
        if best_of as usize != n && best_of != 1 {
            return Err(ApiError::unsupported(
                "best_of",
                "best_of other than n is not supported (no server-side ranking)",
            ));
        }
    }

    let stream = c.stream.unwrap_or(false);
    let mut include_usage = false;
    if let Some(so) = &c.stream_options {
        if !stream {
            return Err(ApiError::invalid_value(
                "stream_options",
                "stream_options is only allowed when stream is true",
            ));
        }
        include_usage = so.include_usage.unwrap_or(false);
    }

    let (mct, mt) = match &own {
        Own::Chat(f) => (&f.max_completion_tokens, &f.max_tokens),
        Own::Completions(f) => (&f.max_completion_tokens, &f.max_tokens),
    };
    let max_fields = [("max_completion_tokens", mct), ("max_tokens", mt), ("n_predict", &c.n_predict)];
    let (max_tokens, max_tokens_param) = match first_of(&max_fields) {
        Some((name, v)) => {
            let min = if endpoint == Endpoint::Chat { 1 } else { 0 };
            let lo = if name == "n_predict" { -1 } else { min };
            let v = int_in(name, Some(v), lo, i32::MAX as i64)?;
            (v.filter(|&v| v >= 0).map(|v| v as usize), name)
        }
        None if endpoint == Endpoint::Completions => (Some(16), "max_tokens"),
        None => (None, "max_tokens"),
    };

    let (logprobs, echo) = match &own {
        Own::Chat(f) => {
            let on = f.logprobs.unwrap_or(false);
            let top = int_in("top_logprobs", f.top_logprobs.as_ref(), 0, MAX_LOGPROBS)?;
            if top.is_some() && !on {
                return Err(ApiError::invalid_value(
                    "top_logprobs",
                    "top_logprobs is only allowed when logprobs is true",
                ));
            }
            let n_probs = int_in("n_probs", c.n_probs.as_ref(), 0, MAX_LOGPROBS)?.filter(|&k| k > 0);
            let lp = match (on, n_probs) {
                (true, _) => Some(top.or(n_probs).unwrap_or(0) as usize),
                (false, Some(k)) => Some(k as usize),
                (false, None) => None,
            };
            (lp, false)
        }
        Own::Completions(f) => {
            let lp = match int_in("logprobs", f.logprobs.as_ref(), 0, MAX_LOGPROBS)? {
                Some(k) => Some(k as usize),
                None => int_in("n_probs", c.n_probs.as_ref(), 0, MAX_LOGPROBS)?.filter(|&k| k > 0).map(|k| k as usize),
            };
            (lp, f.echo.unwrap_or(false))
        }
    };
    let post_sampling_probs = c.post_sampling_probs.unwrap_or(false);
    let cache_prompt = c.cache_prompt.unwrap_or(true);
    let token_trie = parse_token_trie(c.token_trie.as_ref())?;
    if token_trie.is_some() && (constraint.is_some() || tools.as_ref().is_some_and(ToolRequest::active)) {
        return Err(ApiError::unsupported(
            "token_trie",
            "'token_trie' cannot be combined with a grammar, a response_format or tools",
        ));
    }

    let stop = parse_stop(c.stop.clone())?;
    let params = sampling_fields::parse(body, &c, defaults, model)?;
    let stop_tokens = parse_stop_token_ids(c.stop_token_ids.as_ref(), model.n_vocab())?;
    let min_tokens = int_in("min_tokens", c.min_tokens.as_ref(), 0, i32::MAX as i64)?.unwrap_or(0) as usize;
    if let Some(m) = max_tokens {
        if min_tokens > m {
            return Err(ApiError::invalid_value(
                "min_tokens",
                format!("min_tokens ({min_tokens}) must not exceed {max_tokens_param} ({m})"),
            ));
        }
    }
    params.validate(Some(model.n_vocab())).map_err(sampling_fields::param_error)?;
    let speculative = crate::speculative::parse(&c)?;
    let reasoning = match &own {
        Own::Chat(f) => reasoning::parse(
            f.reasoning_format.as_deref(),
            f.reasoning_budget.as_ref(),
            f.reasoning_effort.as_deref(),
            f.chat_template_kwargs.as_ref(),
        )?,
        Own::Completions(_) => ReasoningFields::default(),
    };

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
        reasoning,
        speculative,
    })
}

/// The route's own fields of a body.
enum Own {
    Chat(ChatFields),
    Completions(CompletionFields),
}

/// The first field among aliases that is present, with its name.
fn first_of<'a>(fields: &[(&'static str, &'a Option<Integer>)]) -> Option<(&'static str, &'a Integer)> {
    fields.iter().find_map(|(name, v)| v.as_ref().map(|v| (*name, v)))
}

/// Refuses fields (present and not null) that ask for what this server cannot do, before the
/// body is read: they are not part of the request types.
fn refuse_present(body: &Map<String, Value>, endpoint: Endpoint) -> Result<(), ApiError> {
    let has = |name: &str| body.get(name).is_some_and(|v| !v.is_null());
    for (name, why) in REFUSED {
        if has(name) {
            return Err(ApiError::unsupported(name, format!("'{name}': {why} by this server.")));
        }
    }
    if endpoint == Endpoint::Completions {
        for name in ["tools", "tool_choice"] {
            if has(name) {
                return Err(ApiError::invalid_value(name, format!("'{name}' is only for POST /v1/chat/completions")));
            }
        }
        if has("messages") {
            return Err(ApiError::invalid_value(
                "messages",
                "use POST /v1/chat/completions for messages; /v1/completions takes a prompt",
            ));
        }
    }
    Ok(())
}

/// Refuses values of fields this server takes only with one value.
fn refuse_values(c: &Common) -> Result<(), ApiError> {
    if let Some(Modalities(m)) = &c.modalities {
        let ok = matches!(m, Value::Array(a) if a.iter().all(|x| x == "text"));
        if !ok {
            return Err(ApiError::unsupported("modalities", "'modalities': only [\"text\"] is supported."));
        }
    }
    for (name, v) in
        [("include_stop_str_in_output", c.include_stop_str_in_output), ("use_beam_search", c.use_beam_search)]
    {
        if v == Some(true) {
            return Err(ApiError::unsupported(name, format!("'{name}' is not supported by this server.")));
        }
    }
    Ok(())
}

/// `messages` into chat messages: text content only (a string, or text parts concatenated).
fn parse_messages(messages: Option<&Messages>) -> Result<Vec<ChatMessage>, ApiError> {
    let Some(Messages(items)) = messages else { return Err(ApiError::missing("messages")) };
    if items.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "empty_array",
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, m) in items.iter().enumerate() {
        let name = format!("messages[{i}]");
        let role = match m.role.as_deref() {
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
        let content = match &m.content {
            None if role == "assistant" => String::new(),
            None => return Err(ApiError::missing(&format!("{name}.content"))),
            Some(Content::Text(s)) => s.clone(),
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for (j, part) in parts.iter().enumerate() {
                    let pname = format!("{name}.content[{j}]");
                    match part.kind.as_deref() {
                        Some("text") => match &part.text {
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
        };
        let mut msg = ChatMessage::new(role, content);
        msg.name = m.name.clone();
        if role == "assistant" {
            msg.tool_calls = parse_tool_calls(m.tool_calls.as_ref(), &name)?;
            msg.reasoning_content = m.reasoning_content.clone().or_else(|| m.reasoning.clone());
        }
        if role == "tool" {
            match &m.tool_call_id {
                Some(id) => msg.tool_call_id = Some(id.clone()),
                None => return Err(ApiError::missing(&format!("{name}.tool_call_id"))),
            }
        }
        out.push(msg);
    }
    Ok(out)
}

/// `token_trie: {descriptor, path, mode}` (mode `greedy` by default).
fn parse_token_trie(t: Option<&TokenTrie>) -> Result<Option<TokenTrieRequest>, ApiError> {
    let Some(t) = t else { return Ok(None) };
    let descriptor = match &t.descriptor {
        Some(d) => Value::Object(d.0.clone()),
        None => return Err(ApiError::missing("token_trie.descriptor")),
    };
    let path = t.path.clone().ok_or_else(|| ApiError::missing("token_trie.path"))?;
    let greedy = match t.mode.as_deref() {
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
fn parse_tool_calls(calls: Option<&MessageToolCalls>, name: &str) -> Result<Vec<ChatToolCall>, ApiError> {
    let Some(MessageToolCalls(calls)) = calls else { return Ok(Vec::new()) };
    let mut out = Vec::with_capacity(calls.len());
    for (k, c) in calls.iter().enumerate() {
        let cname = format!("{name}.tool_calls[{k}]");
        let id = c.id.clone().ok_or_else(|| ApiError::missing(&format!("{cname}.id")))?;
        let Some(ObjectOrMissing(func)) = &c.function else {
            return Err(ApiError::missing(&format!("{cname}.function")));
        };
        let fname = func.name.clone().ok_or_else(|| ApiError::missing(&format!("{cname}.function.name")))?;
        let arguments = func.arguments.clone().map_or_else(|| "{}".to_string(), |a| a.into_string());
        out.push(ChatToolCall { id, name: fname, arguments });
    }
    Ok(out)
}

/// `prompt`: a string, a list of strings, a list of token ids, or a list of token-id lists.
fn parse_prompts(prompt: Option<&PromptIn>, n_vocab: usize) -> Result<Vec<Prompt>, ApiError> {
    let Some(p) = prompt else { return Err(ApiError::missing("prompt")) };
    let tokens = |items: &[TokenId]| -> Result<Vec<Token>, ApiError> {
        items.iter().map(|x| check_int("prompt", &x.0.value(), 0, n_vocab as i64 - 1).map(|t| t as Token)).collect()
    };
    match p {
        PromptIn::Text(s) => Ok(vec![Prompt::Text(s.clone())]),
        PromptIn::Texts(items) if items.is_empty() => {
            Err(ApiError::invalid("prompt", "empty_array", "Invalid 'prompt': empty array."))
        }
        PromptIn::Texts(items) => Ok(items.iter().map(|s| Prompt::Text(s.0.clone())).collect()),
        PromptIn::Tokens(items) => Ok(vec![Prompt::Tokens(tokens(items)?)]),
        PromptIn::TokenLists(lists) => lists
            .iter()
            .map(|t| {
                if t.0.is_empty() {
                    return Err(ApiError::invalid("prompt", "empty_array", "Invalid 'prompt': empty token array."));
                }
                Ok(Prompt::Tokens(tokens(&t.0)?))
            })
            .collect(),
    }
}

/// `stop`: a string or up to four strings, none empty.
fn parse_stop(stop: Option<Stop>) -> Result<Vec<String>, ApiError> {
    let Some(stop) = stop else { return Ok(Vec::new()) };
    if let Stop::Many(a) = &stop {
        if a.len() > MAX_STOP {
            return Err(ApiError::invalid(
                "stop",
                "array_above_max_length",
                format!("Invalid 'stop': array too long. Expected an array with maximum length {MAX_STOP}, but got an array with length {} instead.", a.len()),
            ));
        }
    }
    let list = stop.into_vec();
    if list.iter().any(|s| s.is_empty()) {
        return Err(ApiError::invalid_value("stop", "stop strings must not be empty"));
    }
    Ok(list)
}

/// vLLM's `stop_token_ids`: token ids in the vocabulary.
fn parse_stop_token_ids(ids: Option<&TokenIds>, n_vocab: usize) -> Result<Vec<Token>, ApiError> {
    match ids {
        None => Ok(Vec::new()),
        Some(TokenIds(a)) => a
            .iter()
            .map(|x| check_int("stop_token_ids", &x.0.value(), 0, n_vocab as i64 - 1).map(|t| t as Token))
            .collect(),
    }
}
