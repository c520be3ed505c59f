//! A lazily built byte-level automaton over grammar states. A state is a set of parse stacks
//! plus an unfinished UTF-8 sequence; its transition on each byte is computed on first use and
//! cached, so walking the vocabulary trie costs one table lookup per node once warm.

use std::sync::Arc;

use std::hash::Hasher;

use crate::fast_hash::{FastMap, WordHasher};
use crate::grammar::{Elem, Grammar};
use crate::stacks::{StackArena, EMPTY};

/// Transition target meaning "this byte is rejected".
pub const DEAD: u32 = u32::MAX;
const UNKNOWN: u32 = u32::MAX - 1;

/// An unfinished UTF-8 sequence: bits read so far and continuation bytes still missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Partial {
    /// Value accumulated from the lead and continuation bytes read.
    pub value: u32,
    /// Continuation bytes still expected (0 = none pending).
    pub remain: u8,
}

/// [`Partial::value`] of a sequence whose value no longer matters: every stack kept while it
/// is read accepts every character it can complete to (e.g. inside a JSON string), so all such
/// sequences share one automaton state instead of one per prefix value.
pub const ANY_VALUE: u32 = u32::MAX;

impl Partial {
    /// The range of code points this sequence can still complete to (llama.cpp's rule).
    pub fn range(self) -> (u32, u32) {
        let shift = 6 * self.remain as u32;
        let mut lo = self.value << shift;
        let hi = lo | ((1u32 << shift) - 1);
        if lo == 0 {
            if self.remain == 2 {
                lo = 1 << 11;
            } else if self.remain == 3 {
                lo = 1 << 16;
            }
        }
        (lo, hi)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) stacks: Box<[u32]>,
    pub(crate) partial: Partial,
    /// While a character is pending: some stack was empty when its lead byte was read.
    /// llama.cpp keeps its stacks unchanged until the character completes and allows end of
    /// generation whenever one of them is empty, so this state must allow it too.
    pub(crate) eog_pending: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) key: Key,
    /// Some stack is empty and no sequence is pending: the input is a complete sentence.
    complete: bool,
    /// End of generation is allowed (llama.cpp's rule): `complete`, or a character is pending
    /// and a stack was empty before it began ([`Key::eog_pending`]).
    eog_ok: bool,
    /// Some stack has a token item on top.
    has_token_items: bool,
}

/// The automaton: interned stacks, interned states, cached byte transitions.
#[derive(Debug, Clone)]
pub struct Dfa {
    pub(crate) arena: StackArena,
    pub(crate) states: Vec<State>,
    /// State ids by the hash of their key ([`Dfa::key_hash`]); a later state whose hash
    /// collides with an earlier one's is kept in `hash_collisions` instead.
    ids: FastMap<u64, u32>,
    hash_collisions: Vec<(u64, u32)>,
    initial: u32,
    scratch: Vec<u32>,
    /// The stacks of the state whose ASCII row is being filled (reused).
    row_scratch: Vec<u32>,
    /// Transitions of all states, 256 per state (`state * 256 + byte`), filled on first use.
    trans: Vec<u32>,
    /// `end_ok` of each state, beside the table for the mask walk's inner loop.
    end_ok: Vec<bool>,
    /// Per state, the bytes that lead back to the same state (computed on first use).
    self_loops: Vec<Option<[u64; 4]>>,
    /// Per state, its uniform run once computed (`None` inside = the state has none).
    pub(crate) runs: Vec<Option<Option<crate::uniform_run::Run>>>,
    /// Per state, its closed byte set once computed.
    pub(crate) closures: Vec<Option<Option<crate::uniform_run::Closure>>>,
    /// Whether partial sequences may share [`ANY_VALUE`] states (not with token items, whose
    /// stacks can join a pending sequence without having been checked against it).
    any_value_ok: bool,
    /// Per character class, the ASCII bytes it matches (bit `b`), for [`Dfa::fill_ascii_group`].
    ascii_sets: Arc<[u128]>,
    /// Per character class, whether it holds some code point a lead byte from 0xC2 up can
    /// start (U+0080 and beyond, llama.cpp's over-long 0xF8..0xFF reading included).
    high_classes: Arc<[bool]>,
}

