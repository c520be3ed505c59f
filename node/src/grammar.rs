//! `Vocab`, `Grammar` and `TokenTrie`: nucleus-grammar's [`GrammarMatcher`] and
//! [`TrieMatcher`] (the ones the Python package and the C ABI wrap too), with masks written
//! into an `Int32Array` in place.

use std::sync::Arc;

use napi::bindgen_prelude::{Either, Int32Array, Uint8Array, Unknown};
use napi::{Error, Result, Status};
use napi_derive::napi;
use nucleus_grammar::bitmask::{as_unsigned, bitmask_words};
use nucleus_grammar::continuations::Mode;
use nucleus_grammar::{GrammarMatcher, OnEog, TrieMatcher, VocabIndex};
use nucleus_runtime::{token_trie_for, TrieSetting};
use nucleus_sampler::Token;
use serde_json::Value;

use crate::convert::to_value;

fn invalid(msg: impl std::fmt::Display) -> Error {
    Error::new(Status::InvalidArg, msg.to_string())
}

/// A token id from JavaScript, or None when no token has it.
fn token(t: i64) -> Option<Token> {
    Token::try_from(t).ok()
}

/// A JSON value given as an object or as JSON text.
fn json_arg(field: &str, v: &Unknown<'_>) -> Result<Value> {
    match to_value(field, v)? {
        Value::String(s) => serde_json::from_str(&s).map_err(|e| invalid(format!("{field} is not valid JSON: {e}"))),
        other => Ok(other),
    }
}

/// Row `index` of a bitmask of `words`-word rows.
fn row(out: &mut Int32Array, index: u32, words: usize) -> Result<&mut [u32]> {
    // SAFETY: the array is borrowed for this call only and nothing else runs meanwhile (the
    // JavaScript thread is inside this call).
    let all = unsafe { out.as_mut() };
    let rows = all.len() / words.max(1);
    let i = index as usize;
    if all.len() % words != 0 || i >= rows.max(1) {
        return Err(invalid(format!(
            "the bitmask has {} words: rows of {words} words (ceil(nVocab / 32)) are needed, and row {i} must exist",
            all.len()
        )));
    }
    Ok(as_unsigned(&mut all[i * words..(i + 1) * words]))
}

/// A tokenizer vocabulary: every token's bytes (index = token id) and the end-of-generation
/// ids. Build it once and share it between grammars.
#[napi]
pub struct Vocab {
    index: Arc<VocabIndex>,
}

#[napi]
impl Vocab {
    #[napi(catch_unwind, constructor)]
    pub fn new(pieces: Vec<Either<Uint8Array, String>>, eog_ids: Option<Vec<i64>>) -> Result<Self> {
        let pieces = pieces
            .into_iter()
            .map(|p| match p {
                Either::A(bytes) => bytes.to_vec().into_boxed_slice(),
                Either::B(text) => text.into_bytes().into_boxed_slice(),
            })
            .collect();
        let index = VocabIndex::checked(pieces, &eog_ids.unwrap_or_default()).map_err(invalid)?;
        Ok(Vocab { index: Arc::new(index) })
    }

    /// Number of tokens.
    #[napi(catch_unwind, getter)]
    pub fn n_vocab(&self) -> u32 {
        self.index.n_vocab() as u32
    }

    /// Words of one packed bitmask row: `ceil(nVocab / 32)`.
    #[napi(catch_unwind, getter)]
    pub fn bitmask_words(&self) -> u32 {
        bitmask_words(self.index.n_vocab()) as u32
    }
}

/// A grammar position over a vocabulary: `Grammar.fromGbnf(vocab, text, start?)` (llama.cpp's
/// GBNF) or `Grammar.fromJsonSchema(vocab, schema, llamaCppCompat?)` (strict by default: a
/// keyword that cannot be enforced exactly throws, naming the keyword and its JSON pointer).
#[napi]
pub struct Grammar {
    m: GrammarMatcher,
}

