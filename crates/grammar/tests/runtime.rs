//! Runtime behaviour: partial UTF-8 across tokens, errors instead of aborts, parse errors with
//! positions, token items, clone/reset.

use nucleus_grammar::{AcceptError, BuildError, Grammar, Matcher};

#[test]
fn partial_utf8_across_tokens() {
    let mut m = Matcher::from_gbnf("root ::= \"é\" [a-z]").unwrap();
    let e = "é".as_bytes();
    assert!(m.allows_bytes(&e[..1]));
    m.accept_token(1, &e[..1]).unwrap();
    assert!(!m.can_end());
    m.accept_token(2, &e[1..]).unwrap();
    m.accept_token(3, b"x").unwrap();
    assert!(m.can_end());
    // A lead byte that cannot become the required character is refused.
    let mut m = Matcher::from_gbnf("root ::= \"é\"").unwrap();
    assert!(!m.allows_bytes("ж".as_bytes()[..1].as_ref()));
    assert!(m.accept_token(1, &[0x80]).is_err());
}

#[test]
fn rejection_is_an_error_and_keeps_state() {
    let mut m = Matcher::from_gbnf("root ::= \"ab\"").unwrap();
    m.accept_token(1, b"a").unwrap();
    assert!(matches!(m.accept_token(2, b"x"), Err(AcceptError::Rejected { token: 2, .. })));
    assert!(matches!(m.accept_eog(9), Err(AcceptError::Incomplete(9))));
    m.accept_token(3, b"b").unwrap();
    m.accept_eog(9).unwrap();
    let mut c = m.clone();
    c.reset();
    assert!(!c.can_end());
    assert!(m.can_end());
}

#[test]
fn parse_errors_have_positions() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("root ::= \"a\"\nb ::= [a-", 2, 10, "unexpected end"),
        ("root ::= \"\\q\"", 1, 11, "unknown escape"),
        ("root ::= rule_1", 1, 14, "expecting newline or end"),
        ("root ::= \"a\"{,5}", 1, 14, "expecting an int"),
        ("root ::= \"a\"{2001}", 1, 13, "repetition"),
        ("root ::= \"a\"{3,2}", 1, 13, "below the minimum"),
        ("root ::= x", 1, 11, "undefined rule identifier 'x'"),
        ("root ::= *", 1, 10, "expecting preceding item"),
        ("root := \"a\"", 1, 6, "expecting ::="),
        ("root ::= (\"a\"", 1, 14, "expecting ')'"),
    ];
    for (text, line, col, reason) in cases {
        match Grammar::parse(text, "root") {
            Err(BuildError::Parse(e)) => {
                assert_eq!((e.line, e.column), (*line, *col), "{text:?}: {e}");
                assert!(e.reason.contains(reason), "{text:?}: {e}");
            }
            other => panic!("{text:?}: expected a parse error, got {other:?}"),
        }
    }
    assert!(matches!(Grammar::parse("root ::= root \"a\" | \"b\"", "root"), Err(BuildError::LeftRecursion(_))));
    assert!(matches!(Grammar::parse("a ::= \"x\"", "root"), Err(BuildError::MissingStart(_))));
}

#[test]
fn escapes_classes_comments() {
    let g = "# comment\nroot ::= [\\x41-\\x43\\-] \"\\u00e9\" [^\\n] . | # trailing\n  \"\"\n";
    // A newline before `|` ends the rule, so a continuation line starting with `|` fails.
    assert!(Grammar::parse("root ::= \"a\"\n | \"b\"", "root").is_err());
    let mut m = Matcher::from_gbnf(g).unwrap();
    assert!(m.can_end());
    m.accept_bytes("-é\tΩ".as_bytes()).unwrap();
    assert!(m.can_end());
}

#[test]
fn token_items() {
    let mut m = Matcher::from_gbnf("root ::= <[5]> (!<[6]>)* <[6]>").unwrap();
    assert!(m.accept_token(4, b"x").is_err());
    m.accept_token(5, b"<s>").unwrap();
    m.accept_token(7, b"hello").unwrap();
    assert!(!m.can_end());
    m.accept_token(6, b"</s>").unwrap();
    assert!(m.can_end());
}

#[test]
fn long_string_lengths_are_exact() {
    use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
    let s = serde_json::json!({"type": "string", "minLength": 2500, "maxLength": 4100});
    let g = schema_to_gbnf(&s, &SchemaOptions::default()).unwrap();
    let m = Matcher::from_gbnf(&g.gbnf).unwrap();
    for (n, ok) in [(2499, false), (2500, true), (3999, true), (4000, true), (4100, true), (4101, false)] {
        let mut m = m.clone();
        let text = format!("\"{}\"", "a".repeat(n));
        let accepted = m.accept_bytes(text.as_bytes()).is_ok() && m.can_end();
        assert_eq!(accepted, ok, "length {n}");
    }
}