/// Every code point a lead byte can begin (see [`Partial::range`]): 0xC2 starts U+0080, and
/// 0xFF read as a four-byte lead ends at 0x3FFFFF.
const HIGH_CODE_POINTS: (u32, u32) = (0x80, 0x3F_FFFF);

impl Dfa {
    /// The automaton of `grammar`, with its initial state built.
    pub fn new(grammar: Arc<Grammar>) -> Self {
        let mut arena = StackArena::new(grammar);
        let mut init = Vec::new();
        arena.initial(&mut init);
        let mut dfa = Dfa {
            arena,
            states: Vec::new(),
            ids: FastMap::default(),
            hash_collisions: Vec::new(),
            initial: 0,
            scratch: Vec::new(),
            row_scratch: Vec::new(),
            trans: Vec::new(),
            end_ok: Vec::new(),
            self_loops: Vec::new(),
            runs: Vec::new(),
            closures: Vec::new(),
            any_value_ok: false,
            ascii_sets: Arc::from([]),
            high_classes: Arc::from([]),
        };
        dfa.high_classes =
            dfa.arena.grammar.classes.iter().map(|c| c.intersects(HIGH_CODE_POINTS.0, HIGH_CODE_POINTS.1)).collect();
        dfa.ascii_sets = dfa
            .arena
            .grammar
            .classes
            .iter()
            .map(|c| {
                // From the ranges (a grammar may have thousands of classes: no test per byte).
                let inside = c.ranges.iter().filter(|&&(lo, _)| lo < 0x80).fold(0u128, |m, &(lo, hi)| {
                    let hi = hi.min(0x7F);
                    if lo > hi {
                        return m;
                    }
                    let upto = if hi == 0x7F { u128::MAX } else { (1u128 << (hi + 1)) - 1 };
                    m | (upto & !((1u128 << lo) - 1))
                });
                (if c.negated { !inside } else { inside }) & !1
            })
            .collect();
        dfa.any_value_ok = !dfa.arena.grammar.has_token_items();
        dfa.initial = dfa.intern(init, Partial::default());
        dfa
    }

    /// The grammar.
    pub fn grammar(&self) -> &Arc<Grammar> {
        &self.arena.grammar
    }

    /// The initial state.
    pub fn initial(&self) -> u32 {
        self.initial
    }

    /// Number of states built so far.
    pub fn n_states(&self) -> usize {
        self.states.len()
    }

    /// Whether the input that led to state `s` is a complete sentence (some stack is empty and
    /// no character is pending).
    pub fn is_complete(&self, s: u32) -> bool {
        self.states[s as usize].complete
    }

    /// Whether an end-of-generation token is allowed in state `s`: as [`Dfa::is_complete`], and
    /// also inside a pending character when the grammar could end before it (llama.cpp's
    /// grammar sampler ignores the pending bytes when it decides this).
    pub fn eog_ok(&self, s: u32) -> bool {
        self.states[s as usize].eog_ok
    }

    /// Whether a token whose bytes led to state `s` may end there.
    #[inline]
    pub fn end_ok(&self, s: u32) -> bool {
        self.end_ok[s as usize]
    }

    /// Whether some stack of `s` has a token item on top.
    pub fn has_token_items(&self, s: u32) -> bool {
        self.states[s as usize].has_token_items
    }

    /// The pending partial UTF-8 sequence of `s`.
    pub fn partial(&self, s: u32) -> Partial {
        self.states[s as usize].key.partial
    }

    /// The token items on top of the stacks of `s`: `(id, negated)`.
    pub fn token_items(&self, s: u32) -> Vec<(u32, bool)> {
        let mut v = Vec::new();
        for &st in self.states[s as usize].key.stacks.iter() {
            if st == EMPTY {
                continue;
            }
            match self.arena.top_elem(st) {
                Elem::Token(t) => v.push((t, false)),
                Elem::NotToken(t) => v.push((t, true)),
                _ => {}
            }
        }
        v
    }

    /// Number of parse stacks in state `s`.
    pub fn n_stacks(&self, s: u32) -> usize {
        self.states[s as usize].key.stacks.len()
    }

    fn intern(&mut self, stacks: Vec<u32>, partial: Partial) -> u32 {
        self.intern_pending(stacks, partial, false)
    }