#[napi]
impl Grammar {
    /// From GBNF text (start rule `start`, default `root`).
    #[napi(catch_unwind, factory)]
    pub fn from_gbnf(vocab: &Vocab, text: String, start: Option<String>) -> Result<Self> {
        let start = start.as_deref().unwrap_or("root");
        let m = GrammarMatcher::from_gbnf(vocab.index.clone(), &text, start, OnEog::Terminate).map_err(invalid)?;
        Ok(Grammar { m })
    }

    /// From a JSON Schema (object or JSON text).
    #[napi(catch_unwind, factory, ts_args_type = "vocab: Vocab, schema: object | string, llamaCppCompat?: boolean")]
    pub fn from_json_schema(vocab: &Vocab, schema: Unknown<'_>, llama_cpp_compat: Option<bool>) -> Result<Self> {
        let v = json_arg("schema", &schema)?;
        let compat = llama_cpp_compat.unwrap_or(false);
        let m = GrammarMatcher::from_json_schema(vocab.index.clone(), &v, compat, OnEog::Terminate).map_err(invalid)?;
        Ok(Grammar { m })
    }

    /// Vocabulary size.
    #[napi(catch_unwind, getter)]
    pub fn n_vocab(&self) -> u32 {
        self.m.n_vocab() as u32
    }

    /// Writes the tokens allowed next into row `index` (default 0) of `bitmask`
    /// (`ceil(nVocab / 32)` words per row; bit `i % 32` of word `i / 32` is token `i`), in place.
    #[napi(catch_unwind)]
    pub fn fill_next_token_bitmask(&self, mut bitmask: Int32Array, index: Option<u32>) -> Result<()> {
        let words = bitmask_words(self.m.n_vocab());
        let r = row(&mut bitmask, index.unwrap_or(0), words)?;
        self.m.fill_bitmask(r).map_err(invalid)
    }

    /// The tokens allowed next, in increasing order (the same set as the bitmask).
    #[napi(catch_unwind)]
    pub fn allowed_tokens(&self) -> Vec<u32> {
        self.m.allowed_tokens()
    }

    /// Whether `token` is allowed next, checked without computing a mask.
    #[napi(catch_unwind)]
    pub fn is_allowed(&self, token: i64) -> bool {
        self::token(token).is_some_and(|t| self.m.is_allowed(t))
    }

    /// Advances by `token`; false (and no change) if the grammar does not allow it here.
    #[napi(catch_unwind)]
    pub fn accept_token(&mut self, token: i64) -> bool {
        self::token(token).is_some_and(|t| self.m.accept(t).is_ok())
    }

    /// Undoes the last `n` accepted tokens (speculative decoding).
    #[napi(catch_unwind)]
    pub fn rollback(&mut self, n: u32) -> Result<()> {
        self.m.rollback(n as usize).map_err(invalid)
    }

    /// Number of accepted tokens that `rollback` can undo.
    #[napi(catch_unwind, getter)]
    pub fn num_accepted(&self) -> u32 {
        self.m.accepted() as u32
    }

    /// Whether an end-of-generation token was accepted, or the grammar is complete and nothing
    /// may follow.
    #[napi(catch_unwind)]
    pub fn is_terminated(&self) -> bool {
        self.m.is_terminated()
    }

    /// Whether the text so far is a complete match (end of generation is allowed now).
    #[napi(catch_unwind)]
    pub fn can_end(&self) -> bool {
        self.m.can_end()
    }

    /// Back to the start of the grammar.
    #[napi(catch_unwind)]
    pub fn reset(&mut self) {
        self.m.reset()
    }

    /// An independent copy at the same position.
    #[napi(catch_unwind)]
    pub fn clone(&self) -> Grammar {
        Grammar { m: self.m.clone() }
    }
}

/// Options of `new TokenTrie(descriptor, mode, options)`.
#[napi(object)]
pub struct TokenTrieOptions {
    /// The descriptor path whose leaves are allowed (default: the descriptor's only path).
    pub path: Option<String>,
    /// Vocabulary size the token ids must be below (default: one past the largest id listed).
    pub n_vocab: Option<u32>,
    /// The model id the descriptor's `modelId` must equal (default: not checked here;
    /// `Model.setTokenTrie` checks it against the model).
    pub model_id: Option<String>,
}

