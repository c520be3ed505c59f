//! What a schema can accept, coarsely: its possible JSON types, its values when it is an
//! enum/const, and constant-valued required properties. Used to prove `oneOf` alternatives
//! mutually exclusive (an instance must match exactly one).

use std::collections::BTreeMap;

use serde_json::Value;

const ALL: [&str; 7] = ["object", "array", "string", "number", "integer", "boolean", "null"];

/// Whether `v` is an instance of JSON Schema type `t`.
pub fn json_type_matches(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

fn resolve<'a>(root: &'a Value, mut s: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let Some(r) = s.get("$ref").and_then(Value::as_str) else { break };
        let Some(path) = r.strip_prefix("#") else { break };
        let mut cur = root;
        for tok in path.split('/').skip(1) {
            let tok = tok.replace("~1", "/").replace("~0", "~");
            match cur.get(&tok) {
                Some(n) => cur = n,
                None => return s,
            }
        }
        s = cur;
    }
    s
}

/// The JSON types a schema admits, when it says so (`type`, `const`, `enum`, through `$ref`
/// and `anyOf`/`oneOf`); `None` = could be anything.
pub fn declared_types(root: &Value, s: &Value) -> Option<Vec<String>> {
    declared_types_at(root, s, 0)
}

fn declared_types_at(root: &Value, s: &Value, depth: usize) -> Option<Vec<String>> {
    if depth > 32 {
        return None;
    }
    let s = resolve(root, s);
    let mut types: Vec<String> = match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(|t| t.as_str().map(String::from)).collect(),
        _ => {
            if let Some(c) = s.get("const") {
                ALL.iter().filter(|t| **t != "integer" && json_type_matches(c, t)).map(|t| t.to_string()).collect()
            } else if let Some(Value::Array(e)) = s.get("enum") {
                let mut v: Vec<String> = Vec::new();
                for x in e {
                    for t in ALL {
                        if t != "integer" && json_type_matches(x, t) && !v.iter().any(|y| y == t) {
                            v.push(t.to_string());
                        }
                    }
                }
                v
            } else if let Some(Value::Array(alts)) = s.get("anyOf").or_else(|| s.get("oneOf")) {
                let mut v: Vec<String> = Vec::new();
                for a in alts {
                    for t in declared_types_at(root, a, depth + 1)? {
                        if !v.contains(&t) {
                            v.push(t);
                        }
                    }
                }
                v
            } else if let Some(Value::Array(all)) = s.get("allOf") {
                let mut acc: Option<Vec<String>> = None;
                for a in all {
                    if let Some(t) = declared_types_at(root, a, depth + 1) {
                        acc = Some(match acc {
                            None => t,
                            Some(prev) => prev.into_iter().filter(|x| overlaps(x, &t)).collect(),
                        });
                    }
                }
                return acc;
            } else {
                return None;
            }
        }
    };
    types.sort();
    types.dedup();
    Some(types)
}

fn overlaps(t: &str, set: &[String]) -> bool {
    set.iter().any(|u| u == t || (u == "number" && t == "integer") || (u == "integer" && t == "number"))
}

/// Required properties with a fixed set of allowed values (discriminators).
fn discriminators(root: &Value, s: &Value) -> BTreeMap<String, Vec<Value>> {
    let s = resolve(root, s);
    let mut out = BTreeMap::new();
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = s.get("properties") {
        for r in required {
            if let Some(p) = props.get(r) {
                let p = resolve(root, p);
                if let Some(c) = p.get("const") {
                    out.insert(r.to_string(), vec![c.clone()]);
                } else if let Some(Value::Array(e)) = p.get("enum") {
                    out.insert(r.to_string(), e.clone());
                }
            }
        }
    }
    out
}

fn values(root: &Value, s: &Value) -> Option<Vec<Value>> {
    let s = resolve(root, s);
    if let Some(c) = s.get("const") {
        return Some(vec![c.clone()]);
    }
    s.get("enum").and_then(Value::as_array).cloned()
}

