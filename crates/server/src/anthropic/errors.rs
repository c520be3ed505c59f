//! Errors in Anthropic's shape, `{"type": "error", "error": {"type", "message"}}`, with the
//! status of the server's [`ApiError`] and the error type Anthropic gives that status, so the
//! SDKs raise their typed exceptions (`BadRequestError`, `NotFoundError`, ...).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use schemars::JsonSchema;
use serde::Serialize;

use crate::errors::ApiError;
use crate::openai_types::json_response;

/// Every error body of the Messages routes.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AnthropicErrorResponse {
    /// `error`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// What went wrong.
    pub error: AnthropicError,
}

/// `error` of an [`AnthropicErrorResponse`].
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AnthropicError {
    /// `invalid_request_error` (400), `authentication_error` (401), `permission_error` (403),
    /// `not_found_error` (404), `request_too_large` (413), `rate_limit_error` (429),
    /// `api_error` (500), `overloaded_error` (503).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// What went wrong and how to fix it (naming the field at fault).
    pub message: String,
}

/// Anthropic's error type for a status.
pub fn error_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        s if s >= 500 => "api_error",
        _ => "invalid_request_error",
    }
}

/// The body of `e`.
pub fn body(e: &ApiError) -> AnthropicErrorResponse {
    let message = match &e.param {
        Some(p) if !e.message.contains(p.as_str()) => format!("{p}: {}", e.message),
        _ => e.message.clone(),
    };
    AnthropicErrorResponse { kind: "error", error: AnthropicError { kind: error_type(e.status), message } }
}

/// The response for `e` (with `Retry-After` on 429 and 503, as the chat routes send it).
pub fn response(e: ApiError) -> Response {
    let mut r = json_response(e.status, &body(&e));
    if e.status == StatusCode::TOO_MANY_REQUESTS || e.status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

/// 401 for a missing or wrong key, saying both headers the Messages routes take.
pub fn unauthorized() -> Response {
    response(ApiError::unauthorized().with_message(
        "Missing or incorrect API key: send the header 'x-api-key: <key>' (or 'Authorization: Bearer <key>') with the key given to --api-key / NUCLEUS_API_KEY.",
    ))
}
