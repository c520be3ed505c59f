//! Strict-mode arrays: `items`, tuples (`prefixItems`, or draft 4-2019 `items` as a list,
//! with the items after them taking `items` / `additionalItems`, any value by default),
//! `minItems`/`maxItems`, and `uniqueItems` when the items come from a small finite set
//! (`enum`, `const`, `boolean`, `null`): each array then lists distinct values, written as one
//! rule per set of values already used.

use serde_json::Value;

use super::converter::{as_count, canonical_constant_lit, err, is_unsatisfiable, Converter};
use super::enum_filter::canonical;
use super::frag::Frag;
use super::keywords::ANNOTATIONS;
use super::repetition_frag;
use super::shape::{deref_plain, json_type_matches};
use crate::error::SchemaError;
use crate::rules::{Expr, Seq};

/// Most distinct values `uniqueItems` is compiled for (rules grow as 2^n).
const MAX_UNIQUE_VALUES: usize = 8;

/// The tuple part and the schema of the items after it (`prefixItems` + `items`, or a list
/// `items` + `additionalItems`), with the keywords they come from.
/// Borrowed from the schema: no deep copy per nesting level.
struct Layout<'v> {
    tuple: &'v [Value],
    tuple_kw: &'static str,
    rest: &'v Value,
    rest_kw: &'static str,
}

fn layout<'v>(obj: &'v serde_json::Map<String, Value>, ptr: &str) -> Result<Layout<'v>, SchemaError> {
    static TRUE: Value = Value::Bool(true);
    let t = &TRUE;
    Ok(match (obj.get("prefixItems"), obj.get("items")) {
        (Some(Value::Array(_)), Some(Value::Array(_))) => {
            return Err(err("items", ptr, "items cannot be a list next to prefixItems"))
        }
        (Some(Value::Array(p)), items) => {
            Layout { tuple: p, tuple_kw: "prefixItems", rest: items.unwrap_or(t), rest_kw: "items" }
        }
        (Some(_), _) => return Err(err("prefixItems", ptr, "must be an array")),
        (None, Some(Value::Array(list))) => Layout {
            tuple: list,
            tuple_kw: "items",
            rest: obj.get("additionalItems").unwrap_or(t),
            rest_kw: "additionalItems",
        },
        (None, items) => Layout { tuple: &[], tuple_kw: "items", rest: items.unwrap_or(t), rest_kw: "items" },
    })
}

/// The values of an item schema that admits only a few (`enum`, `const`, `boolean`, `null`),
/// grouped by JSON equality (`1` and `1.0` are one value): `None` when it admits others.
pub(super) fn finite_values(root: &Value, s: &Value) -> Option<Vec<Vec<Value>>> {
    let m = deref_plain(root, s).as_object()?;
    if m.keys().any(|k| !matches!(k.as_str(), "type" | "enum" | "const") && !ANNOTATIONS.contains(&k.as_str())) {
        return None;
    }
    let types: Option<Vec<&str>> = match m.get("type") {
        None => None,
        Some(Value::String(t)) => Some(vec![t.as_str()]),
        Some(Value::Array(a)) => Some(a.iter().filter_map(Value::as_str).collect()),
        Some(_) => return None,
    };
    let mut vals: Vec<Value> = match (m.get("const"), m.get("enum")) {
        (Some(c), Some(Value::Array(e))) => e.iter().filter(|v| *v == c).cloned().collect(),
        (Some(c), None) => vec![c.clone()],
        (None, Some(Value::Array(e))) => e.clone(),
        (None, None) => match types.as_deref() {
            Some(ts) if ts.iter().all(|t| matches!(*t, "boolean" | "null")) => {
                let mut v = Vec::new();
                if ts.contains(&"boolean") {
                    v.extend([Value::Bool(true), Value::Bool(false)]);
                }
                if ts.contains(&"null") {
                    v.push(Value::Null);
                }
                v
            }
            _ => return None,
        },
        _ => return None,
    };
    if let Some(ts) = &types {
        vals.retain(|v| ts.iter().any(|t| json_type_matches(v, t)));
    }
    let mut groups: Vec<(String, Vec<Value>)> = Vec::new();
    for v in vals {
        let c = canonical(&v);
        match groups.iter_mut().find(|g| g.0 == c) {
            Some(g) if !g.1.contains(&v) => g.1.push(v),
            Some(_) => {}
            None => groups.push((c, vec![v])),
        }
    }
    (groups.len() <= MAX_UNIQUE_VALUES).then(|| groups.into_iter().map(|g| g.1).collect())
}

