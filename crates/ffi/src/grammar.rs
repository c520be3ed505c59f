//! The grammar object (`nucleus_grammar`): a GBNF grammar or a JSON Schema over a
//! `nucleus_vocab`, giving packed token bitmasks (the same tokens llama.cpp's grammar sampler
//! keeps), advancing by accepted tokens and rolling them back. A thin wrapper over
//! nucleus-grammar's [`GrammarMatcher`] (the one the Python and Node packages wrap too), with
//! end-of-generation tokens leaving the grammar where it was ([`OnEog::Stay`]), as llama.cpp's
//! grammar sampler does.

use std::ffi::c_char;

use ::nucleus_grammar::{GrammarMatcher, OnEog};

use crate::args::{slice_mut, text};
use crate::error::{constructor, guard, status, Error, Result, NUCLEUS_ERR_REJECTED, NUCLEUS_OK};
use crate::handle::{Handle, Kind};
use crate::vocab::nucleus_vocab;

/// A grammar's position over its vocabulary.
#[derive(Clone)]
pub struct GrammarState {
    m: GrammarMatcher,
}

impl Kind for GrammarState {
    const MAGIC: u64 = 0x4e55_434c_4752_414d; // "NUCLGRAM"
    const NAME: &'static str = "nucleus_grammar";
}

/// The C type `nucleus_grammar` (opaque to C).
/// cbindgen:ignore
#[allow(non_camel_case_types)]
pub type nucleus_grammar = Handle<GrammarState>;

impl GrammarState {
    fn n_vocab(&self) -> usize {
        self.m.n_vocab()
    }

    fn check_token(&self, token: i32) -> Result<()> {
        if token < 0 || token as usize >= self.n_vocab() {
            return Err(Error::invalid(format!("token {token} is outside the vocabulary [0, {})", self.n_vocab())));
        }
        Ok(())
    }
}

/// Compiles a GBNF grammar (llama.cpp's syntax; start rule `root`, or `"root"` when `root` is
/// NULL) over `vocab`, like `llama_sampler_init_grammar`. NULL on error (the parser's message
/// with line and column is in `nucleus_last_error()`). The grammar keeps its own reference to
/// the vocabulary. Free with `nucleus_grammar_free`.
///
/// # Safety
/// `vocab` must be NULL or a live `nucleus_vocab`; `gbnf` and `root` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_new(
    vocab: *const nucleus_vocab,
    gbnf: *const c_char,
    root: *const c_char,
) -> *mut nucleus_grammar {
    constructor(|| {
        // SAFETY: the caller passes NULL or a live vocabulary.
        let v = unsafe { Handle::get(vocab, "vocab")? };
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let gbnf = unsafe { text(gbnf, "gbnf")? };
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let root = if root.is_null() { "root" } else { unsafe { text(root, "root")? } };
        if gbnf.trim().is_empty() {
            return Err(Error::invalid("`gbnf` is empty"));
        }
        let m = GrammarMatcher::from_gbnf(v.index.clone(), gbnf, root, OnEog::Stay)
            .map_err(|e| Error::invalid(e.to_string()))?;
        Ok(Handle::into_raw(GrammarState { m }))
    })
}

/// Compiles a JSON Schema (strict: a keyword that cannot be enforced exactly is an error naming
/// the keyword and its JSON pointer) into a grammar over `vocab` accepting exactly the JSON
/// documents valid against it. NULL on error. Free with `nucleus_grammar_free`.
///
/// # Safety
/// `vocab` must be NULL or a live `nucleus_vocab`; `schema_json` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_new_json_schema(
    vocab: *const nucleus_vocab,
    schema_json: *const c_char,
) -> *mut nucleus_grammar {
    constructor(|| {
        // SAFETY: the caller passes NULL or a live vocabulary.
        let v = unsafe { Handle::get(vocab, "vocab")? };
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let json = unsafe { text(schema_json, "schema_json")? };
        let schema: serde_json::Value =
            serde_json::from_str(json).map_err(|e| Error::invalid(format!("schema_json is not valid JSON: {e}")))?;
        let m = GrammarMatcher::from_json_schema(v.index.clone(), &schema, false, OnEog::Stay)
            .map_err(|e| Error::invalid(e.to_string()))?;
        Ok(Handle::into_raw(GrammarState { m }))
    })
}

/// Writes the tokens the grammar allows next into `bitmask`: `n_words` must be
/// `ceil(n_vocab / 32)`; token `i` is allowed when bit `i % 32` of word `i / 32` is set.
/// End-of-generation tokens are allowed only where the grammar can end. Returns 0 or a negative
/// code.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`; `bitmask` NULL or `n_words` writable words.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_fill_bitmask(
    g: *mut nucleus_grammar,
    bitmask: *mut u32,
    n_words: usize,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live grammar, used by one thread at a time.
        let g = unsafe { Handle::get_mut(g, "g")? };
        // SAFETY: the caller passes NULL or `n_words` writable words.
        let out = unsafe { slice_mut(bitmask, n_words, "bitmask")? };
        g.m.fill_bitmask(out)?;
        Ok(NUCLEUS_OK)
    })
}

