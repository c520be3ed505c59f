//! [`TokenSampler`]: a chain plus its reusable candidate buffer — logits in, token out.
//!
//! This is what a generation loop holds per sequence. After the first call, [`TokenSampler::sample`]
//! allocates nothing: the candidate buffer and every sampler's scratch space are reused.
//!
//! # Fast paths
//!
//! For `f32` rows of at least 1024 logits, chains llama.cpp users run most often are sampled
//! without building the candidate array of the whole vocabulary. Each gives the token llama.cpp
//! gives and consumes the random streams identically (the differential tests hold them to it).
//! In every case the chain may start with no-op samplers and sparse ones (penalties, logit
//! bias, DRY), which are applied to the few ids they touch.
//!
//! * top-k of at most 128: the top-k is replayed straight from the row (`top_k_from_row`) and the
//!   rest of the chain runs on the `k` survivors.
//! * top-p (then min-p, plain temperature, `dist`): when the nucleus lies within llama.cpp's
//!   first 256 sorted candidates, it is built from a bracket of the softmax sum and the top
//!   buckets of llama.cpp's sort (`fast::top_p`); the rest of the chain runs on it.
//!   When the nucleus is wider (a flat row), and `dist` ends the chain, only the buckets
//!   holding it are sorted, by value, and the draw runs on them (`fast::top_p_wide`); the
//!   selected id is read off the row (replaying llama.cpp's sort of one bucket on a tie).
//! * plain temperature then `mirostat-v2`: the kept prefix is built from the exact sorted sum
//!   (`fast::mirostat_v2`) and the sampler finishes on it; a long prefix (or one with equal
//!   values) is sorted by value alone, and the selected id read off the row (replaying
//!   llama.cpp's sort of one bucket on a tie), which defers the candidates like the last kind.
//!   When that prefix also holds every term of the first softmax's sum, nothing is sorted: the
//!   draw is decided from per-value-range masses of the exact weights, only the range holding
//!   the crossing sorted and walked, with llama.cpp's `f64` rounding bounded (literal replay
//!   for a draw within the bound of a boundary).
//! * `dist` alone, or `top-n-sigma` → plain temperature → `dist`: the draw is decided from
//!   bounds on block sums of the exponentials (`fast::dist`, `fast::top_n_sigma`), with exact arithmetic
//!   only where a bound is too wide to decide.
//!
//! When a fast path cannot decide exactly, it leaves the step to the full path before anything
//! is consumed. The first three leave exactly the full path's candidates (the wide top-p
//! path and mirostat's value path defer them like the last kind). The last kind never
//! builds the final candidate array (building it would cost more than the whole draw): after
//! such a step [`TokenSampler::candidates_complete`] is `false` and
//! [`TokenSampler::candidates`] holds only the selected token (`id`, final `logit`, `p` NaN,
//! `selected = Some(0)`). Call [`TokenSampler::materialize_candidates`] with the same row to get
//! the exact array the full path leaves (ids, order, logits and `p` bits, `sorted`, `selected`),
//! or turn the fast paths off with [`TokenSampler::set_fast_path`].

use crate::candidates::{Candidates, Token, TokenData};
use crate::chain::Chain;
use crate::error::SampleError;
use crate::fast::dist::{dist_list, dist_row, DistScratch};
use crate::fast::mirostat_v2::{
    bounded_len as miro_bounded_len, id_at as miro_id_at, id_of_value as miro_id_of_value, mirostat_prefix,
    pick as miro_pick, Miro, MiroScratch,
};
use crate::fast::row::{Row, RowScan};
use crate::fast::top_k::{top_k_from_row, BadLogit, TopKScratch};
use crate::fast::top_n_sigma::{sigma_survivors, Sigma, SigmaScratch};
use crate::fast::top_p::{top_p_nucleus, TopP as Nucleus, TopPScratch};
use crate::fast::top_p_wide::{
    draw_tail, fill_kept, id_at as wide_id_at, min_p_draw, value_at as wide_value_at, wide_nucleus, TailOp, TailOps,
    WideScratch, MAX_TEMPS,
};
use crate::logits::{check_logits, Logits};
use crate::sampler::Sampler;
use crate::samplers::dist::dist_normalize;
use crate::samplers::mirostat_v2::kept_len as mirostat_kept_len;
use crate::softmax::softmax;
use crate::step::{Role, Step};
use half::slice::HalfFloatSliceExt;

