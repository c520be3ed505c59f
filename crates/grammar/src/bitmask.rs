//! Packed 32-bit token bitmasks, the layout structured-output engines hand around (vLLM's
//! backends, llguidance, XGrammar): `ceil(n_vocab / 32)` words, token `i` allowed when bit
//! `i % 32` of word `i / 32` is set. One writer for every surface (the C ABI, Python, Node),
//! so the layout and the length check are written once.

use nucleus_sampler::Token;

use crate::error::BitmaskSizeError;
use crate::mask::TokenMask;

/// Words of one packed bitmask row for `n_vocab` tokens: `ceil(n_vocab / 32)`.
pub fn bitmask_words(n_vocab: usize) -> usize {
    n_vocab.div_ceil(32)
}

/// Checks that `out` is one row for `n_vocab` tokens.
pub fn check_len(out: &[u32], n_vocab: usize) -> Result<(), BitmaskSizeError> {
    let want = bitmask_words(n_vocab);
    if out.len() != want {
        return Err(BitmaskSizeError { got: out.len(), want, n_vocab });
    }
    Ok(())
}

/// Clears the bits past token `n_vocab - 1` in the last word.
fn clear_tail(out: &mut [u32], n_vocab: usize) {
    let tail = n_vocab % 32;
    if let (true, Some(last)) = (tail > 0, out.last_mut()) {
        *last &= (1u32 << tail) - 1;
    }
}

/// Writes `mask` (over `n_vocab` tokens) into `out`: each 64-bit word of the mask is two
/// packed words, low half first, so this is a copy, not a walk over the allowed ids.
pub fn fill_from_mask(mask: &TokenMask, n_vocab: usize, out: &mut [u32]) -> Result<(), BitmaskSizeError> {
    check_len(out, n_vocab)?;
    let words = mask.words();
    for (pair, wide) in out.chunks_mut(2).zip(words.iter().chain(std::iter::repeat(&0))) {
        pair[0] = *wide as u32;
        if let Some(high) = pair.get_mut(1) {
            *high = (*wide >> 32) as u32;
        }
    }
    clear_tail(out, n_vocab);
    Ok(())
}

/// Every token of `n_vocab` allowed.
pub fn fill_all(n_vocab: usize, out: &mut [u32]) -> Result<(), BitmaskSizeError> {
    check_len(out, n_vocab)?;
    out.fill(u32::MAX);
    clear_tail(out, n_vocab);
    Ok(())
}

/// No token allowed.
pub fn fill_none(n_vocab: usize, out: &mut [u32]) -> Result<(), BitmaskSizeError> {
    check_len(out, n_vocab)?;
    out.fill(0);
    Ok(())
}

/// Exactly the tokens `ids` (ids outside `[0, n_vocab)` are left out).
pub fn fill_ids(n_vocab: usize, ids: impl IntoIterator<Item = Token>, out: &mut [u32]) -> Result<(), BitmaskSizeError> {
    fill_none(n_vocab, out)?;
    for t in ids {
        if t >= 0 && (t as usize) < n_vocab {
            out[t as usize / 32] |= 1 << (t as u32 % 32);
        }
    }
    Ok(())
}

/// The same words seen as unsigned: the bindings receive bitmasks as `int32` arrays (NumPy's
/// and PyTorch's `int32`, JavaScript's `Int32Array`), whose bits are the packed words.
pub fn as_unsigned(words: &mut [i32]) -> &mut [u32] {
    // SAFETY: `i32` and `u32` have the same size and alignment and every bit pattern is valid
    // for both; the returned slice borrows `words` mutably, so nothing else aliases it.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u32>(), words.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_a_mask_by_halves_and_clears_the_tail() {
        let n = 70;
        let mut m = TokenMask::new(n);
        for id in [0, 31, 32, 63, 64, 69] {
            m.set(id);
        }
        let mut out = vec![0u32; 3];
        fill_from_mask(&m, n, &mut out).unwrap();
        assert_eq!(out, [1 | 1 << 31, 1 | 1 << 31, 1 | 1 << 5]);
        let mut want = vec![0u32; 3];
        fill_ids(n, m.ids().into_iter().map(|i| i as Token), &mut want).unwrap();
        assert_eq!(out, want);
        fill_all(n, &mut out).unwrap();
        assert_eq!(out, [u32::MAX, u32::MAX, 0x3f]);
        assert!(fill_none(n, &mut out[..2]).is_err());
    }

    #[test]
    fn signed_view_shares_the_bits() {
        let mut w = [-1i32, 0];
        as_unsigned(&mut w)[1] = u32::MAX;
        assert_eq!(w, [-1, -1]);
    }
}