    /// [`Dfa::intern`] with the [`Key::eog_pending`] flag (meaningful only while a character is
    /// pending; normalised to false otherwise so equal states stay one state).
    fn intern_pending(&mut self, stacks: Vec<u32>, partial: Partial, eog_pending: bool) -> u32 {
        self.intern_slice(&stacks, partial, eog_pending)
    }

    /// The hash of a state key, from its parts (so a lookup needs no allocation).
    fn key_hash(stacks: &[u32], partial: Partial, eog_pending: bool) -> u64 {
        let mut h = WordHasher::default();
        h.write_usize(stacks.len());
        for &st in stacks {
            h.write_u32(st);
        }
        h.write_u32(partial.value);
        h.write_u8(partial.remain | ((eog_pending as u8) << 7));
        h.finish()
    }

    /// The state with these parts, found by hash and compared in full, or built (the stacks
    /// are copied only then).
    fn intern_slice(&mut self, stacks: &[u32], partial: Partial, eog_pending: bool) -> u32 {
        let eog_pending = eog_pending && partial.remain > 0;
        let h = Self::key_hash(stacks, partial, eog_pending);
        let same = |k: &Key| k.partial == partial && k.eog_pending == eog_pending && *k.stacks == *stacks;
        let first = self.ids.get(&h).copied();
        if let Some(id) = first {
            if same(&self.states[id as usize].key) {
                return id;
            }
            if let Some(&(_, id)) =
                self.hash_collisions.iter().find(|(ch, id)| *ch == h && same(&self.states[*id as usize].key))
            {
                return id;
            }
        }
        let key = Key { stacks: stacks.into(), partial, eog_pending };
        self.arena.charge(key.stacks.len());
        let g = &self.arena.grammar;
        let mut complete = false;
        let mut has_token_items = false;
        let mut end_ok = partial.remain == 0 && !key.stacks.is_empty();
        if partial.value == ANY_VALUE {
            // Every kept stack accepts every completion (see `enter_partial`), and such
            // sequences are never the overlong forms llama.cpp refuses.
            end_ok = true;
        } else if partial.remain == 0 {
            for &st in key.stacks.iter() {
                if st == EMPTY {
                    complete = true;
                } else if matches!(self.arena.top_elem(st), Elem::Token(_) | Elem::NotToken(_)) {
                    has_token_items = true;
                }
            }
        } else {
            // llama.cpp: a piece ending mid-character is allowed iff some stack's class could
            // still match, judged conservatively for negated classes.
            let (lo, hi) = partial.range();
            let overlong = partial.remain == 1 && partial.value < 2;
            end_ok = !overlong
                && key.stacks.iter().any(|&st| {
                    // A finished (empty) stack matches no character; it has no top to read (a
                    // token item's result merged in while a character was pending can be one).
                    st != EMPTY
                        && match self.arena.top_elem(st) {
                            Elem::Char(c) => g.classes[c as usize].partial_ok_llama(lo, hi),
                            _ => false,
                        }
                });
        }
        let id = self.states.len() as u32;
        let eog_ok = complete || eog_pending;
        self.states.push(State { key, complete, eog_ok, has_token_items });
        if first.is_some() {
            self.hash_collisions.push((h, id));
        } else {
            self.ids.insert(h, id);
        }
        self.trans.resize(self.trans.len() + 256, UNKNOWN);
        self.end_ok.push(end_ok);
        self.self_loops.push(None);
        self.runs.push(None);
        self.closures.push(None);
        id
    }

    /// The state after byte `b` in state `s`, or [`DEAD`].
    #[inline]
    pub fn step(&mut self, s: u32, b: u8) -> u32 {
        // SAFETY-free fast path: the table always has 256 entries per interned state.
        let v = self.trans[(s as usize) << 8 | b as usize];
        if v != UNKNOWN {
            return v;
        }
        self.step_slow(s, b)
    }

    #[cold]
    #[inline(never)]
    fn step_slow(&mut self, s: u32, b: u8) -> u32 {
        if self.states[s as usize].key.partial.remain == 0 {
            if b < 0x80 {
                self.fill_ascii_group(s, b);
                return self.trans[(s as usize) << 8 | b as usize];
            }
            if !self.high_live(s) {
                // No class holds anything beyond ASCII (outside strings, in keys, numbers):
                // every byte from 0x80 up is rejected; one fill instead of a try per byte
                // (a vocabulary's trie has a child for most of them at every level).
                let row = (s as usize) << 8;
                self.trans[row + 0x80..row + 0x100].fill(DEAD);
                return DEAD;
            }
        }
        let next = self.compute(s, b);
        self.trans[(s as usize) << 8 | b as usize] = next;
        next
    }

