//! Forced token-trie tokens decoded in one forward pass ([`Engine::set_decode_forced`], on by
//! default) give exactly what decoding them one call each gives: the same tokens, logprob and
//! top-n bits, stop reason, and tokens left in the KV — with a stop string and a token limit
//! falling inside a forced run, and beside another slot sampling freely. It also checks the
//! fast path took fewer decode calls, so it is not comparing the reference with itself.
//! SmolLM2-135M, one thread.

mod common;

use std::ops::ControlFlow;

use common::smollm2;
use nucleus_runtime::engine::{Finished, Pass, SlotFailure};
use nucleus_runtime::sequence::Step;
use nucleus_runtime::{
    generate_sequence, prompt_tokens, token_trie, ContextOptions, Engine, Model, Prompt, SeqId, Sequence,
    SequenceOptions, SlotJob, SlotSink, StopReason,
};
use nucleus_sampler::{SamplingParams, Token};
use serde_json::{json, Value};

const LEAVES: [&str; 4] = [
    " The quick brown fox jumps over the lazy dog and runs far away into the dark forest beyond the hills.",
    " The quick brown fox sleeps under the old oak tree while the farmer counts his sheep in the field.",
    " A long time ago in a galaxy far, far away, a small ship carried a secret message to the rebels.",
    " A long time ago the river flooded the valley and the villagers built a great wall of stone and clay.",
];

fn descriptor(model: &dyn Model) -> Value {
    let tok = model.tokenizer();
    let leaves: Vec<Value> = LEAVES
        .iter()
        .enumerate()
        .map(|(i, text)| json!({"name": format!("leaf{i}"), "tokens": tok.encode(text, false, false).unwrap()}))
        .collect();
    json!({"modelId": "m", "descriptors": [{"path": "story", "leaves": leaves}]})
}

/// A request: sampling, options, and whether it is constrained by the trie.
#[derive(Clone)]
struct Request {
    params: SamplingParams,
    opts: SequenceOptions,
    trie: bool,
}

fn sequence(model: &dyn Model, r: &Request, prompt: &[Token]) -> Sequence {
    let mut seq = Sequence::new(model, &r.params, r.opts.clone()).expect("sequence");
    if r.trie {
        let trie = token_trie(&descriptor(model), "m", model.n_vocab(), "story", false).expect("trie");
        seq.set_token_trie(trie, false);
    }
    seq.accept_prompt(prompt);
    seq
}

/// What a slot produced, logprobs as bits, and the tokens its KV held at the end.
#[derive(Debug, Default, PartialEq)]
struct Answer {
    tokens: Vec<Token>,
    text: String,
    logprobs: Vec<u32>,
    top: Vec<Vec<(Token, u32)>>,
    stop: Option<StopReason>,
    kv_len: usize,
}

#[derive(Default)]
struct Collect {
    answers: Vec<Answer>,
    decode_calls: usize,
    /// Slots that ended, to read their KV length once the step is over.
    ended: Vec<usize>,
}

impl SlotSink<usize> for Collect {
    fn pass(&mut self, pass: Pass<'_>, _took: std::time::Duration) {
        if let Pass::Decode { .. } = pass {
            self.decode_calls += 1;
        }
    }

    fn token(&mut self, _slot: SeqId, tag: &mut usize, step: &Step<'_>) -> ControlFlow<()> {
        let a = &mut self.answers[*tag];
        let ev = &step.event;
        a.tokens.push(ev.token);
        a.text.push_str(ev.text);
        a.logprobs.push(ev.logprob.expect("n_probs asked").to_bits());
        a.top.push(ev.top.iter().map(|t| (t.id, t.logprob.to_bits())).collect());
        ControlFlow::Continue(())
    }

    fn finished(&mut self, slot: SeqId, done: Finished<usize>) {
        self.answers[done.tag].stop = Some(done.reason);
        self.ended.push(slot);
    }

    fn failed(&mut self, slot: SeqId, tag: usize, failure: SlotFailure) {
        panic!("slot {slot} (request {tag}) failed: {failure}");
    }
}

