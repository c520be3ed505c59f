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
            self.runs[s as usize] = Some(None);
            return (None, true);
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
        let run = Run { bytes, len, self_loop: t == s };
        if exact || len >= USEFUL {
            self.runs[s as usize] = Some(Some(run));
        }
        (Some(run), exact)
    }

    /// The largest set of bytes that all lead from `s` to one state `t` where tokens may end,
    /// found from which character stacks each byte advances (no states are built but `t`).
    fn first_step(&mut self, s: u32) -> Option<([u64; 4], u32)> {
        let key = &self.states[s as usize].key;
        if key.partial.remain != 0 {
            return None;
        }
        let g = self.arena.grammar.clone();
        let classes: Vec<&crate::grammar::CharClass> = key
            .stacks
            .iter()
            .filter(|&&st| st != EMPTY)
            .filter_map(|&st| match self.arena.top_elem(st) {
                Elem::Char(c) => Some(&g.classes[c as usize]),
                _ => None,
            })
            .collect();
        if classes.is_empty() {
            return None;
        }
        let words = classes.len().div_ceil(64);
        // Signature of a code point: which character stacks it advances.
        let signature = |c: u32, out: &mut Vec<u64>| {
            out.clear();
            out.resize(words, 0);
            for (i, cls) in classes.iter().enumerate() {
                if cls.matches(c) {
                    out[i / 64] |= 1u64 << (i % 64);
                }
            }
        };
        let mut groups: Vec<(Vec<u64>, [u64; 4], u32, u8)> = Vec::new();
        let mut sig = Vec::new();
        for b in 1u8..0x80 {
            signature(b as u32, &mut sig);
            if sig.iter().all(|&w| w == 0) {
                continue;
            }
            match groups.iter_mut().find(|g| g.0 == sig) {
                Some(g) => {
                    g.1[(b >> 6) as usize] |= 1u64 << (b & 63);
                    g.2 += 1;
                }
                None => {
                    let mut set = [0u64; 4];
                    set[(b >> 6) as usize] |= 1u64 << (b & 63);
                    groups.push((sig.clone(), set, 1, b));
                }
            }
        }
        let (best_sig, mut bytes, count, first) = groups.into_iter().max_by_key(|g| g.2)?;
        if count < MIN_BYTES {
            return None;
        }
        // Every character from U+0080 up advances the same stacks as the run's bytes: each
        // class holds all of them or none, and the ones holding them are exactly the run's.
        let uniform_high = classes.iter().all(|c| {
            c.ranges.iter().all(|&(_, hi)| hi <= 0x10FFFF)
                && (c.covers(0x80, 0x10FFFF) || !c.intersects(0x80, 0x10FFFF))
        });
        if uniform_high {
            signature(0x80, &mut sig);
            if sig == best_sig {
                bytes[2] = u64::MAX;
                bytes[3] = u64::MAX;
            }
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
