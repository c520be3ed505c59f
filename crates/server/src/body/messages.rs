//! `messages` of a chat request, and the tool fields (`tools`, `tool_choice`), as typed values.
//! Shapes only: roles, names and schemas are checked by [`crate::request`] and
//! [`crate::tools`].

use std::fmt;

use schemars::JsonSchema;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::scalars::{not, shaped, type_error, JsonObject, MISSING};

/// Implements `Deserialize` for a newtype over `Vec<$item>` whose wrong-type error says
/// `$expected`, and its schema as the plain array.
macro_rules! list_type {
    ($(#[$m:meta])* $name:ident, $item:ty, $min:expr, $expected:expr) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, JsonSchema)]
        #[schemars(transparent)]
        pub struct $name(#[schemars(length(min = $min))] pub Vec<$item>);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($expected)
                    }
                    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<$name, A::Error> {
                        let mut out = Vec::new();
                        while let Some(x) = s.next_element()? {
                            out.push(x);
                        }
                        Ok($name(out))
                    }
                }
                d.deserialize_seq(V)
            }
        }
    };
}

list_type!(
    /// `messages`: the conversation, oldest first.
    Messages,
    Message,
    1,
    "an array of message objects"
);

list_type!(
    /// An assistant message's `tool_calls`.
    MessageToolCalls,
    MessageToolCall,
    0,
    "an array of tool calls"
);

/// Who wrote a message (`developer` is read as `system`; `function` is the legacy tool role).
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// Instructions (OpenAI's newer name for `system`).
    Developer,
    /// The user.
    User,
    /// The model (earlier turns, possibly with tool calls).
    Assistant,
    /// A tool's result (with `tool_call_id`).
    Tool,
    /// A legacy function result.
    Function,
}

/// One message of `messages`. `content` is required except in `assistant` messages, and
/// `tool` messages need `tool_call_id`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
#[schemars(rename = "ChatMessageIn")]
#[schemars(extend("allOf" = [
    {
        "if": { "properties": { "role": { "enum": ["system", "developer", "user", "tool", "function"] } } },
        "then": { "required": ["content"], "properties": { "content": { "not": { "type": "null" } } } }
    },
    {
        "if": { "properties": { "role": { "const": "tool" } } },
        "then": { "required": ["tool_call_id"], "properties": { "tool_call_id": { "type": "string" } } }
    }
]))]
pub struct Message {
    /// Who wrote it.
    #[schemars(with = "Role")]
    pub role: Option<String>,
    /// The text: a string or text parts (concatenated). Required except for `assistant`
    /// messages (which may carry only `tool_calls`).
    pub content: Option<Content>,
    /// A participant name, handed to the chat template.
    pub name: Option<String>,
    /// Assistant messages: the calls the model made.
    pub tool_calls: Option<MessageToolCalls>,
    /// Tool messages (required there): the id of the call this answers.
    pub tool_call_id: Option<String>,
    /// Assistant messages: the thinking that came before the answer (llama-server's and
    /// DeepSeek's name), given to the chat template as `reasoning_content`; templates that
    /// drop earlier thinking (most DeepSeek-R1 ones) leave it out of the prompt.
    pub reasoning_content: Option<String>,
    /// Assistant messages: the same under vLLM's name (`reasoning_content` wins).
    pub reasoning: Option<String>,
}

