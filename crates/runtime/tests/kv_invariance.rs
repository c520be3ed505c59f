//! A token's KV and logits do not depend on how the tokens were batched: the logits after a
//! conversation (a prompt, an answer, a new question) are the same bits whether it was evaluated
//! in one prefill, in 64-token or odd-sized chunks, in pairs, one token per decode call, or as
//! the server does it (prompt prefilled, answer decoded token by token, question prefilled), in
//! a one-sequence context or in the second slot of a two-slot context, or cut back with seq_rm.
//! This holds only with flash attention off (`LlamaCppContext`), llama.cpp built without
//! tinyBLAS (`.cargo/config.toml`) and no repacked weights (`Model::batch_invariant`, checked on
//! Gemma 3 Q4_K_M, whose K-quant weights llama.cpp repacks on AVX2); it is what lets the
//! server's prompt cache reuse any matching prefix, generated tokens included, without changing
//! an answer.

mod common;

use common::smollm2;
use nucleus_runtime::{prompt_tokens, ContextOptions, LlamaCppModel, Model, Prompt};

fn argmax(l: &[f32]) -> i32 {
    l.iter().enumerate().fold((0, f32::MIN), |m, (i, &x)| if x > m.1 { (i, x) } else { m }).0 as i32
}

fn options(n_seq_max: usize) -> ContextOptions {
    ContextOptions { n_ctx: Some(1024), n_seq_max, n_batch: 512, threads: Some(1), kv_unified: false }
}

/// The logits after `parts` go into sequence `seq`, each part one prefill call.
fn prefilled(model: &LlamaCppModel, seq: usize, n_seq_max: usize, parts: &[&[i32]]) -> Vec<f32> {
    let mut ctx = model.new_context(&options(n_seq_max)).expect("context");
    for p in parts {
        ctx.prefill(seq, p).expect("prefill");
    }
    ctx.logits(seq).expect("logits").to_vec()
}

/// Largest difference and whether every value has the same bits.
fn compare(a: &[f32], b: &[f32]) -> (bool, f32) {
    let same = a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    (same, a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max))
}

#[test]
fn logits_are_the_same_bits_however_the_tokens_were_batched() {
    let model = smollm2();
    assert!(model.batch_invariant());
    for (name, same, max) in batchings(model, 6, 32) {
        assert!(same, "{name}: logits differ from one prefill by up to {max}");
    }
}

/// Gemma 3 Q4_K_M, whose K-quant weights llama.cpp would otherwise repack or multiply with its
/// tiled kernels (both batch dependent: logits up to 3.7 apart): built and run as this
/// repository does (`GGML_CPU_REPACK=OFF`, tiled matmul off at start), it is invariant too.
#[test]
fn k_quant_models_are_batch_invariant_too() {
    let model = LlamaCppModel::load(&common::ensure_pulled("gemma3")).expect("load gemma3");
    assert!(model.batch_invariant(), "Gemma 3's weights were repacked or the tiled matmul is on");
    for (name, same, max) in batchings(&model, 2, 8) {
        assert!(same, "{name}: logits differ from one prefill by up to {max}");
    }
}

/// Each way of batching a conversation (`repeat` times a system sentence, an answer of
/// `answer` greedy tokens, a question): its name, whether its last logits are the same bits
/// as one prefill's, and the largest difference.
fn batchings(model: &LlamaCppModel, repeat: usize, answer_len: usize) -> Vec<(&'static str, bool, f32)> {
    let tok = |s: &str| prompt_tokens(model, &Prompt::Text(s.into())).expect("tokens");
    let prompt = tok(&"You are a helpful assistant. Answer briefly and politely every question about history, \
                       science and cooking. "
        .repeat(repeat));
    let question = tok(" Now tell me about the moon and its phases, in three sentences please.");

    // As the server runs a turn: the prompt prefilled, then an answer decoded token by token
    // (greedy), then the next question prefilled. In slot 1 of two, slot 0 busy.
    let mut ctx = model.new_context(&options(2)).expect("context");
    ctx.prefill(0, &tok("Another conversation holds the first slot.")).expect("prefill slot 0");
    ctx.prefill(1, &prompt).expect("prefill");
    let mut answer = Vec::new();
    let mut next = argmax(ctx.logits(1).expect("logits"));
    for _ in 0..answer_len {
        answer.push(next);
        ctx.decode(&[(1, next)]).expect("decode");
        next = argmax(ctx.logits(1).expect("logits"));
    }
    ctx.prefill(1, &question).expect("prefill question");
    let served = ctx.logits(1).expect("logits").to_vec();

    let all: Vec<i32> = prompt.iter().chain(&answer).chain(&question).copied().collect();
    assert!(all.len() < 512, "{} tokens: one batch", all.len());
    let once = prefilled(model, 0, 1, &[&all]);

    let mut ways: Vec<(&str, Vec<f32>)> = vec![("served turn", served)];
    let chunks64: Vec<&[i32]> = all.chunks(64).collect();
    ways.push(("64-token chunks", prefilled(model, 0, 1, &chunks64)));
    let chunks7: Vec<&[i32]> = all.chunks(7).collect();
    ways.push(("7-token chunks", prefilled(model, 0, 1, &chunks7)));
    let pairs: Vec<&[i32]> = all.chunks(2).collect();
    ways.push(("pairs", prefilled(model, 0, 1, &pairs)));
    let prompt_and_answer: Vec<i32> = prompt.iter().chain(&answer).copied().collect();
    ways.push(("slot 1 of 2, prompt+answer then question", prefilled(model, 1, 2, &[&prompt_and_answer, &question])));
    // As the prompt cache reuses a slot: it held the prompt, the answer and more, cut back to
    // the prompt and answer (llama.cpp's seq_rm), then the question.
    let mut ctx = model.new_context(&options(1)).expect("context");
    let longer: Vec<i32> = prompt_and_answer.iter().chain(&tok(" and something else entirely")).copied().collect();
    ctx.prefill(0, &longer).expect("prefill");
    ctx.truncate(0, prompt_and_answer.len()).expect("truncate");
    ctx.prefill(0, &question).expect("prefill question");
    ways.push(("cut back, then the question", ctx.logits(0).expect("logits").to_vec()));
    let mut ctx = model.new_context(&options(1)).expect("context");
    ctx.prefill(0, &all[..1]).expect("prefill");
    for &t in &all[1..] {
        ctx.decode(&[(0, t)]).expect("decode");
    }
    ways.push(("one token per decode", ctx.logits(0).expect("logits").to_vec()));

    ways.iter()
        .map(|(name, logits)| {
            let (same, max) = compare(&once, logits);
            (*name, same, max)
        })
        .collect()
}
