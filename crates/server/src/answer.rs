//! One choice's answer as the protocol-neutral pieces every API renders: text, and (with tools)
//! the start of each call and its argument text. [`AnswerReader`] turns the text the engine
//! releases into [`Piece`]s as soon as they are certain; every response — streamed or whole, in
//! any API's shape — is built from that one sequence, so a streamed answer and the unstreamed
//! one say the same thing.

use nucleus_runtime::{SplitKind, StopReason, ThinkSplitter};

use crate::openai_types::new_id;
use crate::tools::output::ToolParser;
use crate::tools::ToolFormat;

/// Something an answer says, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Assistant text.
    Text(String),
    /// Text of the answer's reasoning block (when the answer is read for one).
    Reasoning(String),
    /// A call begins: its index among the answer's calls, its id and the function's name.
    CallStart {
        /// Index among this answer's calls.
        index: usize,
        /// `call_...`.
        id: String,
        /// The function.
        name: String,
    },
    /// The next piece of a call's arguments (JSON text; the pieces of one call, joined, are its
    /// arguments, complete unless the answer was cut).
    CallArgs {
        /// The call's index.
        index: usize,
        /// The piece.
        text: String,
    },
}

/// Reads one choice's generated text into [`Piece`]s.
#[derive(Clone, Debug)]
pub struct AnswerReader {
    /// When the answer is read for a reasoning block: the splitter in front of the rest.
    think: Option<ThinkSplitter>,
    /// With tools in use: the call reader.
    tools: Option<ToolParser>,
    /// Calls begun so far (a call cut by the token limit counts).
    calls: usize,
    /// Some text piece was given out.
    said_text: bool,
}

impl AnswerReader {
    /// A reader for answers read for calls in `tool_format`, or plain text.
    pub fn new(tool_format: Option<ToolFormat>) -> Self {
        AnswerReader { think: None, tools: tool_format.map(ToolParser::new), calls: 0, said_text: false }
    }

    /// Reads a reasoning block first with `splitter` (fresh, in the block's style; `None`: no
    /// block).
    pub fn with_reasoning(mut self, splitter: Option<ThinkSplitter>) -> Self {
        self.think = splitter;
        self
    }

    /// Whether the answer is read for tool calls.
    pub fn reads_tools(&self) -> bool {
        self.tools.is_some()
    }

    /// Feeds text the engine released; what became certain is appended to `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<Piece>) {
        // The splitter is taken out while it hands its (borrowed) pieces to this reader.
        let Some(mut think) = self.think.take() else { return self.push_answer(text, out) };
        think.feed(text, &mut |kind, t| self.take_split(kind, t, out));
        self.think = Some(think);
    }

    fn take_split(&mut self, kind: SplitKind, text: &str, out: &mut Vec<Piece>) {
        match kind {
            SplitKind::Reasoning => out.push(Piece::Reasoning(text.to_string())),
            SplitKind::Answer => self.push_answer(text, out),
            // A harmony call is a call when the request has tools; else it stays thinking.
            SplitKind::CallStart if self.tools.is_some() => {
                let call = Piece::CallStart { index: self.calls, id: new_id("call_"), name: text.to_string() };
                self.calls += 1;
                out.push(call);
            }
            SplitKind::CallArgs if self.tools.is_some() && self.calls > 0 => {
                out.push(Piece::CallArgs { index: self.calls - 1, text: text.to_string() })
            }
            SplitKind::CallStart => out.push(Piece::Reasoning(format!("functions.{text}: "))),
            SplitKind::CallArgs => out.push(Piece::Reasoning(text.to_string())),
        }
    }

    /// Answer text (after any reasoning block) into pieces.
    fn push_answer(&mut self, text: &str, out: &mut Vec<Piece>) {
        let from = out.len();
        match self.tools.as_mut() {
            Some(p) => p.push(text, out),
            None if !text.is_empty() => out.push(Piece::Text(text.to_string())),
            None => {}
        }
        self.count(&out[from..]);
    }

    /// The generation ended: text held back is given out. An answer read for tools that made
    /// no call and said nothing says the empty text, so its message always has a content string.
    pub fn finish(&mut self, out: &mut Vec<Piece>) {
        if let Some(mut think) = self.think.take() {
            think.end(&mut |kind, t| self.take_split(kind, t, out));
            self.think = Some(think);
        }
        let from = out.len();
        if let Some(p) = self.tools.as_mut() {
            p.finish(out);
        }
        self.count(&out[from..]);
        if self.tools.is_some() && self.calls == 0 && !self.said_text {
            self.said_text = true;
            out.push(Piece::Text(String::new()));
        }
    }

    /// Calls begun so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    fn count(&mut self, pieces: &[Piece]) {
        for p in pieces {
            match p {
                Piece::CallStart { .. } => self.calls += 1,
                Piece::Text(_) => self.said_text = true,
                Piece::CallArgs { .. } | Piece::Reasoning(_) => {}
            }
        }
    }
}

