//! The typed keywords of one schema object, and the construction that converts it.
//!
//! [`Keywords::parse`] reads every keyword the converter's dispatch looks at in one pass over
//! the schema object (one `match` on the keyword name), into typed fields: the `type`
//! keyword as [`TypeKw`], counts as numbers, presence flags for keyword families. [`Form`] is
//! the one construction the converter uses for the object, chosen by [`Keywords::form`] in
//! the precedence order of JSON Schema's keywords as the converter honours them (`$ref`, then
//! the unions, then type unions, `allOf`, values, objects, arrays, strings, numbers); the
//! converter is a `match` over it. Both are borrowed from the schema document.

use serde_json::{Map, Value};

use super::converter::as_count;
use super::formats::format_regex;
use super::primitives::primitive;

/// The `type` keyword.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum TypeKw<'a> {
    /// No `type`.
    Absent,
    /// One type name (not checked to be a known one).
    One(&'a str),
    /// A list of types (entries not checked).
    List(&'a [Value]),
    /// Neither a string nor an array.
    Bad(&'a Value),
}

impl<'a> TypeKw<'a> {
    fn of(v: &'a Value) -> TypeKw<'a> {
        match v {
            Value::String(s) => TypeKw::One(s),
            Value::Array(a) => TypeKw::List(a),
            other => TypeKw::Bad(other),
        }
    }

    /// The type name when `type` names exactly one.
    pub fn name(self) -> Option<&'a str> {
        match self {
            TypeKw::One(s) => Some(s),
            _ => None,
        }
    }

    /// Whether strings may be instances (no `type`, or one naming `string`; a malformed
    /// `type` is left to the type check and counts as allowing them).
    pub fn allows_strings(self) -> bool {
        match self {
            TypeKw::Absent | TypeKw::Bad(_) => true,
            TypeKw::One(t) => t == "string",
            TypeKw::List(a) => a.iter().any(|t| t == "string"),
        }
    }
}

/// The keywords of one schema object, typed. Values the dispatch only passes on (subschemas,
/// lists) stay borrowed from the document.
#[derive(Debug, Clone)]
pub(super) struct Keywords<'a> {
    /// The schema object itself (for the construction modules, which read their own keywords).
    pub map: &'a Map<String, Value>,
    pub ty: TypeKw<'a>,
    /// `format` when it is a string.
    pub format: Option<&'a str>,
    pub reference: Option<&'a Value>,
    pub any_of: Option<&'a Value>,
    pub one_of: Option<&'a Value>,
    pub all_of: Option<&'a Value>,
    pub not: Option<&'a Value>,
    pub constant: Option<&'a Value>,
    pub enumeration: Option<&'a Value>,
    pub properties: Option<&'a Value>,
    pub required: Option<&'a Value>,
    pub additional_properties: Option<&'a Value>,
    /// `patternProperties`, `propertyNames`, `minProperties` or `maxProperties` present.
    pub object_extras: bool,
    /// `dependencies`, `dependentRequired` or `dependentSchemas` present.
    pub dependencies: bool,
    pub min_properties: Option<usize>,
    pub max_properties: Option<usize>,
    pub items: Option<&'a Value>,
    pub prefix_items: Option<&'a Value>,
    pub min_items: Option<usize>,
    pub max_items: Option<usize>,
    pub pattern: Option<&'a Value>,
    pub min_length: Option<usize>,
    pub max_length: Option<usize>,
    pub multiple_of: bool,
    /// `minimum`, `maximum`, `exclusiveMinimum` or `exclusiveMaximum` present.
    pub numeric_bounds: bool,
}

impl<'a> Keywords<'a> {
    /// Reads the keywords of `map` in one pass.
    pub fn parse(map: &'a Map<String, Value>) -> Keywords<'a> {
        let count = |v: &Value| as_count(Some(v));
        let mut k = Keywords {
            map,
            ty: TypeKw::Absent,
            format: None,
            reference: None,
            any_of: None,
            one_of: None,
            all_of: None,
            not: None,
            constant: None,
            enumeration: None,
            properties: None,
            required: None,
            additional_properties: None,
            object_extras: false,
            dependencies: false,
            min_properties: None,
            max_properties: None,
            items: None,
            prefix_items: None,
            min_items: None,
            max_items: None,
            pattern: None,
            min_length: None,
            max_length: None,
            multiple_of: false,
            numeric_bounds: false,
        };
        for (key, v) in map {
            match key.as_str() {
                "type" => k.ty = TypeKw::of(v),
                "format" => k.format = v.as_str(),
                "$ref" => k.reference = Some(v),
                "anyOf" => k.any_of = Some(v),
                "oneOf" => k.one_of = Some(v),
                "allOf" => k.all_of = Some(v),
                "not" => k.not = Some(v),
                "const" => k.constant = Some(v),
                "enum" => k.enumeration = Some(v),
                "properties" => k.properties = Some(v),
                "required" => k.required = Some(v),
                "additionalProperties" => k.additional_properties = Some(v),
                "patternProperties" | "propertyNames" => k.object_extras = true,
                "minProperties" => {
                    k.object_extras = true;
                    k.min_properties = Some(count(v));
                }
                "maxProperties" => {
                    k.object_extras = true;
                    k.max_properties = Some(count(v));
                }
                "dependencies" | "dependentRequired" | "dependentSchemas" => k.dependencies = true,
                "items" => k.items = Some(v),
                "prefixItems" => k.prefix_items = Some(v),
                "minItems" => k.min_items = Some(count(v)),
                "maxItems" => k.max_items = Some(count(v)),
                "pattern" => k.pattern = Some(v),
                "minLength" => k.min_length = Some(count(v)),
                "maxLength" => k.max_length = Some(count(v)),
                "multipleOf" => k.multiple_of = true,
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => k.numeric_bounds = true,
                _ => {}
            }
        }
        k
    }

    /// `format` as the converter names its rules (empty when absent).
    pub fn format_name(&self) -> &'a str {
        self.format.unwrap_or("")
    }

    /// Whether the format is a UUID (`uuid`, or llama.cpp's `uuid1` … `uuid5`).
    pub fn uuid_format(&self) -> bool {
        let f = self.format_name();
        f == "uuid" || (f.len() == 5 && f.starts_with("uuid") && matches!(f.as_bytes()[4], b'1'..=b'5'))
    }

    /// Whether a strict `type: string` schema needs the string automaton: `not`, `pattern`
    /// with a length, or an enforced format with a `pattern` or a length (each a language the
    /// automaton intersects).
    pub fn needs_automaton(&self) -> bool {
        let length = self.min_length.is_some() || self.max_length.is_some();
        let format = self.format.is_some_and(|f| format_regex(f).is_some());
        self.not.is_some() || (self.pattern.is_some() && length) || (format && (self.pattern.is_some() || length))
    }

    /// The construction that converts this object. `implied` computes, for a strict schema
    /// without `type`, the types it admits when keywords constrain only some of them
    /// ([`super::converter::Converter`] owns the document it needs); `all_of` the exact
    /// merge of the `allOf` components into one schema, when there is one.
    pub fn form(
        &self,
        strict: bool,
        implied: impl FnOnce(&Self) -> Option<Vec<&'static str>>,
        all_of: impl FnOnce(&Self) -> Option<AllOf<'a>>,
    ) -> Form<'a> {
        let ty_str = self.ty.name();
        if let Some(r) = self.reference {
            return Form::Ref(r);
        }
        if let Some(alts) = self.one_of {
            return Form::Union { kw: "oneOf", alts };
        }
        if let Some(alts) = self.any_of {
            return Form::Union { kw: "anyOf", alts };
        }
        if strict && self.ty == TypeKw::Absent {
            if let Some(types) = implied(self) {
                return Form::ImpliedTypes(types);
            }
        }
        match self.ty {
            TypeKw::List(types) => return Form::TypeList(types),
            TypeKw::Bad(v) => return Form::BadType(v),
            TypeKw::Absent | TypeKw::One(_) => {}
        }
        if strict && self.all_of.is_some() {
            if let Some(a) = all_of(self) {
                return Form::AllOfExact(a);
            }
        }
        if let Some(c) = self.constant {
            return Form::Const(c);
        }
        if let Some(e) = self.enumeration {
            return Form::Enum(e);
        }
        let objecty = matches!(ty_str, None | Some("object"));
        if strict && objecty && self.dependencies {
            return Form::Dependencies;
        }
        let addl = self.additional_properties;
        if objecty
            && (self.properties.is_some()
                || (addl.is_some() && addl != Some(&Value::Bool(true)))
                || (strict && ty_str == Some("object") && self.required.is_some())
                || (strict && self.object_extras))
        {
            return Form::Object;
        }
        if matches!(ty_str, None | Some("object") | Some("string")) && self.all_of.is_some() {
            return Form::AllOf;
        }
        if strict && ty_str == Some("array") {
            return Form::StrictArray;
        }
        if matches!(ty_str, None | Some("array")) && (self.items.is_some() || self.prefix_items.is_some()) {
            return Form::Array;
        }
        if strict && ty_str == Some("string") && self.needs_automaton() {
            return Form::StringAutomaton;
        }
        if matches!(ty_str, None | Some("string")) {
            if let Some(p) = self.pattern {
                return Form::Pattern(p);
            }
            if self.uuid_format() {
                return Form::Uuid;
            }
            let fmt = self.format_name();
            if !fmt.is_empty() && primitive(&format!("{fmt}-string"), strict).is_some() {
                return Form::FormatPrimitive;
            }
        }
        if ty_str == Some("string") && (self.min_length.is_some() || self.max_length.is_some()) {
            return Form::StringLength;
        }
        let numeric = matches!(ty_str, Some("integer") | Some("number"));
        if strict && self.multiple_of && numeric {
            return Form::MultipleOf;
        }
        if strict && numeric && self.numeric_bounds {
            return Form::NumericRange;
        }
        if matches!(ty_str, None | Some("integer")) && self.numeric_bounds && (ty_str.is_some() || !strict) {
            return Form::IntegerBounds;
        }
        if strict && ty_str.is_none() {
            return Form::AnyValue;
        }
        if ty_str == Some("object") || self.map.is_empty() {
            return Form::AnyObject;
        }
        Form::Primitive(ty_str.unwrap_or(""))
    }
}

