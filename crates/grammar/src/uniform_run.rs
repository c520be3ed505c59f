//! Uniform runs: from an automaton state, a set of bytes that all lead to one next state, from
//! which a superset of those bytes again all lead to one state, and so on for `len` steps (or
//! forever, when the state loops on itself). A token made only of such bytes, at most `len` of
//! them, is then allowed without stepping through its bytes: this is what lets the mask walk
//! accept whole vocabulary subtrees inside bounded strings (`maxLength`), counted digits and
//! free strings alike. Bytes from 0x80 up stand for whole UTF-8 characters (the walk only bulk
//! accepts subtrees of well-formed UTF-8 under such runs).

use crate::dfa::{Dfa, DEAD};
use crate::grammar::Elem;
use crate::stacks::EMPTY;

/// `len` of a run that never ends (the state loops on its bytes).
pub const FOREVER: u32 = u32::MAX;
/// How far ahead a run is followed when it is first computed.
const BUDGET: usize = 64;
/// Runs at least this long are cached even if the budget cut them short (a lower bound is safe).
const USEFUL: u32 = 32;
/// Fewest ASCII bytes worth a run.
const MIN_BYTES: u32 = 8;

/// Most states a closure may hold before the search gives up.
const CLOSURE_STATES: usize = 128;

/// Most stacks a state may hold for the closure search to step from it. Each byte of an
/// ambiguous recursive grammar (an operator that may also open a nested term) can multiply a
/// state's stacks, and the search follows up to [`CLOSURE_STATES`] bytes deep where a token
/// walk follows a token's few: past this size the search gives up (the mask is then walked
/// token by token, with the same result).
const CLOSURE_STACKS: usize = 512;

/// A closed byte set of a state (see [`Dfa::closure_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closure {
    /// The bytes; 0x80..=0xFF all set or all clear.
    pub bytes: [u64; 4],
    /// ASCII bytes no state of the closure accepts (a token leaving the set by one of them
    /// is rejected wherever it leaves).
    pub dead_all: [u64; 4],
    /// States in the closure (1 = the state loops on its bytes).
    pub states: u32,
}

/// A uniform run of a state: a token of at most `len` bytes, all in `bytes`, is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The run's bytes as a 256-bit set; bytes 0x80..=0xFF are all set or all clear.
    pub bytes: [u64; 4],
    /// Steps the run lasts ([`FOREVER`] if it reaches a state that loops on its bytes).
    pub len: u32,
    /// The run's bytes lead straight back to the same state.
    pub self_loop: bool,
}

/// Runs that never end but hold fewer bytes than this may be widened by a closure.
const CLOSURE_WORTH: u32 = 128;

fn count(set: &[u64; 4]) -> u32 {
    set.iter().map(|w| w.count_ones()).sum()
}

fn subset(a: &[u64; 4], b: &[u64; 4]) -> bool {
    (0..4).all(|k| a[k] & !b[k] == 0)
}

impl Dfa {
    /// The uniform run of state `s`, computed on first use and cached.
    pub fn run_of(&mut self, s: u32) -> Option<Run> {
        self.run_from(s, 0).0
    }

    /// The run of `s` if it was already computed.
    #[inline]
    pub fn known_run(&self, s: u32) -> Option<Option<Run>> {
        self.runs[s as usize]
    }

    /// The run of `s` and whether its `len` is exact (not cut by the budget).
    fn run_from(&mut self, s: u32, depth: usize) -> (Option<Run>, bool) {
        if let Some(r) = self.runs[s as usize] {
            return (r, true);
        }
        let Some((bytes, t)) = self.first_step(s) else {
            let run = self.closure_of(s).map(|c| Run { bytes: c.bytes, len: FOREVER, self_loop: c.states == 1 });
            self.runs[s as usize] = Some(run);
            return (run, true);
        };
        let (len, exact) = if t == s {
            (FOREVER, true)
        } else if depth >= BUDGET {
            (1, false)
        } else {
            match self.run_from(t, depth + 1) {
                (Some(next), exact) if subset(&bytes, &next.bytes) => {
                    (if next.len == FOREVER { FOREVER } else { next.len.saturating_add(1) }, exact)
                }
                _ => (1, true),
            }
        };
        let mut run = Run { bytes, len, self_loop: t == s };
        if len == FOREVER && count(&bytes) < CLOSURE_WORTH {
            // A closure may accept much more (a pattern searched for inside a string). Bounded
            // runs are left alone: their closures end in a state accepting nothing more.
            if let Some(c) = self.closure_of(s).filter(|c| count(&c.bytes) > count(&bytes)) {
                run = Run { bytes: c.bytes, len: FOREVER, self_loop: c.states == 1 };
            }
        }
        if exact || len >= USEFUL {
            self.runs[s as usize] = Some(Some(run));
        }
        (Some(run), exact)
    }

