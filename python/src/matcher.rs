//! The grammar matcher both bindings expose (the Node crate includes this file): a
//! [`GrammarSampler`] plus what structured-output engines (vLLM, llguidance, XGrammar) expect
//! of a matcher — the next-token mask packed into 32-bit words, `rollback(n)` for speculative
//! decoding, termination after an end-of-generation token — and the token-trie constraint.
//! Masks, acceptance and the trie all come from nucleus-grammar; this file only keeps the
//! history of positions and packs bits.

use std::sync::Arc;

use nucleus_grammar::continuations::{ContinuationSet, Mode, TrieConstraint};
use nucleus_grammar::json_schema::{schema_to_grammar, SchemaOptions};
use nucleus_grammar::{GrammarSampler, VocabIndex};
use nucleus_sampler::{Sampler as _, Token};
use serde_json::Value;

/// Builds a vocabulary index from token texts and end-of-generation ids.
pub(crate) fn vocab_index(pieces: Vec<Vec<u8>>, eog_ids: &[i64]) -> Result<VocabIndex, String> {
    let n = pieces.len();
    if n == 0 || n > i32::MAX as usize {
        return Err(format!("a vocabulary needs between 1 and 2^31 - 1 tokens, got {n}"));
    }
    let mut eog = vec![false; n];
    for &t in eog_ids {
        if t < 0 || t as usize >= n {
            return Err(format!("end-of-generation id {t} is outside the vocabulary [0, {n})"));
        }
        eog[t as usize] = true;
    }
    Ok(VocabIndex::from_pieces(pieces.into_iter().map(Vec::into_boxed_slice).collect(), eog))
}

/// Words of a packed bitmask for `n_vocab` tokens: `ceil(n_vocab / 32)`.
pub(crate) fn bitmask_words(n_vocab: usize) -> usize {
    n_vocab.div_ceil(32)
}

/// Packs "is token `i` allowed" into `out` (bit `i % 32` of word `i / 32`, as vLLM's
/// structured-output backends, llguidance and XGrammar lay it out).
fn pack(n_vocab: usize, out: &mut [i32], allowed: impl Fn(i32) -> bool) -> Result<(), String> {
    let words = bitmask_words(n_vocab);
    if out.len() != words {
        return Err(format!(
            "the bitmask row has {} words; {n_vocab} tokens need ceil({n_vocab} / 32) = {words}",
            out.len()
        ));
    }
    for (w, word) in out.iter_mut().enumerate() {
        let base = (w * 32) as i32;
        let top = (n_vocab - w * 32).min(32) as i32;
        let mut bits = 0u32;
        for b in 0..top {
            if allowed(base + b) {
                bits |= 1 << b;
            }
        }
        *word = bits as i32;
    }
    Ok(())
}

/// One sequence's grammar position with its history.
#[derive(Clone)]
pub(crate) struct GrammarMatcher {
    vocab: Arc<VocabIndex>,
    current: GrammarSampler,
    /// Positions before each accepted token, for `rollback`.
    history: Vec<(GrammarSampler, bool)>,
    /// An end-of-generation token was accepted.
    terminated: bool,
}

impl GrammarMatcher {
    /// From GBNF text (start rule `start`; `<[id]>` token items refer to this vocabulary).
    pub(crate) fn from_gbnf(vocab: Arc<VocabIndex>, text: &str, start: &str) -> Result<Self, String> {
        let g = GrammarSampler::with_index(vocab.clone(), text, start).map_err(|e| e.to_string())?;
        Ok(Self::new(vocab, g))
    }

    /// From a JSON Schema, compiled strictly (a keyword that cannot be enforced exactly is an
    /// error naming the keyword and its JSON pointer), or as llama.cpp's converter does.
    pub(crate) fn from_json_schema(vocab: Arc<VocabIndex>, schema: &Value, llama_cpp: bool) -> Result<Self, String> {
        let opts = if llama_cpp { SchemaOptions::llama_cpp() } else { SchemaOptions::default() };
        let grammar = schema_to_grammar(schema, &opts).map_err(|e| e.to_string())?;
        Ok(Self::new(vocab.clone(), GrammarSampler::from_grammar(vocab, grammar)))
    }

