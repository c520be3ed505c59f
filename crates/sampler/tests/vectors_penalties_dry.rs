//! Penalties, DRY and logit-bias beyond the reference vectors (whose upstream cases and
//! recorded chains run in `llama_vectors.rs`): string-breaker DRY through a toy vocabulary
//! and robustness checks (out-of-vocabulary history, no allocation growth after warm-up).

mod common;

use std::sync::Arc;

use common::alloc_count::{allocs, CountingAlloc};
use common::vectors::logits_of;
use nucleus_sampler::samplers::dry::Dry;
use nucleus_sampler::samplers::infill::Infill;
use nucleus_sampler::samplers::logit_bias::LogitBias;
use nucleus_sampler::samplers::penalties::Penalties;
use nucleus_sampler::{Candidates, Sampler, Token, TokenData, Vocab};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Tokens are byte strings; tokenize is greedy longest match (unknown bytes skipped).
struct ToyVocab {
    pieces: Vec<&'static [u8]>,
    eog: Vec<Token>,
}

impl Vocab for ToyVocab {
    fn n_vocab(&self) -> usize {
        self.pieces.len()
    }
    fn token_piece(&self, token: Token, out: &mut Vec<u8>) {
        out.clear();
        if let Some(p) = usize::try_from(token).ok().and_then(|t| self.pieces.get(t)) {
            out.extend_from_slice(p);
        }
    }
    fn tokenize(&self, text: &[u8]) -> Vec<Token> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let best = (0..self.pieces.len())
                .filter(|&t| !self.pieces[t].is_empty() && text[at..].starts_with(self.pieces[t]))
                .max_by_key(|&t| (self.pieces[t].len(), std::cmp::Reverse(t)));
            match best {
                Some(t) => {
                    out.push(t as Token);
                    at += self.pieces[t].len();
                }
                None => at += 1,
            }
        }
        out
    }
    fn is_eog(&self, token: Token) -> bool {
        self.eog.contains(&token)
    }
    fn eot(&self) -> Option<Token> {
        self.eog.first().copied()
    }
    fn eos(&self) -> Option<Token> {
        self.eog.last().copied()
    }
}

fn toy_vocab() -> ToyVocab {
    ToyVocab {
        pieces: vec![b"</s>", b"\n", b"the", b" cat", b" sat", b".\n", b"Q", b":", b" A", b"Q:", b"x"],
        eog: vec![0],
    }
}

/// Runs `d` on a fresh uniform array after accepting `hist`, returning the logits.
fn dry_logits(d: &mut Dry, n: usize, hist: &[Token]) -> Vec<f32> {
    for &t in hist {
        d.accept(t);
    }
    let mut c = Candidates::from_token_data((0..n).map(|k| TokenData { id: k as Token, logit: 0.0, p: 0.0 }).collect());
    d.apply(&mut c);
    logits_of(&c)
}

#[test]
fn dry_string_breakers_match_equivalent_token_breakers() {
    let v = toy_vocab();
    let n = v.n_vocab();
    // "\n" is contained in tokens 1 and 5; ":" in 7 and 9; "Q: A" is contained in no token:
    // token 6 "Q" ends with its prefix (tail ": A" -> [7, 8]) and so does 9 "Q:" (tail " A" -> [8]).
    let configs: [(&[&str], Vec<Vec<Token>>); 2] = [
        (&["\n", ":", "Q: A"], vec![vec![1], vec![5], vec![7], vec![9], vec![6, 7, 8], vec![9, 8]]),
        (&["Q: A", "\n"], vec![vec![6, 7, 8], vec![9, 8], vec![1], vec![5]]),
    ];
    let histories: [&[Token]; 5] = [
        // the cat sat .\n the cat sat .\n the cat
        &[2, 3, 4, 5, 2, 3, 4, 5, 2, 3],
        // the cat sat the cat sat the cat (no breaker)
        &[2, 3, 4, 2, 3, 4, 2, 3],
        // the cat the cat Q: A the cat the cat the
        &[2, 3, 2, 3, 6, 7, 8, 2, 3, 2, 3, 2],
        &[10, 2, 3, 10, 2, 3, 9, 8, 10, 2, 3, 10, 2],
        // the cat .\n the cat
        &[2, 3, 5, 2, 3],
    ];
    for (strings, tokens) in &configs {
        for hist in histories {
            let mut a = Dry::new(&v, 0.8, 1.75, 2, 64, strings);
            let mut b = Dry::from_token_breakers(n, 0.8, 1.75, 2, 64, tokens);
            assert_eq!(dry_logits(&mut a, n, hist), dry_logits(&mut b, n, hist), "{strings:?} {hist:?}");
        }
    }
    let pen = |e: f64| -((0.8f32 as f64 * (1.75f32 as f64).powf(e)) as f32);
    let breakers = configs[0].0;
    // `the cat sat .\n the cat sat .\n the cat`: " sat" extends a repeat of 6 without breakers,
    // but the newest ".\n" limits repeats to 2.
    let mut none = Dry::new(&v, 0.8, 1.75, 2, 64, &[]);
    assert_eq!(dry_logits(&mut none, n, histories[0])[4], pen(4.0));
    let mut with = Dry::new(&v, 0.8, 1.75, 2, 64, breakers);
    assert_eq!(dry_logits(&mut with, n, histories[0])[4], pen(0.0));
    // `the cat .\n the cat`: ".\n" would extend the repeat but, as a breaker, is exempt.
    let mut none = Dry::new(&v, 0.8, 1.75, 2, 64, &[]);
    assert_eq!(dry_logits(&mut none, n, histories[4])[5], pen(0.0));
    let mut with = Dry::new(&v, 0.8, 1.75, 2, 64, breakers);
    assert_eq!(dry_logits(&mut with, n, histories[4]), vec![0.0; n]);
    // `the cat sat the cat sat the cat`: " sat" extends a repeat of 5 -> 0.8 * 1.75^3.
    let mut d = Dry::new(&v, 0.8, 1.75, 2, 64, breakers);
    assert_eq!(dry_logits(&mut d, n, histories[1])[4], pen(3.0));
}

