//! `nucleus grammar check` follows its command-line contract: exit 0 on a complete match, 1 on
//! rejection (with the byte offset), 2 when the grammar or schema cannot be compiled.

mod common;

use common::{nucleus, write};
use std::process::Command;

const GBNF: &str = r#"
root ::= greeting " " name "!"
greeting ::= "hello" | "hi"
name ::= [a-z]+
"#;

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0},
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["name", "age"]
}"#;

fn check_gbnf(text: &str) -> (i32, String, String) {
    let g = write("g.gbnf", GBNF.as_bytes());
    nucleus(&["grammar", "check", "--grammar", g.to_str().unwrap(), "--text", text])
}

fn check_schema(input: &str) -> (i32, String, String) {
    let s = write("s.json", SCHEMA.as_bytes());
    nucleus(&["grammar", "check", "--json-schema", s.to_str().unwrap(), "--text", input])
}

#[test]
fn gbnf_match() {
    let (code, out, err) = check_gbnf("hello world!");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "ok: 12 bytes match");
}

#[test]
fn gbnf_reject_at_offset() {
    // "hello wor" is fine; "L" is not in [a-z]: byte 9.
    let (code, out, err) = check_gbnf("hello worLd!");
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("rejected at byte 9: unexpected \"L\"\n"), "{out}");
    // The excerpt and a caret under the refused byte.
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "  hello worLd!");
    assert_eq!(lines[2], format!("  {}^", " ".repeat(9)));
    // The first byte can be the one refused.
    let (code, out, _) = check_gbnf("hey you!");
    assert_eq!(code, 1);
    assert!(out.starts_with("rejected at byte 2: unexpected \"y\""), "{out}");
}

#[test]
fn gbnf_incomplete_input() {
    let (code, out, err) = check_gbnf("hi there");
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("rejected at byte 8 (end of input): the grammar expects more"), "{out}");
    let (code, out, _) = check_gbnf("");
    assert_eq!(code, 1);
    assert!(out.starts_with("rejected at byte 0 (end of input)"), "{out}");
}

