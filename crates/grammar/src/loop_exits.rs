//! [`LoopExits`]: for a set of bytes a grammar state loops on (inside a JSON string: every
//! character but `"`, `\` and controls), the tokens that stay in the loop and the trie nodes
//! where a token leaves it. A mask in such a state is then the loop's tokens plus walks from
//! the exits alone, and exits whose byte the state rejects (a newline in a string) are dropped
//! as a group with one automaton step. Computed once per vocabulary and byte set, shared by
//! every grammar.
//!
//! The tokens leaving the loop on a character boundary are also kept by what follows the
//! loop: from the exit byte on, thousands of tokens share a few hundred distinct endings
//! (`"`, `",`, `":`, `\n` ...). Those endings form a small trie of their own
//! ([`LoopExits::endings`]), so a mask steps each ending once, in a few kilobytes of nodes,
//! instead of each exit's subtree scattered across the vocabulary's trie.

use std::collections::HashMap;

use crate::vocab_index::{valid_utf8_from, VocabIndex};

/// The tokens of a looping byte set and the places tokens leave it.
#[derive(Debug, Clone)]
pub struct LoopExits {
    /// Tokens made only of the set's bytes (well-formed UTF-8, a cut last character allowed),
    /// as bits by trie position.
    pub within: Vec<u64>,
    /// The same tokens by id (one bit per token id): a looping state's mask starts as a copy.
    pub within_ids: Vec<u64>,
    /// Exit nodes reached on a character boundary, grouped by their byte: the state before
    /// them is the looping state itself.
    pub by_byte: Vec<(u8, Vec<u32>)>,
    /// Exit nodes reached inside a multi-byte character, with that character's bytes so far.
    pub mid_char: Vec<(u32, Vec<u8>)>,
    /// The distinct endings of the tokens below the [`LoopExits::by_byte`] exits (from the
    /// exit byte on) as a trie: from the looping state, a token of an exit is allowed exactly
    /// when its ending is (its start keeps the state where it was).
    /// `None` when the exits hold many tokens, more than 1/16 of the vocabulary's (a loop on a
    /// narrow byte set, which most tokens leave; a JSON string body's exits hold about 1,400 of
    /// Gemma 3's 262,144 tokens): their endings would be nearly as many as the tokens, and building their trie
    /// would cost more than it saves; the exits are then walked in the vocabulary's trie.
    pub endings: Option<VocabIndex>,
    /// Token ids by ending: ending `e`'s tokens are `ending_ids[ending_start[e]..ending_start[e + 1]]`.
    pub ending_start: Vec<u32>,
    /// See [`LoopExits::ending_start`].
    pub ending_ids: Vec<u32>,
}

/// UTF-8 decoding progress along a trie path, as [`valid_utf8_from`] judges it.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    /// Continuation bytes still expected.
    remain: u8,
    /// Range of the next continuation byte.
    lo: u8,
    hi: u8,
    /// Byte index where the pending character started.
    start: u32,
}

fn has(set: &[u64; 4], b: u8) -> bool {
    set[(b >> 6) as usize] & (1u64 << (b & 63)) != 0
}

fn set_bits(words: &mut [u64], from: usize, to: usize) {
    for k in from..to {
        words[k >> 6] |= 1u64 << (k & 63);
    }
}