    fn new(vocab: Arc<VocabIndex>, current: GrammarSampler) -> Self {
        GrammarMatcher { vocab, current, history: Vec::new(), terminated: false }
    }

    /// Vocabulary size.
    pub(crate) fn n_vocab(&self) -> usize {
        self.vocab.n_vocab()
    }

    /// Writes the tokens allowed next into one bitmask row (all zero once terminated).
    pub(crate) fn fill_next_token_bitmask(&self, out: &mut [i32]) -> Result<(), String> {
        if self.terminated {
            return pack(self.n_vocab(), out, |_| false);
        }
        let mask = self.current.mask();
        pack(self.n_vocab(), out, |t| mask.contains(t))
    }

    /// The tokens allowed next, in increasing order.
    pub(crate) fn allowed_tokens(&self) -> Vec<u32> {
        if self.terminated {
            return Vec::new();
        }
        self.current.mask().ids()
    }

    /// Whether `token` is allowed next (checked without a full mask).
    pub(crate) fn is_allowed(&self, token: i64) -> bool {
        !self.terminated && i32::try_from(token).is_ok_and(|t| self.current.is_allowed(t))
    }

    /// Advances by `token`; false (and no change) when the grammar does not allow it.
    pub(crate) fn accept_token(&mut self, token: i64) -> bool {
        let Ok(t) = Token::try_from(token) else { return false };
        if self.terminated {
            return false;
        }
        let before = self.current.clone();
        match self.current.try_accept(t) {
            Ok(()) => {
                self.history.push((before, self.terminated));
                self.terminated = self.vocab.is_eog(t);
                true
            }
            Err(_) => false,
        }
    }

    /// Undoes the last `n` accepted tokens.
    pub(crate) fn rollback(&mut self, n: usize) -> Result<(), String> {
        if n > self.history.len() {
            return Err(format!("cannot roll back {n} tokens: only {} were accepted", self.history.len()));
        }
        if n > 0 {
            let at = self.history.len() - n;
            let (state, terminated) = self.history.swap_remove(at);
            self.history.truncate(at);
            self.current = state;
            self.terminated = terminated;
        }
        Ok(())
    }

    /// Tokens accepted since the start (or the last reset) that `rollback` can undo.
    pub(crate) fn accepted(&self) -> usize {
        self.history.len()
    }

    /// Whether an end-of-generation token was accepted, or the grammar is complete with
    /// nothing that may follow.
    pub(crate) fn is_terminated(&self) -> bool {
        self.terminated || self.current.is_complete()
    }

    /// Whether the text so far is complete (end of generation is allowed now).
    pub(crate) fn can_end(&self) -> bool {
        !self.terminated && self.current.can_end()
    }

    /// Back to the start of the grammar, history cleared.
    pub(crate) fn reset(&mut self) {
        self.current.reset();
        self.history.clear();
        self.terminated = false;
    }
}

/// A token-trie constraint: one path of a continuation descriptor (`{"modelId", "descriptors":
/// [{"path", "leaves": [{"name", "tokens"}]}]}`), with forced tokens. It keeps the descriptor,
/// path and mode so a model can build its own constraint from them ([`Trie::for_model`]).
#[derive(Clone)]
pub(crate) struct Trie {
    n_vocab: usize,
    constraint: TrieConstraint,
    descriptor: Arc<Value>,
    path: String,
    greedy: bool,
}

/// One past the largest token id `descriptor` lists (1 if it lists none): the vocabulary size a
/// trie assumes when none is given. Malformed parts are skipped here and reported by
/// nucleus-grammar's parser.
fn implied_n_vocab(descriptor: &Value) -> usize {
    let ids = descriptor["descriptors"].as_array().into_iter().flatten().flat_map(|d| {
        d["leaves"].as_array().into_iter().flatten().flat_map(|l| l["tokens"].as_array().into_iter().flatten())
    });
    let max = ids.filter_map(Value::as_u64).filter(|&t| t <= i32::MAX as u64).max();
    max.map_or(1, |m| m as usize + 1)
}

