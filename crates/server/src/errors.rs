//! [`ApiError`]: every error the server answers with, in OpenAI's shape
//! (`{"error": {"message", "type", "param", "code"}}`) and with the right status. Bad input is
//! always 4xx: the official clients retry every 5xx.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use crate::openai_types::json_response;

/// An error response.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// What went wrong and how to fix it.
    pub message: String,
    /// OpenAI's `type` (`invalid_request_error`, ...).
    pub kind: &'static str,
    /// The request field at fault, if one is.
    pub param: Option<String>,
    /// OpenAI's machine-readable `code` (`invalid_value`, `model_not_found`, ...).
    pub code: Option<&'static str>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, code: Option<&'static str>, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into(), kind, param: None, code }
    }

    /// Names the field at fault.
    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// Replaces the message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// 400 for a field with a bad value (`code` says which kind of bad).
    pub fn invalid(param: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", Some(code), message).param(param)
    }

    /// 400 for a field of the wrong JSON type.
    pub fn wrong_type(param: &str, expected: &str) -> Self {
        Self::invalid(param, "invalid_type", format!("Invalid type for '{param}': expected {expected}."))
    }

    /// 400 for a field whose value is not allowed.
    pub fn invalid_value(param: &str, message: impl Into<String>) -> Self {
        Self::invalid(param, "invalid_value", format!("Invalid '{param}': {}", message.into()))
    }

    /// 400 for a number above its maximum.
    pub fn above_max(param: &str, max: impl std::fmt::Display, got: impl std::fmt::Display, integer: bool) -> Self {
        let (code, what) =
            if integer { ("integer_above_max_value", "integer") } else { ("decimal_above_max_value", "decimal") };
        Self::invalid(
            param,
            code,
            format!("Invalid '{param}': {what} above maximum value. Expected a value <= {max}, but got {got} instead."),
        )
    }

    /// 400 for a number below its minimum.
    pub fn below_min(param: &str, min: impl std::fmt::Display, got: impl std::fmt::Display, integer: bool) -> Self {
        let (code, what) =
            if integer { ("integer_below_min_value", "integer") } else { ("decimal_below_min_value", "decimal") };
        Self::invalid(
            param,
            code,
            format!("Invalid '{param}': {what} below minimum value. Expected a value >= {min}, but got {got} instead."),
        )
    }

    /// 400 for a missing required field.
    pub fn missing(param: &str) -> Self {
        Self::invalid(param, "missing_required_parameter", format!("Missing required parameter: '{param}'."))
    }

    /// 400 for a field this server does not support (rather than accepting and ignoring it).
    pub fn unsupported(param: &str, message: impl Into<String>) -> Self {
        Self::invalid(param, "unsupported_parameter", message)
    }

    /// 400 for a body that is not JSON (or not UTF-8).
    pub fn bad_json(detail: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            Some("invalid_json"),
            format!("We could not parse the JSON body of your request ({detail}). The body must be a JSON object."),
        )
    }

    /// 400 for a prompt (plus requested tokens) that does not fit the context.
    pub fn context_exceeded(param: &str, message: impl Into<String>) -> Self {
        Self::invalid(param, "context_length_exceeded", message)
    }

    /// 404 for a model this server does not serve.
    pub fn model_not_found(requested: &str, served: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("model_not_found"),
            format!("The model '{requested}' does not exist. This server serves '{served}' (see GET /v1/models)."),
        )
        .param("model")
    }

    /// 404 for an unknown route; `routes` lists the served ones.
    pub fn no_route(method: &str, path: &str, routes: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("unknown_url"),
            format!("Unknown request URL: {method} {path}. Routes: {routes}."),
        )
    }

    /// 405 for a known route with the wrong method.
    pub fn method_not_allowed(method: &str, path: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request_error",
            Some("method_not_allowed"),
            format!("Method {method} is not allowed for {path}."),
        )
    }

    /// 413 for a body over the limit.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            Some("request_too_large"),
            format!("The request body is larger than this server accepts ({limit} bytes; see --max-body)."),
        )
    }

    /// 401 without the right API key.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            Some("invalid_api_key"),
            "Missing or incorrect API key: send the header 'Authorization: Bearer <key>' with the key given to --api-key / NUCLEUS_API_KEY.",
        )
    }

    /// 429 when every slot is busy and the queue is full.
    pub fn queue_full(queue: usize) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            Some("queue_full"),
            format!("The server is busy: every slot is in use and {queue} requests are already waiting. Retry later."),
        )
    }

    /// 503 while the model loads or the server shuts down.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable_error", None, message)
    }

    /// 500 for a fault of the server itself (never for bad input).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", None, message)
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let body = ErrorResponse {
            error: ErrorObject {
                message: self.message.clone(),
                kind: self.kind,
                param: self.param.clone(),
                code: self.code,
            },
        };
        serde_json::to_value(body).unwrap_or_default()
    }
}

/// Every error response's body (OpenAI's shape).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ErrorResponse {
    /// What went wrong.
    pub error: ErrorObject,
}

/// `error` of an [`ErrorResponse`].
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ErrorObject {
    /// What went wrong and how to fix it.
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `rate_limit_error`, `unavailable_error`
    /// or `server_error`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The request field at fault (`messages[0].content`), if one is.
    pub param: Option<String>,
    /// Machine-readable: `invalid_type`, `invalid_value`, `missing_required_parameter`,
    /// `model_not_found`, `queue_full`, ...
    pub code: Option<&'static str>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry = self.status == StatusCode::TOO_MANY_REQUESTS || self.status == StatusCode::SERVICE_UNAVAILABLE;
        let mut resp = json_response(self.status, &self.body());
        if retry {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp
    }
}
