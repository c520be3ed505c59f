//! Every case of `shared/vectors/llama-test-sampling.json` (llama.cpp's own sampler tests,
//! the sampler-queue cases, RNG reference values, dist streams, multi-step chains, tie
//! orders), run against nucleus-sampler.

use nucleus_sampler::rng::{discrete_pick, LlamaRng};
use nucleus_sampler::samplers::{
    adaptive_p::AdaptiveP, dist::Dist, dry::Dry, greedy::Greedy, logit_bias::LogitBias, min_p::MinP,
    mirostat::Mirostat, mirostat_v2::MirostatV2, penalties::Penalties, temp::Temp, temp_ext::TempExt,
    top_k::TopK, top_n_sigma::TopNSigma, top_p::TopP, typical::Typical, xtc::Xtc,
};
use nucleus_sampler::{Candidates, Chain, Sampler, TokenData};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/vectors/llama-test-sampling.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("vectors file")).expect("vectors json")
}

/// A JSON number, or the string "-inf".
fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::String(s) if s == "inf" => f64::INFINITY,
        _ => v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")),
    }
}

fn f(p: &Value, k: &str) -> f32 {
    num(&p[k]) as f32
}

fn i(p: &Value, k: &str) -> i32 {
    p[k].as_i64().unwrap_or_else(|| num(&p[k]) as i64) as i32
}

fn u(p: &Value, k: &str) -> u32 {
    p[k].as_u64().unwrap() as u32
}

/// Builds one sampler from the vectors' naming of samplers and parameters.
fn make(name: &str, p: &Value) -> Box<dyn Sampler> {
    match name {
        "greedy" => Box::new(Greedy::new()),
        "dist" => Box::new(Dist::new(u(p, "seed"))),
        "temp" => Box::new(Temp::new(f(p, "t"))),
        "temp-ext" => Box::new(TempExt::new(f(p, "t"), f(p, "delta"), f(p, "exponent"))),
        "top-k" => Box::new(TopK::new(i(p, "k"))),
        "top-p" => Box::new(TopP::new(f(p, "p"), i(p, "min_keep") as usize)),
        "min-p" => Box::new(MinP::new(f(p, "p"), i(p, "min_keep") as usize)),
        "typical" => Box::new(Typical::new(f(p, "p"), i(p, "min_keep") as usize)),
        "xtc" => Box::new(Xtc::new(f(p, "probability"), f(p, "threshold"), i(p, "min_keep") as usize, u(p, "seed"))),
        "top-n-sigma" => Box::new(TopNSigma::new(f(p, "n"))),
        "mirostat" => Box::new(Mirostat::new(i(p, "n_vocab") as usize, u(p, "seed"), f(p, "tau"), f(p, "eta"), i(p, "m"))),
        "mirostat-v2" => Box::new(MirostatV2::new(u(p, "seed"), f(p, "tau"), f(p, "eta"))),
        "adaptive-p" => Box::new(AdaptiveP::new(f(p, "target"), f(p, "decay"), u(p, "seed"))),
        "penalties" => Box::new(Penalties::new(
            i(p, "n_vocab") as usize,
            i(p, "penalty_last_n"),
            f(p, "penalty_repeat"),
            f(p, "penalty_freq"),
            f(p, "penalty_present"),
        )),
        "dry" => {
            let breakers: Vec<Vec<i32>> = p["seq_breakers_tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_array().unwrap().iter().map(|t| t.as_i64().unwrap() as i32).collect())
                .collect();
            Box::new(Dry::from_token_breakers(
                1 << 16,
                f(p, "dry_multiplier"),
                f(p, "dry_base"),
                i(p, "dry_allowed_length"),
                i(p, "dry_penalty_last_n"),
                &breakers,
            ))
        }
        "logit-bias" => {
            let biases = p["biases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| (b[0].as_i64().unwrap() as i32, num(&b[1]) as f32))
                .collect();
            Box::new(LogitBias::new(i(p, "n_vocab") as usize, biases))
        }
        other => panic!("unknown sampler in vectors: {other}"),
    }
}

fn make_chain(chain: &Value) -> Chain {
    let mut c = Chain::new();
    for s in chain.as_array().unwrap() {
        c.push(make(s["sampler"].as_str().unwrap(), &s["params"]));
    }
    c
}

/// llama.cpp's test-harness array: id = i, logit = logf(p), p = p.
fn array_from_probs(probs: &[f32]) -> Candidates {
    Candidates::from_token_data(
        probs.iter().enumerate().map(|(i, &p)| TokenData { id: i as i32, logit: p.ln(), p }).collect(),
    )
}

/// The generator of `derived_reference.inputs.generator`.
fn generated_logits(seed: u32, n: usize) -> Vec<f32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((x >> 8) % 20_000) as f32 / 1000.0f32 - 10.0f32
        })
        .collect()
}

