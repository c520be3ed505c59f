//! Shared test helpers: the vector file and llama.cpp's acceptance harness.
#![allow(dead_code)]

use nucleus_grammar::Matcher;
use serde_json::Value;

/// The JSONSchemaBench dev files (`testdata/jsonschemabench-dev/*.json`), sorted.
pub fn dev_schema_files() -> Vec<std::path::PathBuf> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/jsonschemabench-dev");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the dev schema folder")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// `testdata/vectors/llama-grammar.json`.
pub fn vectors() -> Value {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/vectors/llama-grammar.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("vector file")).unwrap()
}

/// Feeds an input item the way llama.cpp's test does: each text code point as token 0 with
/// that code point as its piece, `{"token": N}` as one whole token N. True iff fully accepted
/// and complete.
pub fn matches(m: &Matcher, input: &Value) -> bool {
    let mut m = m.clone();
    m.reset();
    let items: Vec<Value> = match input {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    for it in &items {
        match it {
            Value::String(s) => {
                for ch in s.chars() {
                    let mut b = [0u8; 4];
                    if m.accept_token(0, ch.encode_utf8(&mut b).as_bytes()).is_err() {
                        return false;
                    }
                }
            }
            Value::Object(o) => {
                let t = o["token"].as_i64().unwrap() as i32;
                if m.accept_token(t, format!("<[{t}]>").as_bytes()).is_err() {
                    return false;
                }
            }
            _ => panic!("bad input item"),
        }
    }
    m.can_end()
}
