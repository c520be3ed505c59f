//! The fast-path planner: which whole-vocabulary fast path a chain allows (`Plan`, compiled
//! once per chain and row length from the closed set of [`Step`]s, so a [`Step::Custom`] is
//! never skipped), running it on a row (`FastPath::try_sample`), rebuilding the candidates a
//! deferred step did not build (`FastPath::materialize`), and the process-wide tier counters
//! of every fast path (re-exported, hidden, as `nucleus_sampler::tier_counts`).
//!
//! What each path does and when it defers the candidates is described on
//! [`crate::session`]; the paths themselves are the sibling modules.

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
use crate::role::Role;
use crate::sampler::Sampler;
use crate::samplers::dist::dist_normalize;
use crate::samplers::mirostat_v2::kept_len as mirostat_kept_len;
use crate::softmax::softmax;
use crate::step::Step;

/// A [`crate::TokenSampler`]'s fast-path state: the plan compiled for its chain and the
/// buffers of the whole-vocabulary fast paths, reused between steps.
#[derive(Clone, Debug, Default)]
pub(crate) struct FastPath {
    /// Set to false to always run the chain on the full candidate array.
    disabled: bool,
    /// The plan compiled for the chain and a row length; `None` after any edit of the chain
    /// (or of the fast-path switch), compiled again at the next step.
    plan: Option<(usize, Plan)>,
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

impl FastPath {
    /// Turns the fast paths off or on; the plan is compiled again at the next step.
    pub(crate) fn set_enabled(&mut self, enabled: bool) {
        self.disabled = !enabled;
        self.plan = None;
    }

    /// Drops the plan (the chain was, or may have been, edited).
    pub(crate) fn chain_edited(&mut self) {
        self.plan = None;
    }

    /// Whether the last step left the complete final candidates (no deferred step).
    pub(crate) fn complete(&self) -> bool {
        self.deferred.is_none()
    }

    /// Forgets the last step's deferral (a new step begins).
    pub(crate) fn begin_step(&mut self) {
        self.deferred = None;
    }

    /// The fast path `chain` allows on a row of `n` logits, compiled at the first step and
    /// after each edit of the chain.
    fn plan(&mut self, chain: &Chain, n: usize) -> Plan {
        match self.plan {
            Some((m, p)) if m == n => p,
            _ => {
                let p = if self.disabled { Plan::Full } else { compile(chain.samplers(), n) };
                self.plan = Some((n, p));
                p
            }
        }
    }

    /// Runs `chain` on `row` through a fast path when it allows one, leaving the final
    /// candidates (or only the selected token, for a deferred step) in `cands`; `None` when
    /// the full path must run (nothing was consumed then).
    pub(crate) fn try_sample(
        &mut self,
        chain: &mut Chain,
        cands: &mut Candidates,
        row: &[f32],
    ) -> Result<Option<Token>, SampleError> {
        let plan = self.plan(chain, row.len());
        FastStep { chain, cands, fast: self }.run(plan, row)
    }

    /// Rebuilds in `cands` the exact final candidates of a deferred last step from `row`, the
    /// f32 row it sampled from (a no-op when the last step was complete).
    pub(crate) fn materialize(&mut self, chain: &mut Chain, cands: &mut Candidates, row: &[f32]) {
        let Some(d) = self.deferred.take() else {
            return;
        };
        cands.fill_f32(row);
        {
            let data = cands.as_mut_slice();
            for p in self.sparse.as_slice() {
                if let Some(t) = data.get_mut(p.id as usize) {
                    t.logit = p.logit;
                }
            }
        }
        for s in &mut chain.samplers_mut()[d.start..d.end_at] {
            s.apply(cands);
        }
        match d.end {
            End::Dist => dist_normalize(cands, d.selected),
            End::Mirostat { mu } => {
                // mirostat v2's apply without its draw: sort and normalise, keep the
                // prefix, normalise it again.
                softmax(cands, true);
                let keep = mirostat_kept_len(cands, mu);
                cands.truncate(keep);
                softmax(cands, true);
                cands.set_selected(Some(d.selected));
            }
        }
    }
}

/// One fast step: the chain, its candidates and the fast-path buffers, borrowed together.
struct FastStep<'a> {
    chain: &'a mut Chain,
    cands: &'a mut Candidates,
    fast: &'a mut FastPath,
}

