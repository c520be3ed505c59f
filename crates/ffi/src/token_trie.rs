//! The token-trie constraint (`nucleus_token_trie`): from a descriptor listing leaves as token
//! sequences, only tokens continuing some leaf are allowed until a leaf with no longer
//! continuation is reached; forced runs can be fed at once (fast-forward). Built on
//! nucleus-grammar's `continuations`.

use std::ffi::{c_char, CString};

use ::nucleus_grammar::bitmask;
use ::nucleus_grammar::continuations::{ContinuationSet, Mode, TrieConstraint};
use ::nucleus_grammar::trie_cache::{self, CacheKey};
use ::nucleus_sampler::Token;
use serde_json::{json, Value};

use crate::args::{slice_mut, text_len};
use crate::error::{constructor, guard, status, Error, Result, NUCLEUS_ERR_REJECTED, NUCLEUS_OK};
use crate::handle::{Handle, Kind};

/// The one path the constraint walks: every leaf of every path of the descriptor.
const UNION_PATH: &str = "*";

/// The kind of compiled set in nucleus-grammar's process-wide cache: every path merged into
/// [`UNION_PATH`] (the text is the descriptor as given; its own `modelId` is checked).
const UNION_KIND: &str = "ffi-union";

/// A position in the trie of a descriptor's leaves.
#[derive(Clone)]
pub struct TrieState {
    constraint: TrieConstraint,
    mode: Mode,
    /// The leaf name last handed out by `nucleus_token_trie_leaf` (NUL-terminated copy).
    leaf: Option<CString>,
}

impl Kind for TrieState {
    const MAGIC: u64 = 0x4e55_434c_5452_4945; // "NUCLTRIE"
    const NAME: &'static str = "nucleus_token_trie";
}

/// The C type `nucleus_token_trie` (opaque to C).
/// cbindgen:ignore
#[allow(non_camel_case_types)]
pub type nucleus_token_trie = Handle<TrieState>;

/// The vocabulary bound of descriptors not tied to a model: any non-negative `int32_t` id.
const ANY_ID: usize = i32::MAX as usize + 1;

/// The `mode` argument: 0 greedy (argmax over the allowed set), 1 sampled.
pub(crate) fn mode_of(mode: i32) -> Result<Mode> {
    match mode {
        0 => Ok(Mode::Greedy),
        1 => Ok(Mode::Sampled),
        m => Err(Error::invalid(format!("`mode` must be 0 (argmax over the allowed set) or 1 (sampled), got {m}"))),
    }
}

/// Validates the descriptor as nucleus-grammar does (its own `modelId`, token ids in
/// `[0, n_vocab)`, no empty leaf set), then merges the leaves of all paths into one trie.
fn compile(json: &str, n_vocab: usize) -> Result<ContinuationSet> {
    let desc: Value =
        serde_json::from_str(json).map_err(|e| Error::invalid(format!("descriptor is not valid JSON: {e}")))?;
    let model_id = desc.get("modelId").and_then(Value::as_str).unwrap_or("");
    let invalid = |e: ::nucleus_grammar::DescriptorError| Error::invalid(format!("descriptor: {e}"));
    ContinuationSet::from_descriptor(&desc, model_id, n_vocab).map_err(invalid)?;
    let leaves: Vec<Value> = desc["descriptors"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|d| d["leaves"].as_array().cloned().unwrap_or_default())
        .collect();
    let merged = json!({"modelId": model_id, "descriptors": [{"path": UNION_PATH, "leaves": leaves}]});
    ContinuationSet::from_descriptor(&merged, model_id, n_vocab).map_err(invalid)
}

/// A constraint at the root of the trie of every leaf of the descriptor (`len` bytes of JSON),
/// token ids checked to be below `n_vocab`; compiled sets come from nucleus-grammar's
/// process-wide cache (shared with nucleus-runtime's). The standalone object and the
/// generation handle both walk this one trie.
pub(crate) fn root(json: &str, n_vocab: usize, mode: Mode) -> Result<TrieConstraint> {
    let key = CacheKey { kind: UNION_KIND, descriptor: json, model_id: "", n_vocab };
    let set = trie_cache::shared(&key, || compile(json, n_vocab))?;
    set.constraint(UNION_PATH, mode).map_err(|e| Error::invalid(format!("descriptor: {e}")))
}

/// The standalone object's state at the root of the descriptor's trie.
pub(crate) fn build(json: &str, mode: i32) -> Result<TrieState> {
    let mode = mode_of(mode)?;
    Ok(TrieState { constraint: root(json, ANY_ID, mode)?, mode, leaf: None })
}

