//! Token masks: which tokens the grammar allows next. The vocabulary trie is walked against
//! the automaton (one cached transition per trie node, whole subtrees skipped on rejection);
//! token items and end-of-generation are added by id.

use crate::dfa::{Dfa, DEAD};
use crate::uniform_run::{Run, FOREVER};
use crate::vocab_index::VocabIndex;
use crate::vocab_index::SPECIAL;

/// A set of token ids as a bit vector.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TokenMask {
    words: Vec<u64>,
}

impl TokenMask {
    /// An empty mask for `n` token ids.
    pub fn new(n: usize) -> Self {
        TokenMask { words: vec![0; n.div_ceil(64)] }
    }

    /// Clears every bit, resizing to `n` ids.
    pub fn clear(&mut self, n: usize) {
        self.words.clear();
        self.words.resize(n.div_ceil(64), 0);
    }

    /// Allows `id`.
    #[inline]
    pub fn set(&mut self, id: u32) {
        self.words[(id >> 6) as usize] |= 1u64 << (id & 63);
    }

    /// Disallows `id`.
    #[inline]
    pub fn unset(&mut self, id: u32) {
        if let Some(w) = self.words.get_mut((id >> 6) as usize) {
            *w &= !(1u64 << (id & 63));
        }
    }

    /// Whether `id` is allowed.
    #[inline]
    pub fn contains(&self, id: i32) -> bool {
        if id < 0 {
            return false;
        }
        let id = id as u32;
        self.words.get((id >> 6) as usize).is_some_and(|w| w & (1u64 << (id & 63)) != 0)
    }

    /// Allows every id set in `words` (same length as this mask).
    #[inline]
    pub fn or_words(&mut self, words: &[u64]) {
        for (a, b) in self.words.iter_mut().zip(words) {
            *a |= *b;
        }
    }

    /// The bit vector: bit `id % 64` of word `id / 64` for token `id`.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The packed 32-bit view ([`crate::bitmask`]): writes this mask over `n_vocab` tokens
    /// into `out`, which must hold `ceil(n_vocab / 32)` words.
    pub fn fill_u32(&self, n_vocab: usize, out: &mut [u32]) -> Result<(), crate::error::BitmaskSizeError> {
        crate::bitmask::fill_from_mask(self, n_vocab, out)
    }

    /// Number of allowed ids.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The allowed ids in increasing order.
    pub fn ids(&self) -> Vec<u32> {
        let mut v = Vec::new();
        for (i, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let b = w.trailing_zeros();
                v.push(i as u32 * 64 + b);
                w &= w - 1;
            }
        }
        v
    }
}

/// Scratch space for mask walks (one slot per trie depth).
#[derive(Debug, Clone, Default)]
pub struct WalkScratch {
    states: Vec<u32>,
    /// Per depth: the uniform run of that depth's state (`len` 0 = none known).
    runs: Vec<Run>,
    /// Allowed tokens as ranges of trie-order positions ([`VocabIndex::node_tokens`]): a whole
    /// subtree is one range. Kept as ranges (not a bit per position) so a mask costs one pass
    /// over the id bit set, not three (clear, fill, convert) over 262,144 bits.
    ranges: Vec<(u32, u32)>,
    /// Token ids allowed besides the ranges (a looping state's exit tokens, by ending).
    extra_ids: Vec<u32>,
    /// Trie nodes stepped through by the last walk (a cost measure for benchmarks).
    pub visited: usize,
}

/// Records trie positions `from..to` as allowed (joined to the last range when adjacent).
#[inline]
fn set_range(ranges: &mut Vec<(u32, u32)>, from: u32, to: u32) {
    if from >= to {
        return;
    }
    if let Some(last) = ranges.last_mut() {
        if last.1 == from {
            last.1 = to;
            return;
        }
    }
    ranges.push((from, to));
}

