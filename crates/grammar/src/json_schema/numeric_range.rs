//! Exact numeric bounds, strict mode: the numerals (optional `-`, an integer part of at most
//! 16 digits without leading zeros, for `number` an optional fraction of 1 to 16 digits, no
//! exponent) whose value satisfies every bound, for bounds of any sign and scale
//! (`minimum: -90.5`, `exclusiveMaximum: 99.99`, `maximum: 1e300`).
//!
//! Each bound becomes an automaton over the numeral's characters that compares it digit by
//! digit with the bound's decimal text (never in floating point); the bounds are intersected
//! and the result lowered to rules. `multipleOf` (a step `M·10^-k`, `M` up to 250) is one
//! more automaton: the remainder modulo `M` of the numeral's digits to the step's last one. A `number` numeral's value is compared as written:
//! `-0` and `0.000` are zero.

use crate::rules::{self, Body, Expr};
use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::automaton::Dfa;
use super::converter::{err, Converter};
use crate::error::SchemaError;

/// Most digits in an integer part and in a fraction (the converter's number rule).
const MAX_DIGITS: usize = 16;

/// A bound's decimal value: sign, integer digits (no leading zeros, `"0"` for none),
/// fraction digits (no trailing zeros). Zero is never negative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Decimal {
    neg: bool,
    int: Vec<u8>,
    frac: Vec<u8>,
}

impl Decimal {
    /// The decimal a JSON number stands for (as serde_json reads it: integers exactly,
    /// others as the shortest text of their double).
    pub(super) fn from_json(v: &Value) -> Option<Decimal> {
        let n = v.as_number()?;
        let text = if n.is_i64() || n.is_u64() { n.to_string() } else { format!("{}", n.as_f64()?) };
        Decimal::parse(&text)
    }

    fn parse(text: &str) -> Option<Decimal> {
        let (neg, t) = match text.strip_prefix('-') {
            Some(t) => (true, t),
            None => (false, text),
        };
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let int = int.trim_start_matches('0');
        let frac = frac.trim_end_matches('0');
        let int = if int.is_empty() { b"0".to_vec() } else { int.as_bytes().to_vec() };
        let zero = int == b"0" && frac.is_empty();
        Some(Decimal { neg: neg && !zero, int, frac: frac.as_bytes().to_vec() })
    }

    fn is_zero(&self) -> bool {
        self.int == b"0" && self.frac.is_empty()
    }

    fn cmp_value(&self, other: &Decimal) -> Ordering {
        let mag = |d: &Decimal| (d.int.len(), d.int.clone(), d.frac.clone());
        let (a, b) = (mag(self), mag(other));
        let by_mag = a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)).then_with(|| a.2.cmp(&b.2));
        match (self.neg, other.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => by_mag,
            (true, true) => by_mag.reverse(),
        }
    }
}

/// Which side a bound holds: the value must be above (`lower`) or below it, `strict` or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Side {
    lower: bool,
    strict: bool,
}

impl Side {
    fn holds(self, ord: Ordering) -> bool {
        match (self.lower, self.strict) {
            (true, false) => ord != Ordering::Less,
            (true, true) => ord == Ordering::Greater,
            (false, false) => ord != Ordering::Greater,
            (false, true) => ord == Ordering::Less,
        }
    }
}

/// Where a numeral is: its syntax position and how its magnitude compares so far with the
/// bound's magnitude.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Pos {
    Start,
    /// After `-`.
    Minus,
    /// In the integer part: digits read, whether it is `0` (no more digits), the order of the
    /// digits read against the bound's first digits, and whether a longer integer part
    /// already decided it.
    Int {
        neg: bool,
        n: usize,
        zero: bool,
        lex: Ordering,
        longer: bool,
    },
    /// After the `.` (`m` fraction digits read): the integer part's final order, the fraction's
    /// order so far, whether any digit was non-zero.
    Frac {
        neg: bool,
        m: usize,
        int_ord: Ordering,
        ord: Ordering,
        nonzero: bool,
    },
}

