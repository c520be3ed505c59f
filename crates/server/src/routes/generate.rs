//! `POST /v1/chat/completions` and `POST /v1/completions`: read the body (413 over the limit,
//! 400 for anything that is not a JSON object), check it, prepare the sequences off the async
//! threads, submit (429 when the queue is full), wait for slots, then stream or collect.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc::unbounded_channel;
use tokio_stream::StreamExt;

use crate::collect::{collect, failure};
use crate::engine::{Event, Job, SubmitError};
use crate::errors::ApiError;
use crate::openai_types::{new_id, unix_now};
use crate::prepare::prepare;
use crate::render::{Renderer, ResponseMeta};
use crate::request::{self, Endpoint};
use crate::state::AppState;
use crate::step_trace::{self, StepQueues};
use crate::streaming;

pub async fn chat(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    run(state, Endpoint::Chat, headers, body).await.unwrap_or_else(IntoResponse::into_response)
}

pub async fn completions(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    run(state, Endpoint::Completions, headers, body).await.unwrap_or_else(IntoResponse::into_response)
}

/// Bodies up to this size are read to the end even when over the limit, so that the client,
/// still sending, gets its 413 instead of a reset connection.
const DRAIN_MAX: usize = 64 << 20;

/// The body, at most `limit` bytes.
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > DRAIN_MAX.max(limit) as u64) {
        return Err(ApiError::too_large(limit));
    }
    let mut stream = body.into_data_stream();
    let mut buf = Vec::with_capacity(declared.map_or(0, |n| n.min(limit as u64) as usize));
    let (mut total, mut too_big) = (0usize, false);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ApiError::bad_json(format!("the body could not be read: {e}")))?;
        total += chunk.len();
        if total > limit {
            too_big = true;
            buf = Vec::new();
            if total > DRAIN_MAX {
                break;
            }
        } else {
            buf.extend_from_slice(&chunk);
        }
    }
    if too_big {
        return Err(ApiError::too_large(limit));
    }
    Ok(Bytes::from(buf))
}

async fn run(state: Arc<AppState>, endpoint: Endpoint, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let received = Instant::now();
    let bytes = read_body(&headers, body, state.config.max_body).await?;
    let ready = state.ready()?;
    let value: Value = serde_json::from_slice(&bytes).map_err(ApiError::bad_json)?;
    let Value::Object(map) = value else { return Err(ApiError::bad_json("the body is not a JSON object")) };
    match map.get("model") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if state.serves(m) => {}
        Some(Value::String(m)) => return Err(ApiError::model_not_found(m, &state.config.model_id)),
        Some(_) => return Err(ApiError::wrong_type("model", "a string")),
    }

    let model = ready.model.clone();
    let template = ready.template.clone();
    let model_id = state.config.model_id.clone();
    let defaults = state.config.defaults.clone();
    let (slot_ctx, parallel) = (ready.engine.slot_ctx(), ready.engine.parallel());
    let (req, prepared, steps) = tokio::task::spawn_blocking(move || {
        let req = request::parse(endpoint, &map, &defaults, model.as_ref())?;
        let trace = step_trace::parse(&map)?;
        let mut prepared = prepare(&req, model.as_ref(), &template, &model_id, slot_ctx, parallel)?;
        let steps = trace.map(|n| StepQueues::attach(n, &mut prepared.seqs));
        Ok::<_, ApiError>((req, prepared, steps))
    })
    .await
    .map_err(|e| ApiError::internal(format!("request preparation failed: {e}")))??;

    let meta = ResponseMeta {
        endpoint,
        id: new_id(if endpoint == Endpoint::Chat { "chatcmpl-" } else { "cmpl-" }),
        created: unix_now(),
        model: state.config.model_id.clone(),
        system_fingerprint: ready.fingerprint.clone(),
        choices: prepared.choices,
        prompt_tokens: prepared.prompt_tokens,
        logprobs: req.logprobs.is_some(),
        include_usage: req.include_usage,
        renderer: Renderer::new(ready.model.tokenizer(), req.post_sampling_probs),
        tool_format: prepared.tool_format,
        steps,
    };
    let (tx, mut rx) = unbounded_channel();
    let job = Job { seqs: prepared.seqs, events: tx, received };
    ready.engine.submit(job).map_err(|e| match e {
        SubmitError::QueueFull => ApiError::queue_full(state.config.queue),
        SubmitError::Closed => ApiError::unavailable("The server is shutting down."),
    })?;
    // Wait for slots, so that anything going wrong before generation is a plain error response.
    match rx.recv().await {
        Some(Event::Started) => {}
        Some(Event::Failed { message, bad_input, shutting_down }) => {
            return Err(failure(message, bad_input, shutting_down))
        }
        _ => return Err(ApiError::unavailable("The server is shutting down.")),
    }
    if req.stream {
        Ok(streaming::response(meta, rx))
    } else {
        collect(meta, rx).await
    }
}
