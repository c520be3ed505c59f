//! Object key spaces for `patternProperties` and `propertyNames`: which schema the value of
//! each possible key must satisfy. Named properties keep their own schema, conjoined with
//! every pattern their name matches (or `false` when `propertyNames` rejects the name). The
//! other names are split by the set of patterns they match: each class is a string language
//! (an automaton) whose values must satisfy all those patterns' schemas, or
//! `additionalProperties` when they match none. Every class is disjoint from the others and
//! from the named properties, so the grammar assigns each key exactly its schema.

use serde_json::{Map, Value};

use super::automaton::Dfa;
use super::converter::{err, Converter};
use super::shape::{is_annotation_only, merge_schemas};
use crate::error::SchemaError;

/// At most this many patterns per object (the classes are all their combinations).
const MAX_PATTERNS: usize = 6;

/// A class of non-named keys: its names and the schema their values must satisfy.
pub(super) struct KeyClass {
    pub names: Dfa,
    pub schema: Value,
    /// Where the schema comes from (`patternProperties` or `additionalProperties`), for errors.
    pub source: &'static str,
}

/// The key space of one object schema.
pub(super) struct KeySpace {
    /// Named properties with their effective value schemas, in declaration order.
    pub props: Vec<(String, Value)>,
    /// The other names that may appear, by class.
    pub classes: Vec<KeyClass>,
}

impl Converter<'_> {
    /// The conjunction of two value schemas, exactly, or a reason why not.
    fn conjoin(&self, a: &Value, b: &Value) -> Result<Value, String> {
        match (a, b) {
            (Value::Bool(false), _) | (_, Value::Bool(false)) => return Ok(Value::Bool(false)),
            (x, y) if is_annotation_only(y) || x == y => return Ok(x.clone()),
            (x, y) if is_annotation_only(x) => return Ok(y.clone()),
            _ => {}
        }
        merge_schemas(self.root, a, b)
    }
}

