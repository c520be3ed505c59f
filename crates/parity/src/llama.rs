//! A small safe wrapper over llama.cpp's sampler API, for running the reference samplers on
//! plain logits with no model loaded.
//!
//! [`LlamaSampler`] owns one `llama_sampler` (a single sampler or a chain) and frees it on
//! drop; [`LlamaCandidates`] owns the `llama_token_data` buffer and the
//! `llama_token_data_array` that points into it, which is what every llama.cpp caller builds
//! for each token.

use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

extern "C" {
    /// Defined in `shim/dry_shim.cpp`: calls llama.cpp's C++-only
    /// `llama_sampler_init_dry_testing` with breakers given as token ids (`flat` holds them
    /// back to back, `lens[i]` is the length of breaker `i`). Returns null on a C++ exception.
    fn nucleus_parity_init_dry_testing(
        dry_multiplier: f32,
        dry_base: f32,
        dry_allowed_length: i32,
        dry_penalty_last_n: i32,
        flat: *const i32,
        lens: *const usize,
        n_breakers: usize,
    ) -> *mut sys::llama_sampler;
}

/// An owned llama.cpp sampler (or chain of samplers).
///
/// Not `Clone`; `Send` because a llama.cpp sampler object has no thread affinity (each one is
/// only used from one thread at a time here).
pub struct LlamaSampler {
    ptr: NonNull<sys::llama_sampler>,
}

// SAFETY: a llama_sampler owns plain heap state (no thread-local or shared mutable state for
// the CPU samplers wrapped here); moving it between threads is fine as long as it is not
// used concurrently, which `&mut self` on every operation guarantees.
unsafe impl Send for LlamaSampler {}

impl std::fmt::Debug for LlamaSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaSampler").field("name", &self.name()).finish()
    }
}

impl Drop for LlamaSampler {
    fn drop(&mut self) {
        // SAFETY: we own the pointer; chains free their members.
        unsafe { sys::llama_sampler_free(self.ptr.as_ptr()) }
    }
}

unsafe extern "C" fn discard_log(
    _level: sys::ggml_log_level,
    _text: *const std::os::raw::c_char,
    _user_data: *mut std::os::raw::c_void,
) {
}

/// Silences llama.cpp's logging once per process (the DRY test constructor warns on every
/// empty breaker list, which would flood the test output).
pub fn silence_llama_log() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: installs a callback that ignores its arguments.
    ONCE.call_once(|| unsafe { sys::llama_log_set(Some(discard_log), std::ptr::null_mut()) });
}

impl LlamaSampler {
    fn from_raw(p: *mut sys::llama_sampler, what: &str) -> Self {
        silence_llama_log();
        LlamaSampler { ptr: NonNull::new(p).unwrap_or_else(|| panic!("llama.cpp returned null for {what}")) }
    }

    /// An empty chain (`llama_sampler_chain_init` with default params, perf timing off).
    pub fn chain() -> Self {
        // SAFETY: plain constructor.
        unsafe {
            let mut params = sys::llama_sampler_chain_default_params();
            params.no_perf = true;
            Self::from_raw(sys::llama_sampler_chain_init(params), "chain")
        }
    }

    /// Appends `s` to this chain; the chain takes ownership. Panics if `self` is not a chain.
    pub fn push(&mut self, s: LlamaSampler) {
        // SAFETY: `llama_sampler_chain_get(x, -1)` returns x only when x is a chain.
        unsafe {
            assert!(
                !sys::llama_sampler_chain_get(self.ptr.as_ptr(), -1).is_null(),
                "push on a sampler that is not a chain"
            );
            let p = s.ptr.as_ptr();
            std::mem::forget(s);
            sys::llama_sampler_chain_add(self.ptr.as_ptr(), p);
        }
    }

    /// The sampler's name as llama.cpp reports it (`top-k`, `?top-p`, `chain`, ...).
    pub fn name(&self) -> String {
        // SAFETY: returns a NUL-terminated string owned by the sampler.
        unsafe {
            let c = sys::llama_sampler_name(self.ptr.as_ptr());
            if c.is_null() {
                return String::new();
            }
            std::ffi::CStr::from_ptr(c).to_string_lossy().into_owned()
        }
    }

    /// `llama_sampler_apply` on `cands`.
    pub fn apply(&mut self, cands: &mut LlamaCandidates) {
        // SAFETY: `arr.data` points into `cands.buf` with `arr.size` valid entries; samplers
        // only shrink the view or move its start forward inside the buffer.
        unsafe { sys::llama_sampler_apply(self.ptr.as_ptr(), &mut cands.arr) }
        cands.check_view();
    }

    /// `llama_sampler_accept`.
    pub fn accept(&mut self, token: i32) {
        // SAFETY: plain call.
        unsafe { sys::llama_sampler_accept(self.ptr.as_ptr(), token) }
    }

