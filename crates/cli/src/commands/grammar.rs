//! `nucleus grammar check`: is a text a complete match of a GBNF grammar, or of the grammar a
//! JSON Schema compiles to? (`nucleus grammar print` is in `grammar_print.rs`.) The answer comes from the same automaton constrained decoding
//! uses (nucleus-grammar's `Matcher`), never from a schema validator.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{ArgGroup, Args, Subcommand};
use nucleus_grammar::json_schema::relayout::{feed_json_in, parse_json, MemberOrders};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::{AcceptError, Grammar, Matcher};

/// Exit status: the whole input is a complete match.
pub const EXIT_MATCH: i32 = 0;
/// Exit status: the input is rejected (or, with --json-schema, is not JSON).
pub const EXIT_REJECTED: i32 = 1;
/// Exit status: the grammar or schema cannot be compiled, a file cannot be read, bad arguments.
pub const EXIT_ERROR: i32 = 2;
/// Exit status (--json-schema): undecided, the search for an order of object members the
/// grammar accepts ran out of budget before trying them all.
pub const EXIT_UNDECIDED: i32 = 3;

const EXIT_CODES: &str = "\
Exit status:
  0  the whole input is a complete match of the grammar
  1  the input is rejected: the byte offset where the grammar refuses it is printed (with
     --json-schema, an offset into the document as the grammar lays it out); also when
     --json-schema is given an input that is not JSON
  2  the grammar or schema cannot be compiled (GBNF errors give line and column; refused
     schema keywords give the keyword and its JSON pointer), a file cannot be read, or the
     arguments are wrong
  3  undecided (--json-schema): the document's members were laid out in the grammar's own
     order and refused, and the search through other orders of object members ran out of
     budget before trying them all; the document may or may not match";

/// Arguments of `nucleus grammar`.
#[derive(Args, Debug)]
pub struct GrammarArgs {
    #[command(subcommand)]
    pub command: GrammarCommand,
}

/// The `nucleus grammar` subcommands.
#[derive(Subcommand, Debug)]
pub enum GrammarCommand {
    /// Check whether a text is a complete match of a GBNF grammar or a JSON Schema
    ///
    /// With --grammar the input's bytes are fed as they are (invalid UTF-8 included) through
    /// the grammar. With --json-schema the schema is compiled by the strict converter (the
    /// grammar `generate` and `serve` enforce), the input is parsed as JSON, laid out the way
    /// that grammar writes JSON (compact, each object's members in the order the grammar writes
    /// them) and the layout is fed through the grammar: the verdict is the grammar's, not a
    /// validator's.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Print the GBNF grammar a JSON Schema compiles to (strict mode, or llama.cpp's with
    /// --compat); exit status 2 when the schema is refused
    Print(super::grammar_print::PrintArgs),
}

/// Arguments of `nucleus grammar check`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("source").required(true).args(["grammar", "json_schema"])))]
#[command(group(ArgGroup::new("subject").required(true).args(["input", "text"])))]
pub struct CheckArgs {
    /// GBNF grammar file (llama.cpp syntax)
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,
    /// JSON Schema file, compiled with the strict converter
    #[arg(long, value_name = "FILE")]
    pub json_schema: Option<PathBuf>,
    /// Read the text to check from FILE (`-` for stdin)
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The text to check (it may start with `-`, as a negative JSON number does)
    #[arg(long, value_name = "STRING", allow_hyphen_values = true)]
    pub text: Option<String>,
    /// With --grammar: the start rule [default: root]
    #[arg(long, value_name = "NAME", requires = "grammar")]
    pub root: Option<String>,
    /// With --json-schema: ignore keywords the strict converter cannot enforce (each is
    /// reported on stderr) instead of refusing the schema
    #[arg(long, conflicts_with = "grammar")]
    pub lenient: bool,
}

/// What a check found: the exit status and the report for stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// [`EXIT_MATCH`], [`EXIT_REJECTED`] or [`EXIT_UNDECIDED`].
    pub code: i32,
    /// The report, one or more lines.
    pub report: String,
}

