//! The deterministic prompt cache: what each slot's KV cache still holds, and how much of a new
//! prompt can start from it.
//!
//! Prompts are evaluated in chunks of a fixed size starting at position 0, so a chunk's KV
//! values depend only on the tokens up to its end. A slot remembers the tokens of the whole
//! chunks it evaluated (not a final partial chunk, nor generated tokens, which were computed in
//! differently shaped batches); a new prompt that starts with some of those chunks keeps them
//! and evaluates the rest exactly as a cold start would. The KV cache then holds the same bits
//! as after a fresh prefill, so caching never changes an answer.

use nucleus_sampler::Token;

/// The whole prompt chunks one slot holds, from position 0.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlotCache {
    tokens: Vec<Token>,
}

impl SlotCache {
    /// Tokens held (a multiple of the chunk size).
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Forgets everything (the slot's KV was cleared or is unreliable).
    pub(crate) fn clear(&mut self) {
        self.tokens.clear();
    }

    /// Keeps the first `n` tokens (the KV was truncated to them).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.tokens.truncate(n);
    }

    /// A whole chunk was evaluated right after the held ones.
    pub(crate) fn push_chunk(&mut self, chunk: &[Token]) {
        self.tokens.extend_from_slice(chunk);
    }

    /// How many leading tokens of `prompt` can be kept: whole chunks of `chunk` tokens that
    /// match, always leaving at least one token to evaluate (its logits start generation).
    pub(crate) fn reusable(&self, prompt: &[Token], chunk: usize) -> usize {
        let common = self.tokens.iter().zip(prompt).take_while(|(a, b)| a == b).count();
        let limit = common.min(prompt.len().saturating_sub(1));
        limit / chunk.max(1) * chunk.max(1)
    }
}

/// The free slot for a prompt: the one keeping the most of it; on a tie the one holding the
/// least (so longer caches survive for the prompts that share them), then the first.
pub(crate) fn choose_slot(free: &[usize], caches: &[SlotCache], prompt: &[Token], chunk: usize) -> Option<usize> {
    free.iter().copied().max_by(|&a, &b| {
        let (ra, rb) = (caches[a].reusable(prompt, chunk), caches[b].reusable(prompt, chunk));
        ra.cmp(&rb).then(caches[b].len().cmp(&caches[a].len())).then(b.cmp(&a))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_is_whole_matching_chunks_leaving_one_token() {
        let mut c = SlotCache::default();
        c.push_chunk(&[1, 2, 3, 4]);
        c.push_chunk(&[5, 6, 7, 8]);
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 4), 8);
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6, 7, 8], 4), 4, "the last token is always evaluated");
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6, 0, 8, 9], 4), 4);
        assert_eq!(c.reusable(&[1, 2, 3], 4), 0);
        assert_eq!(c.reusable(&[9, 2, 3, 4, 5], 4), 0);
    }

    #[test]
    fn slot_choice_prefers_the_longest_reuse_then_the_emptiest() {
        let mut a = SlotCache::default();
        a.push_chunk(&[1, 2]);
        let mut b = SlotCache::default();
        b.push_chunk(&[1, 2]);
        b.push_chunk(&[3, 4]);
        let empty = SlotCache::default();
        let caches = [a, b, empty];
        assert_eq!(choose_slot(&[0, 1, 2], &caches, &[1, 2, 3, 4, 5], 2), Some(1));
        assert_eq!(choose_slot(&[0, 2], &caches, &[1, 2, 3, 4, 5], 2), Some(0));
        assert_eq!(choose_slot(&[0, 1, 2], &caches, &[7, 7, 7], 2), Some(2));
        assert_eq!(choose_slot(&[0, 1], &caches, &[7, 7, 7], 2), Some(0));
        assert_eq!(choose_slot(&[], &caches, &[7], 2), None);
    }
}
