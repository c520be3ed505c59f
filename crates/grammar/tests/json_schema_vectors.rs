//! llama.cpp's JSON-schema converter expectations (exact grammar text or failure), the
//! schema acceptance tests, and the resolves-to-string cases.

mod common;

use nucleus_grammar::json_schema::{resolves_to_string, schema_to_gbnf, SchemaOptions};
use nucleus_grammar::{Grammar, Matcher};

fn normalize(s: &str) -> String {
    s.trim().lines().map(|l| l.trim_start_matches([' ', '\t'])).collect::<Vec<_>>().join("\n")
}

#[test]
fn converter_output_matches_llama_cpp() {
    let v = common::vectors();
    let mut n = 0;
    for case in v["json_schema_to_grammar"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let expected = case["expected_grammar_or_status"].as_str().unwrap();
        let got = schema_to_gbnf(&case["schema"], &SchemaOptions::llama_cpp());
        if expected == "FAILURE" {
            assert!(got.is_err(), "{name}: expected failure, got {:?}", got.map(|g| g.gbnf));
        } else {
            let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(normalize(&got.gbnf), normalize(expected), "{name}");
            Grammar::parse(&got.gbnf, "root").unwrap_or_else(|e| panic!("{name}: {e}"));
            // The strict converter must compile these too, to a grammar that builds.
            if let Ok(s) = schema_to_gbnf(&case["schema"], &SchemaOptions::default()) {
                Grammar::parse(&s.gbnf, "root").unwrap_or_else(|e| panic!("{name} (strict): {e}\n{}", s.gbnf));
            }
        }
        n += 1;
    }
    eprintln!("converter cases passed: {n}");
}

/// Cases whose llama.cpp expectation contradicts JSON Schema, where strict mode follows the
/// standard (e.g. `{}` accepts any JSON value, not only objects).
const STRICT_DEVIATIONS: &[&str] = &["empty schema (object)", "min+max items", "min 0"];

#[test]
fn schema_integration() {
    let v = common::vectors();
    let mut n = 0;
    for case in v["schema_integration"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        for opts in [SchemaOptions::llama_cpp(), SchemaOptions { closed_objects: true, ..Default::default() }] {
            let g = match schema_to_gbnf(&case["schema"], &opts) {
                Ok(g) => g,
                Err(e) if opts.strict => {
                    eprintln!("{name}: strict mode refuses: {e}");
                    continue;
                }
                Err(e) => panic!("{name}: {e}"),
            };
            let m = Matcher::from_gbnf(&g.gbnf).unwrap_or_else(|e| panic!("{name}: {e}\n{}", g.gbnf));
            for (list, want) in [("passing", true), ("failing", false)] {
                for s in case[list].as_array().unwrap() {
                    let got = common::matches(&m, s);
                    if opts.strict && got != want && STRICT_DEVIATIONS.contains(&name) {
                        eprintln!("{name}: strict mode (JSON Schema semantics) differs from llama.cpp on {s}");
                        continue;
                    }
                    assert_eq!(got, want, "{name} (strict={}): {s}\n{}", opts.strict, g.gbnf);
                    n += 1;
                }
            }
        }
    }
    eprintln!("schema integration strings passed: {n}");
}

#[test]
fn resolves_to_string_cases() {
    let v = common::vectors();
    for case in v["resolves_to_string"].as_array().unwrap() {
        assert_eq!(
            resolves_to_string(&case["schema"]),
            case["resolves_to_string"].as_bool().unwrap(),
            "{}",
            case["name"]
        );
    }
}