impl LoopExits {
    /// Scans `vocab`'s trie for the byte set `bytes` (bytes from 0x80 up all in or all out).
    pub fn new(vocab: &VocabIndex, bytes: &[u64; 4]) -> Self {
        let nodes = &vocab.nodes;
        let high = bytes[2] == u64::MAX && bytes[3] == u64::MAX;
        let mut within = vec![0u64; vocab.node_tokens.len().div_ceil(64)];
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); 256];
        let mut mid_char = Vec::new();
        let mut pend = vec![Pending::default(); vocab.max_depth() + 1];
        let mut i = 1;
        while i < nodes.len() {
            let node = nodes[i];
            let d = node.depth as usize;
            let p = pend[d - 1];
            let b = node.byte;
            let next = if p.remain > 0 {
                (p.lo..=p.hi).contains(&b).then_some(Pending {
                    remain: p.remain - 1,
                    lo: 0x80,
                    hi: 0xBF,
                    start: p.start,
                })
            } else if b < 0x80 {
                has(bytes, b).then_some(Pending::default())
            } else if !high {
                None
            } else {
                let lead = |remain, lo, hi| Some(Pending { remain, lo, hi, start: d as u32 - 1 });
                match b {
                    0xC2..=0xDF => lead(1, 0x80, 0xBF),
                    0xE0 => lead(2, 0xA0, 0xBF),
                    0xE1..=0xEF => lead(2, 0x80, 0xBF),
                    0xF0 => lead(3, 0x90, 0xBF),
                    0xF1..=0xF3 => lead(3, 0x80, 0xBF),
                    0xF4 => lead(3, 0x80, 0x8F),
                    _ => None,
                }
            };
            let Some(next) = next else {
                if p.remain == 0 {
                    groups[b as usize].push(i as u32);
                } else {
                    let first = vocab.node_tokens[node.tok_start as usize];
                    let text = vocab.grammar_piece(first as i32);
                    mid_char.push((i as u32, text[p.start as usize..d - 1].to_vec()));
                }
                i = node.subtree_end as usize;
                continue;
            };
            let sub = &vocab.byte_sets[node.bytes as usize];
            let inside = (0..4).all(|k| sub[k] & !bytes[k] == 0);
            if p.remain == 0 && inside && ((sub[2] | sub[3]) == 0 || vocab.utf8_ok[i]) {
                set_bits(&mut within, node.tok_start as usize, node.subtree_tok_end as usize);
                i = node.subtree_end as usize;
                continue;
            }
            pend[d] = next;
            set_bits(&mut within, node.tok_start as usize, node.tok_end as usize);
            i += 1;
        }
        let by_byte: Vec<(u8, Vec<u32>)> =
            groups.into_iter().enumerate().filter(|(_, v)| !v.is_empty()).map(|(b, v)| (b as u8, v)).collect();
        debug_assert!(vocab.node_tokens.iter().enumerate().all(|(k, &id)| {
            let t = vocab.grammar_piece(id as i32);
            let inside = t.iter().all(|&b| has(bytes, b)) && (t.iter().all(|&b| b < 0x80) || valid_utf8_from(t, 0));
            inside == (within[k >> 6] >> (k & 63) & 1 == 1)
        }));
        let mut within_ids = vec![0u64; vocab.n_vocab().div_ceil(64)];
        for (k, &id) in vocab.node_tokens.iter().enumerate() {
            if within[k >> 6] >> (k & 63) & 1 == 1 {
                within_ids[(id >> 6) as usize] |= 1u64 << (id & 63);
            }
        }
        let exit_tokens: usize = by_byte
            .iter()
            .flat_map(|(_, g)| g.iter())
            .map(|&n| (nodes[n as usize].subtree_tok_end - nodes[n as usize].tok_start) as usize)
            .sum();
        let (endings, ending_start, ending_ids) = if exit_tokens <= vocab.node_tokens.len() / vocab.endings_share {
            let (t, s, i) = endings_of(vocab, &by_byte);
            (Some(t), s, i)
        } else {
            (None, Vec::new(), Vec::new())
        };
        LoopExits { within, within_ids, by_byte, mid_char, endings, ending_start, ending_ids }
    }
}