#[test]
fn gbnf_root_option() {
    let g = write("r.gbnf", GBNF.as_bytes());
    let g = g.to_str().unwrap();
    let (code, out, err) = nucleus(&["grammar", "check", "--grammar", g, "--root", "greeting", "--text", "hi"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = nucleus(&["grammar", "check", "--grammar", g, "--root", "nope", "--text", "hi"]);
    assert_eq!(code, 2);
    assert!(err.contains("'nope'"), "{err}");
}

#[test]
fn bad_grammar_reports_line_and_column() {
    let g = write("bad.gbnf", b"root ::= \"a\"\nitem ::= \"b\" @ \"c\"\n");
    let (code, out, err) = nucleus(&["grammar", "check", "--grammar", g.to_str().unwrap(), "--text", "a"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("grammar parse error at line 2, column 14: "), "{err}");
    // A grammar without the start rule cannot be compiled either.
    let g = write("noroot.gbnf", b"start ::= \"a\"\n");
    let (code, _, err) = nucleus(&["grammar", "check", "--grammar", g.to_str().unwrap(), "--text", "a"]);
    assert_eq!(code, 2);
    assert!(err.contains("start rule 'root'"), "{err}");
}

#[test]
fn input_file_with_raw_bytes() {
    let g = write("f.gbnf", GBNF.as_bytes());
    let g = g.to_str().unwrap();
    let ok = write("ok.txt", b"hi abc!");
    let (code, out, err) = nucleus(&["grammar", "check", "--grammar", g, "--input", ok.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "ok: 7 bytes match");
    // Invalid UTF-8 is fed as it is and refused where it stands.
    let bad = write("bad.txt", b"hi a\xFFc!");
    let (code, out, _) = nucleus(&["grammar", "check", "--grammar", g, "--input", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.starts_with("rejected at byte 4: unexpected byte 0xFF (not UTF-8)"), "{out}");
    assert!(out.contains("hi a\\xFFc!"), "{out}");
    // An unreadable input file is a usage error.
    let missing = std::env::temp_dir().join("nucleus-grammar-cli-does-not-exist.txt");
    let (code, _, err) = nucleus(&["grammar", "check", "--grammar", g, "--input", missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read input file"), "{err}");
    // So is an unreadable grammar file.
    let (code, _, err) = nucleus(&["grammar", "check", "--grammar", missing.to_str().unwrap(), "--text", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read grammar file"), "{err}");
}

#[test]
fn json_schema_match_despite_key_order_and_whitespace() {
    let (code, out, err) = check_schema("{\n  \"tags\": [\"a\", \"b\"],\n  \"age\": 42,\n  \"name\": \"Ada\"\n}\n");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("ok: "), "{out}");
    // The layout printed is the grammar's: compact, keys in the order it accepts.
    assert_eq!(out.lines().nth(1), Some(r#"{"name":"Ada","age":42,"tags":["a","b"]}"#), "{out}");
}

#[test]
fn json_schema_violations_are_rejected_with_offsets() {
    // Wrong type: the age is a string. Laid out as {"name":"Ada","age":"42"}: byte 20.
    let (code, out, err) = check_schema(r#"{"age": "42", "name": "Ada"}"#);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("rejected at byte 20: unexpected \"\\\"\""), "{out}");
    assert!(out.contains(r#"{"name":"Ada","age":"42""#), "{out}");
    // Missing required property: the grammar refuses the closing brace at byte 13.
    let (code, out, _) = check_schema(r#"{"name": "Ada"}"#);
    assert_eq!(code, 1);
    assert!(out.starts_with("rejected at byte 13: unexpected \"}\""), "{out}");
    // minimum 0: after a minus sign only "-0" (which equals 0) can follow, so the "1" is refused.
    let (code, out, _) = check_schema(r#"{"name": "Ada", "age": -1}"#);
    assert_eq!(code, 1);
    assert!(out.starts_with("rejected at byte 21: unexpected \"1\""), "{out}");
}

/// A ~3 KB composer.json-style document whose many optional members come in an order of
/// their own (issue 31: the check used to give up searching and exit 1).
#[test]
fn large_document_with_many_optional_members() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/grammar-check");
    let schema = format!("{dir}/composer.schema.json");
    let doc = format!("{dir}/composer.json");
    let (code, out, err) = nucleus(&["grammar", "check", "--json-schema", &schema, "--input", &doc]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("ok: "), "{out}");
    // One member of the wrong type: a final rejection (exit 1), not undecided.
    let text = std::fs::read_to_string(&doc).unwrap().replace(r#""prefer-stable": true"#, r#""prefer-stable": 1"#);
    let (code, out, err) = nucleus(&["grammar", "check", "--json-schema", &schema, "--text", &text]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("rejected at byte "), "{out}");
}

/// A number counts by its value, in whatever JSON spelling the document uses: `4.2E1` and
/// `42.0` are the integer 42 (the grammar writes `42`), and `1.0E2` a number at most 100;
/// `1.5` is no integer in any spelling, and `1.01E2` is over the maximum.
#[test]
fn numbers_in_any_json_spelling() {
    let (code, out, err) = check_schema(r#"{"name": "Ada", "age": 4.2E1}"#);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().nth(1), Some(r#"{"name":"Ada","age":42}"#), "{out}");
    let (code, out, err) = check_schema(r#"{"name": "Ada", "age": 42.0}"#);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = check_schema(r#"{"name": "Ada", "age": 1.5}"#);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("rejected at byte 21: unexpected \".\""), "{out}");
    let s = write("n.json", br#"{"type": "number", "maximum": 100}"#);
    let s = s.to_str().unwrap();
    for (doc, want) in [("1.0E2", 0), ("1e2", 0), ("100.00", 0), ("-2.5e-3", 0), ("1.01E2", 1), ("1e3", 1)] {
        let (code, out, err) = nucleus(&["grammar", "check", "--json-schema", s, "--text", doc]);
        assert_eq!(code, want, "{doc}: {out}{err}");
    }
}

#[test]
fn non_json_input_is_rejected() {
    let (code, out, err) = check_schema(r#"{"name": "Ada", "age": 4"#);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("rejected: the input is not JSON: "), "{out}");
    assert!(out.contains("line 1 column"), "{out}");
}

#[test]
fn refused_and_invalid_schemas_exit_2() {
    let input = r#""::1""#;
    // A keyword the strict converter cannot enforce: named with its JSON pointer.
    let s = write(
        "refused.json",
        br#"{"type": "object", "properties": {"a": {"if": {"type": "string"}, "then": {"minLength": 2}}}}"#,
    );
    let (code, out, err) = nucleus(&["grammar", "check", "--json-schema", s.to_str().unwrap(), "--text", input]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("schema refused: if at #/properties/a"), "{err}");
    // Lenient mode ignores it, warns, and the check runs.
    let s = write("lenient.json", br#"{"type": "string", "if": {"minLength": 1}, "then": {"maxLength": 5}}"#);
    let (code, out, err) =
        nucleus(&["grammar", "check", "--json-schema", s.to_str().unwrap(), "--lenient", "--text", input]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("warning: ignored"), "{err}");
    assert!(err.contains("if at #") && err.contains("then at #"), "{err}");
    // A schema that is not JSON.
    let s = write("notjson.json", b"{\"type\": ");
    let (code, _, err) = nucleus(&["grammar", "check", "--json-schema", s.to_str().unwrap(), "--text", input]);
    assert_eq!(code, 2);
    assert!(err.contains("the schema is not JSON"), "{err}");
}

#[test]
fn invalid_arguments_are_clap_errors() {
    let g = write("a.gbnf", GBNF.as_bytes());
    let g = g.to_str().unwrap();
    // Both sources.
    let (code, out, err) = nucleus(&["grammar", "check", "--grammar", g, "--json-schema", g, "--text", "x"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("cannot be used with"), "{err}");
    // Neither subject.
    let (code, _, err) = nucleus(&["grammar", "check", "--grammar", g]);
    assert_eq!(code, 2);
    assert!(err.contains("required"), "{err}");
    // Both subjects.
    let (code, _, _) = nucleus(&["grammar", "check", "--grammar", g, "--text", "x", "--input", g]);
    assert_eq!(code, 2);
    // No source.
    let (code, _, _) = nucleus(&["grammar", "check", "--text", "x"]);
    assert_eq!(code, 2);
    // --root belongs to --grammar, --lenient to --json-schema.
    let (code, _, _) = nucleus(&["grammar", "check", "--json-schema", g, "--root", "r", "--text", "x"]);
    assert_eq!(code, 2);
    let (code, _, _) = nucleus(&["grammar", "check", "--grammar", g, "--lenient", "--text", "x"]);
    assert_eq!(code, 2);
}

#[test]
fn help_documents_exit_codes() {
    let (code, out, _) = nucleus(&["grammar", "check", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Exit status:"), "{out}");
    for line in ["  0  ", "  1  ", "  2  ", "  3  undecided"] {
        assert!(out.contains(line), "{out}");
    }
}

#[test]
fn input_from_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let g = write("stdin.gbnf", GBNF.as_bytes());
    let mut child = Command::new(env!("CARGO_BIN_EXE_nucleus"))
        .args(["grammar", "check", "--grammar", g.to_str().unwrap(), "--input", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run nucleus");
    child.stdin.take().unwrap().write_all(b"hi x!").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok: 5 bytes match");
}

/// `grammar print` writes the strict grammar a schema compiles to; that text, handed back to
/// `grammar check --grammar`, accepts what the schema's grammar accepts. `--compat` prints
/// llama.cpp's converter output; a refused schema exits 2 with the keyword named.
#[test]
fn print_writes_the_schema_grammar() {
    let s = write("print.json", SCHEMA.as_bytes());
    let (code, gbnf, err) = nucleus(&["grammar", "print", "--json-schema", s.to_str().unwrap()]);
    assert_eq!(code, 0, "{gbnf}{err}");
    assert!(gbnf.lines().any(|l| l.starts_with("root ::= ")), "{gbnf}");
    let g = write("print.gbnf", gbnf.as_bytes());
    let check = |text: &str| nucleus(&["grammar", "check", "--grammar", g.to_str().unwrap(), "--text", text]).0;
    assert_eq!(check(r#"{"name": "Ann", "age": 3}"#), 0);
    assert_eq!(check(r#"{"name": "Ann", "age": -3}"#), 1);

    let (code, compat, err) = nucleus(&["grammar", "print", "--json-schema", s.to_str().unwrap(), "--compat"]);
    assert_eq!(code, 0, "{compat}{err}");
    assert!(compat.lines().any(|l| l.starts_with("root ::= ")), "{compat}");

    let refused = write("refused.json", br#"{"type": "object", "unevaluatedProperties": false}"#);
    let (code, out, err) = nucleus(&["grammar", "print", "--json-schema", refused.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("unevaluatedProperties at #"), "{err}");
    assert!(out.is_empty(), "{out}");

    let broken = write("broken.json", b"{\"type\": ");
    let (code, out, err) = nucleus(&["grammar", "print", "--json-schema", broken.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("the schema is not JSON"), "{err}");
    let (code, _, err) = nucleus(&["grammar", "print", "--json-schema", "/nonexistent/schema.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot read schema file"), "{err}");
}