    /// The closure of `s` if one was computed and found (see [`Dfa::closure_of`]).
    pub fn known_closure(&self, s: u32) -> Option<Closure> {
        self.closures[s as usize].flatten()
    }

    /// The closed byte set of `s`, computed on first use and cached.
    pub fn closure_of(&mut self, s: u32) -> Option<Closure> {
        if let Some(c) = self.closures[s as usize] {
            return c;
        }
        let c = self.compute_closure(s);
        self.closures[s as usize] = Some(c);
        c
    }

    /// The largest byte set `B` found such that every state reachable from `s` by strings of
    /// `B` accepts every byte of `B` and lets tokens end there (bytes from 0x80 up standing for
    /// whole characters): then every token made of `B` is allowed from `s`, even though the
    /// states along the way differ (a pattern searched for inside a string, `char* [a-z] char*`,
    /// visits a new set of stacks after each letter but rejects nothing).
    fn compute_closure(&mut self, s: u32) -> Option<Closure> {
        if self.states[s as usize].key.partial.remain != 0 || !self.end_ok(s) {
            return None;
        }
        // Start from the bytes that keep most of the state's options open: a byte leading to a
        // narrow state (a closing quote, an escape) would end the search with nothing.
        let live = |d: &mut Dfa, r: u32| d.ascii_live(r).count_ones();
        let wide = live(self, s);
        if wide < MIN_BYTES {
            // The set starts inside the bytes `s` accepts: too few to be worth a closure, and
            // stepping them would build successor states the walk may never visit.
            return None;
        }
        let mut bytes = [0u64; 4];
        for b in 1u8..0x80 {
            let t = self.step(s, b);
            if t != DEAD && live(self, t) * 2 >= wide {
                bytes[(b >> 6) as usize] |= 1u64 << (b & 63);
            }
        }
        let mut high = self.utf8_uniform(s).is_some();
        for _ in 0..8 {
            if bytes[0].count_ones() + bytes[1].count_ones() < MIN_BYTES {
                return None;
            }
            let mut seen: Vec<u32> = vec![s];
            let mut queue = vec![s];
            let mut dead_all = [u64::MAX, u64::MAX, 0, 0];
            let mut changed = false;
            while let Some(r) = queue.pop() {
                if seen.len() > CLOSURE_STATES
                    || !self.end_ok(r)
                    || self.states[r as usize].key.stacks.len() > CLOSURE_STACKS
                {
                    return None;
                }
                let mut next = Vec::new();
                for b in 1u8..0x80 {
                    let t = self.step(r, b);
                    if t != DEAD {
                        dead_all[(b >> 6) as usize] &= !(1u64 << (b & 63));
                    }
                    if bytes[(b >> 6) as usize] & (1u64 << (b & 63)) == 0 {
                        continue;
                    }
                    if t == DEAD {
                        bytes[(b >> 6) as usize] &= !(1u64 << (b & 63));
                        changed = true;
                    } else {
                        next.push(t);
                    }
                }
                if high {
                    match self.utf8_uniform(r) {
                        Some(t) => next.push(t),
                        None => {
                            high = false;
                            changed = true;
                        }
                    }
                }
                for t in next {
                    if !seen.contains(&t) {
                        seen.push(t);
                        queue.push(t);
                    }
                }
            }
            if !changed {
                if bytes[0].count_ones() + bytes[1].count_ones() < MIN_BYTES {
                    return None;
                }
                if high {
                    bytes[2] = u64::MAX;
                    bytes[3] = u64::MAX;
                }
                dead_all[0] &= !1; // NUL never reaches the automaton as text
                return Some(Closure { bytes, dead_all, states: seen.len() as u32 });
            }
        }
        None
    }

    /// The state every character from U+0080 up leads `r` to, if they all lead to the same
    /// one (each class holds all of them or none, some class holds them) where tokens may end.
    pub(crate) fn utf8_uniform(&mut self, r: u32) -> Option<u32> {
        let key = &self.states[r as usize].key;
        if key.partial.remain != 0 {
            return None;
        }
        let g = self.arena.grammar.clone();
        for &st in key.stacks.iter() {
            if st == EMPTY {
                continue;
            }
            if let Elem::Char(c) = self.arena.top_elem(st) {
                let cls = &g.classes[c as usize];
                let uniform = cls.ranges.iter().all(|&(_, hi)| hi <= 0x10FFFF)
                    && (cls.covers(0x80, 0x10FFFF) || !cls.intersects(0x80, 0x10FFFF));
                if !uniform {
                    return None;
                }
            }
        }
        let t = self.run(r, "\u{80}".as_bytes());
        (t != DEAD && self.end_ok(t)).then_some(t)
    }

