//! Strict JSON Schema: regression tests for the wrong-answer classes of issue 12, each judged
//! by feeding instances through the compiled grammar as nucleus lays JSON out.

mod common;

use nucleus_grammar::json_schema::relayout::{feed_json_in, parse_json, MemberOrders};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::Matcher;
use serde_json::{json, Value};

/// A compiled schema's matcher with the member orders its documents are laid out in.
struct Compiled {
    m: Matcher,
    orders: MemberOrders,
}

impl std::ops::Deref for Compiled {
    type Target = Matcher;
    fn deref(&self) -> &Matcher {
        &self.m
    }
}

fn compile(schema: &Value) -> Compiled {
    let g = schema_to_gbnf(schema, &SchemaOptions::default()).unwrap_or_else(|e| panic!("{schema}: refused: {e}"));
    let m = Matcher::from_gbnf(&g.gbnf).unwrap_or_else(|e| panic!("{schema}: grammar does not build: {e}\n{}", g.gbnf));
    Compiled { m, orders: g.member_orders }
}

fn accepts(c: &Compiled, instance: &str) -> bool {
    let v = feed_json_in(&c.m, &parse_json(instance).unwrap(), &c.orders);
    assert!(!v.gave_up, "the layout search gave up on {instance}");
    v.accepted
}

fn check(schema: Value, good: &[&str], bad: &[&str]) {
    let m = compile(&schema);
    for g in good {
        assert!(accepts(&m, g), "{schema}: should accept {g}");
    }
    for b in bad {
        assert!(!accepts(&m, b), "{schema}: should reject {b}");
    }
}

