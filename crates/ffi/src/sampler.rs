//! The standalone sampler object (`nucleus_sampler`): llama.cpp's common sampler chain built
//! from `params_json`, fed one logits row per step, with optional raw log-probabilities and
//! entropy of the last step.

use std::ffi::c_char;

use ::nucleus_sampler::params_map::Vocabulary;
use ::nucleus_sampler::probs::{top_n_raw, RawDistribution, TokenProb};
use ::nucleus_sampler::{Logits, SampleError, Token, TokenSampler};
use half::slice::HalfBitsSliceExt;
use half::{bf16, f16};

use crate::args::{slice, slice_mut, text};
use crate::error::{constructor, guard, status, Error, Result, NUCLEUS_ERR_SAMPLE, NUCLEUS_OK};
use crate::handle::{Handle, Kind};
use crate::params;

/// A sampler chain for one sequence, with the last step's probabilities when asked for.
#[derive(Clone)]
pub struct SamplerState {
    sampler: TokenSampler,
    n_vocab: usize,
    /// How many top alternatives to record per step (0: none, no extra work).
    n_probs: usize,
    probs: Vec<TokenProb>,
    /// Entropy (nats) of the raw softmax at the last step, when `n_probs > 0`.
    entropy: Option<f64>,
}

impl Kind for SamplerState {
    const MAGIC: u64 = 0x4e55_434c_5341_4d50; // "NUCLSAMP"
    const NAME: &'static str = "nucleus_sampler";
}

/// The C type `nucleus_sampler` (opaque to C).
/// cbindgen:ignore
#[allow(non_camel_case_types)]
pub type nucleus_sampler = Handle<SamplerState>;

impl SamplerState {
    fn new(n_vocab: i32, json: &str) -> Result<Self> {
        if n_vocab <= 0 {
            return Err(Error::size(format!("`n_vocab` must be > 0, got {n_vocab}")));
        }
        let n = n_vocab as usize;
        // No model vocabulary: DRY with string breakers is refused (see `Vocabulary::Ids`).
        let p = params::parse(json, Vocabulary::Ids(n)).map_err(Error::invalid)?;
        let chain = p.build(n, None).map_err(|e| Error::invalid(e.to_string()))?;
        Ok(SamplerState { sampler: TokenSampler::new(chain), n_vocab: n, n_probs: 0, probs: Vec::new(), entropy: None })
    }

    fn sample(&mut self, logits: Logits<'_>) -> Result<i32> {
        if logits.len() != self.n_vocab {
            return Err(Error::size(format!(
                "`n_logits` is {} but the sampler's n_vocab is {}",
                logits.len(),
                self.n_vocab
            )));
        }
        self.probs.clear();
        self.entropy = None;
        let token = self.sampler.apply(logits).map_err(sample_error)?;
        if self.n_probs > 0 {
            let dist = RawDistribution::of(logits);
            top_n_raw(logits, &dist, self.n_probs, &mut self.probs);
            self.entropy = Some(dist.entropy);
        }
        self.sampler.accept(token);
        Ok(token)
    }

    fn check_token(&self, token: i32) -> Result<Token> {
        if token < 0 || token as usize >= self.n_vocab {
            return Err(Error::invalid(format!("token {token} is outside the vocabulary [0, {})", self.n_vocab)));
        }
        Ok(token)
    }
}

fn sample_error(e: SampleError) -> Error {
    Error::new(NUCLEUS_ERR_SAMPLE, e.to_string())
}