    /// The largest set of bytes that all lead from `s` to one state `t` where tokens may end,
    /// found from which character stacks each byte advances (no states are built but `t`).
    fn first_step(&mut self, s: u32) -> Option<([u64; 4], u32)> {
        let key = &self.states[s as usize].key;
        if key.partial.remain != 0 {
            return None;
        }
        // The run's bytes are among the ASCII bytes `s` accepts (checked first: most states,
        // a key's letters, accept too few to be worth a run, and need nothing built).
        if self.ascii_live(s).count_ones() < MIN_BYTES {
            return None;
        }
        let key = &self.states[s as usize].key;
        // Split the bytes 1..=127 by each distinct class on top of a character stack: bytes in
        // one part advance exactly the same stacks (their signature), so lead to one state.
        let mut class_ids: Vec<u32> = Vec::with_capacity(8);
        for &st in key.stacks.iter() {
            if st == EMPTY {
                continue;
            }
            if let Elem::Char(c) = self.arena.top_elem(st) {
                if !class_ids.contains(&c) {
                    class_ids.push(c);
                }
            }
        }
        if class_ids.is_empty() {
            return None;
        }
        let sets = self.ascii_sets();
        let mut parts: Vec<u128> = vec![!1u128];
        let mut any = 0u128;
        for &c in &class_ids {
            let m = sets[c as usize];
            any |= m;
            for i in 0..parts.len() {
                let (a, b) = (parts[i] & m, parts[i] & !m);
                if a != 0 && b != 0 {
                    parts[i] = a;
                    parts.push(b);
                }
            }
        }
        // The largest part advancing some stack (ties: the one holding the highest byte).
        let best =
            parts.into_iter().filter(|&p| p & any != 0).max_by_key(|p| (p.count_ones(), 127 - p.leading_zeros()))?;
        if best.count_ones() < MIN_BYTES {
            return None;
        }
        let mut bytes = [best as u64, (best >> 64) as u64, 0, 0];
        let first = best.trailing_zeros() as u8;
        // Every character from U+0080 up advances the same stacks as the run's bytes: each
        // class holds all of them or none, and the ones holding them are exactly the run's.
        let g = self.arena.grammar.clone();
        let uniform_high = class_ids.iter().all(|&c| {
            let c = &g.classes[c as usize];
            c.ranges.iter().all(|&(_, hi)| hi <= 0x10FFFF)
                && (c.covers(0x80, 0x10FFFF) || !c.intersects(0x80, 0x10FFFF))
        });
        if uniform_high
            && class_ids.iter().all(|&c| g.classes[c as usize].matches(0x80) == (sets[c as usize] & best != 0))
        {
            bytes[2] = u64::MAX;
            bytes[3] = u64::MAX;
        }
        let t = self.step(s, first);
        if t == DEAD || !self.end_ok(t) {
            return None;
        }
        Some((bytes, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::Grammar;

    fn dfa(gbnf: &str) -> Dfa {
        Dfa::new(Grammar::parse(gbnf, "root").unwrap())
    }

    fn has(r: &Run, b: u8) -> bool {
        r.bytes[(b >> 6) as usize] & (1u64 << (b & 63)) != 0
    }

    #[test]
    fn free_string_loops_forever_and_takes_utf8() {
        let mut d = dfa(r#"root ::= "\"" [^"\\]* "\"""#);
        let s = d.run(d.initial(), b"\"");
        let r = d.run_of(s).unwrap();
        assert!(r.self_loop);
        assert_eq!(r.len, FOREVER);
        assert!(has(&r, b'a') && has(&r, b' ') && has(&r, 0xE6));
        assert!(!has(&r, b'"') && !has(&r, b'\\'));
    }

    #[test]
    fn bounded_repetition_counts_down() {
        let mut d = dfa(r#"root ::= [a-z]{0,5} "!""#);
        let s = d.initial();
        assert_eq!(d.run_of(s).map(|r| r.len), Some(5));
        let s2 = d.run(s, b"ab");
        assert_eq!(d.run_of(s2).map(|r| (r.len, r.self_loop)), Some((3, false)));
        assert!(!has(&d.run_of(s2).unwrap(), 0xC3), "[a-z] holds no character from U+0080 up");
    }

    #[test]
    fn runs_into_a_loop_last_forever_without_looping_themselves() {
        // After the first letter the state loops; the first step leads there.
        let mut d = dfa(r#"root ::= [a-z] [a-z]* "!""#);
        let r = d.run_of(d.initial()).unwrap();
        assert_eq!(r.len, FOREVER);
        assert!(!r.self_loop);
    }

    #[test]
    fn few_bytes_make_no_run() {
        let mut d = dfa(r#"root ::= ("a" | "b")+"#);
        assert_eq!(d.run_of(d.initial()), None);
    }
}
