//! llama.cpp's `common` sampler itself — `common_sampler_init`, `common_sampler_sample`,
//! `common_sampler_accept` from llama.cpp's `common` library — driven from Rust through
//! `shim/common_shim.cpp`, so that [`nucleus_sampler::SamplingParams::build`] (chain order,
//! defaults, no-op rules, sampler-order parsing) can be held to llama.cpp's own chain builder
//! rather than to its own descriptions of the chain (which [`crate::common_chain`] uses).
//!
//! `common_sampler_init` needs a `llama_model` (for the vocabulary: DRY string breakers,
//! `n_vocab`, suppressed tokens) and `common_sampler_sample` reads the logits from a
//! `llama_context`, so this module also has a minimal owned model ([`RawModel`]) and context
//! ([`RawContext`]) over `llama-cpp-sys-2`: one decode of a token sequence with logits kept for
//! every position gives real logits rows to sample from.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;
use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams};

/// llama.cpp's `LLAMA_TOKEN_NULL` (a macro, so not in the bindings).
const LLAMA_TOKEN_NULL: i32 = -1;

/// The plain values of `common_params_sampling` that shape the chain; mirrors
/// `nucleus_parity_common_params` in `shim/common_shim.cpp` field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct CommonParams {
    seed: u32,
    min_keep: i32,
    top_k: i32,
    top_p: f32,
    min_p: f32,
    xtc_probability: f32,
    xtc_threshold: f32,
    typ_p: f32,
    temp: f32,
    dynatemp_range: f32,
    dynatemp_exponent: f32,
    penalty_last_n: i32,
    penalty_repeat: f32,
    penalty_freq: f32,
    penalty_present: f32,
    dry_multiplier: f32,
    dry_base: f32,
    dry_allowed_length: i32,
    dry_penalty_last_n: i32,
    adaptive_target: f32,
    adaptive_decay: f32,
    mirostat: i32,
    top_n_sigma: f32,
    mirostat_tau: f32,
    mirostat_eta: f32,
    ignore_eos: i32,
}

impl CommonParams {
    fn from_params(p: &SamplingParams) -> Self {
        CommonParams {
            seed: p.seed,
            min_keep: i32::try_from(p.min_keep).unwrap_or(i32::MAX),
            top_k: p.top_k,
            top_p: p.top_p,
            min_p: p.min_p,
            xtc_probability: p.xtc_probability,
            xtc_threshold: p.xtc_threshold,
            typ_p: p.typ_p,
            temp: p.temp,
            dynatemp_range: p.dynatemp_range,
            dynatemp_exponent: p.dynatemp_exponent,
            penalty_last_n: p.penalty_last_n,
            penalty_repeat: p.penalty_repeat,
            penalty_freq: p.penalty_freq,
            penalty_present: p.penalty_present,
            dry_multiplier: p.dry_multiplier,
            dry_base: p.dry_base,
            dry_allowed_length: p.dry_allowed_length,
            dry_penalty_last_n: p.dry_penalty_last_n,
            adaptive_target: p.adaptive_target,
            adaptive_decay: p.adaptive_decay,
            mirostat: match p.mirostat {
                MirostatMode::Off => 0,
                MirostatMode::V1 => 1,
                MirostatMode::V2 => 2,
            },
            top_n_sigma: p.top_n_sigma,
            mirostat_tau: p.mirostat_tau,
            mirostat_eta: p.mirostat_eta,
            ignore_eos: p.ignore_eos as i32,
        }
    }
}

extern "C" {
    /// `shim/common_shim.cpp`: fills a `common_params_sampling` and calls `common_sampler_init`.
    /// Null (and a message in `err`) on a C++ exception.
    fn nucleus_parity_common_init(
        model: *const sys::llama_model,
        p: *const CommonParams,
        order_kind: i32,
        order: *const c_char,
        breakers: *const *const c_char,
        n_breakers: i64,
        bias: *const sys::llama_logit_bias,
        n_bias: usize,
        grammar: *const c_char,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut c_void;
    /// `sizeof(nucleus_parity_common_params)` as the shim was compiled.
    fn nucleus_parity_common_params_size() -> usize;
    /// `common_sampler_sample(gsmpl, ctx, idx)`; `LLAMA_TOKEN_NULL` on a C++ exception.
    fn nucleus_parity_common_sample(gsmpl: *mut c_void, ctx: *mut sys::llama_context, idx: i32) -> i32;
    /// `common_sampler_accept(gsmpl, token, is_generated)`.
    fn nucleus_parity_common_accept(gsmpl: *mut c_void, token: i32, is_generated: i32);
    /// `common_sampler_print` into `out`.
    fn nucleus_parity_common_print(gsmpl: *const c_void, out: *mut c_char, out_len: usize);
    /// `common_sampler_free`.
    fn nucleus_parity_common_free(gsmpl: *mut c_void);
}

/// Which sampler order llama.cpp is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// `common_params_sampling`'s default `samplers` list, untouched.
    Default,
    /// A `--samplers` value (`;`-separated names), parsed by `common_sampler_types_from_names`.
    Names(String),
    /// A `--sampling-seq` value (one letter per sampler), parsed by
    /// `common_sampler_types_from_chars`.
    Codes(String),
}

