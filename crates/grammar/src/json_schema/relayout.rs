//! Lays a JSON document out the way a compiled schema grammar writes JSON (compact, object
//! keys in the order the grammar accepts them) and feeds it through the grammar. Used by
//! `grammar check --json-schema` and the JSONSchemaBench test: the verdict comes from the
//! grammar, never from a schema validator.
//!
//! The member order comes from the schema's [`MemberOrders`] (the order each object rule
//! writes its named members in): a document object's members are put in the order of the
//! object rule that names most of them, so the first layout tried is the grammar's own. Only
//! when that layout is refused (several object rules with different orders could apply, e.g.
//! under `anyOf`) does a bounded search try other orders; a search that runs out of budget
//! leaves the verdict undecided ([`Verdict::gave_up`]), never a rejection.

use std::collections::{HashMap, HashSet};

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

/// The orders in which a compiled schema grammar writes the named members of its objects, one
/// per object rule (required members first, then the optional ones, as the rule lays them
/// out; keys of additional properties come after them in any order) and per object inside a
/// constant. Recorded by the converter while it writes the rules.
#[derive(Debug, Clone, Default)]
pub struct MemberOrders {
    /// Each distinct order, in the order the converter wrote the rules.
    orders: Vec<MemberOrder>,
    /// Key -> (order index, position of the key in that order), for every order naming it.
    by_key: HashMap<String, Vec<(usize, usize)>>,
    seen: HashSet<MemberOrder>,
    /// Whether these are all the orders of the grammar (recorded by the converter), so a key
    /// in none of them is an additional member wherever it appears.
    complete: bool,
}

/// The named members of one object rule, in the order it writes them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MemberOrder {
    keys: Vec<String>,
    /// How many of `keys` (a prefix) the rule requires.
    required: usize,
    /// Whether the rule accepts no other key.
    closed: bool,
}

impl MemberOrders {
    /// The orders of a grammar being compiled, complete once the converter has recorded
    /// every object rule. [`MemberOrders::default`] stands for unknown orders.
    pub(crate) fn complete() -> Self {
        MemberOrders { complete: true, ..Self::default() }
    }

    /// Records the member order of one object rule: `keys` in the order it writes them, the
    /// first `required` of them required, `closed` if it accepts no other key.
    pub(crate) fn record(&mut self, keys: Vec<String>, required: usize, closed: bool) {
        let order = MemberOrder { keys, required, closed };
        if self.seen.contains(&order) {
            return;
        }
        let id = self.orders.len();
        for (pos, k) in order.keys.iter().enumerate() {
            self.by_key.entry(k.clone()).or_default().push((id, pos));
        }
        self.seen.insert(order.clone());
        self.orders.push(order);
    }

    /// Records the member order of every object inside a constant (`const`, `enum`): the
    /// grammar writes exactly its members, with its keys as the schema lists them.
    pub(crate) fn record_constant(&mut self, v: &serde_json::Value) {
        match v {
            serde_json::Value::Array(a) => a.iter().for_each(|x| self.record_constant(x)),
            serde_json::Value::Object(m) => {
                self.record(m.keys().cloned().collect(), m.len(), true);
                m.values().for_each(|x| self.record_constant(x));
            }
            _ => {}
        }
    }

    /// Whether member `j` may come before member `i` in some rule of `rules` (the rules that
    /// can accept the object, [`MemberOrders::arrange`]): a rule names `j` earlier than `i`,
    /// or names `j` but not `i` (named members precede additional ones). When no rule does,
    /// every rule either refuses `j` before `i` or takes both as additional members, whose
    /// order among themselves changes nothing. Unknown orders (a grammar not compiled from a
    /// schema): always.
    fn may_precede(&self, rules: &[usize], j: &str, i: &str) -> bool {
        !self.complete || rules.iter().any(|&r| self.rank(r, j) < self.rank(r, i))
    }

    /// The position of `k` in order `id` (`usize::MAX` when the order does not name it).
    fn rank(&self, id: usize, k: &str) -> usize {
        self.by_key.get(k).and_then(|v| v.iter().find(|&&(o, _)| o == id)).map_or(usize::MAX, |&(_, p)| p)
    }