/// The trie of the distinct endings below the exits in `by_byte` and each ending's token ids.
fn endings_of(vocab: &VocabIndex, by_byte: &[(u8, Vec<u32>)]) -> (VocabIndex, Vec<u32>, Vec<u32>) {
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    let mut texts: Vec<&[u8]> = Vec::new();
    let mut ids: Vec<Vec<u32>> = Vec::new();
    for (_, group) in by_byte {
        for &n in group {
            let node = vocab.nodes[n as usize];
            let cut = node.depth as usize - 1;
            for &id in &vocab.node_tokens[node.tok_start as usize..node.subtree_tok_end as usize] {
                let ending = &vocab.grammar_piece(id as i32)[cut..];
                let e = *index.entry(ending).or_insert_with(|| {
                    texts.push(ending);
                    ids.push(Vec::new());
                    texts.len() - 1
                });
                ids[e].push(id);
            }
        }
    }
    let pieces = texts.iter().map(|t| t.to_vec().into_boxed_slice()).collect();
    let trie = VocabIndex::from_pieces(pieces, vec![false; texts.len()]);
    let mut start = Vec::with_capacity(ids.len() + 1);
    let mut flat = Vec::new();
    for v in ids {
        start.push(flat.len() as u32);
        flat.extend_from_slice(&v);
    }
    start.push(flat.len() as u32);
    (trie, start, flat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> VocabIndex {
        let texts: Vec<&[u8]> = vec![
            b"a",
            b"ab",
            b"a\"",
            b"a\"b",
            b"\n",
            b"x\ny",
            b"\xC3\xA9",
            b"\xC3",
            b"a\xC3\xA9\"",
            b"\xE6\x97",
            b"\xE6a",
            b"\xF8",
            b"b\xF8",
            b"\xC0\x80",
            b"\"",
            b"\\n",
            b"ab\\",
            b"</s>",
        ];
        let pieces: Vec<Box<[u8]>> = texts.iter().map(|t| t.to_vec().into_boxed_slice()).collect();
        let mut eog = vec![false; pieces.len()];
        *eog.last_mut().unwrap() = true;
        VocabIndex::from_pieces(pieces, eog)
    }

    fn string_chars() -> [u64; 4] {
        let mut set = [0u64, 0, u64::MAX, u64::MAX];
        for b in 0x20u8..0x7F {
            if b != b'"' && b != b'\\' {
                set[(b >> 6) as usize] |= 1u64 << (b & 63);
            }
        }
        set
    }

    #[test]
    fn within_equals_the_plain_scan() {
        let v = vocab();
        for set in [string_chars(), [0, 1u64 << (b'a' - 64), 0, 0], [u64::MAX; 4]] {
            assert_eq!(LoopExits::new(&v, &set).within, v.tokens_within(&set));
        }
    }

    #[test]
    fn exits_are_grouped_by_byte_or_kept_with_their_pending_character() {
        let v = vocab();
        let e = LoopExits::new(&v, &string_chars());
        let bytes: Vec<u8> = e.by_byte.iter().map(|(b, _)| *b).collect();
        assert!(bytes.contains(&b'"') && bytes.contains(&b'\n') && bytes.contains(&b'\\'));
        assert!(bytes.contains(&0xF8) && bytes.contains(&0xC0), "invalid leads exit on a boundary");
        // "\xE6a": the ASCII byte arrives while a character is pending.
        assert!(e.mid_char.iter().any(|(_, pending)| pending == b"\xE6"));
    }

    #[test]
    fn endings_hold_every_exit_token_once_under_its_ending() {
        let v = vocab();
        let e = LoopExits::new(&v, &string_chars());
        // This small vocabulary's tokens mostly leave the loop (no endings kept): build them.
        let (endings, ending_start, ending_ids) = endings_of(&v, &e.by_byte);
        let mut seen = Vec::new();
        for k in 0..endings.n_vocab() {
            let ending = endings.piece(k as i32);
            for &id in &ending_ids[ending_start[k] as usize..ending_start[k + 1] as usize] {
                assert!(v.grammar_piece(id as i32).ends_with(ending));
                seen.push(id);
            }
        }
        seen.sort_unstable();
        let mut expected: Vec<u32> = e
            .by_byte
            .iter()
            .flat_map(|(_, g)| g.iter())
            .flat_map(|&n| {
                let node = v.nodes[n as usize];
                v.node_tokens[node.tok_start as usize..node.subtree_tok_end as usize].to_vec()
            })
            .collect();
        expected.sort_unstable();
        assert_eq!(seen, expected);
        // `a"`, `aé"`, `a"b` and `"` leave on the quote: ending `"` (three tokens) and `"b`.
        let quote = (0..endings.n_vocab()).find(|&k| endings.piece(k as i32) == b"\"").unwrap();
        assert_eq!(ending_start[quote + 1] - ending_start[quote], 3);
    }
}
