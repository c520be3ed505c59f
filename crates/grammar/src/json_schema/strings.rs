//! String languages as automata: the strings a schema accepts, when its keywords are ones an
//! automaton expresses exactly (`enum`/`const`, `pattern`, `minLength`/`maxLength`, `not` of
//! those, the enforced formats). Used for `propertyNames`, and for string schemas whose
//! keywords a single translation cannot combine (`pattern` or a format with a length, a
//! format with a `pattern`, or `not`).

use serde_json::Value;

use super::any_of::custom_format;
use super::automaton::Dfa;
use super::converter::{as_count, err, Converter};
use super::formats::format_regex;
use super::keywords::{ANNOTATIONS, SUPPORTED, UNSUPPORTED};
use crate::error::SchemaError;
use crate::rules::{self, Expr};

impl Converter<'_> {
    /// The strings `schema` accepts (`None` = every string); `kw` names the keyword in errors.
    pub(super) fn string_language(&mut self, schema: &Value, ptr: &str, kw: &str) -> Result<Option<Dfa>, SchemaError> {
        let schema = match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => self.resolve_pointer(r, ptr)?,
            None => schema,
        };
        let m = match schema {
            Value::Bool(true) => return Ok(None),
            Value::Bool(false) => return Ok(Some(Dfa::empty())),
            Value::Object(m) => m,
            _ => return Err(err(kw, ptr, "must be a schema")),
        };
        let fail = |k: &str, why: String| err(kw, ptr, format!("{k}: {why}"));
        let mut lang: Option<Dfa> = None;
        for (k, v) in m {
            let part = match k.as_str() {
                "type" => {
                    let string_ok = v == "string" || v.as_array().is_some_and(|a| a.iter().any(|t| t == "string"));
                    if string_ok {
                        continue;
                    }
                    Dfa::empty()
                }
                "enum" | "const" => {
                    let vals = if k == "const" { vec![v.clone()] } else { v.as_array().cloned().unwrap_or_default() };
                    let words: Vec<&str> = vals.iter().filter_map(Value::as_str).collect();
                    Dfa::literals(&words)
                }
                "pattern" => {
                    let p = v.as_str().ok_or_else(|| fail(k, "must be a string".into()))?;
                    Dfa::from_pattern(p).map_err(|e| fail(k, e))?
                }
                "minLength" => Dfa::length(as_count(Some(v)), None).map_err(|e| fail(k, e))?,
                "maxLength" => Dfa::length(0, Some(as_count(Some(v)))).map_err(|e| fail(k, e))?,
                "not" => match self.string_language(v, &format!("{ptr}/not"), kw)? {
                    None => Dfa::empty(),
                    Some(d) => Dfa::any_string().minus(&d).map_err(|e| fail(k, e))?,
                },
                "format" if v.as_str().is_some_and(custom_format) => continue,
                "format" => match v.as_str().and_then(format_regex) {
                    Some(re) => Dfa::from_pattern(&re).map_err(|e| fail(k, e))?,
                    None => return Err(fail(k, "cannot be enforced on strings here".into())),
                },
                k if ANNOTATIONS.contains(&k) || (!SUPPORTED.contains(&k) && !UNSUPPORTED.contains(&k)) => continue,
                k => return Err(fail(k, "cannot be enforced on strings here".into())),
            };
            lang = Some(match lang {
                None => part,
                Some(l) => l.intersect(&part).map_err(|e| fail(k, e))?,
            });
        }
        Ok(lang)
    }

    /// The rule for a `type: string` schema compiled through its automaton.
    pub(super) fn string_automaton(
        &mut self,
        schema: &Value,
        rule_name: &str,
        ptr: &str,
    ) -> Result<String, SchemaError> {
        let kw = match (schema.get("not"), schema.get("pattern")) {
            (Some(_), _) => "not",
            (None, Some(_)) => "pattern",
            (None, None) => "format",
        };
        let d = self.string_language(schema, ptr, kw)?.unwrap_or_else(Dfa::any_string);
        if d.is_empty() {
            return Err(err(kw, ptr, super::converter::UNSAT));
        }
        let body = self.dfa_rule(&d, &format!("{rule_name}-chars"));
        let quote = Expr::lit_spelled("\"", "\\\"");
        let items = vec![quote.clone(), body, quote, self.r("space")];
        Ok(self.add_rule_ir(rule_name, rules::seq(items)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::{check, refused};

    #[test]
    fn pattern_with_length() {
        let s = json!({"type": "string", "pattern": "[0-9a-fA-F]+", "minLength": 12, "maxLength": 12});
        check(
            s,
            &[r#""0123456789ab""#, r#""zzzzzzzzzzz0""#],
            &[r#""0123456789a""#, r#""zzzzzzzzzzzz""#, r#""0123456789abc""#],
        );
        // Characters JSON escapes count once.
        let s = json!({"type": "string", "pattern": "^a", "maxLength": 2});
        check(s, &[r#""a\n""#, r#""a\"""#, r#""a""#], &[r#""a\n\n""#, r#""ba""#]);
    }

    #[test]
    fn not_enum_and_not_pattern() {
        let s = json!({"type": "string", "not": {"enum": ["circle", "square"]}});
        check(s, &[r#""circles""#, r#""""#, r#""squar""#, r#""\u0000""#], &[r#""circle""#, r#""square""#, "1"]);
        let s = json!({"type": "string", "not": {"pattern": "^x"}, "maxLength": 2});
        check(s, &[r#""ab""#, r#""""#], &[r#""xa""#, r#""abc""#]);
    }

    #[test]
    fn false_schemas() {
        refused(json!({"type": "object", "required": ["a"], "properties": {"a": {"not": {}}}}), "not");
        let s = json!({"type": "object", "properties": {"a": {"not": {}}, "b": {"type": "integer"}}});
        check(s, &[r#"{"b":1}"#, r#"{"c":true}"#], &[r#"{"a":1}"#]);
    }

    #[test]
    fn not_elsewhere_is_refused() {
        refused(json!({"type": "integer", "not": {"const": 3}}), "not");
        refused(json!({"not": {"type": "string"}}), "not");
        refused(json!({"enum": ["a", "b"], "not": {"const": "a"}}), "not");
    }
}

#[cfg(test)]
mod ipv6_tests {
    use serde_json::json;

    use crate::json_schema::test_util::check;

    #[test]
    fn ipv6_text_forms() {
        let ok = [
            "::",
            "::1",
            "1::",
            "fe80::1",
            "2001:db8::8a2e:370:7334",
            "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
            "::ffff:192.0.2.128",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "1:2:3:4:5:6:1.2.3.4",
            "FFFF::",
        ];
        let bad = [
            "",
            ":",
            ":1",
            "1:",
            "1:2:3:4:5:6:7:8:9",
            "1::2::3",
            "12345::",
            "::ffff:256.0.0.1",
            "1:2:3:4:5:6:7::8",
            "fe80::1%eth0",
            "1:2:3:4:5:6:7",
            "::01.2.3.4",
            "1.2.3.4",
            "g::",
        ];
        let q = |s: &str| format!("{:?}", s);
        let ok: Vec<String> = ok.iter().map(|s| q(s)).collect();
        let bad: Vec<String> = bad.iter().map(|s| q(s)).collect();
        check(
            json!({"type": "string", "format": "ipv6"}),
            &ok.iter().map(String::as_str).collect::<Vec<_>>(),
            &bad.iter().map(String::as_str).collect::<Vec<_>>(),
        );
    }
}