    /// The indices of `members` in the order the best-fitting object rule writes them, and
    /// the rules that can accept the object.
    ///
    /// A rule can accept the object only if the object has every member the rule requires and,
    /// when the rule is closed, no other. Among the rules that can, the best fit names most of
    /// the members (the first recorded among equals); members it does not name (additional
    /// properties) follow in document order. Rules naming none of the members are left out:
    /// they take all of them as additional members, in any order.
    fn arrange(&self, members: &[(String, Json)]) -> (Vec<usize>, Vec<usize>) {
        let mut idx: Vec<usize> = (0..members.len()).collect();
        let mut hits: HashMap<usize, usize> = HashMap::new();
        for (k, _) in members {
            for &(id, _) in self.by_key.get(k).map(Vec::as_slice).unwrap_or(&[]) {
                *hits.entry(id).or_default() += 1;
            }
        }
        let has = |k: &String| members.iter().any(|(m, _)| m == k);
        let mut rules: Vec<(usize, usize)> = hits
            .into_iter()
            .filter(|&(id, n)| {
                let o = &self.orders[id];
                o.keys[..o.required].iter().all(has) && (!o.closed || n == members.len())
            })
            .collect();
        // Most members named first, then the first recorded.
        rules.sort_by_key(|&(id, n)| (std::cmp::Reverse(n), id));
        if let Some(&(best, _)) = rules.first() {
            // Stable: unnamed members keep document order.
            idx.sort_by_key(|&i| self.rank(best, &members[i].0));
        }
        (idx, rules.into_iter().map(|(id, _)| id).collect())
    }
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
    /// Not accepted, but the key-order search ran out of budget before it had tried every
    /// order: the document may still be accepted in an order not tried (undecided, not
    /// rejected).
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

/// The layout search: every distinct way (by grammar state) the document's values can be laid
/// out, depth first, each object's members in their arranged order first. At each member only
/// the members whose key the grammar accepts there are tried: the first in arranged order, and
/// another only if some rule that can accept the object may put it first
/// ([`MemberOrders::may_precede`]; no other order can be accepted). A value yields every
/// distinct state it can end in, so a later refusal is never blamed on the layout chosen for
/// an earlier value. Objects' results are remembered per (object, state, remaining members).
struct Search<'o> {
    orders: &'o MemberOrders,
    budget: usize,
    /// Ran out of budget: some layout was not tried.
    exhausted: bool,
    best: String,
    failure: Option<Failure>,
    /// The document itself, when it is an object: its layouts stop at the first complete one.
    root: Option<*const (String, Json)>,
    /// (object address, grammar state, remaining members) -> the ways the rest of the object
    /// can be written (state after the closing brace, text from the remaining members on).
    memo: HashMap<(usize, u32, Vec<usize>), Vec<Piece>>,
}

/// A piece of layout: the grammar after it, and its text.
type Piece = (Matcher, String);

/// Steps of the search (members tried) before it gives up.
const BUDGET: usize = 200_000;

/// Feeds `doc` through `m` (from its current state) when the grammar's member orders are not
/// known (a grammar not compiled from a schema): every order the grammar accepts is searched,
/// the document's own order first.
pub fn feed_json(m: &Matcher, doc: &Json) -> Verdict {
    feed_json_in(m, doc, &MemberOrders::default())
}

/// Feeds `doc` through `m` (from its current state), each object's members laid out in the
/// order `orders` (the schema grammar's own) gives them first.
pub fn feed_json_in(m: &Matcher, doc: &Json, orders: &MemberOrders) -> Verdict {
    let root = match doc {
        Json::Obj(o) => Some(o.as_ptr()),
        _ => None,
    };
    let mut s = Search {
        orders,
        budget: BUDGET,
        exhausted: false,
        best: String::new(),
        failure: None,
        root,
        memo: HashMap::new(),
    };
    let ends = value(m, doc, "", &mut s);
    if let Some((_, text)) = ends.iter().find(|(e, _)| e.can_end()) {
        return Verdict { accepted: true, text: text.clone(), failure: None, gave_up: false };
    }
    // Fed whole but the grammar cannot end there: no byte was refused.
    let failure = if ends.is_empty() { s.failure } else { None };
    let text = match ends.into_iter().next() {
        Some((_, t)) if t.len() >= s.best.len() => t,
        _ => s.best,
    };
    Verdict { accepted: false, text, failure, gave_up: s.exhausted }
}

/// Feeds `piece` into `m`, after the layout `prefix`; records the farthest refusal.
fn feed(m: &mut Matcher, prefix: &str, piece: &str, s: &mut Search<'_>) -> bool {
    match m.accept_bytes(piece.as_bytes()) {
        Ok(()) => {
            if prefix.len() + piece.len() > s.best.len() {
                s.best = format!("{prefix}{piece}");
            }
            true
        }
        Err(e) => {
            let at = match e {
                crate::error::AcceptError::AtByte(i) => i,
                _ => 0,
            };
            let offset = prefix.len() + at;
            if s.failure.as_ref().is_none_or(|f| offset > f.offset) {
                s.failure = Some(Failure { offset, text: format!("{prefix}{piece}") });
            }
            false
        }
    }
}

/// `piece` fed into a copy of `m`, as a one-way result.
fn fed(m: &Matcher, prefix: &str, piece: &str, s: &mut Search<'_>) -> Vec<Piece> {
    let mut m = m.clone();
    if feed(&mut m, prefix, piece, s) {
        vec![(m, piece.to_string())]
    } else {
        Vec::new()
    }
}

