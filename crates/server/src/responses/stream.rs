//! The Responses answer over a request's engine events: streamed as server-sent events
//! (`event: <type>` and `data: <event with sequence_number>`), or whole as the [`Fold`] of the
//! same events. Either way the finished response goes to the `on_done` hook (the store).

use std::collections::VecDeque;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::Response;
use tokio::sync::mpsc::UnboundedReceiver;

use super::events::{EventMaker, Fold};
use super::types::{ResponseObject, Sequenced, StreamEvent};
use crate::engine::Event;
use crate::errors::ApiError;
use crate::openai_types::json_response;
use crate::render::ResponseMeta;
use crate::sse::{self, EventSource, SseWriter};

/// Called once with the finished response (completed, incomplete or failed).
pub type OnDone = Box<dyn FnOnce(&ResponseObject) + Send>;

/// The whole response: the fold of every event the stream would have sent.
pub async fn collect(
    meta: ResponseMeta,
    shell: ResponseObject,
    rx: UnboundedReceiver<Event>,
    on_done: OnDone,
) -> Result<Response, ApiError> {
    let (maker, opening) = EventMaker::new(meta, shell.clone());
    let mut fold = Fold::new(shell);
    let maker = sse::drain(maker, opening, rx, |e| fold.apply(&e)).await;
    on_done(&fold.response);
    match maker.failed() {
        Some(e) => Err(e.clone()),
        None => Ok(json_response(StatusCode::OK, &fold.response)),
    }
}

/// The streamed response.
pub fn stream(meta: ResponseMeta, shell: ResponseObject, rx: UnboundedReceiver<Event>, on_done: OnDone) -> Response {
    let (maker, opening) = EventMaker::new(meta, shell);
    sse::response(maker, opening, rx, Numbered { sequence: 0, on_done: Some(on_done) })
}

/// The Responses SSE: `event: <type>` and `data: <event with sequence_number>`; the terminal
/// event's response goes to the hook.
struct Numbered {
    sequence: usize,
    on_done: Option<OnDone>,
}

impl SseWriter<StreamEvent> for Numbered {
    fn write(&mut self, e: StreamEvent, out: &mut VecDeque<Bytes>) {
        let json = serde_json::to_string(&Sequenced { event: &e, sequence_number: self.sequence })
            .unwrap_or_else(|_| "{}".into());
        self.sequence += 1;
        out.push_back(Bytes::from(format!("event: {}\ndata: {json}\n\n", e.name())));
        if let Some(r) = e.terminal() {
            if let Some(hook) = self.on_done.take() {
                hook(r);
            }
        }
    }
}

impl EventSource for EventMaker {
    type Item = StreamEvent;
    fn on_event(&mut self, ev: Event, out: &mut Vec<StreamEvent>) {
        EventMaker::on_event(self, ev, out)
    }
    fn engine_gone(&mut self, out: &mut Vec<StreamEvent>) {
        EventMaker::engine_gone(self, out)
    }
    fn done(&self) -> bool {
        EventMaker::done(self)
    }
}
