//! The typed view of a schema node: parsed once (plain `$ref`s followed), every assertion
//! keyword sorted into the group of the one JSON type it constrains, so that "a keyword
//! applies only to its own type" holds by construction: a type branch reads its own group and
//! never sees another type's keywords.
//!
//! The JSON types are a bit set in which `number` is split into its integers and its
//! non-integers, so `number ∩ integer = integer` and `number \ integer` are plain bit
//! operations (the converter's `allOf` type intersection, `oneOf` disjointness by type and
//! `anyOf` absorption all reduce to them).

use serde_json::{Map, Value};

use super::any_of::custom_format;
use super::keywords::{applies_to, ANNOTATIONS, SUPPORTED, UNSUPPORTED};
use super::shape::resolve;

/// A set of JSON types; `number` is two bits (integers and non-integers).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(super) struct TypeSet(u8);

impl TypeSet {
    pub const EMPTY: TypeSet = TypeSet(0);
    pub const NULL: TypeSet = TypeSet(1);
    pub const BOOLEAN: TypeSet = TypeSet(2);
    pub const INTEGER: TypeSet = TypeSet(4);
    /// Numbers that are not integers (no JSON Schema type names this part alone).
    pub const FRACTION: TypeSet = TypeSet(8);
    pub const NUMBER: TypeSet = TypeSet(4 | 8);
    pub const STRING: TypeSet = TypeSet(16);
    pub const ARRAY: TypeSet = TypeSet(32);
    pub const OBJECT: TypeSet = TypeSet(64);
    pub const ALL: TypeSet = TypeSet(127);

    /// The six JSON types as the converter splits a union (`integer` lies within `number`).
    pub const SIX: [(&'static str, TypeSet); 6] = [
        ("object", TypeSet::OBJECT),
        ("array", TypeSet::ARRAY),
        ("string", TypeSet::STRING),
        ("number", TypeSet::NUMBER),
        ("boolean", TypeSet::BOOLEAN),
        ("null", TypeSet::NULL),
    ];

    /// The set a JSON Schema type name denotes.
    pub fn named(name: &str) -> Option<TypeSet> {
        Some(match name {
            "integer" => TypeSet::INTEGER,
            n => TypeSet::SIX.iter().find(|(t, _)| *t == n)?.1,
        })
    }

    /// The set a `type` keyword's value denotes (`None` when it names no known type or is
    /// neither a string nor an array of them).
    pub fn of_type_keyword(v: &Value) -> Option<TypeSet> {
        match v {
            Value::String(t) => TypeSet::named(t),
            Value::Array(a) => a.iter().try_fold(TypeSet::EMPTY, |acc, t| Some(acc | TypeSet::named(t.as_str()?)?)),
            _ => None,
        }
    }

    /// The type of one JSON value.
    pub fn of_value(v: &Value) -> TypeSet {
        match v {
            Value::Null => TypeSet::NULL,
            Value::Bool(_) => TypeSet::BOOLEAN,
            Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => TypeSet::INTEGER,
            Value::Number(_) => TypeSet::FRACTION,
            Value::String(_) => TypeSet::STRING,
            Value::Array(_) => TypeSet::ARRAY,
            Value::Object(_) => TypeSet::OBJECT,
        }
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every type of `other` is in `self`.
    pub fn contains(self, other: TypeSet) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn meets(self, other: TypeSet) -> bool {
        self.0 & other.0 != 0
    }

    /// The type names of this set, as a `type` keyword lists them: `number` for both number
    /// bits, `integer` for integers alone. `None` when the set holds the non-integers alone
    /// (no type name says "a number that is not an integer").
    pub fn names(self) -> Option<Vec<&'static str>> {
        if self.contains(TypeSet::FRACTION) && !self.contains(TypeSet::INTEGER) {
            return None;
        }
        let mut out = Vec::new();
        for (name, t) in TypeSet::SIX {
            if self.contains(t) {
                out.push(name);
            } else if t == TypeSet::NUMBER && self.contains(TypeSet::INTEGER) {
                out.push("integer");
            }
        }
        Some(out)
    }

    /// The type names of the smallest `type` list holding this set (non-integers alone
    /// round up to `number`).
    pub fn covering_names(self) -> Vec<&'static str> {
        let t = if self.meets(TypeSet::FRACTION) { self | TypeSet::NUMBER } else { self };
        t.names().unwrap_or_default()
    }
}

