//! Helpers shared by the grammar fuzz targets: a small synthetic vocabulary and the
//! "mask equals the token-by-token check" walk.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use nucleus_grammar::{GrammarSampler, VocabIndex};

/// Tokens of the synthetic vocabulary: every single byte (invalid UTF-8 leads and stray
/// continuation bytes included), JSON punctuation runs, words, digits, whitespace runs,
/// multi-byte characters whole and cut, a piece with a NUL inside, and one end-of-generation
/// token (the last id).
fn pieces() -> Vec<Box<[u8]>> {
    let mut out: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let words: &[&[u8]] = &[
        b"\"",
        b"\":",
        b"\",",
        b"{\"",
        b"\"}",
        b"\":\"",
        b"\",\"",
        b"],",
        b"},",
        b"[]",
        b"{}",
        b": ",
        b", ",
        b"\\n",
        b"\\\"",
        b"\\u00",
        b"\\u",
        b"true",
        b"false",
        b"null",
        b"-1",
        b"0.5",
        b"e+",
        b"E-",
        b"00",
        b"123",
        b"  ",
        b"    ",
        b"\n",
        b"\n  ",
        b"\t",
        b"ab",
        b"abc",
        b"name",
        b"type",
        b"value",
        b" the",
        b"hello",
        b"_id",
        b"::=",
        b"root",
        b"\xc3\xa9",
        b"\xe6\x97\xa5\xe6\x9c\xac",
        b"\xf0\x9f\x99\x82",
        b"\xe6\x97",
        b"\xf0\x9f",
        b"\xc3",
        b"a\x00b",
        b"x\xff",
        b"\xc0\x80",
        b"2024-01-01",
        b"T12:00:00Z",
        b"@",
        b"http://",
        b".com",
        b"<[5]>",
    ];
    out.extend(words.iter().map(|w| w.to_vec()));
    out.push(b"</s>".to_vec());
    out.into_iter().map(Vec::into_boxed_slice).collect()
}

/// The vocabulary index, built once per process.
pub fn vocab() -> Arc<VocabIndex> {
    static V: OnceLock<Arc<VocabIndex>> = OnceLock::new();
    V.get_or_init(|| {
        let p = pieces();
        let mut eog = vec![false; p.len()];
        *eog.last_mut().unwrap() = true;
        Arc::new(VocabIndex::from_pieces(p, eog))
    })
    .clone()
}

/// Walks up to `choices.len()` steps: at each, the mask must equal the token-by-token check
/// (`is_allowed`) for every token, and a masked-in token chosen by the next choice byte must be
/// accepted. Stops at an empty mask or an end-of-generation token.
pub fn walk_checking_masks(s: &mut GrammarSampler, choices: &[u8]) {
    let n = s.vocab().n_vocab();
    for &c in choices {
        let mask = s.mask();
        let mut allowed = Vec::new();
        for id in 0..n as i32 {
            let by_token = s.is_allowed(id);
            if s.exhausted() {
                return check_exhausted(s);
            }
            assert_eq!(mask.contains(id), by_token, "mask and token-by-token check differ on token {id}");
            if by_token {
                allowed.push(id);
            }
        }
        if allowed.is_empty() {
            return;
        }
        let tok = allowed[c as usize % allowed.len()];
        if s.vocab().is_eog(tok) {
            assert!(s.can_end(), "end-of-generation allowed where the grammar cannot end");
            return;
        }
        if let Err(e) = s.try_accept(tok) {
            if s.exhausted() {
                return check_exhausted(s);
            }
            panic!("token {tok} was in the mask but accepting it failed: {e}");
        }
    }
}

/// A grammar too ambiguous to follow (its automaton spent the work budget, possibly while
/// checking the tokens one by one after the mask was made): from then on nothing is allowed
/// and accepting says why.
fn check_exhausted(s: &mut GrammarSampler) {
    assert_eq!(s.mask().count(), 0, "a grammar out of work budget must allow nothing");
    assert_eq!(s.try_accept(0), Err(nucleus_grammar::AcceptError::TooAmbiguous));
}

/// Splits at the first NUL byte: (before, after). No NUL: everything is `before`.
pub fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
