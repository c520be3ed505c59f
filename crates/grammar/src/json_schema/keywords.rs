//! Keyword classification for strict mode: which JSON Schema keywords are annotations, which
//! we enforce, which we cannot (rejected), and which instance type each assertion applies to.

/// Keywords with no effect on validation (ignored everywhere).
pub const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "example",
    "$schema",
    "$id",
    "id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "$vocabulary",
    "$defs",
    "definitions",
];

/// Assertion keywords this converter never enforces: a strict compile rejects them.
pub const UNSUPPORTED: &[&str] = &[
    "if",
    "then",
    "else",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
];

/// Keywords the converter understands (enforced by some branch).
pub const SUPPORTED: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "propertyNames",
    "not",
    "multipleOf",
];

/// The instance type an assertion keyword constrains (`None` = any type).
pub fn applies_to(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "minLength" | "maxLength" | "pattern" | "format" => "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => "number",
        "items" | "prefixItems" | "additionalItems" | "minItems" | "maxItems" | "uniqueItems" | "contains" => "array",
        "properties"
        | "required"
        | "additionalProperties"
        | "minProperties"
        | "maxProperties"
        | "patternProperties"
        | "propertyNames"
        | "dependentRequired"
        | "dependentSchemas"
        | "dependencies" => "object",
        _ => return None,
    })
}

/// Standard formats a validator may check; the ones we cannot enforce are rejected. Other
/// (custom) format names are annotations and ignored.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Formats compiled exactly in strict mode.
pub const ENFORCED_FORMATS: &[&str] =
    &["date-time", "date", "time", "duration", "uuid", "ipv4", "ipv6", "email", "uri"];
