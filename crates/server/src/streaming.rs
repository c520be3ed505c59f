//! Streamed OpenAI responses (server-sent events): the request's chunks ([`crate::chunks`])
//! written as `data: <chunk>` lines, then `data: [DONE]`. A failure mid-stream is an
//! `data: {"error": ...}` event followed by `[DONE]`.

use std::collections::VecDeque;

use axum::body::Bytes;
use axum::response::Response;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::chunks::{Chunk, ChunkMaker};
use crate::engine::Event;
use crate::render::ResponseMeta;
use crate::sse::{self, SseWriter};

/// The streamed response.
pub fn response(meta: ResponseMeta, rx: UnboundedReceiver<Event>) -> Response {
    let (maker, opening) = ChunkMaker::new(meta, false);
    sse::response(maker, opening, rx, DataLines)
}

/// `data: <json>` of one value.
fn event(value: &impl Serialize) -> Bytes {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!("data: {json}\n\n"))
}

/// OpenAI's SSE: `data:` lines only, ended by `[DONE]`.
struct DataLines;

impl SseWriter<Chunk> for DataLines {
    fn write(&mut self, chunk: Chunk, out: &mut VecDeque<Bytes>) {
        out.push_back(match chunk {
            Chunk::Chat(c) => event(&c),
            Chunk::Text(c) => event(&c),
            Chunk::Failed(e) => event(&e.body()),
        });
    }

    fn end(&mut self, out: &mut VecDeque<Bytes>) {
        out.push_back(Bytes::from_static(b"data: [DONE]\n\n"));
    }
}
