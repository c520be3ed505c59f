//! The generated text read back into content and tool calls, incrementally: text goes in as
//! the engine releases it, [`Piece`]s come out as soon as they are certain (content, a call's
//! id and name, then its arguments in pieces). The grammar ([`super::grammar`]) fixes the
//! layout, so this is a small state machine over it, not a JSON parser; the arguments value is
//! cut out by bracket depth and passed on verbatim. Nothing is given out that a later piece
//! takes back: the pieces, joined, are the whole answer (whitespace before a Hermes call is
//! held back and dropped, whitespace before an arguments value is not part of it), however the
//! text was split into pieces.

use super::grammar::{HERMES_CLOSE, HERMES_OPEN};
use super::ToolFormat;
use nucleus_runtime::stop::partial_suffix;

use crate::answer::Piece;
use crate::openai_types::new_id;

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
    /// Calls begun.
    calls: usize,
    /// Arguments text of the call being read, so far.
    args: String,
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
        ToolParser { format, list: false, state, buf: String::new(), calls: 0, args: String::new() }
    }

    /// Feeds released text; what became certain is appended to `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<Piece>) {
        self.buf.push_str(text);
        while self.step(out) {}
    }

    /// The generation ended: text held back is released (as content when it can no longer
    /// be a call; a call cut inside its arguments keeps the pieces already given out).
    pub fn finish(&mut self, out: &mut Vec<Piece>) {
        while self.step(out) {}
        if matches!(self.state, State::Text | State::Raw) && !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            self.emit_content(rest, out);
        }
    }

    fn emit_content(&mut self, text: String, out: &mut Vec<Piece>) {
        if !text.is_empty() {
            out.push(Piece::Text(text));
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
    fn step(&mut self, out: &mut Vec<Piece>) -> bool {
        if self.buf.is_empty() {
            return false;
        }
        match self.state.clone() {
            State::Text => {
                if let Some(at) = self.buf.find(HERMES_OPEN) {
                    let before = self.consume(at);
                    self.emit_content(before.trim_end().to_string(), out);
                    self.consume(HERMES_OPEN.len());
                    self.state = State::CallOpen;
                    return true;
                }
                // Hold back a tail that could still become `<tool_call>`, and the whitespace
                // before it (dropped if a call follows).
                let keep = partial_suffix(&self.buf, HERMES_OPEN);
                let head = self.buf[..self.buf.len() - keep].trim_end().len();
                let free = self.consume(head);
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
                        out.push(Piece::CallStart { index: self.calls, id: new_id("call_"), name });
                        self.calls += 1;
                        self.args.clear();
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
                self.literal("}", State::AfterCall)
            }
            State::AfterCall => match self.format {
                ToolFormat::Generic if self.list => match match_lit(&self.buf, ", ") {
                    Match::Yes => {
                        self.consume(2);
                        self.state = State::CallOpen;
                        true
                    }
                    // `,` alone may still be the separator: wait for the next piece.
                    Match::Wait => false,
                    Match::No => self.literal("]}", State::Done),
                },
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
    fn response(&mut self, out: &mut Vec<Piece>) -> bool {
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
    fn args(&mut self, out: &mut Vec<Piece>) -> bool {
        let State::Args { mut depth, mut in_str, mut esc, mut scalar } = self.state else { return false };
        if self.args.is_empty() {
            // Whitespace before the value is not part of the arguments.
            self.skip_ws();
        }
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
        if !piece.is_empty() {
            self.args.push_str(&piece);
            out.push(Piece::CallArgs { index: self.calls.saturating_sub(1), text: piece });
        }
        if done {
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
    fn run(format: ToolFormat, text: &str, step: usize) -> Vec<Piece> {
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
        out
    }

    /// The pieces joined: the content and each call's (name, arguments).
    fn joined(out: &[Piece]) -> (String, Vec<(String, String)>) {
        let mut content = String::new();
        let mut calls: Vec<(String, String)> = Vec::new();
        for p in out {
            match p {
                Piece::Text(t) | Piece::Reasoning(t) => content.push_str(t),
                Piece::CallStart { index, name, .. } => {
                    assert_eq!(*index, calls.len());
                    calls.push((name.clone(), String::new()));
                }
                Piece::CallArgs { index, text } => calls[*index].1.push_str(text),
            }
        }
        (content, calls)
    }

    fn call(name: &str, args: &str) -> (String, String) {
        (name.to_string(), args.to_string())
    }

    #[test]
    fn generic_single_call_any_piece_size() {
        let text =
            r#"{"tool_call": {"name": "get_weather", "arguments": {"city": "Pa}ris \"x\"", "n": [1, {"a": 2}]} }}"#;
        for step in [1, 2, 3, 7, 100] {
            let out = run(ToolFormat::Generic, text, step);
            let (content, calls) = joined(&out);
            assert_eq!(calls, [call("get_weather", r#"{"city": "Pa}ris \"x\"", "n": [1, {"a": 2}]}"#)], "{step}");
            assert_eq!(content, "");
            assert!(matches!(&out[0], Piece::CallStart { index: 0, name, .. } if name == "get_weather"));
        }
    }

    /// Several calls in a list, however the text is split: every call is a call (a `,` alone
    /// at the end of a piece once ended the list and sent the rest as content).
    #[test]
    fn generic_parallel_calls_any_piece_size() {
        let text = r#"{"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}, {"name": "a", "arguments": { "y": "," }}]}"#;
        for step in 1..12 {
            let (content, calls) = joined(&run(ToolFormat::Generic, text, step));
            assert_eq!(calls, [call("a", "{}"), call("b", r#"{"x": 1}"#), call("a", r#"{ "y": "," }"#)], "{step}");
            assert_eq!(content, "", "{step}");
        }
        let (content, calls) =
            joined(&run(ToolFormat::Generic, r#"{"response": "Hi \"you\" \u00e9\ud83d\ude00!"}"#, 1));
        assert!(calls.is_empty());
        assert_eq!(content, "Hi \"you\" é😀!");
    }

    #[test]
    fn hermes_text_then_calls() {
        let text = "Let me check. <tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"<tool_call>\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>";
        for step in [1, 2, 4, 5, 1000] {
            let (content, calls) = joined(&run(ToolFormat::Hermes, text, step));
            assert_eq!(calls, [call("f", r#"{"q": "<tool_call>"}"#), call("g", "{}")], "{step}");
            assert_eq!(content, "Let me check.", "{step}");
        }
        for step in [1, 3, 100] {
            let (content, calls) = joined(&run(ToolFormat::Hermes, "Just text <tool", step));
            assert_eq!(content, "Just text <tool");
            assert!(calls.is_empty());
            let (content, _) = joined(&run(ToolFormat::Hermes, "Spaced  out \n", step));
            assert_eq!(content, "Spaced  out \n");
        }
    }

    /// A call cut inside its arguments is still a call, with the arguments given so far; a cut
    /// before its name is complete says nothing.
    #[test]
    fn a_cut_call_keeps_its_partial_arguments() {
        for step in [1, 5, 100] {
            let (content, calls) =
                joined(&run(ToolFormat::Generic, r#"{"tool_call": {"name": "f", "arguments": {"a": "#, step));
            assert_eq!(calls, [call("f", r#"{"a": "#)]);
            assert_eq!(content, "");
            let (content, calls) = joined(&run(ToolFormat::Generic, r#"{"tool_call": {"name": "f"#, step));
            assert!(calls.is_empty() && content.is_empty());
        }
    }
}
