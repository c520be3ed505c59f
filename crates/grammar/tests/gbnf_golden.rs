//! The converter's printed GBNF, pinned: for the 100 dev schemas and 1000 property-test
//! schemas, in strict and compat mode, a hash of the GBNF text (or of the error) must equal
//! the one recorded in `testdata/jsonschema-gbnf-golden.txt`. Any change to the converter's
//! output, however small, shows here; a deliberate change re-records the list with
//! `NUCLEUS_BLESS=1 cargo test --release -p nucleus-grammar --test gbnf_golden` and says why
//! in its commit.

mod common;
#[path = "common/schemas.rs"]
mod schemas;

use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/jsonschema-gbnf-golden.txt");

/// 64-bit FNV-1a: stable across Rust versions (the std hasher is not promised to be).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// One line per case and mode: `name mode ok|err hash`, the hash of the GBNF text or of the
/// error's message.
fn outcome(name: &str, schema: &Value, out: &mut String) {
    for (mode, opts) in [("strict", SchemaOptions::default()), ("compat", SchemaOptions::llama_cpp())] {
        let (kind, h) = match schema_to_gbnf(schema, &opts) {
            Ok(c) => ("ok", fnv(c.gbnf.as_bytes())),
            Err(e) => ("err", fnv(e.to_string().as_bytes())),
        };
        out.push_str(&format!("{name} {mode} {kind} {h:016x}\n"));
    }
}

#[test]
fn printed_gbnf_is_unchanged() {
    let mut got = String::new();
    for f in common::dev_schema_files() {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        outcome(&format!("dev/{name}"), &v["schema"], &mut got);
    }
    let mut runner = TestRunner::new_with_rng(
        Config { failure_persistence: None, ..Config::default() },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = schemas::schema();
    for i in 0..1000 {
        let schema = strategy.new_tree(&mut runner).expect("a schema").current();
        outcome(&format!("prop/{i:04}"), &schema, &mut got);
    }
    if std::env::var_os("NUCLEUS_BLESS").is_some() {
        std::fs::write(GOLDEN, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(GOLDEN).expect("the golden list (NUCLEUS_BLESS=1 records it)");
    let diffs: Vec<String> =
        want.lines().zip(got.lines()).filter(|(w, g)| w != g).map(|(w, g)| format!("want {w}\n got {g}")).collect();
    assert_eq!(want.lines().count(), got.lines().count(), "case count changed");
    assert!(diffs.is_empty(), "{} outputs changed:\n{}", diffs.len(), diffs.join("\n"));
}