impl std::ops::BitOr for TypeSet {
    type Output = TypeSet;
    fn bitor(self, o: TypeSet) -> TypeSet {
        TypeSet(self.0 | o.0)
    }
}

impl std::ops::BitAnd for TypeSet {
    type Output = TypeSet;
    fn bitand(self, o: TypeSet) -> TypeSet {
        TypeSet(self.0 & o.0)
    }
}

impl std::ops::Sub for TypeSet {
    type Output = TypeSet;
    fn sub(self, o: TypeSet) -> TypeSet {
        TypeSet(self.0 & !o.0)
    }
}

/// The instance types a keyword group constrains.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Group {
    Object,
    Array,
    String,
    Number,
}

impl Group {
    const ALL: [Group; 4] = [Group::Object, Group::Array, Group::String, Group::Number];

    fn of_keyword(k: &str) -> Option<Group> {
        Some(match applies_to(k)? {
            "object" => Group::Object,
            "array" => Group::Array,
            "string" => Group::String,
            _ => Group::Number,
        })
    }

    /// The types this group's keywords constrain.
    pub fn types(self) -> TypeSet {
        match self {
            Group::Object => TypeSet::OBJECT,
            Group::Array => TypeSet::ARRAY,
            Group::String => TypeSet::STRING,
            Group::Number => TypeSet::NUMBER,
        }
    }
}

/// Whether keyword `k` with value `v` accepts every instance of its type (a custom format, a
/// `uniqueItems` that is not `true`, `additionalProperties: true`): it constrains nothing.
fn vacuous(k: &str, v: &Value) -> bool {
    match k {
        "format" => v.as_str().is_none_or(custom_format),
        "uniqueItems" => *v != Value::Bool(true),
        "additionalProperties" => *v == Value::Bool(true),
        _ => false,
    }
}

/// One schema node in typed form. Borrowed from the schema document: the keyword values are
/// the document's own.
#[derive(Debug, Clone)]
pub(super) struct Node<'a> {
    /// `Some(b)` for a boolean schema.
    pub boolean: Option<bool>,
    /// The types `type` admits (every type without `type`).
    pub types: TypeSet,
    /// `type` is present but names something unknown.
    pub bad_type: bool,
    /// `const`/`enum` values (both present: the values in both).
    pub values: Option<Vec<&'a Value>>,
    /// Per type group, the keywords that constrain that type and are not vacuous.
    groups: [Vec<(&'a str, &'a Value)>; 4],
    /// Keywords that constrain every type: combinators, `not`, a `$ref` with sibling keywords.
    pub general: Vec<(&'a str, &'a Value)>,
    /// Assertion keywords the converter never enforces (`if`, `contains`, ...).
    pub unsupported: Vec<&'a str>,
}

