//! The HTTP surface: routes, the API-key check, per-route request counting, and OpenAI-shaped
//! answers for unknown routes and methods.

mod generate;
mod health;
mod models;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, Method, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::errors::ApiError;
use crate::state::AppState;

/// The application.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(generate::chat))
        .route("/chat/completions", post(generate::chat))
        .route("/v1/completions", post(generate::completions))
        .route("/completions", post(generate::completions))
        .route("/v1/models", get(models::list))
        .route("/models", get(models::list))
        .route("/health", get(health::health))
        .route("/v1/health", get(health::health))
        .route("/metrics", get(health::metrics))
        .merge(crate::playground::routes())
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .layer(middleware::from_fn_with_state(state.clone(), count))
        .with_state(state)
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::no_route(method.as_str(), uri.path())
}

async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    ApiError::method_not_allowed(method.as_str(), uri.path())
}

/// With an API key configured, everything but `/health` needs `Authorization: Bearer <key>`.
async fn auth(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = &state.config.api_key {
        let path = req.uri().path();
        let open = path == "/health" || path == "/v1/health" || crate::playground::PATHS.contains(&path);
        if !open {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim);
            if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), key.as_bytes())) {
                return ApiError::unauthorized().into_response();
            }
        }
    }
    next.run(req).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Counts requests by route and status for `/metrics`.
async fn count(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let route = match req.uri().path() {
        "/v1/chat/completions" | "/chat/completions" => "/v1/chat/completions",
        "/v1/completions" | "/completions" => "/v1/completions",
        "/v1/models" | "/models" => "/v1/models",
        "/health" | "/v1/health" => "/health",
        "/metrics" => "/metrics",
        "/" | "/playground" | "/playground.js" | "/playground.css" => "/playground",
        _ => "other",
    };
    let resp = next.run(req).await;
    state.metrics.request(route, resp.status().as_u16());
    resp
}
