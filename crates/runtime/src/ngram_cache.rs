//! A bounded cache of recent sequences' tokens (prompt and output) that n-gram drafts also
//! look up: what one request generated can draft the next request that repeats it (llama.cpp's
//! `ngram-cache`, kept in memory). Drafts from it are verified like any other, so it changes
//! speed only, never an answer; but what a request drafts (and so its `usage.speculative`)
//! then depends on the requests before it, which is why a server uses it only when asked
//! (`nucleus serve --spec-ngram-cache TOKENS`).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;

use nucleus_sampler::Token;

use crate::speculative::{common_suffix, hash, CANDIDATES, MAX_MATCH};

/// Recent token streams, indexed by their `n`-grams, holding at most `capacity` tokens in all
/// (the oldest streams leave first). Shared between sequences (`Arc`); a lock guards it.
pub struct NgramCache {
    inner: Mutex<Inner>,
}

struct Inner {
    /// Length of the n-grams the index is keyed by.
    n: usize,
    /// Most tokens held over all streams.
    capacity: usize,
    /// The streams, oldest first; the first has id `first_id`, the next `first_id + 1`, ...
    streams: VecDeque<Vec<Token>>,
    first_id: u64,
    /// Tokens in `streams`.
    held: usize,
    /// N-gram hash to (stream id, position right after the n-gram), oldest first.
    index: HashMap<u64, Vec<(u64, u32)>>,
    /// Index entries in all, and those whose stream has left.
    entries: usize,
    stale: usize,
}

impl NgramCache {
    /// An empty cache keyed by `n`-grams (at least 1) holding at most `capacity` tokens.
    pub fn new(n: usize, capacity: usize) -> Self {
        let inner = Inner {
            n: n.max(1),
            capacity,
            streams: VecDeque::new(),
            first_id: 0,
            held: 0,
            index: HashMap::new(),
            entries: 0,
            stale: 0,
        };
        NgramCache { inner: Mutex::new(inner) }
    }

    /// Adds a finished sequence's tokens (its last `capacity` when it is longer), making room
    /// by dropping the oldest streams.
    pub fn insert(&self, tokens: &[Token]) {
        // A poisoned lock (a panic elsewhere while holding it) leaves a consistent cache: every
        // method finishes its changes before anything can panic. Use it as it is.
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        c.insert(tokens);
    }

    /// Up to `max` tokens that followed, in a cached stream, the longest match (at least
    /// `min_match` tokens, and at least the cache's `n`) of `history`'s suffix; empty when none.
    pub fn lookup(&self, history: &[Token], min_match: usize, max: usize) -> Vec<Token> {
        let c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        c.lookup(history, min_match, max)
    }

    /// Tokens held now.
    pub fn held(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).held
    }
}

impl fmt::Debug for NgramCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NgramCache").field("held", &self.held()).finish()
    }
}

impl Inner {
    fn insert(&mut self, tokens: &[Token]) {
        let tokens = &tokens[tokens.len().saturating_sub(self.capacity)..];
        if tokens.len() <= self.n {
            return;
        }
        while self.held + tokens.len() > self.capacity {
            let Some(old) = self.streams.pop_front() else { break };
            self.first_id += 1;
            self.held -= old.len();
            self.stale += old.len() - self.n;
        }
        let id = self.first_id + self.streams.len() as u64;
        for e in self.n..tokens.len() {
            let h = hash(&tokens[e - self.n..e]);
            self.index.entry(h).or_default().push((id, e as u32));
        }
        self.entries += tokens.len() - self.n;
        self.held += tokens.len();
        self.streams.push_back(tokens.to_vec());
        if self.stale * 2 > self.entries {
            self.rebuild();
        }
    }

    /// The index again from the streams held (drops the entries of streams that left).
    fn rebuild(&mut self) {
        self.index.clear();
        self.entries = 0;
        self.stale = 0;
        for (k, s) in self.streams.iter().enumerate() {
            let id = self.first_id + k as u64;
            for e in self.n..s.len() {
                self.index.entry(hash(&s[e - self.n..e])).or_default().push((id, e as u32));
            }
            self.entries += s.len() - self.n;
        }
    }

    fn lookup(&self, history: &[Token], min_match: usize, max: usize) -> Vec<Token> {
        let need = min_match.max(self.n);
        let len = history.len();
        if max == 0 || len < need {
            return Vec::new();
        }
        let Some(ends) = self.index.get(&hash(&history[len - self.n..])) else { return Vec::new() };
        let mut best: Option<(usize, &[Token], usize)> = None; // (match length, stream, end)
        for &(id, e) in ends.iter().rev().filter(|&&(id, _)| id >= self.first_id).take(CANDIDATES) {
            let s = &self.streams[(id - self.first_id) as usize];
            let e = e as usize;
            let m = common_suffix(&s[..e], history, MAX_MATCH);
            if m >= need && best.is_none_or(|(bm, _, _)| m > bm) {
                best = Some((m, s, e));
            }
        }
        match best {
            Some((_, s, e)) => s[e..s.len().min(e + max)].to_vec(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposes_what_followed_in_an_earlier_stream() {
        let c = NgramCache::new(3, 1000);
        c.insert(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(c.lookup(&[9, 9, 2, 3, 4], 3, 3), [5, 6, 7]);
        assert_eq!(c.lookup(&[9, 9, 2, 3, 4], 3, 10), [5, 6, 7, 8]);
        assert!(c.lookup(&[9, 9, 2, 3, 4], 4, 3).is_empty(), "a match of 3 is shorter than asked for");
        assert!(c.lookup(&[3, 4], 1, 3).is_empty(), "shorter than the cache's n-grams");
        assert!(c.lookup(&[7, 7, 7], 3, 3).is_empty());
    }

    #[test]
    fn the_longest_match_wins_then_the_newest() {
        let c = NgramCache::new(2, 1000);
        c.insert(&[1, 2, 3, 10]);
        c.insert(&[0, 2, 3, 20]);
        c.insert(&[5, 2, 3, 30]);
        assert_eq!(c.lookup(&[0, 2, 3], 2, 1), [20], "three tokens match the second stream");
        assert_eq!(c.lookup(&[7, 2, 3], 2, 1), [30], "two match every stream: the newest");
    }

    #[test]
    fn holds_at_most_its_capacity_oldest_out_first() {
        let c = NgramCache::new(2, 10);
        c.insert(&[1, 2, 3, 4, 5, 6]);
        c.insert(&[11, 12, 13, 14, 15, 16]);
        assert_eq!(c.held(), 6, "the first stream left to make room");
        assert!(c.lookup(&[1, 2, 3], 2, 2).is_empty());
        assert_eq!(c.lookup(&[12, 13], 2, 2), [14, 15]);
        // Many more streams: the index is rebuilt as entries go stale, lookups stay right.
        for k in 0..100 {
            c.insert(&[k, k + 1000, k + 2000, k + 3000]);
        }
        assert!(c.held() <= 10);
        assert_eq!(c.lookup(&[99, 1099], 2, 2), [2099, 3099]);
        assert!(c.lookup(&[12, 13], 2, 2).is_empty());
        let long: Vec<Token> = (0..50).collect();
        c.insert(&long);
        assert_eq!(c.held(), 10, "a stream longer than the cache keeps its end");
        assert_eq!(c.lookup(&[41, 42], 2, 3), [43, 44, 45]);
    }
}
