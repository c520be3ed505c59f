//! DRY ("Don't Repeat Yourself"): penalises tokens that would extend a sequence already seen
//! in the recent history, exponentially in the repeat length: llama.cpp's
//! `llama_sampler_init_dry` (and its token-sequence test constructor).
//!
//! Sequence breakers (e.g. newline) cap how far back a repeat may reach. The history ring, the
//! repeat-count scratch and the per-token maximum table are reused, so `accept` and `apply`
//! do not allocate after warm-up.

use crate::candidates::{Candidates, Token};
use crate::role::Role;
use crate::sampler::Sampler;
use crate::softmax::trunc_to_i32_x86;
use crate::vocab::Vocab;

use super::ring::TokenRing;

/// String breakers longer than this many bytes are cut (llama.cpp's limit).
const MAX_BREAKER_BYTES: usize = 40;
/// Tails of string breakers are cut to this many tokens (llama.cpp's limit).
const MAX_TAIL_TOKENS: usize = 20;
/// Approximate `ln(f32::MAX)`, used to cap the exponent so `base^e` stays finite
/// (upstream's literal, kept verbatim; it rounds to the same f32 as `88.722_84`).
#[allow(clippy::excessive_precision)]
const FLOAT_MAX_LOG: f32 = 88.7228391;

/// Per-token maximum repeat length for one `apply`: dense for vocabulary ids, with a small
/// side list for ids outside it. Cleared by resetting only the touched entries.
#[derive(Clone, Debug, Default)]
struct MaxRepeat {
    dense: Vec<i32>,
    touched: Vec<Token>,
    outside: Vec<(Token, i32)>,
}

impl MaxRepeat {
    const ABSENT: i32 = i32::MIN;

    fn new(n_vocab: usize) -> Self {
        MaxRepeat { dense: vec![Self::ABSENT; n_vocab], touched: Vec::new(), outside: Vec::new() }
    }

    #[inline]
    fn slot(&self, tok: Token) -> Option<usize> {
        usize::try_from(tok).ok().filter(|&t| t < self.dense.len())
    }

    /// Records `len` for `tok`, keeping the larger value.
    #[inline]
    fn raise(&mut self, tok: Token, len: i32) {
        if let Some(t) = self.slot(tok) {
            let cur = self.dense[t];
            if cur == Self::ABSENT {
                self.touched.push(tok);
                self.dense[t] = len;
            } else if cur < len {
                self.dense[t] = len;
            }
        } else if let Some(e) = self.outside.iter_mut().find(|e| e.0 == tok) {
            if e.1 < len {
                e.1 = len;
            }
        } else {
            self.outside.push((tok, len));
        }
    }

    #[inline]
    fn get(&self, tok: Token) -> Option<i32> {
        match self.slot(tok) {
            Some(t) => Some(self.dense[t]).filter(|&v| v != Self::ABSENT),
            None => self.outside.iter().find(|e| e.0 == tok).map(|e| e.1),
        }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.touched.is_empty() && self.outside.is_empty()
    }

    fn clear(&mut self) {
        for &t in &self.touched {
            self.dense[t as usize] = Self::ABSENT;
        }
        self.touched.clear();
        self.outside.clear();
    }
}

/// The DRY sampler. Name `dry`, or `?dry` for the no-op built from "off" parameters.
#[derive(Clone, Debug)]
pub struct Dry {
    /// False for the no-op ("?dry") variant.
    enabled: bool,
    multiplier: f32,
    base: f32,
    allowed_length: i32,
    last_n: usize,
    /// Restart sequences as (head token, tail tokens), sorted by head, insertion order kept
    /// among equal heads (the reference's multimap; its order never affects results).
    breakers: Vec<(Token, Vec<Token>)>,
    last: TokenRing,
    /// The history newest-first (`hist[i]` = i-th most recent), rebuilt per apply.
    hist: Vec<Token>,
    /// Repeat length ending at each history position, counted from the oldest end.
    repeat_count: Vec<i32>,
    max_repeat: MaxRepeat,
}