/// Why an answer ended, as every API needs it: the engine's reason and whether it called tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ending {
    /// The engine's reason.
    pub reason: StopReason,
    /// Calls the answer began.
    pub calls: usize,
}

impl Ending {
    /// OpenAI's `finish_reason`: `tool_calls` for an answer that ended by itself after calling
    /// tools, `stop` for an end-of-generation token or stop string, `length` for the token limit
    /// or a full context (a call cut there is still reported, with its partial arguments).
    pub fn openai(&self) -> &'static str {
        match self.reason {
            StopReason::EndOfGeneration | StopReason::StopString(_) if self.calls > 0 => "tool_calls",
            StopReason::EndOfGeneration | StopReason::StopString(_) => "stop",
            StopReason::MaxTokens | StopReason::ContextFull | StopReason::Cancelled => "length",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_passes_through() {
        let mut r = AnswerReader::new(None);
        let mut out = Vec::new();
        r.push("Hi", &mut out);
        r.push("", &mut out);
        r.push(" there", &mut out);
        r.finish(&mut out);
        assert_eq!(out, [Piece::Text("Hi".into()), Piece::Text(" there".into())]);
        assert_eq!(r.calls(), 0);
    }

    #[test]
    fn a_tool_answer_without_calls_or_text_says_the_empty_text() {
        let mut r = AnswerReader::new(Some(ToolFormat::Generic));
        let mut out = Vec::new();
        r.push("{\"response\": \"\"}", &mut out);
        r.finish(&mut out);
        assert_eq!(out, [Piece::Text(String::new())]);
    }

    #[test]
    fn harmony_calls_on_the_commentary_channel_are_calls() {
        let reader = || {
            let splitter = ThinkSplitter::with_style(nucleus_runtime::BlockStyle::Harmony, true);
            AnswerReader::new(Some(ToolFormat::Generic)).with_reasoning(Some(splitter))
        };
        let text = "Need it.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather \
                    <|constrain|>json<|message|>{\"city\": \"Oslo\"}";
        let mut whole = Vec::new();
        let mut r = reader();
        r.push(text, &mut whole);
        r.finish(&mut whole);
        assert_eq!(r.calls(), 1);
        assert_eq!(whole[0], Piece::Reasoning("Need it.".into()));
        assert!(matches!(&whole[1], Piece::CallStart { index: 0, name, .. } if name == "get_weather"));
        let args: String = whole[2..]
            .iter()
            .map(|p| match p {
                Piece::CallArgs { index: 0, text } => text.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(args, "{\"city\": \"Oslo\"}");
        // Byte by byte, the same pieces (joined).
        let mut r = reader();
        let mut pieces = Vec::new();
        for c in text.chars() {
            r.push(&c.to_string(), &mut pieces);
        }
        r.finish(&mut pieces);
        assert_eq!(r.calls(), 1);
        let args2: String = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::CallArgs { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args2, args);
    }

    #[test]
    fn finish_reasons() {
        let e = |reason, calls| Ending { reason, calls }.openai();
        assert_eq!(e(StopReason::EndOfGeneration, 0), "stop");
        assert_eq!(e(StopReason::EndOfGeneration, 2), "tool_calls");
        assert_eq!(e(StopReason::MaxTokens, 1), "length");
        assert_eq!(e(StopReason::ContextFull, 0), "length");
    }
}
