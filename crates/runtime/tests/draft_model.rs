//! Drafts from a draft model, verified exactly: SmolLM2-135M drafting for itself. No larger
//! model of SmolLM2's vocabulary ships on the registries, so the model is its own draft; its
//! greedy proposals are then what a greedy target samples, and acceptance must be (nearly)
//! total — which proves the bookkeeping (the draft KV kept in step with the slot's tokens, the
//! rejected tail cut, the counts). A seeded sampled chain accepts fewer, and both give the
//! tokens and logprob bits of plain decoding. A draft model of another vocabulary (Gemma 3) is
//! refused with a message saying why. One thread.

mod common;

use std::ops::ControlFlow;

use common::{context, ensure_pulled, smollm2, N_CTX};
use nucleus_runtime::{
    check_vocabulary, generate_sequence, generate_sequence_drafted, prompt_tokens, ContextOptions, DraftModel,
    LlamaCppModel, Model, Prompt, Sequence, SequenceOptions, SpecOptions, SpecStats,
};
use nucleus_sampler::{SamplingParams, Token};

const PROMPT: &str = "Here is a list of fruits: apple, banana, cherry, date. Write it again, then add two more:";

/// Tokens, logprob bits, and what speculation did.
fn answer(params: &SamplingParams, draft: bool) -> (Vec<Token>, Vec<u32>, Option<SpecStats>) {
    let model = smollm2();
    let tokens = prompt_tokens(model, &Prompt::Text(PROMPT.into())).expect("prompt");
    let opts = SequenceOptions { max_tokens: Some(40), n_probs: Some(2), ..Default::default() };
    let mut seq = Sequence::new(model, params, opts).expect("sequence");
    let mut ctx = context(model, N_CTX);
    let mut logprobs = Vec::new();
    let mut on_token = |ev: &nucleus_runtime::TokenEvent<'_>| {
        logprobs.push(ev.logprob.expect("n_probs").to_bits());
        ControlFlow::Continue(())
    };
    let stats = if draft {
        seq.set_model_speculation(SpecOptions { draft_max: 8, ..Default::default() });
        let dctx = model
            .new_context(&ContextOptions { n_ctx: Some(N_CTX), threads: Some(1), ..Default::default() })
            .expect("draft context");
        generate_sequence_drafted(&mut ctx, &tokens, seq, DraftModel::new(dctx), None, &mut on_token)
    } else {
        generate_sequence(&mut ctx, &tokens, seq, None, &mut on_token)
    }
    .expect("generate");
    (stats.tokens, logprobs, stats.spec)
}

#[test]
fn the_model_as_its_own_draft_is_accepted_and_changes_nothing() {
    let greedy = SamplingParams { temp: 0.0, ..Default::default() };
    let (plain, plain_lp, none) = answer(&greedy, false);
    assert!(none.is_none());
    let (spec, spec_lp, stats) = answer(&greedy, true);
    let s = stats.expect("speculation stats");
    assert_eq!(plain, spec, "greedy tokens");
    assert_eq!(plain_lp, spec_lp, "greedy logprob bits");
    eprintln!("greedy, own draft: {s:?}");
    assert!(s.drafted >= 20, "{s:?}");
    // Every draft token is the target's greedy token; only the end (the token limit) can leave
    // a draft token unused, and drafts are never made past it.
    assert_eq!(s.accepted, s.drafted, "{s:?}");
    assert!(s.verify_passes < plain.len() / 2, "{s:?}");

    let sampled = SamplingParams { seed: 4242, temp: 0.9, ..Default::default() };
    let (plain, plain_lp, _) = answer(&sampled, false);
    let (spec, spec_lp, stats) = answer(&sampled, true);
    let s = stats.expect("speculation stats");
    eprintln!("sampled, own draft: {s:?}");
    assert_eq!(plain, spec, "sampled tokens");
    assert_eq!(plain_lp, spec_lp, "sampled logprob bits");
    assert!(s.drafted > 0, "{s:?}");
}

#[test]
fn a_draft_model_of_another_vocabulary_is_refused() {
    assert!(check_vocabulary(smollm2(), smollm2()).is_ok());
    let gemma = LlamaCppModel::load(&ensure_pulled("gemma3")).expect("load gemma3");
    let e = check_vocabulary(smollm2(), &gemma).expect_err("another vocabulary").to_string();
    assert!(e.contains("vocabulary") && e.contains("262144") && e.contains("49152"), "{e}");
}
