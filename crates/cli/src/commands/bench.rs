//! `nucleus bench`: nucleus-sampler against llama.cpp on the same logits, side by side in one
//! process, single thread; prints per-token median / p90 / p99 microseconds and the ratio, on
//! synthetic rows (`confident`, `flat`) and on logits recorded from real models (`real`).

use clap::Args;
use nucleus_parity::bench::{batch_rows_per_sec, chains, logits, measure, measure_rows, read_floor_us, Row, Shape};
use serde_json::json;

use super::bench_real::record;

/// Arguments of `nucleus bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Vocabulary sizes to measure
    #[arg(long, value_delimiter = ',', default_values_t = vec![32000usize, 128256, 151936, 262144])]
    pub vocab: Vec<usize>,
    /// Chains to measure (letters a to i)
    #[arg(long, value_delimiter = ',', default_values_t = ["a", "b", "c", "d", "e", "f", "g", "h", "i"].map(String::from).to_vec())]
    pub chains: Vec<String>,
    /// Measured steps per row and side
    #[arg(long, default_value_t = 60)]
    pub iters: usize,
    /// Logits shapes to measure: `confident` and `flat` (synthetic, one row per --vocab size) and
    /// `real` (rows recorded from the --models while they generate a chat answer and prose)
    #[arg(long, value_delimiter = ',', default_values_t = ["confident", "flat"].map(String::from).to_vec())]
    pub shapes: Vec<String>,
    /// Positions recorded per text (chat answer, prose) and model for the `real` shape
    #[arg(long, default_value_t = 64)]
    pub real_positions: usize,
    /// Passes over the recorded rows per chain for the `real` shape (each pass steps once per row)
    #[arg(long, default_value_t = 2)]
    pub real_reps: usize,
    /// Print the table as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Rows in the batch measurement (0 skips it)
    #[arg(long, default_value_t = 64)]
    pub batch_rows: usize,
    /// Vocabulary of the batch measurement
    #[arg(long, default_value_t = 151936)]
    pub batch_vocab: usize,
    /// Measure grammar masks instead: nucleus-grammar beside llguidance and llama.cpp's grammar
    /// sampler on real model vocabularies, along the JSON Schema instances in --schemas
    #[arg(long)]
    pub grammar: bool,
    /// Models whose vocabularies the grammar benchmark uses, and whose logits the `real` shape
    /// records (catalog names or .gguf paths)
    #[arg(long, value_delimiter = ',', default_values_t = ["smollm2", "gemma3"].map(String::from).to_vec())]
    pub models: Vec<String>,
    /// Folder of JSONSchemaBench-style files for the grammar benchmark (default: the repository's
    /// `testdata/jsonschemabench-dev`, found from where this binary was built)
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/jsonschemabench-dev"))]
    pub schemas: std::path::PathBuf,
    /// Measured mask steps per schema in the grammar benchmark
    #[arg(long, default_value_t = 48)]
    pub positions: usize,
}