impl<'a> Node<'a> {
    /// Parses `schema` (a node of the document `root`), following `$ref`s that have no
    /// assertion siblings.
    pub fn parse(root: &'a Value, schema: &'a Value) -> Node<'a> {
        match super::shape::deref_plain(root, schema) {
            Value::Bool(b) => {
                let mut node = Node::of_map(&EMPTY_MAP);
                node.boolean = Some(*b);
                if !b {
                    node.types = TypeSet::EMPTY;
                }
                node
            }
            Value::Object(m) => Node::of_map(m),
            _ => Node { bad_type: true, ..Node::of_map(&EMPTY_MAP) },
        }
    }

    /// The typed view of one schema object's own keywords (its `$ref` is not followed).
    pub fn of_map(m: &'a Map<String, Value>) -> Node<'a> {
        let mut node = Node {
            boolean: None,
            types: TypeSet::ALL,
            bad_type: false,
            values: None,
            groups: Default::default(),
            general: Vec::new(),
            unsupported: Vec::new(),
        };
        for (k, v) in m {
            let k = k.as_str();
            if UNSUPPORTED.contains(&k) {
                node.unsupported.push(k);
                continue;
            }
            if ANNOTATIONS.contains(&k) || !SUPPORTED.contains(&k) {
                continue;
            }
            match k {
                "type" => match TypeSet::of_type_keyword(v) {
                    Some(t) => node.types = t,
                    None => node.bad_type = true,
                },
                "const" | "enum" => {}
                _ => match Group::of_keyword(k) {
                    Some(g) if !vacuous(k, v) => node.groups[g as usize].push((k, v)),
                    Some(_) => {}
                    None => node.general.push((k, v)),
                },
            }
        }
        node.values = values_of(m);
        node
    }

    /// The non-vacuous keywords constraining instances of group `g`'s type.
    pub fn group(&self, g: Group) -> &[(&'a str, &'a Value)] {
        &self.groups[g as usize]
    }

    /// The types with at least one constraining keyword of their own.
    pub fn constrained_types(&self) -> TypeSet {
        Group::ALL.iter().filter(|g| !self.group(**g).is_empty()).fold(TypeSet::EMPTY, |acc, g| acc | g.types())
    }

    /// The types for which this node accepts every instance: those `type` admits whose group
    /// is empty, when there are no values and no general keywords (else none).
    pub fn total_types(&self) -> TypeSet {
        if self.values.is_some() || !self.general.is_empty() || self.bad_type || !self.unsupported.is_empty() {
            return TypeSet::EMPTY;
        }
        self.types - self.constrained_types()
    }

    /// Whether the node says which types it admits (`type`, `const`/`enum`); `None` leaves
    /// the question to the caller (combinators may still narrow it).
    pub fn stated_types(&self) -> Option<TypeSet> {
        if self.boolean.is_some() {
            return Some(self.types);
        }
        match &self.values {
            Some(vals) => Some(vals.iter().fold(TypeSet::EMPTY, |acc, v| acc | TypeSet::of_value(v)) & self.types),
            None if self.types != TypeSet::ALL => Some(self.types),
            None => None,
        }
    }
}

static EMPTY_MAP: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

