//! [`GrammarSampler`]: a grammar as a `nucleus_sampler::Sampler`. `apply` sets the logit of
//! every disallowed candidate to -inf (end-of-generation only where the grammar can end);
//! `accept` advances the grammar. Masks are cached per grammar state, and lazy grammars wait
//! for their trigger. Also offers llama.cpp's "check the sampled token first" test.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use nucleus_sampler::{Candidates, Sampler, Token, Vocab};

use crate::error::{AcceptError, BuildError};
use crate::grammar::Grammar;
use crate::lazy::{TriggerBuffer, Triggers};
use crate::mask::{compute_mask, TokenMask, WalkScratch};
use crate::matcher::Matcher;
use crate::vocab_index::VocabIndex;

/// How many per-state masks are kept before the cache is cleared.
const MASK_CACHE_ENTRIES: usize = 256;

#[derive(Debug, Default)]
struct MaskCache {
    masks: HashMap<u32, Arc<TokenMask>>,
    scratch: WalkScratch,
    enabled: bool,
}

/// A grammar constraint over a model vocabulary.
#[derive(Debug)]
pub struct GrammarSampler {
    vocab: Arc<VocabIndex>,
    matcher: Option<Matcher>,
    cache: Arc<Mutex<MaskCache>>,
    triggers: Arc<Triggers>,
    lazy: bool,
    awaiting: bool,
    buffer: TriggerBuffer,
    last_error: Option<AcceptError>,
}

impl GrammarSampler {
    /// Parses `text` (GBNF, start rule `start`) against a vocabulary read once from `vocab`.
    /// An empty text gives a sampler that constrains nothing (as llama.cpp).
    pub fn new(vocab: &dyn Vocab, text: &str, start: &str) -> Result<Self, BuildError> {
        Self::with_index(Arc::new(VocabIndex::new(vocab)), text, start)
    }

    /// Like [`GrammarSampler::new`] with a prebuilt (shareable) vocabulary index.
    pub fn with_index(vocab: Arc<VocabIndex>, text: &str, start: &str) -> Result<Self, BuildError> {
        if text.trim().is_empty() {
            return Ok(Self::build(vocab, None, Triggers::default(), false));
        }
        let g = Grammar::parse_with_tokens(text, start, Some(&*vocab))?;
        Ok(Self::build(vocab, Some(g), Triggers::default(), false))
    }

    /// A grammar already built.
    pub fn from_grammar(vocab: Arc<VocabIndex>, grammar: Arc<Grammar>) -> Self {
        Self::build(vocab, Some(grammar), Triggers::default(), false)
    }

    /// A lazy grammar: unconstrained until a trigger word, token or pattern appears; the
    /// triggering text is then replayed into the grammar.
    pub fn lazy(vocab: Arc<VocabIndex>, text: &str, start: &str, triggers: Triggers) -> Result<Self, BuildError> {
        let g = Grammar::parse_with_tokens(text, start, Some(&*vocab))?;
        Ok(Self::build(vocab, Some(g), triggers, true))
    }

    /// A lazy grammar already built ([`GrammarSampler::lazy`] without the text).
    pub fn lazy_from_grammar(vocab: Arc<VocabIndex>, grammar: Arc<Grammar>, triggers: Triggers) -> Self {
        Self::build(vocab, Some(grammar), triggers, true)
    }

    fn build(vocab: Arc<VocabIndex>, grammar: Option<Arc<Grammar>>, triggers: Triggers, lazy: bool) -> Self {
        GrammarSampler {
            vocab,
            matcher: grammar.map(Matcher::new),
            cache: Arc::new(Mutex::new(MaskCache { enabled: true, ..Default::default() })),
            triggers: Arc::new(triggers),
            lazy,
            awaiting: lazy,
            buffer: TriggerBuffer::default(),
            last_error: None,
        }
    }

    /// Turns the per-state mask cache on or off (benchmarks measure both).
    pub fn set_mask_cache(&mut self, on: bool) {
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.enabled = on;
        c.masks.clear();
    }