impl Converter<'_> {
    /// Whether `name` matches one of the object schema's `patternProperties` patterns.
    pub(super) fn matches_pattern_property(
        &self,
        obj: &Map<String, Value>,
        name: &str,
        ptr: &str,
    ) -> Result<bool, SchemaError> {
        let Some(p) = obj.get("patternProperties") else { return Ok(false) };
        let p = p.as_object().ok_or_else(|| err("patternProperties", ptr, "must be an object"))?;
        for re in p.keys() {
            let d = Dfa::from_pattern(re).map_err(|e| err("patternProperties", ptr, format!("{re:?}: {e}")))?;
            if d.accepts(name) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The key space of an object schema with `patternProperties` or `propertyNames`
    /// (`None` when it has neither: the plain named/additional split applies). `addl` is the
    /// effective `additionalProperties` (`None` = any value).
    pub(super) fn key_space(
        &mut self,
        obj: &Map<String, Value>,
        props: &[(String, std::borrow::Cow<Value>)],
        addl: Option<&Value>,
        ptr: &str,
    ) -> Result<Option<KeySpace>, SchemaError> {
        let pats = obj.get("patternProperties");
        let pn = obj.get("propertyNames");
        if pats.is_none() && pn.is_none() {
            return Ok(None);
        }
        let names_ok = match pn {
            Some(pn) => self.string_language(pn, ptr, "propertyNames")?,
            None => None,
        };
        let mut patterns: Vec<(Dfa, Value)> = Vec::new();
        if let Some(p) = pats {
            let p = p.as_object().ok_or_else(|| err("patternProperties", ptr, "must be an object"))?;
            if p.len() > MAX_PATTERNS {
                return Err(err("patternProperties", ptr, format!("more than {MAX_PATTERNS} patterns")));
            }
            for (re, schema) in p {
                let d = Dfa::from_pattern(re).map_err(|e| err("patternProperties", ptr, format!("{re:?}: {e}")))?;
                patterns.push((d, schema.clone()));
            }
        }
        let mut named = Vec::new();
        for (k, s) in props {
            let mut v = s.clone().into_owned();
            if names_ok.as_ref().is_some_and(|d| !d.accepts(k)) {
                v = Value::Bool(false);
            }
            for (d, ps) in &patterns {
                if d.accepts(k) {
                    v = self.conjoin(&v, ps).map_err(|e| {
                        err("patternProperties", ptr, format!("property {k:?} also matches a pattern: {e}"))
                    })?;
                }
            }
            named.push((k.clone(), v));
        }
        let fail = |e: String| err("patternProperties", ptr, e);
        let listed: Vec<&str> = props.iter().map(|(k, _)| k.as_str()).collect();
        let mut rest = Dfa::any_string().minus(&Dfa::literals(&listed)).map_err(fail)?;
        if let Some(d) = &names_ok {
            rest = rest.intersect(d).map_err(fail)?;
        }
        // Split the other names by the patterns they match.
        let mut classes: Vec<(Dfa, Vec<usize>)> = vec![(rest, vec![])];
        for (i, (d, _)) in patterns.iter().enumerate() {
            let mut next = Vec::new();
            for (lang, set) in classes {
                let inside = lang.intersect(d).map_err(fail)?;
                let outside = lang.minus(d).map_err(fail)?;
                if !inside.is_empty() {
                    let mut s = set.clone();
                    s.push(i);
                    next.push((inside, s));
                }
                if !outside.is_empty() {
                    next.push((outside, set));
                }
            }
            classes = next;
        }
        let mut out = Vec::new();
        for (names, set) in classes {
            let schema = if set.is_empty() {
                addl.cloned().unwrap_or(Value::Bool(true))
            } else {
                let mut v = Value::Bool(true);
                for &i in &set {
                    v = self.conjoin(&v, &patterns[i].1).map_err(|e| {
                        err("patternProperties", ptr, format!("a name can match several patterns: {e}"))
                    })?;
                }
                v
            };
            if schema != Value::Bool(false) {
                let source = if set.is_empty() { "additionalProperties" } else { "patternProperties" };
                out.push(KeyClass { names, schema, source });
            }
        }
        Ok(Some(KeySpace { props: named, classes: out }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::{check, refused};

    #[test]
    fn pattern_properties_open_object() {
        let s = json!({"type": "object", "patternProperties": {"^[a-z_]+$": {"type": "integer"}}});
        check(
            s,
            &[r#"{"ab_c":1}"#, r#"{"Ab":"s"}"#, r#"{"":[]}"#, r#"{"a1":"x","b":2}"#],
            &[r#"{"ab":"s"}"#, r#"{"x":1,"y":"z"}"#],
        );
    }

    #[test]
    fn pattern_properties_closed_with_length() {
        let s = json!({"type": "object", "additionalProperties": false,
            "patternProperties": {"^[0-9a-zA-Z_-]{1,3}$": {"type": "string", "minLength": 1}}});
        check(s, &[r#"{"a-1":"v"}"#, "{}"], &[r#"{"abcd":"v"}"#, r#"{"":"v"}"#, r#"{"a":""}"#, r#"{"a.b":"v"}"#]);
    }

    #[test]
    fn named_property_matching_a_pattern_takes_both_schemas() {
        let s = json!({"type": "object",
            "properties": {"x-id": {"type": "string", "maxLength": 2}},
            "patternProperties": {"^x-": {"type": "string"}},
            "additionalProperties": {"type": "boolean"}});
        check(
            s,
            &[r#"{"x-id":"ab"}"#, r#"{"x-y":"long string"}"#, r#"{"z":true}"#],
            &[r#"{"x-id":"abc"}"#, r#"{"x-y":true}"#, r#"{"z":"s"}"#],
        );
    }

    #[test]
    fn overlapping_patterns_conjoin() {
        let s = json!({"type": "object", "additionalProperties": false, "patternProperties": {
            "^a": {"type": "string"},
            "b$": {"type": "string", "maxLength": 2}}});
        check(
            s,
            &[r#"{"ab":"12"}"#, r#"{"ax":"123"}"#, r#"{"xb":"12"}"#],
            &[r#"{"ab":"123"}"#, r#"{"xb":"123"}"#, r#"{"zz":"1"}"#, r#"{"ab":1}"#],
        );
    }

    #[test]
    fn escaped_characters_in_names() {
        let s = json!({"type": "object", "additionalProperties": false,
            "patternProperties": {"^\"": {"type": "integer"}, "\\\\$": {"type": "string"}}});
        check(
            s,
            &[r#"{"\"q":1}"#, r#"{"a\\":"s"}"#, r#"{"\n\\":"s"}"#],
            &[r#"{"\"q":"s"}"#, r#"{"q":1}"#, r#"{"\"\\":1}"#],
        );
    }

    #[test]
    fn property_names_exclusions() {
        let s = json!({"type": "object", "properties": {"x": {"type": "integer"}, "$schema": {"type": "string"}},
            "additionalProperties": {"type": "integer"},
            "propertyNames": {"not": {"enum": ["x", "y"]}}});
        check(
            s,
            &[r#"{"z":1}"#, r#"{"xy":1}"#, r#"{"$schema":"s","y1":2}"#],
            &[r#"{"x":1}"#, r#"{"y":1}"#, r#"{"z":"s"}"#],
        );
    }

    #[test]
    fn property_names_pattern_and_length() {
        let s = json!({"type": "object", "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3}});
        check(s, &[r#"{"abc":1}"#, "{}"], &[r#"{"abcd":1}"#, r#"{"A":1}"#, r#"{"":1}"#]);
        let s = json!({"type": "object", "propertyNames": {"enum": ["a", "b"]}, "additionalProperties": {"type": "integer"}});
        check(s, &[r#"{"a":1,"b":2}"#], &[r#"{"c":1}"#, r#"{"a":"s"}"#]);
        // An enforced format is one more language for the names; one without a rule is refused.
        let s = json!({"type": "object", "propertyNames": {"format": "ipv4"}});
        check(s, &[r#"{"1.2.3.4":1}"#, "{}"], &[r#"{"1.2.3":1}"#, r#"{"a":1}"#]);
        refused(json!({"type": "object", "propertyNames": {"format": "hostname"}}), "propertyNames");
    }

    #[test]
    fn required_name_outside_properties_takes_additional_properties() {
        let s = json!({"type": "object", "required": ["id"], "additionalProperties": {"type": "integer"}});
        check(s, &[r#"{"id":1}"#, r#"{"id":1,"n":2}"#], &["{}", r#"{"id":"s"}"#]);
    }
}
