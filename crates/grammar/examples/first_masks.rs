//! Profiling aid: first-generation masks (fresh automaton) along recorded token paths, repeated.
//! Inputs come from `nucleus bench --grammar` with `NUCLEUS_DUMP_VOCAB=vocab.bin` and
//! `NUCLEUS_DUMP_PATHS=paths.jsonl`. Run:
//! `cargo run --release -p nucleus-grammar --example first_masks -- vocab.bin paths.jsonl [reps]`
//! (prints mask p50 / mean / p99 in µs over all steps of all paths, fresh automaton each rep).

use std::sync::Arc;
use std::time::Instant;

use nucleus_grammar::{GrammarSampler, VocabIndex};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: first_masks VOCAB_DUMP PATHS_JSONL [REPS]");
        std::process::exit(2);
    }
    let raw = std::fs::read(&args[1]).expect("reading the vocabulary dump");
    let (mut pieces, mut eog) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i + 5 <= raw.len() {
        let len = u32::from_le_bytes(raw[i + 1..i + 5].try_into().unwrap()) as usize;
        eog.push(raw[i] != 0);
        pieces.push(raw[i + 5..i + 5 + len].to_vec().into_boxed_slice());
        i += 5 + len;
    }
    let vocab = Arc::new(VocabIndex::from_pieces(pieces, eog));
    let paths: Vec<(String, String, Vec<i32>)> = std::fs::read_to_string(&args[2])
        .expect("reading the paths")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let toks = v["tokens"].as_array().unwrap().iter().map(|t| t.as_i64().unwrap() as i32).collect();
            (v["name"].as_str().unwrap().to_string(), v["gbnf"].as_str().unwrap().to_string(), toks)
        })
        .collect();
    let reps: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut times = Vec::new();
    let mut compile = Vec::new();
    for _ in 0..reps {
        for (_, gbnf, toks) in &paths {
            let t = Instant::now();
            let mut s = GrammarSampler::with_index(vocab.clone(), gbnf, "root").expect("the grammar builds");
            compile.push(t.elapsed().as_secs_f64() * 1e6);
            for &tok in toks.iter().take(48) {
                let t = Instant::now();
                let m = s.mask();
                times.push(t.elapsed().as_secs_f64() * 1e6);
                if !m.contains(tok) || s.try_accept(tok).is_err() {
                    break;
                }
            }
        }
    }
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * p).round() as usize]
    };
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let cmean = compile.iter().sum::<f64>() / compile.len() as f64;
    println!(
        "{} masks: p50 {:.1} / mean {:.1} / p99 {:.1} us; GBNF -> sampler p50 {:.1} / mean {:.1} / p99 {:.1} us",
        times.len(),
        pct(&mut times, 0.5),
        mean,
        pct(&mut times, 0.99),
        pct(&mut compile, 0.5),
        cmean,
        pct(&mut compile, 0.99)
    );
}
