//! GBNF text (before the first NUL) and an input (after it): parsing, byte-level matching and
//! the token-mask walk must not panic, and the mask must equal the token-by-token check.

use nucleus_grammar::{Grammar, GrammarSampler, Matcher};

/// The check: panics on a violated invariant.
pub fn check(data: &[u8]) {
    let (text, input) = crate::common::split(data);
    let Ok(text) = std::str::from_utf8(text) else { return };
    let vocab = crate::common::vocab();
    // Token items (`<[id]>`, `<name>`) resolve against the synthetic vocabulary.
    let Ok(grammar) = Grammar::parse_with_tokens(text, "root", Some(&*vocab)) else { return };
    let mut m = Matcher::new(grammar.clone());
    for chunk in input.chunks(7) {
        if m.accept_bytes(chunk).is_err() {
            break;
        }
    }
    let _ = m.can_end();
    let mut s = GrammarSampler::from_grammar(vocab, grammar);
    crate::common::walk_checking_masks(&mut s, &input[..input.len().min(12)]);
}
