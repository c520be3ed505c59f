//! Speculative decoding never changes an answer: for random seeds, sampler chains (greedy,
//! llama.cpp's default, mirostat v1 and v2, DRY, penalties), prompts with and without text to
//! copy, and a grammar constraint, generating with n-gram drafts gives the tokens and the
//! logprob bits of plain decoding — and the drafts were really used (accepted tokens saved
//! forward passes), so the test does not compare plain decoding with itself. Also: the logits
//! of a verify batch (a token and a draft in one pass, the rejected tail cut with seq_rm) are
//! the bits of one decode call per token. SmolLM2-135M, one thread.

mod common;

use std::ops::ControlFlow;
use std::sync::Arc;

use common::{context, smollm2, N_CTX};
use nucleus_runtime::{
    generate_sequence, grammar_sampler, prompt_tokens, Context, Model, NgramCache, OutputConstraint, Prompt, Sequence,
    SequenceOptions, SpecOptions, SpecStats,
};
use nucleus_sampler::{MirostatMode, SamplingParams, Token};

const COPY: &str = "Repeat this text exactly: The quick brown fox jumps over the lazy dog. \
    The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.\n";
const CODE: &str = "Here is a function:\nfn add(a: i32, b: i32) -> i32 {\n    let sum = a + b;\n    \
    println!(\"{} + {} = {}\", a, b, sum);\n    sum\n}\nRewrite it with the name plus:\n";
const PLAIN: &str = "Once upon a time, in a small village,";

/// Tokens, logprob bits, and what speculation did.
fn answer(
    prompt: &str,
    params: &SamplingParams,
    spec: Option<SpecOptions>,
    grammar: Option<&str>,
) -> (Vec<Token>, Vec<u32>, Option<SpecStats>) {
    let model = smollm2();
    let tokens = prompt_tokens(model, &Prompt::Text(prompt.into())).expect("prompt");
    let opts = SequenceOptions { max_tokens: Some(48), n_probs: Some(2), ..Default::default() };
    let mut seq = Sequence::new(model, params, opts).expect("sequence");
    if let Some(g) = grammar {
        seq.set_grammar(grammar_sampler(model, &OutputConstraint::Gbnf(g.into())).expect("grammar"));
    }
    if let Some(s) = spec {
        seq.set_speculation(s);
    }
    let mut ctx = context(model, N_CTX);
    let mut logprobs = Vec::new();
    let stats = generate_sequence(&mut ctx, &tokens, seq, None, &mut |ev| {
        logprobs.push(ev.logprob.expect("n_probs").to_bits());
        ControlFlow::Continue(())
    })
    .expect("generate");
    (stats.tokens, logprobs, stats.spec)
}

fn chains(seed: u32) -> Vec<(&'static str, SamplingParams)> {
    let d = SamplingParams { seed, ..Default::default() };
    vec![
        ("greedy", SamplingParams { temp: 0.0, ..d.clone() }),
        ("default", d.clone()),
        ("cold", SamplingParams { temp: 0.3, ..d.clone() }),
        ("mirostat1", SamplingParams { mirostat: MirostatMode::V1, ..d.clone() }),
        ("mirostat2", SamplingParams { mirostat: MirostatMode::V2, temp: 0.5, ..d.clone() }),
        ("dry", SamplingParams { dry_multiplier: 0.8, temp: 0.4, ..d.clone() }),
        (
            "penalties",
            SamplingParams {
                penalty_repeat: 1.1,
                penalty_freq: 0.2,
                penalty_present: 0.1,
                penalty_last_n: 32,
                temp: 0.4,
                ..d
            },
        ),
    ]
}

/// Two seeds from a fixed generator: the test is reproducible, the seeds are not hand-picked.
fn seeds() -> [u32; 2] {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    [(); 2].map(|()| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 1_000_000) as u32
    })
}

/// Every chain and prompt under one seed: speculative tokens and logprob bits equal plain ones.
fn equals_plain(seed: u32) {
    let spec = SpecOptions { draft_max: 8, draft_min: 1, min_match: 2 };
    let mut total = SpecStats::default();
    for (name, params) in chains(seed) {
        for prompt in [COPY, CODE, PLAIN] {
            let plain = answer(prompt, &params, None, None);
            let fast = answer(prompt, &params, Some(spec), None);
            assert_eq!(plain.0, fast.0, "tokens: {name}, seed {seed}, prompt {prompt:?}");
            assert_eq!(plain.1, fast.1, "logprobs: {name}, seed {seed}, prompt {prompt:?}");
            assert!(plain.2.is_none());
            total.add(&fast.2.expect("stats"));
        }
    }
    eprintln!("seed {seed}: {total:?}");
    assert!(total.accepted > 10, "drafts were hardly used: {total:?}");
    assert!(total.accepted < total.drafted, "no draft was ever rejected: {total:?}");
}

// One test per seed, so the two run side by side on a two-core machine.
#[test]
fn speculative_equals_plain() {
    equals_plain(seeds()[0]);
}

#[test]
fn speculative_equals_plain_second_seed() {
    equals_plain(seeds()[1]);
}

