//! Mask speed on synthetic BPE-like vocabularies (49,152 and 262,144 tokens): time per token
//! mask for the JSON grammar along a JSON document, and percentiles over the JSONSchemaBench
//! dev schemas' valid instances. Modes: `walk` (per-state mask cache off: a full trie walk
//! each step, automaton warm), `cached` (steady-state generation), `cold` (fresh automaton).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nucleus_grammar::json_schema::relayout::{feed_json_in, parse_json};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::{GrammarSampler, Matcher, VocabIndex};

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[(self.next() as usize) % v.len()]
    }
}

/// Byte strings resembling a BPE vocabulary: all 256 bytes, JSON punctuation runs, words with
/// and without a leading space, digit runs, whitespace runs, CJK/accented characters and
/// split UTF-8 fragments; the last token is EOG.
fn synthetic_vocab(n: usize) -> Vec<Box<[u8]>> {
    let mut rng = Lcg(n as u64);
    let mut seen = HashSet::new();
    let mut out: Vec<Box<[u8]>> = Vec::with_capacity(n);
    let mut push = |v: Vec<u8>, out: &mut Vec<Box<[u8]>>| {
        if seen.insert(v.clone()) {
            out.push(v.into_boxed_slice());
        }
    };
    for b in 0..=255u8 {
        push(vec![b], &mut out);
    }
    let punct = [
        "{", "}", "[", "]", "\"", ":", ",", "\":", "\",", "{\"", "\"}", "\"]", "[\"", "},", "],", ": \"", "\": \"",
        "\": ", ", \"", "\n", "  ", "    ", "\n  ", "\n    ", "\\n", "\\\"", "\\u", "true", "false", "null", " true",
        " false", " null", "-", ".", "e", "E",
    ];
    for p in punct {
        push(p.as_bytes().to_vec(), &mut out);
    }
    let letters = b"etaoinshrdlcumwfgypbvkjxqz";
    let accents = [
        "é", "è", "ü", "ñ", "ç", "ö", "ß", "日", "本", "語", "の", "は", "中", "文", "ж", "д", "α", "β", "🙂", "—", "’",
    ];
    while out.len() < n - 1 {
        let kind = rng.next() % 100;
        let mut t = Vec::new();
        match kind {
            0..=54 => {
                if rng.next().is_multiple_of(2) {
                    t.push(b' ');
                }
                let len = 1 + (rng.next() % 9) as usize;
                for i in 0..len {
                    let c = *rng.pick(letters);
                    t.push(if i == 0 && rng.next().is_multiple_of(5) { c.to_ascii_uppercase() } else { c });
                }
            }
            55..=64 => {
                let len = 1 + (rng.next() % 4) as usize;
                for _ in 0..len {
                    t.push(b'0' + (rng.next() % 10) as u8);
                }
            }
            65..=74 => {
                let len = 1 + (rng.next() % 3) as usize;
                for _ in 0..len {
                    t.extend_from_slice(rng.pick(&punct).as_bytes());
                }
            }
            75..=89 => {
                let len = 1 + (rng.next() % 3) as usize;
                for _ in 0..len {
                    t.extend_from_slice(rng.pick(&accents).as_bytes());
                }
                if rng.next().is_multiple_of(4) {
                    t.pop(); // a split UTF-8 fragment
                }
            }
            _ => {
                let len = 2 + (rng.next() % 6) as usize;
                for _ in 0..len {
                    t.push(*rng.pick(b"_-./:=()<>#@*+ \t"));
                }
            }
        }
        if !t.is_empty() {
            push(t, &mut out);
        }
    }
    out.push(b"</s>".to_vec().into_boxed_slice());
    out
}

fn index(n: usize) -> Arc<VocabIndex> {
    let pieces = synthetic_vocab(n);
    let mut eog = vec![false; pieces.len()];
    *eog.last_mut().unwrap() = true;
    Arc::new(VocabIndex::from_pieces(pieces, eog))
}

/// Greedy longest-match tokenization.
fn tokenize(vocab: &VocabIndex, text: &[u8]) -> Vec<i32> {
    let mut map = std::collections::HashMap::new();
    for id in 0..vocab.n_vocab() as i32 - 1 {
        map.entry(vocab.piece(id).to_vec()).or_insert(id);
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let mut l = (text.len() - i).min(24);
        while l > 1 && !map.contains_key(&text[i..i + l]) {
            l -= 1;
        }
        out.push(map[&text[i..i + l]]);
        i += l;
    }
    out
}

