//! Every case of `testdata/vectors/llama-test-sampling.json` (llama.cpp's own sampler tests,
//! the sampler-queue cases, RNG reference values, dist streams, multi-step chains, tie
//! orders), run against nucleus-sampler.

mod common;

use std::collections::BTreeMap;

use common::vectors::{
    build, build_chain, check_tie_case, f, f32s, from_probs, i, ids, ids_of, input, load, logits_of, recorded_chains,
    run_chain, seed, tie_input, u, Recorded,
};
use nucleus_sampler::rng::{discrete_pick, LlamaRng};
use nucleus_sampler::samplers::{dist::Dist, min_p::MinP, top_k::TopK, top_p::TopP};
use nucleus_sampler::{Candidates, Sampler};

/// The upstream test-sampling cases: sizes and probabilities as llama.cpp's test checks them,
/// and (stronger) the ids, order, bit-exact logits and probabilities, sorted flag and selected
/// index the real code produced.
#[test]
fn llama_test_sampling_cases() {
    let v = load();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 41);
    let mut ran: BTreeMap<&str, usize> = BTreeMap::new();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let sampler = case["sampler"].as_str().unwrap();
        let probs = f32s(&case["input_probs"]);
        let mut cands = from_probs(&probs);
        let chain = &case["chain"];
        assert_eq!(chain[0]["sampler"].as_str().unwrap(), sampler, "{id}: chain starts with the sampler");
        let mut samplers = build_chain(chain, probs.len());
        let name = samplers[0].name();
        if sampler == "penalties" || sampler == "dry" {
            // Every upstream penalties / DRY case is an active sampler.
            assert_eq!(name, sampler, "{id}: name");
        } else {
            assert!(name == sampler || name.strip_prefix('?') == Some(sampler), "{id}: name {name}");
        }
        if let Some(acc) = case.get("accepted_tokens") {
            for t in ids(acc) {
                samplers[0].accept(t);
            }
        }
        for s in &mut samplers {
            s.apply(&mut cands);
        }

        let expected = f32s(&case["expected_probs"]);
        let size = case["expected_size"].as_u64().unwrap() as usize;
        let tol = (case["tolerance_abs"].as_f64().unwrap_or(1e-5) as f32).min(1e-5);
        assert_eq!(cands.len(), size, "{id}: size");
        for (k, (got, want)) in cands.as_slice().iter().zip(&expected).enumerate() {
            assert!((got.p - want).abs() < tol, "{id}: p[{k}] = {} want {want}", got.p);
        }

        // Bit-exact: the ids (with ties, e.g. typical_0.5_b, the libstdc++ std::sort tie order
        // that sort.rs emulates), logits and probabilities upstream produced (printed with 9
        // significant digits, which round-trips f32).
        let obs = &case["observed"];
        assert_eq!(ids_of(&cands), ids(&obs["ids"]), "{id}: ids");
        let want_logits: Vec<u32> = f32s(&obs["logits"]).iter().map(|l| l.to_bits()).collect();
        let got_logits: Vec<u32> = logits_of(&cands).iter().map(|l| l.to_bits()).collect();
        assert_eq!(got_logits, want_logits, "{id}: logits bits");
        let want_p: Vec<u32> = f32s(&obs["probs"]).iter().map(|p| p.to_bits()).collect();
        let got_p: Vec<u32> = cands.as_slice().iter().map(|d| d.p.to_bits()).collect();
        assert_eq!(got_p, want_p, "{id}: probability bits");
        assert_eq!(cands.is_sorted(), obs["sorted"].as_bool().unwrap(), "{id}: sorted flag");
        let sel = obs["selected_index"].as_i64().unwrap();
        let want_sel = (sel >= 0).then_some(sel as usize);
        assert_eq!(cands.selected(), want_sel, "{id}: selected");
        *ran.entry(sampler).or_default() += 1;
    }
    // The cases of test-sampling.cpp, by sampler under test.
    let want: BTreeMap<&str, usize> = [
        ("temp", 2),
        ("temp-ext", 2),
        ("top-k", 4),
        ("top-p", 4),
        ("min-p", 9),
        ("xtc", 4),
        ("typical", 2),
        ("penalties", 6),
        ("dry", 5),
        ("top-n-sigma", 3),
    ]
    .into_iter()
    .collect();
    assert_eq!(ran, want, "number of cases run");
}

