//! Checked views of C arguments: every pointer is tested for NULL (and alignment) and every
//! length for overflow before a slice or string is made from it.

use std::ffi::{c_char, CStr};

use crate::error::{Error, Result};

fn check_ptr<T>(p: *const T, n: usize, arg: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::null(arg));
    }
    if !p.is_aligned() {
        return Err(Error::invalid(format!("`{arg}` is misaligned for its element type")));
    }
    if n.checked_mul(std::mem::size_of::<T>()).is_none_or(|b| b > isize::MAX as usize) {
        return Err(Error::size(format!("`{arg}`: length {n} is too large")));
    }
    Ok(())
}

/// `n` elements at `p`.
///
/// # Safety
/// If `p` is not NULL it must point to `n` readable, initialized elements that stay unchanged
/// while the slice lives.
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize, arg: &str) -> Result<&'a [T]> {
    check_ptr(p, n, arg)?;
    // SAFETY: non-NULL, aligned, size fits isize; readability is the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `n` writable elements at `p`.
///
/// # Safety
/// If `p` is not NULL it must point to `n` writable elements not otherwise referenced.
pub(crate) unsafe fn slice_mut<'a, T>(p: *mut T, n: usize, arg: &str) -> Result<&'a mut [T]> {
    check_ptr(p, n, arg)?;
    // SAFETY: non-NULL, aligned, size fits isize; writability is the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
/// If `p` is not NULL it must point to a NUL-terminated string.
pub(crate) unsafe fn text<'a>(p: *const c_char, arg: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::null(arg));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|e| Error::invalid(format!("`{arg}` is not valid UTF-8: {e}")))
}

/// `len` bytes of UTF-8 text at `p` (no terminator needed).
///
/// # Safety
/// As [`slice`].
pub(crate) unsafe fn text_len<'a>(p: *const c_char, len: usize, arg: &str) -> Result<&'a str> {
    // SAFETY: forwarded contract.
    let bytes = unsafe { slice(p as *const u8, len, arg)? };
    std::str::from_utf8(bytes).map_err(|e| Error::invalid(format!("`{arg}` is not valid UTF-8: {e}")))
}
