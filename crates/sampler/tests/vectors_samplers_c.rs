//! Reference vectors for typical, temp-ext, XTC, top-n-sigma, mirostat v1/v2 and adaptive-p:
//! the upstream test-sampling cases for the first four, and the recorded multi-step chains
//! (`derived_reference.chains`) that exercise these samplers, compared token by token.

use nucleus_sampler::samplers::adaptive_p::AdaptiveP;
use nucleus_sampler::samplers::dist::Dist;
use nucleus_sampler::samplers::min_p::MinP;
use nucleus_sampler::samplers::mirostat::Mirostat;
use nucleus_sampler::samplers::mirostat_v2::MirostatV2;
use nucleus_sampler::samplers::temp::Temp;
use nucleus_sampler::samplers::temp_ext::TempExt;
use nucleus_sampler::samplers::top_k::TopK;
use nucleus_sampler::samplers::top_n_sigma::TopNSigma;
use nucleus_sampler::samplers::top_p::TopP;
use nucleus_sampler::samplers::typical::Typical;
use nucleus_sampler::samplers::xtc::Xtc;
use nucleus_sampler::{Candidates, Sampler, TokenData};
use serde_json::Value;

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/vectors/llama-test-sampling.json");

/// Samplers under test here (the `cases` filter).
const MINE: [&str; 4] = ["typical", "xtc", "temp-ext", "top-n-sigma"];

fn load() -> Value {
    let text = std::fs::read_to_string(VECTORS).expect("read vectors file");
    serde_json::from_str(&text).expect("parse vectors file")
}

fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::String(s) if s == "inf" => f64::INFINITY,
        _ => v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")),
    }
}

fn f(params: &Value, key: &str) -> f32 {
    num(&params[key]) as f32
}

fn u(params: &Value, key: &str) -> usize {
    params[key].as_u64().unwrap_or_else(|| panic!("missing {key} in {params}")) as usize
}

fn seed(params: &Value) -> u32 {
    params["seed"].as_u64().expect("seed") as u32
}

/// Builds one chain member from its JSON description; `None` for a sampler whose parameters
/// make it a no-op that this crate does not need to run here (penalties off).
fn build(entry: &Value) -> Option<Box<dyn Sampler>> {
    let p = &entry["params"];
    let name = entry["sampler"].as_str().unwrap();
    Some(match name {
        "typical" => Box::new(Typical::new(f(p, "p"), u(p, "min_keep"))),
        "xtc" => Box::new(Xtc::new(f(p, "probability"), f(p, "threshold"), u(p, "min_keep"), seed(p))),
        "temp-ext" => Box::new(TempExt::new(f(p, "t"), f(p, "delta"), f(p, "exponent"))),
        "top-n-sigma" => Box::new(TopNSigma::new(f(p, "n"))),
        "mirostat" => {
            Box::new(Mirostat::new(u(p, "n_vocab"), seed(p), f(p, "tau"), f(p, "eta"), p["m"].as_i64().unwrap() as i32))
        }
        "mirostat-v2" => Box::new(MirostatV2::new(seed(p), f(p, "tau"), f(p, "eta"))),
        "adaptive-p" => Box::new(AdaptiveP::new(f(p, "target"), f(p, "decay"), seed(p))),
        "dist" => Box::new(Dist::new(seed(p))),
        "top-k" => Box::new(TopK::new(p["k"].as_i64().unwrap() as i32)),
        "top-p" => Box::new(TopP::new(f(p, "p"), u(p, "min_keep"))),
        "min-p" => Box::new(MinP::new(f(p, "p"), u(p, "min_keep"))),
        "temp" => Box::new(Temp::new(f(p, "t"))),
        "penalties"
            if f(p, "penalty_repeat") == 1.0 && f(p, "penalty_freq") == 0.0 && f(p, "penalty_present") == 0.0 =>
        {
            return None
        }
        other => panic!("sampler {other} not supported by this test"),
    })
}

fn chain_supported(chain: &Value) -> bool {
    chain.as_array().unwrap().iter().all(|e| {
        let name = e["sampler"].as_str().unwrap();
        match name {
            "penalties" => {
                let p = &e["params"];
                f(p, "penalty_repeat") == 1.0 && f(p, "penalty_freq") == 0.0 && f(p, "penalty_present") == 0.0
            }
            "dry" | "logit-bias" | "infill" | "greedy" => false,
            _ => true,
        }
    })
}

#[test]
fn single_sampler_cases() {
    let v = load();
    let mut ran = 0;
    for case in v["cases"].as_array().unwrap() {
        let sampler = case["sampler"].as_str().unwrap();
        if !MINE.contains(&sampler) {
            continue;
        }
        let id = case["id"].as_str().unwrap();
        let data: Vec<TokenData> = case["input_probs"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let p = num(x) as f32;
                TokenData { id: i as i32, logit: p.ln(), p }
            })
            .collect();
        let mut c = Candidates::from_token_data(data);
        for entry in case["chain"].as_array().unwrap() {
            if let Some(mut s) = build(entry) {
                s.apply(&mut c);
            }
        }

        let expected: Vec<f32> = case["expected_probs"].as_array().unwrap().iter().map(|x| num(x) as f32).collect();
        let size = case["expected_size"].as_u64().unwrap() as usize;
        let tol = case["tolerance_abs"].as_f64().unwrap_or(1e-5) as f32;
        assert_eq!(c.len(), size, "{id}: size");
        for (i, (d, e)) in c.as_slice().iter().zip(&expected).enumerate() {
            assert!((d.p - e).abs() < tol, "{id}: p[{i}] = {} expected {e}", d.p);
        }

        // The ids upstream produced, in order: with ties (typical_0.5_b) this checks the
        // libstdc++ std::sort tie order that sort.rs emulates.
        let ids: Vec<i64> = case["observed"]["ids"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
        let got: Vec<i64> = c.as_slice().iter().map(|d| d.id as i64).collect();
        assert_eq!(got, ids, "{id}: ids");
        ran += 1;
    }
    // 2 typical + 4 xtc + 2 temp-ext + 3 top-n-sigma cases from test-sampling.cpp.
    assert_eq!(ran, 11, "number of cases run");
}