    /// Whether the automaton ran out of work budget ([`crate::stacks::WORK_LIMIT`]): the
    /// grammar is too ambiguous to follow. Transitions computed since are stored as dead and
    /// no new stack set is built; the [`crate::Matcher`] then refuses all input with
    /// [`crate::AcceptError::TooAmbiguous`] (so its answers stay consistent with each other).
    pub fn exhausted(&self) -> bool {
        self.arena.exhausted()
    }

    /// Fills the transitions of `s` on every ASCII byte that advances exactly the stacks `b`
    /// advances (its group: the bytes inside the same classes on top as `b`), which all lead
    /// to one state, built by one stack advance. Only the asked group is built: a trie walk
    /// asks for the bytes its tokens hold, and a state's other successors (a value's `t`, `f`,
    /// `n`, digits ... when no token there starts so) may never be needed.
    fn fill_ascii_group(&mut self, s: u32, b: u8) {
        let mut stacks = std::mem::take(&mut self.row_scratch);
        stacks.clear();
        stacks.extend_from_slice(&self.states[s as usize].key.stacks);
        let mut group = !1u128; // bytes 1..=127 (NUL is always dead)
        let mut any = 0u128;
        for &st in stacks.iter() {
            if st == EMPTY {
                continue;
            }
            let Elem::Char(c) = self.arena.top_elem(st) else { continue };
            let m = self.ascii_sets[c as usize];
            any |= m;
            group &= if m >> b & 1 == 1 { m } else { !m };
        }
        let row = (s as usize) << 8;
        self.trans[row] = DEAD;
        if b != 0 {
            let next = if group & any == 0 { DEAD } else { self.advance(&stacks, b as u32) };
            let mut bits = group;
            while bits != 0 {
                let k = bits.trailing_zeros() as usize;
                self.trans[row | k] = next;
                bits &= bits - 1;
            }
        }
        self.row_scratch = stacks;
    }

    /// Whether some character stack of `s` (no character pending) could take a code point
    /// from U+0080 up, i.e. some lead byte might not be rejected.
    fn high_live(&self, s: u32) -> bool {
        self.states[s as usize]
            .key
            .stacks
            .iter()
            .any(|&st| st != EMPTY && matches!(self.arena.top_elem(st), Elem::Char(c) if self.high_classes[c as usize]))
    }

    /// The ASCII bytes `s` does not reject (bit `b`), read off the classes on top of its
    /// stacks without building the states they lead to: a byte a class matches always leads
    /// somewhere (a matched stack normalizes to at least one stack), NUL never does, and
    /// inside a pending character every ASCII byte is rejected.
    pub(crate) fn ascii_live(&self, s: u32) -> u128 {
        let key = &self.states[s as usize].key;
        if key.partial.remain != 0 {
            return 0;
        }
        let mut live = 0u128;
        for &st in key.stacks.iter() {
            if st != EMPTY {
                if let Elem::Char(c) = self.arena.top_elem(st) {
                    live |= self.ascii_sets[c as usize];
                }
            }
        }
        live & !1
    }

    /// Per character class, the ASCII bytes it matches (bit `b` of entry `class`).
    pub(crate) fn ascii_sets(&self) -> Arc<[u128]> {
        self.ascii_sets.clone()
    }

    /// The bytes whose transition from `s` is `s` itself: a token made only of these bytes
    /// leaves the state unchanged (e.g. ordinary characters inside a JSON string).
    pub fn self_loops(&mut self, s: u32) -> [u64; 4] {
        if let Some(v) = self.self_loops[s as usize] {
            return v;
        }
        let mut v = [0u64; 4];
        // Only ASCII bytes can loop: from a state with no pending character a byte from 0x80
        // up is rejected or starts one (a different state), and from a state inside a
        // character every byte is rejected or changes what is pending.
        for b in 0..0x80u8 {
            if self.step(s, b) == s {
                v[(b >> 6) as usize] |= 1u64 << (b & 63);
            }
        }
        // Every non-ASCII character loops too (e.g. inside a JSON string): then valid UTF-8
        // in a token keeps the state as well, and the walk may accept such subtrees in bulk.
        if self.utf8_loops(s) {
            v[2] = u64::MAX;
            v[3] = u64::MAX;
        }
        self.self_loops[s as usize] = Some(v);
        v
    }

