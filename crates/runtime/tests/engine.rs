//! The generation engine serving two slots gives each slot exactly what a one-slot `generate`
//! of the same seeded request gives: the same tokens, the same logprobs (bits), the same stop
//! reason — with the second request arriving while the first is generating, so its prompt
//! chunks are interleaved with the first slot's decode steps and its tokens decoded beside
//! the first slot's. SmolLM2-135M, one thread.

mod common;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use common::smollm2;
use nucleus_runtime::engine::{Finished, SlotFailure};
use nucleus_runtime::sequence::Step;
use nucleus_runtime::{
    generate, prompt_tokens, ContextOptions, Engine, Model, Prompt, SeqId, Sequence, SequenceOptions, SlotJob,
    SlotSink, StopReason,
};
use nucleus_sampler::{SamplingParams, Token};

/// One request: prompt, sampling and options.
struct Request {
    prompt: Vec<Token>,
    params: SamplingParams,
    opts: SequenceOptions,
}

/// What a request produced: tokens, logprob bits, top alternatives' (id, logprob bits), stop.
#[derive(Debug, Default, PartialEq)]
struct Answer {
    tokens: Vec<Token>,
    logprobs: Vec<u32>,
    top: Vec<Vec<(Token, u32)>>,
    stop: Option<StopReason>,
}

fn requests(model: &dyn Model) -> Vec<Request> {
    let tokens = |s: &str| prompt_tokens(model, &Prompt::Text(s.into())).expect("prompt");
    // Longer than one prefill chunk (64 tokens), so the second prompt goes in piece by piece
    // between the first slot's decode steps.
    let long = "A short history of the lighthouse keepers of the northern coast, who kept the lamps burning \
                through every winter storm, wrote letters to their families by candlelight, and counted \
                the ships that passed their rocks each night. "
        .repeat(3);
    vec![
        Request {
            prompt: tokens("Once upon a time, in a quiet village by the sea,"),
            params: SamplingParams { seed: 7, temp: 0.9, top_k: 40, top_p: 0.95, ..Default::default() },
            opts: SequenceOptions { max_tokens: Some(40), n_probs: Some(3), ..Default::default() },
        },
        Request {
            prompt: tokens(&format!("{long}The keeper's last letter said")),
            params: SamplingParams { seed: 1234, temp: 1.1, min_p: 0.05, ..Default::default() },
            opts: SequenceOptions {
                max_tokens: Some(32),
                n_probs: Some(2),
                stop: vec!["\n\n".into()],
                ..Default::default()
            },
        },
    ]
}

fn record(answer: &mut Answer, step: &Step<'_>) {
    let ev = &step.event;
    answer.tokens.push(ev.token);
    answer.logprobs.push(ev.logprob.expect("n_probs asked").to_bits());
    answer.top.push(ev.top.iter().map(|t| (t.id, t.logprob.to_bits())).collect());
}

/// Collects every slot's answer.
#[derive(Default)]
struct Collect {
    answers: BTreeMap<usize, Answer>,
}

impl SlotSink<usize> for Collect {
    fn token(&mut self, _slot: SeqId, tag: &mut usize, step: &Step<'_>) -> ControlFlow<()> {
        record(self.answers.entry(*tag).or_default(), step);
        ControlFlow::Continue(())
    }

    fn finished(&mut self, _slot: SeqId, done: Finished<usize>) {
        let answer = self.answers.entry(done.tag).or_default();
        assert_eq!(answer.tokens, done.sequence.generated(), "reported tokens are the sequence's");
        answer.stop = Some(done.reason);
    }

    fn failed(&mut self, slot: SeqId, tag: usize, failure: SlotFailure) {
        panic!("slot {slot} (request {tag}) failed: {failure}");
    }
}

fn one_slot(model: &dyn Model, r: &Request) -> Answer {
    let opts = ContextOptions { n_ctx: Some(1024), threads: Some(1), ..Default::default() };
    let mut ctx = model.new_context(&opts).expect("context");
    let mut answer = Answer::default();
    let stats = generate(model, ctx.as_mut(), &r.prompt, &r.params, &r.opts, None, &mut |ev| {
        answer.tokens.push(ev.token);
        answer.logprobs.push(ev.logprob.expect("n_probs asked").to_bits());
        answer.top.push(ev.top.iter().map(|t| (t.id, t.logprob.to_bits())).collect());
        ControlFlow::Continue(())
    })
    .expect("generate");
    assert_eq!(stats.tokens, answer.tokens);
    answer.stop = Some(stats.stop);
    answer
}

#[test]
fn two_slots_give_each_request_what_one_slot_generate_gives() {
    let model = smollm2();
    let reqs = requests(model);
    let alone: Vec<Answer> = reqs.iter().map(|r| one_slot(model, r)).collect();

    let opts =
        ContextOptions { n_ctx: Some(2048), n_seq_max: 2, threads: Some(1), kv_unified: false, ..Default::default() };
    let mut ctx = model.new_context(&opts).expect("context");
    let mut engine: Engine<usize> = Engine::new(2, ctx.n_ctx_seq(), nucleus_runtime::PREFILL_CHUNK);
    let mut sink = Collect::default();
    let job = |i: usize, r: &Request| {
        let mut sequence = Sequence::new(model, &r.params, r.opts.clone()).expect("sequence");
        sequence.accept_prompt(&r.prompt);
        SlotJob { tag: i, prompt: r.prompt.clone().into(), sequence, cached: 0, score_prompt: None, prompt_only: false }
    };
    // The second request joins slot 0 while the first, in slot 1, is generating.
    assert!(engine.start(ctx.as_mut(), 1, job(0, &reqs[0]), &mut sink).is_ok());
    let mut rounds = 0;
    while !engine.is_idle() {
        if rounds == 5 {
            assert!(engine.start(ctx.as_mut(), 0, job(1, &reqs[1]), &mut sink).is_ok());
        }
        engine.prefill(ctx.as_mut(), &mut sink);
        engine.step(ctx.as_mut(), &mut sink);
        rounds += 1;
    }
    assert!(rounds > 8, "both slots ran side by side");
    for (i, want) in alone.iter().enumerate() {
        assert!(want.tokens.len() > 5, "request {i} generated too little to compare: {want:?}");
        assert_eq!(&sink.answers[&i], want, "request {i}: two-slot engine vs one-slot generate");
    }
}