/// Writes `mask` (by token id) from the allowed position ranges, in one pass over its words:
/// with `base` (a looping state's tokens, by id) the ranges are added to a copy of it;
/// otherwise the ranges' tokens are set one by one when few, or, when they are most of the
/// vocabulary, every text token is taken and the positions between the ranges are removed.
fn ranges_to_ids(ranges: &mut [(u32, u32)], base: Option<&[u64]>, vocab: &VocabIndex, mask: &mut TokenMask) {
    let toks = &vocab.node_tokens;
    let words = &mut mask.words;
    words.clear();
    if let Some(base) = base {
        words.extend_from_slice(base);
        for &(from, to) in ranges.iter() {
            for &id in &toks[from as usize..to as usize] {
                words[(id >> 6) as usize] |= 1u64 << (id & 63);
            }
        }
        return;
    }
    let set: usize = ranges.iter().map(|&(a, b)| (b - a) as usize).sum();
    if set * 2 > toks.len() {
        words.extend_from_slice(&vocab.text_words);
        // Walks append ranges in increasing order; sort in case a caller did not.
        if ranges.windows(2).any(|w| w[0].0 > w[1].0) {
            ranges.sort_unstable();
        }
        let mut at = 0usize;
        for &(from, to) in ranges.iter().chain(std::iter::once(&(toks.len() as u32, toks.len() as u32))) {
            for &id in &toks[at.min(from as usize)..from as usize] {
                words[(id >> 6) as usize] &= !(1u64 << (id & 63));
            }
            at = at.max(to as usize);
        }
    } else {
        words.resize(vocab.n_vocab().div_ceil(64), 0);
        for &(from, to) in ranges.iter() {
            for &id in &toks[from as usize..to as usize] {
                words[(id >> 6) as usize] |= 1u64 << (id & 63);
            }
        }
    }
}

const NO_RUN: Run = Run { bytes: [0; 4], len: 0, self_loop: false };

/// Subtrees with at least this many tokens get their state's run computed if not yet known.
const RUN_WORTH: u32 = 32;

/// Computes into `mask` the tokens allowed in automaton state `state`.
pub fn compute_mask(dfa: &mut Dfa, state: u32, vocab: &VocabIndex, mask: &mut TokenMask, scratch: &mut WalkScratch) {
    scratch.ranges.clear();
    // Every slot a walk reads is written first (the parent's before its children's), so the
    // per-depth scratch only needs to be long enough.
    let depth = vocab.max_depth() + 1;
    if scratch.states.len() < depth {
        scratch.states.resize(depth, 0);
        scratch.runs.resize(depth, NO_RUN);
    }
    let mut base: Option<std::sync::Arc<crate::loop_exits::LoopExits>> = None;
    // A state that loops on many bytes (e.g. inside a string) starts from the tokens that stay
    // in the loop and walks only from where tokens leave it; others walk the whole trie.
    let l = dfa.self_loops(state);
    let loops: u32 = l.iter().map(|w| w.count_ones()).sum();
    let mut visited = 0;
    let _ = dfa.run_of(state); // computes the closure where one is worth having
    let closure = if dfa.end_ok(state) { dfa.known_closure(state) } else { None };
    let wider = closure.filter(|c| c.states > 1 && c.bytes.iter().map(|w| w.count_ones()).sum::<u32>() > loops.max(31));
    if let Some(c) = wider {
        // Every token of the closed bytes is allowed, though the state changes along the way:
        // walk from each exit with the state its prefix leads to.
        let exits = vocab.loop_exits(&c.bytes);
        let groups = exits.by_byte.iter().filter(|(b, _)| c.dead_all[(b >> 6) as usize] & (1u64 << (b & 63)) == 0);
        let nodes = groups.flat_map(|(_, g)| g.iter().copied()).chain(exits.mid_char.iter().map(|(n, _)| *n));
        for n in nodes {
            let node = vocab.nodes[n as usize];
            let first = vocab.node_tokens[node.tok_start as usize];
            let prefix = &vocab.grammar_piece(first as i32)[..node.depth as usize - 1];
            let parent = dfa.run(state, prefix);
            if parent != DEAD {
                visited += walk_subtree(dfa, vocab, scratch, n as usize, parent);
            }
        }
        base = Some(exits);
    } else if dfa.end_ok(state) && loops >= 32 {
        let exits = vocab.loop_exits(&l);
        // The tokens leaving on a character boundary, by their distinct endings (from the
        // exit byte on): one small trie walked from this very state.
        scratch.extra_ids.clear();
        if let Some(endings) = &exits.endings {
            visited += walk_subtree(dfa, endings, scratch, 0, state);
            for &(from, to) in &scratch.ranges {
                for &e in &endings.node_tokens[from as usize..to as usize] {
                    let (a, b) = (exits.ending_start[e as usize], exits.ending_start[e as usize + 1]);
                    scratch.extra_ids.extend_from_slice(&exits.ending_ids[a as usize..b as usize]);
                }
            }
            scratch.ranges.clear();
        } else {
            for (b, group) in &exits.by_byte {
                if dfa.step(state, *b) == DEAD {
                    continue;
                }
                for &n in group {
                    visited += walk_subtree(dfa, vocab, scratch, n as usize, state);
                }
            }
        }
        for (n, bytes) in &exits.mid_char {
            let parent = dfa.run(state, bytes);
            if parent != DEAD {
                visited += walk_subtree(dfa, vocab, scratch, *n as usize, parent);
            }
        }
        base = Some(exits);
    } else {
        visited = walk_subtree(dfa, vocab, scratch, 0, state);
    }
    scratch.visited = visited;
    ranges_to_ids(&mut scratch.ranges, base.as_deref().map(|e| &e.within_ids[..]), vocab, mask);
    for &id in &scratch.extra_ids {
        mask.set(id);
    }
    scratch.extra_ids.clear();
    if dfa.has_token_items(state) {
        for (t, negated) in dfa.token_items(state) {
            if negated {
                for id in 0..vocab.n_vocab() as i32 {
                    if id as u32 != t && vocab.has_text(id) {
                        mask.set(id as u32);
                    }
                }
            } else if (t as usize) < vocab.n_vocab() && vocab.has_text(t as i32) {
                mask.set(t);
            }
        }
    }
    if dfa.eog_ok(state) {
        for &id in vocab.eog_ids() {
            mask.set(id);
        }
    }
}