/// One sequence's sampler: validates the logits, fills the candidates, runs the chain and
/// accepts the chosen token.
#[derive(Clone, Debug)]
pub struct TokenSampler {
    chain: Chain,
    cands: Candidates,
    fast: FastScratch,
    /// The fast-path plan compiled for the chain and a row length; `None` after any edit of
    /// the chain (or of the fast-path switch), compiled again at the next step.
    plan: Option<(usize, Plan)>,
}

/// Buffers of the whole-vocabulary fast paths, reused between steps.
#[derive(Clone, Debug, Default)]
struct FastScratch {
    /// Set to false to always run the chain on the full candidate array.
    disabled: bool,
    ids: Vec<Token>,
    /// The sparse prefix's effect at the last fast step: touched ids (sorted) and their logits.
    sparse: Candidates,
    heap: Vec<TokenData>,
    top_k: TopKScratch,
    dist: DistScratch,
    /// The max pass of the top-p paths.
    scan: RowScan,
    sigma: SigmaScratch,
    miro: MiroScratch,
    top_p: TopPScratch,
    wide: WideScratch,
    /// A half-precision row widened to f32 (see [`TokenSampler::apply`]).
    widened: Vec<f32>,
    xs: Vec<f32>,
    es: Vec<f32>,
    /// Set when the last step left only the selected token in `cands`.
    deferred: Option<Deferred>,
}

/// What a deferred step needs to rebuild its final candidates from the same row.
#[derive(Clone, Copy, Debug)]
struct Deferred {
    /// First chain member after the sparse prefix (members before it are in `sparse`).
    start: usize,
    /// The member that selected (`dist` or `mirostat-v2`); members `start..end_at` are
    /// replayed on the rebuilt array.
    end_at: usize,
    /// What that member did.
    end: End,
    /// The selected index in the final array.
    selected: usize,
}

/// The selecting member of a deferred step.
#[derive(Clone, Copy, Debug)]
enum End {
    /// `dist`: the final array is the whole (sorted or not) view, normalised.
    Dist,
    /// `mirostat-v2` with maximum surprise `mu` (its value before the step's update): the final
    /// array is the sorted prefix it keeps, normalised again (the sampler's state had already
    /// moved; it is not touched). The fast path may not have counted that prefix exactly.
    Mirostat { mu: f32 },
}

/// Which fast path a chain allows: compiled once per chain (and row length) from the closed
/// set of [`Step`]s, so a [`Step::Custom`] is never skipped.
#[derive(Clone, Copy, Debug)]
enum Plan {
    Full,
    /// Members `..at` are no-op or sparse; member `at` is a top-k with this `k`.
    TopK {
        at: usize,
        k: usize,
    },
    /// Members `..at` are no-op or sparse; member `at` is `dist`.
    Dist {
        at: usize,
    },
    /// Members `..at` are no-op or sparse, `at` is top-n-sigma, then no-ops and at most one
    /// plain temperature (`temp`), then `dist` at `dist_at`.
    Sigma {
        at: usize,
        n: f32,
        temp: Option<f32>,
        dist_at: usize,
    },
    /// Members `..at` are no-op or sparse, then at most one plain temperature and no-ops,
    /// then `mirostat-v2` at `miro_at`.
    Mirostat {
        at: usize,
        temp: Option<f32>,
        miro_at: usize,
    },
    /// Members `..at` are no-op or sparse, `at` is top-p, then only no-ops, min-p, plain
    /// temperatures and `dist` (which recompute or ignore `p`); `dist_at` when `dist` is the
    /// last member (a wide nucleus is then drawn from without its final array).
    TopP {
        at: usize,
        p: f32,
        min_keep: usize,
        dist_at: Option<usize>,
    },
}

impl TokenSampler {
    /// Wraps a chain (built by [`crate::SamplingParams::build`] or by hand).
    pub fn new(chain: Chain) -> Self {
        TokenSampler { chain, cands: Candidates::new(), fast: FastScratch::default(), plan: None }
    }

    /// Turns the whole-vocabulary fast paths off or on (on by default). Tokens and random
    /// streams are identical either way; with the fast paths off, [`TokenSampler::candidates`]
    /// always holds the complete final array.
    pub fn set_fast_path(&mut self, enabled: bool) {
        self.fast.disabled = !enabled;
        self.plan = None;
    }

