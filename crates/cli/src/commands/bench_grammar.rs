//! `nucleus bench --grammar`: token-mask time of nucleus-grammar against llama.cpp's grammar
//! sampler, side by side in one run, on a real model vocabulary. For each JSONSchemaBench dev
//! schema both compile the same GBNF text; along the schema's first valid instance (laid out by
//! the grammar, tokenized by the model) each step times nucleus's mask and llama.cpp's grammar
//! over the whole vocabulary, checks that both allow exactly the same tokens, then advances both.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleus_grammar::GrammarSampler;
use nucleus_parity::mask_walk::{compare_with_llama, nucleus_masks, read_schema_dir, schema_case, WalkCase};
use nucleus_parity::reference_grammar::LlamaGrammar;
use nucleus_runtime::constraint::vocab_index_with;
use nucleus_runtime::{locate, models_dir, LlamaCppModel, Model, ModelRef, Pip};
use nucleus_sampler::Token;
use serde_json::{json, Value};

/// What to measure.
pub struct GrammarBench<'a> {
    /// Catalog names or .gguf paths.
    pub models: &'a [String],
    /// Folder of JSONSchemaBench-style files (`{"schema": ..., "tests": [...]}`).
    pub schemas: &'a Path,
    /// Measured steps per schema (tokens of the instance).
    pub positions: usize,
    /// Print one JSON object instead of tables.
    pub json: bool,
}

/// Times of one side at every measured step.
#[derive(Default)]
struct Times(Vec<Duration>);

impl Times {
    fn pct(&self, p: f64) -> f64 {
        let mut v: Vec<f64> = self.0.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * p).round() as usize]
    }
    fn mean(&self) -> f64 {
        self.0.iter().map(|d| d.as_secs_f64() * 1e6).sum::<f64>() / self.0.len().max(1) as f64
    }
    fn summary(&self) -> Value {
        json!({
            "mean_us": round1(self.mean()), "p50_us": round1(self.pct(0.5)), "p90_us": round1(self.pct(0.9)),
            "p99_us": round1(self.pct(0.99)), "max_us": round1(self.pct(1.0)),
        })
    }
}

/// Runs the grammar benchmark for every model.
pub fn run(b: &GrammarBench) -> Result<(), String> {
    let docs = read_schema_dir(b.schemas)?;
    let mut out = Vec::new();
    for spec in b.models {
        let model = load(spec)?;
        out.push(bench_model(b, spec, &model, &docs)?);
    }
    if b.json {
        println!("{}", json!({ "grammar": out }));
    }
    Ok(())
}

