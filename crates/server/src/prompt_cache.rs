//! The deterministic prompt cache: what each slot's KV cache holds, and how much of a new
//! prompt can start from it.
//!
//! With flash attention off, and llama.cpp built without tinyBLAS or weight repacking and run
//! without its tiled K-quant matmul ([`nucleus_runtime::Model::batch_invariant`]), a token's K/V values are the same bits however
//! it was batched: in a long prefill, a short chunk or a single-token decode step. So a slot
//! remembers every token its KV holds — prompt and generated — and a new prompt keeps the longest
//! prefix it shares with them and evaluates only the rest: the KV then holds exactly the bits a
//! fresh prefill of the whole prompt would give, and caching never changes an answer. (For a
//! model that is not batch-invariant the engine turns the cache off.)
//!
//! A slot is given to whichever prompt needs it, so with more conversations than slots a
//! conversation's tokens would be lost to another's. Before a slot's tokens are cut, they are
//! copied into [`MemoryCache`] (llama-server's `--cache-ram`): a byte copy of their KV, put back
//! when a later prompt starts with them — the same bits again, so answers still never change.

use nucleus_runtime::SavedSequence;
use nucleus_sampler::Token;

/// The tokens one slot's KV holds, from position 0.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlotCache {
    tokens: Vec<Token>,
}

impl SlotCache {
    /// Tokens held.
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
    }

    /// Keeps the first `n` tokens (the KV was truncated to them).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.tokens.truncate(n);
    }

    /// Tokens were evaluated right after the held ones (a prompt piece or a decoded token).
    pub(crate) fn extend(&mut self, tokens: &[Token]) {
        self.tokens.extend_from_slice(tokens);
    }

    /// How many leading tokens of `prompt` can be kept: the longest common prefix, always
    /// leaving at least one token to evaluate (its logits start generation).
    pub(crate) fn reusable(&self, prompt: &[Token]) -> usize {
        let common = self.tokens.iter().zip(prompt).take_while(|(a, b)| a == b).count();
        common.min(prompt.len().saturating_sub(1))
    }
}

