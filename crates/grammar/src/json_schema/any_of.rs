//! `anyOf` absorption: when one alternative accepts *every* instance of some JSON types and
//! every other alternative only admits those types, the union is exactly that alternative.
//! The others need not (and are not) compiled, so keywords the converter could not enforce
//! inside them (an `ipv6` format next to a plain string, say) do not make the union fail.

use serde_json::Value;

use super::ir::Node;
use super::keywords::STANDARD_FORMATS;
use super::primitives::primitive;
use super::shape::{declared_types, resolve};

/// The types for which `s` accepts every instance (those its `type` admits whose own
/// keywords are all vacuous, when it lists no values and has no combinators), `None` when
/// there are none.
pub(super) fn total_types(root: &Value, s: &Value) -> Option<Vec<String>> {
    let total = Node::parse(root, resolve(root, s)).total_types();
    if total.is_empty() {
        return None;
    }
    total.names().map(|v| v.into_iter().map(String::from).collect())
}

/// A format name the converter treats as an annotation (not standard, no built-in rule).
pub(super) fn custom_format(f: &str) -> bool {
    !STANDARD_FORMATS.contains(&f) && !f.starts_with("uuid") && primitive(&format!("{f}-string"), true).is_none()
}

/// The index of an alternative that equals the whole union, if one does.
pub fn absorbing(root: &Value, alts: &[Value]) -> Option<usize> {
    (0..alts.len()).find(|&i| {
        let Some(total) = total_types(root, &alts[i]) else { return false };
        let covers = |t: &String| total.contains(t) || (t == "integer" && total.iter().any(|x| x == "number"));
        alts.iter().enumerate().all(|(j, a)| j == i || declared_types(root, a).is_some_and(|ts| ts.iter().all(covers)))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::check;

    #[test]
    fn unconstrained_alternative_absorbs_the_others() {
        // `host-name` is not a standard format: any string; `ipv6` is never compiled.
        let s = json!({"type": "string", "anyOf": [{"format": "host-name"}, {"format": "ipv4"}, {"format": "ipv6"}]});
        check(s, &[r#""::1""#, r#""a b""#, r#""""#], &["1", "null"]);
        let s = json!({"anyOf": [{"type": "number"}, {"type": "integer", "minimum": 3}]});
        check(s, &["1.5", "-2"], &[r#""1""#]);
    }

    #[test]
    fn no_absorption_across_types() {
        // The integer alternative does not cover the string one: both are compiled.
        let s = json!({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]});
        check(s, &["7", r#""a""#], &[r#""ab""#, "1.5"]);
    }
}