    /// The chain.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The chain, mutable (to insert a user sampler, for example). The fast-path plan is
    /// compiled again at the next step.
    pub fn chain_mut(&mut self) -> &mut Chain {
        self.plan = None;
        &mut self.chain
    }

    /// The candidates as the chain left them at the last step (the distribution sampled from)
    /// — unless that step took a fast path that does not build them
    /// ([`TokenSampler::candidates_complete`] is then `false`): they hold only the selected
    /// token, with `p` NaN. See [`TokenSampler::materialize_candidates`].
    pub fn candidates(&self) -> &Candidates {
        &self.cands
    }

    /// Whether [`TokenSampler::candidates`] is the complete final array of the last step.
    pub fn candidates_complete(&self) -> bool {
        self.fast.deferred.is_none()
    }

    /// The exact final candidates of the last step — what the full path leaves, bit for bit —
    /// rebuilt from `logits`, which must be the row that step sampled from. Valid after the
    /// token was accepted (the sparse samplers' effect is kept from the step itself); cheap
    /// when [`TokenSampler::candidates_complete`] already holds. A half-precision row is read
    /// as its f32 widening, as [`TokenSampler::apply`] read it.
    pub fn materialize_candidates<'a>(&mut self, logits: impl Into<Logits<'a>>) -> &Candidates {
        if let Some(d) = self.fast.deferred.take() {
            match logits.into() {
                Logits::F32(row) => self.cands.fill_f32(row),
                half => {
                    widen(half, &mut self.fast.widened);
                    self.cands.fill_f32(&self.fast.widened);
                }
            }
            {
                let data = self.cands.as_mut_slice();
                for p in self.fast.sparse.as_slice() {
                    if let Some(t) = data.get_mut(p.id as usize) {
                        t.logit = p.logit;
                    }
                }
            }
            for s in &mut self.chain.samplers_mut()[d.start..d.end_at] {
                s.apply(&mut self.cands);
            }
            match d.end {
                End::Dist => dist_normalize(&mut self.cands, d.selected),
                End::Mirostat { mu } => {
                    // mirostat v2's apply without its draw: sort and normalise, keep the
                    // prefix, normalise it again.
                    softmax(&mut self.cands, true);
                    let keep = mirostat_kept_len(&self.cands, mu);
                    self.cands.truncate(keep);
                    softmax(&mut self.cands, true);
                    self.cands.set_selected(Some(d.selected));
                }
            }
        }
        &self.cands
    }

    /// Samples one token from `logits` and accepts it into the chain's history.
    pub fn sample<'a>(&mut self, logits: impl Into<Logits<'a>>) -> Result<Token, SampleError> {
        let tok = self.apply(logits)?;
        self.chain.accept(tok);
        Ok(tok)
    }

    /// Runs the chain on `logits` and returns the selected token *without* accepting it.
    /// Uses a fast path when the chain allows one (see the module documentation).
    pub fn apply<'a>(&mut self, logits: impl Into<Logits<'a>>) -> Result<Token, SampleError> {
        let logits = logits.into();
        self.fast.deferred = None;
        if let Logits::F32(row) = logits {
            if let Some(tok) = self.try_fast(row)? {
                return Ok(tok);
            }
            return self.apply_steered(logits, |_| {});
        }
        // Half-precision rows mean their f32 widening (every path reads them through
        // `to_f32`), so they are widened once into a reused buffer and take the f32 fast paths
        // too, instead of the full path over the whole vocabulary (about 30x slower).
        let mut wide = std::mem::take(&mut self.fast.widened);
        widen(logits, &mut wide);
        let out = match self.try_fast(&wide) {
            Ok(Some(tok)) => Ok(tok),
            Ok(None) => self.apply_steered(Logits::F32(&wide), |_| {}),
            Err(e) => Err(e),
        };
        self.fast.widened = wide;
        out
    }

    /// The fast path the chain allows on a row of `n` logits, compiled at the first step and
    /// after each edit of the chain.
    fn plan(&mut self, n: usize) -> Plan {
        match self.plan {
            Some((m, p)) if m == n => p,
            _ => {
                let p = if self.fast.disabled { Plan::Full } else { compile(self.chain.samplers(), n) };
                self.plan = Some((n, p));
                p
            }
        }
    }

    /// Applies the sparse samplers among members `..upto` to the ids they touch; the result
    /// (sorted by id) is left in `self.fast.sparse`.
    fn sparse_prefix(&mut self, row: &[f32], upto: usize) {
        let f = &mut self.fast;
        f.ids.clear();
        for s in &self.chain.samplers()[..upto] {
            if s.role() == Role::Sparse {
                s.sparse_ids(&mut f.ids);
            }
        }
        let n = row.len();
        f.ids.retain(|&t| t >= 0 && (t as usize) < n);
        f.ids.sort_unstable();
        f.ids.dedup();
        f.sparse.fill_from_ids(&f.ids, row);
        for s in &mut self.chain.samplers_mut()[..upto] {
            if s.role() == Role::Sparse {
                s.apply_sparse(&mut f.sparse);
            }
        }
    }

    /// Whether a sparse sampler made a NaN or `+inf` in `self.fast.sparse` (the full path must
    /// run then).
    // The negation is how NaN is caught: it holds for NaN, where `l >= inf` does not.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    fn sparse_has_nan_or_inf(&self) -> bool {
        self.fast.sparse.as_slice().iter().any(|p| !(p.logit < f32::INFINITY))
    }

    /// Runs the chain through a fast path when it allows one; `None` when the full path must
    /// run (nothing was consumed then).
    fn try_fast(&mut self, row: &[f32]) -> Result<Option<Token>, SampleError> {
        match self.plan(row.len()) {
            Plan::Full => Ok(None),
            Plan::TopK { at, k } => {
                self.sparse_prefix(row, at);
                let f = &mut self.fast;
                top_k_from_row(row, k, f.sparse.as_slice(), &mut f.heap, &mut f.top_k)
                    .map_err(|BadLogit(i)| bad_logit(row, i))?;
                self.cands.fill_from(&f.heap);
                self.cands.set_sorted(true);
                for s in &mut self.chain.samplers_mut()[at + 1..] {
                    s.apply(&mut self.cands);
                }
                self.selected().map(Some)
            }
            Plan::Dist { at } => {
                self.sparse_prefix(row, at);
                if self.sparse_has_nan_or_inf() {
                    return Ok(None); // a patch made a NaN or +inf: leave it to the full path
                }
                let Step::Dist(d) = &mut self.chain.samplers_mut()[at] else {
                    return Ok(None);
                };
                let rng = d.rng_mut();
                let f = &mut self.fast;
                let r = Row { logits: row, patches: f.sparse.as_slice() };
                match dist_row(r, rng, &mut f.dist) {
                    Err(i) => Err(bad_logit(row, i)),
                    Ok(None) => Ok(None),
                    Ok(Some(j)) => {
                        let logit = r.get(j);
                        self.defer(at, at, j, logit);
                        self.selected().map(Some)
                    }
                }
            }
            Plan::Sigma { at, n, temp, dist_at } => {
                self.sparse_prefix(row, at);
                if self.sparse_has_nan_or_inf() {
                    return Ok(None);
                }
                let f = &mut self.fast;
                let r = Row { logits: row, patches: f.sparse.as_slice() };
                match sigma_survivors(r, n, &mut f.sigma) {
                    Sigma::Bad(i) => return Err(bad_logit(row, i)),
                    Sigma::Degenerate => return Ok(None),
                    Sigma::Done => {}
                }
                if let Some(t) = temp {
                    for v in f.sigma.vals.iter_mut() {
                        *v /= t;
                    }
                }
                let Step::Dist(d) = &mut self.chain.samplers_mut()[dist_at] else {
                    return Ok(None);
                };
                let rng = d.rng_mut();
                let u = rng.uniform_f64();
                let f = &mut self.fast;
                let (tok, logit) = match dist_list(&f.sigma.vals, u, &mut f.es, &mut f.xs) {
                    Some(k) if k < f.sigma.ids.len() => (f.sigma.ids[k] as usize, f.sigma.vals[k]),
                    // u == 0 selects index 0 (token 0), survivor or not; no crossing selects
                    // the last index.
                    other => {
                        let j = if other.is_none() { 0 } else { row.len() - 1 };
                        let v = match f.sigma.ids.binary_search(&(j as i32)) {
                            Ok(k) => f.sigma.vals[k],
                            Err(_) => f32::NEG_INFINITY,
                        };
                        (j, v)
                    }
                };
                self.defer(at, dist_at, tok, logit);
                self.selected().map(Some)
            }
            Plan::TopP { at, p, min_keep, dist_at } => {
                self.sparse_prefix(row, at);
                if self.sparse_has_nan_or_inf() {
                    return Ok(None);
                }
                let f = &mut self.fast;
                let r = Row { logits: row, patches: f.sparse.as_slice() };
                // The narrow path scans the row itself (NaN and `+inf` included).
                match top_p_nucleus(r, p, min_keep, &mut f.scan, &mut f.top_p, &mut self.cands) {
                    Nucleus::Bad(i) => Err(bad_logit(row, i)),
                    Nucleus::Skip => Ok(None),
                    Nucleus::Full { m, beyond } => {
                        let Some(dist_at) = dist_at else {
                            return Ok(None);
                        };
                        let steps = self.chain.samplers_mut();
                        let ops = wide_tail_ops(&steps[at + 1..dist_at]);
                        // min-p decides what is kept: no sort (the RNG is untouched when not).
                        if let (Some(ops), Step::Dist(d)) = (&ops, &mut steps[dist_at]) {
                            if let Some((i, v, logit)) =
                                min_p_draw(r, m, p, beyond, ops.as_slice(), d.rng_mut(), &mut f.wide)
                            {
                                let id = wide_id_at(r, i, v, &mut f.wide);
                                return Ok(Some(self.defer_wide(row, at, dist_at, i, id, logit)?));
                            }
                        }
                        let Some(w) = wide_nucleus(r, m, p, min_keep, &mut f.wide) else {
                            return Ok(None);
                        };
                        let (i, logit) = match ops {
                            Some(ops) => {
                                let Step::Dist(d) = &mut steps[dist_at] else {
                                    return Ok(None);
                                };
                                draw_tail(&w, ops.as_slice(), d.rng_mut(), &mut f.wide)
                            }
                            None => {
                                fill_kept(&w, &mut f.wide, &mut self.cands);
                                for s in &mut steps[at + 1..] {
                                    s.apply(&mut self.cands);
                                }
                                let Some(i) = self.cands.selected().filter(|&i| i < self.cands.len()) else {
                                    return self.selected().map(Some);
                                };
                                (i, self.cands.as_slice()[i].logit)
                            }
                        };
                        let f = &mut self.fast;
                        let r = Row { logits: row, patches: f.sparse.as_slice() };
                        let id = wide_id_at(r, i, wide_value_at(&f.wide, i), &mut f.wide);
                        self.defer_wide(row, at, dist_at, i, id, logit).map(Some)
                    }
                    Nucleus::Nucleus => {
                        for s in &mut self.chain.samplers_mut()[at + 1..] {
                            s.apply(&mut self.cands);
                        }
                        self.selected().map(Some)
                    }
                }
            }
            Plan::Mirostat { at, temp, miro_at } => {
                self.sparse_prefix(row, at);
                if self.sparse_has_nan_or_inf() {
                    return Ok(None);
                }
                let ss = self.chain.samplers_mut();
                let Step::MirostatV2(miro) = &mut ss[miro_at] else {
                    return Ok(None);
                };
                let f = &mut self.fast;
                let r = Row { logits: row, patches: f.sparse.as_slice() };
                // The maximum surprise this step cuts at (the draw then moves it).
                let mu = miro.mu();
                match mirostat_prefix(r, temp, mu, &mut f.miro, &mut self.cands) {
                    Miro::Bad(i) => Err(bad_logit(row, i)),
                    Miro::Full => Ok(None),
                    Miro::Prefix => {
                        miro.finish(&mut self.cands);
                        self.selected().map(Some)
                    }
                    Miro::Values => {
                        miro.finish_normalized(&mut self.cands);
                        let keep = self.cands.len();
                        let i = match self.cands.selected() {
                            Some(i) if i < keep => i,
                            _ => return self.selected().map(Some),
                        };
                        let id = miro_id_at(r, i, &mut f.miro);
                        // The exact value of that token (the sorted values hold `+0.0` for
                        // both zeros).
                        let logit = match temp {
                            Some(t) => r.get(id as usize) / t,
                            None => r.get(id as usize),
                        };
                        self.defer_token(at, miro_at, End::Mirostat { mu }, i, id, logit);
                        self.selected().map(Some)
                    }
                    Miro::Bounded => {
                        // At least the number kept (the exact count is left to
                        // `materialize_candidates`, which recounts from `mu`).
                        let keep = miro_bounded_len(&f.miro);
                        let mut v = 0.0f32;
                        let cands = &mut self.cands;
                        let i = miro.draw_with(keep, |u| {
                            let (i, p, val) = miro_pick(r, u, &mut f.miro, cands);
                            v = val;
                            (i, p)
                        });
                        let id = miro_id_of_value(r, v, i, &mut f.miro);
                        let logit = match temp {
                            Some(t) => r.get(id as usize) / t,
                            None => r.get(id as usize),
                        };
                        self.defer_token(at, miro_at, End::Mirostat { mu }, i, id, logit);
                        self.selected().map(Some)
                    }
                }
            }
        }
    }

    /// Leaves only the selected token in `cands` and records how to rebuild the rest (for
    /// steps whose final array is in id order: the index is the token).
    fn defer(&mut self, start: usize, dist_at: usize, selected: usize, logit: f32) {
        self.defer_token(start, dist_at, End::Dist, selected, selected as Token, logit);
    }

    /// [`TokenSampler::defer`] for a final array at index `selected` holding token `id`, left
    /// by `end` at member `end_at`.
    fn defer_token(&mut self, start: usize, end_at: usize, end: End, selected: usize, id: Token, logit: f32) {
        self.cands.fill_from(&[TokenData { id, logit, p: f32::NAN }]);
        self.cands.set_selected(Some(0));
        self.fast.deferred = Some(Deferred { start, end_at, end, selected });
    }

    /// Defers a wide top-p step that selected sorted index `i`, token `id`, whose logit dist
    /// saw as `logit` (from the sorted values, which hold `+0.0` for both zeros: the
    /// temperature keeps a zero's sign, so the token's own zero decides it).
    fn defer_wide(
        &mut self,
        row: &[f32],
        at: usize,
        dist_at: usize,
        i: usize,
        id: Token,
        logit: f32,
    ) -> Result<Token, SampleError> {
        let r = Row { logits: row, patches: self.fast.sparse.as_slice() };
        let raw = r.get(id as usize);
        let logit = if raw == 0.0 { logit.copysign(raw) } else { logit };
        self.defer_token(at, dist_at, End::Dist, i, id, logit);
        self.selected()
    }

    fn selected(&self) -> Result<Token, SampleError> {
        let sel = match self.cands.selected_token() {
            Some(t) => t,
            None if self.cands.is_empty() => return Err(SampleError::NoCandidates),
            None => return Err(SampleError::NothingSelected),
        };
        if sel.logit == f32::NEG_INFINITY || sel.logit.is_nan() {
            return Err(SampleError::NoCandidates);
        }
        Ok(sel.id)
    }

    /// Like [`TokenSampler::sample`], but lets `steer` edit the candidates (logit steering:
    /// boost, ban or rescale tokens) after they are filled and before the chain runs. The
    /// caller's logits are never modified and the vocabulary is not copied twice.
    pub fn sample_steered<'a>(
        &mut self,
        logits: impl Into<Logits<'a>>,
        steer: impl FnOnce(&mut Candidates),
    ) -> Result<Token, SampleError> {
        let tok = self.apply_steered(logits, steer)?;
        self.chain.accept(tok);
        Ok(tok)
    }

    /// Runs the chain and returns the selected token *without* accepting it (call
    /// [`TokenSampler::accept`] once the token is committed, e.g. after a grammar check).
    pub fn apply_steered<'a>(
        &mut self,
        logits: impl Into<Logits<'a>>,
        steer: impl FnOnce(&mut Candidates),
    ) -> Result<Token, SampleError> {
        let logits = logits.into();
        self.fast.deferred = None;
        check_logits(logits)?;
        self.cands.fill(logits);
        steer(&mut self.cands);
        self.chain.apply(&mut self.cands);
        self.selected()
    }

    /// [`TokenSampler::apply_steered`] that also reports each sampler's effect: `counts` gets
    /// the number of live candidates (logit above `-inf`) after `steer`, then after each chain
    /// member in order (see [`Chain::apply_counting`]). It always runs the full path, so the
    /// token and random streams are those of [`TokenSampler::apply`] (the fast paths are exact)
    /// and [`TokenSampler::candidates`] is complete afterwards. Costs a pass over the
    /// candidates per member: meant for inspection (the server's `trace_steps`), not for speed.
    pub fn apply_traced<'a>(
        &mut self,
        logits: impl Into<Logits<'a>>,
        steer: impl FnOnce(&mut Candidates),
        counts: &mut Vec<usize>,
    ) -> Result<Token, SampleError> {
        let logits = logits.into();
        self.fast.deferred = None;
        check_logits(logits)?;
        self.cands.fill(logits);
        steer(&mut self.cands);
        self.chain.apply_counting(&mut self.cands, counts);
        self.selected()
    }

    /// Feeds a committed token (a prompt token, or a generated one) into the chain's history.
    pub fn accept(&mut self, token: Token) {
        self.chain.accept(token);
    }

    /// Clears history and restarts random streams from their seeds.
    pub fn reset(&mut self) {
        self.chain.reset();
    }
}