/// The order of a finished integer part against the bound's.
fn int_order(b: &Decimal, n: usize, lex: Ordering, longer: bool) -> Ordering {
    if longer {
        Ordering::Greater
    } else if n < b.int.len() {
        Ordering::Less
    } else {
        lex
    }
}

/// The order of the numeral's value against `b`, given its magnitude's order and whether the
/// magnitude is zero.
fn value_order(b: &Decimal, neg: bool, mag: Ordering, zero: bool) -> Ordering {
    if zero {
        return if b.is_zero() {
            Ordering::Equal
        } else if b.neg {
            Ordering::Greater
        } else {
            Ordering::Less
        };
    }
    match (neg, b.neg) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => mag,
        (true, true) => mag.reverse(),
    }
}

/// The numerals whose value is on `side` of `b` (`integer`: no fraction).
fn bound_dfa(b: &Decimal, side: Side, integer: bool) -> Dfa {
    let mut ids: HashMap<Pos, usize> = HashMap::new();
    let mut states = vec![Pos::Start];
    ids.insert(Pos::Start, 0);
    let mut trans: Vec<Vec<(u32, u32, usize)>> = Vec::new();
    let mut accept = Vec::new();
    let mut i = 0;
    while i < states.len() {
        let p = states[i];
        let mut row: Vec<(u32, u32, usize)> = Vec::new();
        for c in [b'-', b'.', b'0', b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'8', b'9'] {
            let Some(q) = step(b, p, c, integer) else { continue };
            let id = *ids.entry(q).or_insert_with(|| {
                states.push(q);
                states.len() - 1
            });
            let c = c as u32;
            match row.last_mut() {
                Some(last) if last.2 == id && last.1 + 1 == c => last.1 = c,
                _ => row.push((c, c, id)),
            }
        }
        trans.push(row);
        accept.push(final_order(b, p).is_some_and(|o| side.holds(o)));
        i += 1;
    }
    Dfa::from_parts(trans, accept)
}

fn step(b: &Decimal, p: Pos, c: u8, integer: bool) -> Option<Pos> {
    let digit = c.is_ascii_digit();
    Some(match p {
        Pos::Start if c == b'-' => Pos::Minus,
        Pos::Start | Pos::Minus if digit => {
            let neg = p == Pos::Minus;
            Pos::Int { neg, n: 1, zero: c == b'0', lex: c.cmp(&b.int[0]), longer: false }
        }
        Pos::Int { neg, n, zero: false, lex, longer } if digit && n < MAX_DIGITS => {
            let longer = longer || n + 1 > b.int.len();
            let lex = if longer || lex != Ordering::Equal { lex } else { c.cmp(&b.int[n]) };
            Pos::Int { neg, n: n + 1, zero: false, lex, longer }
        }
        Pos::Int { neg, n, zero, lex, longer } if c == b'.' && !integer => {
            let _ = zero;
            Pos::Frac { neg, m: 0, int_ord: int_order(b, n, lex, longer), ord: Ordering::Equal, nonzero: !zero }
        }
        Pos::Frac { neg, m, int_ord, ord, nonzero } if digit && m < MAX_DIGITS => {
            let bd = b.frac.get(m).copied().unwrap_or(b'0');
            let ord = if ord == Ordering::Equal { c.cmp(&bd) } else { ord };
            Pos::Frac { neg, m: m + 1, int_ord, ord, nonzero: nonzero || c != b'0' }
        }
        _ => return None,
    })
}

