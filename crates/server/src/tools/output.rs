//! The generated text read back into content and tool calls, incrementally: text goes in as
//! the engine releases it, [`ToolDelta`]s come out as soon as they are certain (content, a
//! call's id and name, then its arguments in pieces). The grammar ([`super::grammar`]) fixes
//! the layout, so this is a small state machine over it, not a JSON parser; the arguments
//! value is cut out by bracket depth and passed on verbatim.

use super::grammar::{HERMES_CLOSE, HERMES_OPEN};
use super::ToolFormat;
use crate::openai_types::new_id;

/// Something the client can be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolDelta {
    /// Assistant text.
    Content(String),
    /// A call begins: its index, id and function name.
    CallStart {
        /// Index among this answer's calls.
        index: usize,
        /// `call_...`.
        id: String,
        /// The function.
        name: String,
    },
    /// The next piece of a call's arguments (JSON text).
    Args {
        /// The call's index.
        index: usize,
        /// The piece.
        text: String,
    },
}

/// A complete call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedCall {
    /// `call_...`.
    pub id: String,
    /// The function.
    pub name: String,
    /// The arguments, JSON text.
    pub arguments: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// Hermes: free text, watching for `<tool_call>`.
    Text,
    /// Generic: which object the answer is.
    Head,
    /// Generic: inside the `response` string.
    Response,
    /// Generic: after the response string.
    ResponseEnd,
    /// Before a call object.
    CallOpen,
    /// Reading the function name.
    Name,
    /// Inside the arguments value.
    Args { depth: usize, in_str: bool, esc: bool, scalar: bool },
    /// After the arguments value: the call object's `}`.
    CallClose,
    /// After a call: another one or the end.
    AfterCall,
    /// Nothing more is expected.
    Done,
    /// The text does not follow the layout: everything from here is content.
    Raw,
}

/// One choice's parser.
#[derive(Clone, Debug)]
pub struct ToolParser {
    format: ToolFormat,
    /// Generic: `{"tool_calls": [...]}` rather than a single `{"tool_call": ...}`.
    list: bool,
    state: State,
    /// Text received and not yet consumed.
    buf: String,
    content: String,
    calls: Vec<ParsedCall>,
    /// The call being read.
    current: Option<ParsedCall>,
}

const NAME_KEY: &str = "{\"name\": \"";
const ARGS_KEY: &str = "\", \"arguments\": ";

/// How `buf` relates to `lit`: consumed, still possible, or impossible.
enum Match {
    Yes,
    Wait,
    No,
}

fn match_lit(buf: &str, lit: &str) -> Match {
    if buf.starts_with(lit) {
        Match::Yes
    } else if lit.starts_with(buf) {
        Match::Wait
    } else {
        Match::No
    }
}

impl ToolParser {
    /// A parser for answers in `format`.
    pub fn new(format: ToolFormat) -> Self {
        let state = match format {
            ToolFormat::Hermes => State::Text,
            ToolFormat::Generic => State::Head,
        };
        ToolParser {
            format,
            list: false,
            state,
            buf: String::new(),
            content: String::new(),
            calls: Vec::new(),
            current: None,
        }
    }

