//! `nucleus bench`: nucleus-sampler against llama.cpp on the same logits, side by side in one
//! process, single thread; prints per-token median / p90 microseconds and the ratio.

use clap::Args;
use nucleus_parity::bench::{batch_rows_per_sec, chains, logits, measure, read_floor_us, Row, Shape};
use serde_json::json;

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
    /// Print the table as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Rows in the batch measurement (0 skips it)
    #[arg(long, default_value_t = 64)]
    pub batch_rows: usize,
    /// Vocabulary of the batch measurement
    #[arg(long, default_value_t = 151936)]
    pub batch_vocab: usize,
    /// Measure grammar masks instead: nucleus-grammar against llama.cpp's grammar sampler on
    /// real model vocabularies, along the JSON Schema instances in --schemas
    #[arg(long)]
    pub grammar: bool,
    /// Models whose vocabularies the grammar benchmark uses (catalog names or .gguf paths)
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
    let mut rows: Vec<Row> = Vec::new();
    let mut floors = serde_json::Map::new();
    if !args.json {
        println!(
            "{:<5} {:>7} {:<10} {:>11} {:>11} {:>11} {:>11} {:>8}",
            "chain", "vocab", "shape", "nucleus_med", "nucleus_p90", "llama_med", "llama_p90", "ratio"
        );
    }
    for &v in &args.vocab {
        for shape in [Shape::Confident, Shape::Flat] {
            let row = logits(v, shape, v as u64 + shape as u64);
            if shape == Shape::Confident {
                floors.insert(v.to_string(), json!(round2(read_floor_us(&row))));
            }
            for (letter, _, params) in all.iter().filter(|(l, _, _)| args.chains.iter().any(|c| c == l)) {
                let r = measure(letter, params, &row, shape, args.iters);
                if !args.json {
                    println!(
                        "{:<5} {:>7} {:<10} {:>11.1} {:>11.1} {:>11.1} {:>11.1} {:>7.1}x",
                        r.chain,
                        r.vocab,
                        r.shape.name(),
                        r.nucleus_us_median,
                        r.nucleus_us_p90,
                        r.llama_us_median,
                        r.llama_us_p90,
                        r.ratio()
                    );
                }
                rows.push(r);
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
            .map(|r| {
                json!({
                    "chain": r.chain, "vocab": r.vocab, "shape": r.shape.name(),
                    "nucleus_us_median": round2(r.nucleus_us_median), "nucleus_us_p90": round2(r.nucleus_us_p90),
                    "llama_us_median": round2(r.llama_us_median), "llama_us_p90": round2(r.llama_us_p90),
                    "ratio": round2(r.ratio()),
                })
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
