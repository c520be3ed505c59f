//! `minProperties`/`maxProperties`: the member list of an object rule written so that the
//! number of members is counted. Required members come first (all present), then each
//! optional named member in order is taken or skipped, then the extra keys (repeatable);
//! one rule per (position, remaining bounds), so the count is exact.
//!
//! Extra keys are only distinct if the instance has no duplicate names, which a grammar
//! cannot check: when extra keys exist, a `minProperties` that two of them could be needed
//! to reach is refused (two copies of one name would count twice).

use std::collections::{BTreeMap, HashMap};

use super::converter::{err, Converter};
use super::frag::Frag;
use super::objects::Slot;
use super::repetition_frag;
use crate::error::SchemaError;
use crate::rules::{Body, Expr, Seq};

type Memo = HashMap<(usize, usize, Option<usize>, bool), Option<Frag>>;

struct Members<'k> {
    opt: &'k [Slot],
    kv: &'k BTreeMap<Slot, String>,
    name: String,
    memo: Memo,
}

impl Converter<'_> {
    /// The object rule `"{" ... "}"` whose member count lies in `min..=max`. `opt` lists the
    /// optional members in order, [`Slot::Extra`] (last) standing for the repeatable extra keys.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn counted_members(
        &mut self,
        req: &[String],
        opt: &[Slot],
        kv: &BTreeMap<Slot, String>,
        min: usize,
        max: Option<usize>,
        name: &str,
        ptr: &str,
    ) -> Result<Body, SchemaError> {
        let r = req.len();
        if max.is_some_and(|m| m < min) {
            return Err(err("maxProperties", ptr, "maxProperties is below minProperties: no object is valid"));
        }
        if max.is_some_and(|m| m < r) {
            return Err(err("maxProperties", ptr, "maxProperties is below the number of required properties"));
        }
        let extra = opt.last() == Some(&Slot::Extra);
        if extra && min > r + 1 {
            self.refuse(
                "minProperties",
                ptr,
                "would need two or more extra keys, whose names a grammar cannot keep distinct",
            )?;
        }
        if max.is_some_and(|m| m > crate::parse::MAX_REPETITIONS as usize) {
            self.refuse("maxProperties", ptr, "counts above 2000 are not supported")?;
        }
        let dash = if name.is_empty() { "" } else { "-" };
        let mut m = Members { opt, kv, name: format!("{name}{dash}count"), memo: HashMap::new() };
        let lo = min.saturating_sub(r);
        let hi = max.map(|x| x - r);
        let Some(tail) = self.members_from(&mut m, 0, lo, hi, r > 0) else {
            return Err(err(
                "minProperties",
                ptr,
                "no value satisfies the schema: fewer possible properties than minProperties",
            ));
        };
        // `"{" space a "," space b tail "}" space`, spaces as llama.cpp writes them.
        let space = self.r("space");
        let mut rule = Frag::of(vec![Expr::lit("{"), space.clone()]);
        rule.space();
        let mut members = Vec::new();
        for (i, k) in req.iter().enumerate() {
            if i > 0 {
                members.extend([Expr::lit(","), space.clone()]);
            }
            members.push(self.r(&kv[&Slot::Named(k.clone())]));
        }
        rule.append(Frag::of(members));
        if !tail.is_empty() {
            rule.space();
            rule.append(tail);
        }
        rule.space();
        rule.append(Frag::of(vec![Expr::lit("}"), space]));
        Ok(rule.into_body())
    }

    /// Members from optional position `i` on, between `lo` and `hi` of them; `lead` = a comma
    /// precedes each (something came before). `None` = impossible; empty = nothing.
    fn members_from(&mut self, m: &mut Members, i: usize, lo: usize, hi: Option<usize>, lead: bool) -> Option<Frag> {
        let named_left = m.opt[i..].iter().filter(|k| **k != Slot::Extra).count();
        let extra = m.opt.last() == Some(&Slot::Extra);
        let cap = if extra { None } else { Some(named_left) };
        let hi = match (hi, cap) {
            (Some(h), Some(c)) => Some(h.min(c)),
            (h, None) => h,
            (None, c) => c,
        };
        if hi.is_some_and(|h| h < lo) {
            return None;
        }
        if hi == Some(0) {
            return Some(Frag::new());
        }
        let key = (i, lo, hi, lead);
        if let Some(r) = m.memo.get(&key) {
            return r.clone();
        }
        let space = self.r("space");
        let out = if m.opt[i] == Slot::Extra {
            let x = self.r(&m.kv[&Slot::Extra]);
            let comma = Expr::lit(",");
            Some(if lead {
                let item = Expr::spaced_group(vec![Seq::new(vec![comma, space, x])]);
                repetition_frag(item, lo, hi, None)
            } else {
                repetition_frag(x, lo, hi, Some(&[comma, space]))
            })
        } else {
            let kvi = self.r(&m.kv[&m.opt[i]]);
            let take = self.members_from(m, i + 1, lo.saturating_sub(1), hi.map(|h| h - 1), true);
            let skip = if i + 1 < m.opt.len() {
                self.members_from(m, i + 1, lo, hi, lead)
            } else if lo == 0 {
                Some(Frag::new())
            } else {
                None
            };
            let mut alts = Vec::new();
            if let Some(t) = take {
                let mut items = if lead { vec![Expr::lit(","), space] } else { Vec::new() };
                items.push(kvi);
                let taken = Frag::of(items);
                alts.push(if t.is_empty() { taken } else { taken.then(t) });
            }
            if let Some(s) = skip {
                alts.push(if s.is_empty() { Frag::from(Expr::lit("")) } else { s });
            }
            match alts.len() {
                0 => None,
                _ => {
                    let hi_s = hi.map(|h| h.to_string()).unwrap_or_else(|| "n".into());
                    let rule = format!("{}-{i}-{lo}-{hi_s}{}", m.name, if lead { "-c" } else { "" });
                    let rule = self.add_rule_ir(&rule, Frag::body(alts));
                    Some(Frag::from(self.r(&rule)))
                }
            }
        };
        m.memo.insert(key, out.clone());
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::{check, refused};

    #[test]
    fn closed_object_counts_named_members() {
        let s = json!({"type": "object", "additionalProperties": false, "required": ["p"],
            "properties": {"p": {"type": "integer"}, "j": {"type": "string"}, "q": {"type": "string"}},
            "minProperties": 2, "maxProperties": 2});
        check(s, &[r#"{"p":1,"j":"a"}"#, r#"{"q":"b","p":2}"#], &[r#"{"p":1}"#, r#"{"p":1,"j":"a","q":"b"}"#, "{}"]);
    }

    #[test]
    fn map_with_exactly_one_member() {
        let s = json!({"type": "object", "additionalProperties": {"type": "boolean", "enum": [false]},
            "minProperties": 1, "maxProperties": 1});
        check(s, &[r#"{"x":false}"#, r#"{"a b":false}"#], &["{}", r#"{"x":true}"#, r#"{"x":false,"y":false}"#]);
    }

    #[test]
    fn open_object_bounds() {
        let s = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
            "minProperties": 2, "maxProperties": 3});
        check(s, &[r#"{"a":1,"z":2}"#, r#"{"a":1,"y":"s","z":2}"#], &[r#"{"a":1}"#, r#"{"a":1,"x":1,"y":2,"z":3}"#]);
        let s = json!({"type": "object", "maxProperties": 1});
        check(s, &["{}", r#"{"k":[1]}"#], &[r#"{"k":1,"l":2}"#]);
    }

    #[test]
    fn duplicate_names_could_fake_a_minimum() {
        // {"x":1,"x":2} would count twice: two extra keys must not be needed.
        refused(
            json!({"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 2}),
            "minProperties",
        );
        refused(json!({"type": "object", "properties": {"a": {}}, "minProperties": 2}), "minProperties");
    }

    #[test]
    fn impossible_counts() {
        let s = json!({"type": "object", "additionalProperties": false, "properties": {"a": {}}, "minProperties": 2});
        assert!(crate::json_schema::test_util::compile(&s).is_err());
        let s = json!({"type": "object", "required": ["a", "b"], "properties": {"a": {}, "b": {}}, "maxProperties": 1});
        assert!(crate::json_schema::test_util::compile(&s).is_err());
    }
}