impl Outcome {
    fn matched(report: String) -> Self {
        Outcome { code: EXIT_MATCH, report }
    }

    fn rejected(report: String) -> Self {
        Outcome { code: EXIT_REJECTED, report }
    }

    fn undecided(report: String) -> Self {
        Outcome { code: EXIT_UNDECIDED, report }
    }
}

/// Runs the command and returns the process exit status (see [`EXIT_MATCH`] and the others).
pub fn run(args: &GrammarArgs) -> i32 {
    match &args.command {
        GrammarCommand::Print(a) => super::grammar_print::run(a),
        GrammarCommand::Check(a) => match check(a) {
            Ok(o) => {
                let mut out = std::io::stdout().lock();
                // A closed stdout must not turn a verdict into a panic.
                let _ = writeln!(out, "{}", o.report);
                let _ = out.flush();
                o.code
            }
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                EXIT_ERROR
            }
        },
    }
}

/// The check itself. `Err` is an exit-2 error (compile failure, unreadable file).
fn check(a: &CheckArgs) -> Result<Outcome, String> {
    if let Some(path) = &a.grammar {
        let text = read_text(path, "grammar")?;
        let root = a.root.as_deref().unwrap_or("root");
        let grammar = Grammar::parse(&text, root).map_err(|e| format!("{}: {e}", path.display()))?;
        let input = read_input(a)?;
        Ok(check_bytes(&Matcher::new(grammar), &input))
    } else if let Some(path) = &a.json_schema {
        let text = read_text(path, "schema")?;
        let schema: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: the schema is not JSON: {e}", path.display()))?;
        let opts = SchemaOptions { lenient: a.lenient, ..SchemaOptions::default() };
        let compiled =
            schema_to_gbnf(&schema, &opts).map_err(|e| format!("{}: schema refused: {e}", path.display()))?;
        for k in &compiled.ignored {
            let _ = writeln!(std::io::stderr(), "warning: ignored (not enforced by the grammar): {k}");
        }
        let grammar = compiled.grammar().map_err(|e| format!("{}: {e}", path.display()))?;
        let input = read_input(a)?;
        Ok(check_json(&Matcher::new(grammar), &compiled.member_orders, &input))
    } else {
        // clap's required group makes this unreachable; an error beats a panic all the same.
        Err("one of --grammar or --json-schema is required".into())
    }
}

fn read_text(path: &Path, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {what} file {}: {e}", path.display()))
}

fn read_input(a: &CheckArgs) -> Result<Vec<u8>, String> {
    match (&a.text, &a.input) {
        (Some(t), _) => Ok(t.as_bytes().to_vec()),
        (None, Some(p)) if p.as_os_str() == "-" => {
            let mut v = Vec::new();
            std::io::stdin().read_to_end(&mut v).map_err(|e| format!("cannot read the input from stdin: {e}"))?;
            Ok(v)
        }
        (None, Some(p)) => std::fs::read(p).map_err(|e| format!("cannot read input file {}: {e}", p.display())),
        (None, None) => Err("one of --input or --text is required".into()),
    }
}

/// Feeds `input` as plain text (bytes as they are) through a matcher at its start.
pub fn check_bytes(m: &Matcher, input: &[u8]) -> Outcome {
    let mut m = m.clone();
    match m.accept_bytes(input) {
        Ok(()) if m.can_end() => Outcome::matched(format!("ok: {}", n_bytes_match(input.len()))),
        Ok(()) => Outcome::rejected(format!(
            "rejected at byte {} (end of input): the grammar expects more{}\n{}",
            input.len(),
            if ends_mid_char(input) { " (the input ends inside a UTF-8 character)" } else { "" },
            excerpt(input, input.len())
        )),
        Err(AcceptError::AtByte(k)) => {
            Outcome::rejected(format!("rejected at byte {k}: {}\n{}", unexpected(input, k), excerpt(input, k)))
        }
        Err(e) => Outcome::rejected(format!("rejected: {e}")),
    }
}

