//! `GET /health` (503 while the model loads, 200 when ready) and `GET /metrics`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use crate::openai_types::json_response;
use crate::state::AppState;

/// `GET /health` when the model is loaded.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct HealthStatus {
    /// `ok`.
    pub status: &'static str,
}

pub async fn health(State(state): State<Arc<AppState>>) -> Response {
    match state.ready() {
        Ok(_) => json_response(StatusCode::OK, &HealthStatus { status: "ok" }),
        Err(e) => e.into_response(),
    }
}

pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let mut r = state.metrics.render().into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    r
}
