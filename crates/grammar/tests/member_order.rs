//! Laying documents out in the schema grammar's own member order (`MemberOrders`): a large
//! document with many optional members in an order of its own is accepted without searching,
//! refusals of documents whose order is forced are final, and a check that cannot decide says
//! so (`gave_up`) instead of rejecting.

use nucleus_grammar::json_schema::relayout::{feed_json, feed_json_in, parse_json, Verdict};
use nucleus_grammar::json_schema::{schema_to_gbnf, CompiledSchema, SchemaOptions};
use nucleus_grammar::Matcher;
use serde_json::{json, Value};

fn fixture(name: &str) -> String {
    let p = format!("{}/../../testdata/grammar-check/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn compile(schema: &Value) -> (CompiledSchema, Matcher) {
    let c = schema_to_gbnf(schema, &SchemaOptions::default()).unwrap_or_else(|e| panic!("{schema}: refused: {e}"));
    let m = Matcher::new(c.grammar().unwrap());
    (c, m)
}

fn verdict(c: &CompiledSchema, m: &Matcher, doc: &str) -> Verdict {
    feed_json_in(m, &parse_json(doc).unwrap(), &c.member_orders)
}

#[test]
fn composer_document_accepted_in_the_grammars_order() {
    let schema: Value = serde_json::from_str(&fixture("composer.schema.json")).unwrap();
    let doc = fixture("composer.json");
    assert!(doc.len() > 3000);
    let (c, m) = compile(&schema);
    let v = verdict(&c, &m, &doc);
    assert!(v.accepted && !v.gave_up, "{v:?}");
    // The layout starts with the members in the schema's order, not the document's.
    assert!(v.text.starts_with(r#"{"name":"acme/widget-toolkit","description":"#), "{}", v.text);
    // Without the orders the document's own order is searched from: never a rejection of
    // this valid document, at worst undecided.
    let plain = feed_json(&m, &parse_json(&doc).unwrap());
    assert!(plain.accepted || plain.gave_up, "{plain:?}");
}

#[test]
fn composer_refusals_are_final() {
    let schema: Value = serde_json::from_str(&fixture("composer.schema.json")).unwrap();
    let (c, m) = compile(&schema);
    let doc: Value = serde_json::from_str(&fixture("composer.json")).unwrap();
    let edits: [(&str, Value); 4] = [
        ("/authors/1/nickname", json!("jr")),     // authors are closed
        ("/prefer-stable", json!("yes")),         // a boolean
        ("/minimum-stability", json!("nightly")), // not in the enum
        ("/config/process-timeout", json!(1.5)),  // an integer
    ];
    for (ptr, val) in edits {
        let mut bad = doc.clone();
        let (parent, key) = ptr.rsplit_once('/').unwrap();
        bad.pointer_mut(parent).unwrap().as_object_mut().unwrap().insert(key.into(), val);
        let v = verdict(&c, &m, &bad.to_string());
        assert!(!v.accepted && !v.gave_up && v.failure.is_some(), "{ptr}: {v:?}");
    }
    // A required member missing: refused at the author's closing brace.
    let mut bad = doc.clone();
    bad.pointer_mut("/authors/1").unwrap().as_object_mut().unwrap().remove("name");
    let v = verdict(&c, &m, &bad.to_string());
    assert!(!v.accepted && !v.gave_up, "{v:?}");
}

#[test]
fn alternatives_with_different_orders() {
    // Two object rules writing the same names in opposite orders: the best fit is tried
    // first, the other order found by the search; both kinds of document are accepted.
    let s = json!({"type": "array", "items": {"anyOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
         "required": ["a"], "additionalProperties": false},
        {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}},
         "required": ["b"], "additionalProperties": false}
    ]}});
    let (c, m) = compile(&s);
    for good in [r#"[{"b":1,"a":2}]"#, r#"[{"a":"x","b":"y"}]"#, r#"[{"a":"x","b":"y"},{"b":1,"a":2}]"#] {
        let v = verdict(&c, &m, good);
        assert!(v.accepted, "{good}: {v:?}");
    }
    // Refused: mixed types fit neither rule. The orders are not forced inside the array, so
    // the answer may be undecided, but never acceptance.
    let v = verdict(&c, &m, r#"[{"a":1,"b":"y"}]"#);
    assert!(!v.accepted, "{v:?}");
}

#[test]
fn constants_keep_their_member_order() {
    let s = json!({"enum": [{"z": 1, "a": 2}, {"a": 1, "z": 2}]});
    let (c, m) = compile(&s);
    for (doc, ok) in [(r#"{"a":2,"z":1}"#, true), (r#"{"z":2,"a":1}"#, true), (r#"{"a":1,"z":1}"#, false)] {
        let v = verdict(&c, &m, doc);
        assert_eq!(v.accepted, ok, "{doc}: {v:?}");
        assert!(!v.gave_up, "{doc}: {v:?}");
    }
}