#[test]
fn speculative_equals_plain_under_a_grammar() {
    // Lines of "the quick brown fox" in any order: the drafts copy earlier lines, and drafts
    // the grammar refuses end before verification.
    let g = r#"root ::= line line line line
line ::= ("the quick brown fox" | "the lazy dog" | "jumps over") "\n""#;
    let spec = SpecOptions { draft_max: 6, draft_min: 1, min_match: 2 };
    let mut total = SpecStats::default();
    for seed in [1, 77, 4242] {
        for (name, params) in chains(seed) {
            let plain = answer(COPY, &params, None, Some(g));
            let fast = answer(COPY, &params, Some(spec), Some(g));
            assert_eq!(plain.0, fast.0, "tokens: {name}, seed {seed}");
            assert_eq!(plain.1, fast.1, "logprobs: {name}, seed {seed}");
            total.add(&fast.2.expect("stats"));
        }
    }
    eprintln!("{total:?}");
    assert!(total.accepted > 0, "{total:?}");
}

/// The logits after each token of a verify batch (pending token + draft in one pass) are the
/// bits of decoding them one per call, also after a rejected tail was cut and decoded again.
#[test]
fn verify_batch_logits_are_batch_invariant() {
    let model = smollm2();
    assert!(model.batch_invariant(), "the model must be batch-invariant for exact speculation");
    let prompt = prompt_tokens(model, &Prompt::Text(CODE.into())).expect("prompt");
    let run: Vec<Token> = prompt_tokens(model, &Prompt::Text(" fn plus(a: i32, b: i32) -> i32 {".into()))
        .expect("run")
        .into_iter()
        .skip(1)
        .collect();
    let n_vocab = model.n_vocab();
    // One decode call per token.
    let mut one = context(model, N_CTX);
    one.prefill(0, &prompt).unwrap();
    let mut rows_one = Vec::new();
    for &t in &run {
        one.decode(&[(0, t)]).unwrap();
        rows_one.push(one.logits(0).unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    }
    // The whole run in one pass.
    let mut batch = context(model, N_CTX);
    batch.prefill(0, &prompt).unwrap();
    batch.decode_runs(&[(0, &run)]).unwrap();
    for (i, row) in rows_one.iter().enumerate() {
        let got: Vec<u32> = batch.logits_at(0, i).unwrap().iter().map(|x| x.to_bits()).collect();
        assert_eq!(got.len(), n_vocab);
        assert!(got == *row, "row {i} of the verify batch differs from one decode per token");
    }
    // Reject after 3 tokens: cut the tail, decode the rest again one per call.
    batch.truncate(0, prompt.len() + 3).unwrap();
    for (i, &t) in run.iter().enumerate().skip(3) {
        batch.decode(&[(0, t)]).unwrap();
        let got: Vec<u32> = batch.logits(0).unwrap().iter().map(|x| x.to_bits()).collect();
        assert!(got == rows_one[i], "row {i} after a cut tail differs");
    }
    // And a draft after the cut, again in one pass.
    batch.truncate(0, prompt.len() + 2).unwrap();
    batch.decode_runs(&[(0, &run[2..])]).unwrap();
    for (i, row) in rows_one.iter().enumerate().skip(2) {
        let got: Vec<u32> = batch.logits_at(0, i - 2).unwrap().iter().map(|x| x.to_bits()).collect();
        assert!(got == *row, "row {i} of a second verify batch differs");
    }
}

/// A cache of earlier sequences' tokens (`NgramCache`) drafts a request that repeats an earlier
/// answer: a prompt with nothing to copy drafts little the first time, and its repeat drafts
/// the cached answer, which is accepted; the tokens and logprob bits stay plain decoding's,
/// greedy and sampled.
#[test]
fn a_cache_of_earlier_answers_drafts_a_repeat() {
    let model = smollm2();
    let tokens = prompt_tokens(model, &Prompt::Text(PLAIN.into())).expect("prompt");
    for (name, params) in chains(11).into_iter().take(2) {
        let (plain, plain_lp, _) = answer(PLAIN, &params, None, None);
        let cache = Arc::new(NgramCache::new(6, 4096));
        let mut stats = Vec::new();
        for _ in 0..2 {
            let opts = SequenceOptions { max_tokens: Some(48), n_probs: Some(2), ..Default::default() };
            let mut seq = Sequence::new(model, &params, opts).expect("sequence");
            seq.set_speculation(SpecOptions::default());
            seq.set_speculation_cache(cache.clone());
            let mut ctx = context(model, N_CTX);
            let mut lp = Vec::new();
            let s = generate_sequence(&mut ctx, &tokens, seq, None, &mut |ev| {
                lp.push(ev.logprob.expect("n_probs").to_bits());
                ControlFlow::Continue(())
            })
            .expect("generate");
            assert_eq!(s.tokens, plain, "{name}: the cache changed the answer");
            assert_eq!(lp, plain_lp, "{name}: the cache changed the logprobs");
            stats.push(s.spec.expect("speculated"));
        }
        assert!(cache.held() >= 2 * tokens.len(), "{name}: both sequences are in the cache");
        assert!(stats[1].accepted > stats[0].accepted + 16, "{name}: the repeat drafted the cached answer: {stats:?}");
        eprintln!("{name}: first {:?}, repeat {:?}", stats[0], stats[1]);
    }
}