/// Creates a sampler for a vocabulary of `n_vocab` tokens with llama.cpp's common sampler chain.
///
/// `params_json` is a JSON object with llama.cpp's `common_params_sampling` field names: `seed`
/// (-1 = random), `temp`, `top_k`, `top_p`, `min_p`, `typ_p`, `xtc_probability`, `xtc_threshold`,
/// `penalty_last_n`, `penalty_repeat`, `penalty_freq`, `penalty_present`, `dry_multiplier`,
/// `dry_base`, `dry_allowed_length`, `dry_penalty_last_n`, `dry_sequence_breakers` (array of
/// strings), `mirostat` (0, 1, 2), `mirostat_tau`, `mirostat_eta`, `top_n_sigma`,
/// `dynatemp_range`, `dynatemp_exponent`, `min_keep`, `samplers` (a string of `--sampling-seq`
/// codes such as `"edskypmxt"`, or an array of names), `logit_bias` (array of `[token, bias]`; a
/// bias of `"-inf"` or `false` bans the token), `adaptive_target`, `adaptive_decay`, `ignore_eos`.
/// Absent fields take llama.cpp's defaults (`"{}"` is the default chain). An unknown field or a
/// bad value is an error naming the field. This sampler has no model vocabulary, so DRY with
/// sequence breakers and `ignore_eos` are refused.
///
/// Returns NULL on error; the reason is in `nucleus_last_error()`. Free with
/// `nucleus_sampler_free`.
///
/// # Safety
/// `params_json` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_new(n_vocab: i32, params_json: *const c_char) -> *mut nucleus_sampler {
    constructor(|| {
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let json = unsafe { text(params_json, "params_json")? };
        Ok(Handle::into_raw(SamplerState::new(n_vocab, json)?))
    })
}