    /// Feeds released text; what became certain is appended to `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<ToolDelta>) {
        self.buf.push_str(text);
        while self.step(out) {}
    }

    /// The generation ended: text held back is released (as content when it can no longer
    /// be a call).
    pub fn finish(&mut self, out: &mut Vec<ToolDelta>) {
        while self.step(out) {}
        if matches!(self.state, State::Text | State::Raw) && !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            self.emit_content(rest, out);
        }
    }

    /// The assistant text (`None` when there is none and calls were made).
    pub fn content(&self) -> Option<String> {
        let text = if self.calls.is_empty() { self.content.clone() } else { self.content.trim().to_string() };
        if text.is_empty() && !self.calls.is_empty() {
            None
        } else {
            Some(text)
        }
    }

    /// The complete calls.
    pub fn calls(&self) -> &[ParsedCall] {
        &self.calls
    }

    fn emit_content(&mut self, text: String, out: &mut Vec<ToolDelta>) {
        if !text.is_empty() {
            self.content.push_str(&text);
            out.push(ToolDelta::Content(text));
        }
    }

    fn consume(&mut self, n: usize) -> String {
        let rest = self.buf.split_off(n);
        std::mem::replace(&mut self.buf, rest)
    }

    /// Skips leading whitespace of the buffer.
    fn skip_ws(&mut self) {
        let n = self.buf.len() - self.buf.trim_start().len();
        self.consume(n);
    }

    /// One move of the state machine; false when it needs more text.
    fn step(&mut self, out: &mut Vec<ToolDelta>) -> bool {
        if self.buf.is_empty() {
            return false;
        }
        match self.state.clone() {
            State::Text => {
                if let Some(at) = self.buf.find(HERMES_OPEN) {
                    let before = self.consume(at);
                    self.emit_content(before, out);
                    self.consume(HERMES_OPEN.len());
                    self.state = State::CallOpen;
                    return true;
                }
                // Hold back a tail that could still become `<tool_call>`.
                let keep = (1..HERMES_OPEN.len().min(self.buf.len() + 1))
                    .rev()
                    .find(|&k| {
                        self.buf.is_char_boundary(self.buf.len() - k)
                            && HERMES_OPEN.starts_with(&self.buf[self.buf.len() - k..])
                    })
                    .unwrap_or(0);
                let free = self.consume(self.buf.len() - keep);
                self.emit_content(free, out);
                false
            }
            State::Head => {
                for (lit, next, list) in [
                    ("{\"response\": \"", State::Response, false),
                    ("{\"tool_calls\": [", State::CallOpen, true),
                    ("{\"tool_call\": ", State::CallOpen, false),
                ] {
                    match match_lit(&self.buf, lit) {
                        Match::Yes => {
                            self.consume(lit.len());
                            self.list = list;
                            self.state = next;
                            return true;
                        }
                        Match::Wait => return false,
                        Match::No => {}
                    }
                }
                self.state = State::Raw;
                true
            }
            State::Response => self.response(out),
            State::ResponseEnd => self.literal("}", State::Done),
            State::CallOpen => {
                self.skip_ws();
                self.literal(NAME_KEY, State::Name)
            }
            State::Name => {
                let Some(end) = self.buf.find('"') else { return false };
                match match_lit(&self.buf[end..], ARGS_KEY) {
                    Match::Wait => false,
                    Match::No => {
                        self.state = State::Raw;
                        true
                    }
                    Match::Yes => {
                        let name = self.consume(end);
                        self.consume(ARGS_KEY.len());
                        let index = self.calls.len();
                        let id = new_id("call_");
                        out.push(ToolDelta::CallStart { index, id: id.clone(), name: name.clone() });
                        self.current = Some(ParsedCall { id, name, arguments: String::new() });
                        self.state = State::Args { depth: 0, in_str: false, esc: false, scalar: false };
                        true
                    }
                }
            }
            State::Args { .. } => self.args(out),
            State::CallClose => {
                self.skip_ws();
                if self.buf.is_empty() {
                    return false;
                }
                if let Some(c) = self.current.take() {
                    if self.buf.starts_with('}') {
                        self.calls.push(c);
                    }
                }
                self.literal("}", State::AfterCall)
            }
            State::AfterCall => match self.format {
                ToolFormat::Generic if self.list => {
                    if let Match::Yes = match_lit(&self.buf, ", ") {
                        self.consume(2);
                        self.state = State::CallOpen;
                        return true;
                    }
                    self.literal("]}", State::Done)
                }
                ToolFormat::Generic => self.literal("}", State::Done),
                ToolFormat::Hermes => {
                    self.skip_ws();
                    if self.buf.starts_with(HERMES_CLOSE) {
                        self.consume(HERMES_CLOSE.len());
                        return true;
                    }
                    match match_lit(&self.buf, HERMES_OPEN) {
                        Match::Yes => {
                            self.consume(HERMES_OPEN.len());
                            self.state = State::CallOpen;
                            true
                        }
                        Match::Wait => false,
                        Match::No if HERMES_CLOSE.starts_with(self.buf.as_str()) => false,
                        Match::No => {
                            self.state = State::Raw;
                            true
                        }
                    }
                }
            },
            State::Done => {
                // Whitespace after the answer is dropped; anything else is kept as content.
                self.skip_ws();
                if !self.buf.is_empty() {
                    self.state = State::Raw;
                    return true;
                }
                false
            }
            State::Raw => {
                let rest = std::mem::take(&mut self.buf);
                self.emit_content(rest, out);
                false
            }
        }
    }

    /// Consumes `lit` and moves to `next`; waits on a prefix; gives up on anything else.
    fn literal(&mut self, lit: &str, next: State) -> bool {
        match match_lit(&self.buf, lit) {
            Match::Yes => {
                self.consume(lit.len());
                self.state = next;
                true
            }
            Match::Wait => false,
            Match::No => {
                self.state = State::Raw;
                true
            }
        }
    }

    /// The response string: decoded characters out as content, up to the closing quote.
    fn response(&mut self, out: &mut Vec<ToolDelta>) -> bool {
        let mut text = String::new();
        let mut used = 0;
        let b = self.buf.as_bytes();
        let mut closed = false;
        while used < b.len() {
            match b[used] {
                b'"' => {
                    used += 1;
                    closed = true;
                    break;
                }
                b'\\' => {
                    // The whole escape (a surrogate pair is two) must be here to decode it.
                    let Some(len) = escape_len(&self.buf[used..]) else { break };
                    let lit = format!("\"{}\"", &self.buf[used..used + len]);
                    text.push_str(&serde_json::from_str::<String>(&lit).unwrap_or_default());
                    used += len;
                }
                _ => {
                    let ch = self.buf[used..].chars().next().unwrap_or('\u{FFFD}');
                    text.push(ch);
                    used += ch.len_utf8();
                }
            }
        }
        self.consume(used);
        self.emit_content(text, out);
        if closed {
            self.state = State::ResponseEnd;
        }
        closed
    }

    /// The arguments value: passed on as it arrives, until its bracket depth closes.
    fn args(&mut self, out: &mut Vec<ToolDelta>) -> bool {
        let State::Args { mut depth, mut in_str, mut esc, mut scalar } = self.state else { return false };
        let b = self.buf.as_bytes();
        let mut used = 0;
        let mut done = false;
        while used < b.len() {
            let c = b[used];
            if in_str {
                used += 1;
                if esc {
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                } else if c == b'"' {
                    in_str = false;
                    if depth == 0 {
                        done = true;
                        break;
                    }
                }
                continue;
            }
            match c {
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => {
                    done = true;
                    break;
                }
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        used += 1;
                        done = true;
                        break;
                    }
                }
                b'"' => in_str = true,
                b' ' | b'\n' | b'\t' | b'\r' | b',' if depth == 0 && scalar => {
                    done = true;
                    break;
                }
                b' ' | b'\n' | b'\t' | b'\r' if depth == 0 => {}
                _ if depth == 0 => scalar = true,
                _ => {}
            }
            used += 1;
        }
        let piece = self.consume(used);
        let index = self.calls.len();
        if !piece.is_empty() {
            if let Some(c) = self.current.as_mut() {
                c.arguments.push_str(&piece);
            }
            out.push(ToolDelta::Args { index, text: piece });
        }
        if done {
            if let Some(c) = self.current.as_mut() {
                let trimmed = c.arguments.trim().to_string();
                c.arguments = trimmed;
            }
            self.state = State::CallClose;
        } else {
            self.state = State::Args { depth, in_str, esc, scalar };
        }
        done
    }
}

