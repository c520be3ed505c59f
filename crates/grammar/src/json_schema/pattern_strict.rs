//! Strict `pattern` translation: an ECMAScript regex (the subset without lookaround,
//! backreferences or inner anchors) becomes GBNF over the *JSON text* of the string, so every
//! output decodes to a string the regex matches. Characters that JSON must escape are emitted
//! in their canonical escaped form; unanchored ends become "any characters".

use crate::grammar::CharClass;
use crate::rules::{Expr, RepeatForm, Seq};
use regex_syntax::hir::{Class, Hir, HirKind, Look};

use crate::parse::MAX_REPETITIONS;

/// ECMAScript's `\s` set.
const ECMA_SPACE: &str = "\\t\\n\\x0B\\x0C\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF";

/// Rewrites ECMAScript-only syntax into the Rust regex dialect with ECMAScript meaning
/// (`\d`/`\w` ASCII, ECMAScript `\s`, `.` excluding line terminators).
pub(super) fn to_rust_syntax(p: &str) -> String {
    let mut out = String::new();
    let mut in_class = 0usize;
    let mut it = p.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            let Some(n) = it.next() else {
                out.push('\\');
                break;
            };
            let (pos, neg) = match n {
                'd' => ("0-9", false),
                'D' => ("0-9", true),
                'w' => ("A-Za-z0-9_", false),
                'W' => ("A-Za-z0-9_", true),
                's' => (ECMA_SPACE, false),
                'S' => (ECMA_SPACE, true),
                '/' => {
                    out.push('/');
                    continue;
                }
                _ => {
                    out.push('\\');
                    out.push(n);
                    continue;
                }
            };
            match (in_class > 0, neg) {
                (true, false) => out.push_str(pos),
                _ => {
                    out.push('[');
                    if neg {
                        out.push('^');
                    }
                    out.push_str(pos);
                    out.push(']');
                }
            }
            continue;
        }
        if in_class > 0 {
            if c == ']' {
                in_class -= 1;
            } else if c == '[' {
                // A literal '[' inside an ECMAScript class.
                out.push_str("\\[");
                continue;
            }
            out.push(c);
            continue;
        }
        match c {
            '[' => {
                in_class += 1;
                out.push('[');
                if it.peek() == Some(&'^') {
                    out.push(it.next().unwrap());
                }
                if it.peek() == Some(&']') {
                    // ECMAScript: `[]` matches nothing, `[^]` anything; Rust needs escaping.
                    it.next();
                    out.push_str("\\]");
                }
            }
            '.' => out.push_str("[^\\n\\r\\u2028\\u2029]"),
            _ => out.push(c),
        }
    }
    out
}

/// The rule IR for `pattern`: the items to put between the string's quotes. `any_char` is
/// one JSON string character (used for unanchored ends).
pub(super) fn pattern_items(pattern: &str, any_char: &Expr) -> Result<Vec<Expr>, String> {
    let rust = to_rust_syntax(pattern);
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&rust)
        .map_err(|e| format!("unsupported regular expression: {}", e.to_string().lines().last().unwrap_or("")))?;
    let branches: Vec<&Hir> = match hir.kind() {
        HirKind::Alternation(v) => v.iter().collect(),
        _ => vec![&hir],
    };
    let mut alts = Vec::new();
    for b in branches {
        let mut items: Vec<&Hir> = match b.kind() {
            HirKind::Concat(v) => v.iter().collect(),
            _ => vec![b],
        };
        let start = matches!(items.first().map(|h| h.kind()), Some(HirKind::Look(Look::Start)));
        if start {
            items.remove(0);
        }
        let end = matches!(items.last().map(|h| h.kind()), Some(HirKind::Look(Look::End)));
        if end {
            items.pop();
        }
        let mut parts = Vec::new();
        if !start {
            parts.push(Expr::repeat(any_char.clone(), 0, None));
        }
        for it in items {
            parts.extend(emit(it)?);
        }
        if !end {
            parts.push(Expr::repeat(any_char.clone(), 0, None));
        }
        alts.push(if parts.is_empty() { vec![Expr::lit("")] } else { parts });
    }
    Ok(match alts.len() {
        1 => alts.pop().unwrap_or_default(),
        _ => vec![Expr::Group(alts.into_iter().map(Seq::new).collect())],
    })
}

/// One code point as it appears in the JSON text (escaped if JSON requires it).
pub fn json_char_literal(c: char) -> String {
    gbnf_literal(&json_char_text(c))
}

/// How JSON text writes `c` inside a string (the short escape where there is one,
/// `\u00xx` for other controls and DEL, else `c`).
fn json_char_text(c: char) -> String {
    match c {
        '"' => "\\\"".to_string(),
        '\\' => "\\\\".to_string(),
        '\n' => "\\n".to_string(),
        '\r' => "\\r".to_string(),
        '\t' => "\\t".to_string(),
        '\u{8}' => "\\b".to_string(),
        '\u{c}' => "\\f".to_string(),
        c if (c as u32) < 0x20 || c as u32 == 0x7F => format!("\\u{:04x}", c as u32),
        c => c.to_string(),
    }
}

