//! The GBNF parser: llama.cpp's grammar language with its exact acceptance rules (name
//! characters, escapes, newline handling, repetition limits), lowered the way llama.cpp lowers
//! it (groups and repetitions become generated `rule_N` helper rules).

use std::collections::BTreeMap;

use crate::error::ParseError;
use crate::grammar::CharClass;
use crate::rules::{self, Body, Expr, RepeatForm, RuleSet, Seq};

/// llama.cpp's bound on `{m,n}` counts.
pub const MAX_REPETITIONS: u64 = 2000;

/// Resolves `<text>` token items to token ids (a model vocabulary).
pub trait TokenLookup {
    /// The id of the single token whose text is exactly `text`, if there is one.
    fn token_for_text(&self, text: &[u8]) -> Option<u32>;
}

/// One item of an alternative before flattening.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Item {
    /// A code point from the interned class with this index.
    Char(u32),
    /// A rule reference.
    Ref(u32),
    /// A whole token with this id.
    Token(u32),
    /// A whole token with any other id.
    NotToken(u32),
}

/// Output of the parser: rules by id (`None` = referenced but never defined).
#[derive(Debug, Clone, Default)]
pub struct ParsedGrammar {
    /// Alternatives of each rule.
    pub rules: Vec<Option<Vec<Vec<Item>>>>,
    /// Interned character classes.
    pub classes: Vec<CharClass>,
    /// Rule names to ids, in llama.cpp's numbering.
    pub symbol_ids: BTreeMap<String, u32>,
}

struct Parser<'a> {
    src: &'a [u8],
    text: &'a str,
    set: RuleSet,
    tokens: Option<&'a dyn TokenLookup>,
    /// Parenthesized groups open at the current position.
    depth: usize,
}

/// Deepest nesting of parenthesized groups accepted: deeper input is refused with an error
/// instead of exhausting the stack (llama.cpp has no limit and crashes).
pub const MAX_GROUP_NESTING: usize = 1000;

type PResult<T> = Result<T, (usize, String)>;

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// Parses GBNF text. `tokens` resolves `<text>` items; without it only `<[id]>` parses.
pub fn parse_gbnf(src: &str, tokens: Option<&dyn TokenLookup>) -> Result<ParsedGrammar, ParseError> {
    let set = parse_rules(src, tokens)?;
    rules::lower(&set).map_err(|reason| {
        let (line, column) = line_col(src, src.len());
        ParseError { line, column, reason }
    })
}

/// Parses GBNF text into a rule set (every definition, in order).
pub fn parse_rules(src: &str, tokens: Option<&dyn TokenLookup>) -> Result<RuleSet, ParseError> {
    let mut p = Parser { src: src.as_bytes(), text: src, set: RuleSet::new(), tokens, depth: 0 };
    match p.parse_all() {
        Ok(()) => Ok(p.set),
        Err((pos, reason)) => {
            let (line, column) = line_col(src, pos);
            Err(ParseError { line, column, reason })
        }
    }
}

/// Parses one rule body (the text after `::=`, on one line) into `set`'s names.
pub(crate) fn parse_body(body: &str, set: &mut RuleSet) -> Result<Body, ParseError> {
    let mut p = Parser { src: body.as_bytes(), text: body, set: std::mem::take(set), tokens: None, depth: 0 };
    // The text came after `::= `: that space is the first alternative's too.
    let r = p.parse_alternates(0, false, 1).and_then(|(b, end)| match end == body.len() {
        true => Ok(b),
        false => Err((end, format!("expecting end of rule at {}", p.snippet(end)))),
    });
    *set = p.set;
    r.map_err(|(pos, reason)| {
        let (line, column) = line_col(body, pos);
        ParseError { line, column, reason }
    })
}

/// 1-based line and column (in characters) of byte offset `pos`.
pub fn line_col(src: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(src.len());
    let before = &src.as_bytes()[..pos];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before.iter().rposition(|&b| b == b'\n').map(|i| i + 1).unwrap_or(0);
    let column = 1 + String::from_utf8_lossy(&before[line_start..]).chars().count();
    (line, column)
}