/// A strict `allOf` written exactly as one schema.
#[derive(Debug, Clone)]
pub(super) enum AllOf<'a> {
    /// `allOf: [{"$ref": r}]` beside annotations only: the reference's own rule (with the
    /// component's pointer).
    Reference(&'a str, String),
    /// The components merged into the schema.
    Merged(Value),
}

/// How the converter builds a schema object's rule, in the converter's precedence order.
#[derive(Debug, Clone)]
pub(super) enum Form<'a> {
    /// `$ref` (its value; a non-string is refused by the converter).
    Ref(&'a Value),
    /// `oneOf` (which wins beside `anyOf`) or `anyOf`.
    Union {
        kw: &'static str,
        alts: &'a Value,
    },
    /// Strict, no `type`, keywords of some types only: the union of these types.
    ImpliedTypes(Vec<&'static str>),
    /// `type` lists several types: one branch per type.
    TypeList(&'a [Value]),
    /// `type` is neither a string nor an array.
    BadType(&'a Value),
    /// Strict `allOf` written as one schema.
    AllOfExact(AllOf<'a>),
    Const(&'a Value),
    /// `enum` (not checked to be an array).
    Enum(&'a Value),
    /// Strict object with dependency keywords: expanded into presence cases.
    Dependencies,
    /// An object rule (properties, required, extra keys, key spaces, counts).
    Object,
    /// `allOf` merged by the object/string construction.
    AllOf,
    /// Strict `type: array`.
    StrictArray,
    /// `items`/`prefixItems` (compat mode, or strict without `type`).
    Array,
    /// Strict `type: string` with `not` or `pattern` beside a length.
    StringAutomaton,
    /// `pattern` (not checked to be a string).
    Pattern(&'a Value),
    Uuid,
    /// A format with a built-in rule (`{format}-string`).
    FormatPrimitive,
    /// `minLength`/`maxLength` on a `type: string`.
    StringLength,
    /// Strict `multipleOf` on a number type.
    MultipleOf,
    /// Strict numeric bounds on a number type.
    NumericRange,
    /// Integer bounds (compat mode's digit ranges).
    IntegerBounds,
    /// Strict, no `type` and no assertion: any value.
    AnyValue,
    /// `type: object` without object keywords, or `{}` in compat mode.
    AnyObject,
    /// One primitive type by name (checked by the converter).
    Primitive(&'a str),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form_of(v: Value, strict: bool) -> String {
        let m = v.as_object().unwrap();
        let k = Keywords::parse(m);
        let f = k.form(strict, |_| None, |_| None);
        format!("{f:?}").split(['(', ' ']).next().unwrap().to_string()
    }

    #[test]
    fn keywords_are_typed_once() {
        let v = json!({"type": "string", "minLength": 2.7, "maxLength": -1, "format": "date", "minItems": "x",
            "maximum": 3, "patternProperties": {}});
        let k = Keywords::parse(v.as_object().unwrap());
        assert_eq!(k.ty, TypeKw::One("string"));
        assert_eq!((k.min_length, k.max_length, k.min_items), (Some(2), Some(0), Some(0)));
        assert_eq!(k.format, Some("date"));
        assert!(k.numeric_bounds && k.object_extras && !k.multiple_of);
        assert!(k.ty.allows_strings());
        assert!(!TypeKw::of(&json!(["null", "object"])).allows_strings());
    }

    #[test]
    fn forms_follow_the_converters_precedence() {
        assert_eq!(form_of(json!({"$ref": "#", "oneOf": []}), true), "Ref");
        assert_eq!(form_of(json!({"anyOf": [], "oneOf": []}), true), "Union");
        assert_eq!(form_of(json!({"type": ["string"], "const": 1}), true), "TypeList");
        assert_eq!(form_of(json!({"type": 3}), true), "BadType");
        assert_eq!(form_of(json!({"const": 1, "enum": [1]}), true), "Const");
        assert_eq!(form_of(json!({"type": "object", "required": ["a"]}), true), "Object");
        assert_eq!(form_of(json!({"type": "object", "required": ["a"]}), false), "AnyObject");
        assert_eq!(form_of(json!({"type": "array"}), true), "StrictArray");
        assert_eq!(form_of(json!({"type": "array"}), false), "Primitive");
        assert_eq!(form_of(json!({"type": "string", "pattern": "a", "maxLength": 3}), true), "StringAutomaton");
        assert_eq!(form_of(json!({"type": "string", "pattern": "a", "maxLength": 3}), false), "Pattern");
        assert_eq!(form_of(json!({"format": "uuid3"}), false), "Uuid");
        assert_eq!(form_of(json!({"type": "string", "format": "date"}), true), "FormatPrimitive");
        assert_eq!(form_of(json!({"type": "integer", "multipleOf": 2, "minimum": 1}), true), "MultipleOf");
        assert_eq!(form_of(json!({"minimum": 1}), false), "IntegerBounds");
        assert_eq!(form_of(json!({"minimum": 1}), true), "AnyValue");
        assert_eq!(form_of(json!({}), false), "AnyObject");
    }
}
