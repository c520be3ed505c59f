//! The packed token bitmask handed to C: `ceil(n_vocab / 32)` 32-bit words, token `i` allowed
//! when bit `i % 32` of word `i / 32` is set (the layout llguidance and XGrammar use).

use nucleus_grammar::TokenMask;

use crate::error::{Error, Result};

/// Words a mask of `n_vocab` tokens needs.
pub(crate) fn n_words(n_vocab: usize) -> usize {
    n_vocab.div_ceil(32)
}

/// Checks the caller's buffer length for `n_vocab` tokens.
pub(crate) fn check_len(out: &[u32], n_vocab: usize) -> Result<()> {
    let want = n_words(n_vocab);
    if out.len() != want {
        return Err(Error::size(format!(
            "`n_words` is {} but a vocabulary of {n_vocab} tokens needs ceil({n_vocab} / 32) = {want}",
            out.len()
        )));
    }
    Ok(())
}

/// Writes `mask` (over `n_vocab` tokens) into `out`.
pub(crate) fn write(mask: &TokenMask, n_vocab: usize, out: &mut [u32]) -> Result<()> {
    check_len(out, n_vocab)?;
    out.fill(0);
    for id in mask.ids() {
        out[(id / 32) as usize] |= 1 << (id % 32);
    }
    Ok(())
}

/// Every token of `n_vocab` allowed.
pub(crate) fn write_all(n_vocab: usize, out: &mut [u32]) -> Result<()> {
    check_len(out, n_vocab)?;
    out.fill(u32::MAX);
    let tail = n_vocab % 32;
    if let (true, Some(last)) = (tail > 0, out.last_mut()) {
        *last = (1u32 << tail) - 1;
    }
    Ok(())
}
