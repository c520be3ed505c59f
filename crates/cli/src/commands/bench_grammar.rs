//! `nucleus bench --grammar`: token-mask time of nucleus-grammar against llama.cpp's grammar
//! sampler, side by side in one run, on a real model vocabulary. For each JSONSchemaBench dev
//! schema both compile the same GBNF text; along the schema's first valid instance (laid out by
//! the grammar, tokenized by the model) each step times nucleus's mask and llama.cpp's grammar
//! over the whole vocabulary, checks that both allow exactly the same tokens, then advances both.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleus_grammar::json_schema::relayout::{feed_json, parse_json};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::{GrammarSampler, Matcher, TokenMask, VocabIndex};
use nucleus_runtime::constraint::vocab_index_with;
use nucleus_runtime::llama::LlamaGrammar;
use nucleus_runtime::{locate, models_dir, LlamaCppModel, Model, ModelRef, Pip, Tokenizer};
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

/// One schema's prepared run: the GBNF and the instance's tokens.
struct Case {
    gbnf: String,
    tokens: Vec<Token>,
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
    let docs = read_schemas(b.schemas)?;
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
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    for (name, v) in docs {
        match prepare(v, tok.as_ref()) {
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
        let mut masks: Vec<Arc<TokenMask>> = Vec::new();
        let mut text = Vec::new();
        for &t in case.tokens.iter().take(b.positions) {
            let s = Instant::now();
            let m = ours.mask();
            let took = s.elapsed();
            first.0.push(took);
            if slowest_n > 0 {
                let tail = String::from_utf8_lossy(&text[text.len().saturating_sub(40)..]).into_owned();
                slowest_first.push((took, format!("{name} after {tail:?}: {} tokens allowed", m.count())));
            }
            text.extend_from_slice(vocab.piece(t));
            let ok = m.contains(t);
            masks.push(m);
            if !ok {
                break;
            }
            ours.try_accept(t).map_err(|e| format!("{name}: {e}"))?;
        }
        // Pass 2, llama.cpp along the same tokens; every mask must equal nucleus's.
        let mut fed = Vec::new();
        for (&t, m) in case.tokens.iter().zip(&masks) {
            llama.0.push(reference.apply());
            steps += 1;
            if **m != *reference.allowed() {
                mismatches += 1;
                if mismatch_notes.len() < 5 {
                    let at =
                        format!("{name} after {:?}", String::from_utf8_lossy(&fed[fed.len().saturating_sub(60)..]));
                    mismatch_notes.push(describe_mismatch(&at, m, reference.allowed(), &vocab));
                }
            }
            if !m.contains(t) || reference.accept(t).is_err() {
                break;
            }
            fed.extend_from_slice(vocab.piece(t));
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

fn describe_mismatch(at: &str, ours: &TokenMask, theirs: &TokenMask, v: &VocabIndex) -> String {
    let show = |id: u32| format!("{id} {:?}", String::from_utf8_lossy(v.piece(id as Token)));
    let only_ours: Vec<String> =
        ours.ids().into_iter().filter(|&i| !theirs.contains(i as i32)).take(3).map(show).collect();
    let only_theirs: Vec<String> =
        theirs.ids().into_iter().filter(|&i| !ours.contains(i as i32)).take(3).map(show).collect();
    format!("{at}: only nucleus {only_ours:?}, only llama.cpp {only_theirs:?}")
}

/// Compiles the schema (strict) and tokenizes its first valid instance as the grammar lays it out.
fn prepare(v: &Value, tok: &dyn Tokenizer) -> Result<Case, String> {
    let g = schema_to_gbnf(&v["schema"], &SchemaOptions::default()).map_err(|e| format!("refused: {e}"))?;
    let m = Matcher::from_gbnf(&g.gbnf).map_err(|e| e.to_string())?;
    let inst = v["tests"].as_array().and_then(|t| t.iter().find(|t| t["valid"] == true)).ok_or("no valid instance")?;
    let doc = parse_json(&inst["data"].to_string())?;
    let verdict = feed_json(&m, &doc);
    if !verdict.accepted {
        return Err("the first valid instance is not accepted".into());
    }
    let tokens = tok.encode(&verdict.text, false, false).map_err(|e| e.to_string())?;
    Ok(Case { gbnf: g.gbnf, tokens })
}

fn read_schemas(dir: &Path) -> Result<Vec<(String, Value)>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("reading the schema folder {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> =
        rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("reading {}: {e}", f.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        out.push((f.file_name().unwrap_or_default().to_string_lossy().into_owned(), v));
    }
    if out.is_empty() {
        return Err(format!("no .json schema files in {}", dir.display()));
    }
    Ok(out)
}

fn load(spec: &str) -> Result<LlamaCppModel, String> {
    let model_ref = ModelRef::parse(spec).map_err(|e| e.to_string())?;
    let (path, _) = locate(&model_ref, &models_dir(), &Pip::default(), &mut |_| {}).map_err(|e| e.to_string())?;
    LlamaCppModel::load(&path).map_err(|e| e.to_string())
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
