//! The token history DRY and the repetition penalties keep: a fixed-capacity ring of the
//! last accepted tokens (llama.cpp's `ring_buffer`), pushed on `accept`, cleared on `reset` and
//! copied with the sampler on clone.

use crate::candidates::Token;

/// A fixed-capacity history of tokens, newest last (llama.cpp's `ring_buffer`).
///
/// Storage grows on demand up to the capacity and is then overwritten in place, so a huge
/// capacity costs nothing until it is used, and a full ring never allocates again.
#[derive(Clone, Debug, Default)]
pub(crate) struct TokenRing {
    cap: usize,
    data: Vec<Token>,
    /// Index of the oldest entry once the ring is full (always 0 before that).
    first: usize,
}

impl TokenRing {
    /// An empty ring holding at most `cap` tokens.
    pub(crate) fn new(cap: usize) -> Self {
        TokenRing { cap, data: Vec::with_capacity(cap.min(1 << 16)), first: 0 }
    }

    /// Number of tokens held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the ring holds `cap` tokens (the next push evicts the oldest).
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.data.len() >= self.cap
    }

    /// The oldest token, if any.
    #[inline]
    pub(crate) fn oldest(&self) -> Option<Token> {
        self.data.get(self.first).copied()
    }

    /// Appends `tok`, overwriting the oldest entry when full. A zero-capacity ring ignores it.
    #[inline]
    pub(crate) fn push(&mut self, tok: Token) {
        if self.cap == 0 {
            return;
        }
        if self.data.len() < self.cap {
            self.data.push(tok);
        } else {
            self.data[self.first] = tok;
            self.first += 1;
            if self.first == self.cap {
                self.first = 0;
            }
        }
    }

    /// Every token held, in storage order (not age order).
    #[inline]
    pub(crate) fn tokens(&self) -> &[Token] {
        &self.data
    }

    /// The `i`-th most recent token (`rat(0)` is the newest); `i` must be `< len()`.
    #[inline]
    pub(crate) fn rat(&self, i: usize) -> Token {
        let n = self.data.len();
        debug_assert!(i < n);
        let mut k = self.first + n - 1 - i;
        if k >= n {
            k -= n;
        }
        self.data[k]
    }

    /// Forgets every token, keeping the storage.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.data.clear();
        self.first = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_newest_in_order() {
        let mut r = TokenRing::new(3);
        for t in 1..=5 {
            r.push(t);
        }
        assert_eq!(r.len(), 3);
        assert_eq!((r.rat(0), r.rat(1), r.rat(2)), (5, 4, 3));
        assert_eq!(r.oldest(), Some(3));
        r.clear();
        assert_eq!(r.len(), 0);
        r.push(9);
        assert_eq!(r.rat(0), 9);
        let mut z = TokenRing::new(0);
        z.push(1);
        assert_eq!(z.len(), 0);
    }
}
