//! The llama.cpp-facing part: Nucleus samplers as `struct llama_sampler *` objects (built with
//! llama.cpp's own `llama_sampler_init` and a custom interface) that can join any llama.cpp
//! chain, over a `struct llama_vocab *`.
//!
//! libnucleus does not link llama.cpp: the few llama.cpp functions used here are declared below
//! and resolved when the application links its own llama.cpp (the one whose `llama.h` the
//! project builds, `llama-cpp-sys-2 =0.1.161`), so there is never a second copy of it.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use ::nucleus_grammar::{GrammarSampler, VocabIndex};
use ::nucleus_sampler::params_map::Vocabulary;
use ::nucleus_sampler::{Candidates, Chain, Sampler, Token, TokenData, Vocab};

use crate::args::{text, text_len};
use crate::error::{guard, Error, Result};
use crate::params;

/// llama.cpp's `struct llama_vocab` (opaque).
/// cbindgen:ignore
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct llama_vocab {
    _private: [u8; 0],
}

/// llama.cpp's `struct llama_sampler`: its interface and our context.
/// cbindgen:ignore
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct llama_sampler {
    iface: *const SamplerIface,
    ctx: *mut c_void,
}

/// llama.cpp's `llama_token_data_array`.
#[repr(C)]
struct TokenDataArray {
    data: *mut TokenData,
    size: usize,
    selected: i64,
    sorted: bool,
}

type Fp = Option<unsafe extern "C" fn()>;

/// llama.cpp's `struct llama_sampler_i` (this version: six classic members, then six backend
/// members we leave NULL).
#[repr(C)]
struct SamplerIface {
    name: Option<unsafe extern "C" fn(*const llama_sampler) -> *const c_char>,
    accept: Option<unsafe extern "C" fn(*mut llama_sampler, i32)>,
    apply: Option<unsafe extern "C" fn(*mut llama_sampler, *mut TokenDataArray)>,
    reset: Option<unsafe extern "C" fn(*mut llama_sampler)>,
    clone: Option<unsafe extern "C" fn(*const llama_sampler) -> *mut llama_sampler>,
    free: Option<unsafe extern "C" fn(*mut llama_sampler)>,
    backend: [Fp; 6],
}

// SAFETY (for the `Sync` the static needs): the interface is a table of function pointers,
// never written after initialisation.
unsafe impl Sync for SamplerIface {}

extern "C" {
    fn llama_sampler_init(iface: *const SamplerIface, ctx: *mut c_void) -> *mut llama_sampler;
    fn llama_vocab_n_tokens(vocab: *const llama_vocab) -> i32;
    fn llama_vocab_is_eog(vocab: *const llama_vocab, token: i32) -> bool;
    fn llama_vocab_is_control(vocab: *const llama_vocab, token: i32) -> bool;
    fn llama_vocab_eos(vocab: *const llama_vocab) -> i32;
    fn llama_vocab_eot(vocab: *const llama_vocab) -> i32;
    fn llama_token_to_piece(
        vocab: *const llama_vocab,
        token: i32,
        buf: *mut c_char,
        length: i32,
        lstrip: i32,
        special: bool,
    ) -> i32;
    fn llama_tokenize(
        vocab: *const llama_vocab,
        text: *const c_char,
        text_len: i32,
        tokens: *mut i32,
        n_tokens_max: i32,
        add_special: bool,
        parse_special: bool,
    ) -> i32;
}

/// A llama.cpp vocabulary seen through Nucleus's `Vocab` trait (DRY breakers, EOG, grammar
/// pieces).
struct LlamaVocab {
    ptr: *const llama_vocab,
    n: usize,
}

// SAFETY: a loaded llama_vocab is immutable and llama.cpp's read functions used here are safe
// to call from any thread; the caller keeps the model alive while samplers use it.
unsafe impl Send for LlamaVocab {}
// SAFETY: as above.
unsafe impl Sync for LlamaVocab {}

impl Vocab for LlamaVocab {
    fn n_vocab(&self) -> usize {
        self.n
    }

