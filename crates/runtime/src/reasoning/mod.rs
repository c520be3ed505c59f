//! Reasoning ("thinking") in answers, in two styles ([`BlockStyle`]):
//!
//! * `<think>…</think>` blocks as DeepSeek-R1 and Qwen3 write them, at the start of the answer,
//!   or — when the template's generation prompt already opened the block — the answer starts
//!   inside it and only `</think>` follows;
//! * gpt-oss's harmony channels ([`harmony`]): `analysis` messages are the thinking, the `final`
//!   channel's message is the answer.
//!
//! * [`ReasoningFormat`]: whether and how answers are read (`--reasoning-format`).
//! * [`ThinkSplitter`]: text in (as released, in any pieces), [`Split`]s out: the reasoning and
//!   the answer, never given out before it is certain (a partial tag is held back). One block
//!   only, at the start: a tag later in the answer (say, in a code block) is answer text.
//! * [`ReasoningOptions`]: what a [`crate::Sequence`] does with a block — constraints (grammar,
//!   token trie) wait until it ends, and a budget forces its end.

pub mod harmony;

use std::str::FromStr;

use crate::stop::partial_suffix;

/// The tag that opens a block.
pub const THINK_OPEN: &str = "<think>";
/// The tag that closes a block.
pub const THINK_CLOSE: &str = "</think>";

/// How answers are read for reasoning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReasoningFormat {
    /// No reasoning: everything is the answer.
    None,
    /// `<think>…</think>` blocks (DeepSeek-R1, Qwen3, QwQ, and templates in their style).
    Deepseek,
    /// gpt-oss's harmony channels: `analysis` is thinking, `final` the answer.
    Harmony,
    /// `Harmony` when the chat template writes `<|channel|>`, else `Deepseek` when it writes
    /// `<think>`, else `None`.
    #[default]
    Auto,
}

/// How a reasoning block is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlockStyle {
    /// `<think>…</think>`.
    #[default]
    Think,
    /// Harmony channels (`<|channel|>analysis<|message|>…<|end|>`, then the `final` channel).
    Harmony,
}

impl BlockStyle {
    /// Whether a prompt's text (its last tokens, control tokens included) leaves the answer
    /// inside a block: it ends with `<think>` (maybe and whitespace), or with a harmony header
    /// of a thinking channel and `<|message|>`.
    pub fn prompt_opens(self, prompt_tail: &str) -> bool {
        match self {
            BlockStyle::Think => prompt_opens_block(prompt_tail),
            BlockStyle::Harmony => harmony::prompt_opens_analysis(prompt_tail),
        }
    }
}

impl FromStr for ReasoningFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(ReasoningFormat::None),
            "deepseek" => Ok(ReasoningFormat::Deepseek),
            "auto" => Ok(ReasoningFormat::Auto),
            "harmony" => Ok(ReasoningFormat::Harmony),
            other => Err(format!("'{other}' is not one of 'none', 'deepseek', 'harmony', 'auto'")),
        }
    }
}

impl ReasoningFormat {
    /// Whether answers under a template with `template_source` are read for blocks.
    pub fn reads_blocks(self, template_source: &str) -> bool {
        self.style(template_source).is_some()
    }

    /// How answers under a template with `template_source` are read (`None`: not at all).
    pub fn style(self, template_source: &str) -> Option<BlockStyle> {
        match self {
            ReasoningFormat::None => None,
            ReasoningFormat::Deepseek => Some(BlockStyle::Think),
            ReasoningFormat::Harmony => Some(BlockStyle::Harmony),
            ReasoningFormat::Auto if is_harmony_template(template_source) => Some(BlockStyle::Harmony),
            ReasoningFormat::Auto if template_source.contains(THINK_OPEN) => Some(BlockStyle::Think),
            ReasoningFormat::Auto => None,
        }
    }

    /// The name `--reasoning-format` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningFormat::None => "none",
            ReasoningFormat::Deepseek => "deepseek",
            ReasoningFormat::Harmony => "harmony",
            ReasoningFormat::Auto => "auto",
        }
    }
}

