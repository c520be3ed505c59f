//! Runs a [`Case`] through llama.cpp and nucleus-sampler side by side and compares them after
//! every step; runs many cases on several threads; shrinks a failing case to a small one.
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

use nucleus_sampler::{Candidates, Sampler};

use crate::cases::{generate, Case, Rows};
use crate::llama::LlamaCandidates;
use crate::spec::{llama_chain, nucleus_chain, SamplerSpec};

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
    /// Category: `len`, `selected`, `id`, `p`, `logit` or `panic`.
    pub kind: &'static str,
    /// Human-readable detail (values from both sides).
    pub detail: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.step == usize::MAX {
            write!(f, "[{}] while accepting the history: {}", self.kind, self.detail)
        } else {
            write!(f, "[{}] at step {}: {}", self.kind, self.step, self.detail)
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

/// Runs `case` on both sides and compares after every step.
pub fn run_case(case: &Case) -> Result<Outcome, Mismatch> {
    install_quiet_hook();
    let mut lchain = llama_chain(&case.chain);
    let mut nchain = match catch_unwind(AssertUnwindSafe(|| nucleus_chain(&case.chain))) {
        Ok(c) => c,
        Err(e) => {
            return Err(Mismatch { step: 0, kind: "panic", detail: format!("nucleus constructor panicked: {}", panic_message(e)) })
        }
    };
    for &t in &case.history {
        lchain.accept(t);
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| nchain.accept(t))) {
            return Err(Mismatch {
                step: usize::MAX,
                kind: "panic",
                detail: format!("nucleus accept({t}) panicked: {}", panic_message(e)),
            });
        }
    }
    let mut out = Outcome::default();
    let mut lc = LlamaCandidates::new();
    let mut nc = Candidates::new();
    for step in 0..case.steps {
        let row = case.row(step);
        lc.fill(&row);
        nc.fill_f32(&row);
        lchain.apply(&mut lc);
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| nchain.apply(&mut nc))) {
            return Err(Mismatch { step, kind: "panic", detail: format!("nucleus apply panicked: {}", panic_message(e)) });
        }
        compare(step, &lc, &nc, &mut out)?;
        out.steps = step + 1;
        match lc.selected() {
            Some(i) if i < lc.len() => {
                let t = lc.as_slice()[i].id;
                lchain.accept(t);
                if let Err(e) = catch_unwind(AssertUnwindSafe(|| nchain.accept(t))) {
                    return Err(Mismatch {
                        step,
                        kind: "panic",
                        detail: format!("nucleus accept({t}) panicked: {}", panic_message(e)),
                    });
                }
            }
            _ => break,
        }
    }
    Ok(out)
}

fn compare(step: usize, lc: &LlamaCandidates, nc: &Candidates, out: &mut Outcome) -> Result<(), Mismatch> {
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
        });
    }
    if l.len() != n.len() {
        return Err(Mismatch {
            step,
            kind: "len",
            detail: format!("llama kept {} candidates, nucleus kept {}", l.len(), n.len()),
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
// Shrinking

/// True when every row keeps a finite logit that no `-inf` logit bias removes (outside that,
/// llama.cpp computes NaNs and its sorts reach undefined behaviour).
pub fn is_well_defined(case: &Case) -> bool {
    let mut killed: Vec<i32> = Vec::new();
    for s in &case.chain {
        if let SamplerSpec::LogitBias { biases, .. } = s {
            killed.extend(biases.iter().filter(|b| b.1 == f32::NEG_INFINITY).map(|b| b.0));
        }
    }
    (0..case.steps).all(|s| {
        let r = case.row(s);
        r.len() == case.vocab
            && !r.iter().any(|x| x.is_nan() || *x == f32::INFINITY)
            && r.iter().enumerate().any(|(i, x)| x.is_finite() && !killed.contains(&(i as i32)))
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
                SamplerSpec::LogitBias { biases, .. } => {
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
                SamplerSpec::Dry { breakers, .. } => {
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
    Case { vocab: nv, rows: Rows::Explicit(rows), chain, history, steps: case.steps }
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
        // Drop earlier steps: start from a later row, accepting nothing new.
        while best.steps > 1 {
            let mut c = best.clone();
            if let Rows::Explicit(r) = &mut c.rows {
                r.remove(0);
            }
            c.steps -= 1;
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
                let (mut cases, mut steps, mut inexact, mut max_rel) = (0u64, 0u64, 0u64, 0f32);
                let mut slowest = (0u64, Duration::ZERO);
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= opts.cases {
                        break;
                    }
                    let case = generate(opts.seed, index);
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
pub fn nucleus_only(specs: &[SamplerSpec], logits: &[f32]) -> Candidates {
    let mut c = Candidates::new();
    c.fill_f32(logits);
    let mut ch = nucleus_chain(specs);
    ch.apply(&mut c);
    c
}
