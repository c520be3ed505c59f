//! The OpenAI stream of one request as values: each engine event becomes the chunks OpenAI
//! sends, in its order — for chat the role chunk of every choice first, then text or tool-call
//! pieces with the logprobs (and `trace_steps` steps) of exactly the tokens they carry, a
//! finish chunk per choice, the usage chunk. [`crate::streaming`] writes these chunks as
//! server-sent events; [`crate::collect`] folds the very same chunks into the whole response
//! ([`crate::assemble`]), so the two cannot say different things.

use crate::answer::{AnswerReader, Ending, Piece};
use crate::collect::failure;
use crate::engine::{Event, TokenOut};
use crate::errors::ApiError;
use crate::openai_types::{
    ChatChunk, ChatLogprobs, ChunkChoice, CompletionTokensDetails, Delta, FunctionDelta, LegacyLogprobs, LogprobEntry,
    SpeculativeUsage, StepEntry, TextChoice, TextCompletion, ToolCallDelta, Usage,
};
use crate::render::ResponseMeta;
use crate::request::Endpoint;
use nucleus_runtime::SpecStats;

/// One chunk of the stream.
#[derive(Clone, Debug)]
pub enum Chunk {
    /// `chat.completion.chunk`.
    Chat(ChatChunk),
    /// `text_completion` (a stream chunk).
    Text(TextCompletion),
    /// The request failed; nothing follows.
    Failed(ApiError),
}

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
    /// The text read into pieces (for calls, with tools).
    answer: Option<AnswerReader>,
    /// With `trace_steps`: steps of tokens whose text has not been sent yet.
    steps_pending: Vec<StepEntry>,
}

/// Turns one request's engine events into its OpenAI chunks.
pub struct ChunkMaker {
    meta: ResponseMeta,
    /// Write the usage chunk at the end (`include_usage`, or always when assembling).
    usage_chunk: bool,
    choices: Vec<ChoiceState>,
    finished: usize,
    completion_tokens: usize,
    /// Of those, inside reasoning blocks.
    reasoning_tokens: usize,
    /// What speculation did, summed over the choices that speculated (none: `None`).
    speculative: Option<SpecStats>,
    /// Cached prompt tokens per choice.
    cached: Vec<usize>,
    done: bool,
}

impl crate::sse::EventSource for ChunkMaker {
    type Item = Chunk;
    fn on_event(&mut self, ev: Event, out: &mut Vec<Chunk>) {
        ChunkMaker::on_event(self, ev, out)
    }
    fn engine_gone(&mut self, out: &mut Vec<Chunk>) {
        ChunkMaker::engine_gone(self, out)
    }
    fn done(&self) -> bool {
        ChunkMaker::done(self)
    }
}

impl ChunkMaker {
    /// A maker for `meta`'s request and the chunks that open its stream (the role chunk of every
    /// chat choice; with echo and without logprobs, each completions choice's prompt text).
    /// `usage_chunk` adds the usage chunk at the end even without `include_usage`.
    pub fn new(meta: ResponseMeta, usage_chunk: bool) -> (Self, Vec<Chunk>) {
        let n = meta.choices.len();
        let tool_format = meta.tool_format;
        let mut m = ChunkMaker {
            choices: (0..n)
                .map(|_| ChoiceState { answer: Some(meta.answer_reader()), ..ChoiceState::default() })
                .collect(),
            usage_chunk: usage_chunk || meta.include_usage,
            meta,
            finished: 0,
            completion_tokens: 0,
            reasoning_tokens: 0,
            speculative: None,
            cached: vec![0; n],
            done: false,
        };
        let mut out = Vec::new();
        for i in 0..n {
            match m.meta.endpoint {
                Endpoint::Chat => {
                    // With tools the answer may be only calls: then its content stays null
                    // (a text answer's first piece sets it).
                    let content = tool_format.is_none().then(String::new);
                    let delta = Delta { role: Some("assistant"), content, ..Delta::default() };
                    m.chat_chunk(i, delta, None, None, &mut out);
                }
                Endpoint::Completions => {
                    if m.meta.choices[i].echo_text.is_some() && !m.meta.logprobs {
                        m.send_echo(i, &mut out);
                    }
                }
            }
        }
        (m, out)
    }

