//! The rule IR on every dev schema, strict and compat: the grammar built from the converter's
//! rules equals the grammar its printed GBNF parses to, and that text parses back to rules
//! that print it again (one lexer, no text in between, nothing lost for people).

mod common;

use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::parse::parse_rules;
use nucleus_grammar::Grammar;

fn layout(g: &Grammar) -> String {
    format!("{:?}|{:?}|{:?}|{:?}|{}", g.elems, g.rules, g.classes, g.symbol_ids, g.start)
}

#[test]
fn dev_schemas_build_from_rules_as_from_text() {
    let mut built = 0;
    for f in common::dev_schema_files() {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for opts in [SchemaOptions::default(), SchemaOptions::llama_cpp()] {
            let Ok(c) = schema_to_gbnf(&v["schema"], &opts) else { continue };
            let name = f.display();
            let from_text = Grammar::parse(&c.gbnf, "root");
            match (c.grammar(), from_text) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(layout(&a), layout(&b), "{name}");
                    built += 1;
                }
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{name}: from rules {:?}, from text {:?}", a.err(), b.err()),
            }
            // Compat mode copies llama.cpp, whose text for some patterns does not parse.
            if let Ok(set) = parse_rules(&c.gbnf, None) {
                assert_eq!(set.to_gbnf(), c.gbnf, "{name}");
            }
        }
    }
    assert!(built >= 170, "only {built} grammars built");
}
