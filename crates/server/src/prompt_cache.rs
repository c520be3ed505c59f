//! The deterministic prompt cache: what each slot's KV cache still holds, and how much of a new
//! prompt can start from it.
//!
//! Prompts are evaluated in chunks of a fixed size starting at position 0, so a chunk's KV
//! values depend only on the tokens up to its end. A slot remembers the tokens of the whole
//! chunks it evaluated (not a final partial chunk, nor generated tokens, which were computed in
//! differently shaped batches); a new prompt that starts with some of those chunks keeps them
//! and evaluates the rest exactly as a cold start would. The KV cache then holds the same bits
//! as after a fresh prefill, so caching never changes an answer.
//!
//! A slot is given to whichever prompt needs it, so with more conversations than slots a
//! conversation's chunks would be lost to another's. Before a slot's chunks are cut, they are
//! copied into [`MemoryCache`] (llama-server's `--cache-ram`): a byte copy of their KV, put back
//! when a later prompt starts with them — the same bits again, so answers still never change.

use nucleus_runtime::SavedSequence;
use nucleus_sampler::Token;

/// The whole prompt chunks one slot holds, from position 0.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlotCache {
    tokens: Vec<Token>,
    /// Tokens known to follow the chunks (the rest of the last prompt and its answer), not yet
    /// in the cache: while the server is idle they are evaluated as chunks, so a conversation's
    /// next turn, which resends them, finds them cached.
    tail: Vec<Token>,
}

impl SlotCache {
    /// Tokens held (a multiple of the chunk size).
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether `other` holds these tokens and maybe more.
    fn is_prefix_of(&self, other: &SlotCache) -> bool {
        other.tokens.starts_with(&self.tokens)
    }

    /// Forgets everything (the slot's KV was cleared or is unreliable).
    pub(crate) fn clear(&mut self) {
        self.tokens.clear();
        self.tail.clear();
    }

