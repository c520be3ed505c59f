//! gpt-oss's harmony format read as text: an answer is a series of messages, each a header up
//! to `<|message|>` (`<|start|>assistant<|channel|>analysis`, or with a recipient,
//! `<|channel|>commentary to=functions.get_weather <|constrain|>json`) and a body that ends at
//! `<|end|>` (or `<|return|>` / `<|call|>`, which end the generation too). The `analysis`
//! channel is the model's thinking; the `final` channel is the answer.
//!
//! A real gpt-oss writes the markers as control tokens; the sequence renders those into the text
//! this reader sees (and the markers never reach the answer). Under a template in harmony's style
//! on another model, the markers come as plain text split across tokens; both read the same.
//!
//! A message to a function (`to=functions.NAME` in its header, on the `commentary` channel as
//! gpt-oss writes calls) is a tool call: its name and its body (the arguments' JSON) are given out
//! as [`SplitKind::CallStart`] and [`SplitKind::CallArgs`].
//!
//! [`HarmonySplitter`] gives out nothing before it is certain: a partial marker is held back.
//! Inside a body only the markers that end a message count (`<|end|>`, `<|return|>`, `<|call|>`;
//! in a thinking body `<|start|>` too, as llama.cpp does not render `<|end|>` for gpt-oss), so a
//! `<|channel|>` written inside the final answer is answer text.

use crate::stop::partial_suffix;

use super::SplitKind;

/// Begins a message: `<|start|>` then the role.
pub const START: &str = "<|start|>";
/// Names the channel in a header.
pub const CHANNEL: &str = "<|channel|>";
/// Ends a header: the body follows.
pub const MESSAGE: &str = "<|message|>";
/// Ends a message.
pub const END: &str = "<|end|>";
/// Ends the final message and the generation.
pub const RETURN: &str = "<|return|>";
/// Ends a tool call and the generation.
pub const CALL: &str = "<|call|>";
/// Names the format of a tool call's arguments in a header.
pub const CONSTRAIN: &str = "<|constrain|>";

/// Every harmony marker: the control tokens the sequence renders into the text read here.
pub const MARKERS: [&str; 7] = [START, CHANNEL, MESSAGE, END, RETURN, CALL, CONSTRAIN];

/// The channel that carries the thinking.
pub const ANALYSIS: &str = "analysis";
/// The channel that carries the answer.
pub const FINAL: &str = "final";

/// A header longer than this without `<|message|>` is not a header: its text is given out as the
/// body it follows (or, at the start, as the answer).
const HEADER_LIMIT: usize = 256;

/// What a header may start with at the start of an answer (the prompt ended at
/// `<|start|>assistant`): the channel, a new message, or a recipient in the role.
const HEADER_STARTS: [&str; 3] = [CHANNEL, START, "to="];

/// Whether a prompt's text leaves the answer inside a thinking body: it ends with a header whose
/// channel is not `final`, then `<|message|>` (`…<|channel|>analysis<|message|>`).
pub fn prompt_opens_analysis(prompt_tail: &str) -> bool {
    let Some(head) = prompt_tail.trim_end().strip_suffix(MESSAGE) else { return false };
    let header = &head[last_restart(head)..];
    header.contains(CHANNEL) && channel_of(header) != FINAL
}

/// Where a header starts in `text`: after its last `<|start|>` or `<|end|>` (a new message
/// begins there), else at 0.
fn last_restart(text: &str) -> usize {
    [START, END].iter().filter_map(|m| text.rfind(m).map(|at| at + m.len())).max().unwrap_or(0)
}

/// The function a header addresses (`to=functions.NAME`), if any.
fn function_of(header: &str) -> Option<&str> {
    let at = header.find("to=")?;
    let rest = &header[at + 3..];
    let end = rest.find(|c: char| c.is_whitespace() || c == '<').unwrap_or(rest.len());
    rest[..end].strip_prefix("functions.").filter(|n| !n.is_empty())
}

