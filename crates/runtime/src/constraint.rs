//! Output constraints for a [`crate::Sequence`]: a GBNF grammar, a JSON Schema (strict
//! compilation: a keyword that cannot be enforced is refused) or any JSON object, built as a
//! nucleus-grammar [`GrammarSampler`] over the model's vocabulary.

use nucleus_grammar::continuations::{Mode as TrieMode, TrieConstraint};
use nucleus_grammar::json_schema::{schema_to_gbnf, schema_to_grammar, SchemaOptions};
use nucleus_grammar::rules::RuleSet;
use nucleus_grammar::{
    builtin, BuildError, DescriptorError, Grammar, GrammarSampler, SchemaError, TrieMatcher, Triggers, VocabIndex,
};
use nucleus_sampler::Token;
use serde_json::Value;
use std::sync::Mutex;
use thiserror::Error;

use crate::model::{Model, Tokenizer};

/// What the generated text must match.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputConstraint {
    /// A GBNF grammar written by a person (start rule `root`).
    Gbnf(String),
    /// JSON valid against this schema.
    JsonSchema(Value),
    /// Any JSON object (the built-in `json` grammar).
    JsonObject,
    /// A grammar built as rules (start rule `root`), such as the server's tool-call grammar:
    /// built into the automaton directly, never printed and parsed again.
    Rules(RuleSet),
    /// A lazy grammar built as rules (tool calls): free text until one of the trigger words
    /// appears, then the rules (start rule `root`) from that word on.
    LazyRules {
        /// The rules; `root` matches from the trigger word.
        rules: RuleSet,
        /// Words that switch the grammar on.
        triggers: Vec<String>,
    },
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

/// Grammars compiled for earlier requests, by constraint: a request repeating a schema or
/// grammar gets a clone of the same sampler, whose automaton and per-state masks (shared by
/// clones) are already warm. A few dozen entries, least recently used dropped first; an
/// automaton grown past [`GrammarCache::MAX_STATES`] or out of work budget
/// ([`nucleus_grammar::WORK_LIMIT`]) is rebuilt fresh.
#[derive(Debug, Default)]
pub struct GrammarCache {
    entries: Mutex<Vec<(CacheKey, GrammarSampler)>>,
}

/// What a cached grammar was built from. A schema is keyed by its JSON text, not by value:
/// two schemas equal as values can list their properties in different orders, and the order
/// is the members' order in the grammar.
#[derive(Debug, PartialEq)]
enum CacheKey {
    Gbnf(String),
    Schema(String),
    JsonObject,
    Rules(RuleSet),
    LazyRules(RuleSet, Vec<String>),
}

impl GrammarCache {
    /// Entries kept.
    pub const ENTRIES: usize = 32;
    /// Automaton states beyond which a cached grammar is dropped (each costs about 1 KiB).
    pub const MAX_STATES: usize = 65_536;

    fn key(c: &OutputConstraint) -> CacheKey {
        match c {
            OutputConstraint::Gbnf(text) => CacheKey::Gbnf(text.clone()),
            OutputConstraint::JsonSchema(schema) => CacheKey::Schema(schema.to_string()),
            OutputConstraint::JsonObject => CacheKey::JsonObject,
            OutputConstraint::Rules(rules) => CacheKey::Rules(rules.clone()),
            OutputConstraint::LazyRules { rules, triggers } => CacheKey::LazyRules(rules.clone(), triggers.clone()),
        }
    }

    /// A clone of the cached sampler for `c`, or one built by `build` (and kept).
    pub fn get_or_build(
        &self,
        c: &OutputConstraint,
        build: impl FnOnce() -> Result<GrammarSampler, ConstraintError>,
    ) -> Result<GrammarSampler, ConstraintError> {
        let key = Self::key(c);
        {
            let mut e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = e.iter().position(|(k, _)| *k == key) {
                let hit = e.remove(i);
                // An automaton that spent its work budget refuses new states for good: a
                // fresh one is built instead (the request may take another path through it).
                if hit.1.automaton_states() <= Self::MAX_STATES && !hit.1.exhausted() {
                    let out = hit.1.clone();
                    e.push(hit);
                    return Ok(out);
                }
            }
        }
        let fresh = build()?;
        let mut e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if e.len() >= Self::ENTRIES {
            e.remove(0);
        }
        e.push((key, fresh.clone()));
        Ok(fresh)
    }
}

