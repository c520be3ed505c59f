//! The grammar tool calls are generated under: one rule set built from the tools' argument
//! rules (each compiled from its schema, imported under the prefix `t<i>-` so they never
//! collide: [`RuleSet::import`]) and a fixed layout around them, built as rules too, so no
//! grammar text is written or parsed on the way (the automaton is built from the set). The
//! output parser ([`super::output`]) then only has to read the layout, and never has to
//! validate the argument values.
//!
//! * Generic format: the whole answer, `{"tool_call": CALL}` (or `{"tool_calls": [CALL, ...]}`
//!   when several calls are allowed: [`ToolRequest::several`]), or `{"response": "..."}` under
//!   `auto`; constrained from the first token.
//! * Hermes format: `<tool_call>\nCALL\n</tool_call>` blocks (one unless several are allowed);
//!   from the first token under `required` or a named choice, else lazy (free text until the
//!   model writes `<tool_call>`).
//!
//! Once the grammar is complete the generation ends, so a named choice or
//! `parallel_tool_calls: false` gives one call and then `finish_reason: "tool_calls"`.
//!
//! CALL is always `{"name": "N", "arguments": ARGS}` with N one of the callable functions.

use nucleus_grammar::grammar::CharClass;
use nucleus_grammar::rules::{alts, seq, Expr, RepeatForm, Seq};
use nucleus_runtime::{OutputConstraint, RuleSet};

use super::{ToolChoice, ToolFormat, ToolRequest};

/// The word that opens a Hermes call (and triggers the lazy grammar).
pub const HERMES_OPEN: &str = "<tool_call>";
/// The word that closes a Hermes call.
pub const HERMES_CLOSE: &str = "</tool_call>";

/// The constraint for `req` in `format`; `None` when the tools are not in use.
pub fn constraint(req: &ToolRequest, format: ToolFormat) -> Option<OutputConstraint> {
    if !req.active() {
        return None;
    }
    let mut set = RuleSet::new();
    let mut calls = Vec::new();
    for (i, t) in req.tools.iter().enumerate() {
        if !req.callable().iter().any(|c| c.name == t.name) {
            continue;
        }
        set.import(&t.args_rules, &format!("t{i}-"));
        // call<i> ::= "{\"name\": \"N\", \"arguments\": " t<i>-root "}"
        let head = Expr::lit(&format!("{{\"name\": \"{}\", \"arguments\": ", t.name));
        let args = r(&mut set, &format!("t{i}-root"));
        define(&mut set, &format!("call{i}"), seq(vec![head, args, Expr::lit("}")]));
        calls.push(format!("call{i}"));
    }
    let call_alts = calls.iter().map(|c| r(&mut set, c)).collect::<Vec<_>>();
    define(&mut set, "call", alts(call_alts));
    let free = req.choice == ToolChoice::Auto;
    let call = r(&mut set, "call");
    match format {
        ToolFormat::Generic => {
            let calls = if req.several() {
                // "{\"tool_calls\": [" call (", " call)* "]}"
                let more = Expr::Group(vec![Seq::new(vec![Expr::lit(", "), call.clone()])]);
                Seq::new(vec![Expr::lit("{\"tool_calls\": ["), call, Expr::repeat(more, 0, None), Expr::lit("]}")])
            } else {
                Seq::new(vec![Expr::lit("{\"tool_call\": "), call, Expr::lit("}")])
            };
            if free {
                let resp = r(&mut set, "resp");
                let answer = Seq::new(vec![Expr::lit("{\"response\": "), resp, Expr::lit("}")]);
                define(&mut set, "root", vec![calls, answer]);
                response_string(&mut set);
            } else {
                define(&mut set, "root", vec![calls]);
            }
            Some(OutputConstraint::Rules(set))
        }
        ToolFormat::Hermes => {
            // block ::= "<tool_call>\n" call "\n</tool_call>"
            let open = Expr::lit(&format!("{HERMES_OPEN}\n"));
            let close = Expr::lit(&format!("\n{HERMES_CLOSE}"));
            define(&mut set, "block", seq(vec![open, call, close]));
            let block = r(&mut set, "block");
            let root = if req.several() {
                let more = Expr::Group(vec![Seq::new(vec![Expr::lit("\n"), block.clone()])]);
                seq(vec![block, Expr::repeat(more, 0, None)])
            } else {
                seq(vec![block])
            };
            define(&mut set, "root", root);
            if free {
                Some(OutputConstraint::LazyRules { rules: set, triggers: vec![HERMES_OPEN.to_string()] })
            } else {
                Some(OutputConstraint::Rules(set))
            }
        }
    }
}

/// A reference to rule `name` of `set`.
fn r(set: &mut RuleSet, name: &str) -> Expr {
    Expr::Ref(set.id(name))
}

/// Defines rule `name` of `set` as `body`.
fn define(set: &mut RuleSet, name: &str, body: Vec<Seq>) {
    let id = set.id(name);
    set.define(id, body);
}

/// A code point in one of `ranges` (`negated`: in none of them).
fn class(ranges: &[(char, char)], negated: bool) -> Expr {
    let ranges = ranges.iter().map(|&(a, b)| (u32::from(a), u32::from(b))).collect();
    Expr::Class { class: CharClass { ranges, negated }, spelling: None }
}

