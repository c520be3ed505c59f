//! The two ways a Messages answer leaves: streamed, its events written as server-sent events
//! (`event: <type>` and `data: <json>` lines; a failure mid-stream is an `event: error` in
//! Anthropic's error shape), or whole, the same events folded ([`super::assemble`]).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_stream::Stream;

use super::assemble::Assembler;
use super::events::{EventMaker, Out};
use crate::engine::Event;
use crate::errors::ApiError;
use crate::openai_types::json_response;
use crate::render::ResponseMeta;

/// Waits for the answer, then sends it whole.
pub async fn collect(meta: ResponseMeta, mut rx: UnboundedReceiver<Event>) -> Result<Response, ApiError> {
    let (mut maker, opening) = EventMaker::new(meta);
    let mut acc = Assembler::default();
    opening.into_iter().for_each(|o| acc.add(o));
    let mut outs = Vec::new();
    while !maker.done() {
        match rx.recv().await {
            Some(ev) => maker.on_event(ev, &mut outs),
            None => maker.engine_gone(&mut outs),
        }
        outs.drain(..).for_each(|o| acc.add(o));
    }
    Ok(json_response(StatusCode::OK, &acc.message()?))
}

/// The streamed answer.
pub fn response(meta: ResponseMeta, rx: UnboundedReceiver<Event>) -> Response {
    let (maker, opening) = EventMaker::new(meta);
    let mut s = Events { rx, maker, out: VecDeque::new() };
    s.write(opening);
    let mut r = Response::new(Body::from_stream(s));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// The SSE body of one answer.
struct Events {
    rx: UnboundedReceiver<Event>,
    maker: EventMaker,
    out: VecDeque<Bytes>,
}

fn sse(name: &str, value: &impl Serialize) -> Bytes {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!("event: {name}\ndata: {json}\n\n"))
}

impl Events {
    fn write(&mut self, outs: Vec<Out>) {
        for o in outs {
            self.out.push_back(match o {
                Out::Event(ev) => sse(ev.name(), &ev),
                Out::Failed(e) => sse("error", &super::errors::body(&e)),
            });
        }
    }
}

impl Stream for Events {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.out.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if this.maker.done() {
                return Poll::Ready(None);
            }
            let mut outs = Vec::new();
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(ev)) => this.maker.on_event(ev, &mut outs),
                Poll::Ready(None) => this.maker.engine_gone(&mut outs),
                Poll::Pending => return Poll::Pending,
            }
            this.write(outs);
        }
    }
}
