//! Streamed responses (server-sent events): each engine event becomes `data: <chunk>` lines
//! in OpenAI's order — for chat the role chunk of every choice first, then text with the
//! logprobs of exactly the tokens in that chunk, a finish chunk per choice, the usage chunk
//! (only with `include_usage`), then `data: [DONE]`. A failure mid-stream is an
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

use crate::collect::failure;
use crate::engine::{Event, TokenOut};
use crate::openai_types::{
    ChatChunk, ChatLogprobs, ChunkChoice, Delta, FunctionDelta, LegacyLogprobs, LogprobEntry, StepEntry, TextChoice,
    TextCompletion, ToolCallDelta, Usage,
};
use crate::render::{finish_reason, ResponseMeta};
use crate::request::Endpoint;
use crate::tools::output::{ToolDelta, ToolParser};

#[derive(Default)]
struct ChoiceState {
    /// Chat: logprob entries of tokens whose text has not been sent yet.
    chat_pending: Vec<LogprobEntry>,
    /// Completions: tokens whose text has not been sent yet.
    legacy_pending: Vec<TokenOut>,
    /// Completions with echo and logprobs: the scored prompt tokens.
    prompt_scores: Vec<TokenOut>,
    /// Completions with echo: the prompt has been sent.
    echo_sent: bool,
    /// Character offset for legacy `text_offset`.
    offset: usize,
    finished: bool,
    /// With tools: the text read for calls.
    tools: Option<ToolParser>,
    /// With `trace_steps`: steps of tokens whose text has not been sent yet.
    steps_pending: Vec<StepEntry>,
}

/// The SSE body of one request.
pub struct SseStream {
    rx: UnboundedReceiver<Event>,
    meta: ResponseMeta,
    out: VecDeque<Bytes>,
    choices: Vec<ChoiceState>,
    finished: usize,
    completion_tokens: usize,
    /// Cached prompt tokens per choice.
    cached: Vec<usize>,
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

impl SseStream {
    fn new(meta: ResponseMeta, rx: UnboundedReceiver<Event>) -> Self {
        let n = meta.choices.len();
        let tool_format = meta.tool_format;
        let mut s = SseStream {
            rx,
            choices: (0..n)
                .map(|_| ChoiceState { tools: tool_format.map(ToolParser::new), ..ChoiceState::default() })
                .collect(),
            meta,
            out: VecDeque::new(),
            finished: 0,
            completion_tokens: 0,
            cached: vec![0; n],
            done: false,
        };
        for i in 0..n {
            match s.meta.endpoint {
                Endpoint::Chat => {
                    let delta = Delta { role: Some("assistant"), content: Some(String::new()), tool_calls: None };
                    s.chat_chunk(i, delta, None, None);
                }
                Endpoint::Completions => {
                    if s.meta.choices[i].echo_text.is_some() && !s.meta.logprobs {
                        s.send_echo(i);
                    }
                }
            }
        }
        s
    }

    fn push(&mut self, value: &impl Serialize) {
        let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
        self.out.push_back(Bytes::from(format!("data: {json}\n\n")));
    }

    fn usage_field(&self) -> Option<Option<Usage>> {
        self.meta.include_usage.then_some(None)
    }

    fn chat_chunk(&mut self, index: usize, delta: Delta, logprobs: Option<ChatLogprobs>, finish: Option<&'static str>) {
        let steps = self.take_steps(index);
        let choice = ChunkChoice { index, delta, logprobs, finish_reason: finish, steps };
        let chunk: ChatChunk = self.meta.completion("chat.completion.chunk", vec![choice], self.usage_field());
        self.push(&chunk);
    }

    fn text_chunk(
        &mut self,
        index: usize,
        text: String,
        logprobs: Option<LegacyLogprobs>,
        finish: Option<&'static str>,
    ) {
        let steps = self.take_steps(index);
        let choice = TextChoice { index, text, logprobs, finish_reason: finish, steps };
        let chunk: TextCompletion = self.meta.completion("text_completion", vec![choice], self.usage_field());
        self.push(&chunk);
    }

    /// Completions with echo: the prompt text (and its scores) as the choice's first chunk.
    fn send_echo(&mut self, i: usize) {
        let c = &mut self.choices[i];
        if c.echo_sent {
            return;
        }
        c.echo_sent = true;
        let Some(text) = self.meta.choices[i].echo_text.clone() else { return };
        let scores = std::mem::take(&mut c.prompt_scores);
        let logprobs = self.meta.logprobs.then(|| {
            let mut lp = LegacyLogprobs::default();
            let end = self.meta.renderer.legacy(&scores, 0, &mut lp);
            self.choices[i].offset = if scores.is_empty() { text.chars().count() } else { end };
            lp
        });
        if !self.meta.logprobs {
            self.choices[i].offset = text.chars().count();
        }
        self.text_chunk(i, text, logprobs, None);
    }

    /// Steps waiting for `i`'s next chunk (`None` when there are none).
    fn take_steps(&mut self, i: usize) -> Option<Vec<StepEntry>> {
        let c = self.choices.get_mut(i)?;
        (!c.steps_pending.is_empty()).then(|| std::mem::take(&mut c.steps_pending))
    }