/// Applies the chain to one row of `f32` logits and accepts the chosen token, like
/// `llama_sampler_sample`. Returns the token (>= 0), or a negative `NUCLEUS_ERR_*` code:
/// `n_logits` must equal `n_vocab`; NaN or +inf logits, a NULL pointer, or every token banned
/// are errors (the sampler's state is then unchanged). `-inf` bans a token.
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`; `logits` must be NULL or point to `n_logits`
/// floats.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_sample(s: *mut nucleus_sampler, logits: *const f32, n_logits: usize) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live sampler, used by one thread at a time.
        let s = unsafe { Handle::get_mut(s, "s")? };
        // SAFETY: the caller passes NULL or `n_logits` floats.
        let row = unsafe { slice(logits, n_logits, "logits")? };
        s.sample(Logits::F32(row))
    })
}

/// As `nucleus_sampler_sample`, for IEEE half-precision logits (`uint16_t` bit patterns),
/// widened to `f32` before any sampler runs.
///
/// # Safety
/// As `nucleus_sampler_sample`, with `n_logits` `uint16_t` values.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_sample_f16(
    s: *mut nucleus_sampler,
    logits: *const u16,
    n_logits: usize,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live sampler, used by one thread at a time.
        let s = unsafe { Handle::get_mut(s, "s")? };
        // SAFETY: the caller passes NULL or `n_logits` values.
        let bits = unsafe { slice(logits, n_logits, "logits")? };
        s.sample(Logits::F16(bits.reinterpret_cast::<f16>()))
    })
}

/// As `nucleus_sampler_sample`, for bfloat16 logits (`uint16_t` bit patterns).
///
/// # Safety
/// As `nucleus_sampler_sample`, with `n_logits` `uint16_t` values.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_sample_bf16(
    s: *mut nucleus_sampler,
    logits: *const u16,
    n_logits: usize,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live sampler, used by one thread at a time.
        let s = unsafe { Handle::get_mut(s, "s")? };
        // SAFETY: the caller passes NULL or `n_logits` values.
        let bits = unsafe { slice(logits, n_logits, "logits")? };
        s.sample(Logits::Bf16(bits.reinterpret_cast::<bf16>()))
    })
}

/// Feeds a committed token into the chain's history (a prompt token, or one chosen elsewhere),
/// like `llama_sampler_accept`. Returns 0, or a negative code (NULL sampler, token outside
/// `[0, n_vocab)`).
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_accept(s: *mut nucleus_sampler, token: i32) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live sampler, used by one thread at a time.
        let s = unsafe { Handle::get_mut(s, "s")? };
        let t = s.check_token(token)?;
        s.sampler.accept(t);
        Ok(NUCLEUS_OK)
    })
}

/// Clears the history (penalties, DRY, mirostat state) and restarts the random streams from
/// their seeds. A NULL sampler is ignored (and reported by `nucleus_last_error()`).
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_reset(s: *mut nucleus_sampler) {
    guard(
        |_| (),
        || {
            // SAFETY: the caller passes NULL or a live sampler, used by one thread at a time.
            let s = unsafe { Handle::get_mut(s, "s")? };
            s.sampler.reset();
            s.probs.clear();
            s.entropy = None;
            Ok(())
        },
    )
}

/// A copy of the sampler with the same history and random state: both then produce the same
/// tokens from the same logits. NULL on error. Free with `nucleus_sampler_free`.
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_clone(s: *const nucleus_sampler) -> *mut nucleus_sampler {
    constructor(|| {
        // SAFETY: the caller passes NULL or a live sampler not being mutated meanwhile.
        let s = unsafe { Handle::get(s, "s")? };
        Ok(Handle::into_raw(s.clone()))
    })
}

/// Frees a sampler. NULL is a no-op.
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_free(s: *mut nucleus_sampler) {
    // SAFETY: the caller passes NULL or a live sampler it gives up.
    guard(|_| (), || unsafe { Handle::free(s) })
}

/// The sampler's vocabulary size, or a negative code for a NULL sampler.
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_n_vocab(s: *const nucleus_sampler) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live sampler.
        let s = unsafe { Handle::get(s, "s")? };
        Ok(s.n_vocab as i32)
    })
}

/// Asks every later `sample` call to record the `n` most likely tokens of the model's own
/// distribution (a softmax of the raw logits, llama-server's `n_probs`) and its entropy; 0 (the
/// default) turns this off and costs nothing. Returns 0 or a negative code.
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_set_n_probs(s: *mut nucleus_sampler, n: usize) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live sampler, used by one thread at a time.
        let s = unsafe { Handle::get_mut(s, "s")? };
        s.n_probs = n.min(s.n_vocab);
        Ok(NUCLEUS_OK)
    })
}

/// The last step's top tokens (see `nucleus_sampler_set_n_probs`), most likely first (ties:
/// lower id first): writes up to `cap` ids and natural-log probabilities and returns how many
/// were written (0 before the first sample or with `n_probs` 0), or a negative code.
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`; `ids` and `logprobs` must be NULL or point to
/// `cap` writable elements each.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_last_probs(
    s: *const nucleus_sampler,
    ids: *mut i32,
    logprobs: *mut f32,
    cap: usize,
) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live sampler.
        let s = unsafe { Handle::get(s, "s")? };
        // SAFETY: the caller passes NULL or `cap` writable ints.
        let ids = unsafe { slice_mut(ids, cap, "ids")? };
        // SAFETY: the caller passes NULL or `cap` writable floats.
        let lps = unsafe { slice_mut(logprobs, cap, "logprobs")? };
        let n = s.probs.len().min(cap);
        for (i, p) in s.probs[..n].iter().enumerate() {
            ids[i] = p.id;
            lps[i] = p.logprob;
        }
        Ok(n as i32)
    })
}

/// The entropy in nats of the model's own distribution at the last step (when
/// `nucleus_sampler_set_n_probs` is > 0), written to `*out`. Returns 0, or a negative code
/// (NULL pointers; `NUCLEUS_ERR_INVALID` when no step recorded it).
///
/// # Safety
/// `s` must be NULL or a live `nucleus_sampler`; `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nucleus_sampler_last_entropy(s: *const nucleus_sampler, out: *mut f64) -> i32 {
    status(|| {
        // SAFETY: the caller passes NULL or a live sampler.
        let s = unsafe { Handle::get(s, "s")? };
        // SAFETY: the caller passes NULL or one writable double.
        let out = unsafe { slice_mut(out, 1, "out")? };
        let e = s.entropy.ok_or_else(|| {
            Error::invalid("no entropy recorded: call nucleus_sampler_set_n_probs(s, n > 0) before sampling")
        })?;
        out[0] = e;
        Ok(NUCLEUS_OK)
    })
}