/// The channel a header names (the word after `<|channel|>`; empty without one).
fn channel_of(header: &str) -> &str {
    let Some(at) = header.rfind(CHANNEL) else { return "" };
    let rest = header[at + CHANNEL.len()..].trim_start();
    let end = rest.find(|c: char| c.is_whitespace() || c == '<').unwrap_or(rest.len());
    &rest[..end]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// At the start: the text so far may still become a header.
    Start,
    /// Reading a header, up to `<|message|>`.
    Header,
    /// A body of a channel other than `final` (thinking).
    Thinking,
    /// The body of a message to a function: a tool call's arguments.
    Call,
    /// The final channel's body: the answer.
    Final,
    /// The answer had no harmony structure: all of it is answer text.
    Plain,
}

/// Splits a harmony answer's text into thinking (every channel but `final`) and the answer (the
/// `final` channel).
#[derive(Clone, Debug)]
pub struct HarmonySplitter {
    phase: Phase,
    /// Text received and not yet given out.
    buf: String,
    /// Some message (or header) began.
    opened: bool,
    /// The final channel began: what follows is answer, whatever comes after it.
    answering: bool,
    /// Nothing has been given out since the final body began (its leading whitespace is dropped).
    fresh_final: bool,
    /// A body was read (or the prompt opened one): a header that fails is thinking, not answer.
    had_body: bool,
    /// Some tool call began.
    called: bool,
}

impl HarmonySplitter {
    /// A splitter; `starts_inside` when the prompt opened a thinking body.
    pub fn new(starts_inside: bool) -> Self {
        HarmonySplitter {
            phase: if starts_inside { Phase::Thinking } else { Phase::Start },
            buf: String::new(),
            opened: starts_inside,
            answering: false,
            fresh_final: false,
            had_body: starts_inside,
            called: false,
        }
    }

    /// Before the final channel, once a message began (thinking, or between messages), and not
    /// inside a tool call's arguments.
    pub fn thinking(&self) -> bool {
        !self.answering && matches!(self.phase, Phase::Header | Phase::Thinking)
    }

    /// At the start, where the text so far may still become a header.
    pub fn undecided(&self) -> bool {
        self.phase == Phase::Start
    }

    /// The final channel began (or the answer has no harmony structure).
    pub fn answering(&self) -> bool {
        self.answering || self.phase == Phase::Plain
    }

    /// Whether some message began.
    pub fn opened(&self) -> bool {
        self.opened
    }

    /// Inside a tool call's arguments, or after one (the model may end there: a call ends the
    /// turn).
    pub fn in_call(&self) -> bool {
        self.phase == Phase::Call || (self.called && !self.answering)
    }

    /// Whether `text`, received now, would keep the start undecided or begin a header.
    pub fn would_open(&self, text: &str) -> bool {
        if self.phase != Phase::Start {
            return false;
        }
        let t = format!("{}{text}", self.buf);
        header_may_start(t.trim_start())
    }