/// The free answer's JSON string: `resp ::= "\"" rchar* "\""`, where `rchar` is an
/// unescaped character (not `"`, `\\`, DEL or a control character) or an escape.
fn response_string(set: &mut RuleSet) {
    let rchar = r(set, "rchar");
    define(set, "resp", seq(vec![Expr::lit("\""), Expr::repeat(rchar, 0, None), Expr::lit("\"")]));
    let plain = class(&[('"', '"'), ('\\', '\\'), ('\x7f', '\x7f'), ('\x00', '\x1f')], true);
    let simple = Seq::new(vec![class(
        &[('"', '"'), ('\\', '\\'), ('/', '/'), ('b', 'b'), ('f', 'f'), ('n', 'n'), ('r', 'r'), ('t', 't')],
        false,
    )]);
    let hex = class(&[('0', '9'), ('a', 'f'), ('A', 'F')], false);
    let four = Expr::Repeat { item: Box::new(hex), min: 4, max: Some(4), form: RepeatForm::Exact, gap: 0 };
    let unicode = Seq::new(vec![Expr::lit("u"), four]);
    let escape = Seq::new(vec![Expr::lit("\\"), Expr::Group(vec![simple, unicode])]);
    define(set, "rchar", vec![Seq::new(vec![plain]), escape]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolSpec;
    use nucleus_runtime::tool_arguments_rules;
    use serde_json::json;

    fn tool(name: &str, schema: serde_json::Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            tool: json!({}),
            function: json!({}),
            args_rules: tool_arguments_rules(&schema).unwrap(),
        }
    }

    /// Two tools whose argument rules share names (`root`, `space`, `string`) stay apart
    /// under their prefixes, and the grammar holds exactly their calls.
    #[test]
    fn argument_rules_compose_under_prefixes() {
        let req = ToolRequest {
            tools: vec![
                tool("a", json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]})),
                tool("b", json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})),
            ],
            choice: ToolChoice::Required,
            parallel: false,
        };
        let Some(OutputConstraint::Rules(set)) = constraint(&req, ToolFormat::Generic) else { panic!("no grammar") };
        let g = set.to_gbnf();
        assert!(g.contains("t0-root ::=") && g.contains("t1-root ::=") && g.contains("t0-space ::="), "{g}");
        let m = nucleus_grammar::Matcher::new(nucleus_grammar::Grammar::from_rules(&set, "root").unwrap());
        let accepts = |text: &str| {
            let mut m = m.clone();
            m.accept_bytes(text.as_bytes()).is_ok() && m.can_end()
        };
        assert!(accepts(r#"{"tool_call": {"name": "a", "arguments": {"x": "hi"}}}"#), "{g}");
        assert!(accepts(r#"{"tool_call": {"name": "b", "arguments": {"n": 3}}}"#), "{g}");
        assert!(!accepts(r#"{"tool_call": {"name": "a", "arguments": {"n": 3}}}"#), "{g}");
    }

    /// The layout is built as rules, and they are the rules its GBNF spelling gives: the
    /// printed set reads as the layout was written (one tool, every format and choice; the
    /// printer escapes `"` inside a class).
    #[test]
    fn layout_rules_print_as_their_gbnf() {
        let one = |choice, parallel| ToolRequest {
            tools: vec![tool("f", json!({"type": "object", "properties": {}}))],
            choice,
            parallel,
        };
        let print = |c: Option<OutputConstraint>| match c {
            Some(OutputConstraint::Rules(set)) => (set.to_gbnf(), None),
            Some(OutputConstraint::LazyRules { rules, triggers }) => (rules.to_gbnf(), Some(triggers)),
            other => panic!("not rules: {other:?}"),
        };
        let call = r#"call0 ::= "{\"name\": \"f\", \"arguments\": " t0-root "}""#;
        let (g, lazy) = print(constraint(&one(ToolChoice::Auto, true), ToolFormat::Generic));
        assert_eq!(lazy, None);
        for line in [
            call,
            "call ::= call0",
            r#"root ::= "{\"tool_calls\": [" call (", " call)* "]}" | "{\"response\": " resp "}""#,
            r#"resp ::= "\"" rchar* "\"""#,
            r#"rchar ::= [^\"\\\x7F\x00-\x1F] | "\\" ([\"\\/bfnrt] | "u" [0-9a-fA-F]{4})"#,
        ] {
            assert!(g.lines().any(|l| l == line), "missing {line}\n{g}");
        }
        let (g, _) = print(constraint(&one(ToolChoice::Required, false), ToolFormat::Generic));
        assert!(g.lines().any(|l| l == r#"root ::= "{\"tool_call\": " call "}""#), "{g}");
        let (g, lazy) = print(constraint(&one(ToolChoice::Auto, true), ToolFormat::Hermes));
        assert_eq!(lazy, Some(vec![HERMES_OPEN.to_string()]));
        for line in [r#"block ::= "<tool_call>\n" call "\n</tool_call>""#, r#"root ::= block ("\n" block)*"#] {
            assert!(g.lines().any(|l| l == line), "missing {line}\n{g}");
        }
        let (g, lazy) = print(constraint(&one(ToolChoice::Required, false), ToolFormat::Hermes));
        assert_eq!(lazy, None);
        assert!(g.lines().any(|l| l == "root ::= block"), "{g}");
    }
}
