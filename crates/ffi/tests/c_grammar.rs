//! C programs linked with libnucleus: grammar bitmasks (GBNF and JSON Schema) along a JSON
//! document equal nucleus-grammar's masks from Rust, packed bit for bit; and the token-trie
//! design's cases (empty descriptor, masking, walking to the terminal, fast-forward).

mod common;

use std::sync::Arc;

use nucleus_grammar::json_schema::{schema_to_grammar, SchemaOptions};
use nucleus_grammar::{GrammarSampler, VocabIndex};

/// A small vocabulary: every single byte, then multi-byte JSON pieces, then `</s>` (EOG).
fn vocab() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for s in [
        "{\"",
        "\":",
        "\",",
        "\"}",
        "name",
        "age",
        "Ann",
        "tags",
        "true",
        "false",
        "null",
        "42",
        "4",
        ", \"",
        "\": ",
        "[\"",
        "\"]",
        " {",
        "  ",
        "é",
        "\u{1F600}",
        "a\"b",
        "\\n",
    ] {
        v.push(s.as_bytes().to_vec());
    }
    v.push(b"</s>".to_vec());
    v
}

/// Greedy longest-match tokenization of `text` over `vocab` (EOG excluded).
fn tokenize(vocab: &[Vec<u8>], text: &[u8]) -> Vec<i32> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let (id, len) = vocab[..vocab.len() - 1]
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty() && text[at..].starts_with(p))
            .map(|(i, p)| (i, p.len()))
            .max_by_key(|&(i, l)| (l, std::cmp::Reverse(i)))
            .unwrap();
        out.push(id as i32);
        at += len;
    }
    out
}

fn write_vocab(path: &std::path::Path, vocab: &[Vec<u8>]) {
    let mut b = (vocab.len() as u32).to_le_bytes().to_vec();
    for p in vocab {
        b.extend_from_slice(&(p.len() as u32).to_le_bytes());
        b.extend_from_slice(p);
    }
    std::fs::write(path, b).unwrap();
}

/// The packed words of nucleus-grammar's mask, as the C side prints them.
fn words(mask: &nucleus_grammar::TokenMask, n_vocab: usize) -> String {
    let mut w = vec![0u32; n_vocab.div_ceil(32)];
    for id in mask.ids() {
        w[id as usize / 32] |= 1 << (id % 32);
    }
    w.iter().map(|x| format!(" {x:08x}")).collect()
}

/// Runs the C walk and compares every step's mask with the Rust grammar's.
fn walk(kind: &str, grammar_text: &str, mut rust: GrammarSampler, vocab: &[Vec<u8>], doc: &str, tag: &str) {
    let exe = common::build_c("grammar_walk", &[]);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("nucleus-ffi-c");
    let vocab_file = dir.join(format!("vocab-{tag}.bin"));
    let grammar_file = dir.join(format!("grammar-{tag}.txt"));
    write_vocab(&vocab_file, vocab);
    std::fs::write(&grammar_file, grammar_text).unwrap();
    let mut tokens = tokenize(vocab, doc.as_bytes());
    tokens.push(vocab.len() as i32 - 1); // end of generation
    let mut args: Vec<String> = vec![
        vocab_file.display().to_string(),
        (vocab.len() - 1).to_string(),
        kind.into(),
        grammar_file.display().to_string(),
    ];
    args.extend(tokens.iter().map(|t| t.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::run(&exe, &argv);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), tokens.len() + 2, "{out}");
    for (i, &tok) in tokens.iter().chain([&-1]).enumerate() {
        let want = format!("mask {i}:{}", words(&rust.mask(), vocab.len()));
        assert_eq!(lines[i], want, "{tag}: step {i} of {doc:?}");
        if tok >= 0 {
            rust.try_accept(tok).unwrap_or_else(|e| panic!("{tag}: the document is refused at step {i}: {e}"));
        }
    }
    assert_eq!(lines[tokens.len() + 1], format!("end: {} {}", rust.can_end() as i32, rust.is_complete() as i32));
}

fn index(vocab: &[Vec<u8>]) -> Arc<VocabIndex> {
    let mut eog = vec![false; vocab.len()];
    eog[vocab.len() - 1] = true;
    Arc::new(VocabIndex::from_pieces(vocab.iter().map(|p| p.clone().into_boxed_slice()).collect(), eog))
}

#[test]
fn gbnf_masks_equal_nucleus_grammar() {
    let v = vocab();
    let gbnf = nucleus_grammar::builtin::text("json").unwrap();
    let rust = GrammarSampler::with_index(index(&v), gbnf, "root").unwrap();
    let doc = r#"{"name": "Ann", "age": 42, "tags": ["a\"b\n", "é😀", true, false, null], "x": {}}"#;
    walk("gbnf", gbnf, rust, &v, doc, "json-gbnf");
}

#[test]
fn json_schema_masks_equal_nucleus_grammar() {
    let v = vocab();
    let schema = r#"{"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0}, "tags": {"type": "array", "items": {"type": "boolean"}}},
        "required": ["name", "age"], "additionalProperties": false}"#;
    let value: serde_json::Value = serde_json::from_str(schema).unwrap();
    let grammar = schema_to_grammar(&value, &SchemaOptions::default()).unwrap();
    let rust = GrammarSampler::from_grammar(index(&v), grammar);
    walk("schema", schema, rust, &v, r#"{"name": "Ann", "age": 42, "tags": [true, false]}"#, "schema");
}

#[test]
fn token_trie_design_cases() {
    let exe = common::build_c("token_trie", &[]);
    let out = common::run_checked(&exe, &[]);
    assert!(out.starts_with("ok "), "{out}");
}
