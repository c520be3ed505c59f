//! The request bodies of the generation routes as typed values: what the server accepts, and
//! (through `schemars`) what `GET /openapi.json` publishes — one definition for both, so the
//! published contract cannot drift from the parser.
//!
//! A body is read in two steps: [`decode`] reads the JSON into [`ChatBody`] or
//! [`CompletionBody`] (shapes only: a field of the wrong JSON type is a 400 naming it, with
//! its path such as `messages[0].content`); then [`crate::request::parse`] checks the values
//! (ranges, token ids, names, combinations) into a [`crate::request::GenerationRequest`].
//! `null` means "absent" everywhere; unknown fields are ignored, as vLLM and llama.cpp do.
//! The sampling fields are declared here for their JSON types and descriptions; their names,
//! ranges and meaning are [`nucleus_sampler::fields`]'s: the schema takes the ranges from it
//! ([`crate::sampling_fields::schema_ranges`]), as the reader does ([`crate::sampling_fields`]).

pub mod messages;
pub mod scalars;
pub mod shapes;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::errors::ApiError;
use messages::{Messages, ToolChoiceIn, Tools};
use scalars::{Integer, Number, MISSING};
use shapes::{
    Breakers, Grammar, LogitBias, Modalities, PromptIn, ResponseFormat, Samplers, SchemaValue, Speculative, Stop,
    StreamOptions, TokenIds, TokenTrie,
};

