//! The structured fields of a generation request other than messages and tools: `prompt`,
//! `stop`, `logit_bias`, `samplers`, the output constraints, `token_trie`, `stream_options`.
//! Each is read into a typed value whose wrong-shape error names the field as the server always
//! has; values (ranges, token ids, names) are checked by [`crate::request`] and friends.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{Deserialize, Deserializer};
use serde_json::Value;

use super::scalars::{not, shaped, Integer, JsonObject, Number};

/// A token id (checked against the vocabulary when the request is read).
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct TokenId(#[schemars(range(min = 0))] pub Integer);

fn token_id(v: Value) -> Result<TokenId, String> {
    match v {
        Value::Number(n) => Ok(TokenId(Integer(n))),
        _ => Err("an integer".into()),
    }
}

/// `prompt` of `/v1/completions`.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum PromptIn {
    /// One text prompt (it must tokenize to at least one token).
    Text(#[schemars(length(min = 1))] String),
    /// Several text prompts (`n` choices each).
    Texts(#[schemars(length(min = 1))] Vec<PromptText>),
    /// One prompt as token ids.
    Tokens(#[schemars(length(min = 1))] Vec<TokenId>),
    /// Several prompts as token ids (none empty).
    TokenLists(#[schemars(length(min = 1))] Vec<TokenList>),
}

/// One text prompt in a list of them.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct PromptText(#[schemars(length(min = 1))] pub String);

/// One prompt of token ids, in a list of them.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct TokenList(#[schemars(length(min = 1))] pub Vec<TokenId>);

/// The wrong-shape text of `prompt`.
const PROMPT_SHAPE: &str = "a string, an array of strings, an array of token ids or an array of token-id arrays";

impl<'de> Deserialize<'de> for PromptIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| {
            let items = match v {
                Value::String(s) => return Ok(PromptIn::Text(s)),
                Value::Array(items) => items,
                _ => return Err(PROMPT_SHAPE.into()),
            };
            match items.first() {
                None => Ok(PromptIn::Texts(Vec::new())),
                Some(Value::String(_)) => items
                    .into_iter()
                    .map(|x| match x {
                        Value::String(s) => Ok(PromptText(s)),
                        _ => Err(PROMPT_SHAPE.to_string()),
                    })
                    .collect::<Result<_, _>>()
                    .map(PromptIn::Texts),
                Some(Value::Number(_)) => {
                    items.into_iter().map(token_id).collect::<Result<_, _>>().map(PromptIn::Tokens)
                }
                Some(Value::Array(_)) => items
                    .into_iter()
                    .map(|x| match x {
                        Value::Array(t) => t.into_iter().map(token_id).collect::<Result<_, _>>().map(TokenList),
                        _ => Err(PROMPT_SHAPE.to_string()),
                    })
                    .collect::<Result<_, _>>()
                    .map(PromptIn::TokenLists),
                Some(_) => Err(PROMPT_SHAPE.into()),
            }
        })
    }
}

/// `stop`: a string or up to four strings.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum Stop {
    /// One stop string.
    One(#[schemars(length(min = 1))] String),
    /// Up to four stop strings.
    Many(#[schemars(length(max = 4))] Vec<StopString>),
}

/// A non-empty stop string.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct StopString(#[schemars(length(min = 1))] pub String);

impl<'de> Deserialize<'de> for Stop {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const SHAPE: &str = "a string or an array of strings";
        shaped(d, |v| match v {
            Value::String(s) => Ok(Stop::One(s)),
            Value::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(StopString(s)),
                    _ => Err(SHAPE.to_string()),
                })
                .collect::<Result<_, _>>()
                .map(Stop::Many),
            _ => Err(SHAPE.into()),
        })
    }
}

impl Stop {
    /// The stop strings.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Stop::One(s) => vec![s],
            Stop::Many(v) => v.into_iter().map(|s| s.0).collect(),
        }
    }
}

/// A `logit_bias` value: a bias in [-100, 100], or `false` to ban the token.
#[derive(Clone, Debug, PartialEq)]
pub enum Bias {
    /// `false`: the token is never sampled.
    Ban,
    /// Added to the token's logit.
    Add(Number),
}

