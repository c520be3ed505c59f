//! The Responses answer over a request's engine events: streamed as server-sent events
//! (`event: <type>` and `data: <event with sequence_number>`), or whole as the [`Fold`] of the
//! same events. Either way the finished response goes to the `on_done` hook (the store).

use std::collections::VecDeque;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::Response;
use tokio::sync::mpsc::UnboundedReceiver;

use super::events::{EventMaker, Fold};
use super::namespace::Namespaces;
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
    names: Namespaces,
    on_done: OnDone,
) -> Result<Response, ApiError> {
    let (maker, opening) = Restoring::new(meta, shell.clone(), names);
    let mut fold = Fold::new(shell);
    let source = sse::drain(maker, opening, rx, |e| fold.apply(&e)).await;
    on_done(&fold.response);
    match source.maker.failed() {
        Some(e) => Err(e.clone()),
        None => Ok(json_response(StatusCode::OK, &fold.response)),
    }
}

/// The streamed response.
pub fn stream(
    meta: ResponseMeta,
    shell: ResponseObject,
    rx: UnboundedReceiver<Event>,
    names: Namespaces,
    on_done: OnDone,
) -> Response {
    let (maker, opening) = Restoring::new(meta, shell, names);
    sse::response(maker, opening, rx, Numbered { sequence: 0, on_done: Some(on_done) })
}

/// The event maker, with calls to `namespace` members given back their own names
/// ([`Namespaces::restore`]) before anything sees them.
struct Restoring {
    maker: EventMaker,
    names: Namespaces,
}

impl Restoring {
    fn new(meta: ResponseMeta, shell: ResponseObject, names: Namespaces) -> (Self, Vec<StreamEvent>) {
        let (maker, opening) = EventMaker::new(meta, shell);
        (Restoring { maker, names }, opening)
    }

    fn restore(&self, from: usize, out: &mut [StreamEvent]) {
        if !self.names.is_empty() {
            out[from..].iter_mut().for_each(|e| self.names.restore(e));
        }
    }
}

impl EventSource for Restoring {
    type Item = StreamEvent;
    fn on_event(&mut self, ev: Event, out: &mut Vec<StreamEvent>) {
        let from = out.len();
        self.maker.on_event(ev, out);
        self.restore(from, out);
    }
    fn engine_gone(&mut self, out: &mut Vec<StreamEvent>) {
        let from = out.len();
        self.maker.engine_gone(out);
        self.restore(from, out);
    }
    fn done(&self) -> bool {
        self.maker.done()
    }
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
