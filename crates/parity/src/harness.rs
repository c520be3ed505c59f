//! Runs a [`Case`] through llama.cpp and nucleus-sampler side by side and compares them after
//! every step; runs many cases on several threads; shrinks a failing case to a small one.
//!
//! Two nucleus paths run against llama.cpp in every case:
//! - `chain`: a [`nucleus_sampler::Chain`] applied to a [`Candidates`] array (the full path);
//! - `session`: a [`TokenSampler`] fed the logits row, which takes the whole-vocabulary fast
//!   paths when the chain allows them; its token is compared at every step and its final
//!   candidates (rebuilt with `materialize_candidates` when the step deferred them) too.
//!   It runs only for [`Layout::Identity`] cases (it takes a logits row, not an array).
//!
//! Compared after each step's `apply` (before `accept`):
//! - the number of candidates left and the selected index: exact;
//! - every candidate's id, in order: exact;
//! - every candidate's `p` and `logit`: equal within [`REL_TOL`] relative (or both NaN, or
//!   equal infinities). Values that differ in their bits but pass the tolerance are counted
//!   in [`Outcome::inexact`] so that "close" never hides silently.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use nucleus_sampler::{Candidates, SampleError, Sampler, StepSpec, TokenData, TokenSampler};

use crate::cases::{generate, Case, Layout, Rows};
use crate::llama::LlamaCandidates;
use crate::spec::{llama_chain, nucleus_chain, SpecExt};

/// Relative tolerance for `p` and `logit`: `|a - b| <= REL_TOL * max(|a|, |b|)`.
pub const REL_TOL: f32 = 1e-6;

/// What a passing case observed.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Steps run.
    pub steps: usize,
    /// Values (`p` or `logit`) that were within tolerance but not bit-identical.
    pub inexact: usize,
    /// The largest relative difference among those.
    pub max_rel: f32,
}

/// The first disagreement found in a case.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// Step at which it happened (`usize::MAX` while accepting the history).
    pub step: usize,
    /// Category: `len`, `selected`, `id`, `p`, `logit`, `token`, `error` or `panic`.
    pub kind: &'static str,
    /// Human-readable detail (values from both sides).
    pub detail: String,
    /// llama.cpp's candidates held a NaN `p` or `logit` at that step (llama.cpp itself left
    /// well-defined arithmetic, e.g. a temperature that underflowed to a denormal).
    pub nan: bool,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nan = if self.nan { " (llama.cpp's candidates contain NaN)" } else { "" };
        if self.step == usize::MAX {
            write!(f, "[{}] while accepting the history: {}{nan}", self.kind, self.detail)
        } else {
            write!(f, "[{}] at step {}: {}{nan}", self.kind, self.step, self.detail)
        }
    }
}

/// `a` and `b` agree within the tolerance; the second value is true when not bit-identical.
fn close(a: f32, b: f32) -> (bool, bool) {
    if a.to_bits() == b.to_bits() || a == b {
        return (true, a.to_bits() != b.to_bits());
    }
    if a.is_nan() && b.is_nan() {
        return (true, true);
    }
    if !a.is_finite() || !b.is_finite() {
        return (false, true);
    }
    let ok = (a - b).abs() <= REL_TOL * a.abs().max(b.abs());
    (ok, true)
}

fn rel(a: f32, b: f32) -> f32 {
    if a == b || !a.is_finite() || !b.is_finite() {
        return 0.0;
    }
    (a - b).abs() / a.abs().max(b.abs())
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs (once) a panic hook that stays silent for panics caught by the harness while it
/// is shrinking (hundreds of expected panics), and otherwise defers to the previous hook.
fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                prev(info);
            }
        }));
    });
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

fn window(ids: &[(i32, f32, f32)], at: usize) -> String {
    let lo = at.saturating_sub(2);
    let hi = (at + 3).min(ids.len());
    let parts: Vec<String> =
        (lo..hi).map(|i| format!("#{i}:{{id {}, logit {:?}, p {:?}}}", ids[i].0, ids[i].1, ids[i].2)).collect();
    parts.join(" ")
}

