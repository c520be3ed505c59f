//! llguidance (crates.io `llguidance` + `toktrie`), the strongest published constrained-decoding
//! engine, as a peer of nucleus-grammar in `nucleus bench --grammar`: its own JSON Schema
//! compiler and mask computation over the same model vocabulary, timed along the same token
//! path. Never used to generate.
//!
//! The vocabulary is handed over as llguidance expects it: ordinary tokens as their bytes,
//! control tokens behind toktrie's special-token marker byte (so no grammar text matches them),
//! end of sequence as the model's EOS. Schemas are compiled in the compact layout nucleus's
//! strict converter writes (`","` and `":"`, no free whitespace), so where both compilers
//! accept the same documents the two masks are the same set of ordinary tokens.

use std::sync::Arc;
use std::time::{Duration, Instant};

use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use nucleus_grammar::TokenMask;
use nucleus_runtime::Tokenizer;
use nucleus_sampler::Token;
use serde_json::{json, Value};
use toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie};

/// llguidance's parser factory over one model's vocabulary (token trie and the precomputed
/// token slices), built once and shared by every schema.
pub struct LlgVocab {
    factory: ParserFactory,
    n_vocab: usize,
    /// Tokens that are text on both sides (not control, not end of generation): the tokens
    /// whose masks the two engines can be compared on.
    comparable: TokenMask,
}

impl LlgVocab {
    /// Builds the trie and factory from `tok`'s pieces (llguidance's general slices, quiet).
    pub fn new(tok: &dyn Tokenizer) -> Result<Self, String> {
        let n = tok.n_vocab();
        let mut words = Vec::with_capacity(n);
        let mut comparable = TokenMask::new(n);
        let (mut plain, mut rendered) = (Vec::new(), Vec::new());
        for id in 0..n as Token {
            plain.clear();
            rendered.clear();
            tok.append_piece(id, false, &mut plain);
            tok.append_piece(id, true, &mut rendered);
            if plain.is_empty() && !rendered.is_empty() {
                // A control token: llguidance keeps it out of text matching behind its marker.
                let mut w = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                w.extend_from_slice(&rendered);
                words.push(w);
            } else {
                words.push(plain.clone());
                if !plain.is_empty() && !tok.is_eog(id) {
                    comparable.set(id as u32);
                }
            }
        }
        let special = tok.special();
        let eos = special.eos.or(special.eot).ok_or("the model has no end-of-sequence token")?;
        let mut info = TokRxInfo::new(n as u32, eos as u32);
        info.tok_end_of_turn = special.eot.map(|t| t as u32);
        info.tok_bos = special.bos.map(|t| t as u32);
        let trie = TokTrie::from(&info, &words);
        let env: TokEnv = Arc::new(ApproximateTokEnv::new(trie));
        let mut factory = ParserFactory::new_simple(&env).map_err(|e| format!("llguidance: {e}"))?;
        factory.quiet();
        Ok(LlgVocab { factory, n_vocab: n, comparable })
    }

    /// Vocabulary size.
    pub fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// The tokens both engines treat as text (masks are compared on these).
    pub fn comparable(&self) -> &TokenMask {
        &self.comparable
    }
}

/// One schema compiled by llguidance, with its last mask.
pub struct LlgGrammar {
    matcher: Matcher,
    allowed: TokenMask,
    n_vocab: usize,
}

impl LlgGrammar {
    /// Compiles `schema` with llguidance's JSON Schema compiler in nucleus's compact layout.
    pub fn new(vocab: &LlgVocab, schema: &Value) -> Result<Self, String> {
        let mut schema = schema.clone();
        match schema.as_object_mut() {
            Some(o) => {
                o.insert("x-guidance".into(), json!({ "whitespace_flexible": false }));
            }
            None => {
                // `true`/`false` schemas: an `allOf` wrapper carries the options.
                schema = json!({ "allOf": [schema], "x-guidance": { "whitespace_flexible": false } });
            }
        }
        let parser =
            vocab.factory.create_parser(TopLevelGrammar::from_json_schema(schema)).map_err(|e| format!("{e}"))?;
        let matcher = Matcher::new(Ok(parser));
        if let Some(e) = matcher.get_error() {
            return Err(e);
        }
        Ok(LlgGrammar { matcher, allowed: TokenMask::new(vocab.n_vocab), n_vocab: vocab.n_vocab })
    }

    /// Computes the mask over the whole vocabulary and returns the time of that call alone;
    /// [`LlgGrammar::allowed`] then holds it.
    pub fn apply(&mut self) -> Result<Duration, String> {
        let t0 = Instant::now();
        let vob = self.matcher.compute_mask().map_err(|e| e.to_string())?;
        let took = t0.elapsed();
        self.allowed.clear(self.n_vocab);
        vob.iter_set_entries(|i| {
            if i < self.n_vocab {
                self.allowed.set(i as u32)
            }
        });
        Ok(took)
    }

    /// The tokens the last [`LlgGrammar::apply`] allowed.
    pub fn allowed(&self) -> &TokenMask {
        &self.allowed
    }

    /// Advances by `token`.
    pub fn accept(&mut self, token: Token) -> Result<(), String> {
        self.matcher.consume_token(token as u32).map_err(|e| e.to_string())
    }
}