impl FastStep<'_> {
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
    fn run(&mut self, plan: Plan, row: &[f32]) -> Result<Option<Token>, SampleError> {
        match plan {
            Plan::Full => Ok(None),
            Plan::TopK { at, k } => {
                self.sparse_prefix(row, at);
                let f = &mut self.fast;
                top_k_from_row(row, k, f.sparse.as_slice(), &mut f.heap, &mut f.top_k)
                    .map_err(|BadLogit(i)| bad_logit(row, i))?;
                self.cands.fill_from(&f.heap);
                self.cands.set_sorted(true);
                for s in &mut self.chain.samplers_mut()[at + 1..] {
                    s.apply(self.cands);
                }
                self.cands.selected_checked().map(Some)
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
                        self.cands.selected_checked().map(Some)
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
                self.cands.selected_checked().map(Some)
            }
            Plan::TopP { at, p, min_keep, dist_at } => {
                self.sparse_prefix(row, at);
                if self.sparse_has_nan_or_inf() {
                    return Ok(None);
                }
                let f = &mut self.fast;
                let r = Row { logits: row, patches: f.sparse.as_slice() };
                // The narrow path scans the row itself (NaN and `+inf` included).
                match top_p_nucleus(r, p, min_keep, &mut f.scan, &mut f.top_p, self.cands) {
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
                                fill_kept(&w, &mut f.wide, self.cands);
                                for s in &mut steps[at + 1..] {
                                    s.apply(self.cands);
                                }
                                let Some(i) = self.cands.selected().filter(|&i| i < self.cands.len()) else {
                                    return self.cands.selected_checked().map(Some);
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
                            s.apply(self.cands);
                        }
                        self.cands.selected_checked().map(Some)
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
                match mirostat_prefix(r, temp, mu, &mut f.miro, self.cands) {
                    Miro::Bad(i) => Err(bad_logit(row, i)),
                    Miro::Full => Ok(None),
                    Miro::Prefix => {
                        miro.finish(self.cands);
                        self.cands.selected_checked().map(Some)
                    }
                    Miro::Values => {
                        miro.finish_normalized(self.cands);
                        let keep = self.cands.len();
                        let i = match self.cands.selected() {
                            Some(i) if i < keep => i,
                            _ => return self.cands.selected_checked().map(Some),
                        };
                        let id = miro_id_at(r, i, &mut f.miro);
                        // The exact value of that token (the sorted values hold `+0.0` for
                        // both zeros).
                        let logit = match temp {
                            Some(t) => r.get(id as usize) / t,
                            None => r.get(id as usize),
                        };
                        self.defer_token(at, miro_at, End::Mirostat { mu }, i, id, logit);
                        self.cands.selected_checked().map(Some)
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
                        self.cands.selected_checked().map(Some)
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

    /// [`FastStep::defer`] for a final array at index `selected` holding token `id`, left
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
        self.cands.selected_checked()
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
pub fn dist_tier_counts() -> [u64; 4] {
    crate::fast::dist::tier_counts()
}

/// How often the dist fast path's staged refinement of the widest coarse blocks was tried
/// after the coarse bounds failed: `[decided, left to the whole near pass]` (its decisions are
/// also counted as `near` by [`dist_tier_counts`]). For benchmarks and tests.
pub fn dist_partial_counts() -> [u64; 2] {
    crate::fast::dist::partial_counts()
}

/// How often the top-n-sigma fast path decided its cutoff from bounds / needed the exact replay
/// of llama.cpp's sums: `[bounds, exact]`. For benchmarks and tests.
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
pub fn mirostat_tier_counts() -> [u64; 7] {
    crate::fast::mirostat_v2::tier_counts()
}

/// Multiplies the error margin of mirostat v2's draw from mass bins by `k` (1, the proven
/// bound, by default) and returns the previous factor: a wider margin sends more draws to the
/// literal replay and makes the bins decide draws closer to a boundary, which tests use to
/// check both. Process-wide; only with the `tier-counts` feature (tests and benchmarks), so
/// normal builds read no shared state for it.
#[cfg(feature = "tier-counts")]
pub fn mirostat_margin_scale(k: u64) -> u64 {
    crate::fast::mirostat_v2::set_margin_scale(k)
}

/// How often the top-p fast path built the nucleus / left the step to the full path, and how
/// many of the built ones replayed llama.cpp's bucket order (a tie in the nucleus):
/// `[nucleus, full, replayed]`. For benchmarks and tests.
pub fn top_p_tier_counts() -> [u64; 3] {
    crate::fast::top_p::tier_counts()
}

/// How often the wide-nucleus top-p fast path decided the draw / left the step to the full
/// path: `[wide, full]`. For benchmarks and tests.
pub fn top_p_wide_tier_counts() -> [u64; 2] {
    crate::fast::top_p_wide::tier_counts()
}

/// How many draws the wide top-p fast path decided without sorting, because min-p decided
/// what was kept (counted apart from [`top_p_wide_tier_counts`]). For benchmarks and tests.
pub fn top_p_wide_min_p_count() -> u64 {
    crate::fast::top_p_wide::shortcut_count()
}