    fn on_token(&mut self, i: usize, t: TokenOut) {
        if self.meta.endpoint == Endpoint::Completions {
            self.send_echo(i);
        }
        if let Some(q) = &self.meta.steps {
            if let Some(e) = q.entry(i, &t, &self.meta.renderer) {
                self.choices[i].steps_pending.push(e);
            }
        }
        let text = t.text.clone();
        match self.meta.endpoint {
            Endpoint::Chat => {
                if self.meta.logprobs {
                    if let Some(e) = self.meta.renderer.chat_entry(&t) {
                        self.choices[i].chat_pending.push(e);
                    }
                }
                if let Some(p) = self.choices[i].tools.as_mut() {
                    let mut deltas = Vec::new();
                    p.push(&text, &mut deltas);
                    self.send_tool_deltas(i, deltas);
                } else if !text.is_empty() {
                    let logprobs = self.take_chat_logprobs(i);
                    self.chat_chunk(i, Delta { role: None, content: Some(text), tool_calls: None }, logprobs, None);
                }
            }
            Endpoint::Completions => {
                if self.meta.logprobs {
                    self.choices[i].legacy_pending.push(t);
                }
                if !text.is_empty() {
                    let logprobs = self.take_legacy_logprobs(i);
                    self.text_chunk(i, text, logprobs, None);
                }
            }
        }
    }

    /// Content and call pieces as chunks; pending logprobs ride on the first.
    fn send_tool_deltas(&mut self, i: usize, deltas: Vec<ToolDelta>) {
        for d in deltas {
            let delta = match d {
                ToolDelta::Content(t) => Delta { role: None, content: Some(t), tool_calls: None },
                ToolDelta::CallStart { index, id, name } => {
                    let call = ToolCallDelta {
                        index,
                        id: Some(id),
                        kind: Some("function"),
                        function: FunctionDelta { name: Some(name), arguments: String::new() },
                    };
                    Delta { role: None, content: None, tool_calls: Some(vec![call]) }
                }
                ToolDelta::Args { index, text } => {
                    let call = ToolCallDelta {
                        index,
                        id: None,
                        kind: None,
                        function: FunctionDelta { name: None, arguments: text },
                    };
                    Delta { role: None, content: None, tool_calls: Some(vec![call]) }
                }
            };
            let logprobs = self.take_chat_logprobs(i);
            self.chat_chunk(i, delta, logprobs, None);
        }
    }

    fn take_chat_logprobs(&mut self, i: usize) -> Option<ChatLogprobs> {
        let content = std::mem::take(&mut self.choices[i].chat_pending);
        self.meta.logprobs.then_some(ChatLogprobs { content, refusal: None })
    }

    fn take_legacy_logprobs(&mut self, i: usize) -> Option<LegacyLogprobs> {
        if !self.meta.logprobs {
            return None;
        }
        let tokens = std::mem::take(&mut self.choices[i].legacy_pending);
        let mut lp = LegacyLogprobs::default();
        self.choices[i].offset = self.meta.renderer.legacy(&tokens, self.choices[i].offset, &mut lp);
        Some(lp)
    }

    fn on_finished(&mut self, i: usize, mut reason: &'static str, completion_tokens: usize) {
        if self.choices[i].finished {
            return;
        }
        match self.meta.endpoint {
            Endpoint::Chat => {
                if let Some(p) = self.choices[i].tools.as_mut() {
                    let mut deltas = Vec::new();
                    p.finish(&mut deltas);
                    if !p.calls().is_empty() && reason == "stop" {
                        reason = "tool_calls";
                    }
                    self.send_tool_deltas(i, deltas);
                }
                if !self.choices[i].chat_pending.is_empty() {
                    let logprobs = self.take_chat_logprobs(i);
                    self.chat_chunk(
                        i,
                        Delta { role: None, content: Some(String::new()), tool_calls: None },
                        logprobs,
                        None,
                    );
                }
                let logprobs = self.meta.logprobs.then(ChatLogprobs::default);
                self.chat_chunk(i, Delta::default(), logprobs, Some(reason));
            }
            Endpoint::Completions => {
                self.send_echo(i);
                let logprobs = self.take_legacy_logprobs(i);
                self.text_chunk(i, String::new(), logprobs, Some(reason));
            }
        }
        self.choices[i].finished = true;
        self.finished += 1;
        self.completion_tokens += completion_tokens;
        if self.finished == self.choices.len() {
            self.end();
        }
    }

    /// The usage chunk (when asked for) and `[DONE]`.
    fn end(&mut self) {
        if self.meta.include_usage {
            let cached = self.meta.cached_tokens(&self.cached);
            let usage = Some(Some(Usage::with_cached(self.meta.prompt_tokens, self.completion_tokens, cached)));
            match self.meta.endpoint {
                Endpoint::Chat => {
                    let chunk: ChatChunk = self.meta.completion("chat.completion.chunk", Vec::new(), usage);
                    self.push(&chunk);
                }
                Endpoint::Completions => {
                    let chunk: TextCompletion = self.meta.completion("text_completion", Vec::new(), usage);
                    self.push(&chunk);
                }
            }
        }
        self.out.push_back(Bytes::from_static(b"data: [DONE]\n\n"));
        self.done = true;
    }

    fn fail(&mut self, message: String, bad_input: bool, shutting_down: bool) {
        let err = failure(message, bad_input, shutting_down);
        let body = err.body();
        self.push(&body);
        self.out.push_back(Bytes::from_static(b"data: [DONE]\n\n"));
        self.done = true;
    }

    fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Started => {}
            Event::PromptToken { choice, token } => self.choices[choice].prompt_scores.push(token),
            Event::Token { choice, token } => self.on_token(choice, token),
            Event::Finished { choice, reason, completion_tokens, cached_tokens, .. } => {
                if let Some(c) = self.cached.get_mut(choice) {
                    *c = cached_tokens;
                }
                self.on_finished(choice, finish_reason(&reason), completion_tokens)
            }
            Event::Failed { message, bad_input, shutting_down } => self.fail(message, bad_input, shutting_down),
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
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(ev)) => this.on_event(ev),
                Poll::Ready(None) => {
                    this.fail("the engine stopped before the generation finished".into(), false, false)
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
