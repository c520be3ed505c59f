//! `nucleus bench --grammar`: token-mask time of nucleus-grammar beside llguidance and llama.cpp's
//! grammar sampler, side by side in one run, on a real model vocabulary. For each
//! JSONSchemaBench dev schema every side compiles it (nucleus's strict converter; llama.cpp
//! builds nucleus's GBNF text; llguidance its own JSON Schema compiler in the same compact
//! layout) and, along the schema's first valid instance (laid out by nucleus's grammar,
//! tokenized by the model), computes the mask over the whole vocabulary before each token, in
//! separate passes so no side evicts another's caches. llama.cpp's masks must equal nucleus's
//! bit for bit; llguidance's are compared on the ordinary text tokens, and every token of the
//! path it refuses is reported (its JSON layout or its reading of the schema differ).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::{GrammarSampler, TokenMask, VocabIndex};
use nucleus_parity::mask_walk::{compare_with_llama, nucleus_masks, read_schema_dir, schema_case, WalkCase};
use nucleus_parity::reference_grammar::LlamaGrammar;
use nucleus_parity::reference_llguidance::{LlgGrammar, LlgVocab};
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

/// Durations of one kind (masks, or compile + first mask) on one side.
#[derive(Default)]
struct Times(Vec<Duration>);

impl Times {
    fn pct_us(&self, p: f64) -> f64 {
        let mut v: Vec<f64> = self.0.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * p).round() as usize]
    }
    fn mean_us(&self) -> f64 {
        self.0.iter().map(|d| d.as_secs_f64() * 1e6).sum::<f64>() / self.0.len().max(1) as f64
    }
    fn summary(&self) -> Value {
        json!({
            "masks": self.0.len(), "mean_us": round1(self.mean_us()), "p50_us": round1(self.pct_us(0.5)),
            "p90_us": round1(self.pct_us(0.9)), "p99_us": round1(self.pct_us(0.99)), "max_us": round1(self.pct_us(1.0)),
        })
    }
    fn summary_ms(&self) -> Value {
        json!({
            "p50_ms": round2(self.pct_us(0.5) / 1e3), "mean_ms": round2(self.mean_us() / 1e3),
            "p99_ms": round2(self.pct_us(0.99) / 1e3), "max_ms": round2(self.pct_us(1.0) / 1e3),
        })
    }
}

/// One side's measurements on one vocabulary.
#[derive(Default)]
struct Side {
    /// Every mask along the paths (the first included).
    masks: Times,
    /// Per compiled schema: compile + first mask.
    first: Times,
    /// Schemas compiled (of all in the folder).
    compiled: usize,
}

/// Runs the grammar benchmark for every model.
pub fn run(b: &GrammarBench) -> Result<(), String> {
    let docs = read_schema_dir(b.schemas)?;
    let mut out = Vec::new();
    let mut rows = Vec::new();
    for spec in b.models {
        let model = load(spec)?;
        let r = bench_model(b, spec, &model, &docs)?;
        for side in ["nucleus", "llguidance", "llama.cpp"] {
            let s = &r["sides"][side];
            rows.push(json!({
                "side": side, "model": spec, "n_vocab": r["n_vocab"], "masks": s["masks"]["masks"],
                "mean_us": s["masks"]["mean_us"], "p50_us": s["masks"]["p50_us"], "p99_us": s["masks"]["p99_us"],
                "first_mask_ms_p50": s["first_mask"]["p50_ms"], "compiled": s["compiled"],
            }));
        }
        out.push(r);
    }
    if b.json {
        println!("{}", json!({ "rows": rows, "models": out }));
    }
    Ok(())
}