fn named_input(v: &Value, name: &str) -> Vec<f32> {
    match name {
        "logits_4096_seed11" => generated_logits(11, 4096),
        _ => v["derived_reference"]["inputs"][name]["values"]
            .as_array()
            .unwrap_or_else(|| panic!("input {name}"))
            .iter()
            .map(|x| num(x) as f32)
            .collect(),
    }
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| num(x) as f32).collect()
}

fn ids(v: &Value) -> Vec<i32> {
    v.as_array().unwrap().iter().map(|x| x.as_i64().unwrap() as i32).collect()
}

#[test]
fn llama_test_sampling_cases() {
    let v = vectors();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 41);
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let mut cands = array_from_probs(&f32s(&case["input_probs"]));
        let chain = case["chain"].as_array().unwrap();
        let mut samplers: Vec<Box<dyn Sampler>> =
            chain.iter().map(|s| make(s["sampler"].as_str().unwrap(), &s["params"])).collect();
        if let Some(acc) = case.get("accepted_tokens").and_then(|a| a.as_array()) {
            for t in acc {
                samplers[0].accept(t.as_i64().unwrap() as i32);
            }
        }
        for s in &mut samplers {
            s.apply(&mut cands);
        }
        let expected = f32s(&case["expected_probs"]);
        let size = case["expected_size"].as_u64().unwrap() as usize;
        assert_eq!(cands.len(), size, "{id}: size");
        for (k, (got, want)) in cands.as_slice().iter().zip(&expected).enumerate() {
            assert!((got.p - want).abs() < 1e-5, "{id}: p[{k}] = {} want {want}", got.p);
        }
        // Stronger than llama.cpp's own test: the ids and order the real code produced.
        let obs = &case["observed"];
        let got_ids: Vec<i32> = cands.as_slice().iter().map(|d| d.id).collect();
        assert_eq!(got_ids, ids(&obs["ids"]), "{id}: ids");
        assert_eq!(cands.is_sorted(), obs["sorted"].as_bool().unwrap(), "{id}: sorted flag");
        if let Some(sel) = obs.get("selected_index").and_then(|s| s.as_i64()) {
            if sel >= 0 {
                assert_eq!(cands.selected(), Some(sel as usize), "{id}: selected");
            }
        }
    }
}

