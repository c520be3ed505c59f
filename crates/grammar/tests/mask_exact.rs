//! The trie-walk mask (with its shortcuts: seeded loop sets, uniform runs, bulk subtrees,
//! shared partial UTF-8 states) equals the token-by-token check, at every step of every
//! JSONSchemaBench dev schema's first valid instance, on a vocabulary built to stress the
//! shortcuts: long letter and digit runs (longer than a run is followed), whitespace runs,
//! quotes and escapes inside words, multi-byte characters, cut UTF-8 sequences and the
//! invalid lead bytes 0xC0, 0xC1 and 0xF8..0xFF.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use nucleus_grammar::json_schema::relayout::{feed_json_in, parse_json};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::{GrammarSampler, Matcher, VocabIndex};

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn stress_vocab() -> Vec<Box<[u8]>> {
    let mut rng = Lcg(7);
    let mut seen = HashSet::new();
    let mut out: Vec<Box<[u8]>> = Vec::new();
    let mut push = |v: Vec<u8>, out: &mut Vec<Box<[u8]>>| {
        if !v.is_empty() && seen.insert(v.clone()) {
            out.push(v.into_boxed_slice());
        }
    };
    for b in 1..=255u8 {
        push(vec![b], &mut out);
    }
    let pieces: &[&str] = &[
        "\"", "\":", "\",", "{\"", "\"}", "\":\"", "\",\"", "],", "},", "[", "]", ": ", ", ", "\\n", "\\\"", "\\u00",
        "\\", "true", "false", "null", "-", ".", "e+", "E-", "0", "00", " ", "  ", "\n", "\t", "é", "日本", "🙂", "ж",
    ];
    let letters = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-0123456789";
    for p in pieces {
        push(p.as_bytes().to_vec(), &mut out);
    }
    while out.len() < 9000 {
        let mut t = Vec::new();
        match rng.below(10) {
            0..=3 => {
                // words, sometimes very long (past the run budget)
                let len = if rng.below(8) == 0 { 30 + rng.below(80) } else { 1 + rng.below(10) };
                if rng.below(2) == 0 {
                    t.push(b' ');
                }
                for _ in 0..len {
                    t.push(letters[rng.below(letters.len())]);
                }
            }
            4 => {
                let len = 1 + rng.below(40);
                for _ in 0..len {
                    t.push(b'0' + rng.below(10) as u8);
                }
            }
            5 => {
                let len = 1 + rng.below(40);
                t.extend(std::iter::repeat_n(if rng.below(2) == 0 { b' ' } else { b'\n' }, len));
            }
            6 => {
                for _ in 0..1 + rng.below(4) {
                    t.extend_from_slice(pieces[rng.below(pieces.len())].as_bytes());
                    if rng.below(2) == 0 {
                        t.push(letters[rng.below(letters.len())]);
                    }
                }
            }
            7 => {
                for _ in 0..1 + rng.below(4) {
                    t.extend_from_slice(
                        ["é", "日", "本", "語", "ж", "🙂", "—", "’", "\u{80}", "\u{7FF}"][rng.below(10)].as_bytes(),
                    );
                }
                if rng.below(3) == 0 {
                    t.pop(); // cut sequence
                }
            }
            8 => {
                // invalid leads and stray continuation bytes in context
                let bad = [0xC0u8, 0xC1, 0xF5, 0xF8, 0xFB, 0xFF, 0x80, 0xBF][rng.below(8)];
                t.push(letters[rng.below(letters.len())]);
                t.push(bad);
                for _ in 0..rng.below(3) {
                    t.push(0x80 + rng.below(64) as u8);
                }
            }
            _ => {
                for _ in 0..1 + rng.below(6) {
                    let set = b"abc:/._-=\"\\ {}[],";
                    t.push(set[rng.below(set.len())]);
                }
            }
        }
        push(t, &mut out);
    }
    out.push(b"</s>".to_vec().into_boxed_slice());
    out
}

fn tokenize(map: &HashMap<Vec<u8>, i32>, text: &[u8]) -> Vec<i32> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let mut l = (text.len() - i).min(120);
        while l > 1 && !map.contains_key(&text[i..i + l]) {
            l -= 1;
        }
        out.push(map[&text[i..i + l]]);
        i += l;
    }
    out
}

#[test]
fn walk_mask_equals_token_by_token_check_on_dev_schemas() {
    check_dev_schemas(false);
}

/// The same with every looping state's exits walked by their endings trie (kept by default only
/// when few tokens leave the loop, as in a real vocabulary's string body; this vocabulary's
/// words are full of quotes and escapes, so by default its exits are walked in the trie).
#[test]
fn walk_mask_with_loop_endings_equals_token_by_token_check() {
    check_dev_schemas(true);
}

fn check_dev_schemas(endings_always: bool) {
    let pieces = stress_vocab();
    let mut eog = vec![false; pieces.len()];
    *eog.last_mut().unwrap() = true;
    let n = pieces.len();
    let mut index = VocabIndex::from_pieces(pieces, eog);
    if endings_always {
        index.keep_loop_endings_always();
    }
    let vocab = Arc::new(index);
    let mut map = HashMap::new();
    for id in 0..n as i32 - 1 {
        map.entry(vocab.piece(id).to_vec()).or_insert(id);
    }
    let files = common::dev_schema_files();
    let (mut schemas, mut steps) = (0, 0);
    for f in &files {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let Ok(g) = schema_to_gbnf(&v["schema"], &SchemaOptions::default()) else { continue };
        let Some(t) = v["tests"].as_array().unwrap().iter().find(|t| t["valid"] == true) else { continue };
        let doc = parse_json(&t["data"].to_string()).unwrap();
        let verdict = feed_json_in(&Matcher::from_gbnf(&g.gbnf).unwrap(), &doc, &g.member_orders);
        if !verdict.accepted {
            continue;
        }
        schemas += 1;
        let mut s = GrammarSampler::with_index(vocab.clone(), &g.gbnf, "root").unwrap();
        for &tok in tokenize(&map, verdict.text.as_bytes()).iter().take(40) {
            let mask = s.mask();
            for id in 0..n as i32 {
                assert_eq!(
                    mask.contains(id),
                    s.is_allowed(id),
                    "{}: token {id} {:?}",
                    f.display(),
                    String::from_utf8_lossy(vocab.piece(id))
                );
            }
            assert!(mask.contains(tok));
            s.try_accept(tok).unwrap();
            steps += 1;
        }
    }
    assert!(schemas >= 75, "only {schemas} schemas checked");
    eprintln!("{schemas} schemas, {steps} steps: masks equal the token-by-token check");
}