fn bench_model(b: &GrammarBench, spec: &str, model: &LlamaCppModel, docs: &[(String, Value)]) -> Result<Value, String> {
    let tok = model.tokenizer();
    let t0 = Instant::now();
    // Control tokens rendered as text, as llama.cpp's grammar sees them, so masks compare bit for bit.
    let vocab = Arc::new(vocab_index_with(tok.as_ref(), true));
    let index_ms = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    let llg_vocab = LlgVocab::new(tok.as_ref())?;
    let llg_index_ms = t0.elapsed().as_secs_f64() * 1e3;
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
    let (mut ours, mut walk, mut llama, mut llg) =
        (Side::default(), Times::default(), Side::default(), Side::default());
    let (mut mismatches, mut steps) = (0usize, 0usize);
    let mut mismatch_notes = Vec::new();
    let mut skipped = Vec::new();
    let mut no_path = Vec::new();
    let mut llg_refused = Vec::new();
    let mut llg_cmp = LlgComparison::default();
    // nucleus and llguidance on exactly the steps both walked (llguidance stops where it
    // refuses nucleus's path).
    let (mut common_ours, mut common_llg) = (Times::default(), Times::default());
    // Compile + first mask of both sides over the schemas both compile: the overall p99 is set
    // by the slowest schemas, and those llguidance refuses are in nucleus's figures only.
    let (mut both_first_ours, mut both_first_llg) = (Times::default(), Times::default());
    // Diagnostics: NUCLEUS_BENCH_SLOWEST=N prints the N slowest walks with their context.
    let slowest_n: usize = std::env::var("NUCLEUS_BENCH_SLOWEST").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut slowest: Vec<(Duration, String)> = Vec::new();
    let mut slowest_first: Vec<(Duration, String)> = Vec::new();
    let mut slowest_compile: Vec<(Duration, String)> = Vec::new();
    // Diagnostics: NUCLEUS_BENCH_ONLY_NUCLEUS=1 skips the peers (for profiling nucleus alone).
    let only_nucleus = std::env::var_os("NUCLEUS_BENCH_ONLY_NUCLEUS").is_some();
    let dump_paths = std::env::var("NUCLEUS_DUMP_PATHS").ok();
    let mut path_dump = dump_paths.as_ref().map(|_| String::new());
    for (name, doc) in docs {
        // nucleus: compile (schema -> GBNF -> sampler), then the walk, first generation.
        let t = Instant::now();
        let mut convert_time = Duration::ZERO;
        let compiled =
            schema_to_gbnf(&doc["schema"], &SchemaOptions::default()).map_err(|e| e.to_string()).and_then(|g| {
                convert_time = t.elapsed();
                GrammarSampler::with_index(vocab.clone(), &g.gbnf, "root")
                    .map(|s| (g.gbnf, s))
                    .map_err(|e| e.to_string())
            });
        let compile_time = t.elapsed();
        // The path: the first valid instance as nucleus lays it out (none: first masks only).
        let tokens = match schema_case(doc, tok.as_ref()) {
            Ok(WalkCase { tokens, .. }) => tokens,
            Err(e) => {
                if compiled.is_ok() {
                    no_path.push(format!("{name}: {e}"));
                }
                Vec::new()
            }
        };
        let mut masks = Vec::new();
        let mut nucleus_times: Vec<Duration> = Vec::new();
        let mut nucleus_first: Option<Duration> = None;
        if let (Some(out), Ok((gbnf, _))) = (&mut path_dump, &compiled) {
            // Diagnostics: one JSON line per schema (name, GBNF, token path) for offline profiling.
            out.push_str(&json!({ "name": name, "gbnf": gbnf, "tokens": tokens }).to_string());
            out.push('\n');
        }
        match compiled {
            Ok((gbnf, mut sampler)) => {
                ours.compiled += 1;
                let walker_start = sampler.clone();
                let pass1 = nucleus_masks(&mut sampler, &tokens, b.positions, tokens.is_empty())
                    .map_err(|e| format!("{name}: {e}"))?;
                ours.first.0.push(compile_time + pass1.times[0]);
                nucleus_first = Some(compile_time + pass1.times[0]);
                if slowest_n > 0 {
                    let what = format!(
                        "{name}: schema -> GBNF {:.2} ms, GBNF -> sampler {:.2} ms, first mask {:.2} ms",
                        convert_time.as_secs_f64() * 1e3,
                        (compile_time - convert_time).as_secs_f64() * 1e3,
                        pass1.times[0].as_secs_f64() * 1e3
                    );
                    slowest_compile.push((compile_time + pass1.times[0], what));
                }
                ours.masks.0.extend_from_slice(&pass1.times);
                nucleus_times = pass1.times.clone();
                if slowest_n > 0 {
                    let mut text = Vec::new();
                    for ((m, &took), &t) in pass1.masks.iter().zip(&pass1.times).zip(&tokens) {
                        let tail = String::from_utf8_lossy(&text[text.len().saturating_sub(40)..]).into_owned();
                        slowest_first.push((took, format!("{name} after {tail:?}: {} tokens allowed", m.count())));
                        text.extend_from_slice(vocab.piece(t));
                    }
                }
                masks = pass1.masks;
                // The walk alone: automaton warmed by pass 1, mask cache off.
                let mut walker = walker_start;
                walker.set_mask_cache(false);
                let mut text = Vec::new();
                for (&t, m) in tokens.iter().zip(&masks) {
                    let s = Instant::now();
                    let _ = walker.mask();
                    let took = s.elapsed();
                    walk.0.push(took);
                    if slowest_n > 0 {
                        let tail = String::from_utf8_lossy(&text[text.len().saturating_sub(40)..]).into_owned();
                        let nodes = walker.last_walk_nodes();
                        slowest
                            .push((took, format!("{name} after {tail:?}: {} allowed, {nodes} trie nodes", m.count())));
                    }
                    if !m.contains(t) {
                        break;
                    }
                    text.extend_from_slice(vocab.piece(t));
                    walker.try_accept(t).map_err(|e| format!("{name}: {e}"))?;
                }
                // llama.cpp along the same tokens, nucleus's GBNF; every mask must equal nucleus's.
                let t = Instant::now();
                match LlamaGrammar::new(model, &gbnf, "root").and_then(|r| match only_nucleus {
                    true => Err("skipped (NUCLEUS_BENCH_ONLY_NUCLEUS)".into()),
                    false => Ok(r),
                }) {
                    Ok(mut reference) => {
                        let compile_time = t.elapsed();
                        llama.compiled += 1;
                        let cmp = compare_with_llama(&mut reference, &tokens, &masks, &vocab, name);
                        if let Some(first) = cmp.times.first() {
                            llama.first.0.push(compile_time + *first);
                        }
                        llama.masks.0.extend_from_slice(&cmp.times);
                        steps += cmp.steps;
                        mismatches += cmp.mismatches.len();
                        for note in cmp.mismatches.iter().map(|m| m.to_string()).chain(cmp.stuck) {
                            if mismatch_notes.len() < 5 {
                                mismatch_notes.push(note);
                            }
                        }
                    }
                    Err(e) => skipped.push(format!("{name}: llama.cpp: {e}")),
                }
            }
            Err(e) => skipped.push(format!("{name}: nucleus: {e}")),
        }
        let case_tokens: &[Token] = &tokens;
        // llguidance: every schema (also those nucleus refuses: compile + first mask only).
        if only_nucleus {
            continue;
        }
        let t = Instant::now();
        match LlgGrammar::new(&llg_vocab, &doc["schema"]) {
            Ok(mut g) => {
                let compile_time = t.elapsed();
                llg.compiled += 1;
                let walked = llg_walk(&mut g, case_tokens, &masks, &llg_vocab, &vocab, name, &mut llg_cmp);
                let llg_times = match &walked {
                    Ok(t) | Err((t, _)) => t,
                };
                if !tokens.is_empty() || !masks.is_empty() {
                    let k = llg_times.len().min(nucleus_times.len());
                    common_ours.0.extend_from_slice(&nucleus_times[..k]);
                    common_llg.0.extend_from_slice(&llg_times[..k]);
                }
                if let (Some(ours), Some(first)) = (nucleus_first, llg_times.first()) {
                    both_first_ours.0.push(ours);
                    both_first_llg.0.push(compile_time + *first);
                }
                match walked {
                    Ok(times) => {
                        if let Some(first) = times.first() {
                            llg.first.0.push(compile_time + *first);
                        }
                        llg.masks.0.extend_from_slice(&times);
                    }
                    Err((times, why)) => {
                        if let Some(first) = times.first() {
                            llg.first.0.push(compile_time + *first);
                        }
                        llg.masks.0.extend_from_slice(&times);
                        llg_refused.push(why);
                    }
                }
            }
            Err(e) => skipped.push(format!("{name}: llguidance: {}", first_line(&e))),
        }
    }
    if let (Some(path), Some(text)) = (&dump_paths, &path_dump) {
        std::fs::write(path, text).map_err(|e| format!("writing {path}: {e}"))?;
    }
    if slowest_n > 0 {
        slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (d, what) in slowest.iter().take(slowest_n) {
            eprintln!("slow walk {:>8.1} us  {what}", d.as_secs_f64() * 1e6);
        }
        slowest_compile.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (d, what) in slowest_compile.iter().take(slowest_n) {
            eprintln!("slow compile + first mask {:>8.2} ms  {what}", d.as_secs_f64() * 1e3);
        }
        slowest_first.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (d, what) in slowest_first.iter().take(slowest_n) {
            eprintln!("slow first-generation mask {:>8.1} us  {what}", d.as_secs_f64() * 1e6);
        }
    }
    let side =
        |s: &Side| json!({ "compiled": s.compiled, "masks": s.masks.summary(), "first_mask": s.first.summary_ms() });
    let result = json!({
        "model": spec, "n_vocab": vocab.n_vocab(), "schemas": docs.len(), "trie_nodes": vocab.nodes.len(),
        "index_build_ms": round1(index_ms), "llguidance_index_build_ms": round1(llg_index_ms),
        "sides": { "nucleus": side(&ours), "llguidance": side(&llg), "llama.cpp": side(&llama) },
        "nucleus_walk_cache_off": walk.summary(),
        "common_steps": { "nucleus": common_ours.summary(), "llguidance": common_llg.summary() },
        "common_first_mask": {
            "schemas": both_first_ours.0.len(),
            "nucleus": both_first_ours.summary_ms(), "llguidance": both_first_llg.summary_ms(),
        },
        "llama_cpp_steps": steps, "llama_cpp_mask_mismatches": mismatches, "llama_cpp_mismatch_examples": mismatch_notes,
        "llguidance_compared": llg_cmp.compared, "llguidance_equal": llg_cmp.equal,
        "llguidance_equal_but_whitespace": llg_cmp.equal_but_space,
        "llguidance_differences": llg_cmp.examples, "llguidance_refused_path": llg_refused, "skipped": skipped, "no_path": no_path,
    });
    if !b.json {
        print_table(&result);
    }
    Ok(result)
}