impl JsonSchema for Bias {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Bias".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [
                { "type": "number", "minimum": -100, "maximum": 100 },
                { "const": false }
            ]
        })
    }
}

/// The wrong-shape text of a bias.
const BIAS_SHAPE: &str = "a number in [-100, 100] (or false to ban) for each token";

fn bias(v: Value) -> Result<Bias, String> {
    match v {
        Value::Bool(false) => Ok(Bias::Ban),
        Value::Number(n) => Ok(Bias::Add(Number(n.as_f64().unwrap_or(f64::NAN)))),
        _ => Err(BIAS_SHAPE.into()),
    }
}

/// A `logit_bias` key in llama.cpp's pair form: a token id, or text (each of its tokens).
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum BiasKey {
    /// A token id.
    Id(TokenId),
    /// Text: every token it tokenizes to.
    Text(String),
}

/// `logit_bias`: OpenAI's `{"token id": bias}` (a key that is not a number is text, as in
/// llama-server) or llama.cpp's `[[token id or text, bias], ...]`.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum LogitBias {
    /// `{"token id or text": bias}`.
    Map(#[schemars(with = "BTreeMap<String, Bias>")] Vec<(String, Bias)>),
    /// `[[token id or text, bias], ...]`.
    Pairs(Vec<(BiasKey, Bias)>),
}

impl<'de> Deserialize<'de> for LogitBias {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| match v {
            Value::Object(m) => {
                m.into_iter().map(|(k, b)| Ok((k, bias(b)?))).collect::<Result<_, String>>().map(LogitBias::Map)
            }
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::Array(pair) if pair.len() == 2 => {
                        let [k, b]: [Value; 2] = pair.try_into().map_err(|_| String::new())?;
                        let b = bias(b)?;
                        let k = match k {
                            Value::Number(n) => BiasKey::Id(TokenId(Integer(n))),
                            Value::String(s) => BiasKey::Text(s),
                            _ => return Err("an object of token id -> bias".to_string()),
                        };
                        Ok((k, b))
                    }
                    _ => Err("an object, or an array of [token, bias] pairs".to_string()),
                })
                .collect::<Result<_, _>>()
                .map(LogitBias::Pairs),
            other => Err(not("an object of token id -> bias", &other)),
        })
    }
}

/// `samplers`: the chain's order, as names or as a string of one-letter codes (llama-server's).
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum Samplers {
    /// Names (case-insensitive; llama.cpp's aliases such as `top-k` and `nucleus` are
    /// accepted too).
    Names(#[schemars(with = "Vec<SamplerName>")] Vec<String>),
    /// One-letter codes: e d s k y p m x t i a.
    Codes(#[schemars(regex(pattern = r"^[edskypmxtia]*$"))] String),
}

/// The samplers' names.
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum SamplerName {
    Penalties,
    Dry,
    TopNSigma,
    TopK,
    TypP,
    TopP,
    MinP,
    Xtc,
    Temperature,
    Infill,
    AdaptiveP,
}

impl<'de> Deserialize<'de> for Samplers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| match v {
            Value::Array(items) => items
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s),
                    _ => Err("an array of sampler names".to_string()),
                })
                .collect::<Result<_, _>>()
                .map(Samplers::Names),
            Value::String(s) => Ok(Samplers::Codes(s)),
            other => Err(not("an array of names or a string of codes", &other)),
        })
    }
}

/// `dry_sequence_breakers`: a non-empty array of strings.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct Breakers(#[schemars(length(min = 1))] pub Vec<String>);

impl<'de> Deserialize<'de> for Breakers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| match v {
            Value::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s),
                    _ => Err("an array of strings".to_string()),
                })
                .collect::<Result<_, _>>()
                .map(Breakers),
            _ => Err("an array of strings".into()),
        })
    }
}

/// `stop_token_ids` (vLLM's): generation ends at any of these tokens.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct TokenIds(pub Vec<TokenId>);

impl<'de> Deserialize<'de> for TokenIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| match v {
            Value::Array(a) => a.into_iter().map(token_id).collect::<Result<_, _>>().map(TokenIds),
            _ => Err("an array of token ids".into()),
        })
    }
}

