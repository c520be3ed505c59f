//! `oneOf` made exact. The grammar for `oneOf` is the union of its alternatives, which equals
//! `oneOf` only when no output matches two alternatives. This module proves alternatives
//! pairwise disjoint and, where it cannot, narrows alternatives until it can: each narrowed
//! alternative is a subset of the original that provably matches no *other original*
//! alternative, so every output matches exactly one.
//!
//! The narrowings used:
//! * two identical alternatives both become `false` (an instance of one matches both);
//! * the empty array, when two or more array alternatives admit it, is valid for none of
//!   them (it matches at least two), so those alternatives get `minItems: 1` (exact);
//! * a list of strings next to an alternative accepting every string: each listed string
//!   matches both, so the list alternative becomes `false` and the other excludes the list
//!   (`not: {enum}`), exactly;
//! * an object alternative that leaves a name undeclared (and open) loses the instances
//!   carrying a name another alternative requires (`properties: {name: false}`). This is the
//!   one narrowing that may drop valid instances: those with that undeclared extra key whose
//!   value the other alternative happens to reject.

use serde_json::{Map, Value};

use super::any_of::{custom_format, total_types};
use super::automaton::Dfa;
use super::converter::as_count;
use super::formats::format_cover_regex;
use super::ir::{declared_types as ir_declared, Node, TypeSet};
use super::keywords::ANNOTATIONS;
use super::shape::{declared_types, merge_all_of, merge_schemas, resolve};

/// How deep the prover follows properties, items and nested unions.
const DEPTH: usize = 12;

/// The JSON types the converter generates for a schema: the ones it admits (a schema
/// without `type` admits every type, whatever its type-specific keywords).
fn generated_types(root: &Value, s: &Value) -> Option<Vec<String>> {
    declared_types(root, s)
}

/// The six JSON types a schema can be split into (`integer` lies within `number`).
const TYPES: [&str; 6] = ["object", "array", "string", "number", "boolean", "null"];

/// The types `s` admits, as a list (every type when it does not say).
fn admitted(root: &Value, s: &Value) -> Vec<String> {
    declared_types(root, s).unwrap_or_else(|| TYPES.iter().map(|t| t.to_string()).collect())
}

/// The types both lists admit (`number` and `integer` meet in `integer`).
fn common_types(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in a {
        for u in b {
            let m = match (t.as_str(), u.as_str()) {
                (x, y) if x == y => x,
                ("number", "integer") | ("integer", "number") => "integer",
                _ => continue,
            };
            if !out.iter().any(|o| o == m) {
                out.push(m.to_string());
            }
        }
    }
    out
}

/// `s` restricted to instances of type `t` (`None` when that cannot be written).
fn restricted(root: &Value, s: &Value, t: &str) -> Option<Value> {
    merge_schemas(root, s, &serde_json::json!({ "type": t })).ok()
}

/// Whether `s` accepts every instance of type `t` (one of [`TYPES`]): every assertion it has
/// constrains other types only.
fn total_for(root: &Value, s: &Value, t: &str) -> bool {
    TypeSet::named(t).is_some_and(|t| Node::parse(root, resolve(root, s)).total_types().contains(t))
}

/// Types that two or more alternatives accept in full: each such instance matches at least
/// two alternatives, so none is valid; every alternative is narrowed to the other types
/// (exact). Alternatives that cannot be narrowed are left as they are.
fn drop_shared_types(root: &Value, out: &mut [Value], alts: &[Value]) {
    for t in TYPES {
        if alts.iter().filter(|a| total_for(root, a, t)).count() < 2 {
            continue;
        }
        for o in out.iter_mut() {
            let keep: Vec<Value> = admitted(root, o)
                .into_iter()
                .filter(|u| u != t && !(t == "number" && u == "integer"))
                .map(Value::from)
                .collect();
            if keep.is_empty() {
                *o = Value::Bool(false);
            } else if let Ok(n) = merge_schemas(root, o, &serde_json::json!({ "type": keep })) {
                *o = n;
            }
        }
    }
}

fn only(root: &Value, s: &Value, t: &str) -> bool {
    generated_types(root, s).is_some_and(|g| g == [t])
}