    /// Trie nodes the last computed (uncached) mask stepped through: the walk's cost.
    pub fn last_walk_nodes(&self) -> usize {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).scratch.visited
    }

    /// States the grammar's automaton has built so far (shared by clones; 0 without a grammar).
    pub fn automaton_states(&self) -> usize {
        self.matcher.as_ref().map_or(0, |m| m.lock().n_states())
    }

    /// The vocabulary index.
    pub fn vocab(&self) -> &Arc<VocabIndex> {
        &self.vocab
    }

    /// Whether the grammar currently constrains sampling (false while a lazy grammar waits).
    pub fn is_active(&self) -> bool {
        self.matcher.is_some() && !self.awaiting
    }

    /// Whether end of generation is allowed now.
    pub fn can_end(&self) -> bool {
        match &self.matcher {
            Some(m) if !self.awaiting => m.eog_allowed(),
            _ => true,
        }
    }

    /// Whether the grammar is finished: it can end here and nothing may follow (generation
    /// can stop without sampling an end-of-generation token). False while a lazy grammar waits.
    pub fn is_complete(&self) -> bool {
        match &self.matcher {
            Some(m) if !self.awaiting => m.can_end() && m.n_stacks() == 1,
            _ => false,
        }
    }

    /// Whether the grammar's automaton ran out of work budget ([`crate::WORK_LIMIT`]): the
    /// grammar is too ambiguous to follow, masks are empty and every accept fails with
    /// [`AcceptError::TooAmbiguous`]. Shared by clones.
    pub fn exhausted(&self) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.lock().exhausted())
    }

    /// The error of the last `accept` that the grammar refused, if any.
    pub fn last_error(&self) -> Option<&AcceptError> {
        self.last_error.as_ref()
    }

    /// The set of tokens allowed next (every token while inactive; none once the grammar is
    /// [`GrammarSampler::exhausted`]).
    pub fn mask(&self) -> Arc<TokenMask> {
        let n = self.vocab.n_vocab();
        let Some(m) = self.matcher.as_ref().filter(|_| !self.awaiting) else {
            let mut all = TokenMask::new(n);
            for i in 0..n as u32 {
                all.set(i);
            }
            return Arc::new(all);
        };
        if m.lock().exhausted() {
            // Too ambiguous to follow: nothing is allowed (as `is_allowed` and the matcher say),
            // not even what an earlier mask of this state allowed.
            return Arc::new(TokenMask::new(n));
        }
        let state = m.state_id();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.enabled {
            if let Some(hit) = cache.masks.get(&state) {
                return hit.clone();
            }
        }
        // Sized and filled by `compute_mask` in one pass (no zeroing first).
        let mut mask = TokenMask::default();
        let mut dfa = m.lock();
        let scratch = &mut cache.scratch;
        compute_mask(&mut dfa, state, &self.vocab, &mut mask, scratch);
        if dfa.exhausted() {
            return Arc::new(TokenMask::new(n));
        }
        drop(dfa);
        let mask = Arc::new(mask);
        if cache.enabled {
            if cache.masks.len() >= MASK_CACHE_ENTRIES {
                cache.masks.clear();
            }
            cache.masks.insert(state, mask.clone());
        }
        mask
    }

    /// Whether the grammar allows `token` next, without computing a full mask (the
    /// "sample first, then check" fast path).
    pub fn is_allowed(&self, token: Token) -> bool {
        let Some(m) = self.matcher.as_ref().filter(|_| !self.awaiting) else {
            return true;
        };
        if token < 0 || token as usize >= self.vocab.n_vocab() {
            return false;
        }
        if self.vocab.is_eog(token) {
            return m.eog_allowed();
        }
        if !self.vocab.has_text(token) {
            return false;
        }
        m.allows_bytes(self.vocab.grammar_piece(token)) || m.allows_token_item(token)
    }

    /// Advances the grammar by `token`, or says why it cannot (state unchanged).
    pub fn try_accept(&mut self, token: Token) -> Result<(), AcceptError> {
        let Some(m) = self.matcher.as_mut() else {
            return Ok(());
        };
        if token < 0 || token as usize >= self.vocab.n_vocab() {
            return Err(AcceptError::Rejected { token, text: String::new() });
        }
        let piece = self.vocab.piece(token).to_vec();
        if self.awaiting {
            if self.triggers.tokens.contains(&token) {
                self.awaiting = false;
                self.buffer.clear();
                return m.accept_token(token, &piece);
            }
            self.buffer.push(token, &piece);
            if let Some(start) = self.triggers.find(&self.buffer.text) {
                self.awaiting = false;
                let replay = self.buffer.replay_from(start);
                self.buffer.clear();
                for (t, p) in replay {
                    m.accept_token(t, &p)?;
                }
            }
            return Ok(());
        }
        if self.vocab.is_eog(token) {
            return m.accept_eog(token);
        }
        let cut = match piece.iter().position(|&b| b == 0) {
            Some(i) => &piece[..i],
            None => &piece[..],
        };
        m.accept_token(token, cut)
    }
}

impl Clone for GrammarSampler {
    fn clone(&self) -> Self {
        GrammarSampler {
            vocab: self.vocab.clone(),
            matcher: self.matcher.clone(),
            cache: self.cache.clone(),
            triggers: self.triggers.clone(),
            lazy: self.lazy,
            awaiting: self.awaiting,
            buffer: self.buffer.clone(),
            last_error: self.last_error.clone(),
        }
    }
}

impl Sampler for GrammarSampler {
    fn name(&self) -> &str {
        "grammar"
    }

    fn apply(&mut self, cands: &mut Candidates) {
        if !self.is_active() {
            return;
        }
        let mask = self.mask();
        for c in cands.as_mut_slice() {
            if !mask.contains(c.id) {
                c.logit = f32::NEG_INFINITY;
            }
        }
    }

    fn accept(&mut self, token: Token) {
        self.last_error = self.try_accept(token).err();
    }

    fn reset(&mut self) {
        if let Some(m) = self.matcher.as_mut() {
            m.reset();
        }
        self.awaiting = self.lazy;
        self.buffer.clear();
        self.last_error = None;
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}