    fn token_piece(&self, token: Token, out: &mut Vec<u8>) {
        out.clear();
        out.resize(32, 0);
        for _ in 0..2 {
            // SAFETY: `out` has `out.len()` writable bytes; the vocab is live (caller's contract).
            let n = unsafe {
                llama_token_to_piece(self.ptr, token, out.as_mut_ptr() as *mut c_char, out.len() as i32, 0, true)
            };
            if n >= 0 {
                out.truncate(n as usize);
                return;
            }
            out.resize((-n) as usize, 0);
        }
        out.clear();
    }

    fn tokenize(&self, text: &[u8]) -> Vec<Token> {
        let mut toks = vec![0; text.len() + 2];
        for _ in 0..2 {
            // SAFETY: `text` is readable for its length and `toks` writable for its length.
            let n = unsafe {
                llama_tokenize(
                    self.ptr,
                    text.as_ptr() as *const c_char,
                    text.len() as i32,
                    toks.as_mut_ptr(),
                    toks.len() as i32,
                    false,
                    false,
                )
            };
            if n >= 0 {
                toks.truncate(n as usize);
                return toks;
            }
            toks.resize((-n) as usize, 0);
        }
        Vec::new()
    }

    fn is_eog(&self, token: Token) -> bool {
        // SAFETY: the vocab is live (caller's contract).
        unsafe { llama_vocab_is_eog(self.ptr, token) }
    }

    fn eot(&self) -> Option<Token> {
        // SAFETY: the vocab is live (caller's contract).
        Some(unsafe { llama_vocab_eot(self.ptr) }).filter(|&t| t >= 0)
    }

    fn eos(&self) -> Option<Token> {
        // SAFETY: the vocab is live (caller's contract).
        Some(unsafe { llama_vocab_eos(self.ptr) }).filter(|&t| t >= 0)
    }

    fn is_control(&self, token: Token) -> bool {
        // SAFETY: the vocab is live (caller's contract).
        unsafe { llama_vocab_is_control(self.ptr, token) }
    }
}

fn vocab_of(vocab: *const llama_vocab) -> Result<LlamaVocab> {
    if vocab.is_null() {
        return Err(Error::null("vocab"));
    }
    // SAFETY: a non-NULL vocabulary of a loaded model (caller's contract).
    let n = unsafe { llama_vocab_n_tokens(vocab) };
    if n <= 0 {
        return Err(Error::invalid(format!("the vocabulary has {n} tokens")));
    }
    Ok(LlamaVocab { ptr: vocab, n: n as usize })
}

/// What a Nucleus llama_sampler runs: a chain (the common chain, or one grammar) and a reusable
/// candidate buffer.
#[derive(Clone)]
struct Ctx {
    name: &'static std::ffi::CStr,
    chain: Chain,
    cands: Candidates,
}

static IFACE: SamplerIface = SamplerIface {
    name: Some(iface_name),
    accept: Some(iface_accept),
    apply: Some(iface_apply),
    reset: Some(iface_reset),
    clone: Some(iface_clone),
    free: Some(iface_free),
    backend: [None; 6],
};

fn wrap(ctx: Ctx) -> *mut llama_sampler {
    let raw = Box::into_raw(Box::new(ctx)) as *mut c_void;
    // SAFETY: IFACE is a static table matching this llama.h's llama_sampler_i; llama.cpp keeps the
    // pointers and hands `raw` back to the callbacks, which own it until `iface_free`.
    let s = unsafe { llama_sampler_init(&IFACE, raw) };
    if s.is_null() {
        // SAFETY: llama.cpp did not take `raw`; it is still ours.
        drop(unsafe { Box::from_raw(raw as *mut Ctx) });
    }
    s
}

/// The context of a sampler made by [`wrap`].
///
/// # Safety
/// `s` must be a live llama_sampler created by [`wrap`], not used elsewhere meanwhile.
unsafe fn ctx_of<'a>(s: *const llama_sampler) -> &'a mut Ctx {
    // SAFETY: the caller's contract: `ctx` is the `Box<Ctx>` given to llama_sampler_init.
    unsafe { &mut *((*s).ctx as *mut Ctx) }
}