/// A GBNF string literal for `s`.
pub fn gbnf_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7F => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn needs_escape(c: u32) -> bool {
    c < 0x20 || c == 0x22 || c == 0x5C || c == 0x7F
}

/// The first character after `c` that [`needs_escape`], if any.
fn next_escape(c: u32) -> Option<u32> {
    if c < 0x1F {
        return Some(c + 1);
    }
    [0x22, 0x5C, 0x7F].into_iter().find(|&e| e > c)
}

fn class_char(c: u32) -> String {
    if c <= 0xFFFF {
        format!("\\u{c:04X}")
    } else {
        format!("\\U{c:08X}")
    }
}

/// [`class_to_gbnf`] as one rule IR item, printing as that text: a class of the raw
/// characters (spelled with `\u`/`\U` escapes), a literal per escaped one, a group of them.
pub(crate) fn class_to_item(ranges: &[(u32, u32)]) -> Expr {
    let mut raw = Vec::new();
    let mut spelling = String::from("[");
    let mut items = Vec::new();
    for &(lo, hi) in ranges {
        let mut a = lo;
        while a <= hi {
            if needs_escape(a) {
                if let Some(ch) = char::from_u32(a) {
                    let text = json_char_literal(ch);
                    let enc = json_char_text(ch);
                    items.push(Expr::lit_spelled(&enc, &text[1..text.len() - 1]));
                }
                a += 1;
                continue;
            }
            let b = match next_escape(a) {
                Some(e) => hi.min(e - 1),
                None => hi,
            };
            spelling.push_str(&class_char(a));
            if b > a {
                spelling.push('-');
                spelling.push_str(&class_char(b));
            }
            raw.push((a, b));
            if b == u32::MAX {
                break;
            }
            a = b + 1;
        }
    }
    if !raw.is_empty() {
        spelling.push(']');
        let class = CharClass { ranges: raw, negated: false };
        items.insert(0, Expr::Class { class, spelling: Some(spelling.into()) });
    }
    match items.len() {
        // Matches nothing.
        0 => Expr::Class {
            class: CharClass { ranges: vec![(0, 0x10FFFF)], negated: true },
            spelling: Some("[^\\U00000000-\\U0010FFFF]".into()),
        },
        1 => items.pop().unwrap_or_else(|| Expr::lit("")),
        _ => Expr::Group(crate::rules::alts(items)),
    }
}

/// A character set as JSON text: raw characters in one class, escaped ones as literals.
pub fn class_to_gbnf(ranges: &[(u32, u32)]) -> String {
    let mut raw = String::new();
    let mut escaped = Vec::new();
    for &(lo, hi) in ranges {
        // Split out the characters JSON escapes.
        let mut a = lo;
        while a <= hi {
            if needs_escape(a) {
                if let Some(ch) = char::from_u32(a) {
                    escaped.push(json_char_literal(ch));
                }
                a += 1;
                continue;
            }
            // The raw run ends before the next character needing an escape (found directly: a
            // negated class spans a million code points).
            let b = match next_escape(a) {
                Some(e) => hi.min(e - 1),
                None => hi,
            };
            raw.push_str(&class_char(a));
            if b > a {
                raw.push('-');
                raw.push_str(&class_char(b));
            }
            if b == u32::MAX {
                break;
            }
            a = b + 1;
        }
    }
    let mut alts = Vec::new();
    if !raw.is_empty() {
        alts.push(format!("[{raw}]"));
    }
    alts.extend(escaped);
    match alts.len() {
        0 => "[^\\U00000000-\\U0010FFFF]".to_string(), // matches nothing
        1 => alts.pop().unwrap(),
        _ => format!("({})", alts.join(" | ")),
    }
}