impl Dry {
    fn build(
        n_vocab: usize,
        multiplier: f32,
        base: f32,
        allowed_length: i32,
        last_n: i32,
        breakers: Vec<(Token, Vec<Token>)>,
    ) -> Self {
        let last_n = last_n.max(0) as usize;
        let enabled = Self::is_enabled(multiplier, base, last_n);
        let mut breakers = if enabled { breakers } else { Vec::new() };
        breakers.sort_by_key(|b| b.0); // stable
                                       // Scratch sized for a full window up front (bounded, so a huge last_n costs nothing
                                       // until used), so the hot path does not grow it later.
        let window = if enabled { last_n.min(1 << 16) } else { 0 };
        let mut max_repeat = if enabled { MaxRepeat::new(n_vocab) } else { MaxRepeat::default() };
        max_repeat.touched.reserve(window);
        Dry {
            enabled,
            multiplier,
            base,
            allowed_length,
            last_n,
            breakers,
            last: TokenRing::new(if enabled { last_n } else { 0 }),
            hist: Vec::with_capacity(window),
            repeat_count: Vec::with_capacity(window),
            max_repeat,
        }
    }

    fn is_enabled(multiplier: f32, base: f32, last_n: usize) -> bool {
        multiplier != 0.0 && base >= 1.0 && last_n != 0
    }

    /// Breakers given as token sequences (llama.cpp's test constructor): head = first token,
    /// tail = the rest; empty sequences are skipped, duplicates kept, tails not capped.
    pub fn from_token_breakers(
        n_vocab: usize,
        multiplier: f32,
        base: f32,
        allowed_length: i32,
        last_n: i32,
        breakers: &[Vec<Token>],
    ) -> Self {
        let processed = breakers.iter().filter(|b| !b.is_empty()).map(|b| (b[0], b[1..].to_vec())).collect();
        Self::build(n_vocab, multiplier, base, allowed_length, last_n, processed)
    }

    /// Breakers as strings, resolved through the vocabulary like `llama_sampler_init_dry`:
    /// each (cut at a NUL, skipped when empty, cut to 40 bytes) registers every token whose
    /// text contains it (empty tail) or ends with a prefix of it (tail = the rest, tokenized,
    /// at most 20 tokens, no duplicate tails per token).
    pub fn new(
        vocab: &dyn Vocab,
        multiplier: f32,
        base: f32,
        allowed_length: i32,
        last_n: i32,
        breakers: &[&str],
    ) -> Self {
        let breakers = token_breakers(vocab, multiplier, base, last_n, breakers);
        Self::from_token_breakers(vocab.n_vocab(), multiplier, base, allowed_length, last_n, &breakers)
    }

    /// The tails registered for `head` (possibly none).
    #[inline]
    fn tails_of(&self, head: Token) -> &[(Token, Vec<Token>)] {
        let lo = self.breakers.partition_point(|b| b.0 < head);
        let hi = lo + self.breakers[lo..].partition_point(|b| b.0 == head);
        &self.breakers[lo..hi]
    }
}

/// The string breakers of [`Dry::new`], resolved the same way, in the token-sequence form of
/// [`Dry::from_token_breakers`] (head token, then tail). Empty when DRY is off, which never
/// reads them then (llama.cpp skips the vocabulary scan too).
pub(crate) fn token_breakers(
    vocab: &dyn Vocab,
    multiplier: f32,
    base: f32,
    last_n: i32,
    breakers: &[&str],
) -> Vec<Vec<Token>> {
    let mut processed: Vec<(Token, Vec<Token>)> = Vec::new();
    if Dry::is_enabled(multiplier, base, last_n.max(0) as usize) {
        let mut word = Vec::new();
        for b in breakers {
            let mut s = b.as_bytes();
            // A C string ends at the first NUL.
            if let Some(z) = s.iter().position(|&c| c == 0) {
                s = &s[..z];
            }
            if s.is_empty() {
                continue;
            }
            if s.len() > MAX_BREAKER_BYTES {
                s = &s[..MAX_BREAKER_BYTES];
            }
            collect_overlaps(vocab, vocab.n_vocab(), s, &mut word, &mut processed);
        }
    }
    processed.into_iter().map(|(head, tail)| std::iter::once(head).chain(tail).collect()).collect()
}