unsafe extern "C" fn iface_name(s: *const llama_sampler) -> *const c_char {
    // SAFETY: llama.cpp calls this with a sampler built by `wrap`.
    unsafe { ctx_of(s) }.name.as_ptr()
}

unsafe extern "C" fn iface_accept(s: *mut llama_sampler, token: i32) {
    guard(
        |_| (),
        || {
            // SAFETY: llama.cpp calls this with a sampler built by `wrap`.
            unsafe { ctx_of(s) }.chain.accept(token);
            Ok(())
        },
    )
}

unsafe extern "C" fn iface_apply(s: *mut llama_sampler, cur_p: *mut TokenDataArray) {
    guard(
        |_| (),
        || {
            // SAFETY: llama.cpp calls this with a sampler built by `wrap` and a valid array whose
            // `data` holds `size` entries laid out as `TokenData` (same three 4-byte fields).
            let (ctx, cur) = unsafe { (ctx_of(s), &mut *cur_p) };
            if cur.data.is_null() || cur.size == 0 {
                return Ok(());
            }
            // SAFETY: as above.
            let data = unsafe { std::slice::from_raw_parts_mut(cur.data, cur.size) };
            ctx.cands.fill_from(data);
            ctx.cands.set_sorted(cur.sorted);
            ctx.cands.set_selected(usize::try_from(cur.selected).ok().filter(|&i| i < data.len()));
            ctx.chain.apply(&mut ctx.cands);
            let out = ctx.cands.as_slice();
            if out.len() > data.len() {
                return Err(Error::invalid("the chain grew the candidate array"));
            }
            data[..out.len()].copy_from_slice(out);
            cur.size = out.len();
            cur.sorted = ctx.cands.is_sorted();
            cur.selected = ctx.cands.selected().map_or(-1, |i| i as i64);
            Ok(())
        },
    )
}

unsafe extern "C" fn iface_reset(s: *mut llama_sampler) {
    guard(
        |_| (),
        || {
            // SAFETY: llama.cpp calls this with a sampler built by `wrap`.
            unsafe { ctx_of(s) }.chain.reset();
            Ok(())
        },
    )
}

unsafe extern "C" fn iface_clone(s: *const llama_sampler) -> *mut llama_sampler {
    guard(
        |_| std::ptr::null_mut(),
        || {
            // SAFETY: llama.cpp calls this with a sampler built by `wrap`.
            let c = unsafe { ctx_of(s) }.clone();
            Ok(wrap(c))
        },
    )
}

unsafe extern "C" fn iface_free(s: *mut llama_sampler) {
    // SAFETY: llama.cpp calls this once, before deleting `s`; `ctx` is our box.
    let ctx = unsafe { (*s).ctx as *mut Ctx };
    if !ctx.is_null() {
        // SAFETY: created by Box::into_raw in `wrap`, freed only here.
        drop(unsafe { Box::from_raw(ctx) });
    }
}

/// llama.cpp's common sampler chain (`common_sampler_init` order and defaults) from
/// `params_json` (the fields of `nucleus_sampler_new`; DRY's string breakers and `ignore_eos`
/// work through `vocab`), as one `struct llama_sampler *` that selects the token: it gives the
/// tokens llama.cpp's own chain gives for the same params and seed, and can be added to any
/// chain (`llama_sampler_chain_add`) or used alone with `llama_sampler_sample`. Free it with
/// `llama_sampler_free` (or with its chain). `vocab` must outlive the sampler. NULL on error,
/// with the reason in `nucleus_last_error()`. Only in libnucleus built with the `llama` feature
/// (`cargo build --release -p nucleus-ffi --features llama`), linked into a llama.cpp program.
///
/// # Safety
/// `vocab` must be NULL or the vocabulary of a loaded model; `params_json` NULL or
/// NUL-terminated. The application must link llama.cpp.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llama_sampler_init(
    vocab: *const llama_vocab,
    params_json: *const c_char,
) -> *mut llama_sampler {
    guard(
        |_| std::ptr::null_mut(),
        || {
            let v = vocab_of(vocab)?;
            // SAFETY: the caller passes NULL or a NUL-terminated string.
            let json = unsafe { text(params_json, "params_json")? };
            let n = v.n;
            let p = params::parse(json, Vocabulary::Model(n)).map_err(Error::invalid)?;
            let chain = p.build(n, Some(Arc::new(v))).map_err(|e| Error::invalid(e.to_string()))?;
            Ok(wrap(Ctx { name: c"nucleus", chain, cands: Candidates::new() }))
        },
    )
}