/// The items `h` is written as (none: the empty string).
fn emit(h: &Hir) -> Result<Vec<Expr>, String> {
    Ok(match h.kind() {
        HirKind::Empty => Vec::new(),
        HirKind::Literal(lit) => {
            let s = std::str::from_utf8(&lit.0).map_err(|_| "non-UTF-8 literal in pattern".to_string())?;
            s.chars().map(|c| Expr::lit(&json_char_text(c))).collect()
        }
        HirKind::Class(Class::Unicode(u)) => {
            let ranges: Vec<(u32, u32)> = u.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect();
            vec![class_to_item(&ranges)]
        }
        HirKind::Class(Class::Bytes(_)) => return Err("byte classes are not supported in patterns".into()),
        HirKind::Look(_) => return Err("anchors or word boundaries inside a pattern are not supported".into()),
        HirKind::Repetition(r) if nullable(&r.sub) => {
            // `x{m,n}` with `x` matching the empty string is `x'{0,n}`, `x'` being `x` without
            // the empty string: the same language, and no rule that is left recursive.
            let Some(sub) = non_empty(&r.sub) else { return Ok(Vec::new()) };
            let rep = regex_syntax::hir::Repetition { min: 0, max: r.max, greedy: r.greedy, sub: Box::new(sub) };
            emit(&Hir::repetition(rep))?
        }
        HirKind::Repetition(r) => {
            let inner = emit(&r.sub)?;
            if inner.is_empty() {
                return Ok(Vec::new());
            }
            if r.min as u64 > MAX_REPETITIONS || r.max.is_some_and(|m| m as u64 > MAX_REPETITIONS) {
                return Err(format!("repetition count above {MAX_REPETITIONS}"));
            }
            let form = match (r.min, r.max) {
                (0, None) => RepeatForm::Star,
                (1, None) => RepeatForm::Plus,
                (0, Some(1)) => RepeatForm::Optional,
                (_, None) => RepeatForm::AtLeast,
                (m, Some(n)) if m == n => RepeatForm::Exact,
                (_, Some(_)) => RepeatForm::Range,
            };
            if r.max == Some(0) {
                return Ok(Vec::new());
            }
            vec![Expr::repeat_as(Expr::Group(vec![Seq::new(inner)]), r.min, r.max, form)]
        }
        HirKind::Capture(c) => {
            let inner = emit(&c.sub)?;
            if inner.is_empty() {
                Vec::new()
            } else {
                vec![Expr::Group(vec![Seq::new(inner)])]
            }
        }
        HirKind::Concat(v) => {
            let parts: Vec<Vec<Expr>> = v.iter().map(emit).collect::<Result<_, _>>()?;
            parts.into_iter().flatten().collect()
        }
        HirKind::Alternation(v) => {
            let parts: Vec<Vec<Expr>> = v.iter().map(emit).collect::<Result<_, _>>()?;
            let alts = parts.into_iter().map(|p| Seq::new(if p.is_empty() { vec![Expr::lit("")] } else { p }));
            vec![Expr::Group(alts.collect())]
        }
    })
}

/// Whether `h` matches the empty string.
fn nullable(h: &Hir) -> bool {
    h.properties().minimum_len() == Some(0)
}

/// `h` without the empty string (`None`: nothing else is left).
fn non_empty(h: &Hir) -> Option<Hir> {
    if !nullable(h) {
        return Some(h.clone());
    }
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => None,
        HirKind::Capture(c) => non_empty(&c.sub),
        HirKind::Alternation(v) => {
            let alts: Vec<Hir> = v.iter().filter_map(non_empty).collect();
            (!alts.is_empty()).then(|| Hir::alternation(alts))
        }
        HirKind::Repetition(r) => {
            // Copies matching the empty string add nothing: one or more non-empty copies.
            let sub = non_empty(&r.sub)?;
            if r.max == Some(0) {
                return None;
            }
            let rep = regex_syntax::hir::Repetition { min: 1, max: r.max, greedy: r.greedy, sub: Box::new(sub) };
            Some(Hir::repetition(rep))
        }
        HirKind::Concat(v) => {
            // Every part matches the empty string: the first non-empty part, then the rest.
            let alts: Vec<Hir> = (0..v.len())
                .filter_map(|i| {
                    let first = non_empty(&v[i])?;
                    let mut parts = vec![first];
                    parts.extend(v[i + 1..].iter().cloned());
                    Some(Hir::concat(parts))
                })
                .collect();
            (!alts.is_empty()).then(|| Hir::alternation(alts))
        }
        HirKind::Literal(_) | HirKind::Class(_) => Some(h.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw runs of `class_to_gbnf` found character by character (the former loop).
    fn runs_one_by_one(lo: u32, hi: u32) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut a = lo;
        while a <= hi {
            if needs_escape(a) {
                a += 1;
                continue;
            }
            let mut b = a;
            while b < hi && !needs_escape(b + 1) {
                b += 1;
            }
            out.push((a, b));
            a = b + 1;
        }
        out
    }

    #[test]
    fn raw_runs_end_before_each_escape() {
        let edges = [0u32, 1, 0x1E, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7E, 0x7F, 0x80, 0xFFFF, 0x10FFFF];
        for &lo in &edges {
            for &hi in edges.iter().filter(|&&h| h >= lo) {
                let expected = runs_one_by_one(lo, hi);
                let mut raw = String::new();
                for (a, b) in &expected {
                    raw.push_str(&class_char(*a));
                    if b > a {
                        raw.push('-');
                        raw.push_str(&class_char(*b));
                    }
                }
                let got = class_to_gbnf(&[(lo, hi)]);
                assert!(raw.is_empty() || got.contains(&format!("[{raw}]")), "{lo:#x}..={hi:#x}: {got}");
            }
        }
    }
}