/// Compiles the fast path a chain allows on rows of `n` logits (see [`Plan`]).
fn compile(steps: &[Step], n: usize) -> Plan {
    const MIN_VOCAB: usize = 1024;
    if n < MIN_VOCAB {
        return Plan::Full;
    }
    for (i, s) in steps.iter().enumerate() {
        match s.role() {
            Role::Noop | Role::Sparse => {}
            Role::TopK(k) if k > 0 && (k as usize) <= 128 && (k as usize) < n => {
                return Plan::TopK { at: i, k: k as usize };
            }
            Role::Dist => return Plan::Dist { at: i },
            Role::TopNSigma => return compile_sigma(steps, i),
            Role::Temp | Role::MirostatV2 => return compile_mirostat(steps, i),
            // llama.cpp's top-p sorts arrays of up to 1024 candidates whole with `std::sort`,
            // whose order among equal values the fast path does not replay (it replays the
            // bucket sort of longer arrays).
            Role::TopP if n > crate::fast::top_p::ADAPTIVE => return compile_top_p(steps, i),
            _ => return Plan::Full,
        }
    }
    Plan::Full
}

/// top-p at `at`, then only members that recompute or ignore `p`, ending with `dist`.
fn compile_top_p(steps: &[Step], at: usize) -> Plan {
    let Step::TopP(t) = &steps[at] else {
        return Plan::Full;
    };
    let (p, min_keep) = t.params();
    for (i, s) in steps.iter().enumerate().skip(at + 1) {
        match s.role() {
            Role::Noop | Role::MinP | Role::Temp => {}
            Role::Dist => {
                let dist_at = (i + 1 == steps.len()).then_some(i);
                return Plan::TopP { at, p, min_keep, dist_at };
            }
            _ => return Plan::Full,
        }
    }
    Plan::Full
}

