//! The grammar tool calls are generated under: one rule set built from the tools' argument
//! rules (each compiled from its schema, imported under the prefix `t<i>-` so they never
//! collide: [`RuleSet::import`], no grammar text rewritten) and a fixed layout around them, so the output parser ([`super::output`]) only has to read
//! the layout and the argument values it never has to validate.
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

use nucleus_grammar::parse::parse_rules;
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
    let mut alts = Vec::new();
    for (i, t) in req.tools.iter().enumerate() {
        if !req.callable().iter().any(|c| c.name == t.name) {
            continue;
        }
        set.import(&t.args_rules, &format!("t{i}-"));
        layout(
            &mut set,
            &format!("call{i} ::= \"{{\\\"name\\\": \\\"{}\\\", \\\"arguments\\\": \" t{i}-root \"}}\"\n", t.name),
        );
        alts.push(format!("call{i}"));
    }
    let mut g = format!("call ::= {}\n", alts.join(" | "));
    let free = req.choice == ToolChoice::Auto;
    match format {
        ToolFormat::Generic => {
            let calls = if req.several() {
                "\"{\\\"tool_calls\\\": [\" call (\", \" call)* \"]}\""
            } else {
                "\"{\\\"tool_call\\\": \" call \"}\""
            };
            if free {
                g.push_str(&format!("root ::= {calls} | \"{{\\\"response\\\": \" resp \"}}\"\n"));
                g.push_str("resp ::= \"\\\"\" rchar* \"\\\"\"\n");
                g.push_str("rchar ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n");
            } else {
                g.push_str(&format!("root ::= {calls}\n"));
            }
            layout(&mut set, &g);
            Some(OutputConstraint::Gbnf(set.to_gbnf()))
        }
        ToolFormat::Hermes => {
            g.push_str("block ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n");
            g.push_str(if req.several() { "root ::= block (\"\\n\" block)*\n" } else { "root ::= block\n" });
            layout(&mut set, &g);
            let grammar = set.to_gbnf();
            if free {
                Some(OutputConstraint::LazyGbnf { grammar, triggers: vec![HERMES_OPEN.to_string()] })
            } else {
                Some(OutputConstraint::Gbnf(grammar))
            }
        }
    }
}

/// Adds the layout rules `text` to `set`, unprefixed: their references to `t<i>-root` name
/// the imported argument rules. The text is this module's own, and function names in it are
/// checked to be `[a-zA-Z0-9_-]` (nothing to escape in a literal), so it always parses.
fn layout(set: &mut RuleSet, text: &str) {
    match parse_rules(text, None) {
        Ok(rules) => {
            set.import(&rules, "");
        }
        Err(e) => debug_assert!(false, "the tool-call layout does not parse: {e}\n{text}"),
    }
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
        let Some(OutputConstraint::Gbnf(g)) = constraint(&req, ToolFormat::Generic) else { panic!("no grammar") };
        assert!(g.contains("t0-root ::=") && g.contains("t1-root ::=") && g.contains("t0-space ::="), "{g}");
        let m = nucleus_grammar::Matcher::from_gbnf(&g).unwrap();
        let accepts = |text: &str| {
            let mut m = m.clone();
            m.accept_bytes(text.as_bytes()).is_ok() && m.can_end()
        };
        assert!(accepts(r#"{"tool_call": {"name": "a", "arguments": {"x": "hi"}}}"#), "{g}");
        assert!(accepts(r#"{"tool_call": {"name": "b", "arguments": {"n": 3}}}"#), "{g}");
        assert!(!accepts(r#"{"tool_call": {"name": "a", "arguments": {"n": 3}}}"#), "{g}");
    }
}