#[test]
fn sampler_queue_cases() {
    let v = load();
    let cases = v["chain_cases"].as_array().unwrap();
    assert_eq!(cases.len(), 24);
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let n = u(case, "n_vocab");
        let logits: Vec<f32> = (0..n).map(|i| (i as f32).ln()).collect();
        let mut cands = Candidates::new();
        cands.fill_f32(&logits);
        let p = &case["params"];
        for stage in case["stages"].as_array().unwrap() {
            let mut s: Box<dyn Sampler> = match stage["char"].as_str().unwrap() {
                "k" => Box::new(TopK::new(i(p, "top_k"))),
                "p" => Box::new(TopP::new(f(p, "top_p"), u(p, "top_p_min_keep"))),
                "m" => Box::new(MinP::new(f(p, "min_p"), u(p, "min_p_min_keep"))),
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
    let v = load();
    let case = &v["rng_alignment_cases"][0];
    let seed = seed(case);
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
    let v = load();
    let rng = &v["derived_reference"]["rng"];
    let mut r = LlamaRng::new(5489);
    let mut last = 0;
    for _ in 0..10_000 {
        last = r.next_u32();
    }
    assert_eq!(last as u64, rng["check_default_seed_5489_10000th_output"].as_u64().unwrap());
    for s in rng["per_seed"].as_array().unwrap() {
        let seed = seed(s);
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
            assert_eq!(
                discrete_pick(w.iter().copied(), 4, &mut r) as u64,
                want.as_u64().unwrap(),
                "seed {seed} discrete"
            );
        }
    }
}

#[test]
fn dist_streams() {
    let v = load();
    for s in v["derived_reference"]["dist_streams"].as_array().unwrap() {
        let logits = input(&v, s["input"].as_str().unwrap());
        let seed = seed(s);
        let mut d = Dist::new(seed);
        let mut c = Candidates::new();
        for (step, want) in ids(&s["selected_tokens"]).into_iter().enumerate() {
            c.fill_f32(&logits);
            d.apply(&mut c);
            assert_eq!(c.selected_token().unwrap().id, want, "seed {seed} step {step}");
        }
    }
}

/// Every recorded multi-step chain (`derived_reference.chains`), token by token, with the
/// candidate count after each step.
#[test]
fn multi_step_chains() {
    let v = load();
    let chains = recorded_chains(&v);
    assert_eq!(chains.len(), 12);
    let names: Vec<&str> = chains.iter().map(|c| c.id.as_str()).collect();
    for want in [
        "chain_default",
        "chain_penalties",
        "chain_dynatemp",
        "chain_xtc",
        "chain_topnsigma",
        "chain_typical",
        "chain_mirostat1",
        "chain_mirostat2",
        "chain_adaptive_p",
        "chain_adaptive_p_disabled",
        "chain_dry",
        "chain_logit_bias",
    ] {
        assert!(names.contains(&want), "{want} missing from the vectors");
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
/// continues it exactly (adaptive-p excepted: its clone restarts the random stream, see
/// `vectors_samplers_c::adaptive_p_clone_restarts_stream`).
#[test]
fn recorded_chains_reset_and_clone() {
    for Recorded { id, mut chain, logits, steps, tokens, .. } in recorded_chains(&load()) {
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

#[test]
fn tie_orders() {
    let v = load();
    for case in v["derived_reference"]["tie_order"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let mut c = Candidates::new();
        c.fill_f32(&tie_input(&v, case));
        let mut s: Box<dyn Sampler> = match id {
            "tie_topk3" => Box::new(TopK::new(3)),
            "tie_topk200" | "bucket_topk200" => Box::new(TopK::new(200)),
            "topp_large" => Box::new(TopP::new(0.5, 1)),
            "minp_unsorted" => Box::new(MinP::new(0.5, 1)),
            "minp_fallback" => Box::new(MinP::new(0.99, 5)),
            other => panic!("unknown tie case {other}"),
        };
        s.apply(&mut c);
        check_tie_case(case, &c);
    }
}

#[test]
fn misc_cases() {
    let v = load();
    for case in v["derived_reference"]["misc"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let logits = match case.get("input_logits") {
            Some(l) => f32s(l),
            None => input(&v, case["input"].as_str().unwrap()),
        };
        let mut c = Candidates::new();
        c.fill_f32(&logits);
        build(case, logits.len()).apply(&mut c);
        if let Some(sel) = case.get("selected_index") {
            assert_eq!(c.selected().unwrap() as u64, sel.as_u64().unwrap(), "{id}");
        }
        if let Some(out) = case.get("out_logits") {
            assert_eq!(logits_of(&c), f32s(out), "{id}");
        }
        if let Some(out) = case.get("out_probs") {
            for (d, w) in c.as_slice().iter().zip(&f32s(out)) {
                assert!((d.p - w).abs() < 1e-7, "{id}");
            }
        }
    }
}
