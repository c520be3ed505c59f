//! The bodies of llama-server's utility routes as typed values (serde + schemars, the same types
//! `/openapi.json` publishes), with llama-server's field names so tools written for it work.
//! Unknown fields are ignored, as llama-server does; a field of the wrong type is a 400 naming it
//! ([`crate::body::decode`]).

use schemars::JsonSchema;
use serde::de::{Deserialize, Deserializer};
use serde::Serialize;
use serde_json::Value;

use crate::body::scalars::{shaped, Integer};
use crate::body::shapes::{TokenId, TokenIds};

/// `POST /tokenize`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a JSON object")]
#[schemars(rename = "TokenizeRequest")]
pub struct TokenizeBody {
    /// The text to tokenize, or llama-server's mixed list: strings are tokenized, token ids
    /// kept as they are (only the first element gets the special tokens of `add_special`).
    #[schemars(with = "TokenizeContent")]
    pub content: Option<TokenizeContent>,
    /// Add the model's automatic special tokens (BOS, for models that want it). Default false.
    pub add_special: Option<bool>,
    /// Read special-token text (`<|im_start|>`) as the special token rather than as plain text.
    /// Default true.
    pub parse_special: Option<bool>,
    /// Answer `{"id", "piece"}` objects instead of bare ids. Default false.
    pub with_pieces: Option<bool>,
}

/// `content` of `POST /tokenize`.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum TokenizeContent {
    /// Text.
    Text(String),
    /// Strings and token ids, in order.
    Mixed(Vec<Segment>),
}

/// One element of a mixed `content` list.
#[derive(Clone, Debug, PartialEq, JsonSchema)]
#[schemars(untagged)]
pub enum Segment {
    /// Text, tokenized.
    Text(String),
    /// A token id, kept (checked against the vocabulary).
    Token(TokenId),
}

impl<'de> Deserialize<'de> for TokenizeContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const SHAPE: &str = "a string or an array of strings and token ids";
        shaped(d, |v| match v {
            Value::String(s) => Ok(TokenizeContent::Text(s)),
            Value::Array(items) => items
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(Segment::Text(s)),
                    Value::Number(n) => Ok(Segment::Token(TokenId(Integer(n)))),
                    _ => Err(SHAPE.to_string()),
                })
                .collect::<Result<_, _>>()
                .map(TokenizeContent::Mixed),
            _ => Err(SHAPE.into()),
        })
    }
}

/// `POST /detokenize`.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(expecting = "a JSON object")]
#[schemars(rename = "DetokenizeRequest")]
pub struct DetokenizeBody {
    /// The token ids to turn back into text (each in the vocabulary).
    #[schemars(with = "TokenIds")]
    pub tokens: Option<TokenIds>,
}

/// The answer of `POST /tokenize`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TokenizeResponse {
    /// The token ids, or (with `with_pieces`) each id with its piece.
    pub tokens: Tokens,
}

/// `tokens` of a [`TokenizeResponse`].
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Tokens {
    /// Bare ids.
    Ids(Vec<i32>),
    /// Ids with their pieces (`with_pieces: true`).
    Pieces(Vec<TokenPiece>),
}

/// One token with its piece.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TokenPiece {
    /// The token id.
    pub id: i32,
    /// The token's bytes (control tokens as their text).
    pub piece: Piece,
}

/// A token's bytes: a string when they are valid UTF-8, else the list of byte values (a token
/// may hold part of a character), as llama-server answers.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Piece {
    /// Valid UTF-8.
    Text(String),
    /// Byte values.
    Bytes(Vec<u8>),
}

impl Piece {
    /// The piece of `bytes`.
    pub fn of(bytes: Vec<u8>) -> Piece {
        match String::from_utf8(bytes) {
            Ok(s) => Piece::Text(s),
            Err(e) => Piece::Bytes(e.into_bytes()),
        }
    }
}

/// The answer of `POST /detokenize`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DetokenizeResponse {
    /// The tokens' text (control tokens as their text; bytes that form no character as U+FFFD).
    pub content: String,
}

/// The answer of `POST /apply-template`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ApplyTemplateResponse {
    /// The prompt exactly as `/v1/chat/completions` renders these messages (tools, template
    /// variables and all), before tokenization.
    pub prompt: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::decode;

    fn body(text: &str) -> serde_json::Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn content_is_text_or_a_mixed_list_and_bad_shapes_name_the_field() {
        let b: TokenizeBody = decode(&body(r#"{"content": "hi", "with_pieces": true}"#)).unwrap();
        assert_eq!(b.content, Some(TokenizeContent::Text("hi".into())));
        assert_eq!(b.with_pieces, Some(true));
        let b: TokenizeBody = decode(&body(r#"{"content": [1, "a"]}"#)).unwrap();
        let Some(TokenizeContent::Mixed(items)) = b.content else { panic!("mixed") };
        assert_eq!(items.len(), 2);
        for (text, param) in [
            (r#"{"content": true}"#, "content"),
            (r#"{"content": [null]}"#, "content"),
            (r#"{"content": "x", "add_special": "yes"}"#, "add_special"),
            (r#"{"content": "x", "parse_special": 1}"#, "parse_special"),
            (r#"{"content": "x", "with_pieces": []}"#, "with_pieces"),
        ] {
            let e = decode::<TokenizeBody>(&body(text)).unwrap_err();
            assert_eq!((e.param.as_deref(), e.code), (Some(param), Some("invalid_type")), "{text}");
        }
        let e = decode::<DetokenizeBody>(&body(r#"{"tokens": "1 2"}"#)).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tokens"));
        let e = decode::<DetokenizeBody>(&body(r#"{"tokens": [1, "2"]}"#)).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tokens"));
    }

    #[test]
    fn a_piece_is_text_when_it_is_utf8_else_bytes() {
        assert_eq!(Piece::of(b"hi".to_vec()), Piece::Text("hi".into()));
        assert_eq!(Piece::of(vec![0xc3]), Piece::Bytes(vec![0xc3]));
        assert_eq!(serde_json::to_string(&Piece::of(vec![0xc3])).unwrap(), "[195]");
    }
}