/// Required property names and, when closed (`additionalProperties: false`), the allowed names.
fn object_keys(root: &Value, s: &Value) -> (Vec<String>, Option<Vec<String>>) {
    let s = resolve(root, s);
    let req = s
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let closed = if s.get("additionalProperties") == Some(&Value::Bool(false)) {
        Some(s.get("properties").and_then(Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default())
    } else {
        None
    };
    (req, closed)
}

/// The JSON types the converter generates for a schema (narrower than what it admits when
/// the schema has no `type`: `properties` makes objects, `items` arrays, ...).
fn generated_types(root: &Value, s: &Value) -> Option<Vec<String>> {
    if let Some(t) = declared_types(root, s) {
        return Some(t);
    }
    let s = resolve(root, s);
    let has = |k: &str| s.get(k).is_some();
    if has("properties") || has("additionalProperties") || has("required") {
        Some(vec!["object".into()])
    } else if has("items") || has("prefixItems") {
        Some(vec!["array".into()])
    } else {
        None
    }
}

fn disjoint(root: &Value, a: &Value, b: &Value) -> bool {
    let sem_a = declared_types(root, a);
    let sem_b = declared_types(root, b);
    let gen_a = generated_types(root, a);
    let gen_b = generated_types(root, b);
    let excl = |g: &Option<Vec<String>>, s: &Option<Vec<String>>| match (g, s) {
        (Some(g), Some(s)) => !g.iter().any(|t| overlaps(t, s)),
        _ => false,
    };
    if excl(&gen_a, &sem_b) && excl(&gen_b, &sem_a) {
        return true;
    }
    if let (Some(va), Some(vb)) = (values(root, a), values(root, b)) {
        if !va.iter().any(|x| vb.contains(x)) {
            return true;
        }
    }
    if let Some(va) = values(root, a) {
        if let Some(tb) = declared_types(root, b) {
            if !va.iter().any(|x| tb.iter().any(|t| json_type_matches(x, t))) {
                return true;
            }
        }
    }
    let only_objects = |s: &Value| generated_types(root, s).is_some_and(|t| t == ["object"]);
    if !(only_objects(a) && only_objects(b)) {
        return false;
    }
    let (da, db) = (discriminators(root, a), discriminators(root, b));
    for (k, va) in &da {
        if let Some(vb) = db.get(k) {
            if !va.iter().any(|x| vb.contains(x)) {
                return true;
            }
        }
    }
    let (ra, ca) = object_keys(root, a);
    let (rb, cb) = object_keys(root, b);
    if let Some(cb) = &cb {
        if ra.iter().any(|r| !cb.contains(r)) {
            return true;
        }
    }
    if let Some(ca) = &ca {
        if rb.iter().any(|r| !ca.contains(r)) {
            return true;
        }
    }
    false
}

/// Ok if every pair of `oneOf` alternatives provably accepts no common instance.
pub fn check_one_of_disjoint(root: &Value, alts: &[Value]) -> Result<(), String> {
    for i in 0..alts.len() {
        for j in i + 1..alts.len() {
            if !disjoint(root, &alts[i], &alts[j]) {
                return Err(format!(
                    "cannot prove alternatives {i} and {j} mutually exclusive (an output could match both)"
                ));
            }
        }
    }
    Ok(())
}

fn is_annotation_only(v: &Value) -> bool {
    match v {
        Value::Bool(true) => true,
        Value::Object(m) => m.keys().all(|k| {
            super::keywords::ANNOTATIONS.contains(&k.as_str())
                || !super::keywords::SUPPORTED.contains(&k.as_str())
                    && !super::keywords::UNSUPPORTED.contains(&k.as_str())
        }),
        _ => false,
    }
}

/// The conjunction of two schemas as one schema, when it can be written exactly: disjoint
/// keywords side by side, `required` united, `properties` united (a property in both must
/// have the same schema, or one side must be unconstrained), `type` intersected.
pub fn merge_schemas(a: &Value, b: &Value) -> Result<Value, String> {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return Err("not schema objects".into());
    };
    let mut out = a.clone();
    for (k, bv) in b {
        let Some(av) = a.get(k) else {
            out.insert(k.clone(), bv.clone());
            continue;
        };
        if av == bv || super::keywords::ANNOTATIONS.contains(&k.as_str()) {
            continue;
        }
        match k.as_str() {
            "required" => {
                let mut r: Vec<Value> = av.as_array().cloned().unwrap_or_default();
                for x in bv.as_array().cloned().unwrap_or_default() {
                    if !r.contains(&x) {
                        r.push(x);
                    }
                }
                out.insert(k.clone(), Value::Array(r));
            }
            "properties" => {
                let mut p = av.as_object().cloned().unwrap_or_default();
                for (pk, pv) in bv.as_object().cloned().unwrap_or_default() {
                    match p.get(&pk) {
                        None => {
                            p.insert(pk, pv);
                        }
                        Some(x) if x == &pv || is_annotation_only(&pv) => {}
                        Some(x) if is_annotation_only(x) => {
                            p.insert(pk, pv);
                        }
                        Some(_) => return Err(format!("property {pk:?} constrained on both sides")),
                    }
                }
                out.insert(k.clone(), Value::Object(p));
            }
            "additionalProperties" if bv == &Value::Bool(true) => {}
            "additionalProperties" if av == &Value::Bool(true) => {
                out.insert(k.clone(), bv.clone());
            }
            "type" => {
                let ta: Vec<Value> = match av {
                    Value::Array(x) => x.clone(),
                    x => vec![x.clone()],
                };
                let tb: Vec<Value> = match bv {
                    Value::Array(x) => x.clone(),
                    x => vec![x.clone()],
                };
                let mut t: Vec<Value> = ta.iter().filter(|x| tb.contains(x)).cloned().collect();
                let num_int = |x: &[Value], y: &[Value]| {
                    x.contains(&Value::from("number")) && y.contains(&Value::from("integer"))
                };
                if (num_int(&ta, &tb) || num_int(&tb, &ta)) && !t.contains(&Value::from("integer")) {
                    t.push(Value::from("integer"));
                }
                match t.len() {
                    0 => return Err("types do not intersect".into()),
                    1 => out.insert(k.clone(), t.pop().unwrap()),
                    _ => out.insert(k.clone(), Value::Array(t)),
                };
            }
            _ => return Err(format!("keyword {k:?} on both sides")),
        }
    }
    // A closed object stays closed only over its own properties.
    for (closed, other) in [(a, b), (b, a)] {
        if closed.get("additionalProperties") == Some(&Value::Bool(false)) {
            let own = closed.get("properties").and_then(Value::as_object);
            if let Some(op) = other.get("properties").and_then(Value::as_object) {
                if op.keys().any(|k| !own.is_some_and(|o| o.contains_key(k))) {
                    return Err("additionalProperties: false would also close the other side's properties".into());
                }
            }
        }
    }
    Ok(Value::Object(out))
}
