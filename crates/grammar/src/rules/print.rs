//! GBNF text from a rule set, for people (debug output, `grammar print`, the text a converted
//! schema is shown as). Items and sequences keep the spelling and spaces they were written
//! with; those built as data are written in the usual layout with llama.cpp's escapes.

use std::fmt::Write as _;

use super::{Expr, RepeatForm, RuleSet, Seq};
use crate::grammar::CharClass;

/// One line per definition: `name ::= body`.
pub(super) fn print(set: &RuleSet) -> String {
    let mut out = String::new();
    for (id, body) in set.defs() {
        out.push_str(set.name(*id));
        out.push_str(" ::=");
        alts(set, body, true, &mut out);
        out.push('\n');
    }
    out
}

/// The text after `name ::=` of one rule body (names from `set`).
pub(crate) fn body_text(set: &RuleSet, body: &[Seq]) -> String {
    let mut out = String::new();
    alts(set, body, true, &mut out);
    out
}

/// The text the printer writes between the quotes of a literal built as data.
pub(super) fn lit_default(chars: &[u32]) -> String {
    let mut out = String::new();
    chars.iter().for_each(|&c| escaped(c, false, &mut out));
    out
}

/// The text the printer writes for a class built as data.
pub(super) fn class_default(c: &CharClass) -> String {
    let mut out = String::new();
    class_text(c, &mut out);
    out
}

/// `top`: a rule's alternatives (after `::=`), not a group's.
fn alts(set: &RuleSet, body: &[Seq], top: bool, out: &mut String) {
    for (i, seq) in body.iter().enumerate() {
        if i > 0 {
            out.push('|');
        }
        // The usual layout: `::= ` before the first alternative, ` | ` between them.
        let (lead, tail) = (u8::from(top || i > 0), u8::from(i + 1 < body.len()));
        sequence(set, seq, lead, tail, out);
    }
}

/// `lead`/`tail`: the spaces the usual layout writes before and after the items.
fn sequence(set: &RuleSet, seq: &Seq, lead: u8, tail: u8, out: &mut String) {
    let spaces = |n: u8, out: &mut String| (0..n).for_each(|_| out.push(' '));
    match &seq.layout {
        Some(ws) => {
            for (e, &n) in seq.items.iter().zip(ws.iter()) {
                spaces(n, out);
                expr(set, e, out);
            }
            spaces(ws.last().copied().unwrap_or(0), out);
        }
        None => {
            spaces(lead, out);
            if seq.items.is_empty() {
                // Written `""`: a bar at the end of a line would continue the rule on the next.
                out.push_str("\"\"");
            }
            for (j, e) in seq.items.iter().enumerate() {
                if j > 0 {
                    out.push(' ');
                }
                expr(set, e, out);
            }
            spaces(tail, out);
        }
    }
}

fn expr(set: &RuleSet, e: &Expr, out: &mut String) {
    match e {
        Expr::Lit { spelling: Some(s), .. } => {
            out.push('"');
            out.push_str(s);
            out.push('"');
        }
        Expr::Lit { chars, spelling: None } => {
            out.push('"');
            for &c in chars {
                escaped(c, false, out);
            }
            out.push('"');
        }
        Expr::Class { spelling: Some(s), .. } => out.push_str(s),
        Expr::Class { class, spelling: None } => class_text(class, out),
        Expr::Ref(r) => out.push_str(set.name(*r)),
        Expr::Token(t) => {
            let _ = write!(out, "<[{t}]>");
        }
        Expr::NotToken(t) => {
            let _ = write!(out, "!<[{t}]>");
        }
        Expr::Group(body) => {
            out.push('(');
            alts(set, body, false, out);
            out.push(')');
        }
        Expr::Repeat { item, min, max, form, gap } => {
            expr(set, item, out);
            (0..*gap).for_each(|_| out.push(' '));
            let _ = match (form, max) {
                (RepeatForm::Star, _) => write!(out, "*"),
                (RepeatForm::Plus, _) => write!(out, "+"),
                (RepeatForm::Optional, _) => write!(out, "?"),
                (RepeatForm::Exact, _) => write!(out, "{{{min}}}"),
                (RepeatForm::AtLeast, _) | (RepeatForm::Range, None) => write!(out, "{{{min},}}"),
                (RepeatForm::Range, Some(m)) => write!(out, "{{{min},{m}}}"),
            };
        }
    }
}

fn class_text(c: &CharClass, out: &mut String) {
    if c.negated && c.ranges.is_empty() {
        out.push('.');
        return;
    }
    out.push('[');
    if c.negated {
        out.push('^');
    }
    for &(lo, hi) in &c.ranges {
        escaped(lo, true, out);
        if hi != lo {
            out.push('-');
            escaped(hi, true, out);
        }
    }
    out.push(']');
}

/// One code point inside a literal (`in_class`: inside brackets).
fn escaped(c: u32, in_class: bool, out: &mut String) {
    let _ = match c {
        0x09 => write!(out, "\\t"),
        0x0A => write!(out, "\\n"),
        0x0D => write!(out, "\\r"),
        0x22 => write!(out, "\\\""),
        0x5C => write!(out, "\\\\"),
        0x5D | 0x2D | 0x5B if in_class => write!(out, "\\{}", c as u8 as char),
        c if c < 0x20 || c == 0x7F => write!(out, "\\x{c:02X}"),
        c => match char::from_u32(c) {
            Some(ch) => write!(out, "{ch}"),
            None => write!(out, "\\U{c:08X}"),
        },
    };
}