#[test]
fn out_of_vocabulary_history_never_panics() {
    let weird: [Token; 8] = [-1, i32::MAX, 5, i32::MIN, 1_000_000, 5, -1, i32::MAX];
    let mut p = Penalties::new(8, 4, 1.3, 0.2, 0.1);
    let mut d = Dry::from_token_breakers(8, 1.0, 1.75, 1, 6, &[vec![-3, i32::MAX]]);
    for _ in 0..3 {
        for &t in &weird {
            p.accept(t);
            d.accept(t);
        }
    }
    let mut c = Candidates::from_token_data(
        [-1, 0, 5, 7, i32::MAX, 1_000_000].iter().map(|&id| TokenData { id, logit: 1.0, p: 0.0 }).collect(),
    );
    p.apply(&mut c);
    d.apply(&mut c);
    // Penalties only count in-vocabulary tokens: 5 appears once in the last four.
    let l = logits_of(&c);
    assert_eq!(l[0], 1.0);
    assert_eq!(l[1], 1.0);
    assert_eq!(l[2], 1.0 / 1.3 - (1.0 * 0.2 + 0.1));
    assert_eq!(l[3], 1.0);
    let mut lb = LogitBias::new(8, vec![(-1, 1.0), (i32::MAX, 1.0), (1_000_000, -2.0)]);
    lb.apply(&mut c);
    let mut inf = Infill::new(Arc::new(toy_vocab()));
    inf.apply(&mut c);
    assert!(!c.is_empty());
}

/// After warm-up, the hot path reuses its buffers: cloning mid-stream and continuing on the
/// clone gives the same logits as the original (state fully copied), and repeated apply of a
/// full history does not change results between identical inputs.
#[test]
fn steady_state_is_deterministic() {
    let mut d = Dry::from_token_breakers(16, 0.8, 1.75, 2, 32, &[vec![15]]);
    let mut p = Penalties::new(16, 32, 1.1, 0.05, 0.1);
    let mut rng = 12345u32;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        (rng % 6) as Token
    };
    for _ in 0..200 {
        let t = next();
        d.accept(t);
        p.accept(t);
    }
    let fresh =
        || Candidates::from_token_data((0..16).map(|k| TokenData { id: k, logit: k as f32 * 0.1, p: 0.0 }).collect());
    let mut c1 = fresh();
    d.apply(&mut c1);
    p.apply(&mut c1);
    let mut c2 = fresh();
    d.apply(&mut c2);
    p.apply(&mut c2);
    assert_eq!(logits_of(&c1), logits_of(&c2));
    let mut dc = d.clone_box();
    let mut pc = p.clone_box();
    let mut c3 = fresh();
    dc.apply(&mut c3);
    pc.apply(&mut c3);
    assert_eq!(logits_of(&c1), logits_of(&c3));
}

/// Once the history window has filled, accept and apply of penalties, DRY and logit-bias
/// allocate nothing (including DRY on histories with in- and out-of-vocabulary tokens).
#[test]
fn hot_path_does_not_allocate_after_warm_up() {
    let n_vocab = 512;
    let mut chain: Vec<Box<dyn Sampler>> = vec![
        Box::new(LogitBias::new(n_vocab, vec![(3, 1.0), (700, 2.0), (9, f32::NEG_INFINITY)])),
        Box::new(Penalties::new(n_vocab, 64, 1.1, 0.1, 0.2)),
        Box::new(Dry::from_token_breakers(n_vocab, 0.8, 1.75, 2, 64, &[vec![1], vec![2, 3, 4]])),
    ];
    let logits: Vec<f32> = (0..n_vocab).map(|k| ((k * 37 % 101) as f32) * 0.05).collect();
    let mut c = Candidates::with_capacity(n_vocab);
    let mut state = 7u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        // Mostly a small alphabet (many repeats), sometimes ids outside the vocabulary.
        match state % 50 {
            0 => -(state as i32 % 1000).abs() - 1,
            1 => 600 + (state % 5) as Token,
            _ => (state % 8) as Token,
        }
    };
    let mut round = |c: &mut Candidates, chain: &mut Vec<Box<dyn Sampler>>| {
        c.fill_f32(&logits);
        for s in chain.iter_mut() {
            s.apply(c);
        }
        let t = next();
        for s in chain.iter_mut() {
            s.accept(t);
        }
    };
    for _ in 0..300 {
        round(&mut c, &mut chain);
    }
    let probe = allocs();
    drop(std::hint::black_box(vec![0u8; 16]));
    assert!(allocs() > probe, "the allocation counter works");
    let before = allocs();
    for _ in 0..2000 {
        round(&mut c, &mut chain);
    }
    assert_eq!(allocs() - before, 0, "allocations on the hot path after warm-up");
}
