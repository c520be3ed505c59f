//! One request's engine events as Responses stream events, and the fold of those events into
//! the `response` object. The stream writes the events ([`super::stream`]); the whole
//! response is the [`Fold`] of the very same events, so the two cannot say different things.

use nucleus_runtime::StopReason;

use super::types::{
    IncompleteDetails, InputDetails, OutputDetails, OutputItem, OutputPart, ResponseError, ResponseObject,
    ResponseUsage, Status, StreamEvent,
};
use crate::answer::{AnswerReader, Ending, Piece};
use crate::collect::failure;
use crate::engine::Event;
use crate::errors::ApiError;
use crate::openai_types::{new_id, unix_now};
use crate::render::ResponseMeta;

/// The response the events so far describe.
#[derive(Clone, Debug)]
pub struct Fold {
    /// The response as the events built it.
    pub response: ResponseObject,
}

impl Fold {
    /// A fold starting from the response an opening event carries.
    pub fn new(response: ResponseObject) -> Self {
        Fold { response }
    }

    /// Folds one event in.
    pub fn apply(&mut self, ev: &StreamEvent) {
        let out = &mut self.response.output;
        match ev {
            StreamEvent::Created { response } | StreamEvent::InProgress { response } => {
                self.response = response.clone()
            }
            StreamEvent::ItemAdded { output_index, item } => {
                if *output_index == out.len() {
                    out.push(item.clone())
                }
            }
            StreamEvent::PartAdded { output_index, part, .. } => {
                if let Some(OutputItem::Message { content, .. } | OutputItem::Reasoning { content, .. }) =
                    out.get_mut(*output_index)
                {
                    content.push(part.clone())
                }
            }
            StreamEvent::TextDelta { output_index, content_index, delta, .. }
            | StreamEvent::ReasoningDelta { output_index, content_index, delta, .. } => {
                if let Some(OutputItem::Message { content, .. } | OutputItem::Reasoning { content, .. }) =
                    out.get_mut(*output_index)
                {
                    if let Some(part) = content.get_mut(*content_index) {
                        part.push_str(delta)
                    }
                }
            }
            StreamEvent::TextDone { .. }
            | StreamEvent::ReasoningDone { .. }
            | StreamEvent::PartDone { .. }
            | StreamEvent::ArgsDone { .. } => {}
            StreamEvent::ArgsDelta { output_index, delta, .. } => {
                if let Some(OutputItem::FunctionCall { arguments, .. }) = out.get_mut(*output_index) {
                    arguments.push_str(delta)
                }
            }
            StreamEvent::ItemDone { output_index, item } => {
                if let Some(slot) = out.get_mut(*output_index) {
                    *slot = item.clone()
                }
            }
            StreamEvent::Completed { response }
            | StreamEvent::Incomplete { response }
            | StreamEvent::Failed { response } => {
                let r = &mut self.response;
                r.status = response.status;
                r.completed_at = response.completed_at;
                r.usage = response.usage.clone();
                r.incomplete_details = response.incomplete_details.clone();
                r.error = response.error.clone();
            }
        }
    }
}

/// The output item being written.
#[derive(Debug)]
enum Open {
    Nothing,
    Reasoning { index: usize, id: String, text: String },
    Message { index: usize, id: String, text: String },
    Call { index: usize, id: String, call_id: String, name: String, args: String },
}

/// A finished answer's token counts.
struct Tokens {
    /// Generated.
    output: usize,
    /// Of those, inside the reasoning block.
    reasoning: usize,
    /// Prompt tokens the cache served.
    cached: usize,
}

/// Turns one request's engine events (one choice) into its stream events.
pub struct EventMaker {
    meta: ResponseMeta,
    answer: AnswerReader,
    open: Open,
    /// The events so far, folded: the terminal event carries this response.
    fold: Fold,
    done: bool,
    /// Why the request failed, for a whole response (an error status, not a 200).
    failed: Option<ApiError>,
}

impl EventMaker {
    /// A maker for `meta`'s request, whose response starts as `shell` (no output, in
    /// progress), and the events that open the stream.
    pub fn new(meta: ResponseMeta, shell: ResponseObject) -> (Self, Vec<StreamEvent>) {
        let answer = meta.answer_reader();
        let mut m =
            EventMaker { meta, answer, open: Open::Nothing, fold: Fold::new(shell.clone()), done: false, failed: None };
        let mut out = Vec::new();
        m.emit(StreamEvent::Created { response: shell.clone() }, &mut out);
        m.emit(StreamEvent::InProgress { response: shell }, &mut out);
        (m, out)
    }