impl Trie {
    /// Parses `descriptor` and positions a constraint at the start of `path` (default: the
    /// descriptor's only path). `mode`: "greedy" (the most likely allowed token) or "sampled"
    /// (the sampler chain over the allowed tokens). Token ids must be below `n_vocab` (default:
    /// one past the largest id the descriptor lists). The descriptor's `modelId` must be
    /// `model_id` when one is given.
    pub(crate) fn new(
        descriptor: &Value,
        path: Option<&str>,
        mode: &str,
        n_vocab: Option<usize>,
        model_id: Option<&str>,
    ) -> Result<Self, String> {
        let (mode, greedy) = match mode {
            "sampled" => (Mode::Sampled, false),
            "greedy" => (Mode::Greedy, true),
            other => return Err(format!("mode must be \"greedy\" or \"sampled\", not {other:?}")),
        };
        let id = match model_id {
            Some(m) => m.to_string(),
            None => descriptor.get("modelId").and_then(Value::as_str).unwrap_or_default().to_string(),
        };
        let n_vocab = n_vocab.unwrap_or_else(|| implied_n_vocab(descriptor));
        let set = ContinuationSet::from_descriptor(descriptor, &id, n_vocab).map_err(|e| e.to_string())?;
        let path = match path {
            Some(p) => p.to_string(),
            None => {
                let mut paths = set.paths();
                paths.sort_unstable();
                match paths.as_slice() {
                    [only] => only.to_string(),
                    many => {
                        return Err(format!(
                            "the descriptor has {} paths ({}): say which one with `path`",
                            many.len(),
                            many.join(", ")
                        ))
                    }
                }
            }
        };
        let constraint = set.constraint(&path, mode).map_err(|e| e.to_string())?;
        Ok(Trie { n_vocab, constraint, descriptor: Arc::new(descriptor.clone()), path, greedy })
    }

    /// The same path and mode as a constraint for a loaded model (`model_id`, `n_vocab`
    /// tokens), built and cached by nucleus-runtime as `nucleus generate --token-trie` and the
    /// server build theirs, at the start of the path; and whether it is greedy.
    pub(crate) fn for_model(&self, model_id: &str, n_vocab: usize) -> Result<(TrieConstraint, bool), String> {
        let t = nucleus_runtime::token_trie(&self.descriptor, model_id, n_vocab, &self.path, self.greedy)
            .map_err(|e| format!("token trie: {e}"))?;
        Ok((t, self.greedy))
    }

    /// The descriptor path this trie walks.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// "greedy" or "sampled".
    pub(crate) fn mode(&self) -> &'static str {
        if self.greedy {
            "greedy"
        } else {
            "sampled"
        }
    }

    /// Vocabulary size.
    pub(crate) fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// Tokens allowed next (empty once nothing can follow).
    pub(crate) fn allowed(&self) -> Vec<Token> {
        self.constraint.allowed().collect()
    }

    /// Tokens forced from here (one continuation and no leaf on the way); does not advance.
    pub(crate) fn forced(&self) -> Vec<Token> {
        self.constraint.forced()
    }

    /// Advances by `tokens`, or says which one continues no leaf (then nothing changed).
    pub(crate) fn advance(&mut self, tokens: &[i64]) -> Result<(), String> {
        let mut next = self.constraint.clone();
        for &t in tokens {
            let t = Token::try_from(t).map_err(|_| format!("token {t} is out of range"))?;
            next.advance(t).map_err(|e| e.to_string())?;
        }
        self.constraint = next;
        Ok(())
    }

    /// The leaf name if the tokens so far spell a complete leaf.
    pub(crate) fn complete(&self) -> Option<String> {
        self.constraint.complete().map(str::to_string)
    }

    /// Whether nothing more can follow.
    pub(crate) fn is_finished(&self) -> bool {
        self.constraint.is_finished()
    }

    /// Back to the start of the path.
    pub(crate) fn reset(&mut self) {
        self.constraint.reset();
    }

    /// The allowed tokens as one bitmask row (every token once the path is finished: the
    /// constrained span is over).
    pub(crate) fn fill_next_token_bitmask(&self, out: &mut [i32]) -> Result<(), String> {
        if self.constraint.is_finished() {
            return pack(self.n_vocab, out, |_| true);
        }
        pack(self.n_vocab, out, |_| false)?;
        for t in self.constraint.allowed() {
            if let Some(w) = out.get_mut(t as usize / 32) {
                *w |= (1u32 << (t as u32 % 32)) as i32;
            }
        }
        Ok(())
    }
}
