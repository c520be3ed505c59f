//! Reading `testdata/vectors/llama-test-sampling.json`: the file, JSON accessors, samplers built
//! from their JSON description, the generated inputs, recorded multi-step chains and the
//! tie-order comparison.

use nucleus_sampler::samplers::{
    adaptive_p::AdaptiveP, dist::Dist, dry::Dry, greedy::Greedy, logit_bias::LogitBias, min_p::MinP,
    mirostat::Mirostat, mirostat_v2::MirostatV2, penalties::Penalties, temp::Temp, temp_ext::TempExt, top_k::TopK,
    top_n_sigma::TopNSigma, top_p::TopP, typical::Typical, xtc::Xtc,
};
use nucleus_sampler::{Candidates, Sampler, Token, TokenData};
use serde_json::Value;

pub const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/vectors/llama-test-sampling.json");

/// The parsed vectors file.
pub fn load() -> Value {
    let text = std::fs::read_to_string(PATH).expect("read vectors file");
    serde_json::from_str(&text).expect("parse vectors file")
}

/// A JSON number, or the string "-inf" / "inf".
pub fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::String(s) if s == "inf" => f64::INFINITY,
        _ => v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")),
    }
}

/// `p[key]` as f32 (numbers or "-inf" / "inf").
pub fn f(p: &Value, key: &str) -> f32 {
    num(&p[key]) as f32
}

/// `p[key]` as a (signed) integer.
pub fn i(p: &Value, key: &str) -> i32 {
    p[key].as_i64().unwrap_or_else(|| panic!("missing integer {key} in {p}")) as i32
}

/// `p[key]` as an unsigned size.
pub fn u(p: &Value, key: &str) -> usize {
    p[key].as_u64().unwrap_or_else(|| panic!("missing unsigned {key} in {p}")) as usize
}

/// `p["seed"]`.
pub fn seed(p: &Value) -> u32 {
    p["seed"].as_u64().unwrap_or_else(|| panic!("missing seed in {p}")) as u32
}

/// An array of token ids.
pub fn ids(v: &Value) -> Vec<Token> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_i64().unwrap_or_else(|| panic!("not a token: {x}")) as Token)
        .collect()
}

/// An array of numbers (or "-inf" / "inf") as f32.
pub fn f32s(v: &Value) -> Vec<f32> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}")).iter().map(|x| num(x) as f32).collect()
}

/// An array of token sequences (DRY's `seq_breakers_tokens`).
pub fn token_seqs(v: &Value) -> Vec<Vec<Token>> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}")).iter().map(ids).collect()
}

/// Builds one sampler from its JSON description `{"sampler": name, "params": {...}}` (params
/// may be absent). DRY has no vocabulary size in the vectors (the upstream test constructor
/// needs none), so it gets `n_vocab`.
pub fn build(entry: &Value, n_vocab: usize) -> Box<dyn Sampler> {
    let p = &entry["params"];
    match entry["sampler"].as_str().unwrap_or_else(|| panic!("no sampler name in {entry}")) {
        "greedy" => Box::new(Greedy::new()),
        "dist" => Box::new(Dist::new(seed(p))),
        "temp" => Box::new(Temp::new(f(p, "t"))),
        "temp-ext" => Box::new(TempExt::new(f(p, "t"), f(p, "delta"), f(p, "exponent"))),
        "top-k" => Box::new(TopK::new(i(p, "k"))),
        "top-p" => Box::new(TopP::new(f(p, "p"), u(p, "min_keep"))),
        "min-p" => Box::new(MinP::new(f(p, "p"), u(p, "min_keep"))),
        "typical" => Box::new(Typical::new(f(p, "p"), u(p, "min_keep"))),
        "xtc" => Box::new(Xtc::new(f(p, "probability"), f(p, "threshold"), u(p, "min_keep"), seed(p))),
        "top-n-sigma" => Box::new(TopNSigma::new(f(p, "n"))),
        "mirostat" => Box::new(Mirostat::new(u(p, "n_vocab"), seed(p), f(p, "tau"), f(p, "eta"), i(p, "m"))),
        "mirostat-v2" => Box::new(MirostatV2::new(seed(p), f(p, "tau"), f(p, "eta"))),
        "adaptive-p" => Box::new(AdaptiveP::new(f(p, "target"), f(p, "decay"), seed(p))),
        "penalties" => Box::new(Penalties::new(
            u(p, "n_vocab"),
            i(p, "penalty_last_n"),
            f(p, "penalty_repeat"),
            f(p, "penalty_freq"),
            f(p, "penalty_present"),
        )),
        "dry" => Box::new(Dry::from_token_breakers(
            n_vocab,
            f(p, "dry_multiplier"),
            f(p, "dry_base"),
            i(p, "dry_allowed_length"),
            i(p, "dry_penalty_last_n"),
            &token_seqs(&p["seq_breakers_tokens"]),
        )),
        "logit-bias" => {
            let biases = p["biases"]
                .as_array()
                .unwrap_or_else(|| panic!("no biases in {p}"))
                .iter()
                .map(|b| (b[0].as_i64().unwrap() as Token, num(&b[1]) as f32))
                .collect();
            Box::new(LogitBias::new(u(p, "n_vocab"), biases))
        }
        other => panic!("unknown sampler in vectors: {other}"),
    }
}

