//! The differential oracle once per SIMD backend this CPU runs (AVX-512, AVX2, scalar), each
//! forced in turn with [`SimdLevel::force`]: the fallbacks are checked against llama.cpp too,
//! not only the backend the CI machine picks by itself. The same cases also run through
//! nucleus alone at every level, and their tokens and final candidates must be bit-identical
//! across levels (the oracle itself allows a small relative tolerance on `p` and `logit`).
//!
//! This file holds a single test, so nothing else in its process changes the level meanwhile.
//! `NUCLEUS_PARITY_LEVEL_CASES` sets the number of cases per level (default 2000).

use nucleus_parity::cases::{Case, Layout};
use nucleus_parity::harness::{case_for, run_many, RunOptions};
use nucleus_parity::spec::nucleus_chain;
use nucleus_sampler::{SimdLevel, TokenSampler};

/// A harness seed of its own (the main oracle runs another), so these cases add coverage.
const SEED: u64 = 0x6e75_636c_6575_7302;

/// Cases whose nucleus-only traces are compared across levels (a prefix of the oracle's).
const TRACED: u64 = 400;

/// Every level this CPU supports, best first; AVX2 must be among them where the CPU has it.
fn levels() -> Vec<SimdLevel> {
    let v: Vec<SimdLevel> = SimdLevel::all().into_iter().filter(|l| l.is_supported()).collect();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        assert!(v.contains(&SimdLevel::Avx2), "AVX2 is on this CPU but not offered: {v:?}");
    }
    v
}

/// One step of a nucleus-only run: the token (or the error), then the final candidates as
/// `(id, logit bits, p bits)`.
type Step = (Result<i32, String>, Vec<(i32, u32, u32)>);

/// `case` through a [`TokenSampler`] alone (fast paths on), with the case's resets and clones.
fn nucleus_trace(case: &Case) -> Vec<Step> {
    let mut ts = TokenSampler::new(nucleus_chain(&case.chain));
    for &t in &case.history {
        ts.accept(t);
    }
    let mut out = Vec::with_capacity(case.steps);
    for step in 0..case.steps {
        if case.reset_before == Some(step) {
            ts.reset();
        }
        if case.clone_before == Some(step) {
            ts = ts.clone();
        }
        let row = case.row(step);
        match ts.apply(&row) {
            Ok(t) => {
                ts.accept(t);
                let c = ts.materialize_candidates(&row);
                out.push((Ok(t), c.as_slice().iter().map(|d| (d.id, d.logit.to_bits(), d.p.to_bits())).collect()));
            }
            Err(e) => {
                out.push((Err(e.to_string()), Vec::new()));
                break;
            }
        }
    }
    out
}

#[test]
fn differential_at_every_simd_level() {
    let cases = std::env::var("NUCLEUS_PARITY_LEVEL_CASES")
        .ok()
        .map(|v| v.trim().parse::<u64>().expect("NUCLEUS_PARITY_LEVEL_CASES is not a number"))
        .unwrap_or(2000);
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let traced: Vec<Case> =
        (0..TRACED.min(cases)).map(|i| case_for(SEED, i)).filter(|c| c.layout == Layout::Identity).collect();
    assert!(traced.len() as u64 > TRACED.min(cases) / 2, "only {} identity-layout cases traced", traced.len());
    let mut first: Option<(SimdLevel, Vec<Vec<Step>>)> = None;
    for level in levels() {
        level.force().expect("a supported level is accepted");
        assert_eq!(SimdLevel::active(), level);
        let r =
            run_many(&RunOptions { seed: SEED, cases, threads, max_failures: 5, shrink_budget: 200, skip_nan: false });
        eprintln!(
            "parity at {level:?}: harness seed {SEED:#x}, {} cases, {} steps, {:.1}s, {} failing",
            r.cases,
            r.steps,
            r.elapsed.as_secs_f64(),
            r.failures.len()
        );
        assert_eq!(SimdLevel::active(), level, "the level changed during the run");
        if !r.failures.is_empty() {
            let msg: String = r.failures.iter().map(|f| f.report() + "\n").collect();
            panic!(
                "at SIMD level {level:?}, {} of {} cases disagree with llama.cpp:\n{msg}",
                r.failures.len(),
                r.cases
            );
        }
        assert_eq!(r.cases, cases);

        let traces: Vec<Vec<Step>> = traced.iter().map(nucleus_trace).collect();
        assert!(traces.iter().any(|t| t.iter().any(|s| s.0.is_ok())), "no token was sampled");
        match &first {
            None => first = Some((level, traces)),
            Some((l0, t0)) => {
                for (i, (a, b)) in t0.iter().zip(&traces).enumerate() {
                    assert!(a == b, "nucleus differs between {l0:?} and {level:?} on {}", traced[i].summary());
                }
            }
        }
    }
    // Leave the process at its best level.
    let _ = SimdLevel::supported().force();
}
