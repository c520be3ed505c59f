//! The matcher every binding wraps: packed bitmasks equal the grammar's mask bit for bit,
//! rollback returns to earlier positions (all or nothing), an end-of-generation token
//! terminates or stays as asked, the checked vocabulary constructor refuses bad input, and the
//! process-wide token-trie cache hands out one compiled set per key and stays bounded.

use std::sync::Arc;

use nucleus_grammar::bitmask::{bitmask_words, fill_ids};
use nucleus_grammar::continuations::{ContinuationSet, Mode, CACHE_ENTRIES};
use nucleus_grammar::trie_cache::{self, CacheKey};
use nucleus_grammar::{AcceptError, GrammarMatcher, OnEog, TrieMatcher, VocabError, VocabIndex};
use serde_json::json;

/// Bytes `a`..`e` and 0..9 as single tokens, a few longer pieces, then `</s>` (EOG).
fn vocab() -> Arc<VocabIndex> {
    let mut pieces: Vec<Box<[u8]>> = (b'a'..=b'e').chain(b'0'..=b'9').map(|b| vec![b].into_boxed_slice()).collect();
    for s in ["ab", "abc", "12", "{", "}", "\"", ":"] {
        pieces.push(s.as_bytes().into());
    }
    pieces.push(b"</s>".as_slice().into());
    let eog = pieces.len() as i64 - 1;
    Arc::new(VocabIndex::checked(pieces, &[eog]).unwrap())
}

fn eog(v: &VocabIndex) -> i32 {
    v.n_vocab() as i32 - 1
}

fn packed(m: &GrammarMatcher) -> Vec<u32> {
    let mut out = vec![0u32; bitmask_words(m.n_vocab())];
    m.fill_bitmask(&mut out).unwrap();
    out
}