/// A message's `content`.
#[derive(Clone, Debug, JsonSchema)]
#[schemars(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Text parts, concatenated (only `text` parts: the models read text only).
    Parts(Vec<ContentPart>),
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of text parts")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Content, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = s.next_element()? {
                    out.push(x);
                }
                Ok(Content::Parts(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// The only content part type this server reads.
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PartType {
    /// A text part.
    Text,
}

/// One part of an array `content`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a content part object")]
pub struct ContentPart {
    /// `text` (other types are refused: the models read text only).
    #[serde(rename = "type")]
    #[schemars(with = "PartType")]
    pub kind: Option<String>,
    /// The text.
    #[schemars(with = "String")]
    pub text: Option<String>,
}

/// A call in an assistant message's `tool_calls`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a tool call object")]
pub struct MessageToolCall {
    /// The call's id (tool messages answer it by `tool_call_id`).
    #[schemars(with = "String")]
    pub id: Option<String>,
    /// `function`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The function called.
    #[schemars(with = "MessageFunctionCall")]
    pub function: Option<ObjectOrMissing<MessageFunctionCall>>,
}

/// The function part of a [`MessageToolCall`].
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
pub struct MessageFunctionCall {
    /// The function's name.
    #[schemars(with = "String")]
    pub name: Option<String>,
    /// Its arguments: a string of JSON (as OpenAI sends them) or the object itself.
    pub arguments: Option<Arguments>,
}

/// A call's `arguments`, as the string of JSON given (an object is written out as one).
#[derive(Clone, Debug, JsonSchema)]
#[schemars(untagged)]
pub enum Arguments {
    /// A string of JSON.
    Text(String),
    /// The arguments object.
    Object(JsonObject),
}

impl Arguments {
    /// The arguments as a string of JSON.
    pub fn into_string(self) -> String {
        match self {
            Arguments::Text(s) => s,
            Arguments::Object(o) => Value::Object(o.0).to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| match v {
            Value::String(s) => Ok(Arguments::Text(s)),
            Value::Object(o) => Ok(Arguments::Object(JsonObject(o))),
            _ => Err("a string of JSON".into()),
        })
    }
}

/// An object field whose absence and wrong type are both reported as "missing" (an object
/// without which the enclosing value means nothing: a call's `function`).
#[derive(Clone, Debug, Default)]
pub struct ObjectOrMissing<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOrMissing<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = ObjectOrMissing<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(m)).map(ObjectOrMissing)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Err(E::custom(MISSING))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Err(E::custom(MISSING))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Err(E::custom(MISSING))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Err(E::custom(MISSING))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Err(E::custom(MISSING))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
                Err(de::Error::custom(MISSING))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// `tools`: the functions the model may call.
#[derive(Clone, Debug, Default, JsonSchema)]
#[schemars(transparent)]
pub struct Tools(#[schemars(length(min = 1))] pub Vec<Tool>);

impl<'de> Deserialize<'de> for Tools {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tools;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Tools, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = s.next_element()? {
                    out.push(x);
                }
                Ok(Tools(out))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Tools, E> {
                Err(E::custom(type_error(&not("an array", &Value::Bool(v)))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tools, E> {
                Err(E::custom(type_error(&not("an array", &Value::from(v)))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tools, E> {
                Err(E::custom(type_error(&not("an array", &Value::from(v)))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tools, E> {
                Err(E::custom(type_error(&not("an array", &Value::from(v)))))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Tools, E> {
                Err(E::custom(type_error(&not("an array", &Value::from("")))))
            }
            fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Tools, A::Error> {
                Err(de::Error::custom(type_error(&not("an array", &Value::Object(Default::default())))))
            }
        }
        d.deserialize_any(V)
    }
}

/// The only tool type this server runs.
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FunctionType {
    /// A function tool.
    Function,
}

/// One tool of `tools`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a tool object")]
pub struct Tool {
    /// `function` (the only type).
    #[serde(rename = "type")]
    #[schemars(with = "FunctionType")]
    pub kind: Option<String>,
    /// The function.
    #[schemars(with = "ToolFunction")]
    pub function: Option<ToolFunction>,
}

/// The function of a [`Tool`].
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct ToolFunction {
    /// The name the model calls it by.
    #[schemars(with = "String", regex(pattern = r"^[a-zA-Z0-9_-]{1,64}$"))]
    pub name: Option<String>,
    /// What it does (shown to the model).
    pub description: Option<String>,
    /// Accepted for compatibility: arguments always match `parameters` here.
    pub strict: Option<bool>,
    /// A JSON Schema of the arguments object (compiled strictly: a keyword that cannot be
    /// enforced is a 400). Default: an object with no properties.
    pub parameters: Option<Parameters>,
}

/// A function's `parameters` schema.
#[derive(Clone, Debug, Default, JsonSchema)]
#[schemars(transparent)]
pub struct Parameters(pub JsonObject);

impl<'de> Deserialize<'de> for Parameters {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d, |v| match v {
            Value::Object(o) => Ok(Parameters(JsonObject(o))),
            other => Err(not("an object", &other)),
        })
    }
}

/// The string values of `tool_choice`.
#[derive(Clone, Copy, Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// Never call a tool.
    None,
    /// Answer or call tools, as the model decides.
    Auto,
    /// Call at least one tool.
    Required,
}

/// `tool_choice`.
#[derive(Clone, Debug, JsonSchema)]
#[schemars(untagged)]
pub enum ToolChoiceIn {
    /// `none`, `auto` or `required`.
    Mode(#[schemars(with = "ToolChoiceMode")] String),
    /// Call this function.
    Function(NamedToolChoice),
}

impl<'de> Deserialize<'de> for ToolChoiceIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ToolChoiceIn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an object")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ToolChoiceIn, E> {
                Ok(ToolChoiceIn::Mode(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<ToolChoiceIn, A::Error> {
                NamedToolChoice::deserialize(MapAccessDeserializer::new(m)).map(ToolChoiceIn::Function)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ToolChoiceIn, E> {
                Err(E::custom(type_error(&not("a string or an object", &Value::Bool(v)))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ToolChoiceIn, E> {
                Err(E::custom(type_error(&not("a string or an object", &Value::from(v)))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ToolChoiceIn, E> {
                Err(E::custom(type_error(&not("a string or an object", &Value::from(v)))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ToolChoiceIn, E> {
                Err(E::custom(type_error(&not("a string or an object", &Value::from(v)))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<ToolChoiceIn, A::Error> {
                Err(de::Error::custom(type_error(&not("a string or an object", &Value::Array(Vec::new())))))
            }
        }
        d.deserialize_any(V)
    }
}

/// `tool_choice: {"type": "function", "function": {"name": ...}}`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
pub struct NamedToolChoice {
    /// `function`.
    #[serde(rename = "type")]
    #[schemars(with = "FunctionType")]
    pub kind: Option<String>,
    /// Which function (one of `tools`).
    #[schemars(with = "FunctionName")]
    pub function: Option<ObjectOrMissing<FunctionName>>,
}

/// `{"name": ...}` of a named tool choice.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
pub struct FunctionName {
    /// The function's name.
    #[schemars(with = "String")]
    pub name: Option<String>,
}
