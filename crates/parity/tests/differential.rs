//! The differential oracle: N random cases through llama.cpp and nucleus-sampler, zero
//! mismatches allowed.
//!
//! Environment:
//! - `NUCLEUS_PARITY_CASES`: number of cases (default 20000 in release, 1000 in debug);
//! - `NUCLEUS_PARITY_SEED`: harness seed (default [`DEFAULT_SEED`]); `random` draws one;
//! - `NUCLEUS_PARITY_ONLY`: run just this case index (prints the case);
//! - `NUCLEUS_PARITY_THREADS`: worker threads (default: available parallelism);
//! - `NUCLEUS_PARITY_MAX_FAILURES`: stop after this many failing cases (default 10);
//! - `NUCLEUS_PARITY_SHRINK`: runs allowed for shrinking each failure (default 400, 0 = off);
//! - `NUCLEUS_PARITY_SKIP_NAN`: exploration only, do not count mismatches at a step where
//!   llama.cpp's own candidates hold NaN (to look past that known class for other ones).
//!
//! This runs on the SIMD level the CPU picks (or `NUCLEUS_SIMD` asks for); `tests/simd_levels.rs`
//! runs fewer cases at every level.
//!
//! Longer local run: `NUCLEUS_PARITY_CASES=1000000 NUCLEUS_PARITY_SEED=random cargo test
//! --release -p nucleus-parity --test differential -- --nocapture`.

use nucleus_parity::harness::{run_case, run_many, shrink, RunOptions, REL_TOL};

/// The fixed default harness seed (CI).
const DEFAULT_SEED: u64 = 0x6e75_636c_6575_7301;

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = if let Some(h) = v.strip_prefix("0x") { u64::from_str_radix(h, 16) } else { v.parse() };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

fn harness_seed() -> u64 {
    match std::env::var("NUCLEUS_PARITY_SEED").ok().as_deref() {
        Some("random") => {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
            t.as_nanos() as u64 ^ (std::process::id() as u64) << 32
        }
        _ => env_u64("NUCLEUS_PARITY_SEED").unwrap_or(DEFAULT_SEED),
    }
}

#[test]
fn differential_llama_vs_nucleus() {
    let seed = harness_seed();
    let shrink_budget = env_u64("NUCLEUS_PARITY_SHRINK").unwrap_or(400) as usize;
    if let Some(index) = env_u64("NUCLEUS_PARITY_ONLY") {
        let case = nucleus_parity::harness::case_for(seed, index);
        eprintln!("harness seed {seed} case {index}: {}\n{case:?}", case.summary());
        match run_case(&case) {
            Ok(o) => eprintln!("ok: {o:?}"),
            Err(m) => {
                let (small, sm) = shrink(&case, &m, shrink_budget.max(1));
                panic!("mismatch: {m}\nshrunk ({}): {sm}\nshrunk case: {small:?}", small.summary());
            }
        }
        return;
    }
    let default_cases = if cfg!(debug_assertions) { 1000 } else { 20_000 };
    let opts = RunOptions {
        seed,
        cases: env_u64("NUCLEUS_PARITY_CASES").unwrap_or(default_cases),
        threads: env_u64("NUCLEUS_PARITY_THREADS")
            .map(|t| t as usize)
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)),
        max_failures: env_u64("NUCLEUS_PARITY_MAX_FAILURES").unwrap_or(10) as usize,
        shrink_budget,
        skip_nan: std::env::var_os("NUCLEUS_PARITY_SKIP_NAN").is_some(),
    };
    let r = run_many(&opts);
    eprintln!(
        "parity: harness seed {seed:#x}, SIMD level {:?}, {} cases, {} steps, {} threads, {:.1}s; slowest case {} ({:.0} ms); \
         {} values within the {REL_TOL:e} relative tolerance but not bit-identical (max rel diff {:e}); {} failing cases{}",
        nucleus_sampler::SimdLevel::active(),
        r.cases,
        r.steps,
        opts.threads,
        r.elapsed.as_secs_f64(),
        r.slowest.0,
        r.slowest.1.as_secs_f64() * 1e3,
        r.inexact,
        r.max_rel,
        r.failures.len(),
        if opts.skip_nan { format!(" ({} NaN-step mismatches not counted)", r.nan_skipped) } else { String::new() }
    );
    eprintln!(
        "parity: TokenSampler dist fast-path tiers decided [coarse, near, exact, sequential] = {:?} \
         (zeros unless nucleus-sampler's tier-counts feature is on, as in workspace test builds)",
        nucleus_sampler::tier_counts::dist_tier_counts()
    );
    eprintln!(
        "parity: TokenSampler wide top-p fast path [decided, left to the full path] = {:?}",
        nucleus_sampler::tier_counts::top_p_wide_tier_counts()
    );
    if !r.failures.is_empty() {
        let mut msg = String::new();
        for f in &r.failures {
            msg += &f.report();
            msg += "\n";
        }
        panic!("{} of {} cases disagree with llama.cpp:\n{msg}", r.failures.len(), r.cases);
    }
}

/// Not a parity check: how often each sampler kind is generated and how often it actually
/// changes the candidates (applied alone, on step 0's logits after the history).
/// `cargo test --release -p nucleus-parity --test differential coverage -- --ignored --nocapture`
#[test]
#[ignore]
fn coverage() {
    use nucleus_parity::llama::{LlamaCandidates, LlamaSampler};
    use nucleus_parity::SpecExt;
    use std::collections::BTreeMap;
    let seed = harness_seed();
    let n = env_u64("NUCLEUS_PARITY_CASES").unwrap_or(5000);
    let mut stats: BTreeMap<&'static str, (u64, u64, u64)> = BTreeMap::new();
    let mut vocab_hist: BTreeMap<u32, u64> = BTreeMap::new();
    for i in 0..n {
        let case = nucleus_parity::generate(seed, i);
        *vocab_hist.entry((case.vocab as f64).log2() as u32).or_default() += 1;
        let row = case.row(0);
        let mut base = LlamaCandidates::new();
        base.fill(&row);
        let before: Vec<(i32, u32)> = base.as_slice().iter().map(|d| (d.id, d.logit.to_bits())).collect();
        for spec in &case.chain {
            let mut s: LlamaSampler = spec.to_llama();
            let e = stats.entry(spec.kind()).or_default();
            e.0 += 1;
            if s.name().starts_with('?') {
                continue;
            }
            e.1 += 1;
            for &t in &case.history {
                s.accept(t);
            }
            let mut c = LlamaCandidates::new();
            c.fill(&row);
            s.apply(&mut c);
            let after: Vec<(i32, u32)> = c.as_slice().iter().map(|d| (d.id, d.logit.to_bits())).collect();
            if after != before || c.selected().is_some() {
                e.2 += 1;
            }
        }
    }
    eprintln!("sampler: generated / not off / changed the candidates alone on step 0");
    for (k, (g, on, ch)) in &stats {
        eprintln!("  {k:12} {g:6} {on:6} {ch:6}");
    }
    eprintln!("vocab by log2: {vocab_hist:?}");
}