#[test]
fn bitmask_equals_the_mask_and_rollback_returns_to_each_step() {
    let v = vocab();
    let mut m =
        GrammarMatcher::from_gbnf(v.clone(), r#"root ::= "a" [b-c]* [0-9]+"#, "root", OnEog::Terminate).unwrap();
    let walk = [0, 1, 2, 1, 5, 17]; // a b c b 0 12
    let mut seen = Vec::new();
    for &t in &walk {
        let mask = m.sampler().mask();
        let mut want = vec![0u32; bitmask_words(v.n_vocab())];
        fill_ids(v.n_vocab(), mask.ids().into_iter().map(|i| i as i32), &mut want).unwrap();
        assert_eq!(packed(&m), want);
        seen.push(packed(&m));
        m.accept(t).unwrap_or_else(|e| panic!("token {t}: {e}"));
    }
    seen.push(packed(&m));
    assert_eq!(m.accepted(), walk.len());
    // A refused token ("d") changes nothing and is not counted; nor does a refused rollback.
    assert!(m.accept(3).is_err());
    assert_eq!(packed(&m), seen[walk.len()]);
    assert!(m.rollback(walk.len() + 1).is_err());
    assert_eq!(m.accepted(), walk.len());
    for k in (0..walk.len()).rev() {
        m.rollback(1).unwrap();
        assert_eq!(packed(&m), seen[k], "after rolling back to step {k}");
    }
    assert_eq!(m.accepted(), 0);
}

#[test]
fn end_of_generation_terminates_or_stays() {
    let v = vocab();
    let gbnf = r#"root ::= "a" "b"?"#;
    let mut t = GrammarMatcher::from_gbnf(v.clone(), gbnf, "root", OnEog::Terminate).unwrap();
    let mut s = GrammarMatcher::from_gbnf(v.clone(), gbnf, "root", OnEog::Stay).unwrap();
    assert!(matches!(t.accept(eog(&v)), Err(AcceptError::Incomplete(_))));
    for m in [&mut t, &mut s] {
        m.accept(0).unwrap();
        assert!(m.can_end() && m.is_allowed(eog(&v)));
        m.accept(eog(&v)).unwrap();
    }
    assert!(t.is_terminated() && !t.can_end() && t.allowed_tokens().is_empty());
    assert!(packed(&t).iter().all(|&w| w == 0));
    assert_eq!(t.accept(1), Err(AcceptError::Terminated(1)));
    t.rollback(1).unwrap();
    assert!(!t.is_terminated() && t.is_allowed(1));
    // Staying: the mask after the end-of-generation token is the one before it.
    assert!(!s.is_terminated());
    assert_eq!(packed(&s), packed(&t));
    s.accept(1).unwrap();
    assert!(s.is_terminated(), "complete with nothing that may follow");
    s.reset();
    assert_eq!(s.accepted(), 0);
}

#[test]
fn checked_vocabulary_refuses_bad_sizes_and_eog_ids() {
    assert_eq!(VocabIndex::checked(Vec::new(), &[]).unwrap_err(), VocabError::Size(0));
    let two = || vec![b"a".as_slice().into(), b"b".as_slice().into()];
    let e = VocabIndex::checked(two(), &[2]).unwrap_err();
    assert_eq!(e, VocabError::EogOutside { id: 2, n_vocab: 2 });
    assert!(e.to_string().contains("outside the vocabulary [0, 2)"), "{e}");
    assert!(VocabIndex::checked(two(), &[-1]).is_err());
    let v = VocabIndex::checked(two(), &[1]).unwrap();
    assert!(v.is_eog(1) && !v.is_eog(0));
}

#[test]
fn trie_matcher_picks_the_only_path_and_packs_its_tokens() {
    let d = json!({"modelId": "m", "descriptors": [{"path": "p", "leaves": [
        {"name": "X", "tokens": [1, 40]}, {"name": "Y", "tokens": [33]}]}]});
    let mut t = TrieMatcher::new(&d, None, Mode::Greedy, None, None).unwrap();
    assert_eq!((t.path(), t.n_vocab(), t.mode().name()), ("p", 41, "greedy"));
    let mut out = vec![0u32; 2];
    t.fill_bitmask(&mut out).unwrap();
    assert_eq!(out, [1 << 1, 1 << 1]);
    assert!(t.advance(&[1, 2]).is_err());
    assert_eq!(t.allowed(), [1, 33], "a refused advance changes nothing");
    t.advance(&[1, 40]).unwrap();
    assert!(t.is_finished() && t.complete() == Some("X"));
    t.fill_bitmask(&mut out).unwrap();
    assert_eq!(out, [u32::MAX, (1 << 9) - 1], "every token once finished");
    let two = json!({"modelId": "m", "descriptors": [
        {"path": "a", "leaves": [{"name": "X", "tokens": [1]}]}, {"path": "b", "leaves": [{"name": "Y", "tokens": [2]}]}]});
    let e = TrieMatcher::new(&two, None, Mode::Sampled, None, None).unwrap_err().to_string();
    assert!(e.contains("2 paths (a, b)"), "{e}");
    assert!(Mode::from_name("eager").is_err());
}

#[test]
fn the_shared_cache_hands_out_one_set_per_key_and_is_bounded() {
    let compile = |n: usize| {
        let d = json!({"modelId": "m", "descriptors": [{"path": "*", "leaves": [{"name": "a", "tokens": [n]}]}]});
        Ok::<_, String>(ContinuationSet::from_descriptor(&d, "m", usize::MAX).unwrap())
    };
    let key = |text: &'static str, n_vocab| CacheKey { kind: "test", descriptor: text, model_id: "m", n_vocab };
    let a = trie_cache::shared(&key("cache-test-a", 10), || compile(1)).unwrap();
    let again = trie_cache::shared::<String>(&key("cache-test-a", 10), || panic!("compiled twice")).unwrap();
    assert!(Arc::ptr_eq(&a, &again));
    let other_vocab = trie_cache::shared(&key("cache-test-a", 5), || compile(2)).unwrap();
    assert!(!Arc::ptr_eq(&a, &other_vocab));
    let other_kind = CacheKey { kind: "other", ..key("cache-test-a", 10) };
    assert!(!Arc::ptr_eq(&a, &trie_cache::shared(&other_kind, || compile(3)).unwrap()));
    assert!(trie_cache::shared(&key("cache-test-bad", 10), || Err("bad".to_string())).is_err());
    let by_path = json!({"modelId": "m", "descriptors": [{"path": "p", "leaves": [{"name": "X", "tokens": [1]}]}]});
    let p = trie_cache::shared_by_path(&by_path, "m", 10).unwrap();
    assert!(Arc::ptr_eq(&p, &trie_cache::shared_by_path(&by_path, "m", 10).unwrap()));
    assert!(trie_cache::shared_by_path(&by_path, "other", 10).is_err());
    for i in 0..CACHE_ENTRIES + 10 {
        let text: &'static str = Box::leak(format!("cache-test-{i}").into_boxed_str());
        trie_cache::shared(&key(text, 10), || compile(i)).unwrap();
    }
    assert_eq!(trie_cache::shared_len(), CACHE_ENTRIES);
}