/// A drop-in for `llama_sampler_init_grammar(vocab, gbnf, root)`: Nucleus's grammar engine over
/// the same vocabulary, keeping the same candidates llama.cpp's grammar sampler keeps (every
/// other logit set to -inf; end-of-generation only where the grammar can end) and advancing on
/// accept. `root` NULL means `"root"`; an empty `gbnf` constrains nothing (as llama.cpp). NULL
/// on a grammar error (message with line and column in `nucleus_last_error()`). `vocab` must
/// outlive the sampler. Only with the `llama` feature, like `nucleus_llama_sampler_init`.
///
/// # Safety
/// `vocab` must be NULL or the vocabulary of a loaded model; `gbnf` and `root` NULL or
/// NUL-terminated. The application must link llama.cpp.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llama_sampler_init_grammar(
    vocab: *const llama_vocab,
    gbnf: *const c_char,
    root: *const c_char,
) -> *mut llama_sampler {
    guard(
        |_| std::ptr::null_mut(),
        || {
            let v = vocab_of(vocab)?;
            // SAFETY: the caller passes NULL or a NUL-terminated string.
            let gbnf = unsafe { text(gbnf, "gbnf")? };
            // SAFETY: the caller passes NULL or a NUL-terminated string.
            let root = if root.is_null() { "root" } else { unsafe { text(root, "root")? } };
            let index = Arc::new(VocabIndex::new(&v));
            let g = GrammarSampler::with_index(index, gbnf, root).map_err(|e| Error::invalid(e.to_string()))?;
            let mut chain = Chain::new();
            chain.push(Box::new(g) as Box<dyn Sampler>);
            Ok(wrap(Ctx { name: c"nucleus-grammar", chain, cands: Candidates::new() }))
        },
    )
}

/// The token-trie constraint of `nucleus_token_trie_new` as a `struct llama_sampler *` for a
/// llama.cpp chain: while some leaf can still be continued it keeps only the tokens that
/// continue one (mode 0: only the most likely of them, so the chain's selector takes it; mode 1:
/// the set is left to the samplers after it), tracks its position on every accepted token, and
/// once a leaf with no longer continuation is reached it changes nothing. NULL on a parse error,
/// an empty leaf set or a token outside `vocab`. Only with the `llama` feature.
///
/// # Safety
/// `vocab` must be NULL or the vocabulary of a loaded model; `descriptor_json` NULL or `len`
/// readable bytes. The application must link llama.cpp.
#[no_mangle]
pub unsafe extern "C" fn nucleus_llama_sampler_init_token_trie(
    vocab: *const llama_vocab,
    descriptor_json: *const c_char,
    len: usize,
    mode: i32,
) -> *mut llama_sampler {
    guard(
        |_| std::ptr::null_mut(),
        || {
            let v = vocab_of(vocab)?;
            // SAFETY: the caller passes NULL or `len` bytes.
            let json = unsafe { text_len(descriptor_json, len, "descriptor_json")? };
            let state = crate::token_trie::build(json, mode)?;
            crate::token_trie::TrieState::check_all_below(json, v.n)?;
            let mut chain = Chain::new();
            chain.push(Box::new(state.into_constraint()) as Box<dyn Sampler>);
            Ok(wrap(Ctx { name: c"nucleus-token-trie", chain, cands: Candidates::new() }))
        },
    )
}
