//! The process-wide cache of compiled token tries: 128 descriptors, least recently used dropped
//! first, shared by every `nucleus_token_trie_new` and `nucleus_llm_set_token_trie` call on any
//! thread, so an application that sets the same descriptor on every request compiles it once.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, OnceLock};

use ::nucleus_grammar::continuations::{ContinuationSet, CACHE_ENTRIES};
use lru::LruCache;

use crate::error::Result;

/// One compiled descriptor, with what it was compiled from (a hash collision is detected by
/// comparing them, and then the descriptor is compiled afresh).
struct Entry {
    descriptor: Box<str>,
    n_vocab: usize,
    set: Arc<ContinuationSet>,
}

fn cache() -> &'static Mutex<LruCache<u64, Entry>> {
    static CACHE: OnceLock<Mutex<LruCache<u64, Entry>>> = OnceLock::new();
    CACHE.get_or_init(|| {
        let entries = NonZeroUsize::new(CACHE_ENTRIES).unwrap_or(NonZeroUsize::MIN);
        Mutex::new(LruCache::new(entries))
    })
}

/// The key: a hash of the descriptor's bytes and the vocabulary bound its tokens were checked
/// against (the same descriptor checked for a smaller vocabulary is another entry). The mode is
/// not part of it: a compiled set serves both modes.
fn key(descriptor: &str, n_vocab: usize) -> u64 {
    let mut h = DefaultHasher::new();
    descriptor.hash(&mut h);
    n_vocab.hash(&mut h);
    h.finish()
}

/// The compiled set of `descriptor` for tokens below `n_vocab`, from the cache or compiled by
/// `compile` now (and kept). Errors are not cached. The lock is not held while compiling, so a
/// large descriptor never blocks other threads' hits.
pub(crate) fn get_or_compile(
    descriptor: &str,
    n_vocab: usize,
    compile: impl FnOnce() -> Result<ContinuationSet>,
) -> Result<Arc<ContinuationSet>> {
    let k = key(descriptor, n_vocab);
    {
        let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = c.get(&k).filter(|e| e.n_vocab == n_vocab && *e.descriptor == *descriptor) {
            return Ok(e.set.clone());
        }
    }
    let set = Arc::new(compile()?);
    let entry = Entry { descriptor: descriptor.into(), n_vocab, set: set.clone() };
    cache().lock().unwrap_or_else(|p| p.into_inner()).put(k, entry);
    Ok(set)
}

/// Number of cached descriptors (for tests).
#[cfg(test)]
pub(crate) fn len() -> usize {
    cache().lock().unwrap_or_else(|p| p.into_inner()).len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(n: usize) -> Result<ContinuationSet> {
        let d = json!({"modelId": "m", "descriptors": [{"path": "*", "leaves": [{"name": "a", "tokens": [n]}]}]});
        Ok(ContinuationSet::from_descriptor(&d, "m", usize::MAX).unwrap())
    }

    #[test]
    fn hits_share_the_set_and_the_cache_is_bounded() {
        let a = get_or_compile("cache-test-a", 10, || compile(1)).unwrap();
        let again = get_or_compile("cache-test-a", 10, || panic!("compiled twice")).unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        let other_vocab = get_or_compile("cache-test-a", 5, || compile(2)).unwrap();
        assert!(!Arc::ptr_eq(&a, &other_vocab));
        assert!(get_or_compile("cache-test-bad", 10, || Err(crate::error::Error::invalid("bad"))).is_err());
        for i in 0..CACHE_ENTRIES + 10 {
            get_or_compile(&format!("cache-test-{i}"), 10, || compile(i)).unwrap();
        }
        assert_eq!(len(), CACHE_ENTRIES);
    }
}
