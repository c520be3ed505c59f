//! Whole (non-streamed) responses: the request's events made into the chunks a stream would
//! send ([`crate::chunks`]) and folded into one `chat.completion` or `text_completion`
//! ([`crate::assemble`]), so the whole response is exactly what a client assembling the stream
//! reads.

use axum::http::StatusCode;
use axum::response::Response;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::assemble::Assembler;
use crate::chunks::ChunkMaker;
use crate::engine::Event;
use crate::errors::ApiError;
use crate::openai_types::json_response;
use crate::render::ResponseMeta;
use crate::request::Endpoint;

/// The error for an engine failure event.
pub fn failure(message: String, bad_input: bool, shutting_down: bool) -> ApiError {
    if bad_input {
        ApiError::invalid_value("sampling", message)
    } else if shutting_down {
        ApiError::unavailable(message)
    } else {
        ApiError::internal(message)
    }
}

/// Waits for every choice, then answers.
pub async fn collect(meta: ResponseMeta, rx: UnboundedReceiver<Event>) -> Result<Response, ApiError> {
    let (maker, opening) = ChunkMaker::new(meta, true);
    let mut acc = Assembler::default();
    let maker = crate::sse::drain(maker, opening, rx, |c| acc.add(c)).await;
    let meta = maker.meta();
    Ok(match meta.endpoint {
        Endpoint::Chat => json_response(StatusCode::OK, &acc.chat(meta)?),
        Endpoint::Completions => json_response(StatusCode::OK, &acc.text(meta)?),
    })
}