/// Fills both candidate arrays for `step`: from the logits row for [`Layout::Identity`]
/// (the path every llama.cpp caller takes), from explicit entries otherwise.
fn fill_both(case: &Case, row: &[f32], lc: &mut LlamaCandidates, nc: &mut Candidates) {
    match case.layout {
        Layout::Identity => {
            lc.fill(row);
            nc.fill_f32(row);
        }
        _ => {
            let e = case.entries_of(row);
            lc.fill_entries(&e);
            let td: Vec<TokenData> = e.iter().map(|&(id, logit)| TokenData { id, logit, p: 0.0 }).collect();
            nc.fill_from(&td);
        }
    }
}

/// Runs `case` on llama.cpp and on both nucleus paths in lockstep, comparing after every step.
pub fn run_case(case: &Case) -> Result<Outcome, Mismatch> {
    install_quiet_hook();
    let mut lchain = llama_chain(&case.chain);
    let mut nchain =
        catch_unwind(AssertUnwindSafe(|| nucleus_chain(&case.chain))).map_err(|e| panicked(0, "constructor", e))?;
    let mut session = if case.layout == Layout::Identity {
        Some(
            catch_unwind(AssertUnwindSafe(|| TokenSampler::new(nucleus_chain(&case.chain))))
                .map_err(|e| panicked(0, "constructor", e))?,
        )
    } else {
        None
    };
    for &t in &case.history {
        lchain.accept(t);
        catch_unwind(AssertUnwindSafe(|| nchain.accept(t)))
            .map_err(|e| panicked(usize::MAX, &format!("accept({t})"), e))?;
        if let Some(ts) = session.as_mut() {
            catch_unwind(AssertUnwindSafe(|| ts.accept(t)))
                .map_err(|e| session_err(panicked(usize::MAX, &format!("accept({t})"), e)))?;
        }
    }
    let mut out = Outcome::default();
    let mut lc = LlamaCandidates::new();
    let mut nc = Candidates::new();
    for step in 0..case.steps {
        if case.reset_before == Some(step) {
            lchain.reset();
            catch_unwind(AssertUnwindSafe(|| nchain.reset())).map_err(|e| panicked(step, "reset", e))?;
            if let Some(ts) = session.as_mut() {
                catch_unwind(AssertUnwindSafe(|| ts.reset())).map_err(|e| session_err(panicked(step, "reset", e)))?;
            }
        }
        if case.clone_before == Some(step) {
            lchain = lchain.duplicate();
            nchain = catch_unwind(AssertUnwindSafe(|| nchain.clone())).map_err(|e| panicked(step, "clone", e))?;
            if let Some(ts) = session.as_mut() {
                *ts = catch_unwind(AssertUnwindSafe(|| ts.clone()))
                    .map_err(|e| session_err(panicked(step, "clone", e)))?;
            }
        }
        let row = case.row(step);
        fill_both(case, &row, &mut lc, &mut nc);
        lchain.apply(&mut lc);
        catch_unwind(AssertUnwindSafe(|| nchain.apply(&mut nc))).map_err(|e| panicked(step, "apply", e))?;
        compare(step, &lc, &nc, &mut out)?;
        let Some(tok) = lc.selected().filter(|&i| i < lc.len()).map(|i| lc.as_slice()[i].id) else { break };
        let session_ok = match session.as_mut() {
            Some(ts) => session_step(step, ts, &lc, &row).map_err(session_err)?,
            None => false,
        };
        if !session_ok {
            session = None;
        }
        lchain.accept(tok);
        catch_unwind(AssertUnwindSafe(|| nchain.accept(tok)))
            .map_err(|e| panicked(step, &format!("accept({tok})"), e))?;
        if let Some(ts) = session.as_mut() {
            catch_unwind(AssertUnwindSafe(|| ts.accept(tok)))
                .map_err(|e| session_err(panicked(step, &format!("accept({tok})"), e)))?;
            // The final candidates, rebuilt from the same row when the step deferred them
            // (documented as valid after the token is accepted).
            let sc = catch_unwind(AssertUnwindSafe(|| ts.materialize_candidates(&row).clone()))
                .map_err(|e| session_err(panicked(step, "materialize_candidates", e)))?;
            compare(step, &lc, &sc, &mut out).map_err(session_err)?;
        }
        out.steps = step + 1;
    }
    Ok(out)
}