    /// Keeps the first `n` tokens (the KV was truncated to them).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.tokens.truncate(n);
        self.tail.clear();
    }

    /// The slot's request ended: `sequence` (its prompt, then what it generated) is what the
    /// slot's KV went on to hold after the chunks; what the chunks do not cover becomes the tail.
    pub(crate) fn finished(&mut self, sequence: &[Token]) {
        self.tail.clear();
        if sequence.starts_with(&self.tokens) {
            self.tail.extend_from_slice(&sequence[self.tokens.len()..]);
        }
    }

    /// The next whole chunk of the tail, if there is one to evaluate while idle.
    pub(crate) fn idle_chunk(&self, chunk: usize) -> Option<&[Token]> {
        self.tail.get(..chunk.max(1))
    }

    /// The tail's first chunk was evaluated right after the held ones.
    pub(crate) fn tail_chunk_done(&mut self, chunk: usize) {
        let n = chunk.max(1).min(self.tail.len());
        self.tokens.extend(self.tail.drain(..n));
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

/// What the memory cache needs of a KV copy: its size.
pub(crate) trait KvCopy {
    /// Memory it takes, in bytes.
    fn bytes(&self) -> usize;
}

impl KvCopy for SavedSequence {
    fn bytes(&self) -> usize {
        SavedSequence::bytes(self)
    }
}

/// Whole prompt chunks moved out of their slot, with a copy of their KV.
struct MemoryEntry<S> {
    cache: SlotCache,
    saved: S,
    /// When it was last stored or used (larger is more recent).
    used: u64,
}

/// Prompt chunks kept in memory after their slot went to another prompt, up to a byte budget;
/// the least recently used go first.
pub(crate) struct MemoryCache<S: KvCopy = SavedSequence> {
    entries: Vec<MemoryEntry<S>>,
    budget: usize,
    bytes: usize,
    clock: u64,
}

impl<S: KvCopy> MemoryCache<S> {
    /// A cache holding at most `budget` bytes of KV copies (0 keeps nothing).
    pub(crate) fn new(budget: usize) -> Self {
        MemoryCache { entries: Vec::new(), budget, bytes: 0, clock: 0 }
    }

    /// Whether anything may be stored at all.
    pub(crate) fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry keeping most of `prompt` and how many tokens it keeps (0 when none helps).
    pub(crate) fn best(&self, prompt: &[Token], chunk: usize) -> (Option<usize>, usize) {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| (Some(i), e.cache.reusable(prompt, chunk)))
            .filter(|&(_, n)| n > 0)
            .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))
            .unwrap_or((None, 0))
    }

    /// Entry `i`'s chunks and KV copy, marked as just used.
    pub(crate) fn take(&mut self, i: usize) -> (&SlotCache, &S) {
        self.clock += 1;
        let e = &mut self.entries[i];
        e.used = self.clock;
        (&e.cache, &e.saved)
    }

    /// Whether an entry already holds these chunks (or more of the same prompt).
    pub(crate) fn covers(&self, cache: &SlotCache) -> bool {
        self.entries.iter().any(|e| cache.is_prefix_of(&e.cache))
    }

    /// Stores a slot's chunks with their KV copy. Entries it extends are dropped (it serves
    /// every prompt they serve); the least recently used go while over budget. A copy larger
    /// than the whole budget is not kept.
    pub(crate) fn insert(&mut self, cache: SlotCache, saved: S) {
        if saved.bytes() > self.budget || cache.len() == 0 || self.covers(&cache) {
            return;
        }
        let mut freed = 0;
        self.entries.retain(|e| {
            let keep = !e.cache.is_prefix_of(&cache);
            if !keep {
                freed += e.saved.bytes();
            }
            keep
        });
        self.bytes -= freed;
        while self.bytes + saved.bytes() > self.budget {
            let Some(oldest) = self.entries.iter().enumerate().min_by_key(|(_, e)| e.used).map(|(i, _)| i) else {
                break;
            };
            self.bytes -= self.entries.swap_remove(oldest).saved.bytes();
        }
        self.clock += 1;
        self.bytes += saved.bytes();
        self.entries.push(MemoryEntry { cache, saved, used: self.clock });
    }
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

    struct Copy(usize);
    impl KvCopy for Copy {
        fn bytes(&self) -> usize {
            self.0
        }
    }

    fn chunks(tokens: &[Token]) -> SlotCache {
        let mut c = SlotCache::default();
        c.push_chunk(tokens);
        c
    }

    #[test]
    fn memory_cache_finds_the_longest_entry_and_drops_what_an_extension_serves() {
        let mut m = MemoryCache::new(100);
        m.insert(chunks(&[1, 2]), Copy(10));
        m.insert(chunks(&[5, 6]), Copy(10));
        assert_eq!(m.best(&[1, 2, 3], 2), (Some(0), 2));
        assert_eq!(m.best(&[7, 7, 7], 2), (None, 0));
        m.insert(chunks(&[1, 2, 3, 4]), Copy(20)); // extends [1, 2]: replaces it
        assert_eq!((m.len(), m.bytes()), (2, 30));
        assert_eq!(m.best(&[1, 2, 3, 4, 9], 2).1, 4);
        m.insert(chunks(&[1, 2]), Copy(10)); // already covered
        assert_eq!((m.len(), m.bytes()), (2, 30));
    }

    #[test]
    fn memory_cache_evicts_the_least_recently_used_within_its_budget() {
        let mut m = MemoryCache::new(30);
        m.insert(chunks(&[1, 1]), Copy(10));
        m.insert(chunks(&[2, 2]), Copy(10));
        m.insert(chunks(&[3, 3]), Copy(10));
        let (i, _) = m.best(&[1, 1, 0], 2);
        m.take(i.unwrap()); // [1, 1] is now the most recent
        m.insert(chunks(&[4, 4]), Copy(10)); // evicts [2, 2]
        assert_eq!(m.best(&[2, 2, 0], 2).1, 0);
        assert_eq!(m.best(&[1, 1, 0], 2).1, 2);
        m.insert(chunks(&[5, 5]), Copy(31)); // larger than the budget: not kept
        assert_eq!((m.len(), m.bytes()), (3, 30));
        assert!(!MemoryCache::<Copy>::new(0).enabled());
    }

    #[test]
    fn the_tail_after_a_request_becomes_chunks_while_idle() {
        let mut c = chunks(&[1, 2]);
        c.finished(&[1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(c.idle_chunk(2), Some(&[3, 4][..]));
        c.tail_chunk_done(2);
        c.tail_chunk_done(2);
        assert_eq!(c.len(), 6);
        assert_eq!(c.idle_chunk(2), None, "a partial chunk is left alone");
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6, 7, 8], 2), 6);
        c.finished(&[9, 9, 9]); // does not start with the chunks: no tail
        assert_eq!(c.idle_chunk(1), None);
        c.finished(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        c.truncate(4);
        assert_eq!(c.idle_chunk(1), None, "cutting the chunks drops the tail");
    }
}