const DOC: &str = r#"{"id": 1234, "name": "Zoë Müller", "tags": ["alpha", "beta", "日本語"], "active": true, "score": -12.5e3, "address": {"street": "12 Main St", "city": "Springfield", "zip": "01234"}, "notes": null, "history": [{"date": "2024-01-02", "amount": 99.95}, {"date": "2024-02-03", "amount": 5}]}"#;

/// Mask times (one per token of the document), in the given mode.
fn mask_times(vocab: &Arc<VocabIndex>, gbnf: &str, tokens: &[i32], cache: bool, warm: bool) -> Vec<Duration> {
    let mut s = GrammarSampler::with_index(vocab.clone(), gbnf, "root").unwrap();
    s.set_mask_cache(cache);
    if warm {
        let mut w = s.clone();
        for &t in tokens {
            let _ = w.mask();
            w.try_accept(t).unwrap();
        }
    }
    let mut times = Vec::with_capacity(tokens.len());
    for &t in tokens {
        let t0 = Instant::now();
        let m = s.mask();
        times.push(t0.elapsed());
        assert!(m.contains(t));
        s.try_accept(t).unwrap();
    }
    times
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e6
}

/// Percentiles across the dev schemas: the first valid instance of each compiled schema.
fn dev_schema_report(vocab: &Arc<VocabIndex>, label: &str) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/jsonschemabench-dev");
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<_> =
        rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    let (mut walk, mut cached, mut first) = (Vec::new(), Vec::new(), Vec::new());
    let mut n_schemas = 0;
    for f in files {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let Ok(g) = schema_to_gbnf(&v["schema"], &SchemaOptions::default()) else { continue };
        let Some(t) = v["tests"].as_array().unwrap().iter().find(|t| t["valid"] == true) else { continue };
        let doc = parse_json(&serde_json::to_string(&t["data"]).unwrap()).unwrap();
        let m = Matcher::from_gbnf(&g.gbnf).unwrap();
        let verdict = feed_json_in(&m, &doc, &g.member_orders);
        if !verdict.accepted {
            continue;
        }
        let mut tokens = tokenize(vocab, verdict.text.as_bytes());
        tokens.truncate(150);
        n_schemas += 1;
        first.extend(mask_times(vocab, &g.gbnf, &tokens, true, false));
        walk.extend(mask_times(vocab, &g.gbnf, &tokens, false, true));
        cached.extend(mask_times(vocab, &g.gbnf, &tokens, true, true));
    }
    for (mode, v) in [
        ("cold (fresh automaton, cache on)", &mut first),
        ("walk (cache off, automaton warm)", &mut walk),
        ("cached (warm, cache on)", &mut cached),
    ] {
        let n = v.len();
        let mean = v.iter().map(|d| d.as_secs_f64()).sum::<f64>() / n as f64 * 1e6;
        println!(
            "GRAMMAR-MASK {label} dev-schemas={n_schemas} masks={n} {mode}: mean {mean:.1} us, p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, max {:.1} us",
            pct(v, 0.5),
            pct(v, 0.9),
            pct(v, 0.99),
            pct(v, 1.0)
        );
    }
}

fn bench(c: &mut Criterion) {
    let json = nucleus_grammar::builtin::text("json").unwrap();
    for n in [49_152usize, 262_144] {
        let vocab = index(n);
        let label = format!("vocab={n} trie-nodes={}", vocab.nodes.len());
        let tokens = tokenize(&vocab, DOC.as_bytes());
        dev_schema_report(&vocab, &label);
        let mut g = c.benchmark_group(format!("json-grammar-mask/{n}"));
        g.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
        g.throughput(criterion::Throughput::Elements(tokens.len() as u64));
        g.bench_function(BenchmarkId::new("walk", tokens.len()), |b| {
            b.iter(|| mask_times(&vocab, json, &tokens, false, false))
        });
        g.bench_function(BenchmarkId::new("cached", tokens.len()), |b| {
            let warm = GrammarSampler::with_index(vocab.clone(), json, "root").unwrap();
            let mut w = warm.clone();
            for &t in &tokens {
                let _ = w.mask();
                w.try_accept(t).unwrap();
            }
            b.iter(|| {
                let mut s = warm.clone();
                for &t in &tokens {
                    criterion::black_box(s.mask());
                    s.try_accept(t).unwrap();
                }
            })
        });
        g.finish();
        let mut w = mask_times(&vocab, json, &tokens, false, true);
        let mut ca = mask_times(&vocab, json, &tokens, true, true);
        println!("GRAMMAR-MASK {label} json.gbnf doc-tokens={} walk: p50 {:.1} us p99 {:.1} us; cached: p50 {:.2} us p99 {:.2} us", tokens.len(), pct(&mut w, 0.5), pct(&mut w, 0.99), pct(&mut ca, 0.5), pct(&mut ca, 0.99));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