impl<'a> Parser<'a> {
    #[inline]
    fn at(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn snippet(&self, i: usize) -> String {
        let end = (i + 20).min(self.src.len());
        let s = String::from_utf8_lossy(&self.src[i.min(end)..end]).into_owned();
        if s.is_empty() {
            "end of input".into()
        } else {
            format!("{s:?}")
        }
    }

    fn parse_all(&mut self) -> PResult<()> {
        let mut pos = self.parse_space(0, true);
        while self.at(pos) != 0 {
            pos = self.parse_rule(pos)?;
        }
        Ok(())
    }

    fn parse_space(&self, mut pos: usize, newline_ok: bool) -> usize {
        loop {
            match self.at(pos) {
                b' ' | b'\t' => pos += 1,
                b'#' => {
                    while !matches!(self.at(pos), 0 | b'\r' | b'\n') {
                        pos += 1;
                    }
                }
                b'\r' | b'\n' if newline_ok => pos += 1,
                _ => return pos,
            }
        }
    }

    fn parse_name(&self, pos: usize) -> PResult<usize> {
        let mut end = pos;
        while is_word_char(self.at(end)) {
            end += 1;
        }
        if end == pos {
            return Err((pos, format!("expecting name at {}", self.snippet(pos))));
        }
        Ok(end)
    }

    fn parse_int(&self, pos: usize) -> PResult<(u64, usize)> {
        let mut end = pos;
        while self.at(end).is_ascii_digit() {
            end += 1;
        }
        if end == pos {
            return Err((pos, format!("expecting integer at {}", self.snippet(pos))));
        }
        let s = std::str::from_utf8(&self.src[pos..end]).unwrap_or("0");
        let v = s.parse::<u64>().map_err(|_| (pos, "integer out of range".to_string()))?;
        Ok((v, end))
    }

    fn parse_rule(&mut self, pos: usize) -> PResult<usize> {
        let name_end = self.parse_name(pos)?;
        let mut p = self.parse_space(name_end, false);
        let id = self.set.id(&self.text[pos..name_end]);
        if !(self.at(p) == b':' && self.at(p + 1) == b':' && self.at(p + 2) == b'=') {
            return Err((p, format!("expecting ::= at {}", self.snippet(p))));
        }
        let (body, end) = self.parse_alternates(p + 3, false, 0)?;
        p = end;
        self.set.define(id, body);
        match self.at(p) {
            b'\r' => p += if self.at(p + 1) == b'\n' { 2 } else { 1 },
            b'\n' => p += 1,
            0 => {}
            _ => return Err((p, format!("expecting newline or end at {}", self.snippet(p)))),
        }
        Ok(self.parse_space(p, true))
    }

    /// The alternatives from `pos`, just after `::=` or `(` (`extra`: spaces written before
    /// `pos` that belong to the first alternative).
    fn parse_alternates(&mut self, pos: usize, nested: bool, extra: u8) -> PResult<(Body, usize)> {
        let mut alts = Vec::new();
        let start = self.parse_space(pos, true);
        let lead = self.gap(pos, start).saturating_add(extra);
        let (seq, mut p) = self.parse_sequence(start, lead, nested)?;
        alts.push(seq);
        while self.at(p) == b'|' {
            let start = self.parse_space(p + 1, true);
            let lead = self.gap(p + 1, start);
            let (seq, end) = self.parse_sequence(start, lead, nested)?;
            p = end;
            alts.push(seq);
        }
        Ok((alts, p))
    }

    /// The spaces between `a` and `b` as a count (whitespace other than spaces, and
    /// comments, count as one space: only the converter's text must print back exactly).
    fn gap(&self, a: usize, b: usize) -> u8 {
        let ws = &self.src[a..b];
        match ws.iter().all(|&c| c == b' ') {
            true => ws.len().min(255) as u8,
            false => 1,
        }
    }

    /// Skips the whitespace after an item at `pos`, recording it in `ws`.
    fn space_after(&self, pos: usize, nested: bool, ws: &mut Vec<u8>) -> usize {
        let end = self.parse_space(pos, nested);
        ws.push(self.gap(pos, end));
        end
    }

    /// Decodes one (possibly escaped) character of a literal or class.
    fn parse_char(&self, pos: usize) -> PResult<(u32, usize)> {
        if self.at(pos) == b'\\' {
            let hex = |n: usize| -> PResult<(u32, usize)> {
                let mut v: u32 = 0;
                for k in 0..n {
                    let c = self.at(pos + 2 + k);
                    let d = (c as char)
                        .to_digit(16)
                        .ok_or_else(|| (pos, format!("expecting {n} hex chars at {}", self.snippet(pos))))?;
                    v = v.wrapping_shl(4) | d;
                }
                Ok((v, pos + 2 + n))
            };
            return match self.at(pos + 1) {
                b'x' => hex(2),
                b'u' => hex(4),
                b'U' => hex(8),
                b't' => Ok(('\t' as u32, pos + 2)),
                b'r' => Ok(('\r' as u32, pos + 2)),
                b'n' => Ok(('\n' as u32, pos + 2)),
                c @ (b'\\' | b'"' | b'[' | b']' | b'-') => Ok((c as u32, pos + 2)),
                _ => Err((pos, format!("unknown escape at {}", self.snippet(pos)))),
            };
        }
        let c = self.at(pos);
        if c == 0 && pos >= self.src.len() {
            return Err((pos, "unexpected end of input".into()));
        }
        // The text is a &str, so it is valid UTF-8: decode the one character at `pos`.
        let len = match c {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        let end = (pos + len).min(self.src.len());
        match std::str::from_utf8(&self.src[pos..end]).ok().and_then(|s| s.chars().next()) {
            Some(ch) => Ok((ch as u32, pos + ch.len_utf8())),
            None => Err((pos, "invalid UTF-8".into())),
        }
    }

    fn parse_token(&self, pos: usize) -> PResult<(u32, usize)> {
        // self.at(pos) == '<'
        let mut p = pos + 1;
        if self.at(p) == b'[' {
            p += 1;
            let (id, end) = self.parse_int(p)?;
            if id > u32::MAX as u64 {
                return Err((p, "parsed token id is too big".into()));
            }
            p = end;
            if self.at(p) != b']' {
                return Err((p, format!("expecting ']' at {}", self.snippet(p))));
            }
            p += 1;
            if self.at(p) != b'>' {
                return Err((p, format!("expecting '>' at {}", self.snippet(p))));
            }
            return Ok((id as u32, p + 1));
        }
        let Some(tokens) = self.tokens else {
            return Err((pos, format!("no vocab to parse token at {}", self.snippet(pos))));
        };
        while self.at(p) != 0 && self.at(p) != b'>' {
            p += 1;
        }
        if self.at(p) != b'>' {
            return Err((p, format!("expecting '>' at {}", self.snippet(p))));
        }
        p += 1;
        let text = &self.src[pos..p];
        match tokens.token_for_text(text) {
            Some(id) => Ok((id, p)),
            None => Err((pos, format!("invalid token '{}'", String::from_utf8_lossy(text)))),
        }
    }

    /// One alternative from `pos` (`lead`: the spaces before it).
    fn parse_sequence(&mut self, pos: usize, lead: u8, nested: bool) -> PResult<(Seq, usize)> {
        let mut p = pos;
        let mut seq = Vec::new();
        let mut ws = vec![lead];
        while self.at(p) != 0 {
            let c = self.at(p);
            if c == b'"' {
                p += 1;
                let start = p;
                let mut chars = Vec::new();
                while self.at(p) != b'"' {
                    if p >= self.src.len() {
                        return Err((p, "unexpected end of input".into()));
                    }
                    let (ch, np) = self.parse_char(p)?;
                    p = np;
                    chars.push(ch);
                }
                seq.push(Expr::Lit { chars, spelling: Some(self.text[start..p].into()) });
                p = self.space_after(p + 1, nested, &mut ws);
            } else if c == b'[' {
                let start = p;
                p += 1;
                let mut negated = false;
                if self.at(p) == b'^' {
                    p += 1;
                    negated = true;
                }
                let mut ranges = Vec::new();
                while self.at(p) != b']' {
                    if p >= self.src.len() {
                        return Err((p, "unexpected end of input".into()));
                    }
                    let (lo, np) = self.parse_char(p)?;
                    p = np;
                    if self.at(p) == b'-' && self.at(p + 1) != b']' {
                        if p + 1 >= self.src.len() {
                            return Err((p + 1, "unexpected end of input".into()));
                        }
                        let (hi, np) = self.parse_char(p + 1)?;
                        p = np;
                        ranges.push((lo, hi));
                    } else {
                        ranges.push((lo, lo));
                    }
                }
                if ranges.is_empty() {
                    return Err((start, "empty character class".into()));
                }
                let spelling = Some(self.text[start..p + 1].into());
                seq.push(Expr::Class { class: CharClass { ranges, negated }, spelling });
                p = self.space_after(p + 1, nested, &mut ws);
            } else if c == b'<' || c == b'!' {
                let negate = c == b'!';
                if negate {
                    p += 1;
                    if self.at(p) != b'<' {
                        return Err((p, format!("expecting '<' at {}", self.snippet(p))));
                    }
                }
                let (id, end) = self.parse_token(p)?;
                seq.push(if negate { Expr::NotToken(id) } else { Expr::Token(id) });
                p = self.space_after(end, nested, &mut ws);
            } else if is_word_char(c) {
                let end = self.parse_name(p)?;
                let id = self.set.id(&self.text[p..end]);
                p = self.space_after(end, nested, &mut ws);
                seq.push(Expr::Ref(id));
            } else if c == b'(' {
                if self.depth >= MAX_GROUP_NESTING {
                    return Err((p, format!("groups nested deeper than {MAX_GROUP_NESTING} levels")));
                }
                self.depth += 1;
                let r = self.parse_alternates(p + 1, true, 0);
                self.depth -= 1;
                let (body, end) = r?;
                p = end;
                seq.push(Expr::Group(body));
                if self.at(p) != b')' {
                    return Err((p, format!("expecting ')' at {}", self.snippet(p))));
                }
                p = self.space_after(p + 1, nested, &mut ws);
            } else if c == b'.' {
                seq.push(Expr::Class { class: CharClass { ranges: vec![], negated: true }, spelling: None });
                p = self.space_after(p + 1, nested, &mut ws);
            } else if c == b'*' || c == b'+' || c == b'?' {
                let op = p;
                let gap = ws.pop().unwrap_or(0);
                p = self.space_after(p + 1, nested, &mut ws);
                let (min, max, form) = match c {
                    b'*' => (0, None, RepeatForm::Star),
                    b'+' => (1, None, RepeatForm::Plus),
                    _ => (0, Some(1), RepeatForm::Optional),
                };
                self.repeat(&mut seq, min, max, form, gap, op)?;
            } else if c == b'{' {
                let op = p;
                let gap = ws.pop().unwrap_or(0);
                p = self.parse_space(p + 1, nested);
                if !self.at(p).is_ascii_digit() {
                    return Err((p, format!("expecting an int at {}", self.snippet(p))));
                }
                let (min, end) = self.parse_int(p)?;
                p = self.parse_space(end, nested);
                let max;
                let form;
                if self.at(p) == b'}' {
                    max = Some(min);
                    form = RepeatForm::Exact;
                    p = self.space_after(p + 1, nested, &mut ws);
                } else if self.at(p) == b',' {
                    p = self.parse_space(p + 1, nested);
                    let mut m = None;
                    if self.at(p).is_ascii_digit() {
                        let (v, end) = self.parse_int(p)?;
                        m = Some(v);
                        p = self.parse_space(end, nested);
                    }
                    if self.at(p) != b'}' {
                        return Err((p, format!("expecting '}}' at {}", self.snippet(p))));
                    }
                    max = m;
                    form = if m.is_some() { RepeatForm::Range } else { RepeatForm::AtLeast };
                    p = self.space_after(p + 1, nested, &mut ws);
                } else {
                    return Err((p, format!("expecting ',' at {}", self.snippet(p))));
                }
                if min > MAX_REPETITIONS || max.is_some_and(|m| m > MAX_REPETITIONS) {
                    return Err((op, format!("number of repetitions exceeds sane defaults ({MAX_REPETITIONS})")));
                }
                if let Some(m) = max {
                    if m < min {
                        return Err((op, format!("repetition maximum {m} is below the minimum {min}")));
                    }
                }
                // Both are at most MAX_REPETITIONS now.
                self.repeat(&mut seq, min as u32, max.map(|m| m as u32), form, gap, op)?;
            } else {
                break;
            }
        }
        debug_assert_eq!(ws.len(), seq.len() + 1);
        Ok((Seq { items: seq, layout: Some(ws.into()) }, p))
    }

    /// Wraps the last item of `seq` in a repetition. llama.cpp repeats the items the last
    /// symbol produced, so an item that produces none (`""`, `x{0}`) cannot be repeated.
    fn repeat(
        &mut self,
        seq: &mut Vec<Expr>,
        min: u32,
        max: Option<u32>,
        form: RepeatForm,
        gap: u8,
        op: usize,
    ) -> PResult<()> {
        let produces_nothing = |e: &Expr| match e {
            Expr::Lit { chars, .. } => chars.is_empty(),
            Expr::Repeat { max, .. } => *max == Some(0),
            _ => false,
        };
        let Some(item) = seq.pop().filter(|e| !produces_nothing(e)) else {
            return Err((op, format!("expecting preceding item to */+/?/{{ at {}", self.snippet(op))));
        };
        // Repetitions of repetitions nest: bounded like groups, so that lowering, printing
        // and dropping the item stay within the stack.
        let depth = repeat_depth(&item);
        if depth >= MAX_GROUP_NESTING {
            return Err((op, format!("repetitions nested deeper than {MAX_GROUP_NESTING} levels")));
        }
        seq.push(Expr::Repeat { item: Box::new(item), min, max, form, gap });
        Ok(())
    }
}

/// How many repetitions are wrapped around each other at the top of `e`.
fn repeat_depth(mut e: &Expr) -> usize {
    let mut n = 0;
    while let Expr::Repeat { item, .. } = e {
        n += 1;
        e = item;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map built in one go holds what inserting name by name held: every source name
    /// and `{base}_{id}` per generated rule, with llama.cpp's ids.
    #[test]
    fn symbol_ids_name_every_rule_once() {
        let text = "root ::= (\"a\" | b)* c{2,4} [x-z]+\nb ::= \"b\"? (c | \"d\")\nc ::= \"c\"\n";
        let parsed = parse_gbnf(text, None).unwrap();
        let ids = &parsed.symbol_ids;
        assert_eq!(ids.len(), parsed.rules.len(), "{ids:?}");
        let mut seen: Vec<u32> = ids.values().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..parsed.rules.len() as u32).collect::<Vec<_>>(), "{ids:?}");
        for (name, &id) in ids {
            match name.split_once('_') {
                Some((base, n)) => {
                    assert!(ids.contains_key(base), "{name}");
                    assert_eq!(n.parse::<u32>().unwrap(), id, "{name}");
                }
                None => assert!(["root", "b", "c"].contains(&name.as_str()), "{name}"),
            }
        }
        assert_eq!((ids["root"], ids["b"], ids["c"]), (0, 2, 4), "{ids:?}");
    }
}