/// Whether `uniqueItems: true` can be compiled for this array schema (vacuous for at most one
/// item, or a finite item set without a tuple).
pub(super) fn unique_items_supported(root: &Value, obj: &serde_json::Map<String, Value>) -> bool {
    if obj.get("maxItems").and_then(Value::as_u64).is_some_and(|m| m <= 1) {
        return true;
    }
    if obj.contains_key("prefixItems") || obj.get("items").is_some_and(Value::is_array) {
        return false;
    }
    obj.get("items").is_some_and(|i| finite_values(root, i).is_some())
}

impl Converter<'_> {
    /// The rule for a strict array schema (`type: array` and its keywords).
    pub(super) fn strict_array(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        name: &str,
        rule_name: &str,
        ptr: &str,
    ) -> Result<String, SchemaError> {
        let honored = ["type", "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "additionalItems"];
        self.check_honored(obj, ptr, &["array"], &honored)?;
        let l = layout(obj, ptr)?;
        let min = as_count(obj.get("minItems"));
        let mut max = obj.get("maxItems").map(|v| as_count(Some(v)));
        let limit = crate::parse::MAX_REPETITIONS as usize;
        if min > limit || max.is_some_and(|m| m > limit) {
            self.refuse("maxItems", ptr, "item counts above 2000 are not supported")?;
            max = max.filter(|&m| m <= limit);
        }
        if max.is_some_and(|m| m < min) {
            return Err(err("maxItems", ptr, "maxItems is below minItems: no array is valid"));
        }
        let prefix = if name.is_empty() { String::new() } else { format!("{name}-") };
        let unique = obj.get("uniqueItems") == Some(&Value::Bool(true)) && max.is_none_or(|m| m > 1);
        if unique && l.tuple.is_empty() {
            if let Some(groups) = finite_values(self.root, l.rest) {
                if min > groups.len() {
                    return Err(err("minItems", ptr, "no array is valid: more distinct items required than exist"));
                }
                return Ok(self.unique_array(&groups, min, max, rule_name));
            }
        }
        // Tuple positions, up to the first that no value fits (arrays end before it).
        let mut parts = Vec::new();
        for (i, it) in l.tuple.iter().enumerate() {
            if max.is_some_and(|m| i >= m) {
                break;
            }
            match self.visit(it, &format!("{prefix}tuple-{i}"), &format!("{ptr}/{}/{i}", l.tuple_kw)) {
                Ok(r) => parts.push(r),
                Err(e) if is_unsatisfiable(&e) && i >= min => {
                    max = Some(i);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        let n = parts.len();
        let rest = if max.is_some_and(|m| m <= n) || n < l.tuple.len() {
            None
        } else {
            match self.visit(l.rest, &format!("{prefix}item"), &format!("{ptr}/{}", l.rest_kw)) {
                Ok(r) => Some(r),
                Err(e) if is_unsatisfiable(&e) => None,
                Err(e) => return Err(e),
            }
        };
        if rest.is_none() && min > n {
            return Err(err("minItems", ptr, "no array is valid: more items required than the schema allows"));
        }
        // Spaces as llama.cpp's text writes them (a stray one where a part is empty).
        let space = self.r("space");
        let sep = [Expr::lit(","), space.clone()];
        let mut tail = match (&rest, n) {
            (None, _) => Frag::new(),
            (Some(r), 0) => repetition_frag(self.r(r), min, max, Some(&sep)),
            (Some(r), _) => {
                let unit = Expr::Group(vec![Seq::new(vec![sep[0].clone(), space.clone(), self.r(r)])]);
                repetition_frag(unit, min.saturating_sub(n), max.map(|m| m - n), None)
            }
        };
        for i in (0..n).rev() {
            let mut elem = if i == 0 { Vec::new() } else { sep.to_vec() };
            elem.push(self.r(&parts[i]));
            let seq = Frag::of(elem).then(tail).trim_end();
            tail = if i < min { seq } else { Frag::from(Expr::repeat(Frag::group(vec![seq]), 0, Some(1))) };
        }
        let rule = Frag::of(vec![Expr::lit("["), space.clone()]).then(tail).then(Frag::of(vec![Expr::lit("]"), space]));
        Ok(self.add_rule_ir(rule_name, rule.into_body()))
    }

    /// Arrays of distinct values from `groups` (each group one value in its spellings), with
    /// `min..=max` items: one rule per set of groups used so far.
    fn unique_array(&mut self, groups: &[Vec<Value>], min: usize, max: Option<usize>, rule_name: &str) -> String {
        let n = groups.len();
        let max = max.unwrap_or(n).min(n);
        groups.iter().flatten().for_each(|v| self.member_orders.record_constant(v));
        let space = self.r("space");
        // `(v | w) space`: one value in its spellings.
        let lits: Vec<[Expr; 2]> = groups
            .iter()
            .map(|g| [Frag::group(g.iter().map(|v| Frag::from(canonical_constant_lit(v))).collect()), space.clone()])
            .collect();
        // Masks in decreasing numeric order: a rule's successors (supersets) are named first.
        let mut names: std::collections::HashMap<usize, String> = std::collections::HashMap::new();
        for mask in (0..1usize << n).rev() {
            let count = mask.count_ones() as usize;
            if count > max {
                continue;
            }
            let mut alts = Vec::new();
            if count < max {
                for (g, lit) in lits.iter().enumerate() {
                    let next = mask | (1 << g);
                    if let (0, Some(to)) = (mask & (1 << g), names.get(&next)) {
                        let mut items = if mask == 0 { Vec::new() } else { vec![Expr::lit(","), space.clone()] };
                        items.extend(lit.iter().cloned());
                        items.push(self.r(to));
                        alts.push(Frag::of(items));
                    }
                }
            }
            if count >= min {
                alts.push(Frag::from(Expr::lit("")));
            }
            if alts.is_empty() {
                alts.push(Frag::new());
            }
            let actual = self.add_rule_ir(&format!("{rule_name}-u{mask}"), Frag::body(alts));
            names.insert(mask, actual);
        }
        let start = names.remove(&0).unwrap_or_default();
        let start = self.r(&start);
        let rule = Frag::of(vec![Expr::lit("["), space.clone(), start, Expr::lit("]"), space]);
        self.add_rule_ir(rule_name, rule.into_body())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::{check, compile, refused};

    #[test]
    fn tuples_are_open_ended_and_may_be_short() {
        let s = json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]});
        check(s, &["[]", r#"["a"]"#, r#"["a",1]"#, r#"["a",1,null,{}]"#], &["[1]", r#"["a","b"]"#]);
        let s = json!({"type": "array", "items": [{"type": "string"}], "additionalItems": false, "minItems": 1});
        check(s, &[r#"["a"]"#], &["[]", r#"["a","b"]"#]);
        let s = json!({"type": "array", "prefixItems": [{"const": 1}], "items": {"type": "boolean"}, "maxItems": 3});
        check(s, &["[]", "[1]", "[1,true,false]"], &["[1,1]", "[1,true,true,true]", "[true]"]);
    }

    #[test]
    fn unique_items_over_finite_sets() {
        let s = json!({"type": "array", "uniqueItems": true, "items": {"enum": ["a", "b", "c"]}});
        check(s, &["[]", r#"["a"]"#, r#"["c","a","b"]"#], &[r#"["a","a"]"#, r#"["b","c","b"]"#, r#"["d"]"#]);
        let s = json!({"type": "array", "uniqueItems": true, "items": {"type": "boolean"}, "minItems": 2});
        check(s, &["[true,false]", "[false,true]"], &["[true]", "[true,true]", "[]"]);
        // 1 and 1.0 are one value.
        let s = json!({"type": "array", "uniqueItems": true, "items": {"enum": [1, 1.0, 2]}});
        check(s, &["[1,2]", "[1.0]", "[2,1.0]"], &["[1,1.0]", "[2,2]"]);
        assert!(compile(&json!({"type": "array", "uniqueItems": true, "items": {"const": 1}, "minItems": 2})).is_err());
        refused(json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}}), "uniqueItems");
        refused(json!({"type": "array", "uniqueItems": true, "prefixItems": [{"const": 1}]}), "uniqueItems");
    }
}