    /// Feeds released text; what became certain goes to `emit` (never empty).
    pub fn feed(&mut self, text: &str, emit: &mut impl FnMut(SplitKind, &str)) {
        self.buf.push_str(text);
        loop {
            match self.phase {
                Phase::Start => {
                    let t = self.buf.trim_start();
                    if t.is_empty() || (header_may_start(t) && !HEADER_STARTS.iter().any(|s| t.starts_with(s))) {
                        return;
                    }
                    if header_may_start(t) {
                        let n = self.buf.len() - t.len();
                        self.buf.drain(..n);
                        self.phase = Phase::Header;
                        self.opened = true;
                    } else {
                        self.phase = Phase::Plain;
                    }
                }
                Phase::Header => {
                    if let Some(at) = self.buf.find(MESSAGE) {
                        let header = &self.buf[..at];
                        let header = &header[last_restart(header)..];
                        let is_final = channel_of(header) == FINAL;
                        if let Some(name) = function_of(header).filter(|_| !self.answering) {
                            emit(SplitKind::CallStart, name);
                            self.called = true;
                            self.buf.drain(..at + MESSAGE.len());
                            self.phase = Phase::Call;
                            continue;
                        }
                        self.buf.drain(..at + MESSAGE.len());
                        if is_final {
                            self.answering = true;
                            self.fresh_final = true;
                            self.phase = Phase::Final;
                        } else {
                            self.phase = if self.answering { Phase::Final } else { Phase::Thinking };
                        }
                        continue;
                    }
                    if self.buf.len() <= HEADER_LIMIT {
                        return;
                    }
                    // Not a header after all: its text is the body it follows (the answer, at
                    // the start or after the final channel; else thinking).
                    self.phase = match (self.answering, self.had_body) {
                        (true, _) => Phase::Final,
                        (false, true) => Phase::Thinking,
                        (false, false) => Phase::Plain,
                    };
                }
                Phase::Thinking => {
                    let ends: &[&str] = &[END, RETURN, CALL, START];
                    if !self.emit_body(ends, SplitKind::Reasoning, emit) {
                        return;
                    }
                }
                Phase::Call => {
                    if !self.emit_body(&[CALL, END, RETURN], SplitKind::CallArgs, emit) {
                        return;
                    }
                }
                Phase::Final => {
                    if self.fresh_final {
                        let n = self.buf.len() - self.buf.trim_start().len();
                        self.buf.drain(..n);
                        if self.buf.is_empty() {
                            return;
                        }
                        self.fresh_final = false;
                    }
                    if !self.emit_body(&[END, RETURN, CALL], SplitKind::Answer, emit) {
                        return;
                    }
                }
                Phase::Plain => {
                    if !self.buf.is_empty() {
                        emit(SplitKind::Answer, &self.buf);
                        self.buf.clear();
                    }
                    return;
                }
            }
        }
    }

    /// The answer ended: what was held back is given out (a body cut short is its channel's
    /// text; an unfinished header is dropped, except at the start, where it is answer text).
    pub fn end(&mut self, emit: &mut impl FnMut(SplitKind, &str)) {
        let kind = match self.phase {
            Phase::Start | Phase::Plain | Phase::Final => Some(SplitKind::Answer),
            Phase::Thinking => Some(SplitKind::Reasoning),
            Phase::Call => Some(SplitKind::CallArgs),
            Phase::Header => None,
        };
        if let Some(kind) = kind.filter(|_| !self.buf.is_empty()) {
            emit(kind, &self.buf);
        }
        self.buf.clear();
        if self.phase == Phase::Start {
            self.phase = Phase::Plain;
        }
    }

    /// Gives out the body in the buffer up to the first of `ends` (then goes on to a header:
    /// `true`), or all of it but a tail that could still become one (`false`: wait for more).
    fn emit_body(&mut self, ends: &[&str], kind: SplitKind, emit: &mut impl FnMut(SplitKind, &str)) -> bool {
        let first = ends.iter().filter_map(|m| self.buf.find(m).map(|at| (at, *m))).min();
        if let Some((at, marker)) = first {
            if at > 0 {
                emit(kind, &self.buf[..at]);
            }
            // `<|start|>` stays: the header reads it as the start of the next message.
            let skip = if marker == START { at } else { at + marker.len() };
            self.buf.drain(..skip);
            self.phase = Phase::Header;
            self.had_body = true;
            return true;
        }
        let keep = ends.iter().map(|m| partial_suffix(&self.buf, m)).max().unwrap_or(0);
        let head = self.buf.len() - keep;
        if head > 0 {
            emit(kind, &self.buf[..head]);
            self.buf.drain(..head);
        }
        false
    }
}

/// Whether `t` (trimmed) starts a header, or could still as more text arrives.
fn header_may_start(t: &str) -> bool {
    HEADER_STARTS.iter().any(|s| t.starts_with(s) || s.starts_with(t))
}

#[cfg(test)]
mod tests {
    use super::super::{BlockStyle, Split, ThinkSplitter};
    use super::*;