    /// `llama_sampler_clone`: a deep copy with llama.cpp's own notion of which state is
    /// copied (e.g. adaptive-p's clone starts a fresh random stream from its seed).
    pub fn duplicate(&self) -> LlamaSampler {
        Self::from_raw(unsafe { sys::llama_sampler_clone(self.ptr.as_ptr()) }, "clone")
    }

    /// `llama_sampler_reset`.
    pub fn reset(&mut self) {
        // SAFETY: plain call.
        unsafe { sys::llama_sampler_reset(self.ptr.as_ptr()) }
    }

    /// `llama_sampler_init_greedy`.
    pub fn greedy() -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_greedy() }, "greedy")
    }

    /// `llama_sampler_init_dist`.
    pub fn dist(seed: u32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_dist(seed) }, "dist")
    }

    /// `llama_sampler_init_top_k`.
    pub fn top_k(k: i32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_top_k(k) }, "top-k")
    }

    /// `llama_sampler_init_top_p`.
    pub fn top_p(p: f32, min_keep: usize) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_top_p(p, min_keep) }, "top-p")
    }

    /// `llama_sampler_init_min_p`.
    pub fn min_p(p: f32, min_keep: usize) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_min_p(p, min_keep) }, "min-p")
    }

    /// `llama_sampler_init_typical`.
    pub fn typical(p: f32, min_keep: usize) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_typical(p, min_keep) }, "typical")
    }

    /// `llama_sampler_init_temp`.
    pub fn temp(t: f32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_temp(t) }, "temp")
    }

    /// `llama_sampler_init_temp_ext`.
    pub fn temp_ext(t: f32, delta: f32, exponent: f32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_temp_ext(t, delta, exponent) }, "temp-ext")
    }

    /// `llama_sampler_init_xtc`.
    pub fn xtc(probability: f32, threshold: f32, min_keep: usize, seed: u32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_xtc(probability, threshold, min_keep, seed) }, "xtc")
    }

    /// `llama_sampler_init_top_n_sigma`.
    pub fn top_n_sigma(n: f32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_top_n_sigma(n) }, "top-n-sigma")
    }

    /// `llama_sampler_init_mirostat`.
    pub fn mirostat(n_vocab: i32, seed: u32, tau: f32, eta: f32, m: i32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_mirostat(n_vocab, seed, tau, eta, m) }, "mirostat")
    }

    /// `llama_sampler_init_mirostat_v2`.
    pub fn mirostat_v2(seed: u32, tau: f32, eta: f32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_mirostat_v2(seed, tau, eta) }, "mirostat-v2")
    }

    /// `llama_sampler_init_penalties`.
    pub fn penalties(n_vocab: i32, last_n: i32, repeat: f32, freq: f32, present: f32) -> Self {
        Self::from_raw(
            unsafe { sys::llama_sampler_init_penalties(n_vocab, last_n, repeat, freq, present) },
            "penalties",
        )
    }

    /// `llama_sampler_init_logit_bias` (an empty list gives llama.cpp's `?logit-bias`).
    pub fn logit_bias(n_vocab: i32, biases: &[(i32, f32)]) -> Self {
        let lb: Vec<sys::llama_logit_bias> =
            biases.iter().map(|&(token, bias)| sys::llama_logit_bias { token, bias }).collect();
        Self::from_raw(
            unsafe { sys::llama_sampler_init_logit_bias(n_vocab, lb.len() as i32, lb.as_ptr()) },
            "logit-bias",
        )
    }

    /// `llama_sampler_init_adaptive_p`.
    pub fn adaptive_p(target: f32, decay: f32, seed: u32) -> Self {
        Self::from_raw(unsafe { sys::llama_sampler_init_adaptive_p(target, decay, seed) }, "adaptive-p")
    }

    /// DRY with sequence breakers given as token sequences.
    ///
    /// When DRY is enabled this calls llama.cpp's test constructor
    /// `llama_sampler_init_dry_testing` (through the C++ shim). When it is disabled
    /// (`multiplier == 0`, `base < 1` or `last_n <= 0`) that constructor would write into the
    /// wrong object, so the public `llama_sampler_init_dry` is called instead: it returns the
    /// no-op `?dry` before it ever looks at the (null) vocabulary.
    pub fn dry(multiplier: f32, base: f32, allowed_length: i32, last_n: i32, breakers: &[Vec<i32>]) -> Self {
        let enabled = multiplier != 0.0 && base >= 1.0 && last_n.max(0) != 0;
        if !enabled {
            return Self::from_raw(
                unsafe {
                    sys::llama_sampler_init_dry(
                        std::ptr::null(),
                        multiplier,
                        base,
                        allowed_length,
                        last_n,
                        std::ptr::null_mut(),
                        0,
                    )
                },
                "?dry",
            );
        }
        let flat: Vec<i32> = breakers.iter().flatten().copied().collect();
        let lens: Vec<usize> = breakers.iter().map(|b| b.len()).collect();
        Self::from_raw(
            unsafe {
                nucleus_parity_init_dry_testing(
                    multiplier,
                    base,
                    allowed_length,
                    last_n,
                    flat.as_ptr(),
                    lens.as_ptr(),
                    lens.len(),
                )
            },
            "dry",
        )
    }
}

