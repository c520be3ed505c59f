//! Logits handed in from JavaScript, read in place (never copied or widened here): a
//! `Float32Array`; half precision as a `Float16Array` (on runtimes that have it) or a
//! `Uint16Array` holding IEEE binary16 bits; bfloat16 as a `Uint16Array` with `dtype`
//! `"bfloat16"`. The sampler reads half-precision rows through its own f16/bf16 path.

use napi::bindgen_prelude::{Float32Array, FromNapiValue, Uint16Array, Unknown};
use napi::{sys, Error, JsValue, Result, Status};
use nucleus_sampler::Logits;

/// The arrays a logits argument may be (for error messages).
pub(crate) const ACCEPTED: &str = "Float32Array, Float16Array or Uint16Array";

/// Node-API's number for `Float16Array` (newer runtimes report it; napi-sys has no name for it).
const FLOAT16_ARRAY: i32 = 11;

/// One row of logits, borrowed from the caller's array: the handle keeps the array alive.
pub(crate) enum LogitsArray {
    F32(Float32Array),
    F16(Uint16Array),
    Bf16(Uint16Array),
}

fn invalid(msg: String) -> Error {
    Error::new(Status::InvalidArg, msg)
}

impl LogitsArray {
    /// Takes `value` as logits. `dtype` says how a `Uint16Array` is read: "float16" (the
    /// default) or "bfloat16"; for the other arrays it may only name their own type.
    pub(crate) fn from_js(value: &Unknown<'_>, dtype: Option<&str>) -> Result<Self> {
        let env = value.value().env;
        let raw = value.raw();
        let mut kind = -1;
        // SAFETY: `env` and `raw` are the live environment and value of this call; Node-API
        // accepts NULL for the outputs not asked for and fails on anything but a typed array.
        let status = unsafe {
            sys::napi_get_typedarray_info(
                env,
                raw,
                &mut kind,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if status != sys::Status::napi_ok {
            return Err(invalid(format!("logits must be a {ACCEPTED}")));
        }
        if let Some(d) = dtype.filter(|d| !matches!(*d, "float32" | "float16" | "bfloat16")) {
            return Err(invalid(format!("dtype must be \"float32\", \"float16\" or \"bfloat16\", not {d:?}")));
        }
        match (kind, dtype) {
            (sys::TypedarrayType::float32_array, None | Some("float32")) => {
                // SAFETY: `raw` is a Float32Array of this environment (checked above).
                Ok(LogitsArray::F32(unsafe { Float32Array::from_napi_value(env, raw)? }))
            }
            (sys::TypedarrayType::uint16_array, None | Some("float16" | "bfloat16")) => {
                // SAFETY: `raw` is a Uint16Array of this environment (checked above).
                let a = unsafe { Uint16Array::from_napi_value(env, raw)? };
                Ok(if dtype == Some("bfloat16") { LogitsArray::Bf16(a) } else { LogitsArray::F16(a) })
            }
            (FLOAT16_ARRAY, None | Some("float16")) => {
                // SAFETY: `raw` is a Float16Array of this environment (checked above).
                Ok(LogitsArray::F16(unsafe { uint16_view(env, raw)? }))
            }
            (sys::TypedarrayType::float32_array | sys::TypedarrayType::uint16_array | FLOAT16_ARRAY, Some(d)) => {
                Err(invalid(format!("dtype {d:?} does not match the logits array (a Uint16Array is read as \"float16\" or \"bfloat16\")")))
            }
            _ => Err(invalid(format!("logits must be a {ACCEPTED}, not another typed array"))),
        }
    }

    /// The row as the sampler reads it.
    pub(crate) fn logits(&self) -> Logits<'_> {
        match self {
            LogitsArray::F32(a) => Logits::F32(a),
            // SAFETY (both): `half::f16` and `half::bf16` are `repr(transparent)` over `u16`, and
            // every bit pattern is a value, so the words are read as they are, in place.
            LogitsArray::F16(a) => Logits::F16(unsafe { std::slice::from_raw_parts(a.as_ptr().cast(), a.len()) }),
            LogitsArray::Bf16(a) => Logits::Bf16(unsafe { std::slice::from_raw_parts(a.as_ptr().cast(), a.len()) }),
        }
    }

    /// Number of logits.
    pub(crate) fn len(&self) -> usize {
        match self {
            LogitsArray::F32(a) => a.len(),
            LogitsArray::F16(a) | LogitsArray::Bf16(a) => a.len(),
        }
    }
}

/// A `Uint16Array` over the same memory as the `Float16Array` `raw` (no copy: a second view of
/// its buffer), since napi-rs has no `Float16Array` type of its own.
///
/// # Safety
/// `raw` must be a `Float16Array` of the live environment `env`.
unsafe fn uint16_view(env: sys::napi_env, raw: sys::napi_value) -> Result<Uint16Array> {
    let (mut length, mut buffer, mut offset) = (0usize, std::ptr::null_mut(), 0usize);
    // SAFETY: per this function's contract; the outputs are valid locals.
    let status = unsafe {
        sys::napi_get_typedarray_info(
            env,
            raw,
            std::ptr::null_mut(),
            &mut length,
            std::ptr::null_mut(),
            &mut buffer,
            &mut offset,
        )
    };
    if status != sys::Status::napi_ok {
        return Err(invalid("cannot read the Float16Array".into()));
    }
    let mut view = std::ptr::null_mut();
    // SAFETY: `buffer` is the array's ArrayBuffer; `offset` and `length` (2-byte elements) are
    // the array's own, so the view covers exactly its memory.
    let status = unsafe {
        sys::napi_create_typedarray(env, sys::TypedarrayType::uint16_array, length, buffer, offset, &mut view)
    };
    if status != sys::Status::napi_ok {
        return Err(invalid("cannot view the Float16Array's buffer as 16-bit words".into()));
    }
    // SAFETY: `view` is a Uint16Array just created in `env`.
    unsafe { Uint16Array::from_napi_value(env, view) }
}
