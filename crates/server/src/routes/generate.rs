//! `POST /v1/chat/completions` and `POST /v1/completions`: read the body (413 over the limit,
//! 400 for anything that is not a JSON object), check it, prepare the sequences off the async
//! threads, submit (429 when the queue is full), wait for slots, then stream or collect.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use nucleus_runtime::Model;
use nucleus_sampler::SamplingParams;
use serde_json::{Map, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_stream::StreamExt;

use crate::collect::{collect, failure};
use crate::engine::{Event, Job, SubmitError};
use crate::errors::ApiError;
use crate::openai_types::{new_id, unix_now};
use crate::prepare::prepare;
use crate::render::{Renderer, ResponseMeta};
use crate::request::{self, Endpoint};
use crate::speculative;
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

/// A request body read as a JSON object (413 over `--max-body`, 400 for anything else), once
/// the model is loaded (503 before).
pub(crate) async fn read_object(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Map<String, Value>, ApiError> {
    let bytes = read_body(headers, body, state.config.max_body).await?;
    state.ready()?;
    let value: Value = serde_json::from_slice(&bytes).map_err(ApiError::bad_json)?;
    let Value::Object(map) = value else { return Err(ApiError::bad_json("the body is not a JSON object")) };
    Ok(map)
}

/// Checks `model` (absent or null: the served one; another name: 404).
pub(crate) fn check_model(state: &AppState, map: &Map<String, Value>) -> Result<(), ApiError> {
    match map.get("model") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(m)) if state.serves(m) => Ok(()),
        Some(Value::String(m)) => Err(ApiError::model_not_found(m, &state.config.model_id)),
        Some(_) => Err(ApiError::wrong_type("model", "a string")),
    }
}

/// Reads a body into a [`GenerationRequest`] (off the async threads): the raw body, the server's
/// sampling defaults and the model.
pub(crate) type Parse =
    fn(&Map<String, Value>, &SamplingParams, &dyn Model) -> Result<request::GenerationRequest, ApiError>;

/// A request running on the engine: its checked form, what its responses share, and its events
/// (slots are held: `Event::Started` has been received).
pub(crate) struct Running {
    pub req: request::GenerationRequest,
    pub meta: ResponseMeta,
    pub rx: UnboundedReceiver<Event>,
}

/// Checks and prepares `map` (with `parse`), submits it (429 when the queue is full) and waits
/// for its slots, so that anything going wrong before generation is a plain error.
pub(crate) async fn start(
    state: &AppState,
    map: Map<String, Value>,
    parse: Parse,
    id_prefix: &str,
    received: Instant,
) -> Result<Running, ApiError> {
    let ready = state.ready()?;
    let model = ready.model.clone();
    let template = ready.template.clone();
    let model_id = state.config.model_id.clone();
    let defaults = state.config.defaults.clone();
    let (slot_ctx, parallel) = (ready.engine.slot_ctx(), ready.engine.parallel());
    let reasoning = state.config.reasoning.clone();
    let spec_defaults = state.config.speculative;
    let draft_model = ready.has_draft;
    let ngram_cache = state.ngram_cache.clone();
    let (req, prepared, steps) = tokio::task::spawn_blocking(move || {
        let req = parse(&map, &defaults, model.as_ref())?;
        let trace = step_trace::parse(&map)?;
        let can = speculative::Available { batch_invariant: model.batch_invariant(), draft_model };
        let spec = speculative::resolve(&req.speculative, &spec_defaults, can)?;
        let reasoning = req.reasoning.over(&reasoning);
        let mut prepared = prepare(&req, &reasoning, model.as_ref(), &template, &model_id, slot_ctx, parallel)?;
        if let Some((kind, opts)) = spec {
            speculative::attach(kind, opts, ngram_cache.as_ref(), &mut prepared.seqs);
        }
        let steps = trace.map(|n| StepQueues::attach(n, &mut prepared.seqs));
        Ok::<_, ApiError>((req, prepared, steps))
    })
    .await
    .map_err(|e| ApiError::internal(format!("request preparation failed: {e}")))??;

    let meta = ResponseMeta {
        endpoint: req.endpoint,
        id: new_id(id_prefix),
        created: unix_now(),
        model: state.config.model_id.clone(),
        system_fingerprint: ready.fingerprint.clone(),
        choices: prepared.choices,
        prompt_tokens: prepared.prompt_tokens,
        logprobs: req.logprobs.is_some(),
        include_usage: req.include_usage,
        renderer: Renderer::new(ready.model.tokenizer(), req.post_sampling_probs),
        tool_format: prepared.tool_format,
        reasoning: prepared.reasoning,
        steps,
    };
    let (tx, mut rx) = unbounded_channel();
    let job = Job { seqs: prepared.seqs, events: tx, received };
    ready.engine.submit(job).map_err(|e| match e {
        SubmitError::QueueFull => ApiError::queue_full(state.config.queue),
        SubmitError::Closed => ApiError::unavailable("The server is shutting down."),
    })?;
    match rx.recv().await {
        Some(Event::Started) => Ok(Running { req, meta, rx }),
        Some(Event::Failed { message, bad_input, shutting_down }) => Err(failure(message, bad_input, shutting_down)),
        _ => Err(ApiError::unavailable("The server is shutting down.")),
    }
}

fn parse_chat(
    map: &Map<String, Value>,
    d: &SamplingParams,
    m: &dyn Model,
) -> Result<request::GenerationRequest, ApiError> {
    request::parse(Endpoint::Chat, map, d, m)
}

fn parse_completions(
    map: &Map<String, Value>,
    d: &SamplingParams,
    m: &dyn Model,
) -> Result<request::GenerationRequest, ApiError> {
    request::parse(Endpoint::Completions, map, d, m)
}

async fn run(state: Arc<AppState>, endpoint: Endpoint, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let received = Instant::now();
    let map = read_object(&state, &headers, body).await?;
    check_model(&state, &map)?;
    let (parse, prefix): (Parse, _) = match endpoint {
        Endpoint::Chat => (parse_chat, "chatcmpl-"),
        Endpoint::Completions => (parse_completions, "cmpl-"),
    };
    let Running { req, meta, rx } = start(&state, map, parse, prefix, received).await?;
    if req.stream {
        Ok(streaming::response(meta, rx))
    } else {
        collect(meta, rx).await
    }
}