/// The order of a complete numeral at `p` against `b` (`None`: not a complete numeral).
fn final_order(b: &Decimal, p: Pos) -> Option<Ordering> {
    match p {
        Pos::Int { neg, n, zero, lex, longer } => {
            // No fraction: below a bound with the same integer part and a fraction.
            let mag = match int_order(b, n, lex, longer) {
                Ordering::Equal if !b.frac.is_empty() => Ordering::Less,
                o => o,
            };
            Some(value_order(b, neg, mag, zero))
        }
        Pos::Frac { m: 0, .. } => None,
        Pos::Frac { neg, m, int_ord, ord, nonzero } => {
            let mag = if int_ord != Ordering::Equal {
                int_ord
            } else if ord != Ordering::Equal {
                ord
            } else if m < b.frac.len() {
                Ordering::Less
            } else {
                Ordering::Equal
            };
            Some(value_order(b, neg, mag, !nonzero))
        }
        _ => None,
    }
}

/// Largest `multipleOf` step mantissa compiled as an automaton (states grow with it).
const MAX_STEP_MANTISSA: u64 = 250;

/// Where a numeral is for a `multipleOf` check: the remainder modulo the step's mantissa of
/// the digits read so far, scaled to the step's last digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Rem {
    Start,
    Minus,
    Int { n: usize, zero: bool, r: u64 },
    Frac { m: usize, r: u64 },
}

/// The numerals (`integer`: without fraction) whose value is a multiple of `step`
/// (`M·10^-k`): the numeral times `10^k` is a whole number divisible by `M`. `None` when the
/// mantissa is too large for an automaton.
fn multiple_dfa(step: &Decimal, integer: bool) -> Option<Dfa> {
    let k = step.frac.len();
    let digits: Vec<u8> = step.int.iter().chain(&step.frac).copied().collect();
    let mant: u64 = std::str::from_utf8(&digits).ok()?.trim_start_matches('0').parse().ok()?;
    if step.neg || mant == 0 || mant > MAX_STEP_MANTISSA || k > MAX_DIGITS {
        return None;
    }
    let next = |p: Rem, c: u8| -> Option<Rem> {
        let d = u64::from(c.wrapping_sub(b'0'));
        let digit = c.is_ascii_digit();
        Some(match p {
            Rem::Start if c == b'-' => Rem::Minus,
            Rem::Start | Rem::Minus if digit => Rem::Int { n: 1, zero: d == 0, r: d % mant },
            Rem::Int { n, zero: false, r } if digit && n < MAX_DIGITS => {
                Rem::Int { n: n + 1, zero: false, r: (r * 10 + d) % mant }
            }
            Rem::Int { r, .. } if c == b'.' && !integer => Rem::Frac { m: 0, r },
            // Past the step's last digit only zeros keep the value on the step's grid.
            Rem::Frac { m, r } if digit && m < MAX_DIGITS && (m < k || d == 0) => {
                Rem::Frac { m: m + 1, r: if m < k { (r * 10 + d) % mant } else { r } }
            }
            _ => return None,
        })
    };
    let done = |p: Rem| -> bool {
        let (r, m) = match p {
            Rem::Int { r, .. } => (r, 0),
            Rem::Frac { m, r } if m > 0 => (r, m),
            _ => return false,
        };
        let mut r = r;
        for _ in m.min(k)..k {
            r = r * 10 % mant;
        }
        r == 0
    };
    let mut ids: HashMap<Rem, usize> = HashMap::new();
    let mut states = vec![Rem::Start];
    ids.insert(Rem::Start, 0);
    let (mut trans, mut accept) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < states.len() {
        let p = states[i];
        let mut row: Vec<(u32, u32, usize)> = Vec::new();
        for c in [b'-', b'.', b'0', b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'8', b'9'] {
            let Some(q) = next(p, c) else { continue };
            let id = *ids.entry(q).or_insert_with(|| {
                states.push(q);
                states.len() - 1
            });
            let c = c as u32;
            match row.last_mut() {
                Some(last) if last.2 == id && last.1 + 1 == c => last.1 = c,
                _ => row.push((c, c, id)),
            }
        }
        trans.push(row);
        accept.push(done(p));
        i += 1;
    }
    Some(Dfa::from_parts(trans, accept))
}