    /// What every response of this request shares.
    pub fn meta(&self) -> &ResponseMeta {
        &self.meta
    }

    /// Every choice has finished (or the request failed): no more chunks follow.
    pub fn done(&self) -> bool {
        self.done
    }

    /// The chunks `ev` adds, appended to `out`.
    pub fn on_event(&mut self, ev: Event, out: &mut Vec<Chunk>) {
        if self.done {
            return;
        }
        match ev {
            Event::Started => {}
            Event::PromptToken { choice, token } => {
                if let Some(c) = self.choices.get_mut(choice) {
                    c.prompt_scores.push(token)
                }
            }
            Event::Token { choice, token } if choice < self.choices.len() => self.on_token(choice, token, out),
            Event::Token { .. } => {}
            Event::Finished {
                choice, reason, completion_tokens, cached_tokens, reasoning_tokens, speculative, ..
            } if choice < self.choices.len() => {
                self.cached[choice] = cached_tokens;
                if !self.choices[choice].finished {
                    self.reasoning_tokens += reasoning_tokens;
                    if let Some(s) = speculative {
                        self.speculative.get_or_insert_with(SpecStats::default).add(&s);
                    }
                }
                self.on_finished(choice, reason, completion_tokens, out)
            }
            Event::Finished { .. } => {}
            Event::Failed { message, bad_input, shutting_down } => {
                self.fail(failure(message, bad_input, shutting_down), out)
            }
        }
    }

    /// The engine went away before the request finished.
    pub fn engine_gone(&mut self, out: &mut Vec<Chunk>) {
        if !self.done {
            self.fail(ApiError::internal("the engine stopped before the generation finished"), out);
        }
    }

    fn fail(&mut self, err: ApiError, out: &mut Vec<Chunk>) {
        out.push(Chunk::Failed(err));
        self.done = true;
    }

    fn usage_field(&self) -> Option<Option<Usage>> {
        self.meta.include_usage.then_some(None)
    }

    fn chat_chunk(
        &mut self,
        index: usize,
        delta: Delta,
        logprobs: Option<ChatLogprobs>,
        finish: Option<&'static str>,
        out: &mut Vec<Chunk>,
    ) {
        let steps = self.take_steps(index);
        let choice = ChunkChoice { index, delta, logprobs, finish_reason: finish, steps };
        out.push(Chunk::Chat(self.meta.completion("chat.completion.chunk", vec![choice], self.usage_field())));
    }

    fn text_chunk(
        &mut self,
        index: usize,
        text: String,
        logprobs: Option<LegacyLogprobs>,
        finish: Option<&'static str>,
        out: &mut Vec<Chunk>,
    ) {
        let steps = self.take_steps(index);
        let choice = TextChoice { index, text, logprobs, finish_reason: finish, steps };
        out.push(Chunk::Text(self.meta.completion("text_completion", vec![choice], self.usage_field())));
    }

    /// Completions with echo: the prompt text (and its scores) as the choice's first chunk.
    fn send_echo(&mut self, i: usize, out: &mut Vec<Chunk>) {
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
        self.text_chunk(i, text, logprobs, None, out);
    }

    /// Steps waiting for `i`'s next chunk (`None` when there are none).
    fn take_steps(&mut self, i: usize) -> Option<Vec<StepEntry>> {
        let c = self.choices.get_mut(i)?;
        (!c.steps_pending.is_empty()).then(|| std::mem::take(&mut c.steps_pending))
    }

    fn on_token(&mut self, i: usize, t: TokenOut, out: &mut Vec<Chunk>) {
        if self.meta.endpoint == Endpoint::Completions {
            self.send_echo(i, out);
        }
        if let Some(q) = &self.meta.steps {
            if let Some(e) = q.entry(i, &t, &self.meta.renderer) {
                self.choices[i].steps_pending.push(e);
            }
        }
        let mut pieces = Vec::new();
        if let Some(a) = self.choices[i].answer.as_mut() {
            a.push(&t.text, &mut pieces);
        }
        match self.meta.endpoint {
            Endpoint::Chat => {
                if self.meta.logprobs {
                    if let Some(e) = self.meta.renderer.chat_entry(&t) {
                        self.choices[i].chat_pending.push(e);
                    }
                }
                self.send_pieces(i, pieces, out);
            }
            Endpoint::Completions => {
                if self.meta.logprobs {
                    self.choices[i].legacy_pending.push(t);
                }
                for p in pieces {
                    if let Piece::Text(text) | Piece::Reasoning(text) = p {
                        let logprobs = self.take_legacy_logprobs(i);
                        self.text_chunk(i, text, logprobs, None, out);
                    }
                }
            }
        }
    }

