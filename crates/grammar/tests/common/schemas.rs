//! The random schema and value strategies of the property test, shared with the golden
//! GBNF test (`gbnf_golden.rs`), which pins the converter's output on the same schemas.
#![allow(dead_code)]

use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// A small JSON value: numbers are integers or decimals with a non-zero fraction (instances
/// are written in other spellings of their value by [`respelled`]).
pub fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-12i64..12).prop_map(Value::from),
        (-1200i64..1200).prop_filter("a fraction", |n| n % 100 != 0).prop_map(|n| json!(n as f64 / 100.0)),
        "[ab]{0,4}".prop_map(Value::from),
        prop::sample::select(vec![
            "2020-02-29",
            "2021-02-29",
            "1999-12-31",
            "2020-01-31",
            "1.2.3.4",
            "256.1.1.1",
            "P1Y2M3D",
            "PT10M5S",
            "P1W",
            "P1Y1D",
            "PT1H1S"
        ])
        .prop_map(Value::from),
    ]
}

pub fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(vec!["a", "b", "c", "d"]), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// A bound: an integer or a decimal, of either sign.
pub fn bound() -> impl Strategy<Value = Value> {
    prop_oneof![(-10i64..10).prop_map(Value::from), (-1000i64..1000).prop_map(|n| json!(n as f64 / 100.0))]
}

