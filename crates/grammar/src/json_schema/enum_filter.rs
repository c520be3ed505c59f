//! `enum`/`const` next to other assertions: the listed values are checked against the
//! sibling keywords one by one, and only those that pass are emitted (exact). A `format` the
//! grammar enforces is checked by that format's own grammar ([`format_accepts`]), so a
//! constant passes exactly when the format rule would have let it through. A keyword that
//! cannot be checked here (another standard `format`, `multipleOf`, subschemas, ...) is
//! reported so the converter refuses it.

use serde_json::{Map, Value};

use super::any_of::custom_format;
use super::automaton::Dfa;
use super::keywords::applies_to;
use super::shape::json_type_matches;

/// Whether each of `values` satisfies `format` (one of `ENFORCED_FORMATS`), judged by the
/// grammar the strict converter writes for a string of that format; values that are not
/// strings satisfy it (formats constrain only strings).
pub(super) fn format_accepts(format: &str, values: &[Value]) -> Result<Vec<bool>, String> {
    let schema = serde_json::json!({"type": "string", "format": format});
    let grammar = super::schema_to_grammar(&schema, &super::SchemaOptions::default()).map_err(|e| e.to_string())?;
    let m = crate::Matcher::new(grammar);
    Ok(values
        .iter()
        .map(|v| match v.as_str() {
            Some(s) => {
                let mut m = m.clone();
                m.accept_bytes(super::relayout::json_string(s).as_bytes()).is_ok() && m.can_end()
            }
            None => true,
        })
        .collect())
}

/// A canonical text for uniqueness checks (numbers compared by value).
pub(super) fn canonical(v: &Value) -> String {
    match v {
        Value::Number(n) => n.as_f64().map(|f| f.to_string()).unwrap_or_default(),
        Value::Array(a) => format!("[{}]", a.iter().map(canonical).collect::<Vec<_>>().join(",")),
        Value::Object(m) => {
            let mut kv: Vec<String> = m.iter().map(|(k, x)| format!("{k:?}:{}", canonical(x))).collect();
            kv.sort();
            format!("{{{}}}", kv.join(","))
        }
        x => x.to_string(),
    }
}

/// Whether value `v` satisfies keyword `k` of schema `obj`; `None` = cannot tell here.
pub(super) fn satisfies(obj: &Map<String, Value>, k: &str, v: &Value) -> Option<bool> {
    let kv = &obj[k];
    if let Some(t) = applies_to(k) {
        if !json_type_matches(v, t) {
            return Some(true); // the keyword does not constrain this type
        }
    }
    let count = || kv.as_u64();
    let num = || kv.as_f64();
    Some(match k {
        "minLength" => v.as_str()?.chars().count() as u64 >= count()?,
        "maxLength" => v.as_str()?.chars().count() as u64 <= count()?,
        "pattern" => Dfa::from_pattern(kv.as_str()?).ok()?.accepts(v.as_str()?),
        "minItems" => v.as_array()?.len() as u64 >= count()?,
        "maxItems" => v.as_array()?.len() as u64 <= count()?,
        "minProperties" => v.as_object()?.len() as u64 >= count()?,
        "maxProperties" => v.as_object()?.len() as u64 <= count()?,
        "uniqueItems" => {
            let a = v.as_array()?;
            let mut seen: Vec<String> = a.iter().map(canonical).collect();
            seen.sort();
            seen.dedup();
            *kv != Value::Bool(true) || seen.len() == a.len()
        }
        "required" => {
            let m = v.as_object()?;
            kv.as_array()?.iter().all(|r| r.as_str().is_some_and(|r| m.contains_key(r)))
        }
        "minimum" | "maximum" => {
            let x = v.as_f64()?;
            let excl = obj.get(if k == "minimum" { "exclusiveMinimum" } else { "exclusiveMaximum" });
            let strict = excl == Some(&Value::Bool(true));
            match (k, strict) {
                ("minimum", false) => x >= num()?,
                ("minimum", true) => x > num()?,
                (_, false) => x <= num()?,
                (_, true) => x < num()?,
            }
        }
        "exclusiveMinimum" | "exclusiveMaximum" if kv.is_boolean() => true, // read with its sibling
        "exclusiveMinimum" => v.as_f64()? > num()?,
        "exclusiveMaximum" => v.as_f64()? < num()?,
        "format" if kv.as_str().is_some_and(custom_format) => true,
        "additionalProperties" if *kv == Value::Bool(true) => true,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::{check, refused};

    #[test]
    fn enum_values_filtered_by_siblings() {
        let s = json!({"enum": ["x", "yy", "zzz", 1, 7], "maxLength": 2, "maximum": 5});
        check(s, &[r#""x""#, r#""yy""#, "1"], &[r#""zzz""#, "7"]);
        let s = json!({"type": "string", "enum": ["a1", "b", "c2"], "pattern": "\\d$"});
        check(s, &[r#""a1""#, r#""c2""#], &[r#""b""#]);
        let s = json!({"enum": [[1, 1], [1, 2], [1.0, 1.0]], "uniqueItems": true});
        check(s, &["[1,2]"], &["[1,1]", "[1.0,1.0]"]);
        assert!(crate::json_schema::test_util::compile(&json!({"enum": ["a"], "minLength": 2})).is_err());
    }

    #[test]
    fn unchecked_siblings_are_refused() {
        // A standard format the grammar does not enforce cannot check a constant either.
        refused(json!({"enum": ["a.b", "x"], "format": "hostname"}), "format");
        refused(json!({"enum": [1, 2], "multipleOf": 2}), "multipleOf");
    }
}

#[cfg(test)]
mod const_tests {
    use serde_json::json;

    use crate::json_schema::test_util::{check, compile};

    #[test]
    fn const_and_enum_intersect() {
        check(json!({"const": "a", "enum": ["a", "b"]}), &[r#""a""#], &[r#""b""#]);
        assert!(compile(&json!({"const": "c", "enum": ["a", "b"]})).is_err());
        assert!(compile(&json!({"allOf": [{"enum": ["a", "b"]}, {"const": "c"}]})).is_err());
    }
}
