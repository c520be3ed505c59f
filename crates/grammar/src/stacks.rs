//! Parse stacks as interned persistent lists: a stack id names (top position, rest). Pushing
//! and popping are O(1) and equal stacks share one id, so stack sets are sorted `u32` lists.

use std::sync::Arc;

use crate::fast_hash::FastMap;
use crate::grammar::{Elem, Grammar};

/// The id of the empty stack: the input so far is a complete sentence.
pub const EMPTY: u32 = 0;

/// The most stack work one automaton may do in its life: stacks interned, stacks stored in
/// or copied out of the normalization memo, and stacks held by automaton states (the
/// [`crate::dfa::Dfa`] adds those). About 4.2 million units: ~100 MiB at most, and a fuzz
/// input that spends the whole budget takes 0.2 s in a release build and 2.4 s under the
/// fuzzer's sanitizer (at 2^24 one took 56 s on a loaded machine, near the fuzz smoke run's
/// 60 s limit per input).
///
/// Ordinary grammars stay far below it: the JSON grammar's automaton following a 12 KB
/// document nested 200 deep does 0.36 million units (8,800 states), and the work grows with
/// the nesting reached, not with the length; the most any automaton of the grammar, parity
/// and runtime test suites does (masks over real vocabularies included) is 0.26 million. Nested repetitions such as `x+++` or
/// `((a*)*)*` multiply the live stacks at every character (llama.cpp's stacks grow the same
/// way until memory runs out); past this budget the automaton builds no new state and says
/// so, rather than exhausting memory.
pub const WORK_LIMIT: usize = 1 << 22;

/// Interned stacks plus the memoized normalization of stacks whose top is a rule reference.
#[derive(Debug, Clone)]
pub struct StackArena {
    /// The grammar the positions index into.
    pub grammar: Arc<Grammar>,
    nodes: Vec<(u32, u32)>,
    ids: FastMap<(u32, u32), u32>,
    normalized: FastMap<u32, Box<[u32]>>,
    /// Work done so far (see [`WORK_LIMIT`]); past the limit, normalizing stops early.
    work: usize,
}

impl StackArena {
    /// An arena holding only the empty stack.
    pub fn new(grammar: Arc<Grammar>) -> Self {
        StackArena {
            grammar,
            nodes: vec![(u32::MAX, u32::MAX)],
            ids: FastMap::default(),
            normalized: FastMap::default(),
            work: 0,
        }
    }

    /// Whether the work budget ([`WORK_LIMIT`]) is spent: stack sets computed since may be
    /// incomplete and must be discarded. It stays spent for the arena's life.
    pub fn exhausted(&self) -> bool {
        self.work > WORK_LIMIT
    }

    /// Counts `units` of work against the budget (states count the stacks they hold).
    pub fn charge(&mut self, units: usize) {
        self.work = self.work.saturating_add(units);
    }

    /// Number of distinct stacks seen.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether only the empty stack exists.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 1
    }

    /// The stack with `pos` on top of `parent`.
    pub fn push(&mut self, pos: u32, parent: u32) -> u32 {
        if let Some(&id) = self.ids.get(&(pos, parent)) {
            return id;
        }
        let id = self.nodes.len() as u32;
        self.work += 1;
        self.nodes.push((pos, parent));
        self.ids.insert((pos, parent), id);
        id
    }

    /// Top position and the rest of a non-empty stack.
    #[inline]
    pub fn top(&self, id: u32) -> (u32, u32) {
        self.nodes[id as usize]
    }

    /// The element on top of a non-empty stack.
    #[inline]
    pub fn top_elem(&self, id: u32) -> Elem {
        self.grammar.elems[self.nodes[id as usize].0 as usize]
    }

    /// The stack after the element at `pos` (on top of `parent`) has been matched: the next
    /// position of the same alternative, or the parent if the alternative is finished.
    pub fn after(&mut self, pos: u32, parent: u32) -> u32 {
        if self.grammar.elems[pos as usize + 1] == Elem::End {
            parent
        } else {
            self.push(pos + 1, parent)
        }
    }

    /// The initial stacks: one normalized stack per alternative of the start rule.
    pub fn initial(&mut self, out: &mut Vec<u32>) {
        let g = self.grammar.clone();
        for &a in &g.rules[g.start as usize] {
            if g.elems[a as usize] == Elem::End {
                self.normalize(EMPTY, out);
            } else {
                let s = self.push(a, EMPTY);
                self.normalize(s, out);
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Expands rule references on top of `id` until every resulting stack has a terminal
    /// (character class or token item) on top or is empty; appends them to `out` (unsorted,
    /// may contain duplicates). Once the budget is [`StackArena::exhausted`] the output is
    /// incomplete (and nothing incomplete is memoized).
    pub fn normalize(&mut self, id: u32, out: &mut Vec<u32>) {
        if self.exhausted() {
            return;
        }
        if id == EMPTY {
            out.push(EMPTY);
            return;
        }
        let (pos, parent) = self.top(id);
        let Elem::Ref(rule) = self.grammar.elems[pos as usize] else {
            out.push(id);
            return;
        };
        if let Some(done) = self.normalized.get(&id) {
            self.work += done.len();
            out.extend_from_slice(done);
            return;
        }
        let rest = self.after(pos, parent);
        let mut res = Vec::new();
        let g = self.grammar.clone();
        for &a in &g.rules[rule as usize] {
            if g.elems[a as usize] == Elem::End {
                self.normalize(rest, &mut res);
            } else {
                let s = self.push(a, rest);
                self.normalize(s, &mut res);
            }
        }
        if self.exhausted() {
            return;
        }
        res.sort_unstable();
        res.dedup();
        self.work += 2 * res.len();
        out.extend_from_slice(&res);
        self.normalized.insert(id, res.into_boxed_slice());
    }

    /// The stacks after code point `c` is matched by the character item on top of `id` (none
    /// if it does not match or the top is not a character item).
    pub fn advance_char(&mut self, id: u32, c: u32, out: &mut Vec<u32>) {
        if id == EMPTY {
            return;
        }
        let (pos, parent) = self.top(id);
        if let Elem::Char(cls) = self.grammar.elems[pos as usize] {
            if self.grammar.classes[cls as usize].matches(c) {
                let next = self.after(pos, parent);
                self.normalize(next, out);
            }
        }
    }

    /// The stacks after whole token `token` is matched by a token item on top of `id`.
    pub fn advance_token(&mut self, id: u32, token: u32, out: &mut Vec<u32>) {
        if id == EMPTY {
            return;
        }
        let (pos, parent) = self.top(id);
        let ok = match self.grammar.elems[pos as usize] {
            Elem::Token(t) => t == token,
            Elem::NotToken(t) => t != token,
            _ => false,
        };
        if ok {
            let next = self.after(pos, parent);
            self.normalize(next, out);
        }
    }
}