/// The rules (start rule `root`) of a JSON Schema for tool-call arguments: strict conversion
/// (a keyword that cannot be enforced is an error naming it), objects closed unless the schema
/// opens them, as OpenAI's strict function schemas and llama.cpp's tool grammars are. The
/// server composes several of them under name prefixes ([`RuleSet::import`]).
pub fn tool_arguments_rules(schema: &Value) -> Result<RuleSet, ConstraintError> {
    let opts = SchemaOptions { strict: true, closed_objects: true, lenient: false };
    let compiled = schema_to_gbnf(schema, &opts)?;
    compiled.grammar()?;
    // A grammar that builds was built from its rules: they are there.
    Ok(compiled.rules.unwrap_or_default())
}

/// The token-trie constraint for `path` of a descriptor (`{"modelId", "descriptors": [{path,
/// leaves: [{name, tokens}]}]}`) whose `modelId` must be `model_id`; built tries are kept in
/// nucleus-grammar's process-wide cache ([`nucleus_grammar::trie_cache::shared`]).
/// `greedy` selects the mode the constraint reports ([`crate::Sequence::set_token_trie`] takes
/// it too).
pub fn token_trie(
    desc: &Value,
    model_id: &str,
    n_vocab: usize,
    path: &str,
    greedy: bool,
) -> Result<TrieConstraint, DescriptorError> {
    let set = nucleus_grammar::trie_cache::shared_by_path(desc, model_id, n_vocab)?;
    set.constraint(path, if greedy { TrieMode::Greedy } else { TrieMode::Sampled })
}

/// A token-trie constraint for one model and whether it is greedy (what
/// [`crate::Sequence::set_token_trie`] takes).
pub type TrieSetting = (TrieConstraint, bool);

/// The path and mode of `trie` (a binding's `TokenTrie`) as a constraint for a loaded model
/// (`model_id`, `n_vocab` tokens), built and cached as `nucleus generate --token-trie` and the
/// server build theirs, at the start of the path.
pub fn token_trie_for(trie: &TrieMatcher, model_id: &str, n_vocab: usize) -> Result<TrieSetting, DescriptorError> {
    let greedy = trie.mode() == TrieMode::Greedy;
    Ok((token_trie(trie.descriptor(), model_id, n_vocab, trie.path(), greedy)?, greedy))
}

/// A grammar sampler enforcing `c` over `model`'s (shared, cached) vocabulary index, from the
/// model's cache of compiled grammars when it has one.
pub fn grammar_sampler(model: &dyn Model, c: &OutputConstraint) -> Result<GrammarSampler, ConstraintError> {
    match model.grammar_cache() {
        Some(cache) => cache.get_or_build(c, || build_grammar_sampler(model, c)),
        None => build_grammar_sampler(model, c),
    }
}

/// Compiles `c` into a new grammar sampler over `model`'s vocabulary index.
fn build_grammar_sampler(model: &dyn Model, c: &OutputConstraint) -> Result<GrammarSampler, ConstraintError> {
    let vocab = model.grammar_vocab();
    let grammar = match c {
        OutputConstraint::Gbnf(text) => return Ok(GrammarSampler::with_index(vocab, text, "root")?),
        OutputConstraint::Rules(rules) => Grammar::from_rules(rules, "root")?,
        OutputConstraint::LazyRules { rules, triggers } => {
            let t = Triggers::new(triggers, &[], &[])?;
            return Ok(GrammarSampler::lazy_from_grammar(vocab, Grammar::from_rules(rules, "root")?, t));
        }
        OutputConstraint::JsonSchema(schema) => schema_to_grammar(schema, &SchemaOptions::default())?,
        OutputConstraint::JsonObject => match builtin::grammar("json") {
            Some(g) => g?,
            None => return Err(BuildError::MissingStart("json".into()).into()),
        },
    };
    Ok(GrammarSampler::from_grammar(vocab, grammar))
}