    /// The request ended (or failed): no more events follow.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Why the request failed, if it did.
    pub fn failed(&self) -> Option<&ApiError> {
        self.failed.as_ref()
    }

    /// The events `ev` adds, appended to `out`.
    pub fn on_event(&mut self, ev: Event, out: &mut Vec<StreamEvent>) {
        if self.done {
            return;
        }
        match ev {
            Event::Token { choice: 0, token } => {
                let mut pieces = Vec::new();
                self.answer.push(&token.text, &mut pieces);
                pieces.into_iter().for_each(|p| self.piece(p, out));
            }
            Event::Finished { choice: 0, reason, completion_tokens, cached_tokens, reasoning_tokens, .. } => {
                let mut pieces = Vec::new();
                self.answer.finish(&mut pieces);
                pieces.into_iter().for_each(|p| self.piece(p, out));
                let cut = !matches!(reason, StopReason::EndOfGeneration | StopReason::StopString(_));
                self.close(if cut { Status::Incomplete } else { Status::Completed }, out);
                let ending = Ending { reason, calls: self.answer.calls() };
                let tokens = Tokens { output: completion_tokens, reasoning: reasoning_tokens, cached: cached_tokens };
                self.end(ending, tokens, out);
            }
            Event::Failed { message, bad_input, shutting_down } => {
                self.fail(failure(message, bad_input, shutting_down), out)
            }
            Event::Started | Event::PromptToken { .. } | Event::Token { .. } | Event::Finished { .. } => {}
        }
    }

    /// The engine went away before the request finished.
    pub fn engine_gone(&mut self, out: &mut Vec<StreamEvent>) {
        if !self.done {
            self.fail(ApiError::internal("the engine stopped before the generation finished"), out);
        }
    }

    fn emit(&mut self, ev: StreamEvent, out: &mut Vec<StreamEvent>) {
        self.fold.apply(&ev);
        out.push(ev);
    }

    fn next_index(&self) -> usize {
        self.fold.response.output.len()
    }

    /// One piece of the answer as events: thinking goes to a `reasoning` item, text to a
    /// `message`, each call to a `function_call` (a new item closes the one before it).
    fn piece(&mut self, p: Piece, out: &mut Vec<StreamEvent>) {
        match p {
            Piece::Reasoning(t) => {
                if !matches!(self.open, Open::Reasoning { .. }) {
                    let (index, id) = self.open_item("rs_", out, |id| OutputItem::Reasoning {
                        id,
                        summary: Vec::new(),
                        content: Vec::new(),
                        status: Status::InProgress,
                    });
                    self.open_part(index, &id, OutputPart::ReasoningText { text: String::new() }, out);
                    self.open = Open::Reasoning { index, id, text: String::new() };
                }
                if let Open::Reasoning { index, id, text } = &mut self.open {
                    if !t.is_empty() {
                        text.push_str(&t);
                        let (item_id, output_index) = (id.clone(), *index);
                        let ev = StreamEvent::ReasoningDelta { item_id, output_index, content_index: 0, delta: t };
                        self.emit(ev, out);
                    }
                }
            }
            Piece::Text(t) => {
                if !matches!(self.open, Open::Message { .. }) {
                    let (index, id) = self.open_item("msg_", out, |id| OutputItem::Message {
                        id,
                        role: "assistant",
                        status: Status::InProgress,
                        content: Vec::new(),
                    });
                    let part = OutputPart::OutputText { text: String::new(), annotations: Vec::new() };
                    self.open_part(index, &id, part, out);
                    self.open = Open::Message { index, id, text: String::new() };
                }
                if let Open::Message { index, id, text } = &mut self.open {
                    if !t.is_empty() {
                        text.push_str(&t);
                        let ev = StreamEvent::TextDelta {
                            item_id: id.clone(),
                            output_index: *index,
                            content_index: 0,
                            delta: t,
                            logprobs: Vec::new(),
                        };
                        self.emit(ev, out);
                    }
                }
            }
            Piece::CallStart { id: call_id, name, .. } => {
                let (index, id) = self.open_item("fc_", out, |id| OutputItem::FunctionCall {
                    id,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    namespace: None,
                    arguments: String::new(),
                    status: Status::InProgress,
                });
                self.open = Open::Call { index, id, call_id, name, args: String::new() };
            }
            Piece::CallArgs { text, .. } => {
                if let Open::Call { index, id, args, .. } = &mut self.open {
                    args.push_str(&text);
                    let ev = StreamEvent::ArgsDelta { item_id: id.clone(), output_index: *index, delta: text };
                    self.emit(ev, out);
                }
            }
        }
    }