/// The members between a wide top-p and its dist as [`draw_tail`] replays them (no-ops left
/// out), or `None` when there are more temperatures than it takes.
fn wide_tail_ops(steps: &[Step]) -> Option<TailOps> {
    let mut ops = TailOps::new();
    let mut temps = 0;
    for s in steps {
        match (s.role(), s) {
            (Role::Noop, _) => {}
            (Role::MinP, Step::MinP(mp)) => {
                let (p, min_keep) = mp.params();
                ops.push(TailOp::MinP { p, min_keep })?;
            }
            (Role::Temp, _) if temps < MAX_TEMPS => {
                ops.push(TailOp::Temp(temp_of(s)?))?;
                temps += 1;
            }
            _ => return None,
        }
    }
    Some(ops)
}

/// The temperature of a [`Role::Temp`] step.
fn temp_of(s: &Step) -> Option<f32> {
    match s {
        Step::Temp(t) => Some(t.t()),
        Step::TempExt(t) => Some(t.t()),
        _ => None,
    }
}

/// At most one temperature (and no-ops) from `at`, then `mirostat-v2`.
fn compile_mirostat(steps: &[Step], at: usize) -> Plan {
    let mut temp = None;
    for (i, s) in steps.iter().enumerate().skip(at) {
        match s.role() {
            Role::Noop => {}
            Role::Temp if temp.is_none() => match temp_of(s) {
                Some(t) => temp = Some(t),
                None => return Plan::Full,
            },
            Role::MirostatV2 => return Plan::Mirostat { at, temp, miro_at: i },
            _ => return Plan::Full,
        }
    }
    Plan::Full
}