/// Runs the requests side by side, request i in slot i, with forced runs batched or not.
fn run(model: &dyn Model, prompt: &[Token], reqs: &[Request], decode_forced: bool) -> (Vec<Answer>, usize) {
    let n = reqs.len();
    let opts = ContextOptions {
        n_ctx: Some(512 * n),
        n_seq_max: n,
        threads: Some(1),
        kv_unified: false,
        ..Default::default()
    };
    let mut ctx = model.new_context(&opts).expect("context");
    let mut engine: Engine<usize> = Engine::new(n, ctx.n_ctx_seq(), nucleus_runtime::PREFILL_CHUNK);
    engine.set_decode_forced(decode_forced);
    let mut sink = Collect { answers: (0..n).map(|_| Answer::default()).collect(), ..Default::default() };
    for (i, r) in reqs.iter().enumerate() {
        let job = SlotJob {
            tag: i,
            prompt: prompt.to_vec().into(),
            sequence: sequence(model, r, prompt),
            cached: 0,
            score_prompt: None,
            prompt_only: false,
        };
        assert!(engine.start(ctx.as_mut(), i, job, &mut sink).is_ok());
    }
    while !engine.is_idle() {
        engine.prefill(ctx.as_mut(), &mut sink);
        engine.step(ctx.as_mut(), &mut sink);
        for slot in std::mem::take(&mut sink.ended) {
            sink.answers[slot].kv_len = ctx.seq_len(slot);
        }
    }
    (sink.answers, sink.decode_calls)
}

fn trie_request(seed: u32, max_tokens: usize, stop: &[&str]) -> Request {
    Request {
        params: SamplingParams { seed, temp: 1.5, ..Default::default() },
        opts: SequenceOptions {
            max_tokens: Some(max_tokens),
            n_probs: Some(4),
            stop: stop.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        trie: true,
    }
}

#[test]
fn forced_runs_in_one_pass_equal_one_token_per_pass() {
    let model = smollm2();
    let prompt = prompt_tokens(model, &Prompt::Text("Tell me one sentence:".into())).expect("prompt");
    let free = Request {
        params: SamplingParams { seed: 99, temp: 0.8, ..Default::default() },
        opts: SequenceOptions { max_tokens: Some(40), n_probs: Some(4), ..Default::default() },
        trie: false,
    };
    let cases: Vec<(&str, Vec<Request>)> = vec![
        ("whole leaves, seed 1", vec![trie_request(1, 64, &[])]),
        ("whole leaves, seed 2", vec![trie_request(2, 64, &[])]),
        ("a stop string inside a forced run", vec![trie_request(1, 64, &["lazy", "far,", "oak", "flooded"])]),
        ("a token limit inside a forced run", vec![trie_request(3, 9, &[])]),
        ("beside a slot sampling freely", vec![trie_request(4, 64, &[]), free]),
    ];
    for (name, reqs) in &cases {
        let (reference, calls_one_by_one) = run(model, &prompt, reqs, false);
        let (batched, calls_batched) = run(model, &prompt, reqs, true);
        for (i, (want, got)) in reference.iter().zip(&batched).enumerate() {
            assert!(want.tokens.len() > 3, "{name}: request {i} made too little to compare: {want:?}");
            assert_eq!(got, want, "{name}: request {i}: forced runs batched vs one per decode call");
        }
        assert!(
            calls_batched < calls_one_by_one,
            "{name}: batching forced runs took {calls_batched} decode calls, one by one {calls_one_by_one}"
        );
    }
    // The limit and stop cases ended inside a run: the KV was cut back to what one call per
    // token leaves (the last token is never decoded).
    let (stopped, _) = run(model, &prompt, &cases[2].1, true);
    assert!(matches!(stopped[0].stop, Some(StopReason::StopString(_))), "{:?}", stopped[0]);
    assert_eq!(stopped[0].kv_len, prompt.len() + stopped[0].tokens.len() - 1);
    let (limited, _) = run(model, &prompt, &cases[3].1, true);
    assert_eq!(limited[0].stop, Some(StopReason::MaxTokens));
    assert_eq!(limited[0].kv_len, prompt.len() + 8);

    // `generate_sequence` (one slot, batching on) gives the same as the reference too.
    let r = &cases[0].1[0];
    let (reference, _) = run(model, &prompt, std::slice::from_ref(r), false);
    let mut ctx =
        model.new_context(&ContextOptions { n_ctx: Some(512), threads: Some(1), ..Default::default() }).unwrap();
    let mut logprobs = Vec::new();
    let stats = generate_sequence(ctx.as_mut(), &prompt, sequence(model, r, &prompt), None, &mut |ev| {
        logprobs.push(ev.logprob.unwrap().to_bits());
        ControlFlow::Continue(())
    })
    .expect("generate");
    assert_eq!((stats.tokens, logprobs), (reference[0].tokens.clone(), reference[0].logprobs.clone()));
}