/// Every JSON type, one instance each.
const EVERY_TYPE: [&str; 7] = ["null", "true", "0", "1.5", r#""s""#, "[]", "{}"];

#[test]
fn keywords_constrain_only_their_own_type() {
    // The issue's repro: the first alternative accepts every non-array.
    let s = json!({"type": "array", "items": {"anyOf": [
        {"items": {"type": "string"}},
        {"type": "array", "items": {"type": "number"}}
    ]}});
    check(s, &[r#"[{"module":"x"},["a"],[1]]"#, "[1,null]", r#"[["a","b"],[]]"#], &[r#"[[1,"a"]]"#, "{}"]);

    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"items": {"type": "string"}}), r#"["a"]"#, "[1]"),
        (json!({"prefixItems": [{"type": "string"}]}), r#"["a",1]"#, "[1]"),
        (json!({"minItems": 1}), "[1]", "[]"),
        (json!({"properties": {"a": {"type": "integer"}}}), r#"{"a":1}"#, r#"{"a":"x"}"#),
        (json!({"required": ["a"]}), r#"{"a":1}"#, "{}"),
        (json!({"additionalProperties": false}), "{}", r#"{"a":1}"#),
        (json!({"minProperties": 1}), r#"{"a":1}"#, "{}"),
        (json!({"minLength": 2}), r#""ab""#, r#""a""#),
        (json!({"pattern": "^a"}), r#""ab""#, r#""b""#),
        (json!({"format": "date"}), r#""2020-01-31""#, r#""2020-13-01""#),
        (json!({"minimum": 3}), "3", "2"),
        (json!({"exclusiveMaximum": 3}), "2.5", "3"),
        (json!({"multipleOf": 0.1}), "0.5", "0.25"),
        (json!({"dependentRequired": {"a": ["b"]}}), r#"{"a":1,"b":2}"#, r#"{"a":1}"#),
    ];
    for (s, good, bad) in cases {
        let m = compile(&s);
        for t in EVERY_TYPE {
            let same_type = parse_json(t).map(|v| std::mem::discriminant(&v)).ok()
                == parse_json(bad).map(|v| std::mem::discriminant(&v)).ok();
            if !same_type {
                assert!(accepts(&m, t), "{s}: should accept {t} (the keyword does not constrain its type)");
            }
        }
        assert!(accepts(&m, good), "{s}: should accept {good}");
        assert!(!accepts(&m, bad), "{s}: should reject {bad}");
    }
    // Keywords of two types, each constraining its own.
    check(
        json!({"minLength": 2, "maximum": 5, "items": {"type": "null"}}),
        &[r#""ab""#, "5", "[null]", "{}", "true"],
        &[r#""a""#, "6", "[1]"],
    );
}

#[test]
fn one_of_alternatives_without_type() {
    // Every non-object matches both alternatives: none is valid.
    let s = json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]});
    check(s, &[r#"{"a":1}"#, r#"{"b":1,"c":2}"#], &[r#"{"a":1,"b":2}"#, "{}", r#""x""#, "1", "null", "[]"]);
    // Every string matches both; numbers match the second when at least 3.
    let s = json!({"oneOf": [{"type": "string"}, {"minimum": 3}]});
    check(s, &["3", "{}", "null", "[1]"], &[r#""x""#, "2"]);
}

/// The issue's second repro: 45 optional properties, a dependency, no other properties.
#[test]
fn dependencies_with_many_optional_properties() {
    let mut props = serde_json::Map::new();
    for i in 0..45 {
        props.insert(format!("p{i:02}"), json!({"type": "string"}));
    }
    let s = json!({"type": "object", "properties": props, "additionalProperties": false,
        "dependencies": {"p29": ["p28"]}});
    let doc = |from: usize, to: usize| {
        let members: Vec<String> = (from..=to).map(|i| format!("\"p{i:02}\":\"{i}\"")).collect();
        format!("{{{}}}", members.join(","))
    };
    let without_p28 = {
        let members: Vec<String> = (27..=43).filter(|&i| i != 28).map(|i| format!("\"p{i:02}\":\"{i}\"")).collect();
        format!("{{{}}}", members.join(","))
    };
    let m = compile(&s);
    for good in [doc(27, 43), doc(28, 44), doc(0, 44), doc(30, 44), doc(0, 27)] {
        assert!(accepts(&m, &good), "should accept {good}");
    }
    // p29 without p28: no order is accepted, and the check decides it.
    assert!(!accepts(&m, &without_p28), "should reject {without_p28}");
}

/// Every grammar the strict converter emits builds, in each strict mode, for every dev schema.
/// (Compat mode reproduces llama.cpp's text, including patterns llama.cpp's parser refuses.)
#[test]
fn every_emitted_grammar_builds() {
    let modes = [
        SchemaOptions::default(),
        SchemaOptions { closed_objects: true, ..Default::default() },
        SchemaOptions { lenient: true, ..Default::default() },
    ];
    let mut built = 0;
    for f in common::dev_schema_files() {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for opts in &modes {
            if let Ok(g) = schema_to_gbnf(&v["schema"], opts) {
                if let Err(e) = Matcher::from_gbnf(&g.gbnf) {
                    panic!("{}: {opts:?}: the emitted grammar does not build: {e}", f.display());
                }
                built += 1;
            }
        }
    }
    assert!(built > 250, "only {built} grammars built");
}

#[test]
fn any_of_beside_one_of() {
    let s = json!({"type": "object",
    "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
    "oneOf": [
        {"properties": {"k": {"const": 1}}, "required": ["k"]},
        {"properties": {"k": {"const": 2}}, "required": ["k"]}
    ]});
    check(
        s,
        &[r#"{"k":1,"a":0}"#, r#"{"k":2,"b":0}"#, r#"{"k":2,"a":0,"b":1}"#],
        &[r#"{"k":1}"#, r#"{"k":3,"a":0}"#, r#"{"a":0}"#, "[]"],
    );
}

/// Repeated groups that match the empty string once made left-recursive rules.
#[test]
fn patterns_repeating_nullable_groups_build() {
    check(json!({"type": "string", "pattern": "^(a?)*$"}), &[r#""""#, r#""aaa""#], &[r#""b""#]);
    check(json!({"type": "string", "pattern": "^(a*b*)*c$"}), &[r#""c""#, r#""abbac""#], &[r#""ab""#, r#""ca""#]);
    check(json!({"type": "string", "pattern": "^(?:(a|)+|x)+$"}), &[r#""""#, r#""axa""#], &[r#""b""#]);
    let nullable = ["(a|)*", "(a*)*", "(|a)+b", "(?:x?)*", "^(a*|b)+$", "(()|a)*", "^((a?)?)*$", "^(a{0,3})*$"];
    let more = ["^(?:[a-z]*)+$", "^(|)*$", "(a?b?)+", "^(\\s*)*$", "^(.*)*$", "^(a|b?)+$", "^(a{0,2}){2,5}$"];
    for p in nullable.iter().chain(&more) {
        for s in [
            json!({"type": "string", "pattern": p}),
            json!({"type": "string", "pattern": p, "maxLength": 5}),
            json!({"type": "object", "propertyNames": {"pattern": p}}),
            json!({"type": "object", "patternProperties": {*p: {"type": "integer"}}}),
        ] {
            if let Ok(g) = schema_to_gbnf(&s, &SchemaOptions::default()) {
                assert!(Matcher::from_gbnf(&g.gbnf).is_ok(), "{s}: the emitted grammar does not build");
            }
        }
    }
}

/// Whether the grammar accepts exactly this text (no relayout: escapes as written).
fn accepts_text(m: &Matcher, text: &str) -> bool {
    let mut m = m.clone();
    m.accept_bytes(text.as_bytes()).is_ok() && m.can_end()
}

/// Object keys holding `"`, `\`, control characters or DEL: named ones and extra ones (next
/// to named ones, where the key rule must exclude the names) are written in canonical JSON
/// escaping, each key one way, so a named key can never pass as an extra key.
#[test]
fn object_keys_with_escapes() {
    let props = json!({"a\"b": {"type": "integer"}, "c\\d": {"type": "string"}, "t\tb": {"type": "null"},
        "del\u{7f}": {"type": "null"}, "ctl\u{1}": {"type": "boolean"}, "\"": {"type": "integer"}});
    let named_good = [
        r#"{"a\"b":1,"c\\d":"x"}"#,
        r#"{"t\tb":null,"del\u007f":null,"ctl\u0001":true,"\"":2}"#,
        r#"{"ctl\u0001":false}"#,
    ];
    let named_bad = [r#"{"a\"b":"x"}"#, r#"{"c\\d":1}"#, r#"{"del\u007f":1}"#, r#"{"ctl\u0001":1}"#, r#"{"\"":"x"}"#];
    let extra = [
        r#"{"e\"":"x"}"#,
        r#"{"e\n":"x"}"#,
        r#"{"\\":"x"}"#,
        r#"{"a\"":"x"}"#,
        r#"{"a\"bc":"x"}"#,
        r#"{"\"\"":"x"}"#,
        r#"{"ctl\u0002":"x"}"#,
        r#"{"\u0000":"x"}"#,
        r#"{"del\u007f\u007f":"x"}"#,
        r#"{"t\t":"x"}"#,
        r#"{"":"x"}"#,
    ];
    // Open objects: any other key, any value.
    let s = json!({"type": "object", "properties": props});
    let all: Vec<&str> = named_good.iter().chain(&extra).copied().collect();
    check(s.clone(), &all, &named_bad);
    // Extra keys must hold strings.
    let mut typed = s.clone();
    typed["additionalProperties"] = json!({"type": "string"});
    let extra_bad: Vec<String> = extra.iter().map(|e| e.replace(r#":"x""#, ":1")).collect();
    let bad: Vec<&str> = named_bad.iter().copied().chain(extra_bad.iter().map(String::as_str)).collect();
    check(typed.clone(), &all, &bad);
    // Closed objects: only the names.
    let mut closed = s;
    closed["additionalProperties"] = json!(false);
    let bad: Vec<&str> = named_bad.iter().chain(&extra).copied().collect();
    check(closed, &named_good, &bad);
    // One spelling per key: a named key escaped another way is no extra key.
    let m = compile(&typed);
    assert!(accepts_text(&m, r#"{"e\"":"x"}"#));
    for other_spelling in [r#"{"a\u0022b":"x"}"#, r#"{"t\u0009b":"x"}"#, r#"{"\u0061":"x"}"#, r#"{"a\/":"x"}"#] {
        assert!(!accepts_text(&m, other_spelling), "{other_spelling}: non-canonical escapes are not generated");
    }
    // Enum and const values with DEL and controls are matched in the same canonical text.
    check(json!({"enum": ["x\u{7f}", "q\"\u{1}"]}), &[r#""x\u007f""#, r#""q\"\u0001""#], &[r#""x""#]);
    check(json!({"const": {"k\u{7f}": ["\u{7f}"]}}), &[r#"{"k\u007f":["\u007f"]}"#], &[r#"{"k":["\u007f"]}"#]);
}

/// Issue 31: `required` naming a key that `properties` does not list, next to
/// `patternProperties`: the key's value takes the schemas of the patterns it matches, or
/// `additionalProperties` when it matches none.
#[test]
fn required_names_outside_properties_with_pattern_properties() {
    let s = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "patternProperties": {"^x": {"type": "string"}},
        "additionalProperties": {"type": "boolean"},
        "required": ["x1", "y"]
    });
    check(
        s,
        &[r#"{"x1":"s","y":true}"#, r#"{"a":1,"x1":"","y":false,"x2":"t","z":true}"#],
        &[
            r#"{"x1":1,"y":true}"#,
            r#"{"x1":"s","y":"s"}"#,
            r#"{"y":true}"#,
            r#"{"x1":"s"}"#,
            r#"{"x1":"s","y":true,"z":1}"#,
        ],
    );
    // Closed to the patterns: a required name matching none can never appear.
    let closed =
        json!({"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": false, "required": ["y"]});
    assert!(schema_to_gbnf(&closed, &SchemaOptions::default()).is_err());
    let closed =
        json!({"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": false, "required": ["x"]});
    check(closed, &[r#"{"x":null}"#, r#"{"x":1,"xy":2}"#], &["{}", r#"{"x":1,"y":2}"#]);
}

/// Issue 31: `format` beside `const`/`enum`: the constants are checked against the format
/// (by the format's own grammar); only those that pass are emitted.
#[test]
fn format_beside_const_and_enum() {
    let s = json!({"type": "string", "format": "date", "enum": ["2020-01-31", "2020-02-30", "x", 3]});
    check(s, &[r#""2020-01-31""#], &[r#""2020-02-30""#, r#""x""#, "3"]);
    // Without `type`, non-strings are untouched by the format.
    check(
        json!({"format": "ipv4", "enum": ["1.2.3.4", "1.2.3", 7, null]}),
        &[r#""1.2.3.4""#, "7", "null"],
        &[r#""1.2.3""#],
    );
    check(json!({"format": "email", "const": "a@b.c"}), &[r#""a@b.c""#], &[r#""a@b""#]);
    // No constant passes: no value satisfies the schema.
    assert!(schema_to_gbnf(&json!({"format": "uuid", "const": "x"}), &SchemaOptions::default()).is_err());
}

/// Issue 31: `format` beside `minLength`/`maxLength`/`pattern` (refused before as "cannot be
/// enforced together"): the format's language, the bounds and the pattern are intersected as
/// automata, so all hold at once.
#[test]
fn format_beside_lengths_and_pattern() {
    let s = json!({"type": "string", "format": "date", "maxLength": 10});
    check(s, &[r#""2024-02-29""#], &[r#""2023-02-29""#, r#""2024-2-29""#, r#""x""#]);
    let s = json!({"type": "string", "format": "ipv4", "maxLength": 9});
    check(s, &[r#""1.2.3.4""#, r#""10.0.0.10""#], &[r#""10.0.0.100""#, r#""1.2.3""#]);
    let s = json!({"type": "string", "format": "email", "pattern": "@example\\.com$", "minLength": 14});
    check(s, &[r#""ab@example.com""#], &[r#""a@example.com""#, r#""ab@example.org""#]);
    let s = json!({"format": "uuid", "pattern": "^0"});
    check(s, &[r#""0bcdef01-2345-6789-abcd-ef0123456789""#, "1"], &[r#""abcdef01-2345-6789-abcd-ef0123456789""#]);
    // Bounds the format's strings never meet: no value satisfies the schema.
    assert!(schema_to_gbnf(&json!({"type": "string", "format": "date", "maxLength": 9}), &SchemaOptions::default())
        .is_err());
}

/// Issue 31: `oneOf` alternatives proved disjoint by their numeric ranges or by their string
/// languages (patterns, lengths, constants intersected as automata).
#[test]
fn one_of_disjoint_by_ranges_and_string_languages() {
    let s = json!({"oneOf": [
        {"type": "integer", "maximum": 0},
        {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
        {"type": "number", "exclusiveMinimum": 10}
    ]});
    check(s, &["-3", "0", "0.5", "10", "10.5", "1000"], &[r#""1""#, "null"]);
    // Touching inclusive bounds overlap (10 matches both): not provable, refused.
    let overlap = json!({"oneOf": [{"type": "number", "maximum": 10}, {"type": "number", "minimum": 10}]});
    assert!(schema_to_gbnf(&overlap, &SchemaOptions::default()).is_err());
    let s = json!({"oneOf": [
        {"type": "string", "pattern": "^[a-z]+$"},
        {"type": "string", "pattern": "^[0-9]+$", "maxLength": 3},
        {"type": "string", "minLength": 5, "pattern": "^[0-9]"}
    ]});
    check(s, &[r#""abc""#, r#""123""#, r#""12345""#], &[r#""1234""#, r#""""#, r#""a1""#]);
    // Patterns that share strings: refused.
    let shared = json!({"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]});
    assert!(schema_to_gbnf(&shared, &SchemaOptions::default()).is_err());
}

/// A property named `*` is a property like any other (it used to share its slot with the extra
/// keys, and valid instances carrying it were refused).
#[test]
fn property_named_star() {
    let s = json!({"type": "object", "properties": {"*": {"type": "integer"}}});
    check(
        s.clone(),
        &[r#"{"*":1}"#, r#"{"*":1,"b":"x"}"#, r#"{"b":2}"#, "{}"],
        &[r#"{"*":"x"}"#, r#"{"b":2,"*":"x"}"#],
    );
    let mut counted = s;
    counted["minProperties"] = json!(1);
    counted["required"] = json!(["*"]);
    check(counted, &[r#"{"*":1}"#, r#"{"*":1,"b":null}"#], &["{}", r#"{"b":null}"#]);
}

/// Every string over `alphabet` of at most `max` characters.
fn strings_over(alphabet: &[char], max: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut last = vec![String::new()];
    for _ in 0..max {
        last = last.iter().flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}"))).collect();
        out.extend(last.iter().cloned());
    }
    out
}

/// Issue 31: `format: duration` (RFC 3339 Appendix A, a regular language) is enforced exactly:
/// the grammar agrees with the `jsonschema` crate on every string of up to 6 characters over
/// the duration's letters and a digit, through the format's own rule and through the string
/// automaton (beside `maxLength`).
#[test]
fn duration_format_agrees_with_a_validator() {
    let plain = json!({"type": "string", "format": "duration"});
    let bounded = json!({"type": "string", "format": "duration", "maxLength": 5});
    for schema in [plain, bounded] {
        let c = compile(&schema);
        let validator = jsonschema::options().should_validate_formats(true).build(&schema).unwrap();
        let mut valid = 0;
        for s in strings_over(&['P', 'T', 'Y', 'M', 'W', 'D', 'H', 'S', '1'], 6) {
            let v = Value::from(s.as_str());
            let text = serde_json::to_string(&v).unwrap();
            let expected = validator.is_valid(&v);
            assert_eq!(accepts_text(&c, &text), expected, "{schema}: {text}");
            valid += usize::from(expected);
        }
        assert!(valid >= 10, "{schema}: only {valid} valid durations");
    }
    check(
        json!({"type": "string", "format": "duration"}),
        &[r#""P1Y2M3DT4H5M6S""#, r#""PT05S""#, r#""P12W""#, r#""P0D""#],
        &[r#""P1Y1D""#, r#""PT1H1S""#, r#""P1WT1H""#, r#""PT""#, r#""P""#, r#""p1d""#, r#""P1.5D""#],
    );
}

/// Issue 31: `format: hostname` stays refused, with the reason. RFC 1123 names alone are regular
/// but not small (a 253-character total over labels of at most 63 needs some 24,000 automaton
/// states), and JSON Schema's hostname (RFC 5890/5891, as the `jsonschema` crate checks it)
/// admits a label with `--` in its third and fourth characters only as a Punycode A-label that
/// decodes to a valid U-label, which no grammar of this size checks. llguidance accepts
/// `[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?` labels joined by dots, with no total length and
/// no A-label check: a superset of valid hostnames.
#[test]
fn hostname_format_is_refused_with_its_reason() {
    let e = schema_to_gbnf(&json!({"type": "string", "format": "hostname"}), &SchemaOptions::default()).unwrap_err();
    assert_eq!(e.keyword, "format");
    assert!(e.reason.contains("253") && e.reason.contains("A-label"), "{}", e.reason);
    // What llguidance's expression admits and the validator refuses.
    let validator = jsonschema::options().should_validate_formats(true).build(&json!({"format": "hostname"})).unwrap();
    let long = vec!["a".repeat(63); 4].join(".");
    for s in ["ab--cd", "xn--zz", long.as_str()] {
        assert!(!validator.is_valid(&Value::from(s)), "{s}");
    }
    assert!(validator.is_valid(&Value::from("xn--bcher-kva.example")));
}

/// Issue 31: `oneOf` string alternatives with formats are proved disjoint by languages that hold
/// every valid string of the format (the format's own for date, ipv4, uuid and duration; for
/// the others a wider one: an email has an `@`), so the subsets nucleus writes for email or
/// URI never make a proof unsound.
#[test]
fn one_of_disjoint_by_formats() {
    let s = json!({"oneOf": [
        {"type": "string", "format": "date"},
        {"type": "string", "format": "ipv4"},
        {"type": "string", "format": "email"},
        {"type": "string", "format": "duration"}
    ]});
    check(s, &[r#""2024-02-29""#, r#""1.2.3.4""#, r#""a@b.cd""#, r#""P1D""#], &[r#""x""#, r#""2023-02-29""#]);
    // Languages some valid email may share (`a@b.cd`, `x:y@z.io` is also a URI): not
    // provable, refused.
    for other in [json!({"type": "string", "pattern": "^a"}), json!({"type": "string", "format": "uri"})] {
        let s = json!({"oneOf": [{"type": "string", "format": "email"}, other]});
        assert!(schema_to_gbnf(&s, &SchemaOptions::default()).is_err(), "{s}");
    }
}

/// Issue 31: required names that no `properties` lists, beside open additional properties,
/// are required with any value (or the `additionalProperties` schema), in plain objects and
/// merged `allOf`s alike; keywords beside a `$ref` inside an `allOf` component are not lost.
#[test]
fn required_names_outside_properties() {
    let s = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"]});
    check(s, &[r#"{"b":null}"#, r#"{"a":1,"b":"x"}"#], &["{}", r#"{"a":1}"#, r#"{"a":"x","b":1}"#]);
    let s = json!({"type": "object", "required": ["b"], "additionalProperties": {"type": "integer"}});
    check(s, &[r#"{"b":1}"#, r#"{"b":1,"c":2}"#], &[r#"{"b":"x"}"#, r#"{"c":2}"#]);
    let s = json!({"allOf": [{"properties": {"a": {}}, "additionalProperties": true}, {"required": ["b"]}]});
    check(s, &[r#"{"b":1}"#, r#"{"a":1,"b":[]}"#, "3"], &[r#"{"a":1}"#, "{}"]);
    let s = json!({"$defs": {"A": {"type": "object", "properties": {"a": {}}}},
        "allOf": [{"$ref": "#/$defs/A", "required": ["b"]}, {"properties": {"c": {}}}]});
    if let Ok(g) = schema_to_gbnf(&s, &SchemaOptions::default()) {
        let c = compile(&s);
        assert!(!accepts(&c, r#"{"a":1}"#), "{s} dropped the required beside $ref\n{}", g.gbnf);
    }
}

/// Issue 31: keywords of another type beside `type` are ignored, as JSON Schema ignores them.
#[test]
fn keywords_of_other_types_beside_type() {
    check(json!({"type": "object", "items": {"type": "string"}}), &["{}", r#"{"a":[1]}"#], &["[]", r#"["a"]"#]);
    check(json!({"type": "integer", "maxLength": 1, "properties": {"a": {}}}), &["123"], &[r#""1""#]);
    check(json!({"type": ["string", "null"], "minimum": 1}), &[r#""0""#, "null"], &["0"]);
}

/// An `additionalProperties` schema no value satisfies closes the object; the object itself
/// is still satisfiable (it was called unsatisfiable, refused, and a `oneOf` alternative of it
/// dropped, so `{}` was rejected; found by the property test).
#[test]
fn unsatisfiable_additional_properties_close_the_object() {
    let closed = json!({"type": "object", "required": ["a"], "additionalProperties": false});
    let s = json!({"type": "object", "properties": {"b": {"type": "integer"}}, "additionalProperties": closed});
    check(s, &["{}", r#"{"b":1}"#], &[r#"{"c":{}}"#, r#"{"b":"x"}"#]);
    let s = json!({"anyOf": [{}, {}], "oneOf": [
        {"type": "object", "additionalProperties": {"not": {}}},
        {"type": "null"}
    ]});
    check(s, &["{}", "null"], &[r#"{"a":1}"#, "1"]);
}
