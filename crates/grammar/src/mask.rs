//! Token masks: which tokens the grammar allows next. The vocabulary trie is walked against
//! the automaton (one cached transition per trie node, whole subtrees skipped on rejection);
//! token items and end-of-generation are added by id.

use crate::dfa::{Dfa, DEAD};
use crate::vocab_index::VocabIndex;

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
    loops: Vec<Option<[u64; 4]>>,
    /// Per depth: the whole path from the root looped on the start state byte by byte.
    on_root: Vec<bool>,
}

/// Computes into `mask` the tokens allowed in automaton state `state`.
pub fn compute_mask(dfa: &mut Dfa, state: u32, vocab: &VocabIndex, mask: &mut TokenMask, scratch: &mut WalkScratch) {
    mask.clear(vocab.n_vocab());
    // If the start state loops on many bytes (e.g. inside a string), start from the
    // precomputed set of tokens that stay in the loop; the walk then skips those subtrees.
    let l = dfa.self_loops(state);
    let mut seeded = false;
    if dfa.end_ok(state) && l.iter().map(|w| w.count_ones()).sum::<u32>() >= 32 {
        mask.or_words(&vocab.tokens_within_cached(&l).words);
        seeded = true;
    }
    walk_trie(dfa, state, vocab, mask, scratch, seeded);
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
    if dfa.is_complete(state) {
        for id in 0..vocab.n_vocab() as i32 {
            if vocab.is_eog(id) {
                mask.set(id as u32);
            }
        }
    }
}

/// The trie walk: depth-first over the token trie, one automaton step per node.
fn walk_trie(
    dfa: &mut Dfa,
    state: u32,
    vocab: &VocabIndex,
    mask: &mut TokenMask,
    scratch: &mut WalkScratch,
    seeded: bool,
) {
    let nodes = &vocab.nodes;
    let toks = &vocab.node_tokens;
    scratch.states.clear();
    scratch.states.resize(vocab.max_depth() + 1, 0);
    let states = &mut scratch.states;
    states[0] = state;
    let sets = &vocab.byte_sets;
    let n = nodes.len();
    // Self-looping states: a subtree whose bytes all loop on its parent's state keeps that
    // state, so all its tokens are allowed (when a token may end there) without visiting its
    // nodes. Loop sets are computed for the start state and for any state seen looping.
    let _ = dfa.self_loops(state);
    scratch.loops.clear();
    scratch.loops.resize(vocab.max_depth() + 1, None);
    let loops = &mut scratch.loops;
    loops[0] = dfa.known_loops(state).copied();
    scratch.on_root.clear();
    scratch.on_root.resize(vocab.max_depth() + 1, false);
    let on_root = &mut scratch.on_root;
    on_root[0] = true;
    let mut i = 1;
    while i < n {
        let node = nodes[i];
        let d = node.depth as usize;
        let ps = states[d - 1];
        if let Some(l) = &loops[d - 1] {
            let sub = &sets[node.bytes as usize];
            if (sub[0] & !l[0]) | (sub[1] & !l[1]) | (sub[2] & !l[2]) | (sub[3] & !l[3]) == 0
                && ((sub[2] | sub[3]) == 0 || vocab.utf8_ok[i])
            {
                if seeded && on_root[d - 1] {
                    // Already in the precomputed set.
                    i = node.subtree_end as usize;
                    continue;
                }
                match vocab.node_mask[i] {
                    u32::MAX => {
                        for &t in &toks[node.tok_start as usize..node.subtree_tok_end as usize] {
                            mask.set(t);
                        }
                    }
                    m => mask.or_words(&vocab.subtree_masks[m as usize]),
                }
                i = node.subtree_end as usize;
                continue;
            }
        }
        let next = dfa.step(ps, node.byte);
        if next == DEAD {
            i = node.subtree_end as usize;
            continue;
        }
        if next == ps && loops[d - 1].is_none() && dfa.end_ok(ps) {
            let _ = dfa.self_loops(ps);
            loops[d - 1] = dfa.known_loops(ps).copied();
        }
        loops[d] = if next == ps { loops[d - 1] } else { dfa.known_loops(next).copied() };
        states[d] = next;
        on_root[d] = on_root[d - 1] && next == state;
        if node.tok_start != node.tok_end && dfa.end_ok(next) {
            for &t in &toks[node.tok_start as usize..node.tok_end as usize] {
                mask.set(t);
            }
        }
        i += 1;
    }
}