/// The bounds of a numeric schema as (decimal, side) pairs, draft 4's boolean
/// `exclusiveMinimum`/`exclusiveMaximum` read with their sibling.
fn bounds(obj: &Map<String, Value>, ptr: &str) -> Result<Vec<(Decimal, Side)>, SchemaError> {
    let mut out = Vec::new();
    for (k, lower, flag) in [
        ("minimum", true, "exclusiveMinimum"),
        ("maximum", false, "exclusiveMaximum"),
        ("exclusiveMinimum", true, ""),
        ("exclusiveMaximum", false, ""),
    ] {
        let Some(v) = obj.get(k) else { continue };
        if v.is_boolean() && flag.is_empty() {
            continue; // a draft-4 modifier, read with its sibling
        }
        let d = Decimal::from_json(v).ok_or_else(|| err(k, ptr, "must be a number"))?;
        let strict = flag.is_empty() || obj.get(flag) == Some(&Value::Bool(true));
        out.push((d, Side { lower, strict }));
    }
    Ok(out)
}

/// Whether `multipleOf` in `obj` is a positive step the automaton handles.
pub(super) fn multiple_supported(obj: &Map<String, Value>) -> bool {
    obj.get("multipleOf")
        .and_then(Decimal::from_json)
        .is_some_and(|d| !d.neg && !d.is_zero() && multiple_dfa(&d, true).is_some())
}