#[cfg_attr(not(feature = "llama"), allow(dead_code))] // used by the llama.cpp drop-ins
impl TrieState {
    /// The constraint itself (a `Sampler`: masks while active, selects in greedy mode).
    pub(crate) fn into_constraint(self) -> TrieConstraint {
        self.constraint
    }

    /// Every token id the descriptor uses must be below `n_vocab`.
    pub(crate) fn check_all_below(json: &str, n_vocab: usize) -> Result<()> {
        let desc: Value = serde_json::from_str(json).unwrap_or(Value::Null);
        let ids = desc["descriptors"].as_array().into_iter().flatten().flat_map(|d| {
            d["leaves"].as_array().into_iter().flatten().flat_map(|l| l["tokens"].as_array().into_iter().flatten())
        });
        for id in ids.filter_map(Value::as_u64) {
            if id >= n_vocab as u64 {
                return Err(Error::invalid(format!("descriptor token {id} is outside the vocabulary [0, {n_vocab})")));
            }
        }
        Ok(())
    }

    fn active(&self) -> bool {
        !self.constraint.is_finished()
    }

    fn check_vocab(&self, n_vocab: usize) -> Result<()> {
        if let Some(t) = self.constraint.allowed().find(|&t| t as usize >= n_vocab) {
            return Err(Error::invalid(format!("the descriptor's token {t} is outside the vocabulary [0, {n_vocab})")));
        }
        Ok(())
    }
}

/// Builds a token-trie constraint from a descriptor (`len` bytes of UTF-8 JSON, no terminator
/// needed): `{"modelId": "...", "descriptors": [{"path": "...", "leaves": [{"name": "...",
/// "tokens": [ids]}]}]}`. The leaves of every path form one trie. `mode` 0 takes the argmax over
/// the allowed set (`nucleus_token_trie_apply` leaves one token); mode 1 leaves the allowed set
/// for the sampler. NULL on a parse error, an empty leaf set, or a leaf without tokens. Free
/// with `nucleus_token_trie_free`.
///
/// # Safety
/// `descriptor_json` must be NULL or point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_new(
    descriptor_json: *const c_char,
    len: usize,
    mode: i32,
) -> *mut nucleus_token_trie {
    constructor(|| {
        // SAFETY: the caller passes NULL or `len` bytes.
        let json = unsafe { text_len(descriptor_json, len, "descriptor_json")? };
        Ok(Handle::into_raw(build(json, mode)?))
    })
}

/// 1 while the constraint is active (some leaf can still be continued), 0 once finished (the
/// tokens so far spell a leaf that nothing continues), or a negative code. A finished
/// constraint masks nothing and accepts any token.
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_is_active(t: *const nucleus_token_trie) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live trie.
        let t = unsafe { Handle::get(t, "t")? };
        Ok(t.active() as i32)
    })
}

/// Writes the tokens allowed next into `bitmask` (`n_words` = `ceil(n_vocab / 32)`, token `i`
/// at bit `i % 32` of word `i / 32`): the tokens continuing a leaf while active, every token
/// once finished. Returns 0 or a negative code (also when a descriptor token is >= `n_vocab`).
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`; `bitmask` NULL or `n_words` writable words.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_fill_bitmask(
    t: *const nucleus_token_trie,
    n_vocab: i32,
    bitmask: *mut u32,
    n_words: usize,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live trie.
        let t = unsafe { Handle::get(t, "t")? };
        // SAFETY: the caller passes NULL or `n_words` writable words.
        let out = unsafe { slice_mut(bitmask, n_words, "bitmask")? };
        if n_vocab <= 0 {
            return Err(Error::size(format!("`n_vocab` must be > 0, got {n_vocab}")));
        }
        let n = n_vocab as usize;
        t.check_vocab(n)?;
        if !t.active() {
            bitmask::fill_all(n, out)?;
        } else {
            bitmask::fill_ids(n, t.constraint.allowed(), out)?;
        }
        Ok(NUCLEUS_OK)
    })
}

/// While active, sets the logit of every token that continues no leaf to `-INFINITY`; in mode 0
/// also every allowed token but the one with the highest logit (lowest id on ties), so any
/// sampler after it picks that one. Does nothing once finished. Returns 0 or a negative code.
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`; `logits` NULL or `n_logits` writable floats.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_apply(
    t: *const nucleus_token_trie,
    logits: *mut f32,
    n_logits: usize,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live trie.
        let t = unsafe { Handle::get(t, "t")? };
        // SAFETY: the caller passes NULL or `n_logits` writable floats.
        let row = unsafe { slice_mut(logits, n_logits, "logits")? };
        if row.is_empty() {
            return Err(Error::size("`n_logits` is 0"));
        }
        t.check_vocab(row.len())?;
        if !t.active() {
            return Ok(NUCLEUS_OK);
        }
        let mut keep: Vec<Token> = t.constraint.allowed().collect();
        if t.mode == Mode::Greedy {
            keep.sort_unstable();
            // The first maximum in id order; NaN never wins.
            let best = keep.iter().copied().fold(None::<Token>, |b, id| match b {
                Some(j) if row[id as usize] <= row[j as usize] || row[id as usize].is_nan() => Some(j),
                _ => Some(id),
            });
            keep = best.into_iter().collect();
        }
        let mut allowed = vec![false; row.len()];
        for &id in &keep {
            allowed[id as usize] = true;
        }
        for (l, ok) in row.iter_mut().zip(allowed) {
            if !ok {
                *l = f32::NEG_INFINITY;
            }
        }
        Ok(NUCLEUS_OK)
    })
}

