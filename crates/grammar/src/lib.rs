//! # nucleus-grammar
//!
//! Constrained decoding compatible with llama.cpp: GBNF grammars (parser, stack runtime,
//! partial UTF-8, lazy triggers), JSON Schema to GBNF, and token-trie constraints, with token
//! masks computed by walking a vocabulary trie against a lazily built automaton.
//!
//! ```
//! use nucleus_grammar::Matcher;
//! let mut m = Matcher::from_gbnf(r#"root ::= "a" [0-9]+"#).unwrap();
//! m.accept_bytes(b"a12").unwrap();
//! assert!(m.can_end());
//! assert!(m.accept_bytes(b"x").is_err());
//! ```

pub mod bitmask;
pub mod builtin;
pub mod compile;
pub mod constrained;
pub mod continuations;
pub mod dfa;
pub mod error;
mod fast_hash;
pub mod grammar;
pub mod grammar_matcher;
pub mod json_schema;
pub mod lazy;
pub mod loop_exits;
pub mod mask;
pub mod matcher;
pub mod parse;
pub mod rules;
pub mod sampler;
pub mod stacks;
pub mod trie_cache;
pub mod trie_matcher;
pub mod uniform_run;
pub mod vocab_index;

pub use error::{
    AcceptError, BitmaskSizeError, BuildError, DescriptorError, ParseError, RollbackError, SchemaError, VocabError,
};
pub use grammar::Grammar;
pub use grammar_matcher::{GrammarMatcher, OnEog};
pub use lazy::Triggers;
pub use mask::TokenMask;
pub use matcher::Matcher;
pub use sampler::GrammarSampler;
pub use stacks::WORK_LIMIT;
pub use trie_matcher::TrieMatcher;
pub use vocab_index::VocabIndex;