/// Runs the benchmark.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    if args.grammar {
        return super::bench_grammar::run(&super::bench_grammar::GrammarBench {
            models: &args.models,
            schemas: &args.schemas,
            positions: args.positions,
            json: args.json,
        });
    }
    if args.iters == 0 {
        return Err("--iters must be at least 1".into());
    }
    if let Some(v) = args.vocab.iter().find(|&&v| v < 2) {
        return Err(format!("--vocab {v}: a vocabulary needs at least 2 tokens"));
    }
    let all = chains();
    for c in &args.chains {
        if !all.iter().any(|(l, _, _)| l == c) {
            return Err(format!("unknown chain `{c}` (expected a to i)"));
        }
    }
    let mut synthetic = Vec::new();
    let mut real = false;
    for s in &args.shapes {
        match s.as_str() {
            "confident" => synthetic.push(Shape::Confident),
            "flat" => synthetic.push(Shape::Flat),
            "real" => real = true,
            _ => return Err(format!("unknown shape `{s}` (expected confident, flat or real)")),
        }
    }
    if real && (args.real_positions == 0 || args.real_reps == 0) {
        return Err("--real-positions and --real-reps must be at least 1".into());
    }
    let selected: Vec<_> = all.iter().filter(|(l, _, _)| args.chains.iter().any(|c| c == l)).collect();
    // (row, model name for real rows)
    let mut rows: Vec<(Row, Option<String>)> = Vec::new();
    let mut floors = serde_json::Map::new();
    // The SIMD level nucleus's kernels run on (process-wide; `NUCLEUS_SIMD` may lower it), named
    // with every figure so each one says which machine level it measured.
    let simd = nucleus_sampler::SimdLevel::active().name();
    if !args.json {
        println!(
            "{:<5} {:>7} {:<10} {:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>6}",
            "chain",
            "vocab",
            "shape",
            "simd",
            "nucl_med",
            "nucl_p90",
            "nucl_p99",
            "llama_med",
            "llama_p90",
            "llama_p99",
            "ratio",
            "differ"
        );
    }
    let print = |r: &Row, model: Option<&str>| {
        if !args.json {
            println!(
                "{:<5} {:>7} {:<10} {:<6} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>7.1}x {:>6}{}",
                r.chain,
                r.vocab,
                r.shape.name(),
                simd,
                r.nucleus_us_median,
                r.nucleus_us_p90,
                r.nucleus_us_p99,
                r.llama_us_median,
                r.llama_us_p90,
                r.llama_us_p99,
                r.ratio(),
                r.tokens_differ,
                model.map(|m| format!("  ({m})")).unwrap_or_default()
            );
        }
    };
    for &v in &args.vocab {
        for &shape in &synthetic {
            let row = logits(v, shape, v as u64 + shape as u64);
            if !floors.contains_key(&v.to_string()) {
                floors.insert(v.to_string(), json!(round2(read_floor_us(&row))));
            }
            for (letter, _, params) in &selected {
                let r = measure(letter, params, &row, shape, args.iters);
                print(&r, None);
                rows.push((r, None));
            }
        }
    }
    if real {
        for spec in &args.models {
            let rec = record(spec, args.real_positions)?;
            floors.entry(rec.n_vocab.to_string()).or_insert_with(|| json!(round2(read_floor_us(&rec.rows[0]))));
            for (letter, _, params) in &selected {
                let r = measure_rows(letter, params, &rec.rows, args.real_reps);
                print(&r, Some(&rec.model));
                rows.push((r, Some(rec.model.clone())));
            }
        }
    }
    let batch = if args.batch_rows > 0 {
        let p = &all.iter().find(|(l, _, _)| *l == "c").expect("chain c").2;
        let iters = (args.iters / 4).max(5);
        let one = batch_rows_per_sec(p, args.batch_rows, args.batch_vocab, 1, iters);
        let two = batch_rows_per_sec(p, args.batch_rows, args.batch_vocab, 2, iters);
        Some(json!({
            "rows": args.batch_rows, "vocab": args.batch_vocab, "chain": "c",
            "rows_per_sec_1_thread": one.round(), "rows_per_sec_2_threads": two.round(),
            "scaling": round2(two / one),
        }))
    } else {
        None
    };
    if args.json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(r, model)| {
                let mut o = json!({
                    "chain": r.chain, "vocab": r.vocab, "shape": r.shape.name(), "simd": simd,
                    "nucleus_us_median": round2(r.nucleus_us_median), "nucleus_us_p90": round2(r.nucleus_us_p90),
                    "nucleus_us_p99": round2(r.nucleus_us_p99),
                    "llama_us_median": round2(r.llama_us_median), "llama_us_p90": round2(r.llama_us_p90),
                    "llama_us_p99": round2(r.llama_us_p99),
                    "ratio": round2(r.ratio()),
                    "tokens_differ": r.tokens_differ,
                });
                if let Some(m) = model {
                    o["model"] = json!(m);
                    o["n_vocab"] = json!(r.vocab);
                    o["positions"] = json!(2 * args.real_positions);
                }
                o
            })
            .collect();
        let mut o = json!({ "rows": rows, "floor_us": floors });
        if let Some(b) = &batch {
            o["batch"] = b.clone();
        }
        println!("{o}");
    } else {
        println!();
        for (v, f) in &floors {
            println!("memory-read floor (read {v} floats once): {f} us");
        }
        if let Some(b) = &batch {
            println!(
                "batch: {} rows x {} vocab, chain c: {} rows/s on 1 thread, {} rows/s on 2 threads ({}x)",
                b["rows"], b["vocab"], b["rows_per_sec_1_thread"], b["rows_per_sec_2_threads"], b["scaling"]
            );
        }
        println!("chains:");
        for (l, d, _) in &all {
            println!("  {l}: {d}");
        }
    }
    Ok(())
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
