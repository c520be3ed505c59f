//! What every API's answer shares on its way out: an [`EventSource`] (one per API: OpenAI chat
//! and completions chunks, Anthropic events, Responses events) turns a request's engine events
//! into that API's items; [`response`] writes them as server-sent events as they come, and
//! [`drain`] feeds every item to a fold for the whole answer — the same items either way.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_stream::Stream;

use crate::engine::Event;

/// Turns one request's engine events into the items of its API's stream.
pub trait EventSource: Send + Unpin + 'static {
    /// A chunk or event of the API.
    type Item;
    /// The items `ev` adds, appended to `out`.
    fn on_event(&mut self, ev: Event, out: &mut Vec<Self::Item>);
    /// The engine went away before the request finished: the failure's items.
    fn engine_gone(&mut self, out: &mut Vec<Self::Item>);
    /// Every item has been given: nothing follows.
    fn done(&self) -> bool;
}

/// Writes an item as SSE bytes (an item may write none, or the hook may act on it).
pub trait SseWriter<I>: Send + Unpin + 'static {
    /// Appends the bytes of `item` to `out`.
    fn write(&mut self, item: I, out: &mut VecDeque<Bytes>);
    /// The source is done: bytes that end the stream (`data: [DONE]`), if any.
    fn end(&mut self, _out: &mut VecDeque<Bytes>) {}
}

/// Feeds every item of `source` (after `opening`) to `sink` until the request is done.
pub async fn drain<S: EventSource>(
    mut source: S,
    opening: Vec<S::Item>,
    mut rx: UnboundedReceiver<Event>,
    mut sink: impl FnMut(S::Item),
) -> S {
    opening.into_iter().for_each(&mut sink);
    let mut items = Vec::new();
    while !source.done() {
        match rx.recv().await {
            Some(ev) => source.on_event(ev, &mut items),
            None => source.engine_gone(&mut items),
        }
        items.drain(..).for_each(&mut sink);
    }
    source
}

/// The streamed response: `source`'s items (after `opening`) written by `writer` as they come.
pub fn response<S: EventSource, W: SseWriter<S::Item>>(
    source: S,
    opening: Vec<S::Item>,
    rx: UnboundedReceiver<Event>,
    writer: W,
) -> Response {
    let mut body = SseBody { rx, source, writer, out: VecDeque::new(), ended: false };
    body.write(opening);
    let mut r = Response::new(Body::from_stream(body));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// The SSE body of one request.
struct SseBody<S, W> {
    rx: UnboundedReceiver<Event>,
    source: S,
    writer: W,
    out: VecDeque<Bytes>,
    ended: bool,
}

impl<S: EventSource, W: SseWriter<S::Item>> SseBody<S, W> {
    fn write(&mut self, items: Vec<S::Item>) {
        for i in items {
            self.writer.write(i, &mut self.out);
        }
        if self.source.done() && !self.ended {
            self.writer.end(&mut self.out);
            self.ended = true;
        }
    }
}

impl<S: EventSource, W: SseWriter<S::Item>> Stream for SseBody<S, W> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.out.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            let mut items = Vec::new();
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(ev)) => this.source.on_event(ev, &mut items),
                Poll::Ready(None) => this.source.engine_gone(&mut items),
                Poll::Pending => return Poll::Pending,
            }
            this.write(items);
        }
    }
}