impl Converter<'_> {
    /// Strict mode: the rule body for an `integer` or `number` with bounds and/or a
    /// `multipleOf` (exact).
    pub(super) fn numeric_range(
        &mut self,
        obj: &Map<String, Value>,
        integer: bool,
        rule_name: &str,
        ptr: &str,
    ) -> Result<Body, SchemaError> {
        // The same bounds compile to the same rules: a schema repeating them (a `minimum: 0`
        // on many properties) reuses the first rule set.
        let key = {
            let kws = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];
            let mut k = String::from(if integer { "i" } else { "n" });
            for kw in kws {
                k.push('|');
                if let Some(v) = obj.get(kw) {
                    k.push_str(&v.to_string());
                }
            }
            k
        };
        if let Some(body) = self.numeric_rules.get(&key) {
            return Ok(body.clone());
        }
        let body = self.numeric_range_uncached(obj, integer, rule_name, ptr)?;
        self.numeric_rules.insert(key, body.clone());
        Ok(body)
    }

    fn numeric_range_uncached(
        &mut self,
        obj: &Map<String, Value>,
        integer: bool,
        rule_name: &str,
        ptr: &str,
    ) -> Result<Body, SchemaError> {
        let bs = bounds(obj, ptr)?;
        // The tightest bound on each side first (cheap unsatisfiability check, smaller product).
        let mut lo: Option<&(Decimal, Side)> = None;
        let mut hi: Option<&(Decimal, Side)> = None;
        for b in &bs {
            let slot = if b.1.lower { &mut lo } else { &mut hi };
            let tighter = match slot {
                None => true,
                Some(cur) => {
                    let o = b.0.cmp_value(&cur.0);
                    (if b.1.lower { o == Ordering::Greater } else { o == Ordering::Less })
                        || (o == Ordering::Equal && b.1.strict)
                }
            };
            if tighter {
                *slot = Some(b);
            }
        }
        let mut dfa: Option<Dfa> = None;
        for (d, side) in lo.into_iter().chain(hi) {
            let one = bound_dfa(d, *side, integer);
            dfa = Some(match dfa {
                None => one,
                Some(prev) => prev.intersect(&one).map_err(|e| err("minimum", ptr, e))?,
            });
        }
        if let Some(v) = obj.get("multipleOf") {
            let step = Decimal::from_json(v).filter(|d| !d.neg && !d.is_zero());
            let step = step.ok_or_else(|| err("multipleOf", ptr, "must be a positive number"))?;
            let multiples = multiple_dfa(&step, integer).ok_or_else(|| err("multipleOf", ptr, "step too fine"))?;
            dfa = Some(match dfa {
                None => multiples,
                Some(prev) => prev.intersect(&multiples).map_err(|e| err("multipleOf", ptr, e))?,
            });
        }
        let Some(dfa) = dfa else {
            let p = if integer { "integer" } else { "number" };
            let p = self.add_primitive(p, p)?;
            return Ok(rules::seq(vec![self.r(&p)]));
        };
        if dfa.is_empty() {
            let what = if integer { "integer" } else { "number" };
            return Err(err("minimum", ptr, format!("no {what} satisfies the bounds")));
        }
        let start = self.dfa_rule(&dfa, rule_name);
        let start = Expr::Group(rules::seq(vec![start]));
        Ok(rules::seq(vec![start, self.r("space")]))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::json_schema::test_util::{check, compile};

    fn dfa(b: &str, lower: bool, strict: bool, integer: bool) -> Dfa {
        bound_dfa(&Decimal::parse(b).unwrap(), Side { lower, strict }, integer)
    }

    #[test]
    fn one_bound_compares_digit_by_digit() {
        let d = dfa("-90.5", true, false, false);
        for ok in ["-90.5", "-90.50", "-90.4999", "-9", "0", "-0", "12.25", "-90", "-0.0"] {
            assert!(d.accepts(ok), "{ok}");
        }
        for bad in ["-90.51", "-91", "-100", "-90.5000001", "-", "1.", "01", "-.5", "1e2"] {
            assert!(!d.accepts(bad), "{bad}");
        }
        let d = dfa("99.99", false, true, false);
        assert!(d.accepts("99.98999") && d.accepts("-1000") && d.accepts("0.5"));
        assert!(!d.accepts("99.99") && !d.accepts("99.990") && !d.accepts("100") && !d.accepts("99.991"));
        let d = dfa("0", true, true, false);
        assert!(d.accepts("0.0000001") && !d.accepts("0") && !d.accepts("-0") && !d.accepts("0.00"));
        let d = dfa("2.5", true, false, true);
        assert!(d.accepts("3") && !d.accepts("2") && !d.accepts("2.5") && !d.accepts("-3"));
    }

    #[test]
    fn number_ranges_of_any_sign_and_scale() {
        let s = json!({"type": "number", "minimum": -90.5, "maximum": 90.5});
        check(
            s,
            &["-90.5", "90.5", "0", "-0", "12.345", "-90.25", "1e1"],
            &["-90.51", "90.500001", "-91", "100", "1e2"],
        );
        let s = json!({"type": "number", "exclusiveMinimum": -1.25, "exclusiveMaximum": -0.5});
        check(s, &["-1.2", "-0.51", "-1.24999"], &["-1.25", "-0.5", "-0.50", "0", "-2"]);
        let s = json!({"type": "number", "exclusiveMaximum": 99.99, "minimum": 0});
        check(s, &["0", "99.98", "99.989999"], &["99.99", "100", "-0.01"]);
        let s = json!({"type": "number", "minimum": 5, "exclusiveMinimum": true});
        check(s, &["5.01", "6"], &["5", "5.0", "4.9"]);
        let s = json!({"type": "number", "maximum": 1e300, "minimum": -1e300});
        check(s, &["9999999999999999.5", "-9999999999999999"], &[]);
        assert!(compile(&json!({"type": "number", "minimum": 2, "maximum": 1.5})).is_err());
        check(json!({"type": "number", "minimum": 1.5, "maximum": 1.5}), &["1.5", "1.50"], &["1.4", "1.51"]);
    }

    #[test]
    fn integer_ranges_beyond_the_old_limits() {
        let s = json!({"type": "integer", "minimum": -20000000000000000_i64, "maximum": -5});
        check(s, &["-5", "-9999999999999999"], &["-4", "0", "5"]);
        let s = json!({"type": "integer", "exclusiveMinimum": -2.5, "maximum": 2.5});
        check(s, &["-2", "0", "2"], &["-3", "3", "1.5"]);
        assert!(compile(&json!({"type": "integer", "minimum": 1.2, "maximum": 1.8})).is_err());
    }
}