fn values(root: &Value, s: &Value) -> Option<Vec<Value>> {
    let s = resolve(root, s);
    if let Some(c) = s.get("const") {
        return Some(vec![c.clone()]);
    }
    s.get("enum").and_then(Value::as_array).cloned()
}

fn required(s: &Value) -> Vec<String> {
    s.get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// The schema the value at key `k` must satisfy in instances of `s` (an object schema):
/// its property schema, else its `additionalProperties`; `None` when patterns could apply.
fn schema_at_key(s: &Value, k: &str) -> Option<Value> {
    if let Some(p) = s.get("properties").and_then(|p| p.get(k)) {
        return Some(p.clone());
    }
    if s.get("patternProperties").is_some_and(|p| p.as_object().is_none_or(|m| !m.is_empty())) {
        return None;
    }
    Some(s.get("additionalProperties").cloned().unwrap_or(Value::Bool(true)))
}

/// A schema for every item of an array (`items` as one schema, no tuple form).
fn items_schema(s: &Value) -> Option<&Value> {
    if s.get("prefixItems").is_some() {
        return None;
    }
    s.get("items").filter(|i| i.is_object() || i.is_boolean())
}

/// The alternatives of a schema's own `anyOf`/`oneOf`, each conjoined with the schema's other
/// keywords (`None` when the schema has no union or a conjunction cannot be written).
fn union_parts(root: &Value, s: &Value) -> Option<Vec<Value>> {
    let m = s.as_object()?;
    let (kw, alts) = ["anyOf", "oneOf"].iter().find_map(|k| m.get(*k).and_then(Value::as_array).map(|a| (*k, a)))?;
    let mut sib: Map<String, Value> = m.clone();
    sib.remove(kw);
    let sib = Value::Object(sib);
    alts.iter().map(|a| merge_schemas(root, &sib, a).ok()).collect()
}

/// Whether no value generated for `a` is valid for `b`, and no value generated for `b` is
/// valid for `a`. Sound but incomplete: `false` means "not proven".
pub fn disjoint(root: &Value, a: &Value, b: &Value) -> bool {
    disjoint_at(root, a, b, 0)
}

fn disjoint_at(root: &Value, a: &Value, b: &Value, depth: usize) -> bool {
    if depth > DEPTH {
        return false;
    }
    let (a, b) = (resolve(root, a), resolve(root, b));
    if *a == Value::Bool(false) || *b == Value::Bool(false) {
        return true;
    }
    // An `allOf` is decided on its merged form (the one the converter compiles).
    for (x, y) in [(a, b), (b, a)] {
        if let Some(merged) = x.as_object().filter(|m| m.contains_key("allOf")).and_then(|m| merge_all_of(root, m)) {
            return disjoint_at(root, &merged, y, depth + 1);
        }
    }
    // Types no instance of both can have (`number` split into integers and the rest, so a
    // non-integer constant is disjoint from `integer`).
    if let (Some(x), Some(y)) = (ir_declared(root, a), ir_declared(root, b)) {
        if !x.meets(y) {
            return true;
        }
    }
    // Decided type by type when either side admits several.
    let (ta, tb) = (admitted(root, a), admitted(root, b));
    let common = common_types(&ta, &tb);
    if common.is_empty() {
        return true;
    }
    if ta.len() > 1 || tb.len() > 1 {
        return common.iter().all(|t| match (restricted(root, a, t), restricted(root, b, t)) {
            (Some(x), Some(y)) if x == Value::Bool(false) || y == Value::Bool(false) => true,
            (Some(x), Some(y)) => {
                admitted(root, &x).len() == 1 && admitted(root, &y).len() == 1 && disjoint_at(root, &x, &y, depth + 1)
            }
            _ => false,
        });
    }
    let (va, vb) = (values(root, a), values(root, b));
    if let (Some(va), Some(vb)) = (&va, &vb) {
        if !va.iter().any(|x| vb.contains(x)) {
            return true;
        }
    }
    for (v, other) in [(&va, b), (&vb, a)] {
        if let (Some(v), Some(t)) = (v, ir_declared(root, other)) {
            if !v.iter().any(|x| TypeSet::of_value(x).meets(t)) {
                return true;
            }
        }
    }
    // Values the other side excludes with `not: {enum}`.
    for (v, other) in [(&va, b), (&vb, a)] {
        if let (Some(v), Some(ex)) = (v, excluded_values(other)) {
            if v.iter().all(|x| ex.contains(x)) {
                return true;
            }
        }
    }
    if numeric_only(root, a) && numeric_only(root, b) && ranges_apart(a, b) {
        return true;
    }
    if only(root, a, "string") && only(root, b, "string") {
        if let (Some(x), Some(y)) = (string_language(a), string_language(b)) {
            if x.intersect(&y).is_ok_and(|both| both.is_empty()) {
                return true;
            }
        }
    }
    if only(root, a, "object") && only(root, b, "object") {
        // A name one side requires, whose value schemas on the two sides are disjoint.
        for (x, y) in [(a, b), (b, a)] {
            for k in required(x) {
                let Some(px) = schema_at_key(x, &k) else { continue };
                let Some(py) = schema_at_key(y, &k) else { continue };
                if disjoint_at(root, &px, &py, depth + 1) {
                    return true;
                }
            }
        }
    }
    if only(root, a, "array") && only(root, b, "array") {
        // Non-empty arrays differ in their first item; the empty array must not fit both.
        if let (Some(ia), Some(ib)) = (items_schema(a), items_schema(b)) {
            let non_empty = |s: &Value| as_count(s.get("minItems")) >= 1;
            if (non_empty(a) || non_empty(b)) && disjoint_at(root, ia, ib, depth + 1) {
                return true;
            }
        }
    }
    // A schema with its own union: disjoint when every (conjoined) alternative is.
    for (x, y) in [(a, b), (b, a)] {
        if let Some(parts) = union_parts(root, x) {
            if parts.iter().all(|p| disjoint_at(root, p, y, depth + 1)) {
                return true;
            }
        }
    }
    false
}

/// Whether `s` admits numbers only (`number` and/or `integer`).
fn numeric_only(root: &Value, s: &Value) -> bool {
    generated_types(root, s).is_some_and(|g| !g.is_empty() && g.iter().all(|t| t == "number" || t == "integer"))
}

/// A bound on numbers: its value and whether it is exclusive.
type Bound = Option<(f64, bool)>;

/// The lower and upper bounds `s` puts on numbers (`minimum`/`exclusiveMinimum` and the
/// maxima; draft 4's boolean `exclusive*` included). Compared as `f64`: rounding is monotone,
/// so a strict `f64` order is the decimals' order too.
fn number_bounds(s: &Value) -> (Bound, Bound) {
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    let flag = |k: &str| s.get(k) == Some(&Value::Bool(true));
    // Of two bounds on one side, the tighter (exclusive winning a tie).
    let tighter = |x: Bound, y: Bound, lower: bool| match (x, y) {
        (Some(p), Some(q)) if p.0 == q.0 => Some((p.0, p.1 || q.1)),
        (Some(p), Some(q)) => Some(if (p.0 > q.0) == lower { p } else { q }),
        (p, q) => p.or(q),
    };
    let lo = tighter(
        num("minimum").map(|v| (v, flag("exclusiveMinimum"))),
        num("exclusiveMinimum").map(|v| (v, true)),
        true,
    );
    let hi = tighter(
        num("maximum").map(|v| (v, flag("exclusiveMaximum"))),
        num("exclusiveMaximum").map(|v| (v, true)),
        false,
    );
    (lo, hi)
}

/// Whether the numeric bounds of `a` and `b` leave no number in both.
fn ranges_apart(a: &Value, b: &Value) -> bool {
    let below = |hi: Bound, lo: Bound| match (hi, lo) {
        (Some((h, hx)), Some((l, lx))) => h < l || (h == l && (hx || lx)),
        _ => false,
    };
    let ((alo, ahi), (blo, bhi)) = (number_bounds(a), number_bounds(b));
    below(ahi, blo) || below(bhi, alo)
}

/// The strings a string schema admits, when its keywords are all ones an automaton expresses
/// here (`pattern`, `minLength`, `maxLength`, `enum`/`const`, an enforced `format` as a language
/// covering every valid string; annotations and custom formats ignored).
fn string_language(s: &Value) -> Option<Dfa> {
    let m = s.as_object()?;
    let mut lang = Dfa::any_string();
    for (k, v) in m {
        let part = match k.as_str() {
            "type" => continue,
            "pattern" => Dfa::from_pattern(v.as_str()?).ok()?,
            "minLength" => Dfa::length(usize::try_from(v.as_u64()?).ok()?, None).ok()?,
            "maxLength" => Dfa::length(0, Some(usize::try_from(v.as_u64()?).ok()?)).ok()?,
            "const" => Dfa::literals(&[v.as_str()?]),
            "enum" => {
                let words: Vec<&str> = v.as_array()?.iter().filter_map(Value::as_str).collect();
                Dfa::literals(&words)
            }
            "format" if v.as_str().is_some_and(custom_format) => continue,
            "format" => Dfa::from_pattern(&format_cover_regex(v.as_str()?)?).ok()?,
            k if ANNOTATIONS.contains(&k) => continue,
            _ => return None,
        };
        lang = lang.intersect(&part).ok()?;
    }
    Some(lang)
}

/// The values a schema rules out with `not: {enum: [...]}` / `not: {const: ...}`.
fn excluded_values(s: &Value) -> Option<Vec<Value>> {
    let n = s.get("not")?;
    if let Some(c) = n.get("const") {
        return Some(vec![c.clone()]);
    }
    n.get("enum").and_then(Value::as_array).cloned()
}

/// For a pair where one alternative is a list of strings and the other accepts every string:
/// each listed string matches both, so is valid for neither. The list alternative becomes
/// `false` and the other excludes the strings (`not: {enum}`); exact.
fn narrow_values(root: &Value, out: &mut [Value], alts: &[Value], i: usize, j: usize) -> bool {
    for (list, total) in [(i, j), (j, i)] {
        let Some(vals) = values(root, &alts[list]) else { continue };
        if !vals.iter().all(Value::is_string) || total_types(root, &alts[total]).is_none_or(|t| t != ["string"]) {
            continue;
        }
        let Some(mut m) = editable(root, &out[total]) else { continue };
        let mut ex = excluded_values(&Value::Object(m.clone())).unwrap_or_default();
        for v in vals {
            if !ex.contains(&v) {
                ex.push(v);
            }
        }
        m.insert("not".into(), serde_json::json!({ "enum": ex }));
        out[total] = Value::Object(m);
        out[list] = Value::Bool(false);
        return true;
    }
    false
}

/// Whether `s` is an array schema that admits the empty array (plain `type: array`, no
/// value lists, unions or tuple forms).
fn admits_empty_array(root: &Value, s: &Value) -> bool {
    let s = resolve(root, s);
    let Some(m) = s.as_object() else { return false };
    m.get("type") == Some(&Value::from("array"))
        && as_count(m.get("minItems")) == 0
        && !["enum", "const", "anyOf", "oneOf", "allOf", "not", "contains", "prefixItems", "$ref"]
            .iter()
            .any(|k| m.contains_key(*k))
        && !m.get("items").is_some_and(Value::is_array)
}

/// `s` as an editable object schema (resolving a `$ref` that has no assertion siblings).
fn editable(root: &Value, s: &Value) -> Option<Map<String, Value>> {
    let m = s.as_object()?;
    if m.contains_key("$ref") {
        let only_ref = m.keys().all(|k| k == "$ref" || super::keywords::ANNOTATIONS.contains(&k.as_str()));
        if !only_ref {
            return None;
        }
        return resolve(root, s).as_object().filter(|t| !t.contains_key("$ref")).cloned();
    }
    Some(m.clone())
}

/// Whether two schemas differ in nothing but `required`.
fn differ_only_in_required(root: &Value, a: &Value, b: &Value) -> bool {
    let strip = |s: &Value| {
        let mut m = resolve(root, s).as_object().cloned().unwrap_or_default();
        m.remove("required");
        m.retain(|k, _| !super::keywords::ANNOTATIONS.contains(&k.as_str()));
        m
    };
    strip(a) == strip(b)
}

/// `x` narrowed to instances without some name `y` requires and `x` does not: preferably a
/// name `x` does not declare (only stray extra keys are lost); a declared one when the two
/// alternatives differ only in `required` (then an `x` instance with that name matches `y`
/// once it has `y`'s other required names: exact when that is the only one).
fn forbid_required_of(root: &Value, x: &Value, x_orig: &Value, y: &Value) -> Option<Value> {
    if !only(root, x, "object") {
        return None;
    }
    // Only `y`'s objects can meet `x`'s.
    let y_objects;
    let y = if only(root, y, "object") {
        y
    } else {
        y_objects = restricted(root, y, "object")?;
        &y_objects
    };
    let mut m = editable(root, x)?;
    let declared = |k: &str| m.get("properties").is_some_and(|p| p.get(k).is_some_and(|v| *v != Value::Bool(false)));
    let req_x = required(&Value::Object(m.clone()));
    let candidates: Vec<String> = required(resolve(root, y)).into_iter().filter(|k| !req_x.contains(k)).collect();
    let open = m.get("additionalProperties") != Some(&Value::Bool(false));
    let k = match candidates.iter().find(|k| !declared(k) && open) {
        Some(k) => k.clone(),
        None if differ_only_in_required(root, x_orig, y) => candidates.iter().find(|k| declared(k))?.clone(),
        None => return None,
    };
    let props = m.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    props.as_object_mut()?.insert(k, Value::Bool(false));
    Some(Value::Object(m))
}

/// The `oneOf` alternatives, narrowed where needed so that no output of one matches another
/// original alternative; `Err` names a pair that could not be separated.
pub fn make_exclusive(root: &Value, alts: &[Value]) -> Result<Vec<Value>, String> {
    let mut out = alts.to_vec();
    let empties: Vec<usize> = (0..alts.len()).filter(|&i| admits_empty_array(root, &alts[i])).collect();
    if empties.len() >= 2 {
        for &i in &empties {
            let Some(mut m) = editable(root, &alts[i]) else { continue };
            m.insert("minItems".into(), Value::from(1));
            out[i] = Value::Object(m);
        }
    }
    drop_shared_types(root, &mut out, alts);
    // Identical alternatives: whatever matches one matches the other, so neither contributes.
    for i in 0..alts.len() {
        for j in i + 1..alts.len() {
            if resolve(root, &alts[i]) == resolve(root, &alts[j]) {
                out[i] = Value::Bool(false);
                out[j] = Value::Bool(false);
            }
        }
    }
    for i in 0..alts.len() {
        for j in 0..alts.len() {
            if i == j || disjoint(root, &out[i], &alts[j]) {
                continue;
            }
            if let Some(narrow) = forbid_required_of(root, &out[i], &alts[i], &alts[j]) {
                if disjoint(root, &narrow, &alts[j]) {
                    out[i] = narrow;
                    continue;
                }
            }
            if narrow_values(root, &mut out, alts, i, j) && disjoint(root, &out[i], &alts[j]) {
                continue;
            }
            let (a, b) = (i.min(j), i.max(j));
            return Err(format!(
                "cannot prove alternatives {a} and {b} mutually exclusive (an output could match both)"
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::check;

    #[test]
    fn open_objects_lose_the_other_alternatives_required_name() {
        let s = json!({"oneOf": [
            {"type": "object", "required": ["request"], "properties": {"request": {"type": "string"}, "name": {"type": "string"}}},
            {"type": "object", "required": ["item"], "properties": {"item": {"type": "array"}, "name": {"type": "string"}}}
        ]});
        check(
            s,
            &[r#"{"request":"r"}"#, r#"{"item":[],"name":"n"}"#, r#"{"request":"r","extra":1}"#],
            // Both alternatives match the first: invalid. The second is valid (only the first
            // alternative matches) but lost to the narrowing.
            &[r#"{"request":"r","item":[]}"#, r#"{"request":"r","item":1}"#, r#"{"name":"n"}"#],
        );
    }

    #[test]
    fn non_integer_values_are_disjoint_from_integers() {
        // 1.5 and 2.25 are numbers but not integers: no instance matches both alternatives.
        let s = json!({"oneOf": [{"enum": [1.5, 2.25, "a"]}, {"type": "integer"}]});
        assert!(super::disjoint(&s, &s["oneOf"][0], &s["oneOf"][1]));
        check(s, &["1.5", "2.25", r#""a""#, "3", "-7"], &["1.25", r#""b""#, "null"]);
        // An integral constant is an integer: not provably disjoint this way.
        let s = json!({"oneOf": [{"const": 2}, {"type": "integer"}]});
        assert!(!super::disjoint(&s, &s["oneOf"][0], &s["oneOf"][1]));
    }

    #[test]
    fn identical_alternatives_match_nothing() {
        let a = json!({"type": "object", "properties": {"t": {"type": "string"}}});
        assert!(crate::json_schema::test_util::compile(&json!({"oneOf": [a.clone(), a.clone()]})).is_err());
        let s = json!({"oneOf": [a.clone(), {"type": "integer"}, a]});
        check(s, &["1"], &["{}", r#"{"t":"x"}"#]);
    }

    #[test]
    fn arrays_with_disjoint_items_share_only_the_empty_array() {
        let s = json!({"oneOf": [
            {"type": "array", "items": {"type": "number"}},
            {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}
        ]});
        check(s, &["[1,2.5]", r#"["a"]"#, r#"["b","a"]"#], &["[]", r#"[1,"a"]"#, r#"["a","b","a"]"#, r#"["c"]"#]);
        // With one alternative admitting the empty array, it stays valid.
        let s = json!({"oneOf": [
            {"type": "array", "items": {"type": "number"}},
            {"type": "array", "items": {"type": "string"}, "minItems": 1}
        ]});
        check(s, &["[]", "[1]", r#"["x"]"#], &[r#"[1,"x"]"#]);
    }

    #[test]
    fn disjoint_by_a_required_property_value() {
        let s = json!({"oneOf": [
            {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "a"}}},
            {"type": "object", "additionalProperties": {"type": "boolean"}}
        ]});
        check(s, &[r#"{"kind":"a","x":1}"#, r#"{"kind":true}"#, r#"{"x":false}"#], &[r#"{"kind":"b"}"#, r#"{"x":1}"#]);
    }

    #[test]
    fn nested_union_alternatives() {
        let repo = json!({"type": "object", "oneOf": [
            {"required": ["type", "url"], "properties": {"type": {"const": "git"}, "url": {"type": "string"}}},
            {"required": ["type", "url"], "properties": {"type": {"const": "svn"}, "url": {"type": "string"}}}
        ]});
        let s = json!({"oneOf": [repo, {"type": "object", "additionalProperties": {"const": false},
            "minProperties": 1, "maxProperties": 1}]});
        check(
            s,
            &[r#"{"type":"git","url":"u"}"#, r#"{"packagist":false}"#],
            &[r#"{"type":"hg","url":"u"}"#, r#"{"packagist":true}"#, "{}"],
        );
    }

    #[test]
    fn closed_alternatives_with_sibling_properties() {
        let s = json!({"type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "string"}},
        "oneOf": [
            {"additionalProperties": false, "properties": {"a": {}, "c": {}}, "required": ["a"]},
            {"additionalProperties": false, "properties": {"b": {}}, "required": ["b"]}
        ]});
        check(
            s,
            &[r#"{"a":"x"}"#, r#"{"a":"x","c":"y"}"#, r#"{"b":1}"#],
            &[r#"{"a":1}"#, r#"{"a":"x","b":1}"#, r#"{"b":1,"c":"y"}"#, r#"{"d":1}"#],
        );
    }
}

#[cfg(test)]
mod value_tests {
    use serde_json::json;

    use crate::json_schema::test_util::check;

    #[test]
    fn named_values_next_to_any_string() {
        // "circle" matches both alternatives, so it is not valid; other strings are.
        for alts in [
            json!([{"type": "string", "enum": ["circle", "square"]}, {"type": "string"}]),
            json!([{"type": "string"}, {"enum": ["circle", "square"]}]),
        ] {
            let s = json!({"oneOf": alts});
            check(s, &[r#""cross""#, r#""circles""#, r#""""#], &[r#""circle""#, r#""square""#, "1"]);
        }
    }
}