/// Whether a chat template writes harmony messages (gpt-oss's: it names channels with
/// `<|channel|>` and opens bodies with `<|message|>`).
pub fn is_harmony_template(template_source: &str) -> bool {
    template_source.contains(harmony::CHANNEL) && template_source.contains(harmony::MESSAGE)
}

/// Whether a prompt's text leaves the answer inside an opened block (the generation prompt ends
/// with `<think>`, maybe followed by whitespace).
pub fn prompt_opens_block(prompt_tail: &str) -> bool {
    prompt_tail.trim_end().ends_with(THINK_OPEN)
}

/// What a sequence does with a reasoning block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReasoningOptions {
    /// How the block is written.
    pub style: BlockStyle,
    /// The prompt opened the block: the answer starts inside it.
    pub starts_inside: bool,
    /// Most tokens of thinking; then the end is forced (`None`: no limit; 0: at once).
    pub budget: Option<usize>,
    /// Text forced before the closing tag when the budget is spent (llama.cpp's
    /// `--reasoning-budget-message`), e.g. "Time to answer.".
    pub budget_message: String,
}

impl ReasoningOptions {
    /// The text forced when the budget is spent: the message, then the closing tag and the
    /// blank line the families write before their answer — or, in harmony, the end of the
    /// message and the header of the final channel.
    pub fn forced_end_text(&self) -> String {
        let msg = self.budget_message.trim();
        let msg = if msg.is_empty() { String::new() } else { format!("\n{msg}") };
        match self.style {
            BlockStyle::Think => format!("{msg}\n{THINK_CLOSE}\n\n"),
            BlockStyle::Harmony => {
                use harmony::{CHANNEL, END, FINAL, MESSAGE, START};
                format!("{msg}{END}{START}assistant{CHANNEL}{FINAL}{MESSAGE}")
            }
        }
    }

    /// Harmony only: the text forced at the start of an answer that may not think at all
    /// (budget 0) when the prompt did not open a message: the final channel's header.
    pub fn forced_final_header(&self) -> Option<String> {
        use harmony::{CHANNEL, FINAL, MESSAGE};
        (self.style == BlockStyle::Harmony).then(|| format!("{CHANNEL}{FINAL}{MESSAGE}"))
    }
}

/// A piece of an answer read for reasoning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// Thinking text.
    Reasoning(String),
    /// Answer text.
    Answer(String),
    /// Harmony: a tool call to this function begins.
    CallStart(String),
    /// Harmony: the next piece of the current call's arguments (JSON text).
    CallArgs(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// At the start: the text so far may still become `<think>`.
    Start,
    /// Inside the block.
    Thinking,
    /// Right after the block: whitespace before the answer is dropped.
    AfterBlock,
    /// The answer.
    Answer,
}

/// Splits an answer's text into its reasoning and the answer proper, in either style.
#[derive(Clone, Debug)]
pub struct ThinkSplitter(Style);

#[derive(Clone, Debug)]
enum Style {
    Think(TagSplitter),
    Harmony(harmony::HarmonySplitter),
}

/// Calls the same method on the splitter of either style.
macro_rules! either {
    ($self:expr, $s:ident => $e:expr) => {
        match &$self.0 {
            Style::Think($s) => $e,
            Style::Harmony($s) => $e,
        }
    };
}

impl ThinkSplitter {
    /// A `<think>` splitter; `starts_inside` when the prompt opened the block.
    pub fn new(starts_inside: bool) -> Self {
        ThinkSplitter(Style::Think(TagSplitter::new(starts_inside)))
    }

    /// A splitter for `style`; `starts_inside` when the prompt opened the block.
    pub fn with_style(style: BlockStyle, starts_inside: bool) -> Self {
        match style {
            BlockStyle::Think => Self::new(starts_inside),
            BlockStyle::Harmony => ThinkSplitter(Style::Harmony(harmony::HarmonySplitter::new(starts_inside))),
        }
    }

