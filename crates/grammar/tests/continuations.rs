//! Token-trie constraints: descriptor validation, masking, fast-forward, LRU cache.

use nucleus_grammar::continuations::{ContinuationSet, Mode, TrieCache};
use nucleus_sampler::{Candidates, Sampler, TokenData};
use serde_json::json;

fn desc() -> serde_json::Value {
    json!({"modelId": "m", "descriptors": [{"path": "action", "leaves": [
        {"name": "THINK", "tokens": [100, 101]},
        {"name": "TALK", "tokens": [100, 102, 103, 104]},
        {"name": "STOP", "tokens": [7]}]}]})
}

#[test]
fn allowed_forced_and_greedy() {
    let set = ContinuationSet::from_descriptor(&desc(), "m", 1000).unwrap();
    let mut c = set.constraint("action", Mode::Sampled).unwrap();
    let mut a: Vec<i32> = c.allowed().collect();
    a.sort();
    assert_eq!(a, vec![7, 100]);
    assert!(c.forced().is_empty()); // two first tokens possible
    c.advance(100).unwrap();
    assert!(c.forced().is_empty());
    c.advance(102).unwrap();
    assert_eq!(c.forced(), vec![103, 104]);
    c.advance_all(&[103, 104]).unwrap();
    assert_eq!(c.complete(), Some("TALK"));
    assert!(c.is_finished());
    assert!(c.advance(5).is_err());

    let mut g = set.constraint("action", Mode::Greedy).unwrap();
    let mut cands =
        Candidates::from_token_data((0..200).map(|id| TokenData { id, logit: (id % 13) as f32, p: 0.0 }).collect());
    g.apply(&mut cands);
    assert_eq!(cands.selected_token().unwrap().id, 100); // logit 100 % 13 = 9 beats 7 % 13 = 7
    assert_eq!(cands.len(), 1);
}

#[test]
fn rejects_bad_descriptors() {
    let bad = [
        json!({"modelId": "other", "descriptors": desc()["descriptors"]}),
        json!({"modelId": "m", "descriptors": [{"path": "a", "leaves": []}]}),
        json!({"modelId": "m", "descriptors": [{"path": "a", "leaves": [{"name": "X", "tokens": [1000]}]}]}),
        json!({"modelId": "m", "descriptors": [{"path": "a", "leaves": [{"name": "X", "tokens": [-1]}]}]}),
        json!({"modelId": "m"}),
    ];
    for d in bad {
        assert!(ContinuationSet::from_descriptor(&d, "m", 1000).is_err(), "{d}");
    }
}

#[test]
fn lru_cache_reuses_builds() {
    let mut cache = TrieCache::new(2);
    let a = cache.get_or_build(&desc(), "m", 1000).unwrap();
    let b = cache.get_or_build(&desc(), "m", 1000).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    for i in 0..3 {
        let d = json!({"modelId": "m", "descriptors": [{"path": "p", "leaves": [{"name": "X", "tokens": [i]}]}]});
        cache.get_or_build(&d, "m", 1000).unwrap();
    }
    assert_eq!(cache.len(), 2);
    assert!(cache.get_or_build(&desc(), "other", 1000).is_err());
}