fn session_err(mut m: Mismatch) -> Mismatch {
    m.detail = format!("(TokenSampler path) {}", m.detail);
    m
}

fn panicked(step: usize, what: &str, e: Box<dyn std::any::Any + Send>) -> Mismatch {
    Mismatch { step, kind: "panic", detail: format!("nucleus {what} panicked: {}", panic_message(e)), nan: false }
}

/// One [`TokenSampler::apply`] on `row` (fast paths on), checked against llama.cpp's result in
/// `lc`. `Ok(false)` when the session legitimately stops: it refuses to return a token whose
/// final logit is `-inf` or NaN (an API-level check llama.cpp does not make), which is
/// consistent when llama.cpp's pick is such a token.
fn session_step(step: usize, ts: &mut TokenSampler, lc: &LlamaCandidates, row: &[f32]) -> Result<bool, Mismatch> {
    let res = catch_unwind(AssertUnwindSafe(|| ts.apply(row))).map_err(|e| panicked(step, "apply", e))?;
    let lsel = lc.selected().filter(|&i| i < lc.len()).map(|i| lc.as_slice()[i]);
    match (res, lsel) {
        (Ok(t), Some(d)) if t == d.id => Ok(true),
        (Err(SampleError::NoCandidates), Some(d)) if d.logit == f32::NEG_INFINITY || d.logit.is_nan() => Ok(false),
        (r, l) => Err(Mismatch {
            step,
            kind: if r.is_ok() { "token" } else { "error" },
            detail: format!(
                "llama selected {}, TokenSampler returned {r:?} (candidates complete: {})",
                l.map_or("nothing".to_string(), |d| format!("id {} (logit {:?}, p {:?})", d.id, d.logit, d.p)),
                ts.candidates_complete()
            ),
            nan: lc.as_slice().iter().any(|d| d.p.is_nan() || d.logit.is_nan()),
        }),
    }
}

fn compare(step: usize, lc: &LlamaCandidates, nc: &Candidates, out: &mut Outcome) -> Result<(), Mismatch> {
    compare_inner(step, lc, nc, out).map_err(|mut m| {
        m.nan = lc.as_slice().iter().any(|d| d.p.is_nan() || d.logit.is_nan());
        m
    })
}