/// Registers, for one breaker string `s`, every vocabulary token that contains it or whose
/// text ends with a proper prefix of it (the reference's `get_overlapping_token_sequences`).
fn collect_overlaps(
    vocab: &dyn Vocab,
    n_vocab: usize,
    s: &[u8],
    word: &mut Vec<u8>,
    out: &mut Vec<(Token, Vec<Token>)>,
) {
    for id in 0..n_vocab {
        let tok = id as Token;
        word.clear();
        vocab.token_piece(tok, word);
        if contains(word, s) {
            out.push((tok, Vec::new()));
            continue;
        }
        for pos in 0..word.len() {
            if word[pos] != s[0] {
                continue;
            }
            // Compare the rest of the word with the breaker; stop at the end of the word.
            let mut i = 1;
            let mut matched = true;
            while i < s.len() && pos + i < word.len() {
                if word[pos + i] != s[i] {
                    matched = false;
                    break;
                }
                i += 1;
            }
            if !matched {
                continue;
            }
            let mut tail = vocab.tokenize(&s[i..]);
            tail.truncate(MAX_TAIL_TOKENS);
            if !out.iter().any(|(h, t)| *h == tok && *t == tail) {
                out.push((tok, tail));
            }
        }
    }
}

/// Whether `needle` (non-empty) occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w == needle)
}

impl Sampler for Dry {
    fn name(&self) -> &str {
        if self.enabled {
            "dry"
        } else {
            "?dry"
        }
    }

    fn accept(&mut self, token: Token) {
        if self.enabled {
            self.last.push(token);
        }
    }

    fn apply(&mut self, cands: &mut Candidates) {
        if !self.enabled {
            return;
        }
        let n = self.last.len().min(self.last_n);
        let allowed = self.allowed_length;
        // n <= last_n <= i32::MAX, so the i32 comparisons below are exact.
        if n as i64 <= allowed as i64 {
            return;
        }
        self.hist.clear();
        self.hist.extend((0..n).map(|i| self.last.rat(i)));
        let hist = &self.hist;

        // 1. A breaker in the history limits how far back a repeat may reach: scan from the
        //    newest token; the first head whose longest fitting tail matches sets the limit.
        let mut rep_limit = n as i32;
        for i in 0..n {
            let tails = self.tails_of(hist[i]);
            if tails.is_empty() {
                continue;
            }
            let mut longest: i64 = -1;
            for (_, tail) in tails {
                let len = tail.len();
                if len as i64 > longest && len <= i && tail.iter().enumerate().all(|(o, &t)| t == hist[i - 1 - o]) {
                    longest = len as i64;
                }
            }
            if longest >= 0 {
                rep_limit = (i as i64 - longest) as i32;
                break;
            }
        }
        if rep_limit < allowed {
            return;
        }

        // 2. Reverse Z-algorithm: for each position, the length of the match between the
        //    context's suffix and the stretch ending there (capped at rep_limit). Index 0 of
        //    `rc` is the oldest position.
        let rc = &mut self.repeat_count;
        rc.clear();
        rc.resize(n, 0);
        let last_ix = n - 1;
        let (mut lt, mut rt) = (0usize, 0usize);
        for k in 1..n {
            if k > rt {
                let mut m = 0usize;
                while m + k < n && hist[m] == hist[m + k] {
                    m += 1;
                }
                rc[last_ix - k] = (m as i32).min(rep_limit);
                if m > 0 {
                    lt = k;
                    rt = k + m - 1;
                }
            } else {
                let p = k - lt;
                let right = (rt - k + 1) as i32;
                if rc[last_ix - p] < right {
                    rc[last_ix - k] = rc[last_ix - p].min(rep_limit);
                } else {
                    let mut j = rt + 1;
                    while j < n && hist[j] == hist[j - k] {
                        j += 1;
                    }
                    rc[last_ix - k] = ((j - k) as i32).min(rep_limit);
                    lt = k;
                    rt = j - 1;
                }
            }
        }

        // 3. The token right after each long-enough stretch would extend that repeat; keep the
        //    longest repeat per token. The newest position is excluded (nothing follows it).
        self.max_repeat.clear();
        for i in 0..n - 1 {
            let r = rc[i];
            if r >= allowed {
                self.max_repeat.raise(hist[n - 2 - i], r);
            }
        }

        // 4. Penalise: multiplier * base^(repeat - allowed), exponent capped so it stays finite.
        let mut max_exp = 0i32;
        if self.base > 1.000001 {
            max_exp = trunc_to_i32_x86(FLOAT_MAX_LOG / self.base.ln());
        }
        if !self.max_repeat.is_empty() {
            for d in cands.as_mut_slice() {
                let Some(r) = self.max_repeat.get(d.id) else {
                    continue;
                };
                // Single-token breakers (empty tail) are never penalised.
                let is_breaker = {
                    let lo = self.breakers.partition_point(|b| b.0 < d.id);
                    self.breakers[lo..].iter().take_while(|b| b.0 == d.id).any(|b| b.1.is_empty())
                };
                if is_breaker {
                    continue;
                }
                let mut e = r.wrapping_sub(allowed);
                if max_exp > 0 && e > max_exp {
                    e = max_exp;
                }
                // pow in f64 (glibc pow, never powi), product in f64, narrowed to f32.
                let pen = (self.multiplier as f64 * (self.base as f64).powf(e as f64)) as f32;
                d.logit -= pen;
            }
        }
        self.max_repeat.clear();
        cands.set_sorted(false);
    }

