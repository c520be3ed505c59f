//! Opaque handles: every object handed to C is a box whose first field is a tag naming its
//! kind, so a handle of the wrong kind (or one already freed and not yet reused) is reported as
//! an error instead of being read as the wrong type.

use crate::error::{Error, Result};

/// What a handle holds: a tag and the name used in error messages.
pub trait Kind {
    /// A per-kind tag stored in the handle's first 8 bytes.
    const MAGIC: u64;
    /// The C type name (`nucleus_sampler`).
    const NAME: &'static str;
}

/// The tag written over a handle when it is freed.
const FREED: u64 = 0xDEAD_0000_DEAD_0000;

/// The object behind a C handle. `repr(C)` keeps the tag at offset 0 for every kind, so the tag
/// can be read before the kind is known.
#[repr(C)]
pub struct Handle<T> {
    magic: u64,
    pub(crate) value: T,
}

impl<T: Kind> Handle<T> {
    /// Boxes `value` and gives up ownership to the caller.
    pub(crate) fn into_raw(value: T) -> *mut Handle<T> {
        Box::into_raw(Box::new(Handle { magic: T::MAGIC, value }))
    }

    /// Checks `p` (not NULL, aligned, tagged as this kind).
    ///
    /// # Safety
    /// `p` must be NULL or point to at least 8 readable bytes: a handle of any kind from this
    /// library (freed handles are caught while their memory is not reused).
    unsafe fn check(p: *const Handle<T>, arg: &str) -> Result<()> {
        if p.is_null() {
            return Err(Error::null(arg));
        }
        if !p.is_aligned() {
            return Err(Error::invalid(format!("`{arg}` is not a {} handle (misaligned pointer)", T::NAME)));
        }
        // SAFETY: non-NULL, aligned for u64 (Handle<T> is at least 8-aligned), and by the contract
        // of every entry point it points to a handle of this library, whose first field is the u64
        // tag.
        let magic = unsafe { std::ptr::read(p as *const u64) };
        if magic == T::MAGIC {
            Ok(())
        } else if magic == FREED {
            Err(Error::invalid(format!("`{arg}`: this {} was already freed", T::NAME)))
        } else {
            Err(Error::invalid(format!("`{arg}` is not a {} handle", T::NAME)))
        }
    }

    /// The object behind a `const` handle.
    ///
    /// # Safety
    /// As [`Handle::check`]; the object must not be mutated elsewhere while the reference lives.
    pub(crate) unsafe fn get<'a>(p: *const Handle<T>, arg: &str) -> Result<&'a T> {
        // SAFETY: forwarded contract.
        unsafe { Self::check(p, arg)? };
        // SAFETY: checked to be a live handle of this kind.
        Ok(unsafe { &(*p).value })
    }

    /// The object behind a mutable handle.
    ///
    /// # Safety
    /// As [`Handle::check`]; no other reference to the object may be live (the C contract: one
    /// thread at a time per object).
    pub(crate) unsafe fn get_mut<'a>(p: *mut Handle<T>, arg: &str) -> Result<&'a mut T> {
        // SAFETY: forwarded contract.
        unsafe { Self::check(p, arg)? };
        // SAFETY: checked to be a live handle of this kind; exclusivity is the caller's contract.
        Ok(unsafe { &mut (*p).value })
    }

    /// Frees a handle; NULL is a no-op. A pointer that is not a live handle of this kind is
    /// reported and left alone (a leak is better than freeing foreign memory).
    ///
    /// # Safety
    /// As [`Handle::check`]; the handle must not be used afterwards.
    pub(crate) unsafe fn free(p: *mut Handle<T>) -> Result<()> {
        if p.is_null() {
            return Ok(());
        }
        // SAFETY: forwarded contract.
        unsafe { Self::check(p, "handle")? };
        // SAFETY: a live handle created by `into_raw`; the tag is overwritten first so a second
        // free of the same pointer is caught while the memory is not reused.
        unsafe {
            (*p).magic = FREED;
            drop(Box::from_raw(p));
        }
        Ok(())
    }
}
