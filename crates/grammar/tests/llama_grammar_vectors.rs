//! Every parser, integration and build-failure case of llama.cpp's grammar tests
//! (`testdata/vectors/llama-grammar.json`).

mod common;

use nucleus_grammar::{BuildError, Grammar, Matcher};

#[test]
fn parser_cases() {
    let v = common::vectors();
    let mut n = 0;
    for case in v["parser_cases"]["parse_ok"].as_array().unwrap() {
        let text = case["grammar"].as_str().unwrap();
        let g = Grammar::parse(text, "root").unwrap_or_else(|e| panic!("{text}: {e}"));
        for (name, id) in case["symbol_ids"].as_object().unwrap() {
            assert_eq!(g.symbol_ids.get(name).copied(), Some(id.as_u64().unwrap() as u32), "{text}: symbol {name}");
        }
        assert_eq!(g.symbol_ids.len(), case["symbol_ids"].as_object().unwrap().len(), "{text}");
        n += 1;
    }
    for text in v["parser_cases"]["parse_fail"].as_array().unwrap() {
        let text = text.as_str().unwrap();
        assert!(matches!(Grammar::parse(text, "root"), Err(BuildError::Parse(_))), "{text} should fail");
        n += 1;
    }
    eprintln!("parser cases passed: {n}");
}

#[test]
fn build_failures() {
    let v = common::vectors();
    for case in v["build_failures"].as_array().unwrap() {
        let text = case["grammar"].as_str().unwrap();
        let r = Grammar::parse(text, "root");
        assert!(r.is_err(), "{} should fail to build", case["name"]);
    }
}

#[test]
fn grammar_integration() {
    let v = common::vectors();
    let mut n = 0;
    for case in v["grammar_integration"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let m = Matcher::from_gbnf(case["grammar"].as_str().unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        for s in case["passing"].as_array().unwrap() {
            assert!(common::matches(&m, s), "{name}: should accept {s}");
            n += 1;
        }
        for s in case["failing"].as_array().unwrap() {
            assert!(!common::matches(&m, s), "{name}: should reject {s}");
            n += 1;
        }
    }
    eprintln!("integration strings passed: {n}");
}