/// Parses `input` as JSON, lays it out as the schema grammar writes JSON (members in the
/// grammar's `orders`) and feeds it through.
pub fn check_json(m: &Matcher, orders: &MemberOrders, input: &[u8]) -> Outcome {
    let text = match std::str::from_utf8(input) {
        Ok(t) => t,
        Err(e) => {
            return Outcome::rejected(format!(
                "rejected: the input is not JSON: invalid UTF-8 at byte {}",
                e.valid_up_to()
            ))
        }
    };
    let doc = match parse_json(text) {
        Ok(d) => d,
        Err(e) => return Outcome::rejected(format!("rejected: the input is not JSON: {e}")),
    };
    let v = feed_json_in(m, &doc, orders);
    const NOTE: &str = "(offsets count bytes of the document as the grammar lays it out: compact, object keys \
                        in an order the grammar accepts)";
    if v.accepted {
        return Outcome::matched(format!(
            "ok: {} (the document as the grammar lays it out):\n{}",
            n_bytes_match(v.text.len()),
            v.text
        ));
    }
    if v.gave_up {
        return Outcome::undecided(format!(
            "undecided: the grammar refused the document with its members in the grammar's order, and the search \
             through other orders of object members ran out of budget; the grammar accepted the first {} of the \
             longest layout tried:\n{}",
            n_bytes(v.text.len()),
            excerpt(v.text.as_bytes(), v.text.len())
        ));
    }
    if let Some(f) = v.failure {
        let b = f.text.as_bytes();
        return Outcome::rejected(format!(
            "rejected at byte {}: {}\n{}\n{NOTE}",
            f.offset,
            unexpected(b, f.offset),
            excerpt(b, f.offset)
        ));
    }
    Outcome::rejected(format!(
        "rejected at byte {} (end of input): the grammar expects more\n{}\n{NOTE}",
        v.text.len(),
        excerpt(v.text.as_bytes(), v.text.len())
    ))
}

fn n_bytes(n: usize) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

fn n_bytes_match(n: usize) -> String {
    format!("{} {}", n_bytes(n), if n == 1 { "matches" } else { "match" })
}