    /// The style read.
    pub fn style(&self) -> BlockStyle {
        match self.0 {
            Style::Think(_) => BlockStyle::Think,
            Style::Harmony(_) => BlockStyle::Harmony,
        }
    }

    /// Inside the block (in harmony: before the final channel, once a message began).
    pub fn thinking(&self) -> bool {
        either!(self, s => s.thinking())
    }

    /// At the start, where the text so far may still open the block.
    pub fn undecided(&self) -> bool {
        either!(self, s => s.undecided())
    }

    /// The block has ended (or there was none): the rest is answer.
    pub fn answering(&self) -> bool {
        either!(self, s => s.answering())
    }

    /// Whether the answer opened a block (it may have ended since).
    pub fn opened(&self) -> bool {
        either!(self, s => s.opened())
    }

    /// Whether `text`, received now, would keep the start undecided or open the block.
    pub fn would_open(&self, text: &str) -> bool {
        either!(self, s => s.would_open(text))
    }

    /// Harmony: inside a tool call's arguments, or after one before the final channel (never for
    /// `<think>`).
    pub fn in_call(&self) -> bool {
        match &self.0 {
            Style::Think(_) => false,
            Style::Harmony(s) => s.in_call(),
        }
    }

    /// Feeds released text; what became certain is appended to `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<Split>) {
        self.feed(text, &mut |kind, t| out.push(kind.owned(t)));
    }

    /// The answer ended: what was held back is given out (an unclosed block is all reasoning;
    /// a start that was never decided is answer text).
    pub fn finish(&mut self, out: &mut Vec<Split>) {
        self.end(&mut |kind, t| out.push(kind.owned(t)));
    }

    /// [`ThinkSplitter::push`] with what became certain handed to `emit` as borrowed text
    /// (never empty), so a reader that only follows the phase (the sequence's) allocates
    /// nothing per token.
    pub fn feed(&mut self, text: &str, emit: &mut impl FnMut(SplitKind, &str)) {
        match &mut self.0 {
            Style::Think(s) => s.feed(text, emit),
            Style::Harmony(s) => s.feed(text, emit),
        }
    }

    /// [`ThinkSplitter::finish`] with borrowed text, as [`ThinkSplitter::feed`].
    pub fn end(&mut self, emit: &mut impl FnMut(SplitKind, &str)) {
        match &mut self.0 {
            Style::Think(s) => s.end(emit),
            Style::Harmony(s) => s.end(emit),
        }
    }
}

/// The `<think>…</think>` splitter.
#[derive(Clone, Debug)]
struct TagSplitter {
    phase: Phase,
    /// Text received and not yet given out.
    buf: String,
    /// Nothing has been given out since the block opened (leading whitespace is dropped).
    fresh: bool,
    /// The answer has (or had) a block.
    opened: bool,
}

impl TagSplitter {
    /// A splitter; `starts_inside` when the prompt opened the block.
    fn new(starts_inside: bool) -> Self {
        TagSplitter {
            phase: if starts_inside { Phase::Thinking } else { Phase::Start },
            buf: String::new(),
            fresh: true,
            opened: starts_inside,
        }
    }

    /// Inside the block (or at the start, where it may still open).
    fn thinking(&self) -> bool {
        self.phase == Phase::Thinking
    }

    /// At the start, where the text so far is (after whitespace) a prefix of `<think>`.
    fn undecided(&self) -> bool {
        self.phase == Phase::Start
    }

    /// The block has ended (or there was none): the rest is answer.
    fn answering(&self) -> bool {
        matches!(self.phase, Phase::AfterBlock | Phase::Answer)
    }

    /// Whether the answer opened a block (it may have ended since).
    fn opened(&self) -> bool {
        self.opened
    }

    /// Whether `text`, received now, would keep the start undecided or open the block.
    fn would_open(&self, text: &str) -> bool {
        if self.phase != Phase::Start {
            return false;
        }
        let t = format!("{}{text}", self.buf);
        let t = t.trim_start();
        t.starts_with(THINK_OPEN) || THINK_OPEN.starts_with(t)
    }