fn bench_model(b: &GrammarBench, spec: &str, model: &LlamaCppModel, docs: &[(String, Value)]) -> Result<Value, String> {
    let tok = model.tokenizer();
    let t0 = Instant::now();
    // Control tokens rendered as text, as llama.cpp's grammar sees them, so masks compare bit for bit.
    let vocab = Arc::new(vocab_index_with(tok.as_ref(), true));
    let index_ms = t0.elapsed().as_secs_f64() * 1e3;
    if let Ok(path) = std::env::var("NUCLEUS_DUMP_VOCAB") {
        // Diagnostics: every token as (eog u8, len u32 LE, bytes), for offline profiling.
        let mut out = Vec::new();
        for id in 0..vocab.n_vocab() as Token {
            let p = vocab.piece(id);
            out.push(vocab.is_eog(id) as u8);
            out.extend_from_slice(&(p.len() as u32).to_le_bytes());
            out.extend_from_slice(p);
        }
        std::fs::write(&path, out).map_err(|e| format!("writing {path}: {e}"))?;
    }
    let mut cases: Vec<(String, WalkCase)> = Vec::new();
    let mut skipped = Vec::new();
    for (name, v) in docs {
        match schema_case(v, tok.as_ref()) {
            Ok(c) => cases.push((name.clone(), c)),
            Err(e) => skipped.push(format!("{name}: {e}")),
        }
    }
    let (mut first, mut walk, mut llama) = (Times::default(), Times::default(), Times::default());
    let (mut mismatches, mut steps, mut schemas) = (0usize, 0usize, 0usize);
    let mut mismatch_notes = Vec::new();
    // Diagnostics: NUCLEUS_BENCH_SLOWEST=N prints the N slowest walks with their context.
    let slowest_n: usize = std::env::var("NUCLEUS_BENCH_SLOWEST").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut slowest: Vec<(Duration, String)> = Vec::new();
    let mut slowest_first: Vec<(Duration, String)> = Vec::new();
    for (name, case) in &cases {
        let mut reference = match LlamaGrammar::new(model, &case.gbnf, "root") {
            Ok(r) => r,
            Err(e) => {
                skipped.push(format!("{name}: {e}"));
                continue;
            }
        };
        // Pass 1, nucleus alone (no llama.cpp work in between to evict its caches): the first
        // generation with this grammar, fresh automaton, per-state mask cache on.
        let mut ours = GrammarSampler::with_index(vocab.clone(), &case.gbnf, "root").map_err(|e| e.to_string())?;
        let walker_start = ours.clone();
        let pass1 = nucleus_masks(&mut ours, &case.tokens, b.positions, false).map_err(|e| format!("{name}: {e}"))?;
        first.0.extend_from_slice(&pass1.times);
        if slowest_n > 0 {
            let mut text = Vec::new();
            for ((m, &took), &t) in pass1.masks.iter().zip(&pass1.times).zip(&case.tokens) {
                let tail = String::from_utf8_lossy(&text[text.len().saturating_sub(40)..]).into_owned();
                slowest_first.push((took, format!("{name} after {tail:?}: {} tokens allowed", m.count())));
                text.extend_from_slice(vocab.piece(t));
            }
        }
        let masks = pass1.masks;
        // Pass 2, llama.cpp along the same tokens; every mask must equal nucleus's.
        let cmp = compare_with_llama(&mut reference, &case.tokens, &masks, &vocab, name);
        llama.0.extend_from_slice(&cmp.times);
        steps += cmp.steps;
        mismatches += cmp.mismatches.len();
        for note in cmp.mismatches.iter().map(|m| m.to_string()).chain(cmp.stuck) {
            if mismatch_notes.len() < 5 {
                mismatch_notes.push(note);
            }
        }
        // Pass 3, the walk alone: automaton warmed by pass 1, mask cache off.
        let mut walker = walker_start;
        walker.set_mask_cache(false);
        schemas += 1;
        let mut text = Vec::new();
        for (&t, m) in case.tokens.iter().zip(&masks) {
            let s = Instant::now();
            let _ = walker.mask();
            let took = s.elapsed();
            walk.0.push(took);
            if slowest_n > 0 {
                let tail = String::from_utf8_lossy(&text[text.len().saturating_sub(40)..]).into_owned();
                slowest.push((
                    took,
                    format!(
                        "{name} after {tail:?}: {} tokens allowed, {} trie nodes",
                        m.count(),
                        walker.last_walk_nodes()
                    ),
                ));
            }
            if !m.contains(t) {
                break;
            }
            text.extend_from_slice(vocab.piece(t));
            walker.try_accept(t).map_err(|e| format!("{name}: {e}"))?;
        }
    }
    if slowest_n > 0 {
        slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (d, what) in slowest.iter().take(slowest_n) {
            eprintln!("slow walk {:>8.1} us  {what}", d.as_secs_f64() * 1e6);
        }
        slowest_first.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (d, what) in slowest_first.iter().take(slowest_n) {
            eprintln!("slow first-generation mask {:>8.1} us  {what}", d.as_secs_f64() * 1e6);
        }
    }
    let ratio = llama.pct(0.5) / first.pct(0.5);
    let result = json!({
        "model": spec, "n_vocab": vocab.n_vocab(), "trie_nodes": vocab.nodes.len(),
        "index_build_ms": round1(index_ms), "schemas": schemas, "steps": steps,
        "nucleus_first": first.summary(), "nucleus_walk": walk.summary(), "llama_cpp": llama.summary(),
        "ratio_p50": round1(ratio), "ratio_mean": round1(llama.mean() / first.mean()),
        "mask_mismatches": mismatches, "mismatch_examples": mismatch_notes, "skipped": skipped,
    });
    if !b.json {
        print_table(&result);
    }
    Ok(result)
}

fn print_table(r: &Value) {
    println!(
        "model {} — vocabulary {} tokens, trie {} nodes (index built in {} ms); {} schemas, {} steps",
        r["model"], r["n_vocab"], r["trie_nodes"], r["index_build_ms"], r["schemas"], r["steps"]
    );
    println!("{:<34} {:>10} {:>10} {:>10} {:>10} {:>10}", "side", "mean_us", "p50_us", "p90_us", "p99_us", "max_us");
    for (label, key) in [
        ("nucleus (first generation)", "nucleus_first"),
        ("nucleus (walk, cache off)", "nucleus_walk"),
        ("llama.cpp grammar sampler", "llama_cpp"),
    ] {
        let s = &r[key];
        let f = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<34} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            label,
            f("mean_us"),
            f("p50_us"),
            f("p90_us"),
            f("p99_us"),
            f("max_us")
        );
    }
    println!(
        "ratio llama.cpp / nucleus: {}x at the median, {}x in total; masks differing: {}",
        r["ratio_p50"], r["ratio_mean"], r["mask_mismatches"]
    );
    for m in r["mismatch_examples"].as_array().into_iter().flatten() {
        println!("  mismatch: {}", m.as_str().unwrap_or_default());
    }
    let skipped = r["skipped"].as_array().map(|v| v.len()).unwrap_or(0);
    if skipped > 0 {
        println!("skipped {skipped} schemas:");
        for s in r["skipped"].as_array().into_iter().flatten() {
            println!("  {}", s.as_str().unwrap_or_default());
        }
    }
    println!();
}

fn load(spec: &str) -> Result<LlamaCppModel, String> {
    let model_ref = ModelRef::parse(spec).map_err(|e| e.to_string())?;
    let (path, _) = locate(&model_ref, &models_dir(), &Pip::default(), &mut |_| {}).map_err(|e| e.to_string())?;
    LlamaCppModel::load(&path).map_err(|e| e.to_string())
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
