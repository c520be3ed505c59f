//! Lays a JSON document out the way a compiled schema grammar writes JSON (compact, object
//! keys in the order the grammar accepts them), choosing the key order by asking the grammar
//! itself. Used by `grammar check --json-schema` and the JSONSchemaBench test: the verdict
//! comes from the grammar, never from a schema validator.

use std::collections::HashMap;

use crate::matcher::Matcher;

/// A parsed JSON value that keeps number text exactly as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, as written.
    Num(String),
    /// A string, decoded.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object, keys in document order.
    Obj(Vec<(String, Json)>),
}

/// Parses JSON text (strict RFC 8259), keeping number text.
pub fn parse_json(text: &str) -> Result<Json, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    // Re-walk the text for number spellings: serde_json (without arbitrary precision) would
    // normalize them, so numbers are recovered by a small scanner in document order.
    let mut nums = scan_numbers(text).into_iter();
    Ok(convert(&v, &mut nums))
}

fn scan_numbers(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let s = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                out.push(text[s..i].to_string());
            }
            _ => i += 1,
        }
    }
    out
}

fn convert(v: &serde_json::Value, nums: &mut impl Iterator<Item = String>) -> Json {
    use serde_json::Value as V;
    match v {
        V::Null => Json::Null,
        V::Bool(b) => Json::Bool(*b),
        V::Number(n) => Json::Num(nums.next().unwrap_or_else(|| n.to_string())),
        V::String(s) => Json::Str(s.clone()),
        V::Array(a) => Json::Arr(a.iter().map(|x| convert(x, nums)).collect()),
        V::Object(m) => Json::Obj(m.iter().map(|(k, x)| (k.clone(), convert(x, nums))).collect()),
    }
}

/// A string in canonical JSON form: only `"`, `\` and control characters (and DEL) escaped.
pub fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c as u32 == 0x7F => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Result of feeding a document through a grammar.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Whether the whole document was accepted and the grammar can end there.
    pub accepted: bool,
    /// The text fed (the accepted layout, or the longest attempt).
    pub text: String,
    /// When rejected: the farthest byte the grammar refused over every key order tried.
    pub failure: Option<Failure>,
    /// When rejected: the key-order search ran out of budget, so the rejection may not be final.
    pub gave_up: bool,
}

/// Where the grammar refused a laid-out document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Byte offset into [`Failure::text`] of the refused byte.
    pub offset: usize,
    /// The laid-out text up to and including the piece (value, key, punctuation) that was refused.
    pub text: String,
}

/// The key-order search. Orders are tried by limited discrepancy: first the greedy order (at
/// each member, the first remaining key in document order the grammar accepts there), then
/// orders that deviate from it at one member, two, ... until an order is accepted, the search
/// is exhaustive (no branch was cut by the deviation limit), or the budget runs out. Failures
/// are remembered per (object, grammar state, remaining members), so an order prefix that
/// reaches a state already explored is not explored again.
struct Search {
    budget: usize,
    best: String,
    failure: Option<Failure>,
    /// Deviations from the greedy order allowed per object in this round.
    limit: usize,
    /// Whether this round cut some branch for exceeding `limit`.
    cut: bool,
    /// (object address, grammar state, remaining members) -> the largest limit known to fail
    /// (`usize::MAX`: fails whatever the limit).
    failed: HashMap<(usize, u32, Vec<usize>), usize>,
}

/// Steps of the search (members tried) before it gives up.
const BUDGET: usize = 200_000;

/// Feeds `doc` through `m` (from its current state), trying key orders the grammar accepts.
pub fn feed_json(m: &Matcher, doc: &Json) -> Verdict {
    let mut s =
        Search { budget: BUDGET, best: String::new(), failure: None, limit: 0, cut: false, failed: HashMap::new() };
    loop {
        s.cut = false;
        let mut m = m.clone();
        let mut text = String::new();
        let fed = value(&mut m, doc, &mut text, &mut s);
        if fed && m.can_end() {
            return Verdict { accepted: true, text, failure: None, gave_up: false };
        }
        if s.cut && s.budget > 0 {
            s.limit += 1;
            continue;
        }
        // Fed whole but the grammar cannot end there: no byte was refused.
        let (failure, gave_up) = if fed { (None, false) } else { (s.failure, s.budget == 0) };
        return Verdict {
            accepted: false,
            text: if s.best.len() > text.len() { s.best } else { text },
            failure,
            gave_up,
        };
    }
}

