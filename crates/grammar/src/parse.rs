//! The GBNF parser: llama.cpp's grammar language with its exact acceptance rules (name
//! characters, escapes, newline handling, repetition limits), lowered the way llama.cpp lowers
//! it (groups and repetitions become generated `rule_N` helper rules).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use crate::error::ParseError;
use crate::grammar::CharClass;

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
    out: ParsedGrammar,
    class_ids: HashMap<CharClass, u32>,
    /// The class id of each single ASCII character met so far (`u32::MAX`: not yet), so a
    /// literal's characters are interned without building and hashing a class each.
    ascii_class: [u32; 128],
    /// Rule ids by the names written in the source (looked up without allocating).
    names: HashMap<&'a [u8], u32>,
    /// Generated helper rules: (id, id of the rule they were generated in), named
    /// `{that rule's name}_{id}` once parsing is done.
    generated: Vec<(u32, u32)>,
    /// Rule ids given out so far (names in the source and generated ones).
    n_symbols: u32,
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
    let mut p = Parser {
        src: src.as_bytes(),
        out: ParsedGrammar::default(),
        class_ids: HashMap::new(),
        ascii_class: [u32::MAX; 128],
        names: HashMap::new(),
        generated: Vec::new(),
        n_symbols: 0,
        tokens,
        depth: 0,
    };
    match p.parse_all() {
        Ok(()) => Ok(p.out),
        Err((pos, reason)) => {
            let (line, column) = line_col(src, pos);
            Err(ParseError { line, column, reason })
        }
    }
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
        self.name_symbols();
        // Every referenced rule must be defined.
        for (id, rule) in self.out.rules.iter().enumerate() {
            if rule.is_none() {
                let name = self.out.symbol_ids.iter().find(|(_, &v)| v as usize == id).map(|(k, _)| k.clone());
                return Err((self.src.len(), format!("undefined rule identifier '{}'", name.unwrap_or_default())));
            }
        }
        let n = self.out.rules.len();
        for (name, &id) in &self.out.symbol_ids {
            if id as usize >= n {
                return Err((self.src.len(), format!("undefined rule identifier '{name}'")));
            }
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

    /// The id of the rule named by the source bytes `name` (a new one the first time).
    fn symbol_id(&mut self, name: &'a [u8]) -> u32 {
        let next = self.n_symbols;
        let id = *self.names.entry(name).or_insert(next);
        if id == next {
            self.n_symbols += 1;
        }
        id
    }

    /// A new helper rule's id (named after rule `base` when parsing is done).
    fn generate_symbol_id(&mut self, base: u32) -> u32 {
        let next = self.n_symbols;
        self.n_symbols += 1;
        self.generated.push((next, base));
        next
    }

    /// Fills [`ParsedGrammar::symbol_ids`]: every source name, and `{base}_{id}` for each
    /// generated rule (source names hold no `_`, so the two kinds never collide). The names
    /// are collected first and the map is built from them in one go (sorted once, then
    /// filled in order), which is several times cheaper than inserting them one by one into
    /// the tree for grammars with thousands of generated rules.
    fn name_symbols(&mut self) {
        let mut by_id = vec![""; self.n_symbols as usize];
        let mut all: Vec<(String, u32)> = Vec::with_capacity(self.names.len() + self.generated.len());
        for (&name, &id) in &self.names {
            // Names are ASCII word characters.
            let name = std::str::from_utf8(name).unwrap_or("");
            by_id[id as usize] = name;
            all.push((name.to_string(), id));
        }
        for &(id, base) in &self.generated {
            let base = by_id[base as usize];
            let mut name = String::with_capacity(base.len() + 8);
            name.push_str(base);
            name.push('_');
            // Writing into a String cannot fail.
            let _ = write!(name, "{id}");
            all.push((name, id));
        }
        // Every name is distinct (source names are map keys; generated ids are unique), so
        // the map holds exactly these pairs, whatever the order of insertion.
        self.out.symbol_ids = all.into_iter().collect();
    }

    fn add_rule(&mut self, id: u32, alts: Vec<Vec<Item>>) {
        let id = id as usize;
        if self.out.rules.len() <= id {
            self.out.rules.resize(id + 1, None);
        }
        self.out.rules[id] = Some(alts);
    }

    /// The class id of the single character `ch`.
    fn char_class(&mut self, ch: u32) -> u32 {
        let Some(&cached) = self.ascii_class.get(ch as usize) else {
            return self.class(CharClass { ranges: vec![(ch, ch)], negated: false });
        };
        if cached != u32::MAX {
            return cached;
        }
        let id = self.class(CharClass { ranges: vec![(ch, ch)], negated: false });
        self.ascii_class[ch as usize] = id;
        id
    }

    fn class(&mut self, c: CharClass) -> u32 {
        if let Some(&id) = self.class_ids.get(&c) {
            return id;
        }
        let id = self.out.classes.len() as u32;
        self.out.classes.push(c.clone());
        self.class_ids.insert(c, id);
        id
    }

    fn parse_rule(&mut self, pos: usize) -> PResult<usize> {
        let name_end = self.parse_name(pos)?;
        let mut p = self.parse_space(name_end, false);
        let src = self.src;
        let id = self.symbol_id(&src[pos..name_end]);
        if !(self.at(p) == b':' && self.at(p + 1) == b':' && self.at(p + 2) == b'=') {
            return Err((p, format!("expecting ::= at {}", self.snippet(p))));
        }
        p = self.parse_space(p + 3, true);
        p = self.parse_alternates(p, id, id, false)?;
        match self.at(p) {
            b'\r' => p += if self.at(p + 1) == b'\n' { 2 } else { 1 },
            b'\n' => p += 1,
            0 => {}
            _ => return Err((p, format!("expecting newline or end at {}", self.snippet(p)))),
        }
        Ok(self.parse_space(p, true))
    }

    /// `rule_name` is the id of the source rule being parsed (generated rules are named
    /// after it).
    fn parse_alternates(&mut self, pos: usize, rule_name: u32, rule_id: u32, nested: bool) -> PResult<usize> {
        let mut alts = Vec::new();
        // One buffer for every alternative, copied out at its exact length (growing a fresh
        // vector per alternative item by item was a visible part of parsing large grammars).
        let mut seq = Vec::new();
        let mut p = self.parse_sequence(pos, rule_name, &mut seq, nested)?;
        alts.push(seq.as_slice().to_vec());
        while self.at(p) == b'|' {
            p = self.parse_space(p + 1, true);
            seq.clear();
            p = self.parse_sequence(p, rule_name, &mut seq, nested)?;
            alts.push(seq.as_slice().to_vec());
        }
        self.add_rule(rule_id, alts);
        Ok(p)
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

    fn parse_sequence(&mut self, pos: usize, rule_name: u32, seq: &mut Vec<Item>, nested: bool) -> PResult<usize> {
        let mut last_sym_start = seq.len();
        let mut p = pos;
        while self.at(p) != 0 {
            let c = self.at(p);
            if c == b'"' {
                p += 1;
                last_sym_start = seq.len();
                while self.at(p) != b'"' {
                    if p >= self.src.len() {
                        return Err((p, "unexpected end of input".into()));
                    }
                    let (ch, np) = self.parse_char(p)?;
                    p = np;
                    let id = self.char_class(ch);
                    seq.push(Item::Char(id));
                }
                p = self.parse_space(p + 1, nested);
            } else if c == b'[' {
                let start = p;
                p += 1;
                let mut negated = false;
                if self.at(p) == b'^' {
                    p += 1;
                    negated = true;
                }
                last_sym_start = seq.len();
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
                let id = self.class(CharClass { ranges, negated });
                seq.push(Item::Char(id));
                p = self.parse_space(p + 1, nested);
            } else if c == b'<' || c == b'!' {
                let negate = c == b'!';
                if negate {
                    p += 1;
                    if self.at(p) != b'<' {
                        return Err((p, format!("expecting '<' at {}", self.snippet(p))));
                    }
                }
                let (id, end) = self.parse_token(p)?;
                last_sym_start = seq.len();
                seq.push(if negate { Item::NotToken(id) } else { Item::Token(id) });
                p = self.parse_space(end, nested);
            } else if is_word_char(c) {
                let end = self.parse_name(p)?;
                let src = self.src;
                let id = self.symbol_id(&src[p..end]);
                p = self.parse_space(end, nested);
                last_sym_start = seq.len();
                seq.push(Item::Ref(id));
            } else if c == b'(' {
                if self.depth >= MAX_GROUP_NESTING {
                    return Err((p, format!("groups nested deeper than {MAX_GROUP_NESTING} levels")));
                }
                p = self.parse_space(p + 1, true);
                let sub = self.generate_symbol_id(rule_name);
                self.depth += 1;
                let r = self.parse_alternates(p, rule_name, sub, true);
                self.depth -= 1;
                p = r?;
                last_sym_start = seq.len();
                seq.push(Item::Ref(sub));
                if self.at(p) != b')' {
                    return Err((p, format!("expecting ')' at {}", self.snippet(p))));
                }
                p = self.parse_space(p + 1, nested);
            } else if c == b'.' {
                last_sym_start = seq.len();
                let id = self.class(CharClass { ranges: vec![], negated: true });
                seq.push(Item::Char(id));
                p = self.parse_space(p + 1, nested);
            } else if c == b'*' || c == b'+' || c == b'?' {
                let op = p;
                p = self.parse_space(p + 1, nested);
                let (min, max) = match c {
                    b'*' => (0, None),
                    b'+' => (1, None),
                    _ => (0, Some(1)),
                };
                self.repeat(seq, last_sym_start, rule_name, min, max, op)?;
            } else if c == b'{' {
                let op = p;
                p = self.parse_space(p + 1, nested);
                if !self.at(p).is_ascii_digit() {
                    return Err((p, format!("expecting an int at {}", self.snippet(p))));
                }
                let (min, end) = self.parse_int(p)?;
                p = self.parse_space(end, nested);
                let max;
                if self.at(p) == b'}' {
                    max = Some(min);
                    p = self.parse_space(p + 1, nested);
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
                    p = self.parse_space(p + 1, nested);
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
                self.repeat(seq, last_sym_start, rule_name, min, max, op)?;
            } else {
                break;
            }
        }
        Ok(p)
    }

    /// Rewrites the items since `start` as llama.cpp does: `S{m,n}` = m copies of S then a
    /// chain of nested optional helper rules; `S{m,}` = m copies then `S' ::= S S' |`.
    fn repeat(
        &mut self,
        seq: &mut Vec<Item>,
        start: usize,
        rule_name: u32,
        min: u64,
        max: Option<u64>,
        op: usize,
    ) -> PResult<()> {
        if start == seq.len() {
            return Err((op, format!("expecting preceding item to */+/?/{{ at {}", self.snippet(op))));
        }
        let prev: Vec<Item> = seq[start..].to_vec();
        if min == 0 {
            seq.truncate(start);
        } else {
            for _ in 1..min {
                seq.extend_from_slice(&prev);
            }
        }
        let n_opt = match max {
            None => 1,
            Some(m) => m - min,
        };
        let mut last_rec = 0u32;
        for i in 0..n_opt {
            let id = self.generate_symbol_id(rule_name);
            let mut alt = prev.clone();
            if i > 0 || max.is_none() {
                alt.push(Item::Ref(if max.is_none() { id } else { last_rec }));
            }
            self.add_rule(id, vec![alt, vec![]]);
            last_rec = id;
        }
        if n_opt > 0 {
            seq.push(Item::Ref(last_rec));
        }
        Ok(())
    }
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