/// The trie walk below node `top` (0 = the whole trie; otherwise `top` itself is walked too),
/// whose parent is in automaton state `parent`: depth-first, one automaton step per node. A
/// subtree whose bytes all belong to its parent state's uniform run, and that is no taller
/// than the run is long, is accepted whole without visiting its nodes. Returns the number of
/// nodes stepped through.
fn walk_subtree(dfa: &mut Dfa, vocab: &VocabIndex, scratch: &mut WalkScratch, top: usize, parent: u32) -> usize {
    let nodes = &vocab.nodes;
    let (states, runs, mask) = (&mut scratch.states, &mut scratch.runs, &mut scratch.ranges);
    let (first, end, d0) =
        if top == 0 { (1, nodes.len(), 1) } else { (top, nodes[top].subtree_end as usize, nodes[top].depth as usize) };
    states[d0 - 1] = parent;
    runs[d0 - 1] = match dfa.known_run(parent) {
        Some(r) => r.unwrap_or(NO_RUN),
        None => dfa.run_of(parent).unwrap_or(NO_RUN),
    };
    let sets = &vocab.byte_sets;
    let mut i = first;
    let mut visited = 0;
    while i < end {
        let node = nodes[i];
        let d = node.depth as usize;
        let ps = states[d - 1];
        let run = &runs[d - 1];
        if run.len == FOREVER && (0..4).all(|k| !run.bytes[k] & !SPECIAL[k] == 0) {
            // The state accepts plain text forever: skip to the next sibling holding anything else.
            let j = vocab.plain_next[i] as usize;
            if j != i {
                set_range(mask, node.tok_start, vocab.plain_tok_end[i]);
                i = j;
                continue;
            }
        }
        if run.len >= node.height {
            let sub = &sets[node.bytes as usize];
            let l = &run.bytes;
            if (sub[0] & !l[0]) | (sub[1] & !l[1]) | (sub[2] & !l[2]) | (sub[3] & !l[3]) == 0
                && ((sub[2] | sub[3]) == 0 || vocab.utf8_ok[i])
            {
                set_range(mask, node.tok_start, node.subtree_tok_end);
                i = node.subtree_end as usize;
                continue;
            }
        }
        visited += 1;
        let next = dfa.step(ps, node.byte);
        if next == DEAD {
            i = node.subtree_end as usize;
            continue;
        }
        runs[d] = if next == ps {
            runs[d - 1]
        } else {
            match dfa.known_run(next) {
                Some(r) => r.unwrap_or(NO_RUN),
                None if node.subtree_tok_end - node.tok_start >= RUN_WORTH => dfa.run_of(next).unwrap_or(NO_RUN),
                None => NO_RUN,
            }
        };
        states[d] = next;
        if node.tok_start != node.tok_end && dfa.end_ok(next) {
            set_range(mask, node.tok_start, node.tok_end);
        }
        i += 1;
    }
    visited
}
