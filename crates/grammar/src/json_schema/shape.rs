//! What a schema can accept, coarsely (its possible JSON types, through `$ref` and unions),
//! and the exact conjunction of two schemas when it can be written as one schema.

use serde_json::Value;

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

pub fn resolve<'a>(root: &'a Value, mut s: &'a Value) -> &'a Value {
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

/// `s`, or the target of its `$ref` when the `$ref` has no sibling assertions (followed
/// through chains).
pub fn deref_plain<'a>(root: &'a Value, mut s: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let plain = s.as_object().is_some_and(|m| {
            m.contains_key("$ref")
                && m.keys().all(|k| k == "$ref" || super::keywords::ANNOTATIONS.contains(&k.as_str()))
        });
        if !plain {
            break;
        }
        let t = resolve(root, s);
        if std::ptr::eq(t, s) {
            break;
        }
        s = t;
    }
    s
}

/// The JSON types a schema admits, when it says so (`type`, `const`, `enum`, through `$ref`
/// and `anyOf`/`oneOf`, `allOf`); `None` = could be anything. Read off the typed view
/// ([`super::ir::declared_types`]).
pub fn declared_types(root: &Value, s: &Value) -> Option<Vec<String>> {
    super::ir::declared_types(root, s).map(|t| t.covering_names().into_iter().map(String::from).collect())
}

pub fn overlaps(t: &str, set: &[String]) -> bool {
    set.iter().any(|u| u == t || (u == "number" && t == "integer") || (u == "integer" && t == "number"))
}

pub fn is_annotation_only(v: &Value) -> bool {
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
/// keywords side by side, `required` united, `properties` united (a property on both sides
/// takes the conjunction of its two schemas), `type` intersected (`false` when the types
/// have nothing in common). A `$ref` without sibling assertions is followed; one with siblings is refused.
pub fn merge_schemas(root: &Value, a: &Value, b: &Value) -> Result<Value, String> {
    let (a, b) = match (deref_plain(root, a), deref_plain(root, b)) {
        (Value::Bool(false), _) | (_, Value::Bool(false)) => return Ok(Value::Bool(false)),
        (Value::Bool(true), x) | (x, Value::Bool(true)) => return Ok(x.clone()),
        (Value::Object(a), Value::Object(b)) => (a, b),
        _ => return Err("not schema objects".into()),
    };
    if a != b && (a.contains_key("$ref") || b.contains_key("$ref")) {
        return Err("a $ref cannot be combined with other keywords".into());
    }
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
                        Some(x) => {
                            let m = merge_schemas(root, x, &pv).map_err(|e| format!("property {pk:?}: {e}"))?;
                            p.insert(pk, m);
                        }
                    }
                }
                out.insert(k.clone(), Value::Object(p));
            }
            "enum" => {
                let common: Vec<Value> = av
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|x| bv.as_array().is_some_and(|b| b.contains(x)))
                    .cloned()
                    .collect();
                if common.is_empty() {
                    return Ok(Value::Bool(false)); // no value is in both lists
                }
                out.insert(k.clone(), Value::Array(common));
            }
            "const" => return Ok(Value::Bool(false)), // two different constants
            "maxLength" | "maxItems" | "maxProperties" | "minLength" | "minItems" | "minProperties"
                if av.is_u64() && bv.is_u64() =>
            {
                let (x, y) = (av.as_u64().unwrap_or(0), bv.as_u64().unwrap_or(0));
                out.insert(k.clone(), Value::from(if k.starts_with("max") { x.min(y) } else { x.max(y) }));
            }
            "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum"
                if av.is_number()
                    && bv.is_number()
                    && ![a, b].iter().any(|m| {
                        m.get("exclusiveMaximum").is_some_and(Value::is_boolean)
                            || m.get("exclusiveMinimum").is_some_and(Value::is_boolean)
                    }) =>
            {
                // The tighter bound (numeric forms only: draft-4 booleans modify their sibling).
                let (x, y) = (av.as_f64().unwrap_or(0.0), bv.as_f64().unwrap_or(0.0));
                let tighter = if k.contains("aximum") { x <= y } else { x >= y };
                out.insert(k.clone(), if tighter { av.clone() } else { bv.clone() });
            }
            "items" if av.is_object() && bv.is_object() => {
                out.insert(k.clone(), merge_schemas(root, av, bv).map_err(|e| format!("items: {e}"))?);
            }
            "additionalProperties" if is_annotation_only(bv) => {}
            "additionalProperties" if is_annotation_only(av) => {
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
                    0 => return Ok(Value::Bool(false)), // no instance has both types
                    1 => out.insert(k.clone(), t.pop().unwrap()),
                    _ => out.insert(k.clone(), Value::Array(t)),
                };
            }
            _ => return Err(format!("keyword {k:?} on both sides")),
        }
    }
    // `additionalProperties` constrains the names its own side does not declare: in the
    // conjunction, the other side's further properties take it too (`false`: they cannot
    // appear, nor can the other side's further required names).
    for (closed, other) in [(a, b), (b, a)] {
        let Some(extra) = closed.get("additionalProperties").filter(|s| !is_annotation_only(s)) else {
            continue;
        };
        if closed.contains_key("patternProperties") || other.contains_key("patternProperties") {
            return Err("additionalProperties next to patternProperties on the other side".into());
        }
        let own = closed.get("properties").and_then(Value::as_object);
        let mut names: Vec<String> =
            other.get("properties").and_then(Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default();
        if *extra == Value::Bool(false) {
            names.extend(
                other
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str())
                    .map(String::from),
            );
        }
        names.retain(|k| !own.is_some_and(|o| o.contains_key(k)));
        if names.is_empty() {
            continue;
        }
        let props = out.entry("properties").or_insert_with(|| Value::Object(serde_json::Map::new()));
        let Value::Object(props) = props else {
            return Err("properties must be an object".into());
        };
        for k in names {
            let cur = props.get(&k).cloned().unwrap_or(Value::Bool(true));
            let m = merge_schemas(root, &cur, extra).map_err(|e| format!("property {k:?}: {e}"))?;
            props.insert(k, m);
        }
    }
    // `items` next to a tuple covers only the items after it: one side's `items` cannot be
    // re-read after the other side's tuple.
    for (x, y) in [(a, b), (b, a)] {
        let tuple = |m: &serde_json::Map<String, Value>| {
            m.get("prefixItems").cloned().or_else(|| m.get("items").filter(|i| i.is_array()).cloned())
        };
        if tuple(x).is_some() && y.contains_key("items") && tuple(x) != tuple(y) {
            return Err("items of one side next to a tuple of the other".into());
        }
    }
    // Keywords read relative to their own side's `items`.
    for x in [a, b] {
        if (x.contains_key("additionalItems") || x.contains_key("prefixItems")) && x.get("items") != out.get("items") {
            return Err("additionalItems/prefixItems depend on the items of their own side".into());
        }
    }
    Ok(Value::Object(out))
}

/// `obj` with its `allOf` components merged in, when every merge is exact (and leaves no
/// `allOf`).
pub fn merge_all_of(root: &Value, obj: &serde_json::Map<String, Value>) -> Option<Value> {
    let comps = obj.get("allOf")?.as_array()?;
    let mut acc = obj.clone();
    acc.remove("allOf");
    let mut acc = Value::Object(acc);
    for c in comps {
        acc = merge_schemas(root, &acc, c).ok()?;
    }
    // A component bringing its own `allOf` (say, through a `$ref` back to this schema) is not
    // merged further here.
    acc.get("allOf").is_none().then_some(acc)
}
