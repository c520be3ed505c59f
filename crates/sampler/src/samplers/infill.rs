//! Fill-in-the-middle helper: llama.cpp's `llama_sampler_init_infill`.
//!
//! Prefers ending the infill when end-of-generation tokens are competitive, merges tokens
//! whose text is a prefix of another's into the more likely one, then drops unlikely text
//! tokens in two threshold passes. It runs rarely, so it may allocate (piece cache).

use std::sync::Arc;

use crate::candidates::{Candidates, Token};
use crate::sampler::Sampler;
use crate::softmax::softmax;
use crate::vocab::Vocab;

/// The infill sampler (name `infill`). Stateless apart from reusable buffers.
#[derive(Clone)]
pub struct Infill {
    vocab: Arc<dyn Vocab>,
    /// Text of every candidate of the current apply, concatenated.
    piece_bytes: Vec<u8>,
    /// (start, len) of each candidate's text in `piece_bytes`, by view index.
    piece_spans: Vec<(usize, usize)>,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Infill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Infill").finish_non_exhaustive()
    }
}

impl Infill {
    /// An infill sampler reading token texts and end-of-generation ids from `vocab`.
    pub fn new(vocab: Arc<dyn Vocab>) -> Self {
        Infill { vocab, piece_bytes: Vec::new(), piece_spans: Vec::new(), scratch: Vec::new() }
    }

    /// EOG test that treats ids outside the vocabulary as ordinary (never EOG) tokens.
    #[inline]
    fn is_eog(vocab: &dyn Vocab, n_vocab: usize, id: Token) -> bool {
        usize::try_from(id).is_ok_and(|i| i < n_vocab) && vocab.is_eog(id)
    }

    /// Caches the text of every candidate; ids outside the vocabulary get an empty text
    /// (which never takes part in a merge).
    fn cache_pieces(&mut self, ids: impl Iterator<Item = Token>, n_vocab: usize) {
        self.piece_bytes.clear();
        self.piece_spans.clear();
        for id in ids {
            let start = self.piece_bytes.len();
            // llama.cpp reads these pieces with special tokens hidden: control tokens are empty.
            if usize::try_from(id).is_ok_and(|i| i < n_vocab) && !self.vocab.is_control(id) {
                self.vocab.token_piece(id, &mut self.scratch);
                self.piece_bytes.extend_from_slice(&self.scratch);
            }
            self.piece_spans.push((start, self.piece_bytes.len() - start));
        }
    }

    #[inline]
    fn piece(&self, i: usize) -> &[u8] {
        let (s, l) = self.piece_spans[i];
        &self.piece_bytes[s..s + l]
    }
}

impl Sampler for Infill {
    fn name(&self) -> &str {
        "infill"
    }