    /// Whether every code point from U+0080 up leads from `s` back to `s`.
    fn utf8_loops(&mut self, s: u32) -> bool {
        self.utf8_uniform(s) == Some(s)
    }

    /// Feeds `bytes` from state `s`; [`DEAD`] if some byte is rejected.
    pub fn run(&mut self, mut s: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            s = self.step(s, b);
            if s == DEAD {
                return DEAD;
            }
        }
        s
    }

    /// Like [`Dfa::run`] but reports the offset of the rejected byte.
    pub fn run_until_dead(&mut self, mut s: u32, bytes: &[u8]) -> Result<u32, usize> {
        for (i, &b) in bytes.iter().enumerate() {
            s = self.step(s, b);
            if s == DEAD {
                return Err(i);
            }
        }
        Ok(s)
    }

    fn compute(&mut self, s: u32, b: u8) -> u32 {
        let Key { partial, eog_pending, .. } = self.states[s as usize].key;
        let bad_continuation = if partial.remain > 0 { b & 0xC0 != 0x80 } else { (0x80..0xC0).contains(&b) };
        if b == 0 || bad_continuation {
            return DEAD;
        }
        // The stacks are copied into a reused buffer (states are only appended, but interning
        // below needs `self` mutably).
        let mut buf = std::mem::take(&mut self.row_scratch);
        buf.clear();
        buf.extend_from_slice(&self.states[s as usize].key.stacks);
        let next = self.compute_from(&buf, partial, eog_pending, b);
        self.row_scratch = buf;
        next
    }

    /// [`Dfa::compute`] on a copy of the state's parts.
    fn compute_from(&mut self, stacks: &[u32], partial: Partial, eog_pending: bool, b: u8) -> u32 {
        if partial.remain > 0 {
            if partial.value == ANY_VALUE {
                if partial.remain == 1 {
                    return self.advance_all(stacks);
                }
                let p = Partial { value: ANY_VALUE, remain: partial.remain - 1 };
                return self.intern_slice(stacks, p, eog_pending);
            }
            let p = Partial { value: (partial.value << 6) | (b & 0x3F) as u32, remain: partial.remain - 1 };
            if p.remain == 0 {
                return self.advance(stacks, p.value);
            }
            return self.enter_partial(stacks, p, eog_pending);
        }
        let ends_here = stacks.contains(&EMPTY);
        match b {
            0 => DEAD,
            0x01..=0x7F => self.advance(stacks, b as u32),
            0x80..=0xBF => DEAD,
            0xC0..=0xDF => {
                let p = Partial { value: (b & 0x1F) as u32, remain: 1 };
                if p.value < 2 {
                    return DEAD; // overlong 2-byte sequence
                }
                self.enter_partial(stacks, p, ends_here)
            }
            0xE0..=0xEF => self.enter_partial(stacks, Partial { value: (b & 0x0F) as u32, remain: 2 }, ends_here),
            // llama.cpp reads every lead byte from 0xF0 up (0xF8..=0xFF too, invalid in UTF-8)
            // as a four-byte lead keeping its low four bits: code points past U+10FFFF that
            // only negated classes (and `.`) accept.
            0xF0..=0xFF => self.enter_partial(stacks, Partial { value: (b & 0x0F) as u32, remain: 3 }, ends_here),
        }
    }

    /// Keeps the character stacks whose class can still match some completion of `p`;
    /// `eog_pending`: the grammar could end before this character ([`Key::eog_pending`]).
    fn enter_partial(&mut self, stacks: &[u32], p: Partial, eog_pending: bool) -> u32 {
        let (lo, hi) = p.range();
        let g = &self.arena.grammar;
        let keep = |st: &u32| {
            *st != EMPTY
                && matches!(self.arena.top_elem(*st), Elem::Char(c) if g.classes[c as usize].intersects(lo, hi))
        };
        if !stacks.iter().any(keep) {
            return DEAD;
        }
        let kept: Vec<u32> = stacks.iter().copied().filter(keep).collect();
        let g = self.arena.grammar.clone();
        // The exact value can be forgotten when every kept class holds every completion, and
        // the value cannot end up an overlong form (< 2 with one byte left) that llama.cpp refuses.
        let never_overlong = p.value >= 2 || (p.value >= 1 && p.remain >= 2);
        if self.any_value_ok
            && never_overlong
            && kept
                .iter()
                .all(|&st| matches!(self.arena.top_elem(st), Elem::Char(c) if g.classes[c as usize].covers(lo, hi)))
        {
            return self.intern_pending(kept, Partial { value: ANY_VALUE, remain: p.remain }, eog_pending);
        }
        self.intern_pending(kept, p, eog_pending)
    }

    /// The state after a character every stack of `stacks` accepts (an [`ANY_VALUE`] sequence
    /// completed), or [`DEAD`] once the work budget is spent.
    fn advance_all(&mut self, stacks: &[u32]) -> u32 {
        let mut out = Vec::new();
        for &st in stacks {
            let (pos, parent) = self.arena.top(st);
            let next = self.arena.after(pos, parent);
            self.arena.normalize(next, &mut out);
            if self.arena.exhausted() {
                break;
            }
        }
        if self.arena.exhausted() {
            return DEAD;
        }
        out.sort_unstable();
        out.dedup();
        self.intern(out, Partial::default())
    }

    /// The state after code point `c`, or [`DEAD`] if no stack takes it or the work budget is
    /// spent ([`Dfa::exhausted`]: an incomplete stack set is never interned).
    fn advance(&mut self, stacks: &[u32], c: u32) -> u32 {
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        for &st in stacks {
            self.arena.advance_char(st, c, &mut out);
            if self.arena.exhausted() {
                break;
            }
        }
        if self.arena.exhausted() {
            out.clear();
            self.scratch = out;
            return DEAD;
        }
        if out.is_empty() {
            self.scratch = out;
            return DEAD;
        }
        out.sort_unstable();
        out.dedup();
        let id = self.intern_slice(&out, Partial::default(), false);
        self.scratch = out;
        id
    }

    /// The state after whole token `token` is consumed by the token items on top of `s`'s
    /// stacks (character stacks are not considered), or `None` (also when the work budget is
    /// spent: see [`Dfa::exhausted`]).
    pub fn step_token(&mut self, s: u32, token: u32) -> Option<Vec<u32>> {
        let stacks = self.states[s as usize].key.stacks.clone();
        let mut out = Vec::new();
        for &st in stacks.iter() {
            self.arena.advance_token(st, token, &mut out);
        }
        if out.is_empty() || self.arena.exhausted() {
            None
        } else {
            Some(out)
        }
    }

    /// The state with the union of `s`'s stacks and `extra` (token-item results), with the
    /// partial sequence `partial`.
    pub fn merge(&mut self, s: Option<u32>, extra: Vec<u32>, partial: Partial) -> u32 {
        let mut v = extra;
        let mut eog_pending = false;
        if let Some(s) = s {
            v.extend_from_slice(&self.states[s as usize].key.stacks);
            eog_pending = self.states[s as usize].key.eog_pending;
        }
        v.sort_unstable();
        v.dedup();
        self.intern_pending(v, partial, eog_pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_sets_from_ranges_equal_a_test_per_byte() {
        let g = Grammar::parse(
            r#"root ::= [a-z] [^"\\\x7F\x00-\x1F] [\x00-\x7F] [^a] [\x7F-\xFF] . [0-9A-Fa-f] [\x01] [^\x00-\x7E] "x""#,
            "root",
        )
        .unwrap();
        let d = Dfa::new(g.clone());
        for (k, c) in g.classes.iter().enumerate() {
            let per_byte = (1u32..0x80).filter(|&b| c.matches(b)).fold(0u128, |m, b| m | (1u128 << b));
            assert_eq!(d.ascii_sets[k], per_byte, "class {k}: {c:?}");
            assert_eq!(d.high_classes[k], c.intersects(0x80, 0x3F_FFFF), "class {k}: {c:?}");
        }
    }
}
