//! Property test: random schemas over the supported keywords, compiled strictly, must agree
//! with an independent validator (the `jsonschema` crate, draft 2020-12) on every instance:
//! random JSON values (valid and invalid) and random outputs of the grammar itself. A schema
//! the converter refuses is skipped (refusals are allowed; wrong answers are not). Instances
//! are fed as nucleus lays JSON out (compact, keys in an order the grammar accepts), their
//! numbers written in various JSON spellings of the same value.

use nucleus_grammar::json_schema::relayout::{feed_json_in, parse_json};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::Matcher;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

#[path = "common/schemas.rs"]
mod schemas;
use schemas::{schema, value};

/// Random complete outputs of the grammar (no whitespace), as text.
fn grammar_outputs(m: &Matcher, seed: u64, n: usize) -> Vec<String> {
    let alphabet: Vec<&[u8]> = vec![
        b"{", b"}", b"[", b"]", b",", b":", b"\"", b"a", b"b", b"c", b"d", b"0", b"1", b"2", b"5", b"9", b"-", b".",
        b"t", b"r", b"u", b"e", b"f", b"l", b"s", b"n",
    ];
    let mut s = seed | 1;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut out = Vec::new();
    for _ in 0..n {
        let mut cur = m.clone();
        let mut text = Vec::new();
        for step in 0..200 {
            if cur.can_end() && (rnd() % 3 == 0 || step > 120) {
                out.push(String::from_utf8(text).unwrap_or_default());
                break;
            }
            let start = (rnd() % alphabet.len() as u64) as usize;
            // Prefer closing bytes late in a walk so outputs end.
            let order: Vec<usize> = if step > 60 {
                let mut v: Vec<usize> = (0..alphabet.len()).collect();
                v.sort_by_key(|&i| !matches!(alphabet[i], b"}" | b"]" | b"\"" | b"0" | b"1"));
                v
            } else {
                (0..alphabet.len()).map(|i| (start + i) % alphabet.len()).collect()
            };
            let Some(&i) = order.iter().find(|&&i| cur.allows_bytes(alphabet[i])) else { break };
            cur.accept_bytes(alphabet[i]).unwrap();
            text.extend_from_slice(alphabet[i]);
        }
    }
    out
}

/// Whether every number in the JSON `text` has at most 15 significant digits and no exponent.
fn doubles_hold_every_number(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let num = &text[start..i];
                let digits = num.trim_start_matches(['-', '0', '.']).bytes().filter(u8::is_ascii_digit).count();
                if digits > 15 || num.contains(['e', 'E']) {
                    return false;
                }
            }
            _ => i += 1,
        }
    }
    true
}

/// `text` (compact JSON) with each number written in another spelling of the same value,
/// picked by `seed`: as it is, with `E+0`, with `.00` (or `00` after a fraction), or times
/// ten and `e-1`. The grammar check must judge the value, whatever the spelling.
fn respelled(text: &str, seed: u64) -> String {
    let mut out = String::new();
    let mut n = seed;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str(&text[start..i.min(b.len())]);
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let num = &text[start..i];
                let plain = !num.contains(['e', 'E']);
                n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                match (n >> 33) % 4 {
                    1 => out.push_str(&format!("{num}E+0")),
                    2 if plain && num.contains('.') => out.push_str(&format!("{num}00")),
                    2 if plain => out.push_str(&format!("{num}.00")),
                    3 if plain && !num.contains('.') && !matches!(num, "0" | "-0") => {
                        out.push_str(&format!("{num}0e-1"))
                    }
                    _ => out.push_str(num),
                }
            }
            _ => {
                out.push(b[i] as char);
                i += 1;
            }
        }
    }
    out
}

#[derive(Default, Debug)]
struct Tally {
    schemas: usize,
    refused: usize,
    instances: usize,
    valid: usize,
    outputs: usize,
}

fn check_case(schema: &Value, instances: &[Value], seed: u64, tally: &mut Tally) -> Result<(), TestCaseError> {
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| TestCaseError::fail(format!("{schema}: {e}")))?;
    let g = match schema_to_gbnf(schema, &SchemaOptions::default()) {
        Ok(g) => g,
        Err(e) => {
            if std::env::var_os("NUCLEUS_PROP_VERBOSE").is_some() {
                eprintln!("refused: {}: {}", e.keyword, e.reason);
            }
            tally.refused += 1;
            return Ok(());
        }
    };
    let m = Matcher::from_gbnf(&g.gbnf)
        .map_err(|e| TestCaseError::fail(format!("{schema}: the emitted grammar does not build: {e}")))?;
    tally.schemas += 1;
    for (k, v) in instances.iter().enumerate() {
        let text = respelled(&serde_json::to_string(v).unwrap(), seed ^ k as u64);
        let valid = validator.is_valid(&serde_json::from_str::<Value>(&text).unwrap());
        let verdict = feed_json_in(&m, &parse_json(&text).unwrap(), &g.member_orders);
        prop_assert_eq!(verdict.accepted, valid, "{} on {} (gave up: {})\n{}", schema, text, verdict.gave_up, g.gbnf);
        tally.instances += 1;
        tally.valid += usize::from(valid);
    }
    for text in grammar_outputs(&m, seed, 6) {
        // The validator compares numbers as doubles: skip outputs with numbers a double
        // cannot hold exactly (more than 15 significant digits, exponents).
        if !doubles_hold_every_number(&text) {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
        prop_assert!(validator.is_valid(&v), "{} accepts the invalid output {}\n{}", schema, text, g.gbnf);
        tally.outputs += 1;
    }
    Ok(())
}

#[test]
fn random_schemas_agree_with_a_validator() {
    // `NUCLEUS_PROP_CASES` / `NUCLEUS_PROP_SEED` run more (or other) cases locally.
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    let config =
        Config { cases: env("NUCLEUS_PROP_CASES").unwrap_or(1000), failure_persistence: None, ..Config::default() };
    let rng = match env("NUCLEUS_PROP_SEED") {
        None => TestRng::deterministic_rng(RngAlgorithm::ChaCha),
        Some(s) => TestRng::from_seed(RngAlgorithm::ChaCha, &[s as u8; 32]),
    };
    let mut runner = TestRunner::new_with_rng(config, rng);
    let tally = std::cell::RefCell::new(Tally::default());
    let strategy = (schema(), prop::collection::vec(value(), 12), any::<u64>());
    let result = runner
        .run(&strategy, |(schema, instances, seed)| check_case(&schema, &instances, seed, &mut tally.borrow_mut()));
    let t = tally.into_inner();
    eprintln!("{t:?}");
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(t.schemas >= 150, "too few schemas compiled: {t:?}");
}
