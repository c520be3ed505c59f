//! `multipleOf`, where a grammar can state it exactly:
//! * integers and a step `M·10^-e` that divides 1 (`1`, `0.5`, `0.01`, ...): every integer
//!   qualifies, so the keyword is dropped;
//! * integers and an integral step: the multiples in a small bounded range are listed;
//! * numbers and a step `10^-k`: at most `k` significant fraction digits (then only zeros),
//!   with bounds that fall on whole units after rounding to the step, e.g.
//!   `maximum: 99.99, multipleOf: 0.01` is `< 100`. No exponent forms are written.
//!
//! Arithmetic is done on the decimal text of the numbers, never in floating point.

use serde_json::{Map, Value};

use super::converter::{err, Converter};
use super::frag::Frag;
use super::int_range::{digits, min_max_int};
use crate::error::SchemaError;
use crate::rules::{self, Expr, RepeatForm};

/// Largest number of multiples listed one by one.
const MAX_LISTED: i128 = 256;
/// Largest step exponent (fraction digits) handled.
const MAX_DIGITS: u32 = 15;

/// A JSON number as `mantissa · 10^-exp` (exact for the decimal text serde_json keeps).
fn decimal(v: &Value) -> Option<(i128, u32)> {
    let text = match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => format!("{}", n.as_f64()?),
        _ => return None,
    };
    let (neg, t) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text.as_str()),
    };
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let frac = frac.trim_end_matches('0');
    if int.len() + frac.len() > 36 || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let m: i128 = format!("{int}{frac}").parse().ok()?;
    Some((if neg { -m } else { m }, frac.len() as u32))
}

/// `v · 10^k` rounded down (`up` = false) or up, when `v` has at most 36 digits.
fn scaled(v: &Value, k: u32, up: bool) -> Option<i128> {
    let (m, e) = decimal(v)?;
    if e <= k {
        return m.checked_mul(10i128.checked_pow(k - e)?);
    }
    let d = 10i128.checked_pow(e - k)?;
    let q = m.div_euclid(d);
    Some(if up && m.rem_euclid(d) != 0 { q + 1 } else { q })
}

/// One bound in whole units: `(n, exclusive)`, or `Err` when it does not fall on one.
type Bound = Option<(i128, bool)>;

/// A side of a non-negative range of decimals with at most `k` fraction digits, as
/// alternatives: `lo` / `hi` are whole numbers (`None` = 0 inclusive / unbounded).
fn non_negative(lo: (i128, bool), hi: Option<(i128, bool)>, k: u32) -> Vec<Frag> {
    let range = |e: Expr, min: u32, max: u32| Expr::repeat_as(e, min, Some(max), RepeatForm::Range);
    let zero = || digits(b'0', b'0');
    // `("." [0]{1,16})?`: a fraction of zeros.
    let zero_frac = || {
        let f = Frag::of(vec![Expr::lit("."), range(zero(), 1, 16)]);
        Expr::repeat(Frag::group(vec![f]), 0, Some(1))
    };
    let any_frac = if k == 0 {
        zero_frac()
    } else {
        let f = Frag::of(vec![Expr::lit("."), range(digits(b'0', b'9'), 1, k), range(zero(), 0, 16 - k)]);
        Expr::repeat(Frag::group(vec![f]), 0, Some(1))
    };
    let mut alts = Vec::new();
    let (l, l_excl) = lo;
    let int_lo = if l_excl { l + 1 } else { l };
    let int_hi = hi.map(|(h, _)| h - 1);
    if int_hi.is_none_or(|h| h >= int_lo) {
        let r = min_max_int(Some(int_lo as i64), int_hi.map(|h| h as i64));
        alts.push(Frag::of(vec![Frag::group(r), any_frac]));
    }
    if l_excl && k > 0 && hi.is_none_or(|(h, _)| h > l) {
        // `l` itself needs a non-zero fraction within the first k digits.
        let nz: Vec<Frag> = (0..k)
            .map(|j| {
                let mut items = Vec::new();
                if j > 0 {
                    items.push(Expr::repeat_as(zero(), j, Some(j), RepeatForm::Exact));
                }
                items.extend([digits(b'1', b'9'), range(digits(b'0', b'9'), 0, k - 1 - j)]);
                Frag::of(items)
            })
            .collect();
        let items = vec![Expr::lit(&l.to_string()), Expr::lit("."), Frag::group(nz), range(zero(), 0, 16 - k)];
        alts.push(Frag::of(items));
    }
    if let Some((h, false)) = hi {
        if h > l || (h == l && !l_excl) {
            alts.push(Frag::of(vec![Expr::lit(&h.to_string()), zero_frac()]));
        }
    }
    alts
}