fn feed(m: &mut Matcher, text: &mut String, s: &str, search: &mut Search) -> bool {
    match m.accept_bytes(s.as_bytes()) {
        Ok(()) => {
            text.push_str(s);
            if text.len() > search.best.len() {
                search.best = text.clone();
            }
            true
        }
        Err(e) => {
            let at = match e {
                crate::error::AcceptError::AtByte(i) => i,
                _ => 0,
            };
            let offset = text.len() + at;
            if search.failure.as_ref().is_none_or(|f| offset > f.offset) {
                search.failure = Some(Failure { offset, text: format!("{text}{s}") });
            }
            false
        }
    }
}

fn value(m: &mut Matcher, v: &Json, text: &mut String, s: &mut Search) -> bool {
    match v {
        Json::Null => feed(m, text, "null", s),
        Json::Bool(b) => feed(m, text, if *b { "true" } else { "false" }, s),
        Json::Num(n) => feed(m, text, n, s),
        Json::Str(x) => feed(m, text, &json_string(x), s),
        Json::Arr(a) => {
            if !feed(m, text, "[", s) {
                return false;
            }
            for (i, x) in a.iter().enumerate() {
                if i > 0 && !feed(m, text, ",", s) {
                    return false;
                }
                if !value(m, x, text, s) {
                    return false;
                }
            }
            feed(m, text, "]", s)
        }
        Json::Obj(o) => {
            if !feed(m, text, "{", s) {
                return false;
            }
            let rem: Vec<usize> = (0..o.len()).collect();
            members(m, o, &rem, true, text, s)
        }
    }
}

/// Tries the remaining members in each order the grammar admits (within the round's
/// deviation limit), then the closing brace.
fn members(
    m: &mut Matcher,
    o: &[(String, Json)],
    rem: &[usize],
    first: bool,
    text: &mut String,
    s: &mut Search,
) -> bool {
    if rem.is_empty() {
        return feed(m, text, "}", s);
    }
    let key = (o.as_ptr() as usize, m.state_id(), rem.to_vec());
    if s.failed.get(&key).is_some_and(|&f| f >= s.limit) {
        if s.failed[&key] != usize::MAX {
            s.cut = true;
        }
        return false;
    }
    let (limit, cut_before) = (s.limit, s.cut);
    s.cut = false;
    // The greedy choice is the first member (in document order) the grammar accepts here;
    // with deviations left, the others are tried first (deviating early in the object), the
    // greedy one last.
    let mut greedy: Option<(usize, Matcher, String)> = None;
    let mut found = false;
    for (pos, &i) in rem.iter().enumerate() {
        if s.budget == 0 {
            break;
        }
        s.budget -= 1;
        let mut m2 = m.clone();
        let mut t2 = text.clone();
        let head = format!("{}{}:", if first { "" } else { "," }, json_string(&o[i].0));
        if !feed(&mut m2, &mut t2, &head, s) || !value(&mut m2, &o[i].1, &mut t2, s) {
            continue;
        }
        if greedy.is_none() {
            greedy = Some((pos, m2, t2));
            if s.limit == 0 {
                break;
            }
            continue;
        }
        s.limit -= 1;
        let ok = rest(m, o, rem, pos, m2, t2, text, s);
        s.limit += 1;
        if ok {
            found = true;
            break;
        }
    }
    if let (false, Some((pos, m2, t2))) = (found, greedy) {
        let others_left = rem.len() > pos + 1;
        found = rest(m, o, rem, pos, m2, t2, text, s);
        if !found && s.limit == 0 && others_left {
            s.cut = true;
        }
    }
    if !found && s.budget > 0 {
        s.failed.insert(key, if s.cut { limit } else { usize::MAX });
    }
    s.cut |= cut_before;
    found
}

/// After member `rem[pos]` was fed (into `m2`/`t2`): the other members, then the brace;
/// on success the state moves to `m`/`text`.
#[allow(clippy::too_many_arguments)]
fn rest(
    m: &mut Matcher,
    o: &[(String, Json)],
    rem: &[usize],
    pos: usize,
    mut m2: Matcher,
    mut t2: String,
    text: &mut String,
    s: &mut Search,
) -> bool {
    let others: Vec<usize> = rem.iter().enumerate().filter(|&(p, _)| p != pos).map(|(_, &x)| x).collect();
    if members(&mut m2, o, &others, false, &mut t2, s) {
        *m = m2;
        *text = t2;
        true
    } else {
        false
    }
}