    /// Closes the open item and adds the next one, `item(id)` with a fresh `prefix…` id;
    /// returns its index and id.
    fn open_item(
        &mut self,
        prefix: &str,
        out: &mut Vec<StreamEvent>,
        item: impl FnOnce(String) -> OutputItem,
    ) -> (usize, String) {
        self.close(Status::Completed, out);
        let (index, id) = (self.next_index(), new_id(prefix));
        self.emit(StreamEvent::ItemAdded { output_index: index, item: item(id.clone()) }, out);
        (index, id)
    }

    /// Adds the (empty) first content part of item `index`.
    fn open_part(&mut self, index: usize, id: &str, part: OutputPart, out: &mut Vec<StreamEvent>) {
        let ev = StreamEvent::PartAdded { item_id: id.to_string(), output_index: index, content_index: 0, part };
        self.emit(ev, out);
    }

    /// Completes the open item (if any) with `status`.
    fn close(&mut self, status: Status, out: &mut Vec<StreamEvent>) {
        match std::mem::replace(&mut self.open, Open::Nothing) {
            Open::Nothing => {}
            Open::Reasoning { index, id, text } => {
                let part = OutputPart::ReasoningText { text: text.clone() };
                let (item_id, output_index, content_index) = (id.clone(), index, 0);
                self.emit(StreamEvent::ReasoningDone { item_id, output_index, content_index, text }, out);
                let ev = StreamEvent::PartDone { item_id: id.clone(), output_index, content_index, part: part.clone() };
                self.emit(ev, out);
                let item = OutputItem::Reasoning { id, summary: Vec::new(), content: vec![part], status };
                self.emit(StreamEvent::ItemDone { output_index, item }, out);
            }
            Open::Message { index, id, text } => {
                let part = OutputPart::OutputText { text: text.clone(), annotations: Vec::new() };
                let (item_id, output_index, content_index) = (id.clone(), index, 0);
                let ev = StreamEvent::TextDone { item_id, output_index, content_index, text, logprobs: Vec::new() };
                self.emit(ev, out);
                let ev = StreamEvent::PartDone { item_id: id.clone(), output_index, content_index, part: part.clone() };
                self.emit(ev, out);
                let item = OutputItem::Message { id, role: "assistant", status, content: vec![part] };
                self.emit(StreamEvent::ItemDone { output_index, item }, out);
            }
            Open::Call { index, id, call_id, name, args } => {
                let ev = StreamEvent::ArgsDone {
                    item_id: id.clone(),
                    output_index: index,
                    name: name.clone(),
                    arguments: args.clone(),
                };
                self.emit(ev, out);
                let item = OutputItem::FunctionCall { id, call_id, name, namespace: None, arguments: args, status };
                self.emit(StreamEvent::ItemDone { output_index: index, item }, out);
            }
        }
    }

    fn end(&mut self, ending: Ending, tokens: Tokens, out: &mut Vec<StreamEvent>) {
        let mut r = self.fold.response.clone();
        let input_tokens = self.meta.prompt_tokens;
        r.usage = Some(ResponseUsage {
            input_tokens,
            input_tokens_details: InputDetails {
                cached_tokens: self.meta.cached_tokens(&[tokens.cached]),
                cache_write_tokens: 0,
            },
            output_tokens: tokens.output,
            output_tokens_details: OutputDetails { reasoning_tokens: tokens.reasoning },
            total_tokens: input_tokens + tokens.output,
        });
        r.completed_at = Some(unix_now());
        let ev = if ending.openai() == "length" {
            r.status = Status::Incomplete;
            r.incomplete_details = Some(IncompleteDetails { reason: "max_output_tokens" });
            StreamEvent::Incomplete { response: r }
        } else {
            r.status = Status::Completed;
            StreamEvent::Completed { response: r }
        };
        self.emit(ev, out);
        self.done = true;
    }

    fn fail(&mut self, err: ApiError, out: &mut Vec<StreamEvent>) {
        self.close(Status::Incomplete, out);
        let mut r = self.fold.response.clone();
        r.status = Status::Failed;
        r.error = Some(ResponseError { code: "server_error", message: err.message.clone() });
        self.failed = Some(err);
        self.emit(StreamEvent::Failed { response: r }, out);
        self.done = true;
    }
}
