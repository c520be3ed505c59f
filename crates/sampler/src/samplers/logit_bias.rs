//! Fixed per-token logit offsets (ban with `-inf`, boost with a positive bias): llama.cpp's
//! `llama_sampler_init_logit_bias`.
//!
//! Like the reference, a bias whose token sits at its own index in the view is applied
//! directly (every duplicate applies); the others are looked up by id, where only the first
//! matching entry applies. Neither `p` nor the `sorted` flag is touched.

use crate::candidates::{Candidates, Token};
use crate::role::Role;
use crate::sampler::Sampler;

/// Adds a constant to chosen tokens' logits. Name `logit-bias`, or `?logit-bias` when empty.
#[derive(Clone, Debug)]
pub struct LogitBias {
    n_vocab: usize,
    biases: Vec<(Token, f32)>,
    /// Biases whose token was not at its own index this time (reused between applies).
    to_search: Vec<(Token, f32)>,
}

impl LogitBias {
    /// Biases are applied in the given order; an empty list builds the no-op sampler.
    pub fn new(n_vocab: usize, biases: Vec<(Token, f32)>) -> Self {
        let to_search = Vec::with_capacity(biases.len());
        LogitBias { n_vocab, biases, to_search }
    }

    /// The vocabulary size this sampler was built for.
    pub fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// The (token, bias) entries, in order.
    pub fn biases(&self) -> &[(Token, f32)] {
        &self.biases
    }
}

impl Sampler for LogitBias {
    fn name(&self) -> &str {
        if self.biases.is_empty() {
            "?logit-bias"
        } else {
            "logit-bias"
        }
    }

    fn apply(&mut self, cands: &mut Candidates) {
        if self.biases.is_empty() {
            return;
        }
        let data = cands.as_mut_slice();
        self.to_search.clear();
        // Fast path: the token is still at the index equal to its id.
        for &(tok, bias) in &self.biases {
            match usize::try_from(tok).ok().and_then(|i| data.get_mut(i)) {
                Some(d) if d.id == tok => d.logit += bias,
                _ => self.to_search.push((tok, bias)),
            }
        }
        if self.to_search.is_empty() {
            return;
        }
        // Slow path: scan the view; each candidate takes only the first matching entry.
        for d in data.iter_mut() {
            if let Some(&(_, bias)) = self.to_search.iter().find(|&&(tok, _)| tok == d.id) {
                d.logit += bias;
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl LogitBias {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        if self.biases.is_empty() {
            Role::Noop
        } else {
            Role::Sparse
        }
    }

    pub(crate) fn sparse_ids(&self, out: &mut Vec<Token>) {
        out.extend(self.biases.iter().map(|b| b.0));
    }

    /// On the full id-ordered vocabulary every in-range entry takes the fast path (all
    /// duplicates apply, in list order); replay that on the sparse subset.
    pub(crate) fn apply_sparse(&mut self, cands: &mut Candidates) {
        let data = cands.as_mut_slice();
        for &(tok, bias) in &self.biases {
            if let Ok(i) = data.binary_search_by_key(&tok, |d| d.id) {
                data[i].logit += bias;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::TokenData;
    use crate::samplers::test_util::logits_of;

    fn from_ids(ids: &[Token]) -> Candidates {
        Candidates::from_token_data(ids.iter().map(|&id| TokenData { id, logit: 0.0, p: 0.5 }).collect())
    }

    #[test]
    fn empty_is_noop() {
        let mut s = LogitBias::new(4, vec![]);
        assert_eq!(s.name(), "?logit-bias");
        let mut c = from_ids(&[0, 1]);
        s.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.0, 0.0]);
        assert_eq!(LogitBias::new(4, vec![(1, 1.0)]).name(), "logit-bias");
    }

    #[test]
    fn fast_path_applies_every_duplicate() {
        let mut s = LogitBias::new(4, vec![(1, 1.0), (1, 2.0), (3, f32::NEG_INFINITY)]);
        let mut c = from_ids(&[0, 1, 2, 3]);
        c.set_sorted(true);
        s.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.0, 3.0, 0.0, f32::NEG_INFINITY]);
        // Neither p nor the sorted flag is touched.
        assert!(c.is_sorted());
        assert!(c.as_slice().iter().all(|d| d.p == 0.5));
    }

    #[test]
    fn slow_path_applies_only_first_duplicate() {
        let mut s = LogitBias::new(4, vec![(1, 1.0), (1, 2.0), (2, 5.0)]);
        // Not in id order: token 1 sits at index 3, token 2 at index 2 (fast path).
        let mut c = from_ids(&[3, 0, 2, 1]);
        s.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.0, 0.0, 5.0, 1.0]);
    }

    #[test]
    fn mixed_and_out_of_range() {
        // Token 0 at index 0 (fast), token 5 only found by scanning, -3 and 99 nowhere.
        let mut s = LogitBias::new(8, vec![(0, 1.0), (5, 2.0), (-3, 7.0), (99, 7.0), (5, 4.0)]);
        let mut c = from_ids(&[0, 5]);
        s.apply(&mut c);
        assert_eq!(logits_of(&c), vec![1.0, 2.0]);
        // Fast path indexes into the current view, so after a truncation the entry for an id
        // beyond the new size is searched for instead.
        let mut c = from_ids(&[0, 1, 2, 3, 4, 5]);
        c.truncate(3);
        let mut s = LogitBias::new(8, vec![(4, 1.0), (2, 1.0)]);
        s.apply(&mut c);
        assert_eq!(logits_of(&c), vec![0.0, 0.0, 1.0]);
    }

    #[test]
    fn fast_path_uses_view_indices_after_advance() {
        // After dropping the first entry, index 1 of the view holds id 2, not id 1.
        let mut c = from_ids(&[0, 1, 2, 1]);
        c.advance(1);
        let mut s = LogitBias::new(4, vec![(1, 1.0), (1, 2.0)]);
        s.apply(&mut c);
        // view = [1, 2, 1]; index 1 is id 2 -> both entries go to the slow path; the first
        // (bias 1.0) applies to every candidate with id 1.
        assert_eq!(logits_of(&c), vec![1.0, 0.0, 1.0]);
        let mut s = LogitBias::new(4, vec![(2, 3.0)]);
        let mut c = from_ids(&[9, 1, 2]);
        c.advance(1);
        s.apply(&mut c);
        // view = [1, 2]: id 2 is at view index 1 != 2 -> searched for, found.
        assert_eq!(logits_of(&c), vec![0.0, 3.0]);
    }
}