impl Order {
    /// `p.samplers` written as `--sampling-seq` letters.
    pub fn codes_of(p: &SamplingParams) -> Order {
        Order::Codes(p.samplers.iter().map(|&s: &SamplerType| s.code()).collect())
    }
}

/// An owned `common_sampler` (llama.cpp's `common/sampling.h`).
pub struct CommonSampler {
    ptr: NonNull<c_void>,
}

impl std::fmt::Debug for CommonSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommonSampler").field("chain", &self.describe()).finish()
    }
}

impl Drop for CommonSampler {
    fn drop(&mut self) {
        // SAFETY: we own the pointer, created by common_sampler_init and freed only here.
        unsafe { nucleus_parity_common_free(self.ptr.as_ptr()) }
    }
}

impl CommonSampler {
    /// `common_sampler_init(model, s)` where `s` is a default `common_params_sampling` with
    /// every chain-shaping field of `p` copied in (seed, thresholds, penalties, DRY values and
    /// string breakers, mirostat, adaptive-p, logit biases, `ignore_eos` resolved as
    /// `common_init_from_params` does), and the sampler order given by `order` (`p.samplers`
    /// is not read: pass [`Order::codes_of`] to use it). An exception thrown by llama.cpp
    /// (e.g. an invalid repeat penalty) is returned as its message.
    pub fn new(model: &RawModel, p: &SamplingParams, order: &Order) -> Result<Self, String> {
        Self::with_grammar(model, p, order, "")
    }