impl Converter<'_> {
    /// The rule for a `type: integer|number` schema with `multipleOf`, or the schema to
    /// compile instead when the keyword is vacuous.
    pub(super) fn multiple_of(
        &mut self,
        obj: &Map<String, Value>,
        is_integer: bool,
        rule_name: &str,
        ptr: &str,
    ) -> Result<Result<String, Value>, SchemaError> {
        let step = obj.get("multipleOf").and_then(decimal).filter(|(m, _)| *m > 0);
        let Some((m, e)) = step else {
            return Err(err("multipleOf", ptr, "must be a positive number"));
        };
        let unsupported = |why: &str| err("multipleOf", ptr, why.to_string());
        let divides_one = e <= 36 && 10i128.checked_pow(e).is_some_and(|p| p % m == 0);
        if is_integer && divides_one {
            let mut rest = obj.clone();
            rest.remove("multipleOf");
            return Ok(Err(Value::Object(rest)));
        }
        for k in obj.keys() {
            let known = ["type", "multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
            if super::keywords::SUPPORTED.contains(&k.as_str()) && !known.contains(&k.as_str()) {
                let applies = super::keywords::applies_to(k).is_none_or(|t| t == "number");
                if applies {
                    self.refuse(k, ptr, "cannot be enforced together with multipleOf")?;
                }
            }
        }
        let excl_flag = |k: &str| obj.get(k) == Some(&Value::Bool(true));
        // Bounds in units of the step's last digit (10^-k) when k = e, else whole numbers.
        let k = if is_integer { 0 } else { e };
        let lower = |scale: u32| -> Option<Option<i128>> {
            let mut best: Option<i128> = None;
            if let Some(v) = obj.get("minimum") {
                let mut u = scaled(v, scale, true)?;
                if excl_flag("exclusiveMinimum") && scaled(v, scale, false)? == u {
                    u += 1;
                }
                best = Some(u);
            }
            if let Some(v) = obj.get("exclusiveMinimum").filter(|v| v.is_number()) {
                let u = scaled(v, scale, false)? + 1;
                best = Some(best.map_or(u, |b| b.max(u)));
            }
            Some(best)
        };
        let upper = |scale: u32| -> Option<Option<i128>> {
            let mut best: Option<i128> = None;
            if let Some(v) = obj.get("maximum") {
                let mut u = scaled(v, scale, false)?;
                if excl_flag("exclusiveMaximum") && scaled(v, scale, true)? == u {
                    u -= 1;
                }
                best = Some(u);
            }
            if let Some(v) = obj.get("exclusiveMaximum").filter(|v| v.is_number()) {
                let u = scaled(v, scale, true)? - 1;
                best = Some(best.map_or(u, |b| b.min(u)));
            }
            Some(best)
        };
        let (Some(lo), Some(hi)) = (lower(k), upper(k)) else {
            return Err(unsupported("bounds beyond 36 digits are not supported"));
        };
        if is_integer {
            // Integral step (e = 0 here): list the multiples of a small range.
            let (Some(lo), Some(hi)) = (lo, hi) else {
                return Err(unsupported("an integer step other than a divisor of 1 needs both bounds"));
            };
            let step = if e == 0 { m } else { return Err(unsupported("a fractional step that does not divide 1")) };
            let first = lo.div_euclid(step) * step + if lo.rem_euclid(step) == 0 { 0 } else { step };
            if first > hi {
                return Err(err("multipleOf", ptr, super::converter::UNSAT));
            }
            if (hi - first) / step >= MAX_LISTED {
                return Err(unsupported("more than 256 multiples in range"));
            }
            let vals = (0..=(hi - first) / step).map(|i| Frag::from(Expr::lit(&(first + i * step).to_string())));
            let space = self.r("space");
            return Ok(Ok(self.add_rule_ir(rule_name, rules::seq(vec![Frag::group(vals.collect()), space]))));
        }
        if m != 1 || e > MAX_DIGITS {
            return Err(unsupported("for numbers only steps 1, 0.1, 0.01, ... (up to 15 digits) are supported"));
        }
        // Whole-unit bounds: u = n·10^k (inclusive n) or n·10^k - 1 (below n, exclusive).
        let unit = 10i128.pow(k);
        let whole_hi = |u: i128| -> Option<(i128, bool)> {
            match u.rem_euclid(unit) {
                0 => Some((u.div_euclid(unit), false)),
                r if r == unit - 1 => Some((u.div_euclid(unit) + 1, true)),
                _ => None,
            }
        };
        let whole_lo = |u: i128| -> Option<(i128, bool)> {
            match u.rem_euclid(unit) {
                0 => Some((u.div_euclid(unit), false)),
                1 => Some((u.div_euclid(unit), true)),
                _ => None,
            }
        };
        let bad = || unsupported("bounds must fall on whole numbers (or just inside them) at this step");
        let lo: Bound = match lo {
            Some(u) => Some(whole_lo(u).ok_or_else(bad)?),
            None => None,
        };
        let hi: Bound = match hi {
            Some(u) => Some(whole_hi(u).ok_or_else(bad)?),
            None => None,
        };
        if lo.is_some_and(|(l, _)| l.abs() > 1_000_000_000_000_000)
            || hi.is_some_and(|(h, _)| h.abs() > 1_000_000_000_000_000)
        {
            return Err(unsupported("bounds beyond 10^15 are not supported"));
        }
        let mut alts = Vec::new();
        // Non-negative side: [max(lo, 0), hi].
        let pos_lo = match lo {
            Some((l, x)) if l >= 0 => Some((l, x)),
            Some(_) | None => Some((0, false)),
        };
        if hi.is_none_or(|(h, x)| h > 0 || (h == 0 && !x)) {
            if let Some(pl) = pos_lo {
                alts.extend(non_negative(pl, hi, k));
            }
        }
        // Negative side, mirrored: -y with y in [max(-hi, 0), -lo].
        if lo.is_none_or(|(l, _)| l < 0) {
            let neg_lo = match hi {
                Some((h, x)) if h <= 0 => (-h, x),
                _ => (0, true),
            };
            let neg_hi = lo.map(|(l, x)| (-l, x));
            let side = non_negative(neg_lo, neg_hi, k);
            if !side.is_empty() {
                alts.push(Frag::of(vec![Expr::lit("-"), Frag::group(side)]));
            }
        }
        if alts.is_empty() {
            return Err(err("multipleOf", ptr, super::converter::UNSAT));
        }
        let space = self.r("space");
        Ok(Ok(self.add_rule_ir(rule_name, rules::seq(vec![Frag::group(alts), space]))))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::{check, refused};

    #[test]
    fn cents_within_symmetric_bounds() {
        let s = json!({"type": "number", "multipleOf": 0.01, "minimum": -99999999999.99, "maximum": 99999999999.99});
        check(
            s,
            // Judged by value: `1e2` is 100 (laid out as the grammar writes it).
            &["1000.45", "200.0", "200.1", "0", "-0.5", "99999999999.99", "-99999999999.99", "7.100", "1e2"],
            &["1000.456", "99999999999.995", "100000000000", "-100000000000.00", "1e-3", "0.001"],
        );
    }

    #[test]
    fn steps_with_integral_bounds() {
        let s = json!({"type": "number", "multipleOf": 0.5, "minimum": 0});
        check(s, &["0", "0.5", "1.50", "12.0", "-0"], &["0.25", "-0.5", "1.05"]);
        let s = json!({"type": "number", "multipleOf": 0.1, "exclusiveMinimum": 0, "maximum": 2});
        check(s, &["0.1", "1.9", "2", "2.0", "1"], &["0", "0.0", "2.1", "0.05", "-1"]);
        let s = json!({"type": "number", "multipleOf": 1, "maximum": -2});
        check(s, &["-2", "-3.0", "-100"], &["-1", "-2.5", "0"]);
    }

    #[test]
    fn integers() {
        check(json!({"type": "integer", "multipleOf": 0.5, "minimum": 1}), &["1", "7"], &["0", "1.5"]);
        check(json!({"type": "integer", "multipleOf": 1}), &["-3", "0"], &["0.5"]);
        let s = json!({"type": "integer", "multipleOf": 15, "minimum": -20, "exclusiveMaximum": 45});
        check(s, &["-15", "0", "30"], &["45", "-30", "10"]);
        check(
            json!({"type": "integer", "multipleOf": 3}),
            &["0", "-3", "123456789", "-99", "3.0"],
            &["1", "-100", "3.5"],
        );
        let s = json!({"type": "integer", "multipleOf": 3, "minimum": 0, "maximum": 3000});
        check(s, &["0", "3", "2997", "3000"], &["-3", "3003", "2998"]);
        let s = json!({"type": "number", "multipleOf": 0.25, "exclusiveMaximum": -1.5});
        check(s, &["-1.75", "-2", "-2.250", "-1000.5"], &["-1.5", "-1.6", "0", "-1.7"]);
        // Too fine for an automaton: refused, never approximated.
        refused(json!({"type": "integer", "multipleOf": 997}), "multipleOf");
    }
}