/// Sets the logit of every token the grammar does not allow next to `-INFINITY` (what
/// llama.cpp's grammar sampler does to its candidates). `n_logits` must equal `n_vocab`.
/// Returns 0 or a negative code.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`; `logits` NULL or `n_logits` writable floats.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_apply(g: *mut nucleus_grammar, logits: *mut f32, n_logits: usize) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live grammar, used by one thread at a time.
        let g = unsafe { Handle::get_mut(g, "g")? };
        // SAFETY: the caller passes NULL or `n_logits` writable floats.
        let row = unsafe { slice_mut(logits, n_logits, "logits")? };
        if row.len() != g.n_vocab() {
            return Err(Error::size(format!("`n_logits` is {} but the vocabulary has {}", row.len(), g.n_vocab())));
        }
        let mask = g.m.sampler().mask();
        for (i, l) in row.iter_mut().enumerate() {
            if !mask.contains(i as i32) {
                *l = f32::NEG_INFINITY;
            }
        }
        Ok(NUCLEUS_OK)
    })
}

/// Whether the grammar allows `token` next: 1 or 0 (cheaper than a whole mask: the "sample
/// first, then check" test), or a negative code.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_is_allowed(g: *const nucleus_grammar, token: i32) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live grammar.
        let g = unsafe { Handle::get(g, "g")? };
        g.check_token(token)?;
        Ok(g.m.is_allowed(token) as i32)
    })
}

/// Advances the grammar by `token`. Returns 0, or `NUCLEUS_ERR_REJECTED` when the grammar does
/// not allow it (the state is then unchanged), or another negative code.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_accept(g: *mut nucleus_grammar, token: i32) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live grammar, used by one thread at a time.
        let g = unsafe { Handle::get_mut(g, "g")? };
        g.check_token(token)?;
        g.m.accept(token).map_err(|e| Error::new(NUCLEUS_ERR_REJECTED, e.to_string()))?;
        Ok(NUCLEUS_OK)
    })
}

/// Undoes the last `n` accepted tokens (speculative decoding: the tokens a draft proposed and
/// the target refused), all or nothing: `NUCLEUS_ERR_INVALID` when fewer than `n` were
/// accepted since the grammar was built or reset (the state is then unchanged). Returns 0 or a
/// negative code. Rejected tokens are not counted; a reset forgets the history.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_rollback(g: *mut nucleus_grammar, n: usize) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live grammar, used by one thread at a time.
        let g = unsafe { Handle::get_mut(g, "g")? };
        g.m.rollback(n).map_err(|e| Error::invalid(e.to_string()))?;
        Ok(NUCLEUS_OK)
    })
}

/// How many accepted tokens `nucleus_grammar_rollback` can undo (those accepted since the
/// grammar was built or last reset), or a negative code.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_num_accepted(g: *const nucleus_grammar) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live grammar.
        let g = unsafe { Handle::get(g, "g")? };
        Ok(i32::try_from(g.m.accepted()).unwrap_or(i32::MAX))
    })
}

/// 1 when the text so far is a complete sentence of the grammar (an end-of-generation token is
/// allowed now), 0 otherwise, or a negative code.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_can_end(g: *const nucleus_grammar) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live grammar.
        let g = unsafe { Handle::get(g, "g")? };
        Ok(g.m.can_end() as i32)
    })
}

/// 1 when the grammar is complete: it can end and nothing may follow (generation can stop
/// without sampling an end-of-generation token), 0 otherwise, or a negative code.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_is_complete(g: *const nucleus_grammar) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live grammar.
        let g = unsafe { Handle::get(g, "g")? };
        Ok(g.m.sampler().is_complete() as i32)
    })
}

/// Returns the grammar to its start. A NULL grammar is ignored (and reported).
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_reset(g: *mut nucleus_grammar) {
    guard(
        |_| (),
        || {
            // SAFETY: the caller passes NULL or a live grammar, used by one thread at a time.
            let g = unsafe { Handle::get_mut(g, "g")? };
            g.m.reset();
            Ok(())
        },
    )
}

/// A copy at the same position (cheap: the compiled grammar, automaton and mask cache are
/// shared; the copies may then be used from different threads). NULL on error. Free with
/// `nucleus_grammar_free`.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_clone(g: *const nucleus_grammar) -> *mut nucleus_grammar {
    constructor(|| {
        // SAFETY: the caller passes NULL or a live grammar not being mutated meanwhile.
        let g = unsafe { Handle::get(g, "g")? };
        Ok(Handle::into_raw(g.clone()))
    })
}

/// Frees a grammar. NULL is a no-op.
///
/// # Safety
/// `g` must be NULL or a live `nucleus_grammar`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nucleus_grammar_free(g: *mut nucleus_grammar) {
    // SAFETY: the caller passes NULL or a live grammar it gives up.
    guard(|_| (), || unsafe { Handle::free(g) })
}
