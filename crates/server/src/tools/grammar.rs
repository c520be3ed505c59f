//! The grammar tool calls are generated under: one GBNF built from the tools' argument
//! grammars (each compiled from its schema, rules renamed `t<i>-...` so they never collide)
//! and a fixed layout around them, so the output parser ([`super::output`]) only has to read
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

use nucleus_runtime::OutputConstraint;

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
    let mut g = String::new();
    let mut alts = Vec::new();
    for (i, t) in req.tools.iter().enumerate() {
        if !req.callable().iter().any(|c| c.name == t.name) {
            continue;
        }
        g.push_str(&prefixed(&t.args_gbnf, &format!("t{i}-")));
        g.push_str(&format!(
            "call{i} ::= \"{{\\\"name\\\": \\\"{}\\\", \\\"arguments\\\": \" t{i}-root \"}}\"\n",
            t.name
        ));
        alts.push(format!("call{i}"));
    }
    g.push_str(&format!("call ::= {}\n", alts.join(" | ")));
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
            Some(OutputConstraint::Gbnf(g))
        }
        ToolFormat::Hermes => {
            g.push_str("block ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n");
            g.push_str(if req.several() { "root ::= block (\"\\n\" block)*\n" } else { "root ::= block\n" });
            if free {
                Some(OutputConstraint::LazyGbnf { grammar: g, triggers: vec![HERMES_OPEN.to_string()] })
            } else {
                Some(OutputConstraint::Gbnf(g))
            }
        }
    }
}

/// `gbnf` with every rule name (definitions and references) prefixed by `prefix`. Literals,
/// character classes, repetition counts and token items are copied as they are.
pub fn prefixed(gbnf: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(gbnf.len() + gbnf.len() / 4);
    let b = gbnf.as_bytes();
    let mut i = 0;
    let is_name = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    while i < b.len() {
        let c = b[i];
        let close = match c {
            b'"' => Some(b'"'),
            b'[' => Some(b']'),
            b'{' => Some(b'}'),
            b'<' => Some(b'>'),
            _ => None,
        };
        if let Some(close) = close {
            // Copy through to the matching closer, skipping escaped characters.
            let start = i;
            i += 1;
            while i < b.len() && b[i] != close {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push_str(&gbnf[start..i]);
        } else if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if is_name(c) {
            let start = i;
            while i < b.len() && is_name(b[i]) {
                i += 1;
            }
            out.push_str(prefix);
            out.push_str(&gbnf[start..i]);
        } else {
            let start = i;
            i += 1;
            while i < b.len() && !b[i].is_ascii() {
                i += 1;
            }
            out.push_str(&gbnf[start..i]);
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixing_renames_rules_only() {
        let g = "root ::= \"{\" space obj-1 [a-z\\]]{2,5} \"x y\"\nobj-1 ::= \"\\\"q\\\"\" space\nspace ::= | \" \"\n";
        assert_eq!(
            prefixed(g, "t0-"),
            "t0-root ::= \"{\" t0-space t0-obj-1 [a-z\\]]{2,5} \"x y\"\nt0-obj-1 ::= \"\\\"q\\\"\" t0-space\nt0-space ::= | \" \"\n"
        );
    }
}