/// Advances by `token` while active: 0, or `NUCLEUS_ERR_REJECTED` when it continues no leaf
/// (the position is then unchanged). Once finished any token is accepted (0): the constrained
/// span is over.
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_accept(t: *mut nucleus_token_trie, token: i32) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live trie, used by one thread at a time.
        let t = unsafe { Handle::get_mut(t, "t")? };
        if t.active() {
            t.constraint.advance(token).map_err(|e| Error::new(NUCLEUS_ERR_REJECTED, e.to_string()))?;
        }
        Ok(NUCLEUS_OK)
    })
}

/// The tokens forced from here (one continuation only, no leaf ending on the way), to feed to
/// the model in one batch (fast-forward): writes up to `cap` of them to `out` and returns how
/// many there are in all (call again with a bigger buffer when that exceeds `cap`), or a
/// negative code. Does not advance: accept them with `nucleus_token_trie_accept`. `out` may be
/// NULL when `cap` is 0.
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`; `out` NULL or `cap` writable ids.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_forced(t: *const nucleus_token_trie, out: *mut i32, cap: usize) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live trie.
        let t = unsafe { Handle::get(t, "t")? };
        let forced = t.constraint.forced();
        if cap > 0 {
            // SAFETY: the caller passes NULL or `cap` writable ids.
            let out = unsafe { slice_mut(out, cap, "out")? };
            let n = forced.len().min(cap);
            out[..n].copy_from_slice(&forced[..n]);
        }
        Ok(forced.len() as i32)
    })
}

/// The name of the leaf the tokens so far spell, or NULL when they spell none (or on error;
/// `nucleus_last_error()` is then non-empty). Valid until the next call on this object.
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_leaf(t: *mut nucleus_token_trie) -> *const c_char {
    guard(
        |_| std::ptr::null(),
        || {
            // SAFETY: the caller passes NULL or a live trie, used by one thread at a time.
            let t = unsafe { Handle::get_mut(t, "t")? };
            t.leaf = t.constraint.complete().map(|s| CString::new(s.replace('\0', " ")).unwrap_or_default());
            Ok(t.leaf.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
        },
    )
}

/// Returns to the root of the trie. A NULL trie is ignored (and reported).
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_reset(t: *mut nucleus_token_trie) {
    guard(
        |_| (),
        || {
            // SAFETY: the caller passes NULL or a live trie, used by one thread at a time.
            let t = unsafe { Handle::get_mut(t, "t")? };
            ::nucleus_sampler::Sampler::reset(&mut t.constraint);
            t.leaf = None;
            Ok(())
        },
    )
}

/// A copy at the same position (the trie itself is shared). NULL on error. Free with
/// `nucleus_token_trie_free`.
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_clone(t: *const nucleus_token_trie) -> *mut nucleus_token_trie {
    constructor(|| {
        // SAFETY: the caller passes NULL or a live trie not being mutated meanwhile.
        let t = unsafe { Handle::get(t, "t")? };
        Ok(Handle::into_raw(t.clone()))
    })
}

/// Frees a token trie. NULL is a no-op.
///
/// # Safety
/// `t` must be NULL or a live `nucleus_token_trie`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nucleus_token_trie_free(t: *mut nucleus_token_trie) {
    // SAFETY: the caller passes NULL or a live trie it gives up.
    guard(|_| (), || unsafe { Handle::free(t) })
}