/// top-n-sigma at `at`, then no-ops and at most one temperature, then `dist`.
fn compile_sigma(steps: &[Step], at: usize) -> Plan {
    let Step::TopNSigma(t) = &steps[at] else {
        return Plan::Full;
    };
    let n = t.n();
    let mut temp = None;
    for (i, s) in steps.iter().enumerate().skip(at + 1) {
        match s.role() {
            Role::Noop => {}
            Role::Temp if temp.is_none() => match temp_of(s) {
                Some(t) => temp = Some(t),
                None => return Plan::Full,
            },
            Role::Dist => return Plan::Sigma { at, n, temp, dist_at: i },
            _ => return Plan::Full,
        }
    }
    Plan::Full
}

/// The error for a NaN or `+inf` logit at `i`.
fn bad_logit(row: &[f32], i: usize) -> SampleError {
    if row[i].is_nan() {
        SampleError::NanLogit { token: i }
    } else {
        SampleError::PosInfLogit { token: i }
    }
}

/// How often each tier of the dist fast path decided a draw in this process:
/// `[coarse, near, exact, sequential]` (see `fast::dist`). For benchmarks and tests; this and
/// the other `*_tier_counts` count only with the `tier-counts` feature (zeros without it).
#[doc(hidden)]
pub fn dist_tier_counts() -> [u64; 4] {
    crate::fast::dist::tier_counts()
}

