//! Helpers the samplers' unit tests share (compiled for tests only).

use crate::candidates::{Candidates, Token, TokenData};
use crate::sampler::Sampler;

/// Candidates with ids `0..n` in id order, `logit = ln p` and `p` set, unsorted.
pub(crate) fn from_probs(probs: &[f32]) -> Candidates {
    Candidates::from_token_data(
        probs.iter().enumerate().map(|(i, &p)| TokenData { id: i as Token, logit: p.ln(), p }).collect(),
    )
}

/// Candidates with ids `0..n` in id order, the given logits and `p = 0`, unsorted.
pub(crate) fn from_logits(logits: &[f32]) -> Candidates {
    Candidates::from_token_data(
        logits.iter().enumerate().map(|(i, &l)| TokenData { id: i as Token, logit: l, p: 0.0 }).collect(),
    )
}

/// The ids of the view, in view order.
pub(crate) fn ids(c: &Candidates) -> Vec<Token> {
    c.as_slice().iter().map(|d| d.id).collect()
}

/// The logits of the view, in view order.
pub(crate) fn logits_of(c: &Candidates) -> Vec<f32> {
    c.as_slice().iter().map(|d| d.logit).collect()
}

/// A fixed, irregular logits row of `n` values in `[-4, 6.56]` (the mirostat tests' input).
pub(crate) fn mixed_logits(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 97) as f32 * 0.11 - 4.0).collect()
}

/// Applies `s` to fresh candidates filled from `l`; returns the selected id and the view size.
pub(crate) fn select_step(s: &mut impl Sampler, l: &[f32]) -> (Token, usize) {
    let mut c = Candidates::new();
    c.fill_f32(l);
    s.apply(&mut c);
    (c.selected_token().unwrap().id, c.len())
}

/// The stream checks both mirostat versions share: two samplers from `new` pick the same 12
/// tokens; a clone keeps `mu` and continues the stream; `reset` restores `initial_mu` and
/// replays the first 12 picks.
pub(crate) fn check_stream_reset_and_clone<S: Sampler + Clone>(
    new: impl Fn() -> S,
    mu: impl Fn(&S) -> f32,
    initial_mu: f32,
    l: &[f32],
) {
    let mut a = new();
    let first: Vec<_> = (0..12).map(|_| select_step(&mut a, l)).collect();
    let mut b = new();
    let again: Vec<_> = (0..12).map(|_| select_step(&mut b, l)).collect();
    assert_eq!(first, again);

    let mut cl = a.clone();
    assert_eq!(mu(&cl), mu(&a));
    let next_a: Vec<_> = (0..8).map(|_| select_step(&mut a, l)).collect();
    let next_c: Vec<_> = (0..8).map(|_| select_step(&mut cl, l)).collect();
    assert_eq!(next_a, next_c);

    a.reset();
    assert_eq!(mu(&a), initial_mu);
    let after_reset: Vec<_> = (0..12).map(|_| select_step(&mut a, l)).collect();
    assert_eq!(after_reset, first);
}
