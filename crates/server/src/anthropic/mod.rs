//! Anthropic's Messages API: `POST /v1/messages` (`?beta=true`, as Claude Code sends it, is
//! the same route: query strings are not part of it) and `POST /v1/messages/count_tokens`.
//!
//! A request is checked into the chat endpoint's [`crate::request::GenerationRequest`]
//! ([`convert`]), so it runs on the same engine with the same prompt, sampler chain, tool
//! grammar and prompt cache; its answer is read into Anthropic's events ([`events`]), which
//! are streamed ([`sse`]) or folded into the whole message ([`assemble`]). Errors are in
//! Anthropic's shape ([`errors`]).
//!
//! | module | job |
//! |---|---|
//! | [`body`] | the request bodies as typed values (serde + schemars) |
//! | [`convert`] | Anthropic fields checked and written as the chat request they stand for |
//! | [`events`] | engine events to `message_start` ... `message_stop` |
//! | [`assemble`] | the events folded into the whole `message` |
//! | [`sse`] | streamed or whole |
//! | [`errors`] | `{"type": "error", "error": {...}}` |

pub mod assemble;
pub mod body;
pub mod convert;
pub mod errors;
pub mod events;
pub mod sse;

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use schemars::JsonSchema;
use serde::Serialize;

use crate::errors::ApiError;
use crate::openai_types::json_response;
use crate::routes::generate::{check_model, read_object, start, Running};
use crate::state::AppState;
use crate::tools::{self, ToolFormat};

/// `POST /v1/messages`.
pub async fn messages(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    run(state, headers, body).await.unwrap_or_else(errors::response)
}

async fn run(state: Arc<AppState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let received = Instant::now();
    let map = read_object(&state, &headers, body).await?;
    check_model(&state, &map)?;
    // A body that does not decode is refused by `start`, naming the field.
    let omit_thinking =
        crate::body::decode::<body::MessagesBody>(&map).ok().and_then(|b| b.thinking).is_some_and(|t| t.omitted());
    let Running { req, meta, rx } = start(&state, map, convert::parse, "msg_", received).await?;
    if req.stream {
        Ok(sse::response(meta, rx, omit_thinking))
    } else {
        sse::collect(meta, rx, omit_thinking).await
    }
}

/// The answer of `POST /v1/messages/count_tokens`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TokenCount {
    /// Tokens of the rendered prompt (system, messages and tools, through the chat template).
    pub input_tokens: usize,
}

/// `POST /v1/messages/count_tokens`: the prompt's tokens, as `/v1/messages` would render it
/// (whether or not it fits the context).
pub async fn count_tokens(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    count(state, headers, body).await.unwrap_or_else(errors::response)
}

async fn count(state: Arc<AppState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let map = read_object(&state, &headers, body).await?;
    check_model(&state, &map)?;
    let ready = state.ready()?;
    let (model, template, defaults) = (ready.model.clone(), ready.template.clone(), state.config.defaults.clone());
    let n = tokio::task::spawn_blocking(move || {
        let req = convert::parse_count(&map, &defaults, model.as_ref())?;
        let Some(nucleus_runtime::Prompt::Chat(msgs)) = req.prompts.first() else {
            return Err(ApiError::internal("a messages request without messages"));
        };
        let format = ToolFormat::for_template(&template);
        tools::prompt::chat_tokens(model.as_ref(), &template, msgs, req.tools.as_ref(), format)
            .map(|t| t.len())
            .map_err(|e| ApiError::invalid_value("messages", e.to_string()))
    })
    .await
    .map_err(|e| ApiError::internal(format!("counting failed: {e}")))??;
    Ok(json_response(StatusCode::OK, &TokenCount { input_tokens: n }))
}
