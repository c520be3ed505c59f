//! Output constraints for a [`crate::Sequence`]: a GBNF grammar, a JSON Schema (strict
//! compilation: a keyword that cannot be enforced is refused) or any JSON object, built as a
//! nucleus-grammar [`GrammarSampler`] over the model's vocabulary.

use nucleus_grammar::json_schema::{schema_to_grammar, SchemaOptions};
use nucleus_grammar::{builtin, BuildError, GrammarSampler, SchemaError, VocabIndex};
use nucleus_sampler::Token;
use serde_json::Value;
use thiserror::Error;

use crate::model::{Model, Tokenizer};

/// What the generated text must match.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputConstraint {
    /// A GBNF grammar (start rule `root`).
    Gbnf(String),
    /// JSON valid against this schema.
    JsonSchema(Value),
    /// Any JSON object (the built-in `json` grammar).
    JsonObject,
}

/// Why a constraint could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConstraintError {
    /// The GBNF grammar is invalid (parse errors give line and column).
    #[error("invalid grammar: {0}")]
    Grammar(#[from] BuildError),
    /// The schema uses something that cannot be enforced exactly (names keyword and pointer).
    #[error("unsupported JSON schema: {0}")]
    Schema(#[from] SchemaError),
}

/// The vocabulary index the grammar masks walk. Token texts are what [`crate::Sequence`]
/// emits (control tokens render as nothing, so a grammar can never be satisfied by them).
/// Build it once per model ([`Model::grammar_vocab`] caches it): it reads every token.
pub fn build_vocab_index(tok: &dyn Tokenizer) -> VocabIndex {
    vocab_index_with(tok, false)
}

/// The vocabulary index with control tokens rendered as their text when `render_special` is
/// set: the vocabulary exactly as llama.cpp's grammar sampler sees it (its piece cache renders
/// them), for comparing masks with it.
pub fn vocab_index_with(tok: &dyn Tokenizer, render_special: bool) -> VocabIndex {
    let n = tok.n_vocab();
    let mut pieces = Vec::with_capacity(n);
    let mut eog = Vec::with_capacity(n);
    let mut buf = Vec::new();
    for id in 0..n as Token {
        buf.clear();
        tok.append_piece(id, render_special, &mut buf);
        pieces.push(buf.as_slice().into());
        eog.push(tok.is_eog(id));
    }
    VocabIndex::from_pieces(pieces, eog)
}

/// A grammar sampler enforcing `c` over `model`'s (shared, cached) vocabulary index.
pub fn grammar_sampler(model: &dyn Model, c: &OutputConstraint) -> Result<GrammarSampler, ConstraintError> {
    let vocab = model.grammar_vocab();
    let grammar = match c {
        OutputConstraint::Gbnf(text) => return Ok(GrammarSampler::with_index(vocab, text, "root")?),
        OutputConstraint::JsonSchema(schema) => schema_to_grammar(schema, &SchemaOptions::default())?,
        OutputConstraint::JsonObject => match builtin::grammar("json") {
            Some(g) => g?,
            None => return Err(BuildError::MissingStart("json".into()).into()),
        },
    };
    Ok(GrammarSampler::from_grammar(vocab, grammar))
}