/// The only output modality.
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Modality {
    /// Text.
    Text,
}

/// `modalities`: only `["text"]` (anything else is refused).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[schemars(transparent)]
#[serde(transparent)]
pub struct Modalities(#[schemars(with = "Vec<Modality>")] pub Value);

/// `stream_options`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct StreamOptions {
    /// End the stream with a chunk carrying `usage` (and `usage: null` in the others).
    pub include_usage: Option<bool>,
}

/// The `type` values of `response_format`.
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormatType {
    /// No constraint.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching `json_schema.schema`.
    JsonSchema,
}

/// `response_format`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct ResponseFormat {
    /// What the output must be.
    #[serde(rename = "type")]
    #[schemars(with = "ResponseFormatType")]
    pub kind: Option<String>,
    /// With `json_schema`: the schema (required then).
    pub json_schema: Option<JsonSchemaFormat>,
}

/// `response_format.json_schema`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct JsonSchemaFormat {
    /// A name for the schema.
    #[schemars(with = "String", regex(pattern = r"^[a-zA-Z0-9_-]{1,64}$"))]
    pub name: Option<String>,
    /// What the schema is for.
    pub description: Option<String>,
    /// Accepted for compatibility: the output always matches the schema here.
    pub strict: Option<bool>,
    /// The JSON Schema (compiled strictly: a keyword that cannot be enforced is a 400).
    /// Default: any JSON value.
    pub schema: Option<SchemaValue>,
}

/// A JSON Schema: an object or a boolean.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaValue(pub Value);

impl<'de> Deserialize<'de> for SchemaValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| match v {
            Value::Object(_) | Value::Bool(_) => Ok(SchemaValue(v)),
            _ => Err("an object".into()),
        })
    }
}

impl JsonSchema for SchemaValue {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "SchemaValue".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": ["object", "boolean"] })
    }
}

/// `grammar` (llama.cpp's): a GBNF grammar; blank means none.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(transparent)]
pub struct Grammar(pub String);

impl<'de> Deserialize<'de> for Grammar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| match v {
            Value::String(s) => Ok(Grammar(s)),
            other => Err(not("a string (GBNF)", &other)),
        })
    }
}

/// The `mode` values of `token_trie`.
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TrieMode {
    /// The most likely allowed token.
    Greedy,
    /// The sampler chain over the allowed tokens.
    Sampled,
}

/// `token_trie` (this server's extension): the output is one of a descriptor path's leaves.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct TokenTrie {
    /// `{"modelId", "descriptors": [{"path", "leaves": [{"name", "tokens"}]}]}`.
    #[schemars(with = "JsonObject")]
    pub descriptor: Option<JsonObject>,
    /// Which descriptor path's leaves.
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// `greedy` (default) or `sampled`.
    #[schemars(with = "Option<TrieMode>")]
    pub mode: Option<String>,
}

/// The `type` values of `speculative`.
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpecTypeName {
    /// No speculation for this request.
    None,
    /// Drafts from n-gram matches over the prompt and the output so far.
    Ngram,
    /// Drafts from the server's draft model (`--model-draft`).
    Draft,
}

/// `speculative` (this server's extension): speculative decoding for this request, over the
/// server's `--spec-type`, `--draft-max`, `--draft-min` and `--spec-ngram-size-n`. It never
/// changes the answer (tokens, logprobs): drafts are verified by the request's own sampler.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct Speculative {
    /// `none`, `ngram` or `draft` (default: the server's `--spec-type`).
    #[serde(rename = "type")]
    #[schemars(with = "Option<SpecTypeName>")]
    pub kind: Option<String>,
    /// Most tokens drafted per forward pass.
    #[schemars(range(min = 1, max = 256))]
    pub draft_max: Option<Integer>,
    /// Drafts shorter than this are not used (at most `draft_max`).
    #[schemars(range(min = 0, max = 256))]
    pub draft_min: Option<Integer>,
    /// Shortest match of the last tokens that may propose an n-gram draft.
    #[schemars(range(min = 1, max = 64))]
    pub ngram_size_n: Option<Integer>,
}
