//! [`GrammarMatcher`]: a [`GrammarSampler`] with what structured-output engines (vLLM,
//! llguidance, XGrammar) expect of a matcher: the next-token mask packed into 32-bit words,
//! `rollback(n)` for speculative decoding, and termination after an end-of-generation token.
//! The C ABI, the Python package and the Node package all wrap this one type.

use std::sync::Arc;

use nucleus_sampler::Token;
use serde_json::Value;

use crate::bitmask;
use crate::error::{AcceptError, BitmaskSizeError, BuildError, RollbackError, SchemaError};
use crate::json_schema::{schema_to_grammar, SchemaOptions};
use crate::sampler::GrammarSampler;
use crate::vocab_index::VocabIndex;

/// What accepting an end-of-generation token does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnEog {
    /// The match is over: nothing is allowed or accepted any more (until a rollback or reset),
    /// as vLLM's and XGrammar's matchers do.
    Terminate,
    /// The grammar stays where it was (llama.cpp's grammar sampler; libnucleus's
    /// `nucleus_grammar`).
    Stay,
}

/// One sequence's grammar position with the positions before each accepted token.
#[derive(Debug, Clone)]
pub struct GrammarMatcher {
    current: GrammarSampler,
    /// The position before each accepted token, for `rollback` (a terminated matcher accepts
    /// nothing, so every one of them was not terminated).
    history: Vec<GrammarSampler>,
    /// An end-of-generation token was accepted (only with [`OnEog::Terminate`]).
    terminated: bool,
    on_eog: OnEog,
}

impl GrammarMatcher {
    /// At the start of `sampler`'s grammar.
    pub fn new(sampler: GrammarSampler, on_eog: OnEog) -> Self {
        GrammarMatcher { current: sampler, history: Vec::new(), terminated: false, on_eog }
    }

    /// From GBNF text (start rule `start`; `<[id]>` token items refer to this vocabulary).
    pub fn from_gbnf(vocab: Arc<VocabIndex>, text: &str, start: &str, on_eog: OnEog) -> Result<Self, BuildError> {
        Ok(Self::new(GrammarSampler::with_index(vocab, text, start)?, on_eog))
    }

    /// From a JSON Schema, compiled strictly (a keyword that cannot be enforced exactly is an
    /// error naming the keyword and its JSON pointer), or as llama.cpp's converter does.
    pub fn from_json_schema(
        vocab: Arc<VocabIndex>,
        schema: &Value,
        llama_cpp: bool,
        on_eog: OnEog,
    ) -> Result<Self, SchemaError> {
        let opts = if llama_cpp { SchemaOptions::llama_cpp() } else { SchemaOptions::default() };
        let grammar = schema_to_grammar(schema, &opts)?;
        Ok(Self::new(GrammarSampler::from_grammar(vocab, grammar), on_eog))
    }

    /// The grammar position itself.
    pub fn sampler(&self) -> &GrammarSampler {
        &self.current
    }

    /// Vocabulary size.
    pub fn n_vocab(&self) -> usize {
        self.current.vocab().n_vocab()
    }

    /// Writes the tokens allowed next into one packed bitmask row ([`crate::bitmask`]; all
    /// zero once terminated).
    pub fn fill_bitmask(&self, out: &mut [u32]) -> Result<(), BitmaskSizeError> {
        if self.terminated {
            return bitmask::fill_none(self.n_vocab(), out);
        }
        self.current.mask().fill_u32(self.n_vocab(), out)
    }

    /// The tokens allowed next, in increasing order.
    pub fn allowed_tokens(&self) -> Vec<u32> {
        if self.terminated {
            return Vec::new();
        }
        self.current.mask().ids()
    }

    /// Whether `token` is allowed next (checked without a full mask).
    pub fn is_allowed(&self, token: Token) -> bool {
        !self.terminated && self.current.is_allowed(token)
    }

    /// Advances by `token`, or says why it cannot (then nothing changed).
    pub fn accept(&mut self, token: Token) -> Result<(), AcceptError> {
        if self.terminated {
            return Err(AcceptError::Terminated(token));
        }
        let before = self.current.clone();
        self.current.try_accept(token)?;
        self.history.push(before);
        self.terminated = self.on_eog == OnEog::Terminate && self.current.vocab().is_eog(token);
        Ok(())
    }

    /// Undoes the last `n` accepted tokens (all or nothing).
    pub fn rollback(&mut self, n: usize) -> Result<(), RollbackError> {
        if n > self.history.len() {
            return Err(RollbackError { asked: n, accepted: self.history.len() });
        }
        if n > 0 {
            let at = self.history.len() - n;
            self.current = self.history.swap_remove(at);
            self.history.truncate(at);
            self.terminated = false;
        }
        Ok(())
    }

    /// Tokens accepted since the start (or the last reset) that `rollback` can undo.
    pub fn accepted(&self) -> usize {
        self.history.len()
    }

    /// Whether an end-of-generation token was accepted, or the grammar is complete with
    /// nothing that may follow.
    pub fn is_terminated(&self) -> bool {
        self.terminated || self.current.is_complete()
    }

    /// Whether the text so far is complete (end of generation is allowed now).
    pub fn can_end(&self) -> bool {
        !self.terminated && self.current.can_end()
    }

    /// Back to the start of the grammar, history cleared.
    pub fn reset(&mut self) {
        nucleus_sampler::Sampler::reset(&mut self.current);
        self.history.clear();
        self.terminated = false;
    }
}
