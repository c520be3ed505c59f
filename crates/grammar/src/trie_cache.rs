//! Compiled token-trie descriptors, cached: [`TrieCache`] (least recently used dropped first)
//! and the one process-wide instance, [`shared`], that every surface compiling descriptors
//! uses (nucleus-runtime's `token_trie` for the CLI, the server and the bindings' models; the
//! C ABI's `nucleus_token_trie_new` and `nucleus_llm_set_token_trie`), so an application that
//! sets the same descriptor on every request compiles it once.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, OnceLock};

use lru::LruCache;
use serde_json::Value;

use crate::continuations::ContinuationSet;
use crate::error::DescriptorError;

/// How many built descriptors a cache keeps by default (and the shared one keeps).
pub const CACHE_ENTRIES: usize = 128;

/// What a compiled set was compiled from. Two keys name the same set only when every part is
/// equal, so a hash collision compiles afresh instead of handing out another set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey<'a> {
    /// How the descriptor was compiled (a caller merging every path into one, as the C ABI
    /// does, uses its own kind), so different compilations of one text never meet.
    pub kind: &'static str,
    /// The descriptor's JSON text.
    pub descriptor: &'a str,
    /// The model its `modelId` was checked against.
    pub model_id: &'a str,
    /// The vocabulary bound its token ids were checked against.
    pub n_vocab: usize,
}

/// The kind of sets compiled by [`ContinuationSet::from_descriptor`], one trie per path.
pub const BY_PATH: &str = "by-path";

impl CacheKey<'_> {
    fn hash64(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

struct Entry {
    kind: &'static str,
    descriptor: Box<str>,
    model_id: Box<str>,
    n_vocab: usize,
    set: Arc<ContinuationSet>,
}

impl Entry {
    fn is(&self, k: &CacheKey<'_>) -> bool {
        self.kind == k.kind
            && *self.descriptor == *k.descriptor
            && *self.model_id == *k.model_id
            && self.n_vocab == k.n_vocab
    }
}

/// LRU cache of built descriptors.
pub struct TrieCache {
    lru: LruCache<u64, Entry>,
}

impl Default for TrieCache {
    fn default() -> Self {
        Self::new(CACHE_ENTRIES)
    }
}

impl TrieCache {
    /// A cache holding up to `entries` descriptors.
    pub fn new(entries: usize) -> Self {
        TrieCache { lru: LruCache::new(NonZeroUsize::new(entries).unwrap_or(NonZeroUsize::MIN)) }
    }

    /// The set compiled for `key`, if cached (and marks it recently used).
    pub fn get(&mut self, key: &CacheKey<'_>) -> Option<Arc<ContinuationSet>> {
        self.lru.get(&key.hash64()).filter(|e| e.is(key)).map(|e| e.set.clone())
    }

    /// Keeps `set` as the compilation of `key`.
    pub fn put(&mut self, key: &CacheKey<'_>, set: Arc<ContinuationSet>) {
        let entry = Entry {
            kind: key.kind,
            descriptor: key.descriptor.into(),
            model_id: key.model_id.into(),
            n_vocab: key.n_vocab,
            set,
        };
        self.lru.put(key.hash64(), entry);
    }

    /// The built set (one trie per path) for `desc`, checked for `model_id` and tokens below
    /// `n_vocab`, from the cache or built (and cached) now.
    pub fn get_or_build(
        &mut self,
        desc: &Value,
        model_id: &str,
        n_vocab: usize,
    ) -> Result<Arc<ContinuationSet>, DescriptorError> {
        let text = desc.to_string();
        let key = CacheKey { kind: BY_PATH, descriptor: &text, model_id, n_vocab };
        if let Some(s) = self.get(&key) {
            return Ok(s);
        }
        let s = Arc::new(ContinuationSet::from_descriptor(desc, model_id, n_vocab)?);
        self.put(&key, s.clone());
        Ok(s)
    }

    /// Number of cached descriptors.
    pub fn len(&self) -> usize {
        self.lru.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }
}

fn process_cache() -> &'static Mutex<TrieCache> {
    static CACHE: OnceLock<Mutex<TrieCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(TrieCache::default()))
}

/// The process-wide cache: the set for `key`, from the cache or compiled by `compile` now (and
/// kept). Errors are not cached. The lock is not held while compiling, so a large descriptor
/// never blocks other threads' hits (two threads missing at once both compile; the second
/// result replaces the first).
pub fn shared<E>(
    key: &CacheKey<'_>,
    compile: impl FnOnce() -> Result<ContinuationSet, E>,
) -> Result<Arc<ContinuationSet>, E> {
    let lock = || process_cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(hit) = lock().get(key) {
        return Ok(hit);
    }
    let set = Arc::new(compile()?);
    lock().put(key, set.clone());
    Ok(set)
}

/// The process-wide cache's set (one trie per path) for `desc`, checked for `model_id` and
/// tokens below `n_vocab`.
pub fn shared_by_path(desc: &Value, model_id: &str, n_vocab: usize) -> Result<Arc<ContinuationSet>, DescriptorError> {
    let text = desc.to_string();
    let key = CacheKey { kind: BY_PATH, descriptor: &text, model_id, n_vocab };
    shared(&key, || ContinuationSet::from_descriptor(desc, model_id, n_vocab))
}

/// Number of descriptors in the process-wide cache.
pub fn shared_len() -> usize {
    process_cache().lock().unwrap_or_else(|p| p.into_inner()).len()
}
