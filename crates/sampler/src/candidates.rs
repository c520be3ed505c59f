//! The candidate array that samplers edit: llama.cpp's `llama_token_data_array`.
//!
//! A [`Candidates`] owns one buffer of [`TokenData`] that is reused from step to step, so
//! filling it for a new token allocates nothing once it has grown to the vocabulary size.
//! Samplers see a *view* into the buffer (`offset..offset + len`): truncation shrinks `len`,
//! and XTC drops leading entries by advancing `offset`, exactly like llama.cpp moves its
//! `data` pointer.

use crate::logits::Logits;

/// A token id, as in llama.cpp (`llama_token` is an `int32_t`).
pub type Token = i32;

/// One candidate: token id, working score, probability.
///
/// `logit` is what samplers edit. `p` is only (re)computed by samplers that need
/// probabilities; it is *not* kept in sync with `logit` automatically.
/// The layout matches llama.cpp's `llama_token_data`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct TokenData {
    /// The token id.
    pub id: Token,
    /// The working score (log-odds) that samplers edit.
    pub logit: f32,
    /// A probability that some samplers compute; may be stale.
    pub p: f32,
}

/// Reusable working memory that samplers borrow during `apply`, so the hot path never allocates.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    /// A second token buffer (bucket sort output, typical's reordering, ...).
    pub tokens: Vec<TokenData>,
    /// Index buffer (sort permutations).
    pub indices: Vec<u32>,
    /// Float buffer (scores, cached probabilities).
    pub floats: Vec<f32>,
    /// Bucket histogram / offsets for the bucket sort.
    pub buckets: Vec<u32>,
}

/// The candidate array: a view into a reusable buffer plus llama.cpp's `selected` and `sorted`.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    buf: Vec<TokenData>,
    offset: usize,
    len: usize,
    selected: Option<usize>,
    sorted: bool,
    scratch: Scratch,
}

impl Candidates {
    /// An empty array with no storage yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty array with room for `n` candidates (and its scratch space).
    pub fn with_capacity(n: usize) -> Self {
        let mut c = Self::default();
        c.buf.reserve(n);
        c.scratch.tokens.reserve(n);
        c
    }

    /// Builds an array from explicit entries (ids in any order), unsorted, nothing selected.
    pub fn from_token_data(data: Vec<TokenData>) -> Self {
        let len = data.len();
        Candidates { buf: data, offset: 0, len, ..Default::default() }
    }

    /// Refills the array with one entry per vocabulary id, `logit` from `logits`, `p = 0`,
    /// unsorted and nothing selected: the array every llama.cpp caller builds per token.
    /// Reuses the buffer: no allocation once capacity suffices.
    pub fn fill(&mut self, logits: Logits<'_>) {
        self.buf.clear();
        match logits {
            Logits::F32(l) => {
                self.buf.extend(l.iter().enumerate().map(|(i, &x)| TokenData { id: i as Token, logit: x, p: 0.0 }))
            }
            Logits::F16(l) => self.buf.extend(l.iter().enumerate().map(|(i, &x)| TokenData {
                id: i as Token,
                logit: x.to_f32(),
                p: 0.0,
            })),
            Logits::Bf16(l) => self.buf.extend(l.iter().enumerate().map(|(i, &x)| TokenData {
                id: i as Token,
                logit: x.to_f32(),
                p: 0.0,
            })),
        }
        self.offset = 0;
        self.len = self.buf.len();
        self.selected = None;
        self.sorted = false;
    }

    /// Refills the array from `f32` logits (see [`Candidates::fill`]).
    pub fn fill_f32(&mut self, logits: &[f32]) {
        self.fill(Logits::F32(logits));
    }

    /// Replaces the contents with a copy of `data` (ids kept), unsorted, nothing selected.
    pub fn fill_from(&mut self, data: &[TokenData]) {
        self.buf.clear();
        self.buf.extend_from_slice(data);
        self.offset = 0;
        self.len = data.len();
        self.selected = None;
        self.sorted = false;
    }