    /// Chat: text and call pieces as chunks; pending logprobs ride on the first.
    fn send_pieces(&mut self, i: usize, pieces: Vec<Piece>, out: &mut Vec<Chunk>) {
        for p in pieces {
            let delta = match p {
                Piece::Text(t) => Delta { content: Some(t), ..Delta::default() },
                Piece::Reasoning(t) => {
                    Delta { reasoning_content: Some(t.clone()), reasoning: Some(t), ..Delta::default() }
                }
                Piece::CallStart { index, id, name } => {
                    let call = ToolCallDelta {
                        index,
                        id: Some(id),
                        kind: Some("function"),
                        function: FunctionDelta { name: Some(name), arguments: String::new() },
                    };
                    Delta { tool_calls: Some(vec![call]), ..Delta::default() }
                }
                Piece::CallArgs { index, text } => {
                    let call = ToolCallDelta {
                        index,
                        id: None,
                        kind: None,
                        function: FunctionDelta { name: None, arguments: text },
                    };
                    Delta { tool_calls: Some(vec![call]), ..Delta::default() }
                }
            };
            let logprobs = self.take_chat_logprobs(i);
            self.chat_chunk(i, delta, logprobs, None, out);
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

    fn on_finished(
        &mut self,
        i: usize,
        reason: nucleus_runtime::StopReason,
        completion_tokens: usize,
        out: &mut Vec<Chunk>,
    ) {
        if self.choices[i].finished {
            return;
        }
        let mut pieces = Vec::new();
        let mut calls = 0;
        if let Some(a) = self.choices[i].answer.as_mut() {
            a.finish(&mut pieces);
            calls = a.calls();
        }
        let finish = Ending { reason, calls }.openai();
        match self.meta.endpoint {
            Endpoint::Chat => {
                self.send_pieces(i, pieces, out);
                if !self.choices[i].chat_pending.is_empty() {
                    // Tokens whose text said nothing (the end of a call's layout): their
                    // logprobs in a chunk of their own, which leaves a call-only content null.
                    let logprobs = self.take_chat_logprobs(i);
                    let content = self.meta.tool_format.is_none().then(String::new);
                    self.chat_chunk(i, Delta { content, ..Delta::default() }, logprobs, None, out);
                }
                let logprobs = self.meta.logprobs.then(ChatLogprobs::default);
                self.chat_chunk(i, Delta::default(), logprobs, Some(finish), out);
            }
            Endpoint::Completions => {
                self.send_echo(i, out);
                let logprobs = self.take_legacy_logprobs(i);
                self.text_chunk(i, String::new(), logprobs, Some(finish), out);
            }
        }
        self.choices[i].finished = true;
        self.finished += 1;
        self.completion_tokens += completion_tokens;
        if self.finished == self.choices.len() {
            self.end(out);
        }
    }

    /// The usage chunk (when asked for); then nothing follows.
    fn end(&mut self, out: &mut Vec<Chunk>) {
        if self.usage_chunk {
            let cached = self.meta.cached_tokens(&self.cached);
            let mut usage = Usage::with_cached(self.meta.prompt_tokens, self.completion_tokens, cached);
            if self.meta.reasoning.is_some() {
                usage.completion_tokens_details =
                    Some(CompletionTokensDetails { reasoning_tokens: self.reasoning_tokens });
            }
            usage.speculative = self.speculative.as_ref().map(SpeculativeUsage::from);
            let usage = Some(Some(usage));
            out.push(match self.meta.endpoint {
                Endpoint::Chat => Chunk::Chat(self.meta.completion("chat.completion.chunk", Vec::new(), usage)),
                Endpoint::Completions => Chunk::Text(self.meta.completion("text_completion", Vec::new(), usage)),
            });
        }
        self.done = true;
    }
}