fn compare_inner(step: usize, lc: &LlamaCandidates, nc: &Candidates, out: &mut Outcome) -> Result<(), Mismatch> {
    let l: Vec<(i32, f32, f32)> = lc.as_slice().iter().map(|d| (d.id, d.logit, d.p)).collect();
    let n: Vec<(i32, f32, f32)> = nc.as_slice().iter().map(|d| (d.id, d.logit, d.p)).collect();
    let lsel = lc.selected();
    let nsel = nc.selected();
    let sel_desc = |s: Option<usize>, v: &[(i32, f32, f32)]| match s {
        Some(i) if i < v.len() => format!("index {i} (id {})", v[i].0),
        Some(i) => format!("index {i} (out of range)"),
        None => "none".to_string(),
    };
    if lsel != nsel {
        return Err(Mismatch {
            step,
            kind: "selected",
            detail: format!(
                "llama selected {}, nucleus selected {} (candidates: llama {}, nucleus {})",
                sel_desc(lsel, &l),
                sel_desc(nsel, &n),
                l.len(),
                n.len()
            ),
            nan: false,
        });
    }
    if l.len() != n.len() {
        return Err(Mismatch {
            step,
            kind: "len",
            detail: format!("llama kept {} candidates, nucleus kept {}", l.len(), n.len()),
            nan: false,
        });
    }
    for i in 0..l.len() {
        if l[i].0 != n[i].0 {
            return Err(Mismatch {
                step,
                kind: "id",
                detail: format!(
                    "first different id at position {i} of {}: llama [{}] nucleus [{}]",
                    l.len(),
                    window(&l, i),
                    window(&n, i)
                ),
                nan: false,
            });
        }
    }
    for i in 0..l.len() {
        for (kind, a, b) in [("p", l[i].2, n[i].2), ("logit", l[i].1, n[i].1)] {
            let (ok, inexact) = close(a, b);
            if !ok {
                return Err(Mismatch {
                    step,
                    kind,
                    detail: format!(
                        "{kind} differs at position {i} (id {}): llama {a:?} ({:#010x}) nucleus {b:?} ({:#010x})",
                        l[i].0,
                        a.to_bits(),
                        b.to_bits()
                    ),
                    nan: false,
                });
            }
            if inexact {
                out.inexact += 1;
                out.max_rel = out.max_rel.max(rel(a, b));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Knife-edge inputs

/// llama.cpp's selected token at step 0 of `case` with `row` as the logits.
fn llama_pick(case: &Case, row: &[f32]) -> Option<i32> {
    let mut ch = llama_chain(&case.chain);
    for &t in &case.history {
        ch.accept(t);
    }
    if case.reset_before == Some(0) {
        ch.reset();
    }
    let mut c = LlamaCandidates::new();
    match case.layout {
        Layout::Identity => c.fill(row),
        _ => c.fill_entries(&case.entries_of(row)),
    }
    ch.apply(&mut c);
    c.selected().filter(|&i| i < c.len()).map(|i| c.as_slice()[i].id)
}

/// f32 to an integer with the same order (for bisection over representable values).
fn ordered(x: f32) -> i64 {
    let b = x.to_bits() as i32;
    (if b < 0 { i32::MIN - b } else { b }) as i64
}

fn from_ordered(k: i64) -> f32 {
    let k = k as i32;
    f32::from_bits((if k < 0 { i32::MIN - k } else { k }) as u32)
}

/// Moves the logit of step 0's selected token down to the exact point where llama.cpp's
/// choice flips (adjacent f32 values on either side pick different tokens), and keeps the
/// value on side `upper` (still picking the token) or just below. Such inputs put the
/// decision within one rounding step of a boundary: what exact-on-the-margin fast paths
/// must detect. Returns `None` when no flip is found (e.g. a single candidate).
pub fn knife_edge(case: &Case, upper: bool) -> Option<Case> {
    if case.steps == 0 || case.vocab < 2 {
        return None;
    }
    let row = case.row(0);
    let s0 = llama_pick(case, &row)?;
    let j = s0 as usize;
    let v0 = row[j];
    if !v0.is_finite() {
        return None;
    }
    let mut r = row.clone();
    // Find a lower value that changes the choice.
    let mut lo = None;
    for d in [0.125f32, 1.0, 4.0, 16.0, 64.0] {
        r[j] = v0 - d;
        if llama_pick(case, &r) != Some(s0) {
            lo = Some(r[j]);
            break;
        }
    }
    let (mut a, mut b) = (ordered(lo?), ordered(v0)); // pick(a) != s0, pick(b) == s0
    while b - a > 1 {
        let m = a + (b - a) / 2;
        r[j] = from_ordered(m);
        if llama_pick(case, &r) == Some(s0) {
            b = m;
        } else {
            a = m;
        }
    }
    let v = from_ordered(if upper { b } else { a });
    let mut c = case.clone();
    c.edits.push((0, s0, v));
    Some(c)
}

/// The case run for `index`: [`generate`]'s, moved onto a knife edge by [`knife_edge`] for
/// about one case in 6 with a vocabulary of 1024 to 8192 (where the whole-vocabulary fast
/// paths start) and one in 20 below.
pub fn case_for(seed: u64, index: u64) -> Case {
    let case = generate(seed, index);
    let h = (index ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58; // 0..64
    let share = match case.vocab {
        1024..=8192 => 10,
        0..=1023 => 3,
        _ => 0,
    };
    if h < share {
        if let Some(c) = knife_edge(&case, h & 1 == 0) {
            return c;
        }
    }
    case
}

// ---------------------------------------------------------------------------------------------
// Shrinking

/// True when every row keeps a finite logit that no `-inf` logit bias removes (outside that,
/// llama.cpp computes NaNs and its sorts reach undefined behaviour).
pub fn is_well_defined(case: &Case) -> bool {
    let mut killed: Vec<i32> = Vec::new();
    for s in &case.chain {
        if let StepSpec::LogitBias { biases, .. } = s {
            killed.extend(biases.iter().filter(|b| b.1 == f32::NEG_INFINITY).map(|b| b.0));
        }
    }
    (0..case.steps).all(|s| {
        let r = case.row(s);
        r.len() == case.vocab
            && !r.iter().any(|x| x.is_nan() || *x == f32::INFINITY)
            && case.entries(s).iter().any(|&(id, x)| x.is_finite() && !killed.contains(&id))
    })
}

/// The case restricted to the vocabulary ids in `keep` (ascending), renumbered `0..keep.len()`.
/// History tokens, biases and breakers outside `keep` are dropped.
fn restrict(case: &Case, keep: &[usize]) -> Case {
    let mut map = vec![-1i32; case.vocab];
    for (new, &old) in keep.iter().enumerate() {
        map[old] = new as i32;
    }
    let m = |t: i32| if t >= 0 && (t as usize) < map.len() { map[t as usize] } else { -1 };
    let rows = match &case.rows {
        Rows::Explicit(rows) => rows.iter().map(|r| keep.iter().map(|&i| r[i]).collect()).collect(),
        _ => unreachable!("restrict works on materialized cases"),
    };
    let nv = keep.len();
    let chain = case
        .chain
        .iter()
        .map(|s| {
            let mut s = s.clone();
            match &mut s {
                StepSpec::LogitBias { biases, .. } => {
                    // Out-of-range ids stay out of range (they exercise the search path).
                    *biases = biases
                        .iter()
                        .filter_map(|&(t, b)| {
                            if t < 0 || t as usize >= case.vocab {
                                Some((if t < 0 { t } else { nv as i32 + (t - case.vocab as i32) }, b))
                            } else {
                                let n = m(t);
                                (n >= 0).then_some((n, b))
                            }
                        })
                        .collect();
                }
                StepSpec::Dry { breakers, .. } => {
                    *breakers = breakers
                        .iter()
                        .filter_map(|b| {
                            let nb: Vec<i32> = b.iter().map(|&t| m(t)).collect();
                            (!nb.contains(&-1)).then_some(nb)
                        })
                        .collect();
                }
                _ => {}
            }
            s.with_vocab(nv)
        })
        .collect();
    let history = case.history.iter().map(|&t| m(t)).filter(|&t| t >= 0).collect();
    let layout = match &case.layout {
        Layout::Explicit(ids) => Layout::Explicit(ids.iter().map(|&t| m(t)).filter(|&t| t >= 0).collect()),
        l => l.clone(),
    };
    Case {
        vocab: nv,
        rows: Rows::Explicit(rows),
        chain,
        history,
        steps: case.steps,
        layout,
        edits: Vec::new(),
        ..case.clone()
    }
}

/// Shrinks a failing case: fewer steps, fewer samplers, a shorter history, fewer vocabulary
/// ids, while it still fails with the same kind of mismatch. Bounded to `budget` runs.
pub fn shrink(case: &Case, first: &Mismatch, budget: usize) -> (Case, Mismatch) {
    QUIET.with(|q| q.set(true));
    let mut runs = 0usize;
    let kind = first.kind;
    let mut best = case.materialize();
    let mut best_m = first.clone();
    let fails = |c: &Case, runs: &mut usize| -> Option<Mismatch> {
        if *runs >= budget || !is_well_defined(c) {
            return None;
        }
        *runs += 1;
        match run_case(c) {
            Err(m) if m.kind == kind => Some(m),
            _ => None,
        }
    };
    // Steps: only up to the failing one.
    if best_m.step != usize::MAX && best_m.step + 1 < best.steps {
        let mut c = best.clone();
        c.steps = best_m.step + 1;
        if let Rows::Explicit(r) = &mut c.rows {
            r.truncate(c.steps);
        }
        if let Some(m) = fails(&c, &mut runs) {
            best = c;
            best_m = m;
        }
    }
    let mut progress = true;
    while progress && runs < budget {
        progress = false;
        // Drop samplers (never the final selector).
        let mut i = 0;
        while i + 1 < best.chain.len() {
            let mut c = best.clone();
            c.chain.remove(i);
            if let Some(m) = fails(&c, &mut runs) {
                best = c;
                best_m = m;
                progress = true;
            } else {
                i += 1;
            }
        }
        // Drop the reset and the clone.
        if best.reset_before.is_some() {
            let mut c = best.clone();
            c.reset_before = None;
            if let Some(m) = fails(&c, &mut runs) {
                best = c;
                best_m = m;
                progress = true;
            }
        }
        if best.clone_before.is_some() {
            let mut c = best.clone();
            c.clone_before = None;
            if let Some(m) = fails(&c, &mut runs) {
                best = c;
                best_m = m;
                progress = true;
            }
        }
        // Drop earlier steps: start from a later row, accepting nothing new.
        while best.steps > 1 {
            let mut c = best.clone();
            if let Rows::Explicit(r) = &mut c.rows {
                r.remove(0);
            }
            c.steps -= 1;
            c.reset_before = c.reset_before.map(|r| r.saturating_sub(1));
            c.clone_before = c.clone_before.map(|r| r.saturating_sub(1));
            match fails(&c, &mut runs) {
                Some(m) => {
                    best = c;
                    best_m = m;
                    progress = true;
                }
                None => break,
            }
        }
        // History: drop chunks, halving the chunk size.
        let mut chunk = best.history.len().max(1);
        while chunk >= 1 && !best.history.is_empty() {
            let mut at = 0;
            while at < best.history.len() {
                let mut c = best.clone();
                let end = (at + chunk).min(c.history.len());
                c.history.drain(at..end);
                if let Some(m) = fails(&c, &mut runs) {
                    best = c;
                    best_m = m;
                    progress = true;
                } else {
                    at += chunk;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk /= 2;
        }
        // Vocabulary: remove chunks of ids, halving the chunk size.
        let mut chunk = best.vocab / 2;
        while chunk >= 1 && best.vocab > 1 {
            let mut at = 0;
            while at < best.vocab && best.vocab > 1 {
                let end = (at + chunk).min(best.vocab);
                let keep: Vec<usize> = (0..best.vocab).filter(|&i| i < at || i >= end).collect();
                if keep.is_empty() {
                    break;
                }
                let c = restrict(&best, &keep);
                if let Some(m) = fails(&c, &mut runs) {
                    best = c;
                    best_m = m;
                    progress = true;
                } else {
                    at += chunk;
                }
                if runs >= budget {
                    break;
                }
            }
            if chunk == 1 || runs >= budget {
                break;
            }
            chunk /= 2;
        }
    }
    QUIET.with(|q| q.set(false));
    (best, best_m)
}

// ---------------------------------------------------------------------------------------------
// Many cases

/// One failing case of a run.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Harness seed of the run.
    pub harness_seed: u64,
    /// Index of the case.
    pub index: u64,
    /// The generated case.
    pub case: Case,
    /// Its mismatch.
    pub mismatch: Mismatch,
    /// A shrunk version (explicit logits) and its mismatch, when shrinking was asked for.
    pub shrunk: Option<(Case, Mismatch)>,
}

impl Failure {
    /// The full reproducible report: how to rerun, the case, the shrunk case.
    pub fn report(&self) -> String {
        let mut s = format!(
            "MISMATCH harness seed {} case {}: {}\n  rerun: NUCLEUS_PARITY_SEED={} NUCLEUS_PARITY_ONLY={} cargo test --release -p nucleus-parity --test differential\n  summary: {}\n  case: {:?}\n",
            self.harness_seed,
            self.index,
            self.mismatch,
            self.harness_seed,
            self.index,
            self.case.summary(),
            self.case
        );
        if let Some((c, m)) = &self.shrunk {
            s += &format!("  shrunk ({}): {}\n  shrunk case: {:?}\n", c.summary(), m, c);
        }
        s
    }
}

/// Totals of a run.
#[derive(Debug, Default)]
pub struct RunReport {
    /// Cases run.
    pub cases: u64,
    /// Steps run over all passing cases.
    pub steps: u64,
    /// Values within tolerance but not bit-identical, over all passing cases.
    pub inexact: u64,
    /// Largest relative difference among those.
    pub max_rel: f32,
    /// Failing cases (at most the requested number).
    pub failures: Vec<Failure>,
    /// Slowest case: (index, time).
    pub slowest: (u64, Duration),
    /// Wall time.
    pub elapsed: Duration,
    /// Mismatches not counted because of [`RunOptions::skip_nan`].
    pub nan_skipped: u64,
}

/// Options for [`run_many`].
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Harness seed.
    pub seed: u64,
    /// Number of cases (indices `0..cases`).
    pub cases: u64,
    /// Worker threads.
    pub threads: usize,
    /// Stop after this many failures.
    pub max_failures: usize,
    /// Shrink failing cases, with this many runs each (0 = no shrinking).
    pub shrink_budget: usize,
    /// Exploration only: do not count mismatches where llama.cpp's candidates contain NaN
    /// (they are tallied in [`RunReport::nan_skipped`]), to look for other kinds.
    pub skip_nan: bool,
}

/// Runs cases `0..opts.cases` of the harness seed on `opts.threads` threads.
pub fn run_many(opts: &RunOptions) -> RunReport {
    let start = Instant::now();
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let nfail = AtomicUsize::new(0);
    let report = Mutex::new(RunReport::default());
    std::thread::scope(|sc| {
        for _ in 0..opts.threads.max(1) {
            sc.spawn(|| {
                let (mut cases, mut steps, mut inexact, mut max_rel, mut nan_skipped) = (0u64, 0u64, 0u64, 0f32, 0u64);
                let mut slowest = (0u64, Duration::ZERO);
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= opts.cases {
                        break;
                    }
                    let case = case_for(opts.seed, index);
                    let t0 = Instant::now();
                    let res = run_case(&case);
                    let dt = t0.elapsed();
                    if dt > slowest.1 {
                        slowest = (index, dt);
                    }
                    cases += 1;
                    match res {
                        Ok(o) => {
                            steps += o.steps as u64;
                            inexact += o.inexact as u64;
                            max_rel = max_rel.max(o.max_rel);
                        }
                        Err(m) if m.nan && opts.skip_nan => nan_skipped += 1,
                        Err(m) => {
                            if nfail.fetch_add(1, Ordering::SeqCst) + 1 >= opts.max_failures {
                                stop.store(true, Ordering::Relaxed);
                            }
                            let shrunk = (opts.shrink_budget > 0).then(|| shrink(&case, &m, opts.shrink_budget));
                            let f = Failure { harness_seed: opts.seed, index, case, mismatch: m, shrunk };
                            eprintln!("{}", f.report());
                            report.lock().unwrap().failures.push(f);
                        }
                    }
                }
                let mut r = report.lock().unwrap();
                r.cases += cases;
                r.steps += steps;
                r.inexact += inexact;
                r.max_rel = r.max_rel.max(max_rel);
                r.nan_skipped += nan_skipped;
                if slowest.1 > r.slowest.1 {
                    r.slowest = slowest;
                }
            });
        }
    });
    let mut r = report.into_inner().unwrap();
    r.failures.sort_by_key(|f| f.index);
    r.elapsed = start.elapsed();
    r
}

/// Panics with a full description if `case` does not behave the same on both sides.
pub fn assert_parity(case: &Case) {
    if let Err(m) = run_case(case) {
        panic!("parity mismatch: {m}\n  summary: {}\n  case: {case:?}", case.summary());
    }
}

/// Runs the nucleus chain alone (useful when writing regression tests).
pub fn nucleus_only(specs: &[StepSpec], logits: &[f32]) -> Candidates {
    let mut c = Candidates::new();
    c.fill_f32(logits);
    let mut ch = nucleus_chain(specs);
    ch.apply(&mut c);
    c
}

/// Runs `case` on both sides and returns a step-by-step listing of both candidate arrays
/// (at most `max_show` entries per step), for investigating a mismatch.
pub fn trace(case: &Case, max_show: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let mut lchain = llama_chain(&case.chain);
    let mut nchain = nucleus_chain(&case.chain);
    for &t in &case.history {
        lchain.accept(t);
        nchain.accept(t);
    }
    let mut lc = LlamaCandidates::new();
    let mut nc = Candidates::new();
    for step in 0..case.steps {
        if case.reset_before == Some(step) {
            lchain.reset();
            nchain.reset();
            let _ = writeln!(s, "(reset)");
        }
        if case.clone_before == Some(step) {
            lchain = lchain.duplicate();
            nchain = nchain.clone();
            let _ = writeln!(s, "(clone)");
        }
        let row = case.row(step);
        fill_both(case, &row, &mut lc, &mut nc);
        lchain.apply(&mut lc);
        nchain.apply(&mut nc);
        let _ = writeln!(
            s,
            "step {step}: llama len {} selected {:?} | nucleus len {} selected {:?}",
            lc.len(),
            lc.selected(),
            nc.len(),
            nc.selected()
        );
        for (i, d) in lc.as_slice().iter().take(max_show).enumerate() {
            let n = nc.as_slice().get(i);
            let _ = writeln!(
                s,
                "  #{i}: llama {{id {}, logit {:?}, p {:?}}}  nucleus {}",
                d.id,
                d.logit,
                d.p,
                n.map_or("-".to_string(), |n| format!("{{id {}, logit {:?}, p {:?}}}", n.id, n.logit, n.p))
            );
        }
        let Some(i) = lc.selected() else { break };
        let t = lc.as_slice()[i].id;
        lchain.accept(t);
        nchain.accept(t);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(lspecs: &[StepSpec], nspecs: &[StepSpec], logits: &[f32]) -> Result<Outcome, Mismatch> {
        let mut l = llama_chain(lspecs);
        let mut n = nucleus_chain(nspecs);
        let mut lc = LlamaCandidates::new();
        let mut nc = Candidates::new();
        lc.fill(logits);
        nc.fill_f32(logits);
        l.apply(&mut lc);
        n.apply(&mut nc);
        let mut o = Outcome::default();
        compare(0, &lc, &nc, &mut o).map(|_| o)
    }

    /// The comparison must catch a sampler that is only slightly off.
    #[test]
    fn oracle_detects_differences() {
        let logits: Vec<f32> = (0..100).map(|i| ((i * 37 % 101) as f32) * 0.1).collect();
        let d = StepSpec::Dist { seed: 5 };
        assert!(both(&[StepSpec::TopK { k: 40 }, d.clone()], &[StepSpec::TopK { k: 40 }, d.clone()], &logits).is_ok());
        let e = both(&[StepSpec::TopK { k: 40 }, d.clone()], &[StepSpec::TopK { k: 39 }, d.clone()], &logits);
        assert!(e.is_err());
        let e = both(&[StepSpec::Temp { t: 0.8 }], &[StepSpec::Temp { t: 0.81 }], &logits).unwrap_err();
        assert_eq!(e.kind, "logit");
        let e = both(&[StepSpec::Dist { seed: 5 }], &[StepSpec::Dist { seed: 6 }], &logits).unwrap_err();
        assert_eq!(e.kind, "selected");
    }

    #[test]
    fn knife_edge_sits_on_the_flip() {
        let mut found = 0;
        for i in 0..200 {
            let case = generate(42, i);
            let (Some(up), Some(down)) = (knife_edge(&case, true), knife_edge(&case, false)) else { continue };
            let (&(_, id, vu), &(_, id2, vd)) = (up.edits.last().unwrap(), down.edits.last().unwrap());
            assert_eq!(id, id2);
            assert_eq!(ordered(vu) - ordered(vd), 1, "adjacent floats");
            assert_eq!(llama_pick(&up, &up.row(0)), Some(id));
            assert_ne!(llama_pick(&down, &down.row(0)), Some(id));
            found += 1;
        }
        assert!(found > 50, "{found}");
    }

    #[test]
    fn tolerance() {
        assert_eq!(close(1.0, 1.0), (true, false));
        assert_eq!(close(1.0, 1.0 + 2.0 * f32::EPSILON), (true, true));
        assert!(!close(1.0, 1.0 + 16.0 * f32::EPSILON).0);
        assert!(close(f32::NAN, f32::NAN).0);
        assert!(!close(f32::NEG_INFINITY, -1e30).0);
        assert!(close(0.0, -0.0).0);
    }
}