    /// Replaces the contents with the given ids (in the given order) and their logits from
    /// `row`, unsorted, nothing selected. Every id must index `row`.
    pub fn fill_from_ids(&mut self, ids: &[Token], row: &[f32]) {
        self.buf.clear();
        self.buf.extend(ids.iter().map(|&id| TokenData { id, logit: row[id as usize], p: 0.0 }));
        self.offset = 0;
        self.len = ids.len();
        self.selected = None;
        self.sorted = false;
    }

    /// Number of candidates in the view.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no candidate is left.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The candidates in the view.
    #[inline]
    pub fn as_slice(&self) -> &[TokenData] {
        &self.buf[self.offset..self.offset + self.len]
    }

    /// The candidates in the view, mutable. Editing logits does not update `sorted`:
    /// call [`Candidates::set_sorted`] if you break the order.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [TokenData] {
        &mut self.buf[self.offset..self.offset + self.len]
    }

    /// The view and the scratch space at once (for samplers that need both).
    #[inline]
    pub fn split_scratch(&mut self) -> (&mut [TokenData], &mut Scratch) {
        (&mut self.buf[self.offset..self.offset + self.len], &mut self.scratch)
    }

    /// Whether the view promises non-increasing logit order.
    #[inline]
    pub fn is_sorted(&self) -> bool {
        self.sorted
    }

    /// Sets or clears the "sorted by logit, descending" promise.
    #[inline]
    pub fn set_sorted(&mut self, sorted: bool) {
        self.sorted = sorted;
    }

    /// Index (into the view) of the selected candidate, if a selector has run.
    #[inline]
    pub fn selected(&self) -> Option<usize> {
        self.selected
    }

    /// Sets the selected index (into the view).
    #[inline]
    pub fn set_selected(&mut self, idx: Option<usize>) {
        debug_assert!(idx.is_none_or(|i| i < self.len));
        self.selected = idx;
    }

    /// The selected candidate, if any.
    pub fn selected_token(&self) -> Option<TokenData> {
        self.selected.and_then(|i| self.as_slice().get(i).copied())
    }

    /// The selected token as a sampling result: an error when nothing is selected, or when the
    /// selected candidate is not live (its logit is `-inf` or NaN: every token was removed).
    pub(crate) fn selected_checked(&self) -> Result<Token, crate::error::SampleError> {
        use crate::error::SampleError;
        let sel = match self.selected_token() {
            Some(t) => t,
            None if self.is_empty() => return Err(SampleError::NoCandidates),
            None => return Err(SampleError::NothingSelected),
        };
        if sel.logit == f32::NEG_INFINITY || sel.logit.is_nan() {
            return Err(SampleError::NoCandidates);
        }
        Ok(sel.id)
    }

    /// Shrinks the view to its first `n` candidates (no-op when `n >= len`).
    #[inline]
    pub fn truncate(&mut self, n: usize) {
        if n < self.len {
            self.len = n;
        }
    }

    /// Drops the first `n` candidates by moving the start of the view (XTC).
    #[inline]
    pub fn advance(&mut self, n: usize) {
        let n = n.min(self.len);
        self.offset += n;
        self.len -= n;
    }

    /// Replaces the view's first `src.len()` entries with `src` and sets the length to it.
    /// `src.len()` must not exceed the current length.
    pub(crate) fn overwrite_prefix(&mut self, src_from_scratch: usize) {
        let n = src_from_scratch;
        debug_assert!(n <= self.len);
        let start = self.offset;
        self.buf[start..start + n].copy_from_slice(&self.scratch.tokens[..n]);
        self.len = n;
    }

    /// Scratch space, mutable.
    #[inline]
    pub fn scratch_mut(&mut self) -> &mut Scratch {
        &mut self.scratch
    }

    /// Total capacity of the buffers (used by tests that check reuse).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}
