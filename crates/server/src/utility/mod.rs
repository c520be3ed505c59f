//! llama-server's utility routes, with its field names so tools written for it work:
//! `POST /tokenize`, `POST /detokenize`, `POST /apply-template` and `GET /props`. Errors are
//! OpenAI's shape ([`ApiError`]); a bad field is a 400 naming it, a token id outside the
//! vocabulary a 400 naming its position.
//!
//! | module | job |
//! |---|---|
//! | [`body`] | the request and response bodies as typed values |
//! | [`props`] | the `/props` object from the configuration and the loaded model |

pub mod body;
pub mod props;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use nucleus_runtime::{Model, Prompt};
use nucleus_sampler::Token;
use serde::Serialize;

use crate::errors::ApiError;
use crate::fields::check_int;
use crate::openai_types::json_response;
use crate::request::{self, Endpoint};
use crate::routes::generate::{check_model, read_object};
use crate::state::AppState;
use crate::tools::{self, ToolFormat};
use body::{
    ApplyTemplateResponse, DetokenizeBody, DetokenizeResponse, Piece, Segment, TokenPiece, TokenizeBody,
    TokenizeContent, TokenizeResponse, Tokens,
};

/// `POST /tokenize`.
pub async fn tokenize(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    let run = async {
        let map = read_object(&state, &headers, body).await?;
        let b: TokenizeBody = crate::body::decode(&map)?;
        let model = state.ready()?.model.clone();
        blocking(move || tokenize_body(model.as_ref(), b)).await
    };
    answer(run.await)
}

/// `POST /detokenize`.
pub async fn detokenize(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    let run = async {
        let map = read_object(&state, &headers, body).await?;
        let b: DetokenizeBody = crate::body::decode(&map)?;
        let model = state.ready()?.model.clone();
        blocking(move || detokenize_body(model.as_ref(), b)).await
    };
    answer(run.await)
}

/// `POST /apply-template`: the body is a chat request, read by the chat parser (so every field
/// is checked as `/v1/chat/completions` checks it), and the answer is the prompt that route
/// would render for it: the same template, template variables, tools and tool format.
pub async fn apply_template(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    let run = async {
        let map = read_object(&state, &headers, body).await?;
        check_model(&state, &map)?;
        let ready = state.ready()?;
        let (model, template) = (ready.model.clone(), ready.template.clone());
        let (defaults, reasoning) = (state.config.defaults.clone(), state.config.reasoning.clone());
        blocking(move || {
            let req = request::parse(Endpoint::Chat, &map, &defaults, model.as_ref())?;
            let settings = req.reasoning.over(&reasoning);
            let template = crate::prepare::request_template(&template, &settings);
            let Some(Prompt::Chat(msgs)) = req.prompts.first() else {
                return Err(ApiError::internal("a chat request without messages"));
            };
            let format = ToolFormat::for_template(&template);
            let prompt = tools::prompt::chat_text(&template, msgs, req.tools.as_ref(), format)
                .map_err(|e| crate::prepare::prompt_error(e, "messages"))?;
            Ok(ApplyTemplateResponse { prompt })
        })
        .await
    };
    answer(run.await)
}

/// `GET /props`.
pub async fn get_props(State(state): State<Arc<AppState>>) -> Response {
    match state.ready() {
        Ok(ready) => json_response(StatusCode::OK, &props::props(&state.config, ready)),
        Err(e) => e.into_response(),
    }
}

/// Runs `f` off the async threads (tokenizing a long text takes a while).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, ApiError> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| ApiError::internal(format!("the request failed: {e}")))?
}

fn answer<T: Serialize>(r: Result<T, ApiError>) -> Response {
    match r {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => e.into_response(),
    }
}

/// A token id from the request, checked against the vocabulary (`param` names it).
fn token(param: &str, v: &crate::body::scalars::Integer, n_vocab: usize) -> Result<Token, ApiError> {
    check_int(param, &v.value(), 0, n_vocab as i64 - 1).map(|t| t as Token)
}

/// Tokenizes as llama-server does: text with `add_special` (default false) and `parse_special`
/// (default true); in a mixed list only the first element gets the special tokens.
pub fn tokenize_body(model: &dyn Model, b: TokenizeBody) -> Result<TokenizeResponse, ApiError> {
    let Some(content) = b.content else { return Err(ApiError::missing("content")) };
    let (add_special, parse_special) = (b.add_special.unwrap_or(false), b.parse_special.unwrap_or(true));
    let tok = model.tokenizer();
    let encode = |text: &str, add: bool| {
        tok.encode(text, add, parse_special).map_err(|e| ApiError::invalid_value("content", e.to_string()))
    };
    let ids = match content {
        TokenizeContent::Text(s) => encode(&s, add_special)?,
        TokenizeContent::Mixed(items) => {
            let mut ids = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Segment::Text(s) => ids.extend(encode(s, add_special && i == 0)?),
                    Segment::Token(t) => ids.push(token(&format!("content[{i}]"), &t.0, model.n_vocab())?),
                }
            }
            ids
        }
    };
    let tokens = if b.with_pieces.unwrap_or(false) {
        Tokens::Pieces(
            ids.iter()
                .map(|&id| {
                    let mut bytes = Vec::new();
                    tok.append_piece(id, true, &mut bytes);
                    TokenPiece { id, piece: Piece::of(bytes) }
                })
                .collect(),
        )
    } else {
        Tokens::Ids(ids)
    };
    Ok(TokenizeResponse { tokens })
}

/// The text of the tokens (control tokens as their text, as llama-server's `/detokenize`).
pub fn detokenize_body(model: &dyn Model, b: DetokenizeBody) -> Result<DetokenizeResponse, ApiError> {
    let Some(ids) = b.tokens else { return Err(ApiError::missing("tokens")) };
    let n_vocab = model.n_vocab();
    let ids = ids.0.iter().enumerate().map(|(i, t)| token(&format!("tokens[{i}]"), &t.0, n_vocab));
    let ids = ids.collect::<Result<Vec<_>, _>>()?;
    let tok = model.tokenizer();
    let mut bytes = Vec::new();
    for id in ids {
        tok.append_piece(id, true, &mut bytes);
    }
    Ok(DetokenizeResponse { content: String::from_utf8_lossy(&bytes).into_owned() })
}
