//! `nucleus grammar check --json-schema`: a schema (before the first NUL) and a document
//! (after it). The JSON reader and the key-order relayout must not panic on any text, and a
//! layout reported as accepted must be accepted when its bytes are fed to the grammar.

use nucleus_grammar::json_schema::relayout::{feed_json_in, parse_json};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::Matcher;

/// The check: panics on a violated invariant.
pub fn check(data: &[u8]) {
    let (schema, doc) = crate::common::split(data);
    let Ok(doc) = std::str::from_utf8(doc) else { return };
    let Ok(doc) = parse_json(doc) else { return };
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(schema) else { return };
    let opts = SchemaOptions { lenient: true, ..SchemaOptions::default() };
    let Ok(compiled) = schema_to_gbnf(&schema, &opts) else { return };
    let Ok(grammar) = compiled.grammar() else { return };
    let m = Matcher::new(grammar);
    let verdict = feed_json_in(&m, &doc, &compiled.member_orders);
    if verdict.accepted {
        let mut again = m.clone();
        assert!(again.accept_bytes(verdict.text.as_bytes()).is_ok(), "accepted layout refused: {:?}", verdict.text);
        assert!(again.can_end(), "accepted layout cannot end: {:?}", verdict.text);
    }
}
