//! `dependencies` (draft 4-7), `dependentRequired` and `dependentSchemas` (2019-09+): "when
//! name K is present, these names are required too / the object also satisfies this schema".
//! The object schema is split on the presence of K into two cases with nothing in common:
//! `anyOf: [K absent (properties.K = false), K present (K required, plus the dependency)]`.
//! A dependency that cannot fire (K cannot appear) or always fires (K required) needs no split.

use serde_json::{Map, Value};

use super::converter::{err, Converter};
use super::shape::{is_annotation_only, merge_schemas};
use crate::error::SchemaError;

const KEYWORDS: [&str; 3] = ["dependencies", "dependentRequired", "dependentSchemas"];

/// At most this many dependencies that need a split (the cases double with each).
const MAX_SPLITS: usize = 5;

fn add_required(m: &mut Map<String, Value>, names: &[Value]) {
    let r = m.entry("required").or_insert_with(|| Value::Array(vec![]));
    if let Value::Array(r) = r {
        for n in names {
            if !r.contains(n) {
                r.push(n.clone());
            }
        }
    }
}

/// Whether name `k` can never appear in instances of the object schema `m`.
fn cannot_appear(m: &Map<String, Value>, k: &str) -> bool {
    match m.get("properties").and_then(|p| p.get(k)) {
        Some(v) => *v == Value::Bool(false),
        None => m.get("additionalProperties") == Some(&Value::Bool(false)) && !m.contains_key("patternProperties"),
    }
}

impl Converter<'_> {
    /// `obj` rewritten without its dependency keywords (as cases under `anyOf` where needed).
    pub(super) fn expand_dependencies(&mut self, obj: &Map<String, Value>, ptr: &str) -> Result<Value, SchemaError> {
        let mut base = obj.clone();
        let mut deps: Vec<(&str, String, Value)> = Vec::new();
        for kw in KEYWORDS {
            if let Some(d) = base.remove(kw) {
                let d = d.as_object().cloned().ok_or_else(|| err(kw, ptr, "must be an object"))?;
                deps.extend(d.into_iter().map(|(k, v)| (kw, k, v)));
            }
        }
        let mut splits = 0;
        let mut cases = vec![base];
        for (kw, k, v) in deps {
            let mut next = Vec::new();
            for mut c in cases {
                let required = c.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|x| x == &k));
                let root = self.root;
                // The case where the dependency fires (`None`: no instance can be in it).
                let fires = |c: &mut Map<String, Value>| -> Result<Option<Map<String, Value>>, SchemaError> {
                    match &v {
                        Value::Array(names) => {
                            add_required(c, names);
                            Ok(Some(c.clone()))
                        }
                        s if is_annotation_only(s) => Ok(Some(c.clone())),
                        s => match merge_schemas(root, &Value::Object(c.clone()), s) {
                            Ok(Value::Object(m)) => Ok(Some(m)),
                            Ok(_) => Ok(None),
                            Err(e) => Err(err(kw, ptr, format!("dependency of {k:?}: {e}"))),
                        },
                    }
                };
                if cannot_appear(&c, &k) {
                    next.push(c);
                } else if required {
                    next.extend(fires(&mut c)?);
                } else {
                    splits += 1;
                    let mut absent = c.clone();
                    let props = absent.entry("properties").or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(p) = props {
                        p.insert(k.clone(), Value::Bool(false));
                    }
                    let mut present = c;
                    add_required(&mut present, &[Value::String(k.clone())]);
                    next.push(absent);
                    next.extend(fires(&mut present)?);
                }
            }
            cases = next;
            if splits > MAX_SPLITS * 8 || cases.len() > 1 << MAX_SPLITS {
                self.refuse(kw, ptr, &format!("more than {MAX_SPLITS} dependencies to split on"))?;
                break;
            }
        }
        Ok(match cases.len() {
            0 => Value::Bool(false),
            1 => Value::Object(cases.pop().unwrap_or_default()),
            _ => serde_json::json!({ "anyOf": cases }),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::check;

    #[test]
    fn dependent_required_splits_on_presence() {
        let props = json!({"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}});
        for kw in ["dependencies", "dependentRequired"] {
            let s = json!({"type": "object", "properties": props, kw: {"a": ["b"]}});
            check(
                s,
                &["{}", r#"{"b":"x"}"#, r#"{"a":"x","b":"y"}"#, r#"{"c":"z","b":"y","a":"x"}"#, r#"{"d":1}"#],
                &[r#"{"a":"x"}"#, r#"{"a":"x","c":"z"}"#],
            );
        }
    }

    #[test]
    fn dependent_schema_applies_when_present() {
        let s = json!({"type": "object", "additionalProperties": false,
            "properties": {"card": {"type": "string"}, "billing": {"type": "string"}, "n": {"type": "integer"}},
            "dependentSchemas": {"card": {"required": ["billing"], "properties": {"n": {"type": "integer", "minimum": 1}}}}});
        check(
            s,
            &[r#"{"n":0}"#, r#"{"card":"c","billing":"b","n":5}"#, r#"{"billing":"b"}"#],
            &[r#"{"card":"c"}"#, r#"{"card":"c","billing":"b","n":0}"#],
        );
    }

    #[test]
    fn vacuous_dependencies() {
        // Always fires (trigger required) / never fires (trigger cannot appear).
        let s = json!({"type": "object", "required": ["a"], "properties": {"a": {}, "b": {}},
            "additionalProperties": false, "dependencies": {"a": ["b"], "z": ["a"]}});
        check(s, &[r#"{"a":1,"b":2}"#], &[r#"{"a":1}"#, r#"{"b":2}"#]);
    }

    #[test]
    fn two_dependencies() {
        let s = json!({"type": "object", "additionalProperties": false,
            "properties": {"a": {}, "b": {}, "c": {}, "d": {}},
            "dependencies": {"a": ["b"], "c": ["d"]}});
        check(
            s,
            &["{}", r#"{"a":1,"b":2}"#, r#"{"c":1,"d":2}"#, r#"{"a":1,"b":2,"c":3,"d":4}"#, r#"{"b":1,"d":2}"#],
            &[r#"{"a":1}"#, r#"{"a":1,"b":2,"c":3}"#, r#"{"c":1,"b":2}"#],
        );
    }
}