    fn reset(&mut self) {
        self.last.clear();
        self.hist.clear();
        self.repeat_count.clear();
        self.max_repeat.clear();
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl Dry {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        if self.enabled {
            Role::Sparse
        } else {
            Role::Noop
        }
    }

    /// DRY only penalises tokens that follow a repeat, and those come from its history.
    pub(crate) fn sparse_ids(&self, out: &mut Vec<Token>) {
        out.extend_from_slice(self.last.tokens());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::TokenData;
    use crate::samplers::test_util::logits_of;

    fn cands(n: usize) -> Candidates {
        Candidates::from_token_data((0..n).map(|i| TokenData { id: i as Token, logit: 0.0, p: 0.0 }).collect())
    }

    /// The penalty for a repeat exponent, computed as the reference does.
    fn pen(mult: f32, base: f32, e: i32) -> f32 {
        (mult as f64 * (base as f64).powf(e as f64)) as f32
    }

    #[test]
    fn noop_variants() {
        assert_eq!(Dry::from_token_breakers(4, 0.0, 1.75, 2, 8, &[]).name(), "?dry");
        assert_eq!(Dry::from_token_breakers(4, 1.0, 0.9, 2, 8, &[]).name(), "?dry");
        assert_eq!(Dry::from_token_breakers(4, 1.0, f32::NAN, 2, 8, &[]).name(), "?dry");
        assert_eq!(Dry::from_token_breakers(4, 1.0, 1.75, 2, 0, &[]).name(), "?dry");
        assert_eq!(Dry::from_token_breakers(4, 1.0, 1.75, 2, -1, &[]).name(), "?dry");
        assert_eq!(Dry::from_token_breakers(4, 1.0, 1.0, 2, 8, &[]).name(), "dry");
    }

    /// Spec §4.14 worked example: context `a b c c b c y a b c` gives repeat counts
    /// `0 0 3 1 0 2 0 0 0 0`, so `c` (3), `b` (1) and `y` (2) would extend repeats.
    #[test]
    fn worked_example() {
        let (a, b, c, y) = (0, 1, 2, 3);
        let ctx = [a, b, c, c, b, c, y, a, b, c];
        let mut d = Dry::from_token_breakers(5, 1.0, 2.0, 1, 64, &[]);
        for t in ctx {
            d.accept(t);
        }
        let mut cs = cands(5);
        cs.set_sorted(true);
        d.apply(&mut cs);
        assert_eq!(d.repeat_count, vec![0, 0, 3, 1, 0, 2, 0, 0, 0, 0]);
        // allowed_length 1: c -> 2^(3-1), b -> 2^(1-1), y -> 2^(2-1); token 4 untouched.
        assert_eq!(logits_of(&cs), vec![0.0, -pen(1.0, 2.0, 0), -pen(1.0, 2.0, 2), -pen(1.0, 2.0, 1), 0.0]);
        assert!(!cs.is_sorted());
        assert!(d.max_repeat.is_empty());
    }

    #[test]
    fn early_returns_keep_sorted_flag() {
        // Too little history.
        let mut d = Dry::from_token_breakers(4, 1.0, 1.75, 2, 8, &[]);
        d.accept(0);
        d.accept(0);
        let mut cs = cands(4);
        cs.set_sorted(true);
        d.apply(&mut cs);
        assert!(cs.is_sorted());
        // A breaker right at the end limits repeats below allowed_length.
        let mut d = Dry::from_token_breakers(4, 1.0, 1.75, 2, 8, &[vec![3]]);
        for t in [0, 1, 0, 1, 3] {
            d.accept(t);
        }
        d.apply(&mut cs);
        assert!(cs.is_sorted());
        assert_eq!(logits_of(&cs), vec![0.0; 4]);
    }

    #[test]
    fn multi_token_breaker_limits_repeat() {
        // `5 0 1 2 5 0 1 2`: the suffix `5 0 1 2` repeats, so 5 would extend a repeat of 4.
        let hist = [5, 0, 1, 2, 5, 0, 1, 2];
        let run = |breakers: &[Vec<Token>]| {
            let mut d = Dry::from_token_breakers(6, 1.0, 2.0, 2, 64, breakers);
            for t in hist {
                d.accept(t);
            }
            let mut c = cands(6);
            d.apply(&mut c);
            logits_of(&c)
        };
        assert_eq!(run(&[]), vec![0.0, 0.0, 0.0, 0.0, 0.0, -4.0]);
        // Breaker `5 0` (head 5, tail [0]) matches 3 tokens back: the limit becomes 3 - 1 = 2,
        // so the repeat is capped at 2 and 5 (a multi-token head) gets 2^0.
        assert_eq!(run(&[vec![5, 0]]), vec![0.0, 0.0, 0.0, 0.0, 0.0, -1.0]);
        // A tail that never matches has no effect.
        assert_eq!(run(&[vec![5, 3]]), run(&[]));
    }

    #[test]
    fn exponent_is_capped() {
        // base 1e30: max_exp = trunc(88.72 / ln 1e30) = 1; a long repeat stays finite.
        let mut d = Dry::from_token_breakers(3, 1.0, 1e30, 0, 64, &[]);
        for _ in 0..20 {
            d.accept(0);
        }
        let mut cs = cands(3);
        d.apply(&mut cs);
        let l = logits_of(&cs);
        assert_eq!(l[0], -pen(1.0, 1e30, 1));
        assert!(l[0].is_finite());
        // base exactly 1: no cap, penalty = multiplier.
        let mut d = Dry::from_token_breakers(3, 0.5, 1.0, 0, 64, &[]);
        for _ in 0..20 {
            d.accept(0);
        }
        let mut cs = cands(3);
        d.apply(&mut cs);
        assert_eq!(logits_of(&cs), vec![-0.5, 0.0, 0.0]);
    }

    #[test]
    fn single_token_breaker_not_penalised() {
        // `0 1 3 0 1`: 3 follows the repeated `0 1`.
        let run = |breakers: &[Vec<Token>]| {
            let mut d = Dry::from_token_breakers(4, 1.0, 2.0, 2, 64, breakers);
            for t in [0, 1, 3, 0, 1] {
                d.accept(t);
            }
            let mut c = cands(4);
            c.set_sorted(true);
            d.apply(&mut c);
            (logits_of(&c), c.is_sorted())
        };
        assert_eq!(run(&[]), (vec![0.0, 0.0, 0.0, -1.0], false));
        // As a single-token breaker 3 limits repeats to 2 (still allowed) and is itself exempt.
        assert_eq!(run(&[vec![3]]), (vec![0.0; 4], false));
        // An extra multi-token breaker with the same head does not remove the exemption.
        assert_eq!(run(&[vec![3, 2], vec![3]]), (vec![0.0; 4], false));
    }

    #[test]
    fn out_of_range_tokens_do_not_panic() {
        let mut d = Dry::from_token_breakers(3, 1.0, 2.0, 1, 16, &[vec![-7, 99]]);
        for t in [-1, 99, -1, 99, -1, 99, i32::MIN, 5, -1] {
            d.accept(t);
        }
        let mut cs = Candidates::from_token_data(vec![
            TokenData { id: 99, logit: 0.0, p: 0.0 },
            TokenData { id: -1, logit: 0.0, p: 0.0 },
            TokenData { id: 1, logit: 0.0, p: 0.0 },
            TokenData { id: 1000, logit: 0.0, p: 0.0 },
        ]);
        d.apply(&mut cs);
        // `-1 99` repeats; 99 follows `-1` so it is penalised even though it is outside the
        // vocabulary (the reference keys its map by raw id).
        assert_eq!(logits_of(&cs), vec![-1.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn reset_and_clone() {
        let mut d = Dry::from_token_breakers(3, 1.0, 2.0, 1, 16, &[]);
        for t in [0, 1, 0, 1] {
            d.accept(t);
        }
        let mut e = d.clone_box();
        d.reset();
        let mut cs = cands(3);
        d.apply(&mut cs);
        assert_eq!(logits_of(&cs), vec![0.0; 3]);
        e.apply(&mut cs);
        assert!(cs.as_slice()[0].logit < 0.0);
    }

    /// Tokens are byte strings; tokenize is greedy longest match (unknown bytes skipped).
    struct ToyVocab(Vec<&'static [u8]>);

    impl Vocab for ToyVocab {
        fn n_vocab(&self) -> usize {
            self.0.len()
        }
        fn token_piece(&self, token: Token, out: &mut Vec<u8>) {
            out.clear();
            out.extend_from_slice(self.0[token as usize]);
        }
        fn tokenize(&self, text: &[u8]) -> Vec<Token> {
            let mut out = Vec::new();
            let mut i = 0;
            while i < text.len() {
                let best = (0..self.0.len())
                    .filter(|&t| !self.0[t].is_empty() && text[i..].starts_with(self.0[t]))
                    .max_by_key(|&t| (self.0[t].len(), std::cmp::Reverse(t)));
                match best {
                    Some(t) => {
                        out.push(t as Token);
                        i += self.0[t].len();
                    }
                    None => i += 1,
                }
            }
            out
        }
        fn is_eog(&self, _token: Token) -> bool {
            false
        }
        fn eot(&self) -> Option<Token> {
            None
        }
        fn eos(&self) -> Option<Token> {
            None
        }
    }

    fn toy() -> ToyVocab {
        ToyVocab(vec![b"<s>", b"\n", b"a", b"b", b"c", b"ab", b"x\n", b":", b"aba", b"q:q", b"bc", b""])
    }

    #[test]
    fn string_breakers_resolved_through_vocab() {
        let v = toy();
        let d = Dry::new(&v, 1.0, 1.75, 2, 64, &["\n", ":", "", "abc", "abc", "\0ignored", "b\0c"]);
        let mut got = d.breakers.clone();
        got.sort();
        let want: Vec<(Token, Vec<Token>)> = vec![
            (1, vec![]),   // "\n" contains "\n"
            (2, vec![10]), // "a" + tokenize("bc") = ["bc"] (longest match)
            (3, vec![]),   // "b" contains the NUL-cut breaker "b"
            (5, vec![4]),  // "ab" + tokenize("c")
            (5, vec![]),   // "ab" contains "b"
            (6, vec![]),   // "x\n"
            (7, vec![]),   // ":"
            (8, vec![10]), // "aba": position 2 starts "abc", tail "bc"
            (8, vec![]),   // "aba" contains "b"
            (9, vec![]),   // "q:q"
            (10, vec![]),  // "bc" contains "b"
        ];
        let mut want = want;
        want.sort();
        // "abc" listed twice adds its partial tails only once per token.
        assert_eq!(got, want);
    }

    #[test]
    fn string_breakers_truncated_and_disabled() {
        let v = toy();
        // 1 + 49 bytes: cut to 40, so the tail after "a" is 39 "b"s -> 20 tokens kept.
        let long = format!("a{}", "b".repeat(49));
        let d = Dry::new(&v, 1.0, 1.75, 2, 64, &[long.as_str()]);
        let tail_of_a: Vec<_> = d.tails_of(2).iter().map(|b| b.1.clone()).collect();
        assert_eq!(tail_of_a, vec![vec![3; 20]]);
        // "ab" + 38 "b"s -> 20 tokens as well; "b" and "bc" do not start with 'a' and do not
        // contain the whole breaker.
        assert_eq!(d.tails_of(5).len(), 1);
        assert!(d.tails_of(3).is_empty());
        // A disabled sampler never consults the vocabulary.
        let off = Dry::new(&v, 0.0, 1.75, 2, 64, &["\n"]);
        assert_eq!(off.name(), "?dry");
        assert!(off.breakers.is_empty());
    }
}
