//! Generation with the real default model (SmolLM2-135M-Instruct Q4_1), one thread, short runs:
//! equality with llama.cpp's own sampling, stop conditions, limits and error paths.

mod common;

use std::ops::ControlFlow;

use common::{context, greedy, llama_reference, run, smollm2, TempDir};
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate};
use llama_cpp_2::sampling::LlamaSampler;
use nucleus_runtime::{
    generate, locate, prompt_tokens, ChatMessage, ChatTemplate, Context, LlamaCppModel, Model, ModelRef, Pip, Prompt,
    RuntimeError, Sequence, SequenceOptions, StopReason, TemplateSource,
};
use nucleus_sampler::SamplingParams;

const FRANCE: &str = "The capital of France is";

fn text_prompt(model: &LlamaCppModel, text: &str) -> Vec<i32> {
    prompt_tokens(model, &Prompt::Text(text.into())).expect("prompt")
}

fn limit(n: usize) -> SequenceOptions {
    SequenceOptions { max_tokens: Some(n), ..Default::default() }
}

fn detok(model: &LlamaCppModel, tokens: &[i32]) -> String {
    let tok = model.tokenizer();
    let mut bytes = Vec::new();
    for &t in tokens {
        tok.append_piece(t, false, &mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Greedy (`--temp 0`) generation of 32 tokens equals llama.cpp's own greedy output. The
/// reference is computed in the same run by llama.cpp itself: its tokenizer, its decode loop
/// and `LlamaSampler::greedy()` (llama-cpp-2's binding of `llama_sampler_init_greedy`).
#[test]
fn greedy_equals_llama_cpp_greedy() {
    let model = smollm2();
    assert!(!model.tokenizer().special().add_bos, "SmolLM2 adds no BOS");
    let prompt = text_prompt(model, FRANCE);
    let (stats, texts) = run(model, &prompt, &greedy(), &limit(32));
    let (ref_prompt, reference) = llama_reference(model, FRANCE, LlamaSampler::greedy(), 32);
    assert_eq!(prompt, ref_prompt, "prompt tokenization");
    assert_eq!(stats.tokens, reference, "ours: {:?}\nllama.cpp: {:?}", texts.concat(), detok(model, &reference));
    assert!(stats.tokens.len() == 32 || stats.stop == StopReason::EndOfGeneration);
    assert!(texts.concat().contains("Paris"), "{:?}", texts.concat());
}

/// A seeded sampled generation is reproducible, and equals what llama.cpp's own sampler chain
/// (built in llama.cpp's common order with the same parameters, DRY breakers tokenized by the
/// same vocabulary, and the prompt accepted first) picks when driving the same model.
#[test]
fn seeded_sampling_is_reproducible_and_equals_llama_cpp_chain() {
    let model = smollm2();
    let params = SamplingParams {
        seed: 1234,
        temp: 0.9,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.05,
        penalty_last_n: 64,
        penalty_repeat: 1.1,
        penalty_freq: 0.05,
        penalty_present: 0.05,
        dry_multiplier: 0.8,
        ..Default::default()
    };
    let prompt_text = "Once upon a time, in a small village,";
    let prompt = text_prompt(model, prompt_text);
    let (a, _) = run(model, &prompt, &params, &limit(40));
    let (b, _) = run(model, &prompt, &params, &limit(40));
    assert_eq!(a.tokens, b.tokens, "same seed, same tokens");

    let raw = model.raw();
    let n_vocab = raw.n_vocab();
    let p = &params;
    let chain = LlamaSampler::chain_simple([
        LlamaSampler::penalties(n_vocab, p.penalty_last_n, p.penalty_repeat, p.penalty_freq, p.penalty_present),
        LlamaSampler::dry(
            raw,
            p.dry_multiplier,
            p.dry_base,
            p.dry_allowed_length,
            p.dry_penalty_last_n,
            &p.dry_sequence_breakers,
        ),
        LlamaSampler::top_n_sigma(p.top_n_sigma),
        LlamaSampler::top_k(p.top_k),
        LlamaSampler::typical(p.typ_p, p.min_keep),
        LlamaSampler::top_p(p.top_p, p.min_keep),
        LlamaSampler::min_p(p.min_p, p.min_keep),
        LlamaSampler::xtc(p.xtc_probability, p.xtc_threshold, p.min_keep, p.seed),
        LlamaSampler::temp_ext(p.temp, p.dynatemp_range, p.dynatemp_exponent),
        LlamaSampler::dist(p.seed),
    ]);
    let (_, reference) = llama_reference(model, prompt_text, chain, 40);
    assert_eq!(a.tokens, reference, "ours: {:?}\nllama.cpp: {:?}", detok(model, &a.tokens), detok(model, &reference));
}

/// The model's ChatML template, rendered by minijinja, equals the reference rendering (written
/// out here, and llama.cpp's own ChatML formatter) for a two-message conversation.
#[test]
fn chatml_rendering_equals_reference() {
    let model = smollm2();
    let template = ChatTemplate::for_model(model);
    assert_eq!(template.kind(), TemplateSource::Model);
    let conv = [ChatMessage::system("You are a helpful assistant."), ChatMessage::user("Name three colors.")];
    let ours = template.render(&conv, true).expect("render");
    let expected = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nName three colors.<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(ours, expected);
    let msgs: Vec<LlamaChatMessage> =
        conv.iter().map(|m| LlamaChatMessage::new(m.role.clone(), m.content.clone()).unwrap()).collect();
    let llama = model.raw().apply_chat_template(&LlamaChatTemplate::new("chatml").unwrap(), &msgs, true).unwrap();
    assert_eq!(ours, llama);
    // Tokenized, the markers are single special tokens.
    let toks = prompt_tokens(model, &Prompt::Chat(conv.to_vec())).unwrap();
    let im_start = model.tokenizer().encode("<|im_start|>", false, true).unwrap();
    assert_eq!(im_start.len(), 1);
    assert_eq!(toks[0], im_start[0]);
}

/// A chat answer ends at the model's end-of-turn token, which is not printed.
#[test]
fn chat_stops_at_end_of_generation() {
    let model = smollm2();
    let prompt = prompt_tokens(model, &Prompt::Chat(vec![ChatMessage::user("Name three colors.")])).unwrap();
    let (stats, texts) = run(model, &prompt, &greedy(), &limit(96));
    assert_eq!(stats.stop, StopReason::EndOfGeneration, "{:?}", texts.concat());
    let last = *stats.tokens.last().unwrap();
    assert!(model.tokenizer().is_eog(last));
    assert!(!texts.concat().contains("<|im_end|>"));
    assert!(!texts.concat().trim().is_empty());
}

/// `ignore_eos` bans end-of-generation tokens: even with a huge bias towards EOS the model
/// keeps going until the limit; without it, that bias ends generation at once.
#[test]
fn ignore_eos_and_forced_eos() {
    let model = smollm2();
    let eos = model.tokenizer().special().eos.expect("eos");
    let prompt = text_prompt(model, FRANCE);
    let forced = SamplingParams { logit_bias: vec![(eos, 100.0)], ..greedy() };
    let (stats, texts) = run(model, &prompt, &forced, &limit(4));
    assert_eq!(
        (stats.stop, stats.tokens.clone(), texts.concat()),
        (StopReason::EndOfGeneration, vec![eos], String::new())
    );
    let ignored = SamplingParams { ignore_eos: true, ..forced };
    let (stats, _) = run(model, &prompt, &ignored, &limit(4));
    assert_eq!(stats.stop, StopReason::MaxTokens);
    assert_eq!(stats.tokens.len(), 4);
    assert!(!stats.tokens.iter().any(|&t| model.tokenizer().is_eog(t)));
}

/// `-n` limits: exactly N tokens, and 0 generates nothing.
#[test]
fn token_limits() {
    let model = smollm2();
    let prompt = text_prompt(model, FRANCE);
    let (stats, texts) = run(model, &prompt, &greedy(), &limit(5));
    assert_eq!((stats.stop.clone(), stats.tokens.len(), texts.len()), (StopReason::MaxTokens, 5, 5));
    let (stats, texts) = run(model, &prompt, &greedy(), &limit(0));
    assert_eq!((stats.stop, stats.tokens.len(), texts.len()), (StopReason::MaxTokens, 0, 0));
}

/// A stop string that spans two tokens ends generation before it, and none of its text is
/// emitted, even though its first part arrived a token earlier.
#[test]
fn stop_string_across_tokens() {
    let model = smollm2();
    let prompt = text_prompt(model, FRANCE);
    let (free, texts) = run(model, &prompt, &greedy(), &limit(24));
    let full = texts.concat();
    let pieces: Vec<String> = free.tokens.iter().map(|&t| detok(model, &[t])).collect();
    // A stop string made of the end of one token and the start of the next, whose first
    // occurrence is at that token boundary.
    let mut offset = 0;
    let mut chosen = None;
    for k in 0..pieces.len() - 1 {
        offset += pieces[k].len();
        let (a, b) = (&pieces[k], &pieces[k + 1]);
        if a.chars().count() < 2 || b.is_empty() {
            continue;
        }
        let tail: String = a.chars().rev().take(2).collect::<Vec<_>>().into_iter().rev().collect();
        let head: String = b.chars().take(2).collect();
        let stop = format!("{tail}{head}");
        if full.find(&stop) == Some(offset - tail.len()) {
            chosen = Some((stop, offset - tail.len(), k));
            break;
        }
    }
    let (stop, at, k) = chosen.expect("a stop string across a token boundary");
    let opts = SequenceOptions { stop: vec![stop.clone()], ..limit(24) };
    let (stats, texts) = run(model, &prompt, &greedy(), &opts);
    assert_eq!(stats.stop, StopReason::StopString(stop.clone()));
    assert_eq!(texts.concat(), full[..at]);
    assert_eq!(stats.tokens.len(), k + 2, "stops at the token that completes the stop string");
    // The stop string's first half was held back, not printed, when its token arrived.
    assert!(!texts[k].ends_with(&stop[..2]));
}

/// Characters split across tokens are emitted only when complete; bytes that never form a
/// character become U+FFFD. Driven through `Sequence` with one-hot logits on byte tokens.
#[test]
fn utf8_split_across_tokens() {
    let model = smollm2();
    let tok = model.tokenizer();
    let n = model.n_vocab();
    // The byte-level tokens of each UTF-8 byte of a 4-byte character.
    let byte_token = |b: u8| -> i32 {
        (0..n as i32)
            .find(|&t| {
                let mut v = Vec::new();
                tok.append_piece(t, false, &mut v);
                v == [b]
            })
            .unwrap_or_else(|| panic!("no single-byte token for {b:#x}"))
    };
    let crab: Vec<i32> = "🦀".bytes().map(byte_token).collect();
    let one_hot = |t: i32| {
        let mut l = vec![0.0f32; n];
        l[t as usize] = 30.0;
        l
    };
    let mut seq = Sequence::new(model, &greedy(), SequenceOptions::default()).unwrap();
    let mut out = Vec::new();
    for &t in &crab {
        let step = seq.step(&one_hot(t), true).unwrap();
        assert_eq!(step.event.token, t);
        out.push(step.event.text.to_string());
    }
    assert_eq!(out, vec!["", "", "", "🦀"]);
    // A lone lead byte followed by an ASCII token: U+FFFD then the letter; a dangling lead byte
    // at the token limit is flushed as U+FFFD.
    let a = tok.encode("a", false, false).unwrap()[0];
    let mut seq =
        Sequence::new(model, &greedy(), SequenceOptions { max_tokens: Some(3), ..Default::default() }).unwrap();
    let texts: Vec<String> =
        [crab[0], a, crab[0]].iter().map(|&t| seq.step(&one_hot(t), true).unwrap().event.text.to_string()).collect();
    assert_eq!(texts, vec!["", "\u{fffd}a", "\u{fffd}"]);
    assert_eq!(seq.finished(), Some(&StopReason::MaxTokens));
}

/// With `n_probs`, each token carries its log-probability and the top alternatives under the
/// model's raw softmax; greedy picks the top one.
#[test]
fn logprobs_and_alternatives() {
    let model = smollm2();
    let prompt = text_prompt(model, FRANCE);
    let mut ctx = context(model, 512);
    let opts = SequenceOptions { n_probs: Some(3), ..limit(3) };
    let mut seen = 0;
    generate(model, &mut ctx, &prompt, &greedy(), &opts, None, &mut |ev| {
        let lp = ev.logprob.expect("logprob");
        assert!(lp <= 0.0 && lp > -30.0);
        assert_eq!(ev.top.len(), 3);
        assert_eq!(ev.top[0].id, ev.token);
        assert!((ev.top[0].logprob - lp).abs() < 1e-5);
        assert!(ev.top[0].p >= ev.top[1].p && ev.top[1].p >= ev.top[2].p);
        seen += 1;
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(seen, 3);
}

/// The callback can stop generation; a cancel flag set before the start stops it too.
#[test]
fn cancellation() {
    let model = smollm2();
    let prompt = text_prompt(model, FRANCE);
    let mut ctx = context(model, 512);
    let stats = generate(model, &mut ctx, &prompt, &greedy(), &limit(20), None, &mut |ev| {
        if ev.index == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!((stats.stop, stats.tokens.len()), (StopReason::Cancelled, 3));
    let flag = std::sync::atomic::AtomicBool::new(true);
    let stats =
        generate(model, &mut ctx, &prompt, &greedy(), &limit(20), Some(&flag), &mut |_| ControlFlow::Continue(()))
            .unwrap();
    assert_eq!((stats.stop, stats.tokens.len()), (StopReason::Cancelled, 0));
}

/// A prompt longer than the context is an error that says so; a prompt that nearly fills it
/// generates until the context is full and stops cleanly.
#[test]
fn context_limits() {
    let model = smollm2();
    let mut ctx = context(model, 256);
    let n_ctx = ctx.n_ctx();
    let long = text_prompt(model, &"word ".repeat(n_ctx + 10));
    assert!(long.len() >= n_ctx);
    let err =
        generate(model, &mut ctx, &long, &greedy(), &limit(4), None, &mut |_| ControlFlow::Continue(())).unwrap_err();
    assert!(matches!(err, RuntimeError::PromptTooLong { .. }), "{err}");
    assert!(err.to_string().contains("--ctx-size"));

    let near = &long[..n_ctx - 3];
    let opts = SequenceOptions { max_tokens: None, ..Default::default() };
    let stats =
        generate(model, &mut ctx, near, &SamplingParams { ignore_eos: true, ..greedy() }, &opts, None, &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(stats.stop, StopReason::ContextFull);
    assert_eq!(stats.tokens.len(), 4, "3 free cells decode 3 tokens; the 4th is sampled from the last logits");
}

/// Two sequences decoded side by side in one context give each the tokens it gets alone.
#[test]
fn several_sequences_in_one_decode() {
    let model = smollm2();
    let prompts = [text_prompt(model, FRANCE), text_prompt(model, "1, 2, 3, 4,")];
    let alone: Vec<Vec<i32>> = prompts.iter().map(|p| run(model, p, &greedy(), &limit(6)).0.tokens).collect();

    let mut ctx = model
        .new_llama_context(&nucleus_runtime::ContextOptions {
            n_ctx: Some(512),
            n_seq_max: 2,
            threads: Some(1),
            ..Default::default()
        })
        .unwrap();
    let mut seqs: Vec<Sequence> = (0..2).map(|_| Sequence::new(model, &greedy(), limit(6)).unwrap()).collect();
    let mut next = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        ctx.prefill(i, p).unwrap();
        next.push((i, seqs[i].step(ctx.logits(i).unwrap(), true).unwrap().event.token));
    }
    for _ in 1..6 {
        ctx.decode(&next).unwrap();
        for (i, t) in next.iter_mut() {
            *t = seqs[*i].step(ctx.logits(*i).unwrap(), true).unwrap().event.token;
        }
    }
    for i in 0..2 {
        assert_eq!(seqs[i].generated(), &alone[i][..], "sequence {i}");
    }
    assert!(matches!(ctx.decode(&[(0, 1), (0, 2)]), Err(RuntimeError::BadSequence { .. })));
    assert!(matches!(ctx.decode(&[(5, 1)]), Err(RuntimeError::BadSequence { .. })));
    assert!(matches!(ctx.decode(&[(0, -3)]), Err(RuntimeError::BadToken { .. })));
}

/// DRY's sequence breakers are tokenized by the model's vocabulary (no error, non-empty).
#[test]
fn vocab_serves_the_sampler() {
    let model = smollm2();
    let vocab = model.vocab();
    assert_eq!(vocab.n_vocab(), 49152);
    assert!(!vocab.tokenize(b"\n").is_empty());
    let eos = vocab.eos().unwrap();
    assert!(vocab.is_eog(eos));
    let mut piece = Vec::new();
    vocab.token_piece(eos, &mut piece);
    assert_eq!(piece, b"<|im_end|>");
    assert!(!vocab.is_eog(-1) && !vocab.is_eog(1 << 30));
}

/// A missing file, a file that is not GGUF, a truncated GGUF and an unknown name each fail
/// with an error that says which.
#[test]
fn bad_models_are_clear_errors() {
    let dir = TempDir::new("bad-models");
    let missing = dir.path().join("nope.gguf");
    let e = LlamaCppModel::load(&missing).unwrap_err();
    assert!(matches!(e, RuntimeError::ModelNotFound { .. }) && e.to_string().contains("nope.gguf"), "{e}");
    let e = locate(&ModelRef::parse(missing.to_str().unwrap()).unwrap(), dir.path(), &Pip::default(), &mut |_| {})
        .unwrap_err();
    assert!(matches!(e, RuntimeError::ModelNotFound { .. }), "{e}");

    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, "hello, not a model").unwrap();
    let e = LlamaCppModel::load(&text).unwrap_err();
    assert!(matches!(e, RuntimeError::NotGguf { .. }) && e.to_string().contains("not a GGUF"), "{e}");

    let truncated = dir.path().join("truncated.gguf");
    let real = std::fs::read(smollm2().path()).unwrap();
    std::fs::write(&truncated, &real[..1 << 20]).unwrap();
    let e = LlamaCppModel::load(&truncated).unwrap_err();
    assert!(matches!(e, RuntimeError::LoadFailed { .. }), "{e}");
    assert!(e.to_string().contains("truncated.gguf"), "{e}");

    let e = ModelRef::parse("tinyllama").unwrap_err();
    assert!(e.to_string().contains("unknown model `tinyllama`") && e.to_string().contains("gemma3"), "{e}");
    let e = locate(&ModelRef::parse("gemma3").unwrap(), dir.path(), &Pip::default(), &mut |_| {}).unwrap_err();
    assert!(matches!(e, RuntimeError::NotPulled { .. }) && e.to_string().contains("nucleus pull gemma3"), "{e}");
}
