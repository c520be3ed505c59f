//! Streamed responses (server-sent events): the request's chunks ([`crate::chunks`]) written as
//! `data: <chunk>` lines, then `data: [DONE]`. A failure mid-stream is an
//! `data: {"error": ...}` event followed by `[DONE]`.

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

use crate::chunks::{Chunk, ChunkMaker};
use crate::engine::Event;
use crate::render::ResponseMeta;

/// The SSE body of one request.
pub struct SseStream {
    rx: UnboundedReceiver<Event>,
    maker: ChunkMaker,
    out: VecDeque<Bytes>,
    done: bool,
}

/// The streamed response.
pub fn response(meta: ResponseMeta, rx: UnboundedReceiver<Event>) -> Response {
    let stream = SseStream::new(meta, rx);
    let mut r = Response::new(Body::from_stream(stream));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// `data: <json>` of one value.
fn event(value: &impl Serialize) -> Bytes {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!("data: {json}\n\n"))
}

impl SseStream {
    fn new(meta: ResponseMeta, rx: UnboundedReceiver<Event>) -> Self {
        let (maker, opening) = ChunkMaker::new(meta, false);
        let mut s = SseStream { rx, maker, out: VecDeque::new(), done: false };
        s.write(opening);
        s
    }

    fn write(&mut self, chunks: Vec<Chunk>) {
        for c in chunks {
            self.out.push_back(match c {
                Chunk::Chat(c) => event(&c),
                Chunk::Text(c) => event(&c),
                Chunk::Failed(e) => event(&e.body()),
            });
        }
        if self.maker.done() && !self.done {
            self.out.push_back(Bytes::from_static(b"data: [DONE]\n\n"));
            self.done = true;
        }
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
            let mut chunks = Vec::new();
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(ev)) => this.maker.on_event(ev, &mut chunks),
                Poll::Ready(None) => this.maker.engine_gone(&mut chunks),
                Poll::Pending => return Poll::Pending,
            }
            this.write(chunks);
        }
    }
}
