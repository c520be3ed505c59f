//! The process-wide llama.cpp backend, initialised once, and its log: silent unless verbose,
//! with the last warning and error lines of the current thread kept for error messages.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_sys_2::{ggml_log_level, GGML_LOG_LEVEL_CONT, GGML_LOG_LEVEL_WARN};

use crate::error::{Result, RuntimeError};

static BACKEND: OnceLock<Option<LlamaBackend>> = OnceLock::new();
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Lines kept per thread for error messages.
const KEEP: usize = 6;

thread_local! {
    /// (level of the last line, recent warning/error lines) for this thread.
    static RECENT: RefCell<(ggml_log_level, VecDeque<String>)> = const { RefCell::new((0, VecDeque::new())) };
    /// Whether a model loaded on this thread put weights in llama.cpp's repacking buffer type.
    static REPACKED: Cell<bool> = const { Cell::new(false) };
}

/// What llama.cpp logs when a model's weights went into its repacking buffer type (one line
/// per buffer type holding weights, at load). llama-cpp-2 offers no other way to ask.
const REPACK_BUFFER_LINE: &str = "CPU_REPACK model buffer size";

/// Mirror llama.cpp's own log to stderr (off by default: it is chatty).
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// The process's llama.cpp backend, initialised on first use. Exposed for code that drives
/// llama-cpp-2 directly next to the runtime (reference implementations in tests).
pub fn backend() -> Result<&'static LlamaBackend> {
    BACKEND
        .get_or_init(|| {
            // SAFETY: installs a plain function with no user data; llama.cpp calls it from any
            // thread, and it only touches a thread-local buffer and stderr.
            unsafe { llama_cpp_sys_2::llama_log_set(Some(log_callback), std::ptr::null_mut()) };
            keep_matmul_batch_invariant();
            LlamaBackend::init().ok()
        })
        .as_ref()
        .ok_or_else(|| RuntimeError::LoadFailed {
            path: Default::default(),
            detail: "llama.cpp's backend was already initialised by other code in this process".into(),
        })
}

/// The environment variable that switches ggml's tiled K-quant matmul on or off (read once, at
/// the first matrix product of the process).
const TILED_MATMUL_VAR: &str = "GGML_CPU_TILED_MM";

/// Turns off ggml's tiled matmul for K-quants unless the user chose otherwise. It serves only
/// batches of eight or more rows, so a token decoded alone and the same token inside a prefill
/// chunk would get differently rounded logits and K/V (Gemma 3 Q4_K_M: up to 3.7 apart), and no
/// cached prefix could stand in for a fresh prefill. Off, every batch shape takes the same
/// kernels (measured: no clear prefill loss on Gemma 3 270M, within this machine's noise).
fn keep_matmul_batch_invariant() {
    if std::env::var_os(TILED_MATMUL_VAR).is_none() {
        // Runs once, before llama.cpp starts any thread and before the first ggml compute reads
        // the variable; other Rust threads of a host program reading the environment at this
        // very moment are the remaining (documented) risk of set_var.
        std::env::set_var(TILED_MATMUL_VAR, "0");
    }
}

/// Whether ggml's tiled K-quant matmul is off in this process (see
/// [`keep_matmul_batch_invariant`]); a user who sets `GGML_CPU_TILED_MM=1` trades the
/// prompt cache's determinism for its speed, and models then say they are not batch invariant.
pub(crate) fn tiled_matmul_off() -> bool {
    std::env::var_os(TILED_MATMUL_VAR).is_some_and(|v| v.to_str().and_then(|v| v.trim().parse::<i64>().ok()) == Some(0))
}

/// Forgets this thread's recent log lines (call before an operation whose errors you want).
pub(crate) fn clear_recent() {
    let _ = RECENT.try_with(|r| r.borrow_mut().1.clear());
}

/// Forgets whether a model loaded on this thread used repacked weights (call before a load).
pub(crate) fn clear_repacked() {
    let _ = REPACKED.try_with(|r| r.set(false));
}

/// Whether llama.cpp said, since [`clear_repacked`], that it repacked weights on this thread.
pub(crate) fn repacked() -> bool {
    REPACKED.try_with(Cell::get).unwrap_or(true)
}

/// This thread's recent warning and error lines, joined with "; ".
pub(crate) fn take_recent() -> String {
    RECENT
        .try_with(|r| {
            let mut r = r.borrow_mut();
            let v: Vec<String> = r.1.drain(..).collect();
            v.join("; ")
        })
        .unwrap_or_default()
}

unsafe extern "C" fn log_callback(level: ggml_log_level, text: *const c_char, _user: *mut c_void) {
    if text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a NUL-terminated string valid for the call.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    if VERBOSE.load(Ordering::Relaxed) {
        eprint!("{text}");
    }
    if text.contains(REPACK_BUFFER_LINE) {
        let _ = REPACKED.try_with(|r| r.set(true));
    }
    let _ = RECENT.try_with(|r| {
        let Ok(mut r) = r.try_borrow_mut() else { return };
        let level = if level == GGML_LOG_LEVEL_CONT { r.0 } else { level };
        r.0 = level;
        if level < GGML_LOG_LEVEL_WARN {
            return;
        }
        let line = text.trim();
        if line.is_empty() {
            return;
        }
        if r.1.len() == KEEP {
            r.1.pop_front();
        }
        r.1.push_back(line.to_string());
    });
}