    /// See [`ThinkSplitter::feed`].
    fn feed(&mut self, text: &str, emit: &mut impl FnMut(SplitKind, &str)) {
        self.buf.push_str(text);
        loop {
            match self.phase {
                Phase::Start => {
                    let t = self.buf.trim_start();
                    if t.starts_with(THINK_OPEN) {
                        let skip = self.buf.len() - t.len() + THINK_OPEN.len();
                        self.buf.drain(..skip);
                        self.phase = Phase::Thinking;
                        self.opened = true;
                    } else if THINK_OPEN.starts_with(t) {
                        return;
                    } else {
                        self.phase = Phase::Answer;
                    }
                }
                Phase::Thinking => {
                    if self.fresh {
                        let n = self.buf.len() - self.buf.trim_start().len();
                        self.buf.drain(..n);
                    }
                    if let Some(at) = self.buf.find(THINK_CLOSE) {
                        let before = self.buf[..at].trim_end().len();
                        self.emit_reasoning(before, emit);
                        self.buf.drain(..at + THINK_CLOSE.len());
                        self.phase = Phase::AfterBlock;
                        continue;
                    }
                    // Hold back a tail that could still become `</think>`, and the whitespace
                    // before it (the reasoning is given out trimmed).
                    let keep = partial_suffix(&self.buf, THINK_CLOSE);
                    let head = self.buf[..self.buf.len() - keep].trim_end().len();
                    self.emit_reasoning(head, emit);
                    self.buf.drain(..head);
                    return;
                }
                Phase::AfterBlock => {
                    let n = self.buf.len() - self.buf.trim_start().len();
                    self.buf.drain(..n);
                    if self.buf.is_empty() {
                        return;
                    }
                    self.phase = Phase::Answer;
                }
                Phase::Answer => {
                    if !self.buf.is_empty() {
                        emit(SplitKind::Answer, &self.buf);
                        self.buf.clear();
                    }
                    return;
                }
            }
        }
    }

    /// See [`ThinkSplitter::end`].
    fn end(&mut self, emit: &mut impl FnMut(SplitKind, &str)) {
        match self.phase {
            Phase::Start | Phase::Answer if !self.buf.is_empty() => emit(SplitKind::Answer, &self.buf),
            Phase::Thinking => {
                let n = self.buf.trim_end().len();
                self.emit_reasoning(n, emit);
            }
            _ => {}
        }
        self.buf.clear();
        if self.phase == Phase::Start {
            self.phase = Phase::Answer;
        }
    }

    /// Gives out the first `len` bytes of the buffer as reasoning (the caller drains them).
    fn emit_reasoning(&mut self, len: usize, emit: &mut impl FnMut(SplitKind, &str)) {
        if len > 0 {
            self.fresh = false;
            emit(SplitKind::Reasoning, &self.buf[..len]);
        }
    }
}

/// Which side of the block a piece of text is on ([`ThinkSplitter::feed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitKind {
    /// Thinking.
    Reasoning,
    /// The answer.
    Answer,
    /// Harmony: a tool call begins; the text is the function's name.
    CallStart,
    /// Harmony: a piece of the current call's arguments.
    CallArgs,
}

impl SplitKind {
    /// `text` as an owned [`Split`] of this kind.
    pub fn owned(self, text: &str) -> Split {
        match self {
            SplitKind::Reasoning => Split::Reasoning(text.to_string()),
            SplitKind::Answer => Split::Answer(text.to_string()),
            SplitKind::CallStart => Split::CallStart(text.to_string()),
            SplitKind::CallArgs => Split::CallArgs(text.to_string()),
        }
    }
}

