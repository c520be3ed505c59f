//! Speculative decoding that never changes an answer: n-gram drafts from the sequence's own
//! tokens (prompt and generated), verified exactly.
//!
//! [`NgramDrafter`] keeps the tokens so far and proposes, after the longest earlier match of
//! their suffix (at least [`SpecOptions::min_match`] tokens), the tokens that followed it. The
//! engine ([`crate::engine`]) decodes the pending token and the draft in one forward pass with
//! logits at every position, and the sequence samples each row in order with its own chain:
//! while the sampled token equals the draft the next row is valid and is used; the first
//! mismatch's sampled token is the next token, and the rows after it are dropped unsampled
//! (their KV cut with `truncate`). No row is sampled that plain decoding would not sample, in
//! the same order, so tokens, log-probabilities and the RNG state are those of plain decoding —
//! given a batch-invariant forward pass ([`crate::Model::batch_invariant`]).

use std::collections::HashMap;
use std::sync::Arc;

use nucleus_sampler::Token;

use crate::ngram_cache::NgramCache;

/// Where drafts come from (llama.cpp's `--spec-type`, with its `ngram` modes as one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpecType {
    /// No speculation.
    #[default]
    None,
    /// N-gram lookup over the sequence's own tokens ([`NgramDrafter`]).
    Ngram,
    /// A second, smaller model of the same vocabulary.
    Draft,
}

impl SpecType {
    /// The name users write (`none`, `ngram`, `draft`).
    pub fn as_str(self) -> &'static str {
        match self {
            SpecType::None => "none",
            SpecType::Ngram => "ngram",
            SpecType::Draft => "draft",
        }
    }
}

impl std::fmt::Display for SpecType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SpecType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(SpecType::None),
            "ngram" => Ok(SpecType::Ngram),
            "draft" => Ok(SpecType::Draft),
            other => Err(format!("'{other}' is not one of 'none', 'ngram', 'draft'")),
        }
    }
}

/// How drafts are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecOptions {
    /// Most tokens drafted per forward pass (llama.cpp's `--draft-max`).
    pub draft_max: usize,
    /// Drafts shorter than this are not used (llama.cpp's `--draft-min`).
    pub draft_min: usize,
    /// Shortest suffix match that may propose a draft (llama.cpp's `--spec-ngram-size-n`).
    pub min_match: usize,
}

impl Default for SpecOptions {
    fn default() -> Self {
        // A match of 6 tokens: shorter ones (3 was tried) draft on chance repeats often enough
        // that the rejected rows cost more than the accepted ones save (docs/PERFORMANCE.md).
        SpecOptions { draft_max: 16, draft_min: 1, min_match: 6 }
    }
}

impl SpecOptions {
    /// Checks the values: a draft of at least one token, a match of at least one token, and
    /// `draft_min <= draft_max`.
    pub fn validate(&self) -> Result<(), String> {
        if self.draft_max == 0 || self.draft_max > 256 {
            return Err(format!("draft-max must be between 1 and 256, not {}", self.draft_max));
        }
        if self.draft_min > self.draft_max {
            return Err(format!("draft-min ({}) must not exceed draft-max ({})", self.draft_min, self.draft_max));
        }
        if self.min_match == 0 || self.min_match > 64 {
            return Err(format!("spec-ngram-size-n must be between 1 and 64, not {}", self.min_match));
        }
        Ok(())
    }
}

/// What speculation did for one sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecStats {
    /// Draft tokens decoded.
    pub drafted: usize,
    /// Draft tokens the sampler confirmed (each is a forward pass plain decoding needs and
    /// speculation did not: the passes saved).
    pub accepted: usize,
    /// Forward passes that carried a draft.
    pub verify_passes: usize,
}

