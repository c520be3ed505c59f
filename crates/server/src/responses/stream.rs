//! The Responses answer over a request's engine events: streamed as server-sent events
//! (`event: <type>` and `data: <event with sequence_number>`), or whole as the [`Fold`] of the
//! same events. Either way the finished response goes to the `on_done` hook (the store).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_stream::Stream;

use super::events::{EventMaker, Fold};
use super::types::{ResponseObject, Sequenced, StreamEvent};
use crate::engine::Event;
use crate::errors::ApiError;
use crate::openai_types::json_response;
use crate::render::ResponseMeta;

/// Called once with the finished response (completed, incomplete or failed).
pub type OnDone = Box<dyn FnOnce(&ResponseObject) + Send>;

/// The whole response: the fold of every event the stream would have sent.
pub async fn collect(
    meta: ResponseMeta,
    shell: ResponseObject,
    mut rx: UnboundedReceiver<Event>,
    on_done: OnDone,
) -> Result<Response, ApiError> {
    let (mut maker, opening) = EventMaker::new(meta, shell.clone());
    let mut fold = Fold::new(shell);
    opening.iter().for_each(|e| fold.apply(e));
    let mut events = Vec::new();
    while !maker.done() {
        match rx.recv().await {
            Some(ev) => maker.on_event(ev, &mut events),
            None => maker.engine_gone(&mut events),
        }
        events.drain(..).for_each(|e| fold.apply(&e));
    }
    on_done(&fold.response);
    match maker.failed() {
        Some(e) => Err(e.clone()),
        None => Ok(json_response(StatusCode::OK, &fold.response)),
    }
}

/// The SSE body of one request.
struct SseStream {
    rx: UnboundedReceiver<Event>,
    maker: EventMaker,
    out: VecDeque<Bytes>,
    sequence: usize,
    on_done: Option<OnDone>,
    done: bool,
}

/// The streamed response.
pub fn stream(meta: ResponseMeta, shell: ResponseObject, rx: UnboundedReceiver<Event>, on_done: OnDone) -> Response {
    let (maker, opening) = EventMaker::new(meta, shell);
    let mut s = SseStream { rx, maker, out: VecDeque::new(), sequence: 0, on_done: Some(on_done), done: false };
    s.write(opening);
    let mut r = Response::new(Body::from_stream(s));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

impl SseStream {
    fn write(&mut self, events: Vec<StreamEvent>) {
        for e in events {
            let json = serde_json::to_string(&Sequenced { event: &e, sequence_number: self.sequence })
                .unwrap_or_else(|_| "{}".into());
            self.sequence += 1;
            self.out.push_back(Bytes::from(format!("event: {}\ndata: {json}\n\n", e.name())));
            if let Some(r) = e.terminal() {
                if let Some(hook) = self.on_done.take() {
                    hook(r);
                }
            }
        }
        self.done = self.maker.done();
    }
}

impl Stream for SseStream {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.out.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            let mut events = Vec::new();
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(ev)) => this.maker.on_event(ev, &mut events),
                Poll::Ready(None) => this.maker.engine_gone(&mut events),
                Poll::Pending => return Poll::Pending,
            }
            this.write(events);
        }
    }
}