/// Length of the JSON escape at the start of `s` (which starts with a backslash), or `None`
/// when it is not all here yet.
fn escape_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 2 {
        return None;
    }
    if b[1] != b'u' {
        return Some(2);
    }
    if b.len() < 6 {
        return None;
    }
    let hi = u16::from_str_radix(&s[2..6], 16).unwrap_or(0);
    if (0xD800..0xDC00).contains(&hi) {
        // A high surrogate: the low half follows as a second escape.
        if b.len() < 12 {
            return if b.len() > 6 && b[6] != b'\\' { Some(6) } else { None };
        }
        return Some(if b[6] == b'\\' && b[7] == b'u' { 12 } else { 6 });
    }
    Some(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `step` bytes (on character boundaries) and finishes.
    fn run(format: ToolFormat, text: &str, step: usize) -> (ToolParser, Vec<ToolDelta>) {
        let mut p = ToolParser::new(format);
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() {
            let mut j = (i + step).min(text.len());
            while !text.is_char_boundary(j) {
                j += 1;
            }
            p.push(&text[i..j], &mut out);
            i = j;
        }
        p.finish(&mut out);
        (p, out)
    }

    fn args_of(out: &[ToolDelta], index: usize) -> String {
        out.iter()
            .filter_map(|d| match d {
                ToolDelta::Args { index: i, text } if *i == index => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn generic_single_call_any_piece_size() {
        let text =
            r#"{"tool_call": {"name": "get_weather", "arguments": {"city": "Pa}ris \"x\"", "n": [1, {"a": 2}]} }}"#;
        for step in [1, 2, 3, 7, 100] {
            let (p, out) = run(ToolFormat::Generic, text, step);
            assert_eq!(p.calls().len(), 1, "{step}");
            assert_eq!(p.calls()[0].name, "get_weather");
            assert_eq!(p.calls()[0].arguments, r#"{"city": "Pa}ris \"x\"", "n": [1, {"a": 2}]}"#);
            assert_eq!(args_of(&out, 0).trim(), p.calls()[0].arguments);
            assert!(matches!(&out[0], ToolDelta::CallStart { index: 0, name, .. } if name == "get_weather"));
            assert_eq!(p.content(), None);
        }
    }

    #[test]
    fn generic_parallel_calls_and_response() {
        let text = r#"{"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]}"#;
        let (p, _) = run(ToolFormat::Generic, text, 3);
        let names: Vec<_> = p.calls().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(p.calls()[1].arguments, r#"{"x": 1}"#);

        let (p, out) = run(ToolFormat::Generic, r#"{"response": "Hi \"you\" \u00e9\ud83d\ude00!"}"#, 1);
        assert!(p.calls().is_empty());
        assert_eq!(p.content().as_deref(), Some("Hi \"you\" é😀!"));
        assert!(out.iter().all(|d| matches!(d, ToolDelta::Content(_))));
    }

    #[test]
    fn hermes_text_then_calls() {
        let text = "Let me check. <tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"<tool_call>\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>";
        for step in [1, 4, 1000] {
            let (p, out) = run(ToolFormat::Hermes, text, step);
            assert_eq!(p.calls().len(), 2, "{step}");
            assert_eq!(p.calls()[0].arguments, r#"{"q": "<tool_call>"}"#);
            assert_eq!(p.content().as_deref(), Some("Let me check."));
            let content: String = out
                .iter()
                .filter_map(|d| if let ToolDelta::Content(t) = d { Some(t.as_str()) } else { None })
                .collect();
            assert_eq!(content, "Let me check. ");
        }
        let (p, _) = run(ToolFormat::Hermes, "Just text <tool", 2);
        assert_eq!(p.content().as_deref(), Some("Just text <tool"));
        assert!(p.calls().is_empty());
    }

    #[test]
    fn unfinished_call_is_not_a_call() {
        let (p, _) = run(ToolFormat::Generic, r#"{"tool_call": {"name": "f", "arguments": {"a": "#, 5);
        assert!(p.calls().is_empty());
    }
}