/// Builds every member of a JSON chain (an array of sampler descriptions).
pub fn build_chain(chain: &Value, n_vocab: usize) -> Vec<Box<dyn Sampler>> {
    chain.as_array().unwrap_or_else(|| panic!("not a chain: {chain}")).iter().map(|e| build(e, n_vocab)).collect()
}

/// The generator of `derived_reference.inputs.generator`: a 32-bit LCG, logits in [-10, 10)
/// with 0.001 steps.
pub fn generated_logits(seed: u32, n: usize) -> Vec<f32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((x >> 8) % 20_000) as f32 / 1000.0f32 - 10.0f32
        })
        .collect()
}

/// A named input of `derived_reference.inputs` (generated or listed).
pub fn input(v: &Value, name: &str) -> Vec<f32> {
    match name {
        "logits_4096_seed11" => generated_logits(11, 4096),
        _ => f32s(&v["derived_reference"]["inputs"][name]["values"]),
    }
}

/// llama.cpp's test-harness array: id = i, logit = logf(p), p = p.
pub fn from_probs(probs: &[f32]) -> Candidates {
    Candidates::from_token_data(
        probs.iter().enumerate().map(|(i, &p)| TokenData { id: i as Token, logit: p.ln(), p }).collect(),
    )
}

/// The candidates' logits, in order.
pub fn logits_of(c: &Candidates) -> Vec<f32> {
    c.as_slice().iter().map(|d| d.logit).collect()
}

/// The candidates' ids, in order.
pub fn ids_of(c: &Candidates) -> Vec<Token> {
    c.as_slice().iter().map(|d| d.id).collect()
}

/// Runs a chain for `steps` steps over fixed logits, accepting each selected token; returns
/// the tokens and the candidate count after each step.
pub fn run_chain(chain: &mut [Box<dyn Sampler>], logits: &[f32], steps: usize) -> (Vec<Token>, Vec<usize>) {
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
        tokens.push(tok);
        sizes.push(c.len());
    }
    (tokens, sizes)
}

/// One recorded multi-step chain (`derived_reference.chains`): fresh samplers, input logits
/// and the upstream results.
pub struct Recorded {
    pub id: String,
    pub chain: Vec<Box<dyn Sampler>>,
    pub logits: Vec<f32>,
    pub steps: usize,
    pub tokens: Vec<Token>,
    pub sizes: Vec<usize>,
}

/// Every recorded chain of the vectors file.
pub fn recorded_chains(v: &Value) -> Vec<Recorded> {
    let chains = v["derived_reference"]["chains"].as_array().expect("derived_reference.chains");
    chains
        .iter()
        .map(|ch| {
            let logits = input(v, ch["input"].as_str().unwrap());
            let sizes = ids(&ch["final_sizes"]).into_iter().map(|s| s as usize).collect();
            Recorded {
                id: ch["id"].as_str().unwrap().to_string(),
                chain: build_chain(&ch["chain"], logits.len()),
                steps: u(ch, "steps"),
                tokens: ids(&ch["selected_tokens"]),
                sizes,
                logits,
            }
        })
        .collect()
}

/// The `derived_reference.tie_order` case `id`.
pub fn tie_case<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["derived_reference"]["tie_order"]
        .as_array()
        .expect("tie_order list")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("tie_order case {id} missing"))
}

/// The input logits of a tie-order case.
pub fn tie_input(v: &Value, case: &Value) -> Vec<f32> {
    match case["id"].as_str().unwrap() {
        "tie_topk3" => vec![0.0; 10],
        "tie_topk200" => vec![0.0; 300],
        _ => input(v, case["input"].as_str().unwrap()),
    }
}

/// Compares candidates with a recorded tie-order case: size, sorted flag, the ids and exact
/// logits of the head, and the probabilities of the head where recorded.
pub fn check_tie_case(case: &Value, c: &Candidates) {
    let id = case["id"].as_str().unwrap();
    assert_eq!(c.len() as u64, case["out_size"].as_u64().unwrap(), "{id}: size");
    assert_eq!(c.is_sorted(), case["out_sorted"].as_bool().unwrap(), "{id}: sorted");
    let want_ids = ids(&case["out_ids_head"]);
    let want_logits = f32s(&case["out_logits_head"]);
    assert_eq!(want_ids.len(), want_logits.len(), "{id}: head lengths");
    assert!(c.len() >= want_ids.len(), "{id}: fewer candidates than the recorded head");
    let head = &c.as_slice()[..want_ids.len()];
    let got_ids: Vec<Token> = head.iter().map(|t| t.id).collect();
    let got_logits: Vec<f32> = head.iter().map(|t| t.logit).collect();
    assert_eq!(got_ids, want_ids, "{id}: ids");
    assert_eq!(got_logits, want_logits, "{id}: logits");
    if let Some(ph) = case.get("out_probs_head") {
        let want_p = f32s(ph);
        assert_eq!(want_p.len(), want_ids.len(), "{id}: probability head length");
        for (k, (d, w)) in head.iter().zip(&want_p).enumerate() {
            assert!((d.p - w).abs() < 1e-8, "{id}: p[{k}] = {} vs {w}", d.p);
        }
    }
}