/// Masks of llguidance compared with nucleus's along a path.
#[derive(Default)]
struct LlgComparison {
    /// Steps where both sides computed a mask.
    compared: usize,
    /// Of those, steps whose masks are the same on the ordinary text tokens.
    equal: usize,
    /// Steps where nucleus allows only more tokens starting with whitespace (the optional
    /// whitespace its grammars keep after punctuation, llama.cpp's `space` rule, which the
    /// compact llguidance layout has not) or holding bytes that lead no UTF-8 character
    /// (read by llama.cpp's decoder as lead bytes); the rest of the two masks is the same.
    equal_but_space: usize,
    /// A few differences, described.
    examples: Vec<String>,
}

/// llguidance's masks along `tokens` (its first mask alone when there is no path); the times of
/// its mask calls, or those and why it stopped before the end of nucleus's walk.
#[allow(clippy::type_complexity)]
fn llg_walk(
    g: &mut LlgGrammar,
    tokens: &[Token],
    ours: &[Arc<TokenMask>],
    llg_vocab: &LlgVocab,
    vocab: &VocabIndex,
    name: &str,
    cmp: &mut LlgComparison,
) -> Result<Vec<Duration>, (Vec<Duration>, String)> {
    let mut times = Vec::new();
    let comparable = llg_vocab.comparable();
    let steps = ours.len().max(1);
    let mut fed = Vec::new();
    for i in 0..steps {
        match g.apply() {
            Ok(d) => times.push(d),
            Err(e) => return Err((times, format!("{name} step {i}: mask failed: {}", first_line(&e)))),
        }
        let Some(m) = ours.get(i) else { break };
        cmp.compared += 1;
        let (only_ours, only_llg) = differences(m, g.allowed(), comparable);
        // Differences by layout, not language: whitespace nucleus's grammars allow after
        // punctuation, and bytes that are no UTF-8 lead (0xC0, 0xC1, 0xF5..=0xFF) which
        // llama.cpp's decoder, and so nucleus, reads as lead bytes of code points its negated
        // classes accept.
        let space = |t: &u32| {
            let p = vocab.piece(*t as Token);
            matches!(p.first(), Some(b' ' | b'\n' | b'\t' | b'\r'))
                || p.iter().any(|&b| matches!(b, 0xC0 | 0xC1 | 0xF5..=0xFF))
        };
        if only_ours.is_empty() && only_llg.is_empty() {
            cmp.equal += 1;
        } else if only_llg.is_empty() && only_ours.iter().all(space) {
            cmp.equal_but_space += 1;
        } else if cmp.examples.len() < 8 {
            let show = |v: &[u32]| -> Vec<String> {
                v.iter()
                    .take(3)
                    .map(|&t| format!("{t} {:?}", String::from_utf8_lossy(vocab.piece(t as Token))))
                    .collect()
            };
            cmp.examples.push(format!(
                "{name} step {i} after {:?}: only nucleus {} {:?}, only llguidance {} {:?}",
                String::from_utf8_lossy(&fed[fed.len().saturating_sub(40)..]),
                only_ours.len(),
                show(&only_ours),
                only_llg.len(),
                show(&only_llg)
            ));
        }
        let Some(&t) = tokens.get(i) else { break };
        if !m.contains(t) {
            break;
        }
        let tail = String::from_utf8_lossy(&fed[fed.len().saturating_sub(40)..]).into_owned();
        if !g.allowed().contains(t) {
            let piece = String::from_utf8_lossy(vocab.piece(t)).into_owned();
            return Err((times, format!("{name} step {i}: refuses {piece:?} after {tail:?}")));
        }
        if let Err(e) = g.accept(t) {
            return Err((times, format!("{name} step {i}: {}", first_line(&e))));
        }
        fed.extend_from_slice(vocab.piece(t));
    }
    Ok(times)
}