    /// [`CommonSampler::new`] with `gbnf` (start rule `root`; empty for none) as the user
    /// grammar (`common_params_sampling::grammar`, as `--grammar` sets it): `sample` then
    /// checks the chain's token against it and resamples with the grammar applied first when
    /// it does not fit, as llama.cpp does.
    pub fn with_grammar(model: &RawModel, p: &SamplingParams, order: &Order, gbnf: &str) -> Result<Self, String> {
        // SAFETY: returns a constant.
        let c_size = unsafe { nucleus_parity_common_params_size() };
        if c_size != std::mem::size_of::<CommonParams>() {
            return Err(format!(
                "CommonParams is {} bytes, the shim's struct {c_size}: the mirrors differ",
                std::mem::size_of::<CommonParams>()
            ));
        }
        let cp = CommonParams::from_params(p);
        let (kind, text) = match order {
            Order::Default => (0, String::new()),
            Order::Names(s) => (1, s.clone()),
            Order::Codes(s) => (2, s.clone()),
        };
        let text = CString::new(text).map_err(|e| e.to_string())?;
        let gbnf = CString::new(gbnf).map_err(|e| e.to_string())?;
        let breakers: Vec<CString> = p
            .dry_sequence_breakers
            .iter()
            .map(|b| CString::new(b.as_str()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let breaker_ptrs: Vec<*const c_char> = breakers.iter().map(|b| b.as_ptr()).collect();
        let bias: Vec<sys::llama_logit_bias> =
            p.logit_bias.iter().map(|&(token, bias)| sys::llama_logit_bias { token, bias }).collect();
        let mut err = vec![0 as c_char; 512];
        // SAFETY: every pointer is valid for the duration of the call (the CStrings, the
        // pointer array and the bias vector outlive it; `err` has `err.len()` bytes); the shim
        // copies what it keeps. `model` is a live llama_model.
        let raw = unsafe {
            nucleus_parity_common_init(
                model.ptr.as_ptr(),
                &cp,
                kind,
                text.as_ptr(),
                breaker_ptrs.as_ptr(),
                breaker_ptrs.len() as i64,
                bias.as_ptr(),
                bias.len(),
                gbnf.as_ptr(),
                err.as_mut_ptr(),
                err.len(),
            )
        };
        match NonNull::new(raw) {
            Some(ptr) => Ok(CommonSampler { ptr }),
            None => {
                // SAFETY: the shim NUL-terminates `err` (it was zeroed, so it always is).
                let msg = unsafe { CStr::from_ptr(err.as_ptr()) };
                Err(msg.to_string_lossy().into_owned())
            }
        }
    }

    /// `common_sampler_sample(gsmpl, ctx, idx)`: the chain over the logits at batch position
    /// `idx` of the last decode. `None` if llama.cpp threw.
    pub fn sample(&mut self, ctx: &mut RawContext<'_>, idx: usize) -> Option<i32> {
        assert!(ctx.has_logits(idx), "no logits at position {idx} of the last decode");
        // SAFETY: both objects are live; position `idx` of the last decode has logits, so
        // llama_get_logits_ith inside returns a valid row.
        let t = unsafe { nucleus_parity_common_sample(self.ptr.as_ptr(), ctx.ptr.as_ptr(), idx as i32) };
        (t != LLAMA_TOKEN_NULL).then_some(t)
    }

    /// `common_sampler_accept(gsmpl, token, true)`: a generated token (chain and grammar).
    pub fn accept(&mut self, token: i32) {
        // SAFETY: plain call on a live object.
        unsafe { nucleus_parity_common_accept(self.ptr.as_ptr(), token, 1) }
    }

    /// `common_sampler_accept(gsmpl, token, false)`: a prompt token (the chain's history
    /// only), as llama.cpp's server and CLI feed the prompt.
    pub fn accept_prompt(&mut self, token: i32) {
        // SAFETY: plain call on a live object.
        unsafe { nucleus_parity_common_accept(self.ptr.as_ptr(), token, 0) }
    }

    /// The chain as `common_sampler_print` shows it, without its `logits` head and in
    /// [`nucleus_sampler::Chain::describe`]'s format: `?penalties -> top-k -> dist`.
    pub fn describe(&self) -> String {
        let mut buf = vec![0 as c_char; 1024];
        // SAFETY: `buf` has `buf.len()` bytes; the shim NUL-terminates within them.
        let s = unsafe {
            nucleus_parity_common_print(self.ptr.as_ptr(), buf.as_mut_ptr(), buf.len());
            CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
        };
        s.split("->").skip(1).map(str::trim).collect::<Vec<_>>().join(" -> ")
    }
}

/// An owned `llama_model` loaded through `llama-cpp-sys-2` (CPU, memory-mapped).
pub struct RawModel {
    ptr: NonNull<sys::llama_model>,
}

// SAFETY: a loaded llama_model is immutable and llama.cpp documents it as shareable between
// contexts on different threads.
unsafe impl Send for RawModel {}
// SAFETY: see above; no method mutates the model.
unsafe impl Sync for RawModel {}

impl Drop for RawModel {
    fn drop(&mut self) {
        // SAFETY: we own the pointer; contexts borrow `self`, so none outlives it.
        unsafe { sys::llama_model_free(self.ptr.as_ptr()) }
    }
}

impl RawModel {
    /// Loads the GGUF at `path` (no GPU layers).
    pub fn load(path: &Path) -> Result<Self, String> {
        static INIT: std::sync::Once = std::sync::Once::new();
        // SAFETY: llama_backend_init only sets up process-wide tables; calling it again after
        // another crate did is harmless.
        INIT.call_once(|| unsafe { sys::llama_backend_init() });
        let c = CString::new(path.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: default params are plain values; `c` outlives the call.
        let raw = unsafe {
            let mut params = sys::llama_model_default_params();
            params.n_gpu_layers = 0;
            sys::llama_model_load_from_file(c.as_ptr(), params)
        };
        NonNull::new(raw)
            .map(|ptr| RawModel { ptr })
            .ok_or_else(|| format!("llama.cpp could not load {}", path.display()))
    }

    /// The vocabulary size.
    pub fn n_vocab(&self) -> usize {
        // SAFETY: the vocab pointer lives as long as the model.
        unsafe { sys::llama_vocab_n_tokens(sys::llama_model_get_vocab(self.ptr.as_ptr())).max(0) as usize }
    }
}

/// An owned one-sequence `llama_context` over a [`RawModel`].
pub struct RawContext<'m> {
    ptr: NonNull<sys::llama_context>,
    n_vocab: usize,
    /// Tokens in the last decode.
    n_tokens: usize,
    /// Whether the last decode kept logits for every position (else only the last).
    all_logits: bool,
    _model: std::marker::PhantomData<&'m RawModel>,
}

impl Drop for RawContext<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the pointer.
        unsafe { sys::llama_free(self.ptr.as_ptr()) }
    }
}