/// Declares the fields both routes take once: [`Common`] holds them, and each route's body
/// has them after its own fields (`split` separates the two).
macro_rules! bodies {
    (
        common { $($(#[$cm:meta])* $cf:ident : $ct:ty,)* }
        $(#[$am:meta])* $a:ident / $apart:ident { $($(#[$afm:meta])* $af:ident : $at:ty,)* }
        $(#[$bm:meta])* $b:ident / $bpart:ident { $($(#[$bfm:meta])* $bf:ident : $bt:ty,)* }
    ) => {
        /// The fields both generation routes take.
        #[derive(Clone, Debug, Default)]
        pub struct Common { $(#[allow(missing_docs)] pub $cf: $ct,)* }

        #[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
        $(#[$am])*
        #[serde(expecting = "a JSON object")]
        pub struct $a { $($(#[$afm])* pub $af: $at,)* $($(#[$cm])* pub $cf: $ct,)* }

        /// The fields only this route takes.
        #[derive(Clone, Debug, Default)]
        pub struct $apart { $(#[allow(missing_docs)] pub $af: $at,)* }

        impl $a {
            /// This route's own fields, and the common ones.
            pub fn split(self) -> ($apart, Common) {
                ($apart { $($af: self.$af,)* }, Common { $($cf: self.$cf,)* })
            }
        }

        #[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
        $(#[$bm])*
        #[serde(expecting = "a JSON object")]
        pub struct $b { $($(#[$bfm])* pub $bf: $bt,)* $($(#[$cm])* pub $cf: $ct,)* }

        /// The fields only this route takes.
        #[derive(Clone, Debug, Default)]
        pub struct $bpart { $(#[allow(missing_docs)] pub $bf: $bt,)* }

        impl $b {
            /// This route's own fields, and the common ones.
            pub fn split(self) -> ($bpart, Common) {
                ($bpart { $($bf: self.$bf,)* }, Common { $($cf: self.$cf,)* })
            }
        }
    };
}

bodies! {
    common {
        /// The model id (see `GET /v1/models`; aliases accepted). Default: the one served.
        model: Option<String>,
        /// Choices per prompt (`--parallel` bounds how many run at once).
        #[schemars(range(min = 1, max = 128))]
        n: Option<Integer>,
        /// llama-server's name for `n`.
        #[schemars(range(min = 1, max = 128))]
        n_cmpl: Option<Integer>,
        /// Only 1 or equal to `n` (no server-side ranking).
        #[schemars(range(min = 1, max = 128))]
        best_of: Option<Integer>,
        /// Stream the answer as server-sent events (`text/event-stream`), ending with `data: [DONE]`.
        stream: Option<bool>,
        /// Streaming options (only with `stream: true`).
        stream_options: Option<StreamOptions>,
        /// An end-user id (accepted and ignored).
        user: Option<String>,
        /// llama-server's name for `max_tokens`; -1 means no limit.
        #[schemars(range(min = -1, max = 2147483647))]
        n_predict: Option<Integer>,
        /// llama-server's count of alternatives per token: turns log-probabilities on.
        #[schemars(range(min = 0, max = 20))]
        n_probs: Option<Integer>,
        /// Report the probabilities of the distribution sampled from (after the sampler chain)
        /// instead of the model's softmax (llama-server's).
        post_sampling_probs: Option<bool>,
        /// Start from the longest cached prefix of the prompt in a slot (llama-server's;
        /// default true; never changes an answer).
        cache_prompt: Option<bool>,
        /// The token-trie constraint (this server's extension). Not with a grammar, a
        /// `response_format` or tools.
        token_trie: Option<TokenTrie>,
        /// Stop strings (not included in the output).
        stop: Option<Stop>,
        /// Token ids that end the generation (vLLM's).
        stop_token_ids: Option<TokenIds>,
        /// End-of-generation and stop tokens are banned until this many tokens exist (vLLM's).
        #[schemars(range(min = 0, max = 2147483647))]
        min_tokens: Option<Integer>,
        /// Only `["text"]`.
        modalities: Option<Modalities>,
        /// Only false (vLLM's; stop strings are never included).
        include_stop_str_in_output: Option<bool>,
        /// Only false (vLLM's; no beam search).
        use_beam_search: Option<bool>,
        /// Constrain the output to JSON (`json_object`) or to a JSON Schema (`json_schema`).
        response_format: Option<ResponseFormat>,
        /// llama-server's: constrain the output to this JSON Schema.
        json_schema: Option<SchemaValue>,
        /// llama-server's: constrain the output to this GBNF grammar.
        grammar: Option<Grammar>,
        /// Sampling temperature (0: greedy).
        temperature: Option<Number>,
        /// Nucleus sampling: keep the smallest set of tokens with this much probability.
        top_p: Option<Number>,
        /// Penalty for tokens already present.
        presence_penalty: Option<Number>,
        /// Penalty proportional to how often a token appeared.
        frequency_penalty: Option<Number>,
        /// Seed of the sampler's random numbers (-1: the default seed). Choice i uses seed + i.
        seed: Option<Integer>,
        /// Keep the k most likely tokens (0 or -1: all; llama-server's).
        top_k: Option<Integer>,
        /// Drop tokens less likely than this fraction of the best (llama-server's).
        min_p: Option<Number>,
        /// Locally typical sampling (llama-server's; 1 disables).
        typical_p: Option<Number>,
        /// Repetition penalty (> 0; 1 disables; llama-server's).
        repeat_penalty: Option<Number>,
        /// vLLM's name for `repeat_penalty`.
        repetition_penalty: Option<Number>,
        /// How many recent tokens the penalties look at (llama-server's).
        repeat_last_n: Option<Integer>,
        /// DRY repetition penalty strength (0 disables; llama-server's).
        dry_multiplier: Option<Number>,
        /// DRY base.
        dry_base: Option<Number>,
        /// DRY: repeats longer than this are penalized.
        dry_allowed_length: Option<Integer>,
        /// DRY: how many recent tokens it looks at.
        dry_penalty_last_n: Option<Integer>,
        /// DRY: strings that break a repeat.
        dry_sequence_breakers: Option<Breakers>,
        /// XTC: chance of removing the top choices (llama-server's).
        xtc_probability: Option<Number>,
        /// XTC: probability above which a token counts as a top choice.
        xtc_threshold: Option<Number>,
        /// Mirostat: 0 off, 1 or 2 (llama-server's).
        mirostat: Option<Integer>,
        /// Mirostat target entropy.
        mirostat_tau: Option<Number>,
        /// Mirostat learning rate.
        mirostat_eta: Option<Number>,
        /// Keep tokens within this many standard deviations of the best logit (llama-server's).
        top_n_sigma: Option<Number>,
        /// Dynamic temperature range (llama-server's).
        dynatemp_range: Option<Number>,
        /// Dynamic temperature exponent.
        dynatemp_exponent: Option<Number>,
        /// Adaptive-p target probability (negative disables; llama-server's).
        adaptive_target: Option<Number>,
        /// Adaptive-p decay.
        adaptive_decay: Option<Number>,
        /// Samplers keep at least this many tokens (llama-server's).
        min_keep: Option<Integer>,
        /// Never stop at end-of-generation tokens (llama-server's).
        ignore_eos: Option<bool>,
        /// The sampler chain's order (llama-server's).
        samplers: Option<Samplers>,
        /// Bias added to tokens' logits: `{"token id": bias}` or llama.cpp's pairs.
        logit_bias: Option<LogitBias>,
        /// This server's extension: every generated token comes with its sampling step (this
        /// many top candidates before and after the chain) in `choices[].steps` (0: off).
        #[schemars(range(min = 0, max = 64))]
        trace_steps: Option<Integer>,
        /// This server's extension: speculative decoding for this request (see the type).
        speculative: Option<Speculative>,
        /// llama-server's: most tokens drafted per pass (`speculative.draft_max` wins).
        #[serde(rename = "speculative.n_max")]
        #[schemars(range(min = 1, max = 256))]
        speculative_n_max: Option<Integer>,
        /// llama-server's: drafts shorter than this are not used (`speculative.draft_min` wins).
        #[serde(rename = "speculative.n_min")]
        #[schemars(range(min = 0, max = 256))]
        speculative_n_min: Option<Integer>,
    }

    /// `POST /v1/chat/completions`: OpenAI's chat fields plus llama-server's and vLLM's
    /// sampling extras.
    /// Fields that need another: `top_logprobs` needs `logprobs: true`, `stream_options` needs
    /// `stream: true`, `tool_choice` needs `tools`.
    #[schemars(rename = "CreateChatCompletionRequest")]
    #[schemars(transform = crate::sampling_fields::schema_ranges)]
    #[schemars(extend("allOf" = [
        {
            "if": { "required": ["top_logprobs"], "properties": { "top_logprobs": { "type": "integer" } } },
            "then": { "required": ["logprobs"], "properties": { "logprobs": { "const": true } } }
        },
        {
            "if": { "required": ["stream_options"], "properties": { "stream_options": { "type": "object" } } },
            "then": { "required": ["stream"], "properties": { "stream": { "const": true } } }
        },
        {
            "if": { "required": ["tool_choice"], "properties": { "tool_choice": { "not": { "type": "null" } } } },
            "then": { "required": ["tools"], "properties": { "tools": { "type": "array" } } }
        }
    ]))]
    ChatBody / ChatFields {
        /// The conversation so far (at least one message).
        #[schemars(with = "Messages")]
        messages: Option<Messages>,
        /// Most tokens to generate per choice (default: until the end of generation or of the
        /// context).
        #[schemars(range(min = 1, max = 2147483647))]
        max_completion_tokens: Option<Integer>,
        /// The older name for `max_completion_tokens`.
        #[schemars(range(min = 1, max = 2147483647))]
        max_tokens: Option<Integer>,
        /// Return log-probabilities of the generated tokens.
        logprobs: Option<bool>,
        /// Alternatives per token (with `logprobs: true`).
        #[schemars(range(min = 0, max = 20))]
        top_logprobs: Option<Integer>,
        /// Accepted (and ignored) on chat.
        echo: Option<bool>,
        /// Functions the model may call.
        tools: Option<Tools>,
        /// Whether and which tool the model calls (only with `tools`, except `none`/`auto`).
        tool_choice: Option<ToolChoiceIn>,
        /// Several calls may come in one answer (default true).
        parallel_tool_calls: Option<bool>,
        /// How the answer is read for reasoning: `none` (all content), `deepseek` (`<think>`
        /// blocks), `harmony` (gpt-oss's channels), or `auto` (the server's
        /// `--reasoning-format`, by default: the style the template writes).
        reasoning_format: Option<String>,
        /// Most tokens of thinking before the block's end is forced (-1: no limit; 0: none).
        #[schemars(range(min = -1, max = 2147483647))]
        reasoning_budget: Option<Integer>,
        /// OpenAI's effort, as a thinking budget: `none`/`minimal` 0, `low` 512, `medium` 2048,
        /// `high` 8192, `xhigh` 16384 tokens, `max` no limit (`reasoning_budget` wins).
        reasoning_effort: Option<String>,
        /// Extra variables for the chat template (e.g. `{"enable_thinking": false}`), over the
        /// server's `--chat-template-kwargs`.
        chat_template_kwargs: Option<serde_json::Map<String, Value>>,
    }

    /// `POST /v1/completions`: OpenAI's legacy completion fields plus llama-server's and
    /// vLLM's sampling extras.
    /// `stream_options` needs `stream: true`.
    #[schemars(rename = "CreateCompletionRequest")]
    #[schemars(transform = crate::sampling_fields::schema_ranges)]
    #[schemars(extend("allOf" = [
        {
            "if": { "required": ["stream_options"], "properties": { "stream_options": { "type": "object" } } },
            "then": { "required": ["stream"], "properties": { "stream": { "const": true } } }
        }
    ]))]
    CompletionBody / CompletionFields {
        /// The prompt(s): text or token ids (each gets `n` choices).
        #[schemars(with = "PromptIn")]
        prompt: Option<PromptIn>,
        /// Most tokens to generate per choice (default 16; 0 with `echo` scores the prompt).
        #[schemars(range(min = 0, max = 2147483647))]
        max_tokens: Option<Integer>,
        /// OpenAI's newer name for `max_tokens`.
        #[schemars(range(min = 0, max = 2147483647))]
        max_completion_tokens: Option<Integer>,
        /// Return log-probabilities with this many alternatives per token.
        #[schemars(range(min = 0, max = 20))]
        logprobs: Option<Integer>,
        /// Put the prompt in front of the text (with its log-probabilities if asked).
        echo: Option<bool>,
    }
}

/// Reads `body` (a JSON object) as `T`. A field of the wrong type is a 400 naming it by its
/// path (`messages[0].content`), `invalid_type` with what was expected.
pub fn decode<T: DeserializeOwned>(body: &serde_json::Map<String, Value>) -> Result<T, ApiError> {
    let v = Value::Object(body.clone());
    serde_path_to_error::deserialize(&v).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.inner().to_string();
        if msg == MISSING {
            return ApiError::missing(&path);
        }
        match msg.rfind(", expected ") {
            Some(i) if msg.starts_with("invalid type") => ApiError::wrong_type(&path, &msg[i + 11..]),
            _ => ApiError::invalid(path, "invalid_type", format!("Invalid request body: {msg}.")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::f32_in;

    fn body(text: &str) -> serde_json::Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    /// Found by schemathesis: 3.402823466385289e38 is above f32::MAX, but serde_json's default
    /// float parser read it one ulp lower (exactly f32::MAX) and the range check let it through.
    #[test]
    fn a_number_just_above_a_limit_is_read_exactly_and_refused() {
        let b: CompletionBody = decode(&body(r#"{"prompt": "x", "repeat_penalty": 3.402823466385289e+38}"#)).unwrap();
        let (_, c) = b.split();
        let e = f32_in("repeat_penalty", c.repeat_penalty, 0.0, f32::MAX).unwrap_err();
        assert_eq!(e.code, Some("decimal_above_max_value"));
    }

    /// Wrong types are 400s naming the field by its path, with what was expected.
    #[test]
    fn wrong_types_name_the_field_by_path() {
        let cases = [
            (r#"{"messages": "hi"}"#, "messages", "an array of message objects"),
            (r#"{"messages": [5]}"#, "messages[0]", "an object"),
            (r#"{"messages": [{"role": 1}]}"#, "messages[0].role", "a string"),
            (
                r#"{"messages": [{"role": "user", "content": 5}]}"#,
                "messages[0].content",
                "a string or an array of text parts",
            ),
            (r#"{"messages": [{"role": "user", "content": [7]}]}"#, "messages[0].content[0]", "a content part object"),
            (r#"{"stream_options": {"include_usage": 1}}"#, "stream_options.include_usage", "a boolean"),
            (r#"{"tools": "x"}"#, "tools", "an array, not a string"),
            (
                r#"{"tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}]}"#,
                "tools[0].function.parameters",
                "an object, not a number",
            ),
            (r#"{"tool_choice": 3}"#, "tool_choice", "a string or an object, not a number"),
            (r#"{"logit_bias": 3}"#, "logit_bias", "an object of token id -> bias, not a number"),
            (
                r#"{"logit_bias": {"5": true}}"#,
                "logit_bias",
                "a number in [-100, 100] (or false to ban) for each token",
            ),
            (r#"{"grammar": 3}"#, "grammar", "a string (GBNF), not a number"),
            (r#"{"temperature": "hot"}"#, "temperature", "a number"),
            (r#"{"seed": "x"}"#, "seed", "an integer"),
        ];
        for (text, param, expected) in cases {
            let e = decode::<ChatBody>(&body(text)).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{text}");
            assert_eq!(e.code, Some("invalid_type"), "{text}");
            assert_eq!(e.message, format!("Invalid type for '{param}': expected {expected}."), "{text}");
        }
        let e = decode::<ChatBody>(&body(r#"{"tool_choice": {"type": "function", "function": 1}}"#)).unwrap_err();
        assert_eq!((e.param.as_deref(), e.code), (Some("tool_choice.function"), Some("missing_required_parameter")));
    }
}
