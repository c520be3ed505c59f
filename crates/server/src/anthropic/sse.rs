//! The two ways a Messages answer leaves: streamed, its events written as server-sent events
//! (`event: <type>` and `data: <json>` lines; a failure mid-stream is an `event: error` in
//! Anthropic's error shape), or whole, the same events folded ([`super::assemble`]).

use std::collections::VecDeque;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedReceiver;

use super::assemble::Assembler;
use super::events::{EventMaker, Out};
use crate::engine::Event;
use crate::errors::ApiError;
use crate::openai_types::json_response;
use crate::render::ResponseMeta;
use crate::sse::{self, EventSource, SseWriter};

/// Waits for the answer, then sends it whole (thinking without its text when `omit_thinking`).
pub async fn collect(
    meta: ResponseMeta,
    rx: UnboundedReceiver<Event>,
    omit_thinking: bool,
) -> Result<Response, ApiError> {
    let (maker, opening) = EventMaker::new(meta);
    let maker = maker.omitting_thinking(omit_thinking);
    let mut acc = Assembler::default();
    sse::drain(maker, opening, rx, |o| acc.add(o)).await;
    Ok(json_response(StatusCode::OK, &acc.message()?))
}

/// The streamed answer (thinking without its text when `omit_thinking`).
pub fn response(meta: ResponseMeta, rx: UnboundedReceiver<Event>, omit_thinking: bool) -> Response {
    let (maker, opening) = EventMaker::new(meta);
    let maker = maker.omitting_thinking(omit_thinking);
    sse::response(maker, opening, rx, NamedEvents)
}

fn sse(name: &str, value: &impl Serialize) -> Bytes {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!("event: {name}\ndata: {json}\n\n"))
}

/// Anthropic's SSE: `event: <type>` and `data: <json>`; nothing after `message_stop`.
struct NamedEvents;

impl SseWriter<Out> for NamedEvents {
    fn write(&mut self, o: Out, out: &mut VecDeque<Bytes>) {
        out.push_back(match o {
            Out::Event(ev) => sse(ev.name(), &ev),
            Out::Failed(e) => sse("error", &super::errors::body(&e)),
        });
    }
}

impl EventSource for EventMaker {
    type Item = Out;
    fn on_event(&mut self, ev: Event, out: &mut Vec<Out>) {
        EventMaker::on_event(self, ev, out)
    }
    fn engine_gone(&mut self, out: &mut Vec<Out>) {
        EventMaker::engine_gone(self, out)
    }
    fn done(&self) -> bool {
        EventMaker::done(self)
    }
}
