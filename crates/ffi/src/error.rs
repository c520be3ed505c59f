//! Errors across the C boundary: the status codes every entry point returns, the thread-local
//! text behind `nucleus_last_error`, and [`guard`], which runs an entry point with panics caught
//! so that no unwind ever reaches C.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Success.
pub const NUCLEUS_OK: i32 = 0;
/// A required pointer argument was NULL.
pub const NUCLEUS_ERR_NULL: i32 = -1;
/// A length or size argument does not match the object (e.g. `n_logits != n_vocab`).
pub const NUCLEUS_ERR_SIZE: i32 = -2;
/// An argument has a bad value: malformed JSON, an unknown field, a token outside the
/// vocabulary, a handle of the wrong kind.
pub const NUCLEUS_ERR_INVALID: i32 = -3;
/// Sampling failed: a NaN or +inf logit, or every candidate banned.
pub const NUCLEUS_ERR_SAMPLE: i32 = -4;
/// A grammar or token trie refused the token (the object's state is unchanged).
pub const NUCLEUS_ERR_REJECTED: i32 = -5;
/// An internal error (a caught panic); the object may be in an unspecified state and should be
/// freed.
pub const NUCLEUS_ERR_INTERNAL: i32 = -6;
/// A `nucleus_llm` handle is busy: a `nucleus_llm_generate` call is running on it (another
/// thread, or the callback calling back into the handle).
pub const NUCLEUS_ERR_BUSY: i32 = -7;
/// The model failed: it could not be found, downloaded or loaded, its context could not be
/// created, or a forward pass failed.
pub const NUCLEUS_ERR_MODEL: i32 = -8;

/// An error on its way to C: a status code and the text `nucleus_last_error` will return.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) code: i32,
    pub(crate) message: String,
}

/// What every fallible step inside an entry point returns.
pub(crate) type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        Error { code, message: message.into() }
    }

    pub(crate) fn null(arg: &str) -> Self {
        Error::new(NUCLEUS_ERR_NULL, format!("`{arg}` is NULL"))
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::new(NUCLEUS_ERR_INVALID, message)
    }

    pub(crate) fn size(message: impl Into<String>) -> Self {
        Error::new(NUCLEUS_ERR_SIZE, message)
    }
}

impl From<::nucleus_grammar::BitmaskSizeError> for Error {
    fn from(e: ::nucleus_grammar::BitmaskSizeError) -> Self {
        Error::size(e.to_string())
    }
}

thread_local! {
    /// The last failure's message on this thread (empty after a successful call).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // Interior NULs would cut the C string short; they never carry meaning in a message.
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

fn clear_last_error() {
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        if !e.as_bytes().is_empty() {
            *e = CString::default();
        }
    });
}

/// The pointer `nucleus_last_error` hands out: the thread's message, valid until the next call
/// into the library on this thread (the next call replaces or clears it).
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The message a panic payload carries, if it is text.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "unknown panic"
    }
}

/// Runs one entry point: clears the thread's last error, runs `f` with panics caught, and on
/// failure records the message and returns `on_error(code)` (the code itself for status
/// returns, NULL for constructors).
pub(crate) fn guard<T>(on_error: impl FnOnce(i32) -> T, f: impl FnOnce() -> Result<T>) -> T {
    clear_last_error();
    // AssertUnwindSafe: after a panic the caller is told the object's state is unspecified
    // (NUCLEUS_ERR_INTERNAL) and should free it; nothing observes a half-updated value silently.
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            // A callback may have called into the library meanwhile (nucleus_llm_generate's
            // on_token), leaving its own message: this call succeeded.
            clear_last_error();
            v
        }
        Ok(Err(e)) => {
            set_last_error(&e.message);
            on_error(e.code)
        }
        Err(payload) => {
            set_last_error(&format!("internal error (caught panic): {}", panic_message(payload.as_ref())));
            on_error(NUCLEUS_ERR_INTERNAL)
        }
    }
}

/// [`guard`] for entry points returning a status code (or a non-negative value).
pub(crate) fn status(f: impl FnOnce() -> Result<i32>) -> i32 {
    guard(|code| code, f)
}

/// [`guard`] for constructors: NULL on failure.
pub(crate) fn constructor<T>(f: impl FnOnce() -> Result<*mut T>) -> *mut T {
    guard(|_| std::ptr::null_mut(), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: the pointer is this thread's live C string.
        unsafe { std::ffi::CStr::from_ptr(last_error_ptr()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn panics_become_codes_and_success_clears_the_message() {
        let code = status(|| -> Result<i32> { panic!("boom") });
        assert_eq!(code, NUCLEUS_ERR_INTERNAL);
        assert!(last().contains("boom"), "{}", last());
        assert_eq!(status(|| Ok(5)), 5);
        assert_eq!(last(), "");
        let p: *mut u8 = constructor(|| Err(Error::invalid("bad\0value")));
        assert!(p.is_null());
        assert_eq!(last(), "bad value");
    }
}
