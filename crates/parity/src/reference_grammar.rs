//! [`LlamaGrammar`]: llama.cpp's own grammar sampler over a loaded model's vocabulary, the
//! reference that nucleus-grammar's masks are compared with and timed against (`nucleus bench
//! --grammar`, `tests/grammar_masks.rs`). Never used to generate: all sampling is nucleus's.
//! (Moved here from `nucleus-runtime`, which keeps no reference code.)

use std::time::{Duration, Instant};

use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use nucleus_grammar::TokenMask;
use nucleus_runtime::LlamaCppModel;
use nucleus_sampler::Token;

/// llama.cpp's grammar sampler plus a reusable full-vocabulary candidate array.
pub struct LlamaGrammar {
    sampler: LlamaSampler,
    cands: LlamaTokenDataArray,
    /// The tokens the last [`LlamaGrammar::apply`] allowed (accepting any other token would
    /// abort inside llama.cpp, so [`LlamaGrammar::accept`] refuses it first).
    allowed: TokenMask,
    n_vocab: usize,
}

impl LlamaGrammar {
    /// Compiles `gbnf` (start rule `root`) with llama.cpp's parser over `model`'s vocabulary.
    pub fn new(model: &LlamaCppModel, gbnf: &str, root: &str) -> Result<Self, String> {
        let sampler = LlamaSampler::grammar(model.raw(), gbnf, root)
            .map_err(|e| format!("llama.cpp's grammar sampler rejected the grammar: {e}"))?;
        let n_vocab = model.raw().n_vocab().max(0) as usize;
        let data = (0..n_vocab as i32).map(|i| LlamaTokenData::new(LlamaToken(i), 0.0, 0.0)).collect();
        Ok(LlamaGrammar {
            sampler,
            cands: LlamaTokenDataArray::new(data, false),
            allowed: TokenMask::new(n_vocab),
            n_vocab,
        })
    }

    /// Runs llama.cpp's grammar over every token of the vocabulary (all logits 0) and returns
    /// the time of that call alone; [`LlamaGrammar::allowed`] then holds the tokens it kept.
    pub fn apply(&mut self) -> Duration {
        for (i, d) in self.cands.data.iter_mut().enumerate() {
            d.set_id(LlamaToken(i as i32));
            d.set_logit(0.0);
            d.set_p(0.0);
        }
        self.cands.selected = None;
        self.cands.sorted = false;
        let t0 = Instant::now();
        self.sampler.apply(&mut self.cands);
        let took = t0.elapsed();
        self.allowed.clear(self.n_vocab);
        for d in &self.cands.data {
            if d.logit() != f32::NEG_INFINITY {
                self.allowed.set(d.id().0 as u32);
            }
        }
        took
    }

    /// The tokens the last [`LlamaGrammar::apply`] allowed.
    pub fn allowed(&self) -> &TokenMask {
        &self.allowed
    }

    /// Advances the grammar by `token`, which the last [`LlamaGrammar::apply`] must have allowed.
    pub fn accept(&mut self, token: Token) -> Result<(), String> {
        if !self.allowed.contains(token) {
            return Err(format!("token {token} was not allowed by llama.cpp's last mask"));
        }
        self.sampler.accept(LlamaToken(token));
        Ok(())
    }
}
