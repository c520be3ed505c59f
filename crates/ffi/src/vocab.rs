//! The vocabulary object (`nucleus_vocab`): every token's byte string and the end-of-generation
//! ids, indexed once as a token trie and shared (reference-counted) by every grammar built on
//! it, so the caller may free it right after building them.

use std::ffi::c_char;
use std::sync::Arc;

use ::nucleus_grammar::VocabIndex;

use crate::args::slice;
use crate::error::{constructor, guard, status, Error, Result};
use crate::handle::{Handle, Kind};

/// A model vocabulary as token byte strings plus end-of-generation flags.
pub struct VocabState {
    pub(crate) index: Arc<VocabIndex>,
}

impl Kind for VocabState {
    const MAGIC: u64 = 0x4e55_434c_564f_4341; // "NUCLVOCA"
    const NAME: &'static str = "nucleus_vocab";
}

/// The C type `nucleus_vocab` (opaque to C).
/// cbindgen:ignore
#[allow(non_camel_case_types)]
pub type nucleus_vocab = Handle<VocabState>;

/// Reads the C arrays into owned token texts and EOG flags.
///
/// # Safety
/// As `nucleus_vocab_new`.
unsafe fn read(
    pieces: *const *const c_char,
    lengths: *const usize,
    n_vocab: i32,
    eog_ids: *const i32,
    n_eog: usize,
) -> Result<VocabState> {
    if n_vocab <= 0 {
        return Err(Error::size(format!("`n_vocab` must be > 0, got {n_vocab}")));
    }
    let n = n_vocab as usize;
    // SAFETY: the caller passes NULL or `n_vocab` pointers.
    let ptrs = unsafe { slice(pieces, n, "pieces")? };
    // SAFETY: the caller passes NULL or `n_vocab` lengths.
    let lens = unsafe { slice(lengths, n, "lengths")? };
    let mut texts = Vec::with_capacity(n);
    for (i, (&p, &len)) in ptrs.iter().zip(lens).enumerate() {
        if len == 0 {
            texts.push(Box::default());
            continue;
        }
        // SAFETY: the caller passes, for each token, `lengths[i]` readable bytes at `pieces[i]`.
        let bytes = unsafe { slice(p as *const u8, len, &format!("pieces[{i}]"))? };
        texts.push(bytes.to_vec().into_boxed_slice());
    }
    let eog: Vec<i64> = if n_eog > 0 {
        // SAFETY: the caller passes `n_eog` ids when `n_eog > 0`.
        unsafe { slice(eog_ids, n_eog, "eog_ids")? }.iter().map(|&id| i64::from(id)).collect()
    } else {
        Vec::new()
    };
    let index = VocabIndex::checked(texts, &eog).map_err(|e| Error::invalid(e.to_string()))?;
    Ok(VocabState { index: Arc::new(index) })
}

/// Creates a vocabulary of `n_vocab` tokens: token `i`'s text is the `lengths[i]` bytes at
/// `pieces[i]` (any bytes, NUL included; a length of 0 may come with a NULL pointer and marks a
/// token with no text, which a grammar never allows), as the model detokenizes the token alone
/// (for llama.cpp: `llama_token_to_piece` with special tokens rendered). `eog_ids` lists the
/// `n_eog` end-of-generation tokens (allowed by a grammar only where it can end); it may be NULL
/// when `n_eog` is 0. The bytes are copied. NULL on error. Free with `nucleus_vocab_free`.
///
/// # Safety
/// `pieces` and `lengths` must be NULL or point to `n_vocab` elements; each `pieces[i]` with
/// `lengths[i] > 0` must point to that many bytes; `eog_ids` must be NULL or point to `n_eog`
/// ids.
#[no_mangle]
pub unsafe extern "C" fn nucleus_vocab_new(
    pieces: *const *const c_char,
    lengths: *const usize,
    n_vocab: i32,
    eog_ids: *const i32,
    n_eog: usize,
) -> *mut nucleus_vocab {
    // SAFETY: forwarded contract.
    constructor(|| Ok(Handle::into_raw(unsafe { read(pieces, lengths, n_vocab, eog_ids, n_eog)? })))
}

/// The vocabulary's size, or a negative code.
///
/// # Safety
/// `v` must be NULL or a live `nucleus_vocab`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_vocab_n_vocab(v: *const nucleus_vocab) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live vocabulary.
        let v = unsafe { Handle::get(v, "v")? };
        Ok(v.index.n_vocab() as i32)
    })
}

/// Frees a vocabulary (grammars built on it keep their own reference). NULL is a no-op.
///
/// # Safety
/// `v` must be NULL or a live `nucleus_vocab`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nucleus_vocab_free(v: *mut nucleus_vocab) {
    // SAFETY: the caller passes NULL or a live vocabulary it gives up.
    guard(|_| (), || unsafe { Handle::free(v) })
}