/// How often the dist fast path's staged refinement of the widest coarse blocks was tried
/// after the coarse bounds failed: `[decided, left to the whole near pass]` (its decisions are
/// also counted as `near` by [`dist_tier_counts`]). For benchmarks and tests.
#[doc(hidden)]
pub fn dist_partial_counts() -> [u64; 2] {
    crate::fast::dist::partial_counts()
}

/// How often the top-n-sigma fast path decided its cutoff from bounds / needed the exact replay
/// of llama.cpp's sums: `[bounds, exact]`. For benchmarks and tests.
#[doc(hidden)]
pub fn sigma_tier_counts() -> [u64; 2] {
    crate::fast::top_n_sigma::tier_counts()
}

/// How often the mirostat-v2 fast path built the kept prefix (any way) / left the step to the
/// full path / built the prefix from values alone (a long prefix or equal values in it) /
/// decided the draw from mass bins without building the prefix / of those, found `u` within
/// the rounding bound of a boundary and replayed the draw literally / decided the draw among
/// the top tokens without binning the whole kept set / of those, decided with the tail's mass
/// bracketed from its count alone (all but `full` are counted in the first too): `[prefix,
/// full, values, bins, literal, top, top_count]`. For benchmarks and tests.
#[doc(hidden)]
pub fn mirostat_tier_counts() -> [u64; 7] {
    crate::fast::mirostat_v2::tier_counts()
}