/// The token-trie constraint: `new TokenTrie(descriptor, mode?, { path?, nVocab?, modelId? })`
/// with `descriptor` = `{modelId, descriptors: [{path, leaves: [{name, tokens}]}]}` (object or
/// JSON text) and `mode` "greedy" (default: the most likely allowed token) or "sampled" (the
/// sampler chain over the allowed tokens). `Model.setTokenTrie` / `generate(prompt,
/// { tokenTrie })` constrain a model's generations with it.
#[napi]
pub struct TokenTrie {
    t: TrieMatcher,
}

impl TokenTrie {
    /// This trie's path and mode as a constraint for a loaded model
    /// ([`nucleus_runtime::token_trie_for`]).
    pub(crate) fn for_model(&self, model_id: &str, n_vocab: usize) -> Result<TrieSetting> {
        token_trie_for(&self.t, model_id, n_vocab).map_err(|e| invalid(format!("token trie: {e}")))
    }
}

#[napi]
impl TokenTrie {
    #[napi(
        catch_unwind,
        constructor,
        ts_args_type = "descriptor: object | string, mode?: 'greedy' | 'sampled', options?: TokenTrieOptions"
    )]
    pub fn new(descriptor: Unknown<'_>, mode: Option<String>, options: Option<TokenTrieOptions>) -> Result<Self> {
        let desc = json_arg("descriptor", &descriptor)?;
        let o = options.unwrap_or(TokenTrieOptions { path: None, n_vocab: None, model_id: None });
        let mode = Mode::from_name(mode.as_deref().unwrap_or("greedy")).map_err(invalid)?;
        let n_vocab = o.n_vocab.map(|n| n as usize);
        let t = TrieMatcher::new(&desc, o.path.as_deref(), mode, n_vocab, o.model_id.as_deref()).map_err(invalid)?;
        Ok(TokenTrie { t })
    }

    /// The descriptor path this trie walks.
    #[napi(catch_unwind, getter)]
    pub fn path(&self) -> String {
        self.t.path().to_string()
    }

    /// "greedy" or "sampled".
    #[napi(catch_unwind, getter)]
    pub fn mode(&self) -> String {
        self.t.mode().name().to_string()
    }

    /// Vocabulary size.
    #[napi(catch_unwind, getter)]
    pub fn n_vocab(&self) -> u32 {
        self.t.n_vocab() as u32
    }

    /// Tokens allowed next (empty once nothing can follow).
    #[napi(catch_unwind)]
    pub fn allowed(&self) -> Vec<i32> {
        self.t.allowed()
    }

    /// Tokens forced from here, to feed in one batch; does not advance.
    #[napi(catch_unwind)]
    pub fn forced(&self) -> Vec<i32> {
        self.t.forced()
    }

    /// Advances by one token or several; throws if one continues no leaf (nothing changes then).
    #[napi(catch_unwind)]
    pub fn advance(&mut self, tokens: Either<i64, Vec<i64>>) -> Result<()> {
        let list = match tokens {
            Either::A(t) => vec![t],
            Either::B(v) => v,
        };
        let list = list
            .into_iter()
            .map(|t| token(t).ok_or_else(|| invalid(format!("token {t} is out of range"))))
            .collect::<Result<Vec<Token>>>()?;
        self.t.advance(&list).map_err(invalid)
    }

    /// The leaf name if the tokens so far spell a complete leaf.
    #[napi(catch_unwind)]
    pub fn complete(&self) -> Option<String> {
        self.t.complete().map(str::to_string)
    }

    /// Whether nothing more can follow.
    #[napi(catch_unwind)]
    pub fn is_finished(&self) -> bool {
        self.t.is_finished()
    }

    /// Back to the start of the path.
    #[napi(catch_unwind)]
    pub fn reset(&mut self) {
        self.t.reset()
    }

    /// Writes the allowed tokens into row `index` of `bitmask` (every token once finished).
    #[napi(catch_unwind)]
    pub fn fill_next_token_bitmask(&self, mut bitmask: Int32Array, index: Option<u32>) -> Result<()> {
        let r = row(&mut bitmask, index.unwrap_or(0), bitmask_words(self.t.n_vocab()))?;
        self.t.fill_bitmask(r).map_err(invalid)
    }
}