/// The free slot for a prompt: the one keeping the most of it; on a tie the one holding the
/// least (so longer caches survive for the prompts that share them), then the first.
pub(crate) fn choose_slot(free: &[usize], caches: &[SlotCache], prompt: &[Token]) -> Option<usize> {
    free.iter().copied().max_by(|&a, &b| {
        let (ra, rb) = (caches[a].reusable(prompt), caches[b].reusable(prompt));
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

/// A slot's tokens moved out of it, with a copy of their KV.
struct MemoryEntry<S> {
    cache: SlotCache,
    saved: S,
    /// When it was last stored or used (larger is more recent).
    used: u64,
}

/// Slot contents kept in memory after their slot went to another prompt, up to a byte budget;
/// the least recently used go first.
pub(crate) struct MemoryCache<S: KvCopy = SavedSequence> {
    entries: Vec<MemoryEntry<S>>,
    budget: usize,
    bytes: usize,
    clock: u64,
    /// The largest bytes per token a copy has taken so far (KV size grows linearly with the
    /// tokens), so a copy that could not fit is not made at all.
    per_token: usize,
}

impl<S: KvCopy> MemoryCache<S> {
    /// A cache holding at most `budget` bytes of KV copies (0 keeps nothing).
    pub(crate) fn new(budget: usize) -> Self {
        MemoryCache { entries: Vec::new(), budget, bytes: 0, clock: 0, per_token: 0 }
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
    pub(crate) fn best(&self, prompt: &[Token]) -> (Option<usize>, usize) {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| (Some(i), e.cache.reusable(prompt)))
            .filter(|&(_, n)| n > 0)
            .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))
            .unwrap_or((None, 0))
    }

    /// Entry `i`'s tokens and KV copy, marked as just used.
    pub(crate) fn take(&mut self, i: usize) -> (&SlotCache, &S) {
        self.clock += 1;
        let e = &mut self.entries[i];
        e.used = self.clock;
        (&e.cache, &e.saved)
    }

    /// Whether a copy of `tokens` tokens could fit in the budget, judging by the copies made so
    /// far (true until one was made).
    pub(crate) fn could_fit(&self, tokens: usize) -> bool {
        tokens.saturating_mul(self.per_token) <= self.budget
    }

    /// Whether an entry already holds these tokens (or more of the same sequence).
    pub(crate) fn covers(&self, cache: &SlotCache) -> bool {
        self.entries.iter().any(|e| cache.is_prefix_of(&e.cache))
    }

    /// Stores a slot's tokens with their KV copy. Entries it extends are dropped (it serves
    /// every prompt they serve); the least recently used go while over budget. A copy larger
    /// than the whole budget is not kept.
    pub(crate) fn insert(&mut self, cache: SlotCache, saved: S) {
        if cache.len() > 0 {
            self.per_token = self.per_token.max(saved.bytes().div_ceil(cache.len()));
        }
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

    fn held(tokens: &[Token]) -> SlotCache {
        let mut c = SlotCache::default();
        c.extend(tokens);
        c
    }

    #[test]
    fn reuse_is_the_longest_common_prefix_leaving_one_token() {
        let c = held(&[1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6, 7, 8, 9]), 7);
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 6, 7]), 6, "the last token is always evaluated");
        assert_eq!(c.reusable(&[1, 2, 3, 4, 5, 0, 7, 8]), 5);
        assert_eq!(c.reusable(&[1, 2, 3]), 2);
        assert_eq!(c.reusable(&[9, 2, 3, 4, 5]), 0);
        assert_eq!(c.reusable(&[1]), 0);
        let mut c = c;
        c.truncate(3);
        c.extend(&[8, 9]);
        assert_eq!(c.reusable(&[1, 2, 3, 8, 9, 10]), 5);
        c.clear();
        assert_eq!((c.len(), c.reusable(&[1, 2])), (0, 0));
    }

    #[test]
    fn slot_choice_prefers_the_longest_reuse_then_the_emptiest() {
        let caches = [held(&[1, 2]), held(&[1, 2, 3, 4]), SlotCache::default()];
        assert_eq!(choose_slot(&[0, 1, 2], &caches, &[1, 2, 3, 4, 5]), Some(1));
        assert_eq!(choose_slot(&[0, 2], &caches, &[1, 2, 3, 4, 5]), Some(0));
        assert_eq!(choose_slot(&[0, 1, 2], &caches, &[7, 7, 7]), Some(2));
        assert_eq!(choose_slot(&[0, 1], &caches, &[7, 7, 7]), Some(0));
        assert_eq!(choose_slot(&[], &caches, &[7]), None);
    }

    struct Copy(usize);
    impl KvCopy for Copy {
        fn bytes(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn memory_cache_finds_the_longest_entry_and_drops_what_an_extension_serves() {
        let mut m = MemoryCache::new(100);
        m.insert(held(&[1, 2]), Copy(10));
        m.insert(held(&[5, 6]), Copy(10));
        assert_eq!(m.best(&[1, 2, 3]), (Some(0), 2));
        assert_eq!(m.best(&[7, 7, 7]), (None, 0));
        m.insert(held(&[1, 2, 3, 4]), Copy(20)); // extends [1, 2]: replaces it
        assert_eq!((m.len(), m.bytes()), (2, 30));
        assert_eq!(m.best(&[1, 2, 3, 4, 9]).1, 4);
        assert_eq!(m.best(&[1, 2, 3, 9]).1, 3, "any length of prefix");
        m.insert(held(&[1, 2]), Copy(10)); // already covered
        assert_eq!((m.len(), m.bytes()), (2, 30));
    }

    #[test]
    fn memory_cache_evicts_the_least_recently_used_within_its_budget() {
        let mut m = MemoryCache::new(30);
        m.insert(held(&[1, 1]), Copy(10));
        m.insert(held(&[2, 2]), Copy(10));
        m.insert(held(&[3, 3]), Copy(10));
        let (i, _) = m.best(&[1, 1, 0]);
        m.take(i.unwrap()); // [1, 1] is now the most recent
        m.insert(held(&[4, 4]), Copy(10)); // evicts [2, 2]
        assert_eq!(m.best(&[2, 2, 0]).1, 0);
        assert_eq!(m.best(&[1, 1, 0]).1, 2);
        m.insert(held(&[5, 5]), Copy(31)); // larger than the budget: not kept
        assert_eq!((m.len(), m.bytes()), (3, 30));
        assert!(m.could_fit(1) && !m.could_fit(2), "16 bytes per token seen: two tokens would not fit");
        assert!(!MemoryCache::<Copy>::new(0).enabled());
    }
}
