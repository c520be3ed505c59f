//! Gemma 3 270M Q4_K_M: a second architecture, a SentencePiece vocabulary of 262,144 tokens,
//! BOS added, and no chat template in the file (the built-in Gemma one is used).
//!
//! The model is 253 MB under the Gemma Terms of Use, so it is pulled only for CI (`CI` set) or
//! when `NUCLEUS_TEST_GEMMA=1`; elsewhere this test runs if `nucleus pull gemma3` was done and
//! otherwise says it skipped.

mod common;

use std::sync::OnceLock;

use common::{ensure_pulled, greedy, llama_reference, run};
use llama_cpp_2::sampling::LlamaSampler;
use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, models_dir};
use nucleus_runtime::{
    prompt_tokens, ChatMessage, ChatTemplate, LlamaCppModel, Model, Prompt, SequenceOptions, StopReason, TemplateSource,
};

fn gemma3() -> Option<&'static LlamaCppModel> {
    static M: OnceLock<Option<LlamaCppModel>> = OnceLock::new();
    M.get_or_init(|| {
        let entry = catalog::find("gemma3").unwrap();
        let wanted = std::env::var_os("CI").is_some_and(|v| !v.is_empty())
            || std::env::var("NUCLEUS_TEST_GEMMA").is_ok_and(|v| v == "1");
        let path = match pull::installed(entry, &models_dir()) {
            Ok(p) => p,
            Err(_) if wanted => ensure_pulled("gemma3"),
            Err(_) => {
                eprintln!("skipped: gemma3 is not installed (run `nucleus pull gemma3`, or set NUCLEUS_TEST_GEMMA=1)");
                return None;
            }
        };
        Some(LlamaCppModel::load(&path).expect("load gemma3"))
    })
    .as_ref()
}

/// Greedy output equals llama.cpp's own greedy sampler (same reference as for SmolLM2), and a
/// chat renders with the built-in Gemma template into special tokens after a single BOS.
#[test]
fn gemma3_runs_and_matches_llama_cpp() {
    let Some(model) = gemma3() else { return };
    assert_eq!(model.architecture(), "gemma3");
    assert_eq!(model.n_vocab(), 262_144);
    let sp = model.tokenizer().special().clone();
    assert!(sp.add_bos);

    let text = "The capital of France is";
    let prompt = prompt_tokens(model, &Prompt::Text(text.into())).unwrap();
    assert_eq!(prompt[0], sp.bos.unwrap());
    let (stats, texts) =
        run(model, &prompt, &greedy(), &SequenceOptions { max_tokens: Some(16), ..Default::default() });
    let (ref_prompt, reference) = llama_reference(model, text, LlamaSampler::greedy(), 16);
    assert_eq!(prompt, ref_prompt);
    assert_eq!(stats.tokens, reference, "{:?}", texts.concat());
    assert!(stats.stop == StopReason::MaxTokens || stats.stop == StopReason::EndOfGeneration);

    let template = ChatTemplate::for_model(model);
    assert_eq!(template.kind(), TemplateSource::BuiltinGemma);
    let chat = prompt_tokens(model, &Prompt::Chat(vec![ChatMessage::user("Name three colors.")])).unwrap();
    assert_eq!(chat[0], sp.bos.unwrap());
    assert_ne!(chat[1], sp.bos.unwrap(), "one BOS, not two");
    let start_of_turn = model.tokenizer().encode("<start_of_turn>", false, true).unwrap();
    assert_eq!(start_of_turn.len(), 1);
    assert_eq!(chat[1], start_of_turn[0]);
    assert_eq!(chat.iter().filter(|&&t| t == start_of_turn[0]).count(), 2);
}
