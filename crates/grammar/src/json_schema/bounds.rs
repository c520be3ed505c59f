//! Compat-mode integer bounds (digit ranges) and repetition counts
//! beyond the GBNF limit.

use serde_json::{Map, Value};

use super::converter::Converter;
use super::frag::Frag;
use crate::error::SchemaError;
use crate::rules::{self, Expr, RepeatForm, Seq};

impl Converter<'_> {
    pub(super) fn int_bounds(
        &mut self,
        obj: &Map<String, Value>,
        ptr: &str,
    ) -> Result<(Option<i64>, Option<i64>), SchemaError> {
        let strict = self.opts.strict;
        let num = |k: &str| obj.get(k).and_then(Value::as_f64);
        const LIMIT: f64 = 1e15;
        let mut lo = None;
        let mut hi = None;
        if let Some(m) = num("minimum") {
            lo = Some(m.ceil());
            if strict && obj.get("exclusiveMinimum") == Some(&Value::Bool(true)) {
                lo = Some(m.floor() + 1.0);
            }
        } else if let Some(m) = num("exclusiveMinimum") {
            lo = Some(if strict { m.floor() + 1.0 } else { m + 1.0 });
        }
        if let Some(m) = num("maximum") {
            hi = Some(m.floor());
            if strict && obj.get("exclusiveMaximum") == Some(&Value::Bool(true)) {
                hi = Some(m.ceil() - 1.0);
            }
        } else if let Some(m) = num("exclusiveMaximum") {
            hi = Some(if strict { m.ceil() - 1.0 } else { m - 1.0 });
        }
        if strict {
            if let (Some(Value::Number(_)), Some(_)) = (obj.get("exclusiveMinimum"), num("minimum")) {
                lo = Some(lo.unwrap().max(num("exclusiveMinimum").unwrap().floor() + 1.0));
            }
            if let (Some(Value::Number(_)), Some(_)) = (obj.get("exclusiveMaximum"), num("maximum")) {
                hi = Some(hi.unwrap().min(num("exclusiveMaximum").unwrap().ceil() - 1.0));
            }
            if lo.is_some_and(|v| v.abs() > LIMIT) || hi.is_some_and(|v| v.abs() > LIMIT) {
                self.refuse("minimum", ptr, "integer bounds beyond 10^15 are not supported")?;
                return Ok((None, None));
            }
        }
        // Beyond 16 digits the integer rule cannot reach anyway; clamping avoids overflow.
        let lo = lo.map(|v| v.clamp(-1e16, 1e16));
        let hi = hi.map(|v| v.clamp(-1e16, 1e16));
        Ok((lo.map(|v| v as i64), hi.map(|v| v as i64)))
    }

    /// `item{min,max}` for counts beyond the GBNF limit of 2000, with shared helper rules:
    /// thousands are counted by a chain `R_j ::= item{0,999} | item{1000} R_(j-1)`.
    pub(super) fn big_repetition(&mut self, item: &Expr, min: usize, max: Option<usize>, name: &str) -> Frag {
        let exact = |e: Expr, n: u32| Expr::repeat_as(e, n, Some(n), RepeatForm::Exact);
        let upto = |e: Expr, n: u32| Expr::repeat_as(e, 0, Some(n), RepeatForm::Range);
        // Counts here are at most 2,000,000 (longer lengths are refused before).
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        let k1000 = self.add_rule_ir(&format!("{name}-x1000"), rules::seq(vec![exact(item.clone(), 1000)]));
        let k1000 = self.r(&k1000);
        let mut parts = Vec::new();
        if min > 0 {
            if min / 1000 > 0 {
                parts.push(exact(k1000.clone(), n(min / 1000)));
            }
            if !min.is_multiple_of(1000) {
                parts.push(exact(item.clone(), n(min % 1000)));
            }
        }
        match max.map(|m| m - min) {
            None => parts.push(Expr::repeat(item.clone(), 0, None)),
            Some(0) => {}
            Some(k) if k <= 2000 => parts.push(upto(item.clone(), n(k))),
            Some(k) => {
                let u = self.add_rule_ir(&format!("{name}-upto999"), rules::seq(vec![upto(item.clone(), 999)]));
                let u = self.r(&u);
                let rest0 = rules::seq(vec![upto(item.clone(), n(k % 1000))]);
                let mut prev = self.add_rule_ir(&format!("{name}-rest0"), rest0);
                for j in 1..=k / 1000 {
                    let p = self.r(&prev);
                    let body = vec![Seq::new(vec![u.clone()]), Seq::new(vec![k1000.clone(), p])];
                    prev = self.add_rule_ir(&format!("{name}-rest{j}"), body);
                }
                parts.push(self.r(&prev));
            }
        }
        if parts.is_empty() {
            Frag::from(Expr::lit(""))
        } else {
            Frag::of(parts)
        }
    }
}
