//! The HTTP surface: routes, the API-key check, per-route request counting, and OpenAI-shaped
//! answers for unknown routes and methods.

pub(crate) mod generate;
pub(crate) mod health;
mod models;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, MethodRouter};
use axum::Router;

use crate::errors::ApiError;
use crate::state::AppState;

/// Every route with its method and handler. The router serves exactly these, and
/// `GET /openapi.json` describes each of them ([`crate::openapi`]).
fn table() -> Vec<(&'static str, Method, MethodRouter<Arc<AppState>>)> {
    vec![
        ("/v1/chat/completions", Method::POST, post(generate::chat)),
        ("/chat/completions", Method::POST, post(generate::chat)),
        ("/v1/completions", Method::POST, post(generate::completions)),
        ("/completions", Method::POST, post(generate::completions)),
        ("/v1/responses", Method::POST, post(crate::responses::create)),
        ("/responses", Method::POST, post(crate::responses::create)),
        ("/v1/responses/{id}", Method::GET, get(crate::responses::retrieve)),
        ("/v1/responses/{id}", Method::DELETE, delete(crate::responses::delete)),
        ("/v1/messages", Method::POST, post(crate::anthropic::messages)),
        ("/v1/messages/count_tokens", Method::POST, post(crate::anthropic::count_tokens)),
        ("/tokenize", Method::POST, post(crate::utility::tokenize)),
        ("/detokenize", Method::POST, post(crate::utility::detokenize)),
        ("/apply-template", Method::POST, post(crate::utility::apply_template)),
        ("/props", Method::GET, get(crate::utility::get_props)),
        ("/v1/models", Method::GET, get(models::list)),
        ("/models", Method::GET, get(models::list)),
        ("/health", Method::GET, get(health::health)),
        ("/v1/health", Method::GET, get(health::health)),
        ("/metrics", Method::GET, get(health::metrics)),
        ("/openapi.json", Method::GET, get(openapi)),
    ]
}

/// The routes served, as (path, method): the table's and the playground page's.
pub fn served() -> Vec<(&'static str, Method)> {
    let page = crate::playground::PATHS.iter().map(|p| (*p, Method::GET));
    table().into_iter().map(|(path, method, _)| (path, method)).chain(page).collect()
}

/// `GET /openapi.json`.
async fn openapi() -> Response {
    let mut r = crate::openapi::document().into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// The application.
pub fn router(state: Arc<AppState>) -> Router {
    table()
        .into_iter()
        .fold(Router::new(), |r, (path, _, handler)| r.route(path, handler))
        .merge(crate::playground::routes())
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .layer(middleware::from_fn_with_state(state.clone(), count))
        .with_state(state)
}

/// Paths served under a second name (listed once in the 404's list of routes).
const ALIASES: &[&str] = &[
    "/chat/completions",
    "/completions",
    "/responses",
    "/models",
    "/v1/health",
    "/playground",
    "/playground.js",
    "/playground.css",
];

/// The routes a 404 lists, `METHOD /path` each, aliases left out: from the table, so the list
/// is always current.
fn route_list() -> String {
    let routes = served().into_iter().filter(|(path, _)| !ALIASES.contains(path));
    routes.map(|(path, method)| format!("{method} {path}")).collect::<Vec<_>>().join(", ")
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::no_route(method.as_str(), uri.path(), &route_list())
}

async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    ApiError::method_not_allowed(method.as_str(), uri.path())
}

/// With an API key configured, everything but `/health` needs `Authorization: Bearer <key>`
/// or (as Anthropic's clients send it) `x-api-key: <key>`.
async fn auth(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = &state.config.api_key {
        let path = req.uri().path();
        let open = path == "/health" || path == "/v1/health" || crate::playground::PATHS.contains(&path);
        if !open {
            let header_text = |name| req.headers().get(name).and_then(|v: &HeaderValue| v.to_str().ok());
            let bearer = header_text(header::AUTHORIZATION).and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
            let x_api_key = header_text(header::HeaderName::from_static("x-api-key")).map(str::trim);
            let matches = |g: Option<&str>| g.is_some_and(|g| constant_time_eq(g.as_bytes(), key.as_bytes()));
            if !matches(bearer) && !matches(x_api_key) {
                if path.starts_with("/v1/messages") {
                    return crate::anthropic::errors::unauthorized();
                }
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
        "/v1/responses" | "/responses" => "/v1/responses",
        p if p.starts_with("/v1/responses/") => "/v1/responses/{id}",
        "/v1/messages" => "/v1/messages",
        "/v1/messages/count_tokens" => "/v1/messages/count_tokens",
        "/tokenize" => "/tokenize",
        "/detokenize" => "/detokenize",
        "/apply-template" => "/apply-template",
        "/props" => "/props",
        "/v1/models" | "/models" => "/v1/models",
        "/health" | "/v1/health" => "/health",
        "/metrics" => "/metrics",
        "/openapi.json" => "/openapi.json",
        "/" | "/playground" | "/playground.js" | "/playground.css" => "/playground",
        _ => "other",
    };
    let resp = next.run(req).await;
    state.metrics.request(route, resp.status().as_u16());
    resp
}