#[test]
fn sampler_queue_cases() {
    let v = vectors();
    let cases = v["chain_cases"].as_array().unwrap();
    assert_eq!(cases.len(), 24);
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let n = case["n_vocab"].as_u64().unwrap() as usize;
        let logits: Vec<f32> = (0..n).map(|i| (i as f32).ln()).collect();
        let mut cands = Candidates::new();
        cands.fill_f32(&logits);
        let p = &case["params"];
        for stage in case["stages"].as_array().unwrap() {
            let mut s: Box<dyn Sampler> = match stage["char"].as_str().unwrap() {
                "k" => Box::new(TopK::new(i(p, "top_k"))),
                "p" => Box::new(TopP::new(f(p, "top_p"), i(p, "top_p_min_keep") as usize)),
                "m" => Box::new(MinP::new(f(p, "min_p"), i(p, "min_p_min_keep") as usize)),
                c => panic!("{id}: stage {c}"),
            };
            s.apply(&mut cands);
            Dist::new(0).apply(&mut cands);
            let size = stage["expected_size"].as_u64().unwrap() as usize;
            assert_eq!(cands.len(), size, "{id}: size");
            assert_eq!(cands.is_sorted(), stage["sorted_after"].as_bool().unwrap(), "{id}: sorted");
            let data = cands.as_slice();
            for key in ["expected_first_id", "first_id_observed_unchecked"] {
                if let Some(x) = stage.get(key).and_then(|x| x.as_i64()) {
                    assert_eq!(data[0].id as i64, x, "{id}: {key}");
                }
            }
            for key in ["expected_last_id", "last_id_observed_unchecked"] {
                if let Some(x) = stage.get(key).and_then(|x| x.as_i64()) {
                    assert_eq!(data[data.len() - 1].id as i64, x, "{id}: {key}");
                }
            }
        }
    }
}

#[test]
fn dist_singleton_consumes_one_draw() {
    let v = vectors();
    let case = &v["rng_alignment_cases"][0];
    let seed = case["seed"].as_u64().unwrap() as u32;
    let mut singleton = Dist::new(seed);
    let mut control = Dist::new(seed);
    let mut c = Candidates::new();
    c.fill_f32(&[0.0]);
    singleton.apply(&mut c);
    assert_eq!(c.selected(), Some(0));
    c.fill_f32(&[0.0, 0.0]);
    control.apply(&mut c);
    assert_eq!(c.selected().unwrap() as i64, case["observed"]["first_selected_control"].as_i64().unwrap());
    let flat = vec![0.0f32; 256];
    for want in ids(&case["observed"]["selected_tokens_both"]) {
        c.fill_f32(&flat);
        singleton.apply(&mut c);
        let a = c.selected_token().unwrap().id;
        c.fill_f32(&flat);
        control.apply(&mut c);
        let b = c.selected_token().unwrap().id;
        assert_eq!((a, b), (want, want));
    }
}

#[test]
fn rng_reference_values() {
    let v = vectors();
    let rng = &v["derived_reference"]["rng"];
    let mut r = LlamaRng::new(5489);
    let mut last = 0;
    for _ in 0..10_000 {
        last = r.next_u32();
    }
    assert_eq!(last as u64, rng["check_default_seed_5489_10000th_output"].as_u64().unwrap());
    for s in rng["per_seed"].as_array().unwrap() {
        let seed = s["seed"].as_u64().unwrap() as u32;
        let mut r = LlamaRng::new(seed);
        for want in s["mt19937_first_outputs"].as_array().unwrap() {
            assert_eq!(r.next_u32() as u64, want.as_u64().unwrap(), "seed {seed}");
        }
        let mut r = LlamaRng::new(seed);
        for want in s["uniform_f64_first4_hex"].as_array().unwrap() {
            let w = u64::from_str_radix(want.as_str().unwrap(), 16).unwrap();
            assert_eq!(r.uniform_f64().to_bits(), w, "seed {seed} f64");
        }
        let mut r = LlamaRng::new(seed);
        for want in s["uniform_f32_first4_hex"].as_array().unwrap() {
            let w = u32::from_str_radix(want.as_str().unwrap(), 16).unwrap();
            assert_eq!(r.uniform_f32().to_bits(), w, "seed {seed} f32");
        }
        let mut r = LlamaRng::new(seed);
        let w = [0.1f32, 0.2, 0.3, 0.4];
        for want in s["discrete_distribution_over_0.1_0.2_0.3_0.4_first8"].as_array().unwrap() {
            assert_eq!(discrete_pick(w.iter().copied(), 4, &mut r) as u64, want.as_u64().unwrap(), "seed {seed} discrete");
        }
    }
}