    fn apply(&mut self, cands: &mut Candidates) {
        if cands.is_empty() {
            return;
        }
        softmax(cands, true);
        let vocab = Arc::clone(&self.vocab);
        let vocab = &*vocab;
        let n_vocab = vocab.n_vocab();
        let eog = |id: Token| Self::is_eog(vocab, n_vocab, id);

        let n = cands.len();
        let (mut p_txt, mut p_eog) = (0.0f32, 0.0f32);
        for d in cands.as_slice() {
            if eog(d.id) {
                p_eog += d.p;
            } else {
                p_txt += d.p;
            }
        }

        // End-of-generation is competitive: keep only EOG tokens, renormalised.
        if 3.0f32 * p_eog * (n as f32) > p_txt {
            let data = cands.as_mut_slice();
            let mut k = 0;
            let mut p_sum = 0.0f32;
            for i in 0..n {
                if eog(data[i].id) {
                    p_sum += data[i].p;
                    data[k] = data[i];
                    k += 1;
                }
            }
            for d in &mut data[..k] {
                d.p /= p_sum;
            }
            cands.truncate(k);
            return;
        }

        // Merge every token whose text is a prefix of another token's text into the more
        // probable of the two (the earlier one on ties); the donor is removed (-inf, p = 0).
        self.cache_pieces(cands.as_slice().iter().map(|d| d.id), n_vocab);
        {
            let data = cands.as_mut_slice();
            for i0 in 0..n {
                for i1 in 0..n {
                    if data[i0].logit == f32::NEG_INFINITY {
                        break;
                    }
                    if i0 == i1 || data[i1].logit == f32::NEG_INFINITY {
                        continue;
                    }
                    let (a, b) = (self.piece(i0), self.piece(i1));
                    if !a.is_empty() && a.len() <= b.len() && b.starts_with(a) {
                        let (dst, src) = if data[i1].p > data[i0].p { (i1, i0) } else { (i0, i1) };
                        data[dst].p += data[src].p;
                        data[src].logit = f32::NEG_INFINITY;
                        data[src].p = 0.0;
                    }
                }
            }
        }

        // First pass: keep EOG tokens and text tokens with p >= 0.2.
        let data = cands.as_mut_slice();
        let thold = 0.2f32;
        let mut k = 0;
        let mut n_non_eog = 0usize;
        let mut p_sum = 0.0f32;
        for i in 0..n {
            let is_eog = eog(data[i].id);
            if data[i].p < thold && !is_eog {
                continue;
            }
            if !is_eog {
                n_non_eog += 1;
            }
            p_sum += data[i].p;
            data[k] = data[i];
            k += 1;
        }

        // Nothing but EOG left: answer with a single end-of-text token (logit 1, p untouched).
        // Without EOT or EOS ids (the reference aborts) the first entry's id is kept.
        if n_non_eog == 0 {
            if let Some(id) = vocab.eot().or_else(|| vocab.eos()) {
                data[0].id = id;
            }
            data[0].logit = 1.0;
            cands.truncate(1);
            return;
        }
        for d in &mut data[..k] {
            d.p /= p_sum;
        }

        // Second pass: threshold 1 / (n_non_eog + 1), computed in f64 and stored as f32.
        let thold = (1.0f64 / (n_non_eog + 1) as f64) as f32;
        let n1 = k;
        let mut k = 0;
        let mut p_sum = 0.0f32;
        for i in 0..n1 {
            if data[i].p < thold && !eog(data[i].id) {
                continue;
            }
            p_sum += data[i].p;
            data[k] = data[i];
            k += 1;
        }
        for d in &mut data[..k] {
            d.p /= p_sum;
        }
        cands.truncate(k);
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::TokenData;

    /// Token texts by id; `eog` lists end-of-generation ids.
    struct ToyVocab {
        pieces: Vec<&'static str>,
        eog: Vec<Token>,
        eot: Option<Token>,
        eos: Option<Token>,
    }

    impl Vocab for ToyVocab {
        fn n_vocab(&self) -> usize {
            self.pieces.len()
        }
        fn token_piece(&self, token: Token, out: &mut Vec<u8>) {
            out.clear();
            if let Some(p) = usize::try_from(token).ok().and_then(|i| self.pieces.get(i)) {
                out.extend_from_slice(p.as_bytes());
            }
        }
        fn tokenize(&self, _text: &[u8]) -> Vec<Token> {
            Vec::new()
        }
        fn is_eog(&self, token: Token) -> bool {
            self.eog.contains(&token)
        }
        fn eot(&self) -> Option<Token> {
            self.eot
        }
        fn eos(&self) -> Option<Token> {
            self.eos
        }
    }

    fn vocab() -> Arc<dyn Vocab> {
        // 0 "<eot>" (EOG), 1 "<eos>" (EOG), then text tokens.
        Arc::new(ToyVocab {
            pieces: vec!["<eot>", "<eos>", "he", "hello", "world", "x", "wor", "zz", "q", "r"],
            eog: vec![0, 1],
            eot: Some(0),
            eos: Some(1),
        })
    }

    fn from_probs(probs: &[(Token, f32)]) -> Candidates {
        Candidates::from_token_data(probs.iter().map(|&(id, p)| TokenData { id, logit: p.ln(), p: 0.0 }).collect())
    }

    fn ids(c: &Candidates) -> Vec<Token> {
        c.as_slice().iter().map(|d| d.id).collect()
    }

    fn probs(c: &Candidates) -> Vec<f32> {
        c.as_slice().iter().map(|d| d.p).collect()
    }

    #[test]
    fn eog_dominant_branch_keeps_only_eog() {
        let mut s = Infill::new(vocab());
        assert_eq!(s.name(), "infill");
        // P_eog = 0.1 + 0.05, n = 4: 3 * 0.15 * 4 = 1.8 > P_txt = 0.85.
        let mut c = from_probs(&[(2, 0.5), (1, 0.05), (4, 0.35), (0, 0.1)]);
        s.apply(&mut c);
        assert_eq!(ids(&c), vec![0, 1]);
        let p = probs(&c);
        assert!((p[0] - 2.0 / 3.0).abs() < 1e-6 && (p[1] - 1.0 / 3.0).abs() < 1e-6, "{p:?}");
        assert!(c.is_sorted());
    }

    #[test]
    fn prefixes_merge_into_more_likely_token() {
        let mut s = Infill::new(vocab());
        // "he" (0.3) is a prefix of "hello" (0.45): merged into "hello" (0.75).
        // "wor" (0.2) is a prefix of "world" (0.05): "world" merges into "wor" (0.25).
        // No EOG, so the EOG branch cannot fire.
        let mut c = from_probs(&[(2, 0.3), (3, 0.45), (4, 0.05), (6, 0.2)]);
        s.apply(&mut c);
        // After merging both pass 0.2; the second threshold 1/3 drops "wor".
        assert_eq!(ids(&c), vec![3]);
        assert_eq!(probs(&c), vec![1.0]);
    }

    #[test]
    fn merge_ties_go_to_first_and_two_passes() {
        let mut s = Infill::new(vocab());
        // Equal p: the prefix token "he" absorbs "hello" whatever their tie order (the donor
        // is the other one unless strictly more likely). x = 0.4 and he = 0.6 survive.
        let mut c = from_probs(&[(5, 0.4), (2, 0.3), (3, 0.3)]);
        s.apply(&mut c);
        let got: Vec<(Token, f32)> = c.as_slice().iter().map(|d| (d.id, d.p)).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, 5);
        assert!((got[0].1 - 0.4).abs() < 1e-6);
        assert_eq!(got[1].0, 2);
        assert!((got[1].1 - 0.6).abs() < 1e-6);
    }