    /// Feeds `pieces` in order: every split, adjacent ones of a kind joined.
    fn splits(starts_inside: bool, pieces: &[&str]) -> Vec<Split> {
        let mut s = ThinkSplitter::with_style(BlockStyle::Harmony, starts_inside);
        let mut out: Vec<Split> = Vec::new();
        let mut raw = Vec::new();
        for p in pieces {
            s.push(p, &mut raw);
        }
        s.finish(&mut raw);
        for p in raw {
            match (out.last_mut(), p) {
                (Some(Split::Reasoning(a)), Split::Reasoning(b)) => a.push_str(&b),
                (Some(Split::Answer(a)), Split::Answer(b)) => a.push_str(&b),
                (Some(Split::CallArgs(a)), Split::CallArgs(b)) => a.push_str(&b),
                (_, p) => out.push(p),
            }
        }
        out
    }

    /// Feeds `pieces` in order and joins what comes out: (reasoning, answer).
    fn read(starts_inside: bool, pieces: &[&str]) -> (String, String) {
        let mut s = ThinkSplitter::with_style(BlockStyle::Harmony, starts_inside);
        let mut out = Vec::new();
        for p in pieces {
            s.push(p, &mut out);
        }
        s.finish(&mut out);
        crate::reasoning::joined(out)
    }