/// The schema object `m` as the branch of its type union for type `name`: `type: name`, and
/// every keyword except those constraining other types only (keywords of every type,
/// annotations and unknown keywords stay; a type's vacuous keywords stay too, since
/// `additionalProperties: true` still opens an object under `closed_objects`).
pub(super) fn project(m: &Map<String, Value>, name: &str) -> Map<String, Value> {
    let t = TypeSet::named(name).unwrap_or(TypeSet::EMPTY);
    let mut out: Map<String, Value> = m
        .iter()
        .filter(|(k, _)| Group::of_keyword(k).is_none_or(|g| g.types().meets(t)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.insert("type".into(), Value::from(name));
    out
}

/// The values a node lists: `const`, `enum`, or (both present) those of the enum equal to the
/// constant.
fn values_of(m: &Map<String, Value>) -> Option<Vec<&Value>> {
    let en = m.get("enum").and_then(Value::as_array);
    match (m.get("const"), en) {
        (Some(c), Some(e)) => Some(e.iter().filter(|v| *v == c).collect()),
        (Some(c), None) => Some(vec![c]),
        (None, Some(e)) => Some(e.iter().collect()),
        (None, None) => None,
    }
}

/// The JSON types a schema admits when it says so — through `type`, `const`/`enum`, plain
/// `$ref`s, the union of `anyOf`/`oneOf` alternatives and the intersection of `allOf`
/// components — or `None` (could be anything).
pub(super) fn declared_types(root: &Value, s: &Value) -> Option<TypeSet> {
    declared_at(root, s, 0)
}

fn declared_at(root: &Value, s: &Value, depth: usize) -> Option<TypeSet> {
    if depth > 32 {
        return None;
    }
    let s = resolve(root, s);
    let node = Node::parse(root, s);
    if let Some(t) = node.stated_types() {
        return Some(t);
    }
    if let Some(alts) = s.get("anyOf").or_else(|| s.get("oneOf")).and_then(Value::as_array) {
        let mut acc = TypeSet::EMPTY;
        for a in alts {
            acc = acc | declared_at(root, a, depth + 1)?;
        }
        return Some(acc);
    }
    let comps = s.get("allOf").and_then(Value::as_array)?;
    comps.iter().filter_map(|c| declared_at(root, c, depth + 1)).reduce(|a, b| a & b)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn number_splits_into_integers_and_the_rest() {
        let n = TypeSet::NUMBER;
        assert_eq!(n & TypeSet::INTEGER, TypeSet::INTEGER);
        assert_eq!((n - TypeSet::INTEGER).names(), None);
        assert_eq!((TypeSet::STRING | TypeSet::INTEGER).names(), Some(vec!["string", "integer"]));
        assert_eq!(TypeSet::ALL.names().map(|v| v.len()), Some(6));
        assert_eq!(TypeSet::of_type_keyword(&json!(["integer", "null"])), Some(TypeSet::INTEGER | TypeSet::NULL));
        assert_eq!(TypeSet::of_type_keyword(&json!("float")), None);
        assert_eq!(TypeSet::of_value(&json!(1.0)), TypeSet::INTEGER);
        assert_eq!(TypeSet::of_value(&json!(1.5)), TypeSet::FRACTION);
    }

    #[test]
    fn keywords_land_in_their_own_type_group() {
        let root = json!({"minLength": 2, "maximum": 5, "items": {}, "uniqueItems": false, "format": "my-format",
            "title": "t", "anyOf": [{}], "contains": {}});
        let n = Node::parse(&root, &root);
        assert_eq!(n.types, TypeSet::ALL);
        assert_eq!(n.group(Group::String), &[("minLength", &json!(2))]);
        assert_eq!(n.group(Group::Number), &[("maximum", &json!(5))]);
        assert_eq!(n.group(Group::Array).len(), 1);
        assert!(n.group(Group::Object).is_empty());
        assert_eq!(n.constrained_types(), TypeSet::STRING | TypeSet::NUMBER | TypeSet::ARRAY);
        assert_eq!(n.general.len(), 1);
        assert_eq!(n.unsupported, vec!["contains"]);
    }

    #[test]
    fn a_type_branch_keeps_only_its_own_keywords() {
        let m = json!({"type": ["string", "integer", "object"], "minLength": 2, "maximum": 5, "items": {},
            "additionalProperties": true, "enum": [1, "ab"], "title": "t"});
        let m = m.as_object().unwrap();
        let keys = |name: &str| {
            let mut k: Vec<String> = project(m, name).keys().cloned().collect();
            k.sort();
            k.join(",")
        };
        assert_eq!(keys("string"), "enum,minLength,title,type");
        assert_eq!(keys("integer"), "enum,maximum,title,type");
        assert_eq!(keys("object"), "additionalProperties,enum,title,type");
        assert_eq!(project(m, "integer")["type"], json!("integer"));
    }

    #[test]
    fn total_types_are_the_unconstrained_admitted_ones() {
        let root = json!({"$defs": {"s": {"type": ["string", "null"], "minLength": 1}}, "$ref": "#/$defs/s"});
        assert_eq!(Node::parse(&root, &root).total_types(), TypeSet::NULL);
        let e = json!({"enum": [1]});
        assert_eq!(Node::parse(&e, &e).total_types(), TypeSet::EMPTY);
        let t = json!(true);
        assert_eq!(Node::parse(&t, &t).total_types(), TypeSet::ALL);
    }

    #[test]
    fn declared_types_through_values_unions_and_conjunctions() {
        let root = json!({"$defs": {"i": {"type": "integer"}}});
        let d = |s: Value| declared_types(&root, &s);
        assert_eq!(d(json!({"enum": ["a", 1.5, null]})), Some(TypeSet::STRING | TypeSet::FRACTION | TypeSet::NULL));
        assert_eq!(d(json!({"type": "string", "enum": ["a", 1]})), Some(TypeSet::STRING));
        assert_eq!(
            d(json!({"anyOf": [{"$ref": "#/$defs/i"}, {"type": "null"}]})),
            Some(TypeSet::INTEGER | TypeSet::NULL)
        );
        assert_eq!(d(json!({"anyOf": [{"type": "null"}, {"minimum": 1}]})), None);
        assert_eq!(d(json!({"allOf": [{"type": "number"}, {"$ref": "#/$defs/i"}, {}]})), Some(TypeSet::INTEGER));
        assert_eq!(d(json!({"minimum": 1})), None);
        assert_eq!(d(json!(false)), Some(TypeSet::EMPTY));
    }
}
