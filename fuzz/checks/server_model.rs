//! A small synthetic model for the server's request-parser checks: one token per byte plus a
//! few special tokens, enough for everything a parser asks of a model (vocabulary size, text to
//! tokens for `logit_bias` strings and DRY breakers, end-of-generation tokens). It has no
//! weights: making a context is an error, and the parsers never make one.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use nucleus_runtime::{Context, ContextOptions, Model, RuntimeError, SpecialTokens, Tokenizer};
use nucleus_sampler::{SamplingParams, Token, Vocab};

/// The special tokens, after the 256 byte tokens.
const SPECIALS: [&str; 3] = ["<|im_start|>", "<|im_end|>", "</s>"];
const EOS: Token = 258;

pub struct Bytes {
    special: SpecialTokens,
}

impl Vocab for Bytes {
    fn n_vocab(&self) -> usize {
        256 + SPECIALS.len()
    }
    fn token_piece(&self, token: Token, out: &mut Vec<u8>) {
        match token {
            0..=255 => out.push(token as u8),
            t => out.extend_from_slice(SPECIALS.get(t as usize - 256).map_or(&b""[..], |s| s.as_bytes())),
        }
    }
    fn tokenize(&self, text: &[u8]) -> Vec<Token> {
        text.iter().map(|&b| b as Token).collect()
    }
    fn is_eog(&self, token: Token) -> bool {
        token == EOS || token == 257
    }
    fn eot(&self) -> Option<Token> {
        Some(257)
    }
    fn eos(&self) -> Option<Token> {
        Some(EOS)
    }
    fn is_control(&self, token: Token) -> bool {
        token >= 256
    }
}

impl Tokenizer for Bytes {
    fn encode(
        &self,
        text: &str,
        _add_special: bool,
        parse_special: bool,
    ) -> nucleus_runtime::error::Result<Vec<Token>> {
        let mut out = Vec::new();
        let mut rest = text;
        'outer: while !rest.is_empty() {
            if parse_special {
                for (i, s) in SPECIALS.iter().enumerate() {
                    if let Some(r) = rest.strip_prefix(s) {
                        out.push(256 + i as Token);
                        rest = r;
                        continue 'outer;
                    }
                }
            }
            let c = rest.chars().next().unwrap_or_default();
            out.extend(c.to_string().bytes().map(|b| b as Token));
            rest = &rest[c.len_utf8()..];
        }
        Ok(out)
    }
    fn append_piece(&self, token: Token, render_special: bool, out: &mut Vec<u8>) {
        if token < 256 || render_special {
            self.token_piece(token, out);
        }
    }
    fn special(&self) -> &SpecialTokens {
        &self.special
    }
}

pub struct FakeModel {
    tok: Arc<Bytes>,
}

impl Model for FakeModel {
    fn tokenizer(&self) -> Arc<dyn Tokenizer> {
        self.tok.clone()
    }
    fn vocab(&self) -> Arc<dyn Vocab> {
        self.tok.clone()
    }
    fn n_vocab(&self) -> usize {
        self.tok.n_vocab()
    }
    fn n_ctx_train(&self) -> usize {
        4096
    }
    fn architecture(&self) -> &str {
        "bytes"
    }
    fn chat_template(&self) -> Option<&str> {
        None
    }
    fn new_context(&self, _: &ContextOptions) -> nucleus_runtime::error::Result<Box<dyn Context>> {
        Err(RuntimeError::BadSequence { seq: 0, problem: "the synthetic model has no weights" })
    }
}

/// The model, built once per process.
pub fn model() -> &'static FakeModel {
    static M: OnceLock<FakeModel> = OnceLock::new();
    M.get_or_init(|| {
        let special = SpecialTokens {
            bos: None,
            eos: Some(EOS),
            eot: Some(257),
            add_bos: false,
            bos_text: String::new(),
            eos_text: "</s>".into(),
        };
        FakeModel { tok: Arc::new(Bytes { special }) }
    })
}

/// The server's sampling defaults (llama.cpp's).
pub fn defaults() -> SamplingParams {
    SamplingParams::default()
}

/// A parser's error must be a typed client error: a 4xx with a message, never a 5xx (the
/// official clients retry those) for what a client sent.
pub fn check_error(e: &nucleus_server::ApiError) {
    assert!(e.status.is_client_error(), "bad input answered {}: {e:?}", e.status);
    assert!(!e.message.is_empty(), "an error without a message: {e:?}");
    assert!(!e.kind.is_empty());
}

/// A request the chat parser accepted: one conversation, one choice.
pub fn check_request(r: &nucleus_server::request::GenerationRequest) {
    assert_eq!(r.prompts.len(), 1, "a chat request has one prompt");
    match &r.prompts[0] {
        nucleus_runtime::Prompt::Chat(m) => assert!(!m.is_empty(), "a chat prompt without messages"),
        other => panic!("a chat request with a {other:?} prompt"),
    }
    assert!(r.n >= 1);
    r.params.validate(Some(model().n_vocab())).expect("an accepted request has valid sampling parameters");
}
