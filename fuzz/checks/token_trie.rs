//! Token-trie descriptors (the input, as JSON) for a 64-token model: building must not panic;
//! on a built set, forced runs must be accepted, every allowed token must advance, and the
//! constraint as a sampler must leave only allowed tokens (or nothing once finished).

use nucleus_grammar::continuations::{Mode, TrieCache};
use nucleus_sampler::{Candidates, Sampler};

const N_VOCAB: usize = 64;

/// The check: panics on a violated invariant.
pub fn check(data: &[u8]) {
    let Ok(desc) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let mut cache = TrieCache::new(2);
    let Ok(set) = cache.get_or_build(&desc, "m", N_VOCAB) else { return };
    // The cache answers the same set the second time.
    assert!(cache.get_or_build(&desc, "m", N_VOCAB).is_ok());
    for path in set.paths() {
        for mode in [Mode::Greedy, Mode::Sampled] {
            let mut c = set.constraint(path, mode).expect("a listed path has a constraint");
            for step in 0..32 {
                let forced = c.forced();
                c.advance_all(&forced).expect("forced tokens advance");
                let allowed: Vec<i32> = c.allowed().collect();
                assert!(allowed.iter().all(|&t| (0..N_VOCAB as i32).contains(&t)), "token outside the vocabulary");
                let logits: Vec<f32> = (0..N_VOCAB).map(|i| ((i * 7 + step) % 13) as f32).collect();
                let mut cands = Candidates::new();
                cands.fill_f32(&logits);
                let mut s = c.clone();
                s.apply(&mut cands);
                if !allowed.is_empty() {
                    for d in cands.as_slice() {
                        assert!(d.logit == f32::NEG_INFINITY || allowed.contains(&d.id), "token {} left in", d.id);
                    }
                }
                let Some(&next) = allowed.get(step % allowed.len().max(1)) else { break };
                c.advance(next).expect("an allowed token advances");
                let _ = c.complete();
            }
        }
    }
}