impl SpecStats {
    /// Accepted over drafted (0 without drafts).
    pub fn acceptance_rate(&self) -> f64 {
        if self.drafted == 0 {
            0.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }

    /// Adds another sequence's counts.
    pub fn add(&mut self, o: &SpecStats) {
        self.drafted += o.drafted;
        self.accepted += o.accepted;
        self.verify_passes += o.verify_passes;
    }
}

/// Most recent earlier positions a lookup compares (bounds its cost on common n-grams).
pub(crate) const CANDIDATES: usize = 32;
/// Longest suffix a lookup compares.
pub(crate) const MAX_MATCH: usize = 64;
/// Consecutive drafts of which none was accepted before drafting pauses.
const FAILS_BEFORE_PAUSE: u32 = 2;
/// Longest pause, in steps.
const MAX_PAUSE: usize = 64;

/// Prompt-lookup drafts over one sequence's tokens, adaptive in length and in when to draft.
/// For a sequence drafted by a draft model ([`NgramDrafter::for_model`]) it only paces the
/// drafts (length cap, pauses) and counts them; the engine asks the model.
#[derive(Clone, Debug)]
pub struct NgramDrafter {
    opts: SpecOptions,
    /// Drafts come from a draft model: no lookup index is kept.
    model: bool,
    history: Vec<Token>,
    /// Positions `e` (with `e < history.len()`) after which each `min_match`-gram ends, by the
    /// n-gram's hash, oldest first.
    index: HashMap<u64, Vec<u32>>,
    /// The current length cap: doubles on a fully accepted draft, shrinks to what was accepted.
    cap: usize,
    /// Drafts in a row of which nothing was accepted.
    fails: u32,
    /// Steps left without drafting, and the next pause's length.
    pause: usize,
    next_pause: usize,
    stats: SpecStats,
    /// Recent sequences' tokens, looked up when the sequence's own tokens hold no match; the
    /// history goes into it when the drafter is dropped.
    cache: Option<Arc<NgramCache>>,
}

impl NgramDrafter {
    /// An empty drafter.
    pub fn new(opts: SpecOptions) -> Self {
        NgramDrafter {
            opts,
            model: false,
            history: Vec::new(),
            index: HashMap::new(),
            cap: opts.draft_max.min(4).max(opts.draft_min).max(1),
            fails: 0,
            pause: 0,
            next_pause: 4,
            stats: SpecStats::default(),
            cache: None,
        }
    }

    /// Pacing and counts for drafts a draft model makes.
    pub fn for_model(opts: SpecOptions) -> Self {
        let mut d = NgramDrafter::new(opts);
        d.model = true;
        d
    }

    /// Also drafts from `cache` (where the sequence's own tokens hold no match), and adds the
    /// sequence's tokens to it when dropped. No effect on a drafter for a draft model.
    pub fn set_cache(&mut self, cache: Arc<NgramCache>) {
        if !self.model {
            self.cache = Some(cache);
        }
    }

    /// Whether drafts come from a draft model.
    pub fn drafts_from_model(&self) -> bool {
        self.model
    }

    /// How many tokens a draft may have now (at most `max`): 0 while paused or when fewer than
    /// `draft_min` would be allowed.
    pub fn budget(&self, max: usize) -> usize {
        let max = max.min(self.cap);
        if self.pause > 0 || max < self.opts.draft_min.max(1) {
            0
        } else {
            max
        }
    }

    /// Whether a draft of `len` tokens is long enough to be used.
    pub fn long_enough(&self, len: usize) -> bool {
        len >= self.opts.draft_min.max(1)
    }

    /// What it did so far.
    pub fn stats(&self) -> SpecStats {
        self.stats
    }

    /// Appends a token of the sequence (prompt or generated).
    pub fn push(&mut self, t: Token) {
        let n = self.opts.min_match;
        let len = self.history.len();
        self.pause = self.pause.saturating_sub(1);
        if self.model {
            return;
        }
        // The n-gram ending at `len` now has a continuation (`t`): index it.
        if len >= n {
            let h = hash(&self.history[len - n..len]);
            self.index.entry(h).or_default().push(len as u32);
        }
        self.history.push(t);
    }

    /// Up to `max` tokens likely to follow the history: the continuation of the longest earlier
    /// match of its suffix (ties: the most recent), or nothing.
    pub fn draft(&self, max: usize) -> Vec<Token> {
        let n = self.opts.min_match;
        let len = self.history.len();
        let max = self.budget(max);
        if self.model || max == 0 || len < n {
            return Vec::new();
        }
        let suffix = &self.history[len - n..];
        let mut best: Option<(usize, usize)> = None; // (match length, end)
        for &e in self.index.get(&hash(suffix)).into_iter().flatten().rev().take(CANDIDATES) {
            let e = e as usize;
            let m = common_suffix(&self.history[..e], &self.history[..len], MAX_MATCH);
            if m >= n && best.is_none_or(|(bm, _)| m > bm) {
                best = Some((m, e));
            }
        }
        let draft: Vec<Token> = match (best, &self.cache) {
            (Some((_, e)), _) => self.history[e..len.min(e + max)].to_vec(),
            (None, Some(cache)) => cache.lookup(&self.history, n, max),
            (None, None) => return Vec::new(),
        };
        if !self.long_enough(draft.len()) {
            return Vec::new();
        }
        draft
    }