/// Adds `p` to `out` unless a piece ending in the same grammar state is there.
fn push_distinct(out: &mut Vec<Piece>, p: Piece) {
    if !out.iter().any(|(m, _)| m.state_id() == p.0.state_id()) {
        out.push(p);
    }
}

/// Every distinct way `v` can be laid out from `m` (after `prefix`).
fn value(m: &Matcher, v: &Json, prefix: &str, s: &mut Search<'_>) -> Vec<Piece> {
    match v {
        Json::Null => fed(m, prefix, "null", s),
        Json::Bool(b) => fed(m, prefix, if *b { "true" } else { "false" }, s),
        Json::Num(n) => {
            // As written first (its refusal is the one reported), then the value's other
            // spellings, unrecorded.
            let mut ways = fed(m, prefix, n, s);
            for other in spellings(n).iter().filter(|o| *o != n) {
                let mut mo = m.clone();
                if mo.accept_bytes(other.as_bytes()).is_ok() {
                    push_distinct(&mut ways, (mo, other.clone()));
                }
            }
            ways
        }
        Json::Str(x) => fed(m, prefix, &json_string(x), s),
        Json::Arr(a) => {
            let mut ways = fed(m, prefix, "[", s);
            for (i, x) in a.iter().enumerate() {
                ways = then(ways, prefix, s, |mi, at, s| {
                    let mut out = Vec::new();
                    for (mc, tc) in if i == 0 { vec![(mi.clone(), String::new())] } else { fed(mi, at, ",", s) } {
                        out.extend(
                            value(&mc, x, &format!("{at}{tc}"), s).into_iter().map(|(mx, tx)| (mx, tc.clone() + &tx)),
                        );
                    }
                    out
                });
            }
            then(ways, prefix, s, |mi, at, s| fed(mi, at, "]", s))
        }
        Json::Obj(o) => {
            let (rem, rules) = s.orders.arrange(o);
            then(fed(m, prefix, "{", s), prefix, s, |mi, at, s| members(mi, o, &rules, &rem, at, s))
        }
    }
}