#[test]
fn dist_streams() {
    let v = vectors();
    for s in v["derived_reference"]["dist_streams"].as_array().unwrap() {
        let logits = named_input(&v, s["input"].as_str().unwrap());
        let seed = s["seed"].as_u64().unwrap() as u32;
        let mut d = Dist::new(seed);
        let mut c = Candidates::new();
        for (step, want) in ids(&s["selected_tokens"]).into_iter().enumerate() {
            c.fill_f32(&logits);
            d.apply(&mut c);
            assert_eq!(c.selected_token().unwrap().id, want, "seed {seed} step {step}");
        }
    }
}

#[test]
fn multi_step_chains() {
    let v = vectors();
    let chains = v["derived_reference"]["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 12);
    for case in chains {
        let id = case["id"].as_str().unwrap();
        let logits = named_input(&v, case["input"].as_str().unwrap());
        let mut chain = make_chain(&case["chain"]);
        let sizes = ids(&case["final_sizes"]);
        let mut c = Candidates::new();
        for (step, want) in ids(&case["selected_tokens"]).into_iter().enumerate() {
            c.fill_f32(&logits);
            chain.apply(&mut c);
            let tok = c.selected_token().unwrap().id;
            assert_eq!(tok, want, "{id}: step {step}");
            assert_eq!(c.len() as i32, sizes[step], "{id}: size at step {step}");
            chain.accept(tok);
        }
    }
}

#[test]
fn tie_orders() {
    let v = vectors();
    for case in v["derived_reference"]["tie_order"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let logits = match id {
            "tie_topk3" => vec![0.0f32; 10],
            "tie_topk200" => vec![0.0f32; 300],
            _ => generated_logits(11, 4096),
        };
        let mut c = Candidates::new();
        c.fill_f32(&logits);
        let mut s: Box<dyn Sampler> = match id {
            "tie_topk3" => Box::new(TopK::new(3)),
            "tie_topk200" | "bucket_topk200" => Box::new(TopK::new(200)),
            "topp_large" => Box::new(TopP::new(0.5, 1)),
            "minp_unsorted" => Box::new(MinP::new(0.5, 1)),
            "minp_fallback" => Box::new(MinP::new(0.99, 5)),
            other => panic!("unknown tie case {other}"),
        };
        s.apply(&mut c);
        assert_eq!(c.len() as u64, case["out_size"].as_u64().unwrap(), "{id}: size");
        assert_eq!(c.is_sorted(), case["out_sorted"].as_bool().unwrap(), "{id}: sorted");
        let head = ids(&case["out_ids_head"]);
        let got: Vec<i32> = c.as_slice().iter().take(head.len()).map(|d| d.id).collect();
        assert_eq!(got, head, "{id}: ids");
        let lh = f32s(&case["out_logits_head"]);
        for (d, w) in c.as_slice().iter().zip(&lh) {
            assert!((d.logit - w).abs() < 1e-5, "{id}: logit");
        }
        if let Some(ph) = case.get("out_probs_head") {
            for (d, w) in c.as_slice().iter().zip(&f32s(ph)) {
                assert!((d.p - w).abs() < 1e-8, "{id}: p {} vs {w}", d.p);
            }
        }
    }
}

#[test]
fn misc_cases() {
    let v = vectors();
    for case in v["derived_reference"]["misc"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let logits = match case.get("input_logits") {
            Some(l) => f32s(l),
            None => named_input(&v, case["input"].as_str().unwrap()),
        };
        let mut c = Candidates::new();
        c.fill_f32(&logits);
        let p = case.get("params").cloned().unwrap_or(Value::Null);
        make(case["sampler"].as_str().unwrap(), &p).apply(&mut c);
        if let Some(sel) = case.get("selected_index") {
            assert_eq!(c.selected().unwrap() as u64, sel.as_u64().unwrap(), "{id}");
        }
        if let Some(out) = case.get("out_logits") {
            let got: Vec<f32> = c.as_slice().iter().map(|d| d.logit).collect();
            assert_eq!(got, f32s(out), "{id}");
        }
        if let Some(out) = case.get("out_probs") {
            for (d, w) in c.as_slice().iter().zip(&f32s(out)) {
                assert!((d.p - w).abs() < 1e-7, "{id}");
            }
        }
    }
}
