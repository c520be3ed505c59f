//! The IR's promises: a parsed set prints back to its text, lowers to the grammar its text
//! parses to, and imported sets compose without name clashes.

use super::*;
use crate::parse::{parse_gbnf, parse_rules};

const TEXTS: &[&str] = &[
    "root ::= (\"a\" | b)* c{2,4} [x-z]+\nb ::= \"b\"? (c | \"d\")\nc ::= \"c\"\n",
    "root ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n",
    "root ::= \"{\" space  (a-kv b | c )? \"}\" space\na-kv ::= [^\"\\\\\\x7F\\x00-\\x1F] | ( x |)\nb ::= x{3}\nc ::= x *\nx ::= .\nspace ::= \" \"?\n",
];

#[test]
fn parsed_text_prints_back() {
    for text in TEXTS {
        assert_eq!(parse_rules(text, None).unwrap().to_gbnf(), *text);
    }
}

/// Lowering numbers rules as llama.cpp numbers the printed text (a grammar written in a
/// different layout, with comments and newlines inside groups, included).
#[test]
fn lowering_matches_the_printed_text() {
    let messy = "root ::= ( \"a\" # note\n  | b )+ b\nb ::= [a-c]{0,3}\n";
    for text in TEXTS.iter().copied().chain([messy]) {
        let set = parse_rules(text, None).unwrap();
        let direct = lower(&set).unwrap();
        let reparsed = parse_gbnf(&set.to_gbnf(), None).unwrap();
        assert_eq!(format!("{:?}", direct.rules), format!("{:?}", reparsed.rules), "{text}");
        assert_eq!(direct.symbol_ids, reparsed.symbol_ids, "{text}");
        assert_eq!(direct.classes, reparsed.classes, "{text}");
    }
}

/// A set built as data prints in the usual layout and builds.
#[test]
fn data_prints_in_the_usual_layout() {
    let mut set = RuleSet::new();
    let root = set.id("root");
    let item = set.id("item");
    let class =
        Expr::Class { class: CharClass { ranges: vec![(0x30, 0x39), (0x2D, 0x2D)], negated: true }, spelling: None };
    set.define(
        root,
        vec![Seq::new(vec![Expr::lit("[\"\n"), Expr::repeat(Expr::Ref(item), 0, None)]), Seq::new(vec![])],
    );
    set.define(
        item,
        vec![Seq::new(vec![class, Expr::repeat(Expr::Group(vec![Seq::new(vec![Expr::lit("a")])]), 2, Some(3))])],
    );
    let text = set.to_gbnf();
    assert_eq!(text, "root ::= \"[\\\"\\n\" item* | \"\"\nitem ::= [^0-9\\-] (\"a\"){2,3}\n");
    crate::Grammar::from_rules(&set, "root").unwrap();
    assert_eq!(format!("{:?}", lower(&set).unwrap().rules), format!("{:?}", parse_gbnf(&text, None).unwrap().rules));
}

#[test]
fn imports_compose_under_prefixes() {
    let a = parse_rules("root ::= \"a\" x\nx ::= \"1\"\n", None).unwrap();
    let b = parse_rules("root ::= \"b\" x\nx ::= \"2\"\n", None).unwrap();
    let mut set = RuleSet::new();
    let root = set.id("root");
    set.import(&a, "tool-a-");
    set.import(&b, "tool-b-");
    let (a_root, b_root) = (set.get("tool-a-root").unwrap(), set.get("tool-b-root").unwrap());
    set.define(root, vec![Seq::new(vec![Expr::Ref(a_root)]), Seq::new(vec![Expr::Ref(b_root)])]);
    let text = set.to_gbnf();
    assert!(text.contains("tool-a-x ::= \"1\"\n") && text.contains("tool-b-x ::= \"2\"\n"), "{text}");
    assert!(text.ends_with("root ::= tool-a-root | tool-b-root\n"), "{text}");
    let g = crate::Grammar::from_rules(&set, "root").unwrap();
    let mut m = crate::Matcher::new(g.clone());
    m.accept_bytes(b"b2").unwrap();
    assert!(m.can_end());
    assert!(crate::Matcher::new(g).accept_bytes(b"a2").is_err());
}

/// Undefined rules and unbounded counts are refused when lowering data, as parsing refuses
/// them in text.
#[test]
fn lowering_refuses_what_text_would() {
    let mut set = RuleSet::new();
    let root = set.id("root");
    let missing = set.id("missing");
    set.define(root, vec![Seq::new(vec![Expr::Ref(missing)])]);
    assert!(lower(&set).unwrap_err().contains("undefined rule identifier 'missing'"));
    let mut set = RuleSet::new();
    let root = set.id("root");
    set.define(root, vec![Seq::new(vec![Expr::repeat(Expr::lit("a"), 0, Some(5000))])]);
    assert!(lower(&set).unwrap_err().contains("sane defaults"));
}