pub fn numeric(ty: &'static str) -> impl Strategy<Value = Value> {
    let kw = prop::sample::select(vec!["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]);
    prop::collection::vec((kw, bound()), 0..3).prop_map(move |bs| {
        let mut m = Map::new();
        m.insert("type".into(), ty.into());
        for (k, b) in bs {
            m.insert(k.to_string(), b);
        }
        Value::Object(m)
    })
}

pub fn string_schema() -> impl Strategy<Value = Value> {
    (
        prop::option::of(0u64..3),
        prop::option::of(0u64..4),
        prop::option::of(prop::sample::select(vec!["^a", "b$", "^[ab]*$", "a", "^(ab)+$", "^(a?b?)*$", "^(a*|b)+$"])),
    )
        .prop_map(|(min, max, pat)| {
            let mut m = Map::new();
            m.insert("type".into(), "string".into());
            if let Some(n) = min {
                m.insert("minLength".into(), n.into());
            }
            if let Some(n) = max {
                m.insert("maxLength".into(), n.into());
            }
            if let Some(p) = pat {
                m.insert("pattern".into(), p.into());
            }
            Value::Object(m)
        })
}

/// A schema without `type` whose one keyword constrains a single type.
pub fn typeless() -> impl Strategy<Value = Value> {
    prop_oneof![
        bound().prop_map(|b| json!({ "minimum": b })),
        bound().prop_map(|b| json!({ "exclusiveMaximum": b })),
        (0u64..3).prop_map(|n| json!({ "maxLength": n })),
        (1u64..3).prop_map(|n| json!({ "minItems": n })),
        Just(json!({"required": ["a"]})),
        Just(json!({"pattern": "^a"})),
        Just(json!({"additionalProperties": false})),
        Just(json!({"maxProperties": 1})),
        Just(json!({"propertyNames": {"pattern": "^[ab]$"}})),
        Just(json!({"patternProperties": {"^a": {"type": "integer"}}})),
        Just(json!({"uniqueItems": true, "items": {"enum": [1, "a", null]}})),
    ]
}

pub fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        Just(json!({"type": "null"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": ["string", "null"]})),
        numeric("integer"),
        numeric("number"),
        (prop::sample::select(vec![json!(0.5), json!(0.01), json!(2), json!(3), json!(1)]), numeric("number"))
            .prop_map(|(step, mut s)| {
                s["multipleOf"] = step;
                s
            }),
        (prop::sample::select(vec![json!(2), json!(5), json!(0.5)]), numeric("integer")).prop_map(|(step, mut s)| {
            s["multipleOf"] = step;
            s
        }),
        Just(json!({"type": "string", "format": "date"})),
        // `format` beside `enum`: the constants are checked against the format.
        (
            prop::sample::select(vec!["date", "ipv4", "duration"]),
            prop::sample::subsequence(
                vec![
                    json!("P1W"),
                    json!("P1WT1H"),
                    json!("2020-01-31"),
                    json!("2020-02-30"),
                    json!("2024-02-29"),
                    json!("2023-02-29"),
                    json!("1.2.3.4"),
                    json!("256.1.1.1"),
                    json!("a"),
                    json!(1),
                ],
                1..5
            )
        )
            .prop_map(|(f, v)| json!({ "format": f, "enum": v })),
        // `format` beside lengths and a pattern: intersected as automata.
        (
            prop::sample::select(vec!["date", "ipv4", "duration"]),
            prop::option::of(6u64..12),
            prop::option::of(7u64..11),
            prop::option::of(prop::sample::select(vec!["^2", "9$", "^1\\.", "-29$", "T1"])),
        )
            .prop_map(|(f, min, max, pat)| {
                let mut m = Map::new();
                m.insert("type".into(), "string".into());
                m.insert("format".into(), f.into());
                if let Some(n) = min {
                    m.insert("minLength".into(), n.into());
                }
                if let Some(n) = max {
                    m.insert("maxLength".into(), n.into());
                }
                if let Some(p) = pat {
                    m.insert("pattern".into(), p.into());
                }
                Value::Object(m)
            }),
        prop::collection::vec("[ab]{0,2}", 1..3).prop_map(|v| json!({"type": "string", "not": {"enum": v}})),
        string_schema(),
        prop::collection::vec(scalar(), 1..4).prop_map(|v| json!({ "enum": v })),
        scalar().prop_map(|v| json!({ "const": v })),
        typeless(),
    ]
}

pub fn schema() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 20, 3, |inner| {
        let props = prop::collection::vec(prop::option::of(inner.clone()), 3);
        prop_oneof![
            (inner.clone(), prop::option::of(0u64..3), prop::option::of(1u64..4), any::<bool>()).prop_map(
                |(items, min, max, unique)| {
                    let mut m = json!({"type": "array", "items": items});
                    if let Some(n) = min {
                        m["minItems"] = n.into();
                    }
                    if let Some(n) = max {
                        m["maxItems"] = n.into();
                    }
                    if unique {
                        m["uniqueItems"] = true.into();
                    }
                    m
                }
            ),
            (
                prop::collection::vec(inner.clone(), 1..3),
                prop::option::of(prop_oneof![Just(json!(false)), inner.clone()])
            )
                .prop_map(|(tuple, rest)| {
                    let mut m = json!({"type": "array", "prefixItems": tuple});
                    if let Some(r) = rest {
                        m["items"] = r;
                    }
                    m
                }),
            (
                props,
                0usize..8,
                0u8..3,
                inner.clone(),
                any::<bool>(),
                prop::option::of(0u64..3),
                prop::option::of(inner.clone())
            )
                .prop_map(|(ps, req, addl, addl_schema, dep, min_props, pattern)| {
                    let mut properties = Map::new();
                    for (k, p) in ["a", "b", "c"].iter().zip(ps) {
                        if let Some(p) = p {
                            properties.insert(k.to_string(), p);
                        }
                    }
                    let required: Vec<&str> =
                        ["a", "b", "c"].iter().enumerate().filter(|(i, _)| req & (1 << i) != 0).map(|x| *x.1).collect();
                    let mut m = json!({"type": "object", "properties": properties, "required": required});
                    match addl {
                        1 => m["additionalProperties"] = false.into(),
                        2 => m["additionalProperties"] = addl_schema,
                        _ => {}
                    }
                    if dep {
                        m["dependentRequired"] = json!({"a": ["b"]});
                    }
                    if let Some(n) = min_props {
                        m["minProperties"] = n.into();
                    }
                    // Names "b" and "d" (required or not, listed in properties or not) also
                    // take a pattern's schema.
                    if let Some(p) = pattern {
                        m["patternProperties"] = json!({ "^[bd]": p });
                    }
                    m
                }),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| json!({ "anyOf": v })),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| json!({ "oneOf": v })),
            prop::collection::vec(inner.clone(), 2..3).prop_map(|v| json!({ "allOf": v })),
            (prop::collection::vec(inner.clone(), 2..3), prop::collection::vec(inner.clone(), 2..3))
                .prop_map(|(a, o)| json!({ "anyOf": a, "oneOf": o })),
            inner.clone().prop_map(|v| json!({ "items": v })),
            inner.prop_map(|v| json!({ "properties": { "a": v } })),
        ]
    })
}