    /// `text` cut into pieces of `step` bytes (on character boundaries).
    fn pieces(text: &str, step: usize) -> Vec<&str> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() {
            let mut j = (i + step).min(text.len());
            while !text.is_char_boundary(j) {
                j += 1;
            }
            out.push(&text[i..j]);
            i = j;
        }
        out
    }

    #[test]
    fn control_token_pieces_as_gpt_oss_writes_them() {
        // The pieces of a real gpt-oss answer after `<|start|>assistant`: each marker one token.
        let recorded = [
            "<|channel|>",
            "analysis",
            "<|message|>",
            "User",
            " wants",
            " {",
            "json",
            "}.",
            "<|end|>",
            "<|start|>",
            "assistant",
            "<|channel|>",
            "final",
            "<|message|>",
            "{\"",
            "n",
            "\":",
            " 1",
            "}",
        ];
        assert_eq!(read(false, &recorded), ("User wants {json}.".into(), "{\"n\": 1}".into()));
    }

    #[test]
    fn markers_split_across_pieces() {
        let text = "Think <|en d|> on.<|end|><|start|>assistant<|channel|>final<|message|>The answer.";
        for step in 1..=12 {
            let (r, a) = read(true, &pieces(text, step));
            assert_eq!((r.as_str(), a.as_str()), ("Think <|en d|> on.", "The answer."), "step {step}");
        }
        // The model opens the analysis channel itself, after whitespace.
        let text = "\n<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|> Hi";
        for step in [1, 2, 5, 100] {
            assert_eq!(read(false, &pieces(text, step)), ("Hmm.".into(), "Hi".into()), "step {step}");
        }
    }

    #[test]
    fn a_missing_end_at_max_tokens_is_all_thinking() {
        for step in [1, 3, 100] {
            assert_eq!(read(true, &pieces("Still thinking <|en", step)), ("Still thinking <|en".into(), "".into()));
            // Cut inside the final channel's header: the header is dropped.
            let cut = "Done.<|end|><|start|>assistant<|channel|>fin";
            assert_eq!(read(true, &pieces(cut, step)), ("Done.".into(), "".into()));
        }
    }

    #[test]
    fn marker_like_text_inside_the_final_answer_is_answer() {
        let text = "ok<|end|><|start|>assistant<|channel|>final<|message|>Write `<|channel|>analysis<|message|>` \
                    and `<|start|>` like this.";
        for step in [1, 4, 9, 100] {
            let (r, a) = read(true, &pieces(text, step));
            assert_eq!(r, "ok");
            assert_eq!(a, "Write `<|channel|>analysis<|message|>` and `<|start|>` like this.", "step {step}");
        }
    }

    #[test]
    fn several_messages_and_commentary() {
        // A commentary preamble (not final) is thinking; text after the final channel is answer.
        let text = "a<|end|><|start|>assistant<|channel|>commentary<|message|>b<|end|>\
                    <|start|>assistant<|channel|>final<|message|>c<|return|>";
        assert_eq!(read(true, &pieces(text, 3)), ("ab".into(), "c".into()));
        // llama.cpp leaves `<|end|>` out of gpt-oss's text: `<|start|>` ends the body too.
        let text = "<|channel|>analysis<|message|>x<|start|>assistant<|channel|>final<|message|>y";
        assert_eq!(read(false, &pieces(text, 2)), ("x".into(), "y".into()));
    }

    #[test]
    fn a_commentary_message_to_a_function_is_a_tool_call() {
        // As gpt-oss writes a call, markers as control tokens; `<|call|>` ends the generation.
        let recorded = [
            "<|channel|>",
            "analysis",
            "<|message|>",
            "Need",
            " weather",
            ".",
            "<|end|>",
            "<|start|>",
            "assistant",
            "<|channel|>",
            "commentary",
            " to",
            "=",
            "functions",
            ".get",
            "_weather",
            " ",
            "<|constrain|>",
            "json",
            "<|message|>",
            "{\"",
            "city",
            "\":\"",
            "Oslo",
            "\"}",
            "<|call|>",
        ];
        let want = vec![
            Split::Reasoning("Need weather.".into()),
            Split::CallStart("get_weather".into()),
            Split::CallArgs("{\"city\":\"Oslo\"}".into()),
        ];
        assert_eq!(splits(false, &recorded), want);
        // The recipient in the role, the arguments in plain-text pieces, cut at max_tokens.
        let text = "x<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{\"a\": 1";
        for step in [1, 5, 100] {
            let got = splits(true, &pieces(text, step));
            assert_eq!(
                got,
                [Split::Reasoning("x".into()), Split::CallStart("f".into()), Split::CallArgs("{\"a\": 1".into())]
            );
        }
        let mut s = ThinkSplitter::with_style(BlockStyle::Harmony, true);
        s.push("<|end|><|start|>assistant<|channel|>commentary to=functions.f<|message|>{", &mut Vec::new());
        assert!(s.in_call() && !s.thinking() && !s.answering());
    }

    #[test]
    fn an_answer_without_harmony_structure_is_plain() {
        for step in [1, 100] {
            assert_eq!(read(false, &pieces("Hello <|end|> there", step)), ("".into(), "Hello <|end|> there".into()));
            assert_eq!(read(false, &pieces("<|chan", step)), ("".into(), "<|chan".into()));
        }
        // A header that never reaches `<|message|>` is given out as the answer.
        let long = format!("<|channel|>{}", "x".repeat(300));
        assert_eq!(read(false, &[&long]), ("".into(), long.clone()));
    }

    #[test]
    fn phases_and_prompts() {
        let mut s = ThinkSplitter::with_style(BlockStyle::Harmony, false);
        assert!(s.undecided() && s.would_open("<|") && s.would_open(" <|channel|>") && !s.would_open("{"));
        s.push("<|channel|>anal", &mut Vec::new());
        assert!(s.thinking() && s.opened() && !s.answering());
        s.push("ysis<|message|>{<|end|><|start|>assistant<|channel|>final<|mess", &mut Vec::new());
        assert!(s.thinking());
        s.push("age|>", &mut Vec::new());
        assert!(s.answering() && !s.thinking());
        assert!(prompt_opens_analysis("<|start|>assistant<|channel|>analysis<|message|>"));
        assert!(prompt_opens_analysis("<|end|><|start|>assistant<|channel|>analysis<|message|>\n"));
        assert!(!prompt_opens_analysis("<|start|>assistant<|channel|>final<|message|>"));
        assert!(!prompt_opens_analysis("<|start|>assistant"));
        assert!(!prompt_opens_analysis("<|start|>user<|message|>"));
    }
}
