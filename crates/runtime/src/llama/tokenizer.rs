//! [`LlamaTokenizer`]: the model's own tokenizer and detokenizer through llama.cpp, as both the
//! runtime's [`Tokenizer`] and the sampler's [`Vocab`].

use std::sync::Arc;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use nucleus_sampler::{Token, Vocab};

use crate::error::Result;
use crate::model::{SpecialTokens, Tokenizer};

/// A loaded model's vocabulary. Token ids outside the vocabulary are never passed to llama.cpp
/// (it would abort); they render as nothing and are not end-of-generation.
pub struct LlamaTokenizer {
    model: Arc<LlamaModel>,
    special: SpecialTokens,
    n_vocab: usize,
}

impl LlamaTokenizer {
    pub(crate) fn new(model: Arc<LlamaModel>) -> Self {
        let vocab = model.vocab();
        let n_vocab = vocab.n_tokens().max(0) as usize;
        let in_vocab = |t: LlamaToken| (t.0 >= 0 && (t.0 as usize) < n_vocab).then_some(t.0);
        let text = |t: Option<Token>| {
            let mut out = Vec::new();
            if let Some(t) = t {
                vocab.token_to_piece_into(LlamaToken(t), &mut out, true, None);
            }
            String::from_utf8_lossy(&out).into_owned()
        };
        let bos = in_vocab(vocab.bos());
        let eos = in_vocab(vocab.eos());
        let special = SpecialTokens {
            bos,
            eos,
            eot: in_vocab(vocab.eot()),
            add_bos: vocab.should_add_bos() && bos.is_some(),
            bos_text: text(bos),
            eos_text: text(eos),
        };
        LlamaTokenizer { model, special, n_vocab }
    }

    fn in_vocab(&self, t: Token) -> bool {
        t >= 0 && (t as usize) < self.n_vocab
    }
}

impl Vocab for LlamaTokenizer {
    fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    fn token_piece(&self, token: Token, out: &mut Vec<u8>) {
        out.clear();
        self.append_piece(token, true, out);
    }

    fn tokenize(&self, text: &[u8]) -> Vec<Token> {
        self.model.vocab().tokenize(text, false, false).into_iter().map(|t| t.0).collect()
    }

    fn is_eog(&self, token: Token) -> bool {
        self.in_vocab(token) && self.model.vocab().is_eog(LlamaToken(token))
    }

    fn eot(&self) -> Option<Token> {
        self.special.eot
    }

    fn eos(&self) -> Option<Token> {
        self.special.eos
    }
}

impl Tokenizer for LlamaTokenizer {
    fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Result<Vec<Token>> {
        let toks = self.model.vocab().tokenize(text.as_bytes(), add_special, parse_special);
        Ok(toks.into_iter().map(|t| t.0).collect())
    }

    fn append_piece(&self, token: Token, render_special: bool, out: &mut Vec<u8>) {
        if self.in_vocab(token) {
            self.model.vocab().token_to_piece_into(LlamaToken(token), out, render_special, None);
        }
    }

    fn special(&self) -> &SpecialTokens {
        &self.special
    }
}