/// Length of the UTF-8 sequence a lead byte starts (`None` for continuation or invalid bytes).
fn utf8_len(b: u8) -> Option<usize> {
    match b {
        0x00..=0x7F => Some(1),
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The character that starts at or covers byte `k`: (start, char), if `k` is inside valid UTF-8.
fn char_at(bytes: &[u8], k: usize) -> Option<(usize, char)> {
    let mut s = k;
    while s > 0 && k - s < 3 && is_continuation(bytes[s]) {
        s -= 1;
    }
    let len = utf8_len(bytes[s])?;
    let end = s.checked_add(len).filter(|&e| e <= bytes.len() && e > k)?;
    std::str::from_utf8(&bytes[s..end]).ok()?.chars().next().map(|c| (s, c))
}

/// "unexpected ..." for the byte at `k` (`k` < `bytes.len()`).
fn unexpected(bytes: &[u8], k: usize) -> String {
    let Some(&b) = bytes.get(k) else { return "unexpected end of input".into() };
    match char_at(bytes, k) {
        Some((s, c)) if s == k => format!("unexpected {:?}", c.to_string()),
        Some((s, c)) => {
            format!("unexpected byte 0x{b:02X} inside the character {:?} (which starts at byte {s})", c.to_string())
        }
        None => format!("unexpected byte 0x{b:02X} (not UTF-8)"),
    }
}

/// Whether `bytes` ends with an incomplete UTF-8 sequence.
fn ends_mid_char(bytes: &[u8]) -> bool {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if is_continuation(b) {
            continue;
        }
        return utf8_len(b).is_some_and(|len| len > back);
    }
    false
}

/// `bytes` on one line: control characters and bytes that are not UTF-8 escaped.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// A one-line excerpt of `bytes` around byte `at` (up to 40 bytes before, 20 from it) and a
/// caret line under `at`, both indented by two spaces.
fn excerpt(bytes: &[u8], at: usize) -> String {
    let at = at.min(bytes.len());
    let mut start = at.saturating_sub(40);
    while start < at && is_continuation(bytes[start]) {
        start += 1;
    }
    let mut end = (at + 20).min(bytes.len());
    while end < bytes.len() && end - at < 24 && is_continuation(bytes[end]) {
        end += 1;
    }
    let lead = if start > 0 { "..." } else { "" };
    let head = format!("{lead}{}", escape(&bytes[start..at]));
    let tail = format!("{}{}", escape(&bytes[at..end]), if end < bytes.len() { "..." } else { "" });
    format!("  {head}{tail}\n  {}^", " ".repeat(head.chars().count()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(gbnf: &str) -> Matcher {
        Matcher::from_gbnf(gbnf).unwrap()
    }

    #[test]
    fn gbnf_offsets_and_messages() {
        let m = matcher(r#"root ::= "ab" [0-9]+ "!""#);
        assert_eq!(check_bytes(&m, b"ab12!"), Outcome::matched("ok: 5 bytes match".into()));
        let o = check_bytes(&m, b"ab1x!");
        assert_eq!(o.code, EXIT_REJECTED);
        assert!(o.report.starts_with("rejected at byte 3: unexpected \"x\"\n  ab1x!\n     ^"), "{}", o.report);
        let o = check_bytes(&m, b"ab12");
        assert!(o.report.starts_with("rejected at byte 4 (end of input): the grammar expects more\n"), "{}", o.report);
        let o = check_bytes(&m, b"\xFF");
        assert!(o.report.starts_with("rejected at byte 0: unexpected byte 0xFF (not UTF-8)"), "{}", o.report);
    }

    #[test]
    fn multibyte_characters() {
        let m = matcher(r#"root ::= "é" [a-z]"#);
        let o = check_bytes(&m, "éé".as_bytes());
        assert!(o.report.starts_with("rejected at byte 2: unexpected \"é\""), "{}", o.report);
        let o = check_bytes(&m, &"é".as_bytes()[..1]);
        assert!(o.report.contains("ends inside a UTF-8 character"), "{}", o.report);
        // The grammar refuses the second byte of a character whose first byte it allowed.
        let m = matcher(r#"root ::= [à-á]"#);
        let o = check_bytes(&m, "é".as_bytes());
        assert!(
            o.report.starts_with("rejected at byte 1: unexpected byte 0xA9 inside the character \"é\""),
            "{}",
            o.report
        );
    }

    #[test]
    fn excerpt_window_and_escapes() {
        let long = "x".repeat(100);
        let e = excerpt(long.as_bytes(), 50);
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines[0], format!("  ...{}...", "x".repeat(60)));
        assert_eq!(lines[1].find('^'), Some(2 + 3 + 40));
        assert_eq!(excerpt(b"a\nb", 2), "  a\\nb\n     ^");
        assert_eq!(excerpt(b"", 0), "  \n  ^");
    }

    #[test]
    fn json_layout_failure_offset() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a", "b"]
        });
        let c = schema_to_gbnf(&schema, &SchemaOptions::default()).unwrap();
        let m = Matcher::new(c.grammar().unwrap());
        let ok = check_json(&m, &c.member_orders, br#"{ "b" : "x",  "a": 1 }"#);
        assert_eq!(ok.code, EXIT_MATCH, "{}", ok.report);
        assert!(ok.report.ends_with("\n{\"a\":1,\"b\":\"x\"}"), "{}", ok.report);
        let bad = check_json(&m, &c.member_orders, br#"{"a": "1", "b": "x"}"#);
        assert!(bad.report.starts_with("rejected at byte 5: unexpected \"\\\"\""), "{}", bad.report);
        let missing = check_json(&m, &c.member_orders, br#"{"a": 1}"#);
        assert!(missing.report.starts_with("rejected at byte 6: unexpected \"}\""), "{}", missing.report);
        let not_json = check_json(&m, &c.member_orders, b"{\"a\": ");
        assert_eq!(not_json.code, EXIT_REJECTED);
        assert!(not_json.report.starts_with("rejected: the input is not JSON: "), "{}", not_json.report);
        assert!(check_json(&m, &c.member_orders, b"\xFF").report.contains("invalid UTF-8 at byte 0"));
    }
}