/// Continues each of `ways` (layouts after `prefix`) with `next`, which is given the grammar
/// and the whole text so far; the distinct results, each with its text from `prefix` on.
fn then(
    ways: Vec<Piece>,
    prefix: &str,
    s: &mut Search<'_>,
    mut next: impl FnMut(&Matcher, &str, &mut Search<'_>) -> Vec<Piece>,
) -> Vec<Piece> {
    let mut out = Vec::new();
    for (mi, ti) in ways {
        for (mn, tn) in next(&mi, &format!("{prefix}{ti}"), s) {
            push_distinct(&mut out, (mn, format!("{ti}{tn}")));
        }
    }
    out
}

/// Every distinct way the members `rem` of object `o` (in any order the search tries, see
/// [`Search`]), then its closing brace, can be laid out from `m` (after `prefix`).
fn members(
    m: &Matcher,
    o: &[(String, Json)],
    rules: &[usize],
    rem: &[usize],
    prefix: &str,
    s: &mut Search<'_>,
) -> Vec<Piece> {
    if rem.is_empty() {
        return fed(m, prefix, "}", s);
    }
    let key = (o.as_ptr() as usize, m.state_id(), rem.to_vec());
    if let Some(done) = s.memo.get(&key) {
        return done.clone();
    }
    let comma = if rem.len() == o.len() { "" } else { "," };
    let head = |i: usize| format!("{comma}{}:", json_string(&o[i].0));
    // Positions in `rem` of the members whose key the grammar accepts here.
    let open: Vec<usize> = (0..rem.len())
        .filter(|&p| {
            let mut probe = m.clone();
            probe.accept_bytes(head(rem[p]).as_bytes()).is_ok()
        })
        .collect();
    let Some(&lead) = open.first() else {
        // No member can come here: feed the first, to record where it is refused.
        let _ = fed(m, prefix, &head(rem[0]), s);
        s.memo.insert(key, Vec::new());
        return Vec::new();
    };
    let candidates =
        open.iter().copied().filter(|&p| p == lead || s.orders.may_precede(rules, &o[rem[p]].0, &o[rem[lead]].0));
    let root = s.root == Some(o.as_ptr());
    let mut out = Vec::new();
    for pos in candidates.collect::<Vec<_>>() {
        if s.budget == 0 {
            s.exhausted = true;
            return out;
        }
        s.budget -= 1;
        let i = rem[pos];
        let h = head(i);
        let others: Vec<usize> = rem.iter().enumerate().filter(|&(p, _)| p != pos).map(|(_, &x)| x).collect();
        for (mh, _) in fed(m, prefix, &h, s) {
            let after_head = format!("{prefix}{h}");
            for (mv, tv) in value(&mh, &o[i].1, &after_head, s) {
                let after_value = format!("{after_head}{tv}");
                for (me, te) in members(&mv, o, rules, &others, &after_value, s) {
                    let complete = root && me.can_end();
                    push_distinct(&mut out, (me, format!("{h}{tv}{te}")));
                    if complete {
                        // The document is accepted: no other layout is needed.
                        return out;
                    }
                }
            }
        }
    }
    if !s.exhausted {
        s.memo.insert(key, out.clone());
    }
    out
}

/// Longest plain (exponent-free) spelling tried: past the converter's 16 + 16 digits no rule
/// writes one, and a number such as `1e999999` must not grow a million zeros.
const PLAIN_MAX: usize = 40;

/// The spellings of the JSON number written `text` that a schema grammar may write its value
/// in. The strict converter writes numbers through four kinds of rule: the `integer` rule
/// (`-`, at most 16 digits), the `number` rule (at most 16 integer digits, at most 16 fraction
/// digits, an optional exponent), the digit automata of numeric bounds and `multipleOf` (no
/// exponent; an integer or a fraction of 1 to 16 digits) and constants (`const`/`enum`, as
/// serde_json writes the schema's number: an integer, or the shortest text of a double, such
/// as `100.0`, `0.001`, `1e16`, `1.5e-7`). Whenever one of them writes the value at all, it
/// writes one of these spellings: the integer (and with `.0`), the plain decimal with no
/// trailing zeros, the scientific form with one digit before the point (`e`, no `+`), and
/// for more than 17 significant digits the form with 16 before the point. Zero is also `-0`.
/// Every spelling has the same exact decimal value as `text` (no rounding). Empty when `text`
/// is not a JSON number.
pub fn spellings(text: &str) -> Vec<String> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, "0"),
    };
    let exp_digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
    if exp_digits.is_empty() || !exp_digits.bytes().all(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    // An exponent beyond i64 keeps only its written spelling.
    let Ok(e) = exp_digits.parse::<i64>() else { return vec![text.to_string()] };
    let e = if exp.starts_with('-') { -i128::from(e) } else { i128::from(e) };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    // value = digits x 10^q, digits without leading or trailing zeros.
    let all: String = format!("{int}{frac}");
    let lead = all.trim_start_matches('0');
    let digits = lead.trim_end_matches('0');
    let mut out = vec![text.to_string()];
    let mut push = |s: String| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    if digits.is_empty() {
        ["0", "-0", "0.0", "-0.0"].iter().for_each(|z| push(z.to_string()));
        return out;
    }
    let q = e - frac.len() as i128 + (lead.len() - digits.len()) as i128;
    let sign = if neg { "-" } else { "" };
    let k = digits.len() as i128;
    if q >= 0 && k + q <= PLAIN_MAX as i128 {
        let int = format!("{sign}{digits}{}", "0".repeat(q as usize));
        push(int.clone());
        push(format!("{int}.0"));
    } else if q < 0 {
        let point = k + q; // digits before the point
        if point > 0 {
            push(format!("{sign}{}.{}", &digits[..point as usize], &digits[point as usize..]));
        } else if k - point + 2 <= PLAIN_MAX as i128 {
            push(format!("{sign}0.{}{digits}", "0".repeat((-point) as usize)));
        }
    }
    let sci = |before: usize| {
        let (a, b) = digits.split_at(before);
        let dot = if b.is_empty() { String::new() } else { format!(".{b}") };
        format!("{sign}{a}{dot}e{}", k - before as i128 + q)
    };
    push(sci(1));
    if k > 17 {
        push(sci(16));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::spellings;

    #[test]
    fn spellings_keep_the_exact_value() {
        assert_eq!(spellings("1.0E2"), ["1.0E2", "100", "100.0", "1e2"]);
        assert_eq!(spellings("2.50"), ["2.50", "2.5", "2.5e0"]);
        assert_eq!(spellings("-0.00012"), ["-0.00012", "-1.2e-4"]);
        assert_eq!(spellings("-12e-1"), ["-12e-1", "-1.2", "-1.2e0"]);
        assert_eq!(spellings("7"), ["7", "7.0", "7e0"]);
        assert_eq!(spellings("0.0"), ["0.0", "0", "-0", "-0.0"]);
        assert_eq!(spellings("1e16"), ["1e16", "10000000000000000", "10000000000000000.0"]);
        assert_eq!(spellings("1e400"), ["1e400"]);
        assert_eq!(
            spellings("123456789012345678.5"),
            ["123456789012345678.5", "1.234567890123456785e17", "1234567890123456.785e2"]
        );
        assert_eq!(spellings("1e99999999999999999999"), ["1e99999999999999999999"]);
        assert!(spellings("1e").is_empty() && spellings("x").is_empty());
    }
}
