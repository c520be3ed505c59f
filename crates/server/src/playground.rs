//! The playground page served at `/`: static HTML, CSS and JavaScript compiled into the binary
//! (no CDN, works offline). The page streams generations with the `trace_steps` extension
//! ([`crate::step_trace`]) and draws each token's sampling step. The assets hold no data, so
//! they are served without the API key; the page sends the key with its API calls.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

const INDEX_HTML: &str = include_str!("../playground/index.html");
const PLAYGROUND_JS: &str = include_str!("../playground/playground.js");
const PLAYGROUND_CSS: &str = include_str!("../playground/playground.css");

/// The paths of the page's assets (open without the API key).
pub const PATHS: [&str; 4] = ["/", "/playground", "/playground.js", "/playground.css"];

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// `GET /`: the page.
pub async fn index() -> Response {
    asset(INDEX_HTML, "text/html; charset=utf-8")
}

/// `GET /playground.js`.
pub async fn script() -> Response {
    asset(PLAYGROUND_JS, "text/javascript; charset=utf-8")
}

/// `GET /playground.css`.
pub async fn style() -> Response {
    asset(PLAYGROUND_CSS, "text/css; charset=utf-8")
}

/// The page's routes, merged into the application's router.
pub fn routes<S: Clone + Send + Sync + 'static>() -> axum::Router<S> {
    use axum::routing::get;
    axum::Router::new()
        .route("/", get(index))
        .route("/playground", get(index))
        .route("/playground.js", get(script))
        .route("/playground.css", get(style))
}
