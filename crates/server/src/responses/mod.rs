//! The OpenAI Responses API: `POST /v1/responses` (whole or streamed), `GET` and `DELETE
//! /v1/responses/{id}`. A request is converted into the chat request it means
//! ([`convert`]) and runs on the same engine, sampler chain and prompt cache as
//! `/v1/chat/completions` (a seeded request gives the same tokens for the same rendered
//! prompt); its answer is read into the protocol-neutral pieces of [`crate::answer`] and
//! written as Responses events ([`events`]), streamed or folded into the whole response
//! ([`stream`]). Finished responses are kept in a bounded LRU ([`store`]) for chaining.

pub mod body;
pub mod convert;
pub mod events;
pub mod namespace;
pub mod store;
pub mod stream;
pub mod types;

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use nucleus_runtime::Model;
use nucleus_sampler::SamplingParams;
use serde_json::{json, Map, Value};

use crate::errors::ApiError;
use crate::openai_types::json_response;
use crate::request::{self, Endpoint, GenerationRequest};
use crate::routes::generate::{check_model, read_object, start, Running};
use crate::state::AppState;
use body::{Content, Item, Part, ResponsesBody};
use store::Stored;
use types::{OutputItem, OutputPart, ResponseObject, Status};

/// `POST /v1/responses`.
pub async fn create(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    run(state, headers, body).await.unwrap_or_else(IntoResponse::into_response)
}

/// `GET /v1/responses/{id}`: a kept response, or 404.
pub async fn retrieve(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    match state.responses.get(&id) {
        Some(s) => json_response(StatusCode::OK, &s.response),
        None => not_found(&id).into_response(),
    }
}

/// `DELETE /v1/responses/{id}`: forgets a kept response (404 when none is kept).
pub async fn delete(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    if state.responses.delete(&id) {
        json_response(StatusCode::OK, &json!({"id": id, "object": "response.deleted", "deleted": true}))
    } else {
        not_found(&id).into_response()
    }
}

/// 404 for a response id that is not kept (never stored, `store: false`, or dropped).
fn not_found(id: &str) -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        message: format!(
            "No response with id '{id}' is kept by this server (it was not stored, or was dropped; see --responses-store)."
        ),
        kind: "invalid_request_error",
        param: None,
        code: Some("not_found"),
    }
}

/// The converted chat body, read by the chat parser; its errors named as Responses fields.
fn parse(map: &Map<String, Value>, d: &SamplingParams, m: &dyn Model) -> Result<GenerationRequest, ApiError> {
    request::parse(Endpoint::Chat, map, d, m)
}

async fn run(state: Arc<AppState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let received = Instant::now();
    let map = read_object(&state, &headers, body).await?;
    check_model(&state, &map)?;
    let b: ResponsesBody = crate::body::decode(&map)?;
    let history = match &b.previous_response_id {
        Some(id) => state.responses.get(id).ok_or_else(|| not_found(id).param("previous_response_id"))?.items.clone(),
        None => Vec::new(),
    };
    let turn = convert::convert(&map, b, history)?;
    let paths = turn.tool_paths;
    let Running { req, meta, rx } =
        start(&state, turn.chat, parse, "resp_", received).await.map_err(|e| convert::rename_error(e, &paths))?;
    let shell = ResponseObject {
        id: meta.id.clone(),
        object: "response",
        created_at: meta.created,
        completed_at: None,
        status: Status::InProgress,
        model: meta.model.clone(),
        output: Vec::new(),
        usage: None,
        incomplete_details: None,
        error: None,
        echo: turn.echo,
    };
    let on_done = keep(state.clone(), turn.items, turn.store);
    if req.stream {
        Ok(stream::stream(meta, shell, rx, turn.names, on_done))
    } else {
        stream::collect(meta, shell, rx, turn.names, on_done).await
    }
}

/// The hook that keeps a finished response (with `store`, unless it failed) with its
/// conversation: `items` and its output.
fn keep(state: Arc<AppState>, items: Vec<Item>, store: bool) -> stream::OnDone {
    Box::new(move |r: &ResponseObject| {
        if !store || r.status == Status::Failed {
            return;
        }
        let mut items = items;
        items.extend(r.output.iter().map(as_input));
        state.responses.put(Stored { response: r.clone(), items });
    })
}

/// An output item as the input item that repeats it in a later turn.
fn as_input(o: &OutputItem) -> Item {
    match o {
        OutputItem::Message { content, .. } => Item {
            kind: Some("message".into()),
            role: Some("assistant".into()),
            content: Some(parts(content)),
            ..Item::default()
        },
        OutputItem::Reasoning { content, .. } => {
            Item { kind: Some("reasoning".into()), content: Some(parts(content)), ..Item::default() }
        }
        OutputItem::FunctionCall { call_id, name, namespace, arguments, .. } => Item {
            kind: Some("function_call".into()),
            call_id: Some(call_id.clone()),
            name: Some(name.clone()),
            namespace: namespace.clone(),
            arguments: Some(arguments.clone()),
            ..Item::default()
        },
    }
}

/// Output parts as the input parts that repeat them.
fn parts(content: &[OutputPart]) -> Content {
    let part = |p: &OutputPart| {
        let kind = match p {
            OutputPart::OutputText { .. } => "output_text",
            OutputPart::ReasoningText { .. } => "reasoning_text",
        };
        Part { kind: Some(kind.into()), text: Some(p.text().to_string()), refusal: None }
    };
    Content::Parts(content.iter().map(part).collect())
}
