//! Borrowing logits from any Python object that exports the buffer protocol (NumPy arrays,
//! `array.array`, `memoryview`, PyTorch CPU tensors through `.numpy()`), without copying:
//! float32 (`f`) and float16 (`e`), C-contiguous, native byte order; and 16-bit integer words
//! (`H`, `h`) holding bfloat16 (or float16) bits when the caller says so with `dtype`, since
//! NumPy has no bfloat16 (a PyTorch bfloat16 tensor: `t.view(torch.int16).numpy()`).

use std::ffi::CStr;

use half::f16;
use nucleus_sampler::Logits;
use pyo3::buffer::{Element, PyBuffer, PyUntypedBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `half::f16` as a buffer element (format `e`), which PyO3 does not know.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Half(f16);

// SAFETY: `Half` is two bytes holding an IEEE binary16 value, exactly what the struct-module
// format `e` describes; any bit pattern is a valid f16.
unsafe impl Element for Half {
    fn is_compatible_format(format: &CStr) -> bool {
        matches!(format.to_bytes(), b"e" | b"@e" | b"=e" | b"<e")
    }
}

/// A 16-bit word of a `uint16` or `int16` buffer (formats `H`, `h`), read as half-precision
/// bits.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Bits(u16);

// SAFETY: `Bits` is two bytes, the size of the formats `H` and `h` it accepts; any bit pattern
// is a valid u16.
unsafe impl Element for Bits {
    fn is_compatible_format(format: &CStr) -> bool {
        matches!(format.to_bytes(), b"H" | b"@H" | b"=H" | b"<H" | b"h" | b"@h" | b"=h" | b"<h")
    }
}

/// What the caller says the logits are (`dtype=`): checked against the buffer's format.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dtype {
    F32,
    F16,
    Bf16,
}

impl Dtype {
    /// `"float32"`, `"float16"` or `"bfloat16"`.
    pub(crate) fn parse(name: &str) -> PyResult<Self> {
        match name {
            "float32" => Ok(Dtype::F32),
            "float16" => Ok(Dtype::F16),
            "bfloat16" => Ok(Dtype::Bf16),
            other => Err(PyValueError::new_err(format!(
                "dtype must be \"float32\", \"float16\" or \"bfloat16\", not {other:?}"
            ))),
        }
    }
}

/// An exported buffer of logits, held for as long as the borrowed slice is used.
pub(crate) enum LogitsBuffer {
    F32(PyBuffer<f32>),
    F16(PyBuffer<Half>),
    /// 16-bit words: float16 bits (`false`) or bfloat16 bits (`true`).
    Bits(PyBuffer<Bits>, bool),
}

impl LogitsBuffer {
    /// Exports `obj`'s buffer. Refuses other element types, non-contiguous views and
    /// misaligned memory (PyO3 checks alignment) instead of converting them behind the
    /// caller's back. 16-bit integer words need `dtype` (float16 or bfloat16 bits); for a
    /// float buffer `dtype` may only repeat its type.
    pub(crate) fn get(obj: &Bound<'_, PyAny>, dtype: Option<Dtype>) -> PyResult<Self> {
        let raw = PyUntypedBuffer::get(obj)?;
        if !raw.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "logits must be C-contiguous (use numpy.ascontiguousarray; nucleus never copies them)",
            ));
        }
        let fmt = raw.format().to_bytes().to_vec();
        let mismatch = || {
            PyValueError::new_err(format!(
                "dtype does not match the logits' buffer format {:?} (16-bit integer words are read as \"float16\" or \"bfloat16\" bits)",
                String::from_utf8_lossy(&fmt)
            ))
        };
        let buf = match (fmt.as_slice(), dtype) {
            (b"f" | b"@f" | b"=f" | b"<f", None | Some(Dtype::F32)) => LogitsBuffer::F32(raw.into_typed::<f32>()?),
            (b"e" | b"@e" | b"=e" | b"<e", None | Some(Dtype::F16)) => LogitsBuffer::F16(raw.into_typed::<Half>()?),
            (b"H" | b"@H" | b"=H" | b"<H" | b"h" | b"@h" | b"=h" | b"<h", Some(d @ (Dtype::F16 | Dtype::Bf16))) => {
                LogitsBuffer::Bits(raw.into_typed::<Bits>()?, d == Dtype::Bf16)
            }
            (b"f" | b"@f" | b"=f" | b"<f" | b"e" | b"@e" | b"=e" | b"<e", Some(_)) => return Err(mismatch()),
            (other, _) => {
                return Err(PyValueError::new_err(format!(
                "logits must be float32 or float16 (or 16-bit words with dtype=\"bfloat16\"), not buffer format {:?}",
                String::from_utf8_lossy(other)
            )))
            }
        };
        Ok(buf)
    }

    /// The shape of the exported array (`[n]` for a flat buffer).
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            LogitsBuffer::F32(b) => b.shape(),
            LogitsBuffer::F16(b) => b.shape(),
            LogitsBuffer::Bits(b, _) => b.shape(),
        }
    }

    /// Element count.
    pub(crate) fn len(&self) -> usize {
        match self {
            LogitsBuffer::F32(b) => b.item_count(),
            LogitsBuffer::F16(b) => b.item_count(),
            LogitsBuffer::Bits(b, _) => b.item_count(),
        }
    }

    /// The whole buffer as logits.
    pub(crate) fn logits(&self) -> Logits<'_> {
        match self {
            // SAFETY: `get` checked the format, size, alignment and C-contiguity, so the
            // pointer covers `item_count` initialised elements of the right type; the export
            // keeps the memory alive and in place while `self` lives. Python code writing to
            // the array from another thread during a call is a data race the caller must avoid,
            // as with any NumPy function that releases the GIL.
            LogitsBuffer::F32(b) => Logits::F32(unsafe { b.as_slice_ptr().map_or(&[][..], |p| p.as_ref()) }),
            LogitsBuffer::F16(b) => {
                // SAFETY: as above; `Half` is `repr(transparent)` over `f16`.
                let s: &[Half] = unsafe { b.as_slice_ptr().map_or(&[][..], |p| p.as_ref()) };
                // SAFETY: same layout (`repr(transparent)`), same length.
                Logits::F16(unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<f16>(), s.len()) })
            }
            LogitsBuffer::Bits(b, bf16) => {
                // SAFETY: as above; `Bits` is `repr(transparent)` over `u16`.
                let s: &[Bits] = unsafe { b.as_slice_ptr().map_or(&[][..], |p| p.as_ref()) };
                // SAFETY (both): `f16` and `bf16` are `repr(transparent)` over `u16` and every bit
                // pattern is a value; same length.
                if *bf16 {
                    Logits::Bf16(unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), s.len()) })
                } else {
                    Logits::F16(unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), s.len()) })
                }
            }
        }
    }

    /// Row `i` of `rows` equal rows.
    pub(crate) fn row(&self, i: usize, width: usize) -> Logits<'_> {
        match self.logits() {
            Logits::F32(l) => Logits::F32(&l[i * width..(i + 1) * width]),
            Logits::F16(l) => Logits::F16(&l[i * width..(i + 1) * width]),
            Logits::Bf16(l) => Logits::Bf16(&l[i * width..(i + 1) * width]),
        }
    }
}