/// Tokens of `comparable` only in `a`, and only in `b`.
fn differences(a: &TokenMask, b: &TokenMask, comparable: &TokenMask) -> (Vec<u32>, Vec<u32>) {
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    for t in comparable.ids() {
        match (a.contains(t as i32), b.contains(t as i32)) {
            (true, false) => only_a.push(t),
            (false, true) => only_b.push(t),
            _ => {}
        }
    }
    (only_a, only_b)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

fn print_table(r: &Value) {
    println!(
        "model {} — vocabulary {} tokens (nucleus index {} ms, llguidance trie + slices {} ms); {} schemas",
        r["model"], r["n_vocab"], r["index_build_ms"], r["llguidance_index_build_ms"], r["schemas"]
    );
    println!(
        "{:<12} {:>8} {:>7} {:>30} {:>30}",
        "side", "compiled", "masks", "compile+first mask p50/mean/p99", "mask p50 / mean / p99 (us)"
    );
    for side in ["nucleus", "llguidance", "llama.cpp"] {
        let s = &r["sides"][side];
        let f = |a: &str, k: &str| s[a][k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<12} {:>8} {:>7} {:>30} {:>30}",
            side,
            s["compiled"].as_u64().unwrap_or(0),
            s["masks"]["masks"].as_u64().unwrap_or(0),
            format!(
                "{:.2} / {:.2} / {:.2} ms",
                f("first_mask", "p50_ms"),
                f("first_mask", "mean_ms"),
                f("first_mask", "p99_ms")
            ),
            format!("{:.1} / {:.1} / {:.1}", f("masks", "p50_us"), f("masks", "mean_us"), f("masks", "p99_us")),
        );
    }
    let (cn, cl) = (&r["common_steps"]["nucleus"], &r["common_steps"]["llguidance"]);
    println!(
        "on the {} steps both walked: nucleus p50 {} / mean {} / p99 {} us, llguidance p50 {} / mean {} / p99 {} us",
        cn["masks"], cn["p50_us"], cn["mean_us"], cn["p99_us"], cl["p50_us"], cl["mean_us"], cl["p99_us"]
    );
    let (bn, bl) = (&r["common_first_mask"]["nucleus"], &r["common_first_mask"]["llguidance"]);
    println!(
        "compile + first mask on the {} schemas both compiled: nucleus p50 {} / mean {} / p99 {} ms, llguidance p50 {} / mean {} / p99 {} ms",
        r["common_first_mask"]["schemas"], bn["p50_ms"], bn["mean_ms"], bn["p99_ms"], bl["p50_ms"], bl["mean_ms"], bl["p99_ms"]
    );
    let w = &r["nucleus_walk_cache_off"];
    println!(
        "nucleus walk alone (automaton warm, mask cache off): p50 {} / mean {} / p99 {} us",
        w["p50_us"], w["mean_us"], w["p99_us"]
    );
    println!(
        "llama.cpp masks differing from nucleus's: {} of {}",
        r["llama_cpp_mask_mismatches"], r["llama_cpp_steps"]
    );
    println!(
        "llguidance masks (text tokens) along nucleus's path: {} compared, {} equal, {} equal but for nucleus's optional whitespace or invalid UTF-8 lead bytes, {} differing otherwise",
        r["llguidance_compared"],
        r["llguidance_equal"],
        r["llguidance_equal_but_whitespace"],
        r["llguidance_compared"].as_u64().unwrap_or(0)
            - r["llguidance_equal"].as_u64().unwrap_or(0)
            - r["llguidance_equal_but_whitespace"].as_u64().unwrap_or(0)
    );
    for m in r["llama_cpp_mismatch_examples"].as_array().into_iter().flatten() {
        println!("  llama.cpp mismatch: {}", m.as_str().unwrap_or_default());
    }
    for m in r["llguidance_differences"].as_array().into_iter().flatten() {
        println!("  llguidance differs: {}", m.as_str().unwrap_or_default());
    }
    for m in r["llguidance_refused_path"].as_array().into_iter().flatten() {
        println!("  llguidance refused nucleus's valid path: {}", m.as_str().unwrap_or_default());
    }
    for m in r["no_path"].as_array().into_iter().flatten() {
        println!("  first mask only (no path): {}", m.as_str().unwrap_or_default());
    }
    let skipped = r["skipped"].as_array().map(|v| v.len()).unwrap_or(0);
    if skipped > 0 {
        println!("not compiled ({skipped}):");
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

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