/// Runs a recorded chain for its number of steps over fixed logits; returns tokens and sizes.
fn run_chain(chain: &mut [Box<dyn Sampler>], logits: &[f32], steps: usize) -> (Vec<i64>, Vec<u64>) {
    let mut c = Candidates::with_capacity(logits.len());
    let mut tokens = Vec::new();
    let mut sizes = Vec::new();
    for _ in 0..steps {
        c.fill_f32(logits);
        for s in chain.iter_mut() {
            s.apply(&mut c);
        }
        let tok = c.selected_token().expect("chain selected nothing").id;
        for s in chain.iter_mut() {
            s.accept(tok);
        }
        tokens.push(tok as i64);
        sizes.push(c.len() as u64);
    }
    (tokens, sizes)
}

/// One recorded multi-step chain: fresh samplers, input logits and the upstream results.
struct Recorded {
    id: String,
    chain: Vec<Box<dyn Sampler>>,
    logits: Vec<f32>,
    steps: usize,
    tokens: Vec<i64>,
    sizes: Vec<u64>,
}

fn recorded_chains() -> Vec<Recorded> {
    let v = load();
    let dr = &v["derived_reference"];
    let mut out = Vec::new();
    for ch in dr["chains"].as_array().unwrap() {
        if !chain_supported(&ch["chain"]) {
            continue;
        }
        let input = ch["input"].as_str().unwrap();
        out.push(Recorded {
            id: ch["id"].as_str().unwrap().to_string(),
            chain: ch["chain"].as_array().unwrap().iter().filter_map(build).collect(),
            logits: dr["inputs"][input]["values"].as_array().unwrap().iter().map(|x| num(x) as f32).collect(),
            steps: ch["steps"].as_u64().unwrap() as usize,
            tokens: ch["selected_tokens"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect(),
            sizes: ch["final_sizes"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect(),
        });
    }
    out
}

#[test]
fn recorded_chain_streams() {
    let chains = recorded_chains();
    let ids: Vec<&str> = chains.iter().map(|c| c.id.as_str()).collect();
    for want in [
        "chain_default",
        "chain_dynatemp",
        "chain_xtc",
        "chain_topnsigma",
        "chain_typical",
        "chain_mirostat1",
        "chain_mirostat2",
        "chain_adaptive_p",
        "chain_adaptive_p_disabled",
    ] {
        assert!(ids.contains(&want), "{want} missing from the vectors");
    }
    let mut failures = Vec::new();
    for Recorded { id, mut chain, logits, steps, tokens, sizes } in chains {
        let (got_t, got_s) = run_chain(&mut chain, &logits, steps);
        if got_t != tokens || got_s != sizes {
            failures
                .push(format!("{id}:\n  tokens {got_t:?}\n  want   {tokens:?}\n  sizes {got_s:?}\n  want  {sizes:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// After `reset`, every recorded chain replays the same stream; a clone taken mid-stream
/// continues it exactly (adaptive-p excepted: its clone restarts the random stream).
#[test]
fn recorded_chains_reset_and_clone() {
    for Recorded { id, mut chain, logits, steps, tokens, .. } in recorded_chains() {
        let half = steps / 2;
        let (first, _) = run_chain(&mut chain, &logits, half);
        assert_eq!(first[..], tokens[..half], "{id}");
        let mut cloned: Vec<Box<dyn Sampler>> = chain.iter().map(|s| s.clone_box()).collect();
        let (rest, _) = run_chain(&mut chain, &logits, steps - half);
        assert_eq!(rest[..], tokens[half..], "{id}: continuation");
        if !id.starts_with("chain_adaptive_p") {
            let (rest_clone, _) = run_chain(&mut cloned, &logits, steps - half);
            assert_eq!(rest_clone, rest, "{id}: clone");
        }
        for s in chain.iter_mut() {
            s.reset();
        }
        let (replay, _) = run_chain(&mut chain, &logits, steps);
        assert_eq!(replay, tokens, "{id}: after reset");
    }
}

/// Adaptive-p's clone keeps the EMA but restarts its random stream, so it matches a fresh
/// sampler carrying the same EMA history rather than the original.
#[test]
fn adaptive_p_clone_restarts_stream() {
    let v = load();
    let logits: Vec<f32> = v["derived_reference"]["inputs"]["logits_256"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| num(x) as f32)
        .collect();
    let mk =
        || -> Vec<Box<dyn Sampler>> { vec![Box::new(MinP::new(0.05, 1)), Box::new(AdaptiveP::new(-1.0, 0.9, 42))] };
    let mut a = mk();
    run_chain(&mut a, &logits, 5);
    let mut cl: Vec<Box<dyn Sampler>> = a.iter().map(|s| s.clone_box()).collect();
    let mut fresh = mk();
    // With a negative target the EMA plays no part: the clone must replay the fresh stream.
    assert_eq!(run_chain(&mut cl, &logits, 10).0, run_chain(&mut fresh, &logits, 10).0);
}
