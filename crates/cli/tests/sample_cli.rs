//! `nucleus sample` follows its command-line contract: input formats, flags, output, errors.

mod common;

use common::{nucleus, write};

use serde_json::Value;

fn small_logits() -> Vec<f32> {
    [0.1f32, 0.2, 0.3, 0.4].iter().map(|p| p.ln()).collect()
}

fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"))
}

const PLAIN: &[&str] = &["--temp", "1", "--top-k", "0", "--top-p", "1", "--min-p", "0"];

#[test]
fn dist_stream_matches_llama_for_all_input_formats() {
    let l = small_logits();
    let arr = write("a.json", serde_json::to_string(&l).unwrap().as_bytes());
    let obj = write("o.json", format!("{{\"logits\": {}}}", serde_json::to_string(&l).unwrap()).as_bytes());
    let raw: Vec<u8> = l.iter().flat_map(|x| x.to_le_bytes()).collect();
    let f32f = write("r.f32", &raw);
    // llama.cpp's dist stream for seed 0 on these logits (testdata/vectors/llama-test-sampling.json).
    let want = [2, 3, 3, 3, 3, 2, 1, 0, 1, 2, 3, 2, 2, 3, 2, 3];
    for p in [&arr, &obj, &f32f] {
        let mut args = vec!["sample", "--logits", p.to_str().unwrap(), "--seed", "0", "--draws", "16"];
        args.extend_from_slice(PLAIN);
        let (code, out, err) = nucleus(&args);
        assert_eq!(code, 0, "{err}");
        let v = json_of(&out);
        let got: Vec<i64> = v["tokens"].as_array().unwrap().iter().map(|t| t.as_i64().unwrap()).collect();
        assert_eq!(got, want.iter().map(|&x| x as i64).collect::<Vec<_>>());
        assert!(v.get("probs").is_none());
    }
}

#[test]
fn n_probs_history_and_bias() {
    let p = write("b.json", serde_json::to_string(&small_logits()).unwrap().as_bytes());
    let (code, out, err) = nucleus(&[
        "sample",
        "--logits",
        p.to_str().unwrap(),
        "--seed",
        "7",
        "--n-probs",
        "2",
        "--logit-bias",
        "3-inf",
        "--history",
        "2,2",
        "--repeat-penalty",
        "5",
        "--draws",
        "3",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json_of(&out);
    let toks = v["tokens"].as_array().unwrap();
    assert_eq!(toks.len(), 3);
    assert!(toks.iter().all(|t| t.as_i64() != Some(3)), "banned token sampled");
    let probs = v["probs"].as_array().unwrap();
    assert!(probs.len() <= 2 && !probs.is_empty());
    let ps: Vec<f64> = probs.iter().map(|e| e["p"].as_f64().unwrap()).collect();
    assert!(ps.windows(2).all(|w| w[0] >= w[1]));
    assert!(probs.iter().all(|e| e["id"].is_i64()));
}

#[test]
fn greedy_picks_the_argmax_and_seq_flags_work() {
    let p = write("g.json", b"[0.5, 3.0, -1.0, \"-inf\", 2.9]");
    let (code, out, err) = nucleus(&["sample", "--logits", p.to_str().unwrap(), "--temp", "0", "--draws", "4"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_of(&out)["tokens"], serde_json::json!([1, 1, 1, 1]));
    let (code, out, _) =
        nucleus(&["sample", "--logits", p.to_str().unwrap(), "--sampling-seq", "kt", "--top-k", "1", "--seed", "-1"]);
    assert_eq!(code, 0);
    assert_eq!(json_of(&out)["tokens"], serde_json::json!([1]));
    let (code, out, _) =
        nucleus(&["sample", "--logits", p.to_str().unwrap(), "--samplers", "top_k;temperature", "--top-k", "1"]);
    assert_eq!(code, 0);
    assert_eq!(json_of(&out)["tokens"], serde_json::json!([1]));
    let (code, out, _) = nucleus(&["sample", "--logits", p.to_str().unwrap(), "--mirostat", "2", "--seed", "1"]);
    assert_eq!(code, 0);
    assert_eq!(json_of(&out)["tokens"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_input_is_a_clear_error() {
    let good = write("ok.json", b"[0.1, 0.2]");
    let g = good.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str, Vec<u8>)> = vec![
        (vec!["sample", "--logits", "/nonexistent/x.json"], "cannot read", vec![]),
        (vec!["sample", "--logits", "@bad"], "malformed JSON", b"[1, 2".to_vec()),
        (vec!["sample", "--logits", "@bad"], "not a number", b"[1, true]".to_vec()),
        (vec!["sample", "--logits", "@bad"], "NaN", b"[1, \"nan\"]".to_vec()),
        (vec!["sample", "--logits", "@bad"], "empty vocabulary", b"[]".to_vec()),
        (vec!["sample", "--logits", "@bad"], "\"logits\"", b"{\"x\": 1}".to_vec()),
        (vec!["sample", "--logits", g, "--repeat-penalty", "0"], "penalty_repeat", vec![]),
        (vec!["sample", "--logits", g, "--top-p", "1.5"], "top_p", vec![]),
        (vec!["sample", "--logits", g, "--mirostat", "3"], "mirostat", vec![]),
        (vec!["sample", "--logits", g, "--history", "5"], "outside the vocabulary", vec![]),
        (vec!["sample", "--logits", g, "--logit-bias", "9+1"], "logit_bias", vec![]),
        (vec!["sample", "--logits", g, "--logit-bias", "x"], "--logit-bias", vec![]),
        (vec!["sample", "--logits", g, "--samplers", "top_k;nope"], "samplers", vec![]),
        (vec!["sample", "--logits", g, "--seed", "-2"], "--seed", vec![]),
        (vec!["sample", "--logits", g, "--repeat-last-n", "-1"], "penalty_last_n", vec![]),
        (vec!["sample", "--logits", g, "--dry-sequence-breaker", "\n"], "vocabulary", vec![]),
        (vec!["sample", "--logits", g, "--logit-bias", "0-inf", "--logit-bias", "1-inf"], "-inf", vec![]),
    ];
    for (i, (args, needle, file)) in cases.into_iter().enumerate() {
        let bad = write(&format!("bad{i}.json"), &file);
        let args: Vec<&str> = args.iter().map(|a| if *a == "@bad" { bad.to_str().unwrap() } else { a }).collect();
        let (code, out, err) = nucleus(&args);
        assert_ne!(code, 0, "{args:?} should fail");
        assert!(out.is_empty(), "{args:?} printed to stdout: {out}");
        assert!(err.contains(needle), "{args:?}: stderr {err:?} lacks {needle:?}");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    }
    // `none` clears the breaker list and is fine without a vocabulary.
    let (code, _, err) =
        nucleus(&["sample", "--logits", g, "--dry-sequence-breaker", "none", "--dry-multiplier", "0.8"]);
    assert_eq!(code, 0, "{err}");
}
