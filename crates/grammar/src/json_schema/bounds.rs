//! Compat-mode integer bounds (digit ranges) and repetition counts
//! beyond the GBNF limit.

use serde_json::{Map, Value};

use super::converter::Converter;
use crate::error::SchemaError;

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
    pub(super) fn big_repetition(&mut self, item: &str, min: usize, max: Option<usize>, name: &str) -> String {
        let k1000 = self.add_rule(&format!("{name}-x1000"), &format!("{item}{{1000}}"));
        let mut parts = Vec::new();
        if min > 0 {
            if min / 1000 > 0 {
                parts.push(format!("{k1000}{{{}}}", min / 1000));
            }
            if !min.is_multiple_of(1000) {
                parts.push(format!("{item}{{{}}}", min % 1000));
            }
        }
        match max.map(|m| m - min) {
            None => parts.push(format!("{item}*")),
            Some(0) => {}
            Some(k) if k <= 2000 => parts.push(format!("{item}{{0,{k}}}")),
            Some(k) => {
                let upto = self.add_rule(&format!("{name}-upto999"), &format!("{item}{{0,999}}"));
                let mut prev = self.add_rule(&format!("{name}-rest0"), &format!("{item}{{0,{}}}", k % 1000));
                for j in 1..=k / 1000 {
                    prev = self.add_rule(&format!("{name}-rest{j}"), &format!("{upto} | {k1000} {prev}"));
                }
                parts.push(prev);
            }
        }
        if parts.is_empty() {
            "\"\"".to_string()
        } else {
            parts.join(" ")
        }
    }
}