/// Multiplies the error margin of mirostat v2's draw from mass bins by `k` (1, the proven
/// bound, by default) and returns the previous factor: a wider margin sends more draws to the
/// literal replay and makes the bins decide draws closer to a boundary, which tests use to
/// check both. Process-wide; only with the `tier-counts` feature (tests and benchmarks), so
/// normal builds read no shared state for it.
#[doc(hidden)]
#[cfg(feature = "tier-counts")]
pub fn mirostat_margin_scale(k: u64) -> u64 {
    crate::fast::mirostat_v2::set_margin_scale(k)
}

/// How often the top-p fast path built the nucleus / left the step to the full path, and how
/// many of the built ones replayed llama.cpp's bucket order (a tie in the nucleus):
/// `[nucleus, full, replayed]`. For benchmarks and tests.
#[doc(hidden)]
pub fn top_p_tier_counts() -> [u64; 3] {
    crate::fast::top_p::tier_counts()
}

/// How often the wide-nucleus top-p fast path decided the draw / left the step to the full
/// path: `[wide, full]`. For benchmarks and tests.
#[doc(hidden)]
pub fn top_p_wide_tier_counts() -> [u64; 2] {
    crate::fast::top_p_wide::tier_counts()
}

/// How many draws the wide top-p fast path decided without sorting, because min-p decided
/// what was kept (counted apart from [`top_p_wide_tier_counts`]). For benchmarks and tests.
#[doc(hidden)]
pub fn top_p_wide_min_p_count() -> u64 {
    crate::fast::top_p_wide::shortcut_count()
}

/// Writes `logits` widened to f32 into `out` (resized to the row; no allocation once it has
/// held a row this long).
fn widen(logits: Logits<'_>, out: &mut Vec<f32>) {
    out.resize(logits.len(), 0.0);
    match logits {
        Logits::F32(l) => out.copy_from_slice(l),
        Logits::F16(l) => l.convert_to_f32_slice(out),
        Logits::Bf16(l) => l.convert_to_f32_slice(out),
    }
}