    /// Records a verified draft: `drafted` tokens decoded, the first `accepted` confirmed.
    pub fn verified(&mut self, drafted: usize, accepted: usize) {
        self.stats.drafted += drafted;
        self.stats.accepted += accepted;
        self.stats.verify_passes += 1;
        let floor = self.opts.draft_min.max(1);
        if accepted == drafted {
            self.cap = (self.cap * 2).min(self.opts.draft_max).max(floor);
        } else {
            self.cap = (accepted + 1).clamp(floor, self.opts.draft_max);
        }
        if accepted == 0 {
            self.fails += 1;
            if self.fails >= FAILS_BEFORE_PAUSE {
                self.pause = self.next_pause;
                self.next_pause = (self.next_pause * 2).min(MAX_PAUSE);
                self.fails = 0;
            }
        } else {
            self.fails = 0;
            self.next_pause = 4;
        }
    }
}

impl Drop for NgramDrafter {
    /// A drafter with a cache leaves the sequence's tokens in it, for later requests.
    fn drop(&mut self) {
        if let Some(cache) = self.cache.take() {
            cache.insert(&self.history);
        }
    }
}

/// Length of the common suffix of `a` and `b`, at most `cap`.
pub(crate) fn common_suffix(a: &[Token], b: &[Token], cap: usize) -> usize {
    a.iter().rev().zip(b.iter().rev()).take(cap).take_while(|(x, y)| x == y).count()
}

/// FNV-1a over the token ids (collisions only cost a comparison: matches are checked).
pub(crate) fn hash(tokens: &[Token]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &t in tokens {
        for b in t.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drafter(tokens: &[Token], opts: SpecOptions) -> NgramDrafter {
        let mut d = NgramDrafter::new(opts);
        for &t in tokens {
            d.push(t);
        }
        d
    }

    #[test]
    fn proposes_the_continuation_of_the_longest_match() {
        let opts = SpecOptions { draft_max: 8, draft_min: 1, min_match: 2 };
        // "3 4" occurs twice; the longer match "2 3 4" is the first one, followed by 5 6.
        let d = drafter(&[1, 2, 3, 4, 5, 6, 9, 3, 4, 7, 8, 2, 3, 4], opts);
        assert_eq!(d.draft(2), vec![5, 6]);
        // The cap starts at 4.
        assert_eq!(d.draft(8), vec![5, 6, 9, 3]);
    }

    #[test]
    fn no_match_no_draft() {
        let opts = SpecOptions { draft_max: 8, draft_min: 1, min_match: 3 };
        let d = drafter(&[1, 2, 3, 4, 5, 6], opts);
        assert!(d.draft(8).is_empty());
        let d = drafter(&[1, 2], opts);
        assert!(d.draft(8).is_empty());
    }

    #[test]
    fn draft_min_discards_short_drafts() {
        let opts = SpecOptions { draft_max: 8, draft_min: 3, min_match: 2 };
        // The match's continuation runs into the end of the history after two tokens.
        let d = drafter(&[1, 2, 7, 8, 1, 2], opts);
        assert_eq!(d.draft(8), vec![7, 8, 1, 2]);
        let d = drafter(&[1, 2, 1, 2], opts);
        assert!(d.draft(8).is_empty(), "{:?}", d.draft(8));
    }

    #[test]
    fn adapts_length_and_pauses_after_failures() {
        let opts = SpecOptions { draft_max: 16, draft_min: 1, min_match: 1 };
        let mut d = drafter(&[1, 2, 3, 1, 2, 3, 1], opts);
        assert_eq!(d.draft(16), vec![2, 3, 1]);
        d.verified(4, 4);
        assert_eq!(d.cap, 8);
        d.verified(8, 2);
        assert_eq!(d.cap, 3);
        d.verified(3, 0);
        d.verified(1, 0);
        assert!(d.draft(16).is_empty(), "two failed drafts pause drafting");
        for _ in 0..4 {
            d.push(2);
        }
        assert!(!d.draft(16).is_empty(), "the pause is over");
        assert_eq!(d.stats(), SpecStats { drafted: 16, accepted: 6, verify_passes: 4 });
    }

    #[test]
    fn options_are_checked() {
        assert!(SpecOptions::default().validate().is_ok());
        assert!(SpecOptions { draft_max: 0, ..Default::default() }.validate().is_err());
        assert!(SpecOptions { draft_min: 20, ..Default::default() }.validate().is_err());
        assert!(SpecOptions { min_match: 0, ..Default::default() }.validate().is_err());
    }
}