/// What a splitter handed out, joined: (reasoning, answer). For tests of either style; a call
/// piece fails the test.
#[cfg(test)]
pub(crate) fn joined(out: Vec<Split>) -> (String, String) {
    let (mut r, mut a) = (String::new(), String::new());
    for p in out {
        match p {
            Split::Reasoning(t) => r.push_str(&t),
            Split::Answer(t) => a.push_str(&t),
            Split::CallStart(_) | Split::CallArgs(_) => panic!("a call: {p:?}"),
        }
    }
    (r, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `step` bytes and joins what comes out.
    fn split(starts_inside: bool, text: &str, step: usize) -> (String, String) {
        let mut s = ThinkSplitter::new(starts_inside);
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() {
            let mut j = (i + step).min(text.len());
            while !text.is_char_boundary(j) {
                j += 1;
            }
            s.push(&text[i..j], &mut out);
            i = j;
        }
        s.finish(&mut out);
        joined(out)
    }

    #[test]
    fn a_block_the_model_opens() {
        for step in [1, 2, 3, 5, 100] {
            let (r, a) = split(false, "<think>\nLet me see: {a}.\n</think>\n\n{\"x\": 1}", step);
            assert_eq!((r.as_str(), a.as_str()), ("Let me see: {a}.", "{\"x\": 1}"), "{step}");
        }
    }

    #[test]
    fn a_block_the_prompt_opened() {
        for step in [1, 4, 100] {
            let (r, a) = split(true, "\nHmm </thi nk> no.\n</think>\n\nAnswer", step);
            assert_eq!((r.as_str(), a.as_str()), ("Hmm </thi nk> no.", "Answer"), "{step}");
        }
    }

    #[test]
    fn no_block_and_later_tags_are_answer() {
        for step in [1, 3, 100] {
            let (r, a) = split(false, "Use `<think>x</think>` in code.", step);
            assert_eq!((r.as_str(), a.as_str()), ("", "Use `<think>x</think>` in code."));
            let (r, a) = split(false, "<think>a</think>B ```</think>```", step);
            assert_eq!((r.as_str(), a.as_str()), ("a", "B ```</think>```"));
            let (r, a) = split(false, "<thi", step);
            assert_eq!((r.as_str(), a.as_str()), ("", "<thi"));
        }
    }

    #[test]
    fn an_unclosed_block_is_reasoning() {
        for step in [1, 7] {
            let (r, a) = split(true, "Still thinking </thi", step);
            assert_eq!((r.as_str(), a.as_str()), ("Still thinking </thi", ""));
        }
    }

    #[test]
    fn would_open_follows_the_start() {
        let s = ThinkSplitter::new(false);
        assert!(s.would_open("<"));
        assert!(s.would_open(" <thi"));
        assert!(s.would_open("<think>Hi"));
        assert!(!s.would_open("{"));
        assert!(!ThinkSplitter::new(true).would_open("<"));
    }

    #[test]
    fn formats() {
        assert!(ReasoningFormat::Auto.reads_blocks("{{ '<think>' }}"));
        let harmony = "<|start|>assistant<|channel|>analysis<|message|>{{ m.thinking }}<|end|>";
        assert_eq!(ReasoningFormat::Auto.style(harmony), Some(BlockStyle::Harmony));
        assert_eq!(ReasoningFormat::Auto.style("<think>"), Some(BlockStyle::Think));
        assert_eq!(ReasoningFormat::Harmony.style("chatml"), Some(BlockStyle::Harmony));
        assert_eq!("harmony".parse(), Ok(ReasoningFormat::Harmony));
        let o = ReasoningOptions { style: BlockStyle::Harmony, ..Default::default() };
        assert_eq!(o.forced_end_text(), "<|end|><|start|>assistant<|channel|>final<|message|>");
        assert!(!ReasoningFormat::Auto.reads_blocks("chatml"));
        assert!(!ReasoningFormat::None.reads_blocks("<think>"));
        assert_eq!("deepseek".parse(), Ok(ReasoningFormat::Deepseek));
        assert!("r1".parse::<ReasoningFormat>().is_err());
        assert!(prompt_opens_block("<|im_start|>assistant\n<think>\n"));
        assert!(!prompt_opens_block("<think>\n\n</think>\n\n"));
    }
}