impl<'m> RawContext<'m> {
    /// A context of `n_ctx` tokens (one batch of up to `n_ctx`), `threads` threads.
    pub fn new(model: &'m RawModel, n_ctx: usize, threads: usize) -> Result<Self, String> {
        let n = u32::try_from(n_ctx).map_err(|e| e.to_string())?;
        // SAFETY: default params are plain values; the model is live and outlives the context
        // (the `'m` borrow).
        let raw = unsafe {
            let mut params = sys::llama_context_default_params();
            params.n_ctx = n;
            params.n_batch = n;
            params.n_ubatch = n;
            params.n_seq_max = 1;
            params.n_threads = threads as i32;
            params.n_threads_batch = threads as i32;
            params.no_perf = true;
            // As the runtime's contexts (`nucleus_runtime::LlamaCppContext`): flash attention
            // off, so a token's logits do not depend on how the tokens were batched.
            params.flash_attn_type = sys::LLAMA_FLASH_ATTN_TYPE_DISABLED;
            sys::llama_init_from_model(model.ptr.as_ptr(), params)
        };
        let ptr = NonNull::new(raw).ok_or("llama.cpp could not create a context")?;
        Ok(RawContext {
            ptr,
            n_vocab: model.n_vocab(),
            n_tokens: 0,
            all_logits: false,
            _model: std::marker::PhantomData,
        })
    }

    /// Decodes `tokens` at positions `0..` with logits kept for every position; afterwards
    /// output `i` is the next-token distribution after `tokens[..=i]`.
    pub fn decode_all(&mut self, tokens: &[i32]) -> Result<(), String> {
        self.decode_at(tokens, 0, true)
    }

    /// Decodes `tokens` at positions `start..` (after the `start` tokens already in the
    /// cache). With `all`, logits are kept for every position (output `i` is the next-token
    /// distribution after `tokens[i]`); otherwise only for the last, as llama.cpp's generation
    /// loops ask (a different number of output rows can change the output matmul's kernel).
    pub fn decode_at(&mut self, tokens: &[i32], start: usize, all: bool) -> Result<(), String> {
        if tokens.is_empty() {
            return Err("nothing to decode".into());
        }
        let n = i32::try_from(tokens.len()).map_err(|e| e.to_string())?;
        let start = i32::try_from(start).map_err(|e| e.to_string())?;
        // SAFETY: llama_batch_init allocates room for `n` tokens with one sequence id each;
        // we write exactly `n` entries of each array, then free the batch.
        unsafe {
            let mut batch = sys::llama_batch_init(n, 0, 1);
            for (i, &t) in tokens.iter().enumerate() {
                *batch.token.add(i) = t;
                *batch.pos.add(i) = start + i as i32;
                *batch.n_seq_id.add(i) = 1;
                *(*batch.seq_id.add(i)).add(0) = 0;
                *batch.logits.add(i) = (all || i + 1 == tokens.len()) as i8;
            }
            batch.n_tokens = n;
            let rc = sys::llama_decode(self.ptr.as_ptr(), batch);
            sys::llama_batch_free(batch);
            if rc != 0 {
                return Err(format!("llama_decode returned {rc}"));
            }
        }
        self.n_tokens = tokens.len();
        self.all_logits = all;
        Ok(())
    }

    /// Whether batch position `i` of the last decode has logits.
    fn has_logits(&self, i: usize) -> bool {
        i < self.n_tokens && (self.all_logits || i + 1 == self.n_tokens)
    }

    /// The logits at batch position `i` of the last decode (which must have kept them).
    pub fn logits(&self, i: usize) -> &[f32] {
        assert!(self.has_logits(i), "no logits at position {i} of the last decode");
        // SAFETY: position `i` has logits, so llama.cpp returns a row of n_vocab floats that stays
        // valid until the next decode, which needs `&mut self`.
        unsafe { std::slice::from_raw_parts(sys::llama_get_logits_ith(self.ptr.as_ptr(), i as i32), self.n_vocab) }
    }
}