    #[test]
    fn no_text_left_answers_eot() {
        let mut s = Infill::new(vocab());
        // Six unrelated text tokens of 0.165 (below 0.2) and EOS at 0.01, too small to
        // dominate (3 * 0.01 * 7 = 0.21 < 0.99): only EOS passes, so the answer is EOT.
        let mut c = from_probs(&[(2, 0.165), (4, 0.165), (5, 0.165), (7, 0.165), (8, 0.165), (9, 0.165), (1, 0.01)]);
        s.apply(&mut c);
        assert_eq!(c.len(), 1);
        assert_eq!(c.as_slice()[0].id, 0);
        assert_eq!(c.as_slice()[0].logit, 1.0);
    }

    #[test]
    fn no_eot_falls_back_to_eos_and_never_panics() {
        let v: Arc<dyn Vocab> =
            Arc::new(ToyVocab { pieces: vec!["a", "b", "c", "d", "e", "f"], eog: vec![], eot: None, eos: Some(4) });
        let mut s = Infill::new(v);
        let probs6 = [(0, 0.17), (1, 0.17), (2, 0.17), (3, 0.17), (5, 0.16), (4, 0.16)];
        let mut c = from_probs(&probs6);
        s.apply(&mut c);
        assert_eq!(ids(&c), vec![4]);
        let v: Arc<dyn Vocab> =
            Arc::new(ToyVocab { pieces: vec!["a", "b", "c", "d", "e", "f"], eog: vec![], eot: None, eos: None });
        let mut s = Infill::new(v);
        let mut c = from_probs(&probs6);
        s.apply(&mut c);
        assert_eq!(c.len(), 1);
        // Empty arrays and ids outside the vocabulary are tolerated.
        let mut e = Candidates::new();
        s.apply(&mut e);
        assert!(e.is_empty());
        let mut c = from_probs(&[(-4, 0.5), (1000, 0.3), (1, 0.2)]);
        s.apply(&mut c);
        assert!(!c.is_empty());
    }
}
