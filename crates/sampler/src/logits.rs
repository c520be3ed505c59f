//! Logits input in the precisions models produce: `f32`, `f16` or `bf16`.
//!
//! Half-precision logits are widened to `f32` before any sampler runs, so results are the
//! same as feeding the widened values to llama.cpp.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// A borrowed row of logits, one per vocabulary id. The caller's data is never modified.
#[derive(Clone, Copy, Debug)]
pub enum Logits<'a> {
    /// Single precision (what llama.cpp returns).
    F32(&'a [f32]),
    /// IEEE half precision.
    F16(&'a [f16]),
    /// bfloat16.
    Bf16(&'a [bf16]),
}

impl<'a> Logits<'a> {
    /// Vocabulary size (number of logits).
    pub fn len(&self) -> usize {
        match self {
            Logits::F32(l) => l.len(),
            Logits::F16(l) => l.len(),
            Logits::Bf16(l) => l.len(),
        }
    }

    /// True for an empty row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The logit of token `i`, widened to `f32`.
    #[inline]
    pub fn get(&self, i: usize) -> f32 {
        match self {
            Logits::F32(l) => l[i],
            Logits::F16(l) => l[i].to_f32(),
            Logits::Bf16(l) => l[i].to_f32(),
        }
    }

    /// Writes the row widened to f32 into `out` (resized to the row; no allocation once it
    /// has held a row this long).
    pub(crate) fn widen_into(self, out: &mut Vec<f32>) {
        out.resize(self.len(), 0.0);
        match self {
            Logits::F32(l) => out.copy_from_slice(l),
            Logits::F16(l) => l.convert_to_f32_slice(out),
            Logits::Bf16(l) => l.convert_to_f32_slice(out),
        }
    }
}

impl<'a> From<&'a [f32]> for Logits<'a> {
    fn from(l: &'a [f32]) -> Self {
        Logits::F32(l)
    }
}

impl<'a> From<&'a Vec<f32>> for Logits<'a> {
    fn from(l: &'a Vec<f32>) -> Self {
        Logits::F32(l)
    }
}

impl<'a> From<&'a [f16]> for Logits<'a> {
    fn from(l: &'a [f16]) -> Self {
        Logits::F16(l)
    }
}

impl<'a> From<&'a [bf16]> for Logits<'a> {
    fn from(l: &'a [bf16]) -> Self {
        Logits::Bf16(l)
    }
}

/// Checks a row before sampling: non-empty, no NaN, no `+inf` (`-inf` bans a token and is
/// allowed). Returns the first offending token in the error.
pub fn check_logits(logits: Logits<'_>) -> Result<(), crate::error::SampleError> {
    use crate::error::SampleError;
    if logits.is_empty() {
        return Err(SampleError::EmptyVocab);
    }
    fn scan(it: impl Iterator<Item = f32>) -> Result<(), SampleError> {
        for (i, x) in it.enumerate() {
            if x.is_nan() {
                return Err(SampleError::NanLogit { token: i });
            }
            if x == f32::INFINITY {
                return Err(SampleError::PosInfLogit { token: i });
            }
        }
        Ok(())
    }
    // Fast path: a branch-free pass that only detects trouble; the slow scan names the token.
    let bad = match logits {
        Logits::F32(l) => l.iter().fold(false, |b, &x| b | (x.is_nan() | (x == f32::INFINITY))),
        Logits::F16(l) => l.iter().fold(false, |b, &x| b | x.is_nan() | (x == f16::INFINITY)),
        Logits::Bf16(l) => l.iter().fold(false, |b, &x| b | x.is_nan() | (x == bf16::INFINITY)),
    };
    if !bad {
        return Ok(());
    }
    match logits {
        Logits::F32(l) => scan(l.iter().copied()),
        Logits::F16(l) => scan(l.iter().map(|x| x.to_f32())),
        Logits::Bf16(l) => scan(l.iter().map(|x| x.to_f32())),
    }
}