/// llama.cpp's candidate array: an owned `llama_token_data` buffer plus the
/// `llama_token_data_array` view that samplers edit (they may shrink it or, like XTC, move
/// its start forward).
pub struct LlamaCandidates {
    buf: Vec<sys::llama_token_data>,
    arr: sys::llama_token_data_array,
}

// SAFETY: `arr.data` only ever points into `buf`, which this struct owns.
unsafe impl Send for LlamaCandidates {}

impl Default for LlamaCandidates {
    fn default() -> Self {
        Self::new()
    }
}

impl LlamaCandidates {
    /// An empty array.
    pub fn new() -> Self {
        let mut buf = Vec::new();
        let arr = sys::llama_token_data_array { data: buf.as_mut_ptr(), size: 0, selected: -1, sorted: false };
        LlamaCandidates { buf, arr }
    }

    /// Refills with one entry per id (`{id, logit, p: 0}`), unsorted, `selected = -1`: the
    /// array `llama_sampler_sample` builds from a row of logits.
    pub fn fill(&mut self, logits: &[f32]) {
        self.buf.clear();
        self.buf.extend(logits.iter().enumerate().map(|(i, &logit)| sys::llama_token_data {
            id: i as i32,
            logit,
            p: 0.0,
        }));
        self.arr = sys::llama_token_data_array {
            data: self.buf.as_mut_ptr(),
            size: self.buf.len(),
            selected: -1,
            sorted: false,
        };
    }

    /// Refills with the given `(id, logit)` entries in this order (`p = 0`), unsorted,
    /// `selected = -1` (like candidates handed over by a backend sampler).
    pub fn fill_entries(&mut self, entries: &[(i32, f32)]) {
        self.buf.clear();
        self.buf.extend(entries.iter().map(|&(id, logit)| sys::llama_token_data { id, logit, p: 0.0 }));
        self.arr = sys::llama_token_data_array {
            data: self.buf.as_mut_ptr(),
            size: self.buf.len(),
            selected: -1,
            sorted: false,
        };
    }

    /// Offset of the view's start in the buffer (non-zero after XTC).
    fn offset(&self) -> usize {
        // SAFETY: both pointers are into (or one past) the same allocation.
        let off = unsafe { self.arr.data.offset_from(self.buf.as_ptr()) };
        assert!(off >= 0, "llama.cpp moved the candidate view before its buffer");
        off as usize
    }

    fn check_view(&self) {
        let off = self.offset();
        assert!(
            off + self.arr.size <= self.buf.len(),
            "llama.cpp left a candidate view outside its buffer (offset {off}, size {}, buffer {})",
            self.arr.size,
            self.buf.len()
        );
    }

    /// The current view (`data[0..size]`).
    pub fn as_slice(&self) -> &[sys::llama_token_data] {
        let off = self.offset();
        &self.buf[off..off + self.arr.size]
    }

    /// Number of candidates in the view.
    pub fn len(&self) -> usize {
        self.arr.size
    }

    /// True when the view is empty.
    pub fn is_empty(&self) -> bool {
        self.arr.size == 0
    }

    /// Index (into the view) of the selected candidate, if any (`selected >= 0`).
    pub fn selected(&self) -> Option<usize> {
        (self.arr.selected >= 0).then_some(self.arr.selected as usize)
    }

    /// The raw `selected` field (may be `-1`, or even out of range if a sampler misbehaves).
    pub fn selected_raw(&self) -> i64 {
        self.arr.selected
    }

    /// The `sorted` flag.
    pub fn is_sorted(&self) -> bool {
        self.arr.sorted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_picks_first_max() {
        let mut c = LlamaCandidates::new();
        c.fill(&[1.0, 3.0, 2.0, 3.0]);
        let mut ch = LlamaSampler::chain();
        ch.push(LlamaSampler::top_k(3));
        ch.push(LlamaSampler::greedy());
        ch.apply(&mut c);
        assert_eq!(c.len(), 3);
        assert_eq!(c.as_slice()[c.selected().unwrap()].logit, 3.0);
    }

    #[test]
    fn dry_testing_constructor_links_and_penalises() {
        let mut s = LlamaSampler::dry(1.0, 2.0, 1, 16, &[vec![9]]);
        assert_eq!(s.name(), "dry");
        for t in [1, 2, 1] {
            s.accept(t);
        }
        let mut c = LlamaCandidates::new();
        c.fill(&[0.0; 4]);
        s.apply(&mut c);
        // "1 2 1": emitting 2 would extend the repeat "1 2" -> penalised.
        assert!(c.as_slice()[2].logit < 0.0);
        assert_eq!(c.as_slice()[3].logit, 0.0);
        let off = LlamaSampler::dry(0.0, 2.0, 1, 16, &[]);
        assert_eq!(off.name(), "?dry");
    }
}
