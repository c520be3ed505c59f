//! Benchmark: a token trie with long forced runs, its forced tokens decoded one per forward
//! pass (the reference) or together in one pass (`Engine::set_decode_forced`, the default), side
//! by side in one run, on SmolLM2-135M with one thread. The answers of both ways are checked to
//! be identical before anything is reported.
//!
//! ```sh
//! cargo run --release -p nucleus-runtime --example forced_runs -- [ROUNDS]
//! ```

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use nucleus_runtime::engine::{Finished, Pass, SlotFailure};
use nucleus_runtime::sequence::Step;
use nucleus_runtime::{
    locate, models_dir, prompt_tokens, token_trie, ContextOptions, Engine, LlamaCppModel, Model, ModelRef, Pip, Prompt,
    SeqId, Sequence, SequenceOptions, SlotJob, SlotSink,
};
use nucleus_sampler::{SamplingParams, Token};
use serde_json::json;

/// Leaves sharing short openings, each then forced for tens of tokens (a catalogue of fixed
/// answers, as a trie of product names or canned replies would be).
const LEAVES: [&str; 6] = [
    " The order has shipped and will arrive within three to five business days; you can follow it with the tracking link in your confirmation email.",
    " The order has been cancelled at your request and the full amount will be returned to your original payment method within ten days.",
    " Your account password was changed successfully; if you did not make this change, please contact our support team immediately by phone.",
    " Your account is locked after too many failed sign-in attempts; wait thirty minutes or reset your password from the sign-in page.",
    " We are sorry, but this item is out of stock in your size; we will email you as soon as it is available again in our warehouse.",
    " We are happy to confirm your table for four people at seven in the evening; please arrive ten minutes early and ask for the host.",
];

#[derive(Default)]
struct Tally {
    tokens: Vec<Token>,
    logprobs: Vec<u32>,
    decode_calls: usize,
}

impl SlotSink<()> for Tally {
    fn pass(&mut self, pass: Pass<'_>, _took: Duration) {
        if let Pass::Decode { .. } = pass {
            self.decode_calls += 1;
        }
    }

    fn token(&mut self, _slot: SeqId, _tag: &mut (), step: &Step<'_>) -> ControlFlow<()> {
        self.tokens.push(step.event.token);
        self.logprobs.push(step.event.logprob.map_or(0, f32::to_bits));
        ControlFlow::Continue(())
    }

    fn finished(&mut self, _slot: SeqId, _done: Finished<()>) {}

    fn failed(&mut self, _slot: SeqId, _tag: (), failure: SlotFailure) {
        panic!("generation failed: {failure}");
    }
}

/// One generation of a leaf (seeded choice at the branch points); its time and tally.
fn generate(model: &LlamaCppModel, prompt: &[Token], seed: u32, batched: bool) -> (Duration, Tally) {
    let desc = json!({"modelId": "m", "descriptors": [{"path": "reply", "leaves": LEAVES.iter().enumerate().map(|(i, t)| {
        json!({"name": format!("r{i}"), "tokens": model.tokenizer().encode(t, false, false).unwrap()})
    }).collect::<Vec<_>>()}]});
    let params = SamplingParams { seed, temp: 1.0, ..Default::default() };
    let opts = SequenceOptions { n_probs: Some(1), ..Default::default() };
    let mut seq = Sequence::new(model, &params, opts).expect("sequence");
    seq.set_token_trie(token_trie(&desc, "m", model.n_vocab(), "reply", false).expect("trie"), false);
    seq.accept_prompt(prompt);
    let mut ctx =
        model.new_context(&ContextOptions { n_ctx: Some(512), threads: Some(1), ..Default::default() }).unwrap();
    let mut engine: Engine<()> = Engine::new(1, ctx.n_ctx(), nucleus_runtime::PREFILL_CHUNK);
    engine.set_decode_forced(batched);
    let mut tally = Tally::default();
    let job =
        SlotJob { tag: (), prompt: prompt.into(), sequence: seq, cached: 0, score_prompt: None, prompt_only: false };
    let t0 = Instant::now();
    assert!(engine.start(ctx.as_mut(), 0, job, &mut tally).is_ok());
    while !engine.is_idle() {
        engine.prefill(ctx.as_mut(), &mut tally);
        engine.step(ctx.as_mut(), &mut tally);
    }
    (t0.elapsed(), tally)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(12);
    let model_ref = ModelRef::parse("smollm2").expect("catalog");
    let (path, _) = locate(&model_ref, &models_dir(), &Pip::default(), &mut |_| {}).expect("model");
    let model = LlamaCppModel::load(&path).expect("load");
    let prompt = prompt_tokens(&model, &Prompt::Text("Customer service reply:".into())).expect("prompt");

    let (mut one_by_one, mut batched) = (Vec::new(), Vec::new());
    let (mut tokens, mut calls_ref, mut calls_fast) = (0, 0, 0);
    for round in 0..rounds {
        let seed = round as u32;
        // Alternate which goes first, so neither always runs on a warmer machine.
        let order = if round % 2 == 0 { [false, true] } else { [true, false] };
        let mut got = Vec::new();
        for batch in order {
            let (t, tally) = generate(&model, &prompt, seed, batch);
            let per_token = t.as_secs_f64() * 1e3 / tally.tokens.len() as f64;
            if batch {
                batched.push(per_token);
                calls_fast += tally.decode_calls;
            } else {
                one_by_one.push(per_token);
                calls_ref += tally.decode_calls;
                tokens += tally.tokens.len();
            }
            got.push((tally.tokens, tally.logprobs));
        }
        assert_eq!(got[0], got[1], "seed {seed}: batched forced runs changed the answer");
    }
    let (r, b) = (median(one_by_one), median(batched));
    println!("{rounds} generations, {tokens} tokens in all, identical tokens and logprobs both ways");
    println!("one decode call per token : {r:.2} ms/token (median), {calls_ref} decode calls");
    println!("forced runs in one call   : {b:.2} ms/token (median), {calls_fast} decode calls");
    println!("speed-up                  : {:.2}x", r / b);
}
