//! Side-by-side speed: nucleus-sampler and llama.cpp on the same logits, in the same process,
//! interleaved call by call, single thread. Used by `nucleus bench`.
//!
//! llama.cpp's time includes filling its `llama_token_data` array from the logits, as every
//! llama.cpp caller must; nucleus reads the logits slice directly.

use std::time::Instant;

use nucleus_sampler::{SamplerType, SamplingParams, TokenSampler};

use crate::common_chain::llama_chain;
use crate::llama::LlamaCandidates;

/// The benchmark chains (a) to (i) of issue 3, as sampling parameters.
pub fn chains() -> Vec<(&'static str, &'static str, SamplingParams)> {
    let d = SamplingParams { seed: 42, ..Default::default() };
    vec![
        ("a", "greedy (temp 0)", SamplingParams { temp: 0.0, ..d.clone() }),
        (
            "b",
            "dist only (temp 1, all else off)",
            SamplingParams { temp: 1.0, top_k: 0, top_p: 1.0, min_p: 0.0, ..d.clone() },
        ),
        ("c", "default (top-k 40, top-p 0.95, min-p 0.05, temp 0.8)", d.clone()),
        ("d", "default without top-k", SamplingParams { top_k: 0, ..d.clone() }),
        (
            "e",
            "default + repeat 1.1 / freq 0.1 / presence 0.1, 64-token history",
            SamplingParams { penalty_repeat: 1.1, penalty_freq: 0.1, penalty_present: 0.1, ..d.clone() },
        ),
        ("f", "mirostat v2", SamplingParams { mirostat: nucleus_sampler::MirostatMode::V2, ..d.clone() }),
        (
            "g",
            "top-n-sigma 1.0 then temp",
            SamplingParams {
                top_n_sigma: 1.0,
                samplers: vec![SamplerType::TopNSigma, SamplerType::Temperature],
                ..d.clone()
            },
        ),
        (
            "h",
            "typical 0.9 + top-k 40",
            SamplingParams {
                typ_p: 0.9,
                samplers: vec![SamplerType::TopK, SamplerType::TypicalP, SamplerType::Temperature],
                ..d.clone()
            },
        ),
        ("i", "XTC (0.5, 0.1) + default", SamplingParams { xtc_probability: 0.5, xtc_threshold: 0.1, ..d }),
    ]
}

/// The two logits shapes: a confident step (one token far ahead) and a flat, long-tailed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One dominant token, a few plausible ones, the rest far below.
    Confident,
    /// High entropy: many tokens of similar likelihood, with a long tail.
    Flat,
    /// Logits a real model produced while generating text (recorded at bench time).
    Real,
}

impl Shape {
    /// `confident` or `flat`.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Confident => "confident",
            Shape::Flat => "flat",
            Shape::Real => "real",
        }
    }
}

/// Deterministic logits of the given shape (a fixed generator, so runs are comparable). `Real`
/// rows come from a model, not from here: asking for one gives the flat shape.
pub fn logits(n: usize, shape: Shape, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut unif = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let mut normal = move || {
        let (u1, u2) = (unif(), unif());
        ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
    };
    let mut v: Vec<f32> = (0..n).map(|_| normal()).collect();
    match shape {
        Shape::Confident => {
            // Typical LM step: logits ~ N(0, 2.5), one token 25 above, a handful 15-20 above.
            for (i, l) in v.iter_mut().enumerate() {
                *l *= 2.5;
                if i % 9973 == 17 {
                    *l += 15.0;
                }
            }
            let top = n / 3;
            v[top] += 25.0;
        }
        Shape::Flat | Shape::Real => {
            // Long-tailed and flat: most tokens within a few nats of each other.
            for l in v.iter_mut() {
                *l = 0.8 * *l - (*l * *l * 0.05);
            }
        }
    }
    v
}

/// One measured row.
#[derive(Clone, Debug)]
pub struct Row {
    /// Chain letter.
    pub chain: &'static str,
    /// Vocabulary size.
    pub vocab: usize,
    /// Logits shape.
    pub shape: Shape,
    /// Nucleus median µs per token.
    pub nucleus_us_median: f64,
    /// Nucleus 90th percentile µs per token.
    pub nucleus_us_p90: f64,
    /// Nucleus 99th percentile µs per token.
    pub nucleus_us_p99: f64,
    /// llama.cpp median µs per token (including filling its array).
    pub llama_us_median: f64,
    /// llama.cpp 90th percentile µs per token.
    pub llama_us_p90: f64,
    /// llama.cpp 99th percentile µs per token.
    pub llama_us_p99: f64,
    /// Measured steps whose token differs between the two sides (0 when nucleus is exact; after
    /// a difference the histories differ too, so later steps may differ as a consequence).
    pub tokens_differ: usize,
}

impl Row {
    /// llama median / nucleus median.
    pub fn ratio(&self) -> f64 {
        self.llama_us_median / self.nucleus_us_median
    }
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i]
}

/// Measures one chain on one row of logits: `iters` steps each side, interleaved. Both sides
/// accept their own chosen token each step (a 64-token history is accepted first).
pub fn measure(chain: &'static str, params: &SamplingParams, row: &[f32], shape: Shape, iters: usize) -> Row {
    let n = row.len();
    let mut ours = TokenSampler::new(params.build(n, None).expect("benchmark params are valid"));
    let mut theirs = llama_chain(params, n);
    let mut cands = LlamaCandidates::new();
    for t in 0..64 {
        let tok = ((t * 7919) % n) as i32;
        ours.accept(tok);
        theirs.accept(tok);
    }
    let (mut a, mut b) = (Vec::with_capacity(iters), Vec::with_capacity(iters));
    // Warm-up (buffers, caches), not measured.
    for _ in 0..3 {
        let t = ours.sample(row).expect("valid logits");
        let _ = t;
        cands.fill(row);
        theirs.apply(&mut cands);
        let sel = cands.selected().expect("llama.cpp selected a token");
        theirs.accept(cands.as_slice()[sel].id);
    }
    let mut tokens_differ = 0;
    for _ in 0..iters {
        let t0 = Instant::now();
        let tok = ours.sample(row).expect("valid logits");
        a.push(t0.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(tok);
        let t0 = Instant::now();
        cands.fill(row);
        theirs.apply(&mut cands);
        let sel = cands.selected().expect("llama.cpp selected a token");
        let id = cands.as_slice()[sel].id;
        theirs.accept(id);
        b.push(t0.elapsed().as_secs_f64() * 1e6);
        tokens_differ += usize::from(tok != id);
    }
    Row {
        chain,
        vocab: n,
        shape,
        nucleus_us_median: quantile(&mut a, 0.5),
        nucleus_us_p90: quantile(&mut a, 0.9),
        nucleus_us_p99: quantile(&mut a, 0.99),
        llama_us_median: quantile(&mut b, 0.5),
        llama_us_p90: quantile(&mut b, 0.9),
        llama_us_p99: quantile(&mut b, 0.99),
        tokens_differ,
    }
}

/// Measures one chain on recorded rows (each the logits of one position of a real
/// generation, all of one vocabulary size): `reps` passes over every row, one nucleus step and
/// one llama.cpp step per row. Before each side's step the row is read once, untimed, so both
/// start from the same cache state (a row the model has just written), and neither pays for
/// the other's evictions. Both sides accept their own chosen token each step, after the same
/// 64-token history.
pub fn measure_rows(chain: &'static str, params: &SamplingParams, rows: &[Vec<f32>], reps: usize) -> Row {
    let n = rows.first().map_or(0, Vec::len);
    assert!(n > 0 && rows.iter().all(|r| r.len() == n), "recorded rows share one non-zero vocabulary size");
    let mut ours = TokenSampler::new(params.build(n, None).expect("benchmark params are valid"));
    let mut theirs = llama_chain(params, n);
    let mut cands = LlamaCandidates::new();
    for t in 0..64 {
        let tok = ((t * 7919) % n) as i32;
        ours.accept(tok);
        theirs.accept(tok);
    }
    let touch = |row: &[f32]| std::hint::black_box(row.iter().fold(0.0f32, |a, &x| a + x));
    let (mut a, mut b) = (Vec::with_capacity(rows.len() * reps), Vec::with_capacity(rows.len() * reps));
    let mut tokens_differ = 0;
    for rep in 0..reps + 1 {
        for row in rows {
            touch(row);
            let t0 = Instant::now();
            let tok = ours.sample(row.as_slice()).expect("valid logits");
            let ta = t0.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(tok);
            touch(row);
            let t0 = Instant::now();
            cands.fill(row);
            theirs.apply(&mut cands);
            let sel = cands.selected().expect("llama.cpp selected a token");
            let id = cands.as_slice()[sel].id;
            theirs.accept(id);
            let tb = t0.elapsed().as_secs_f64() * 1e6;
            // The first pass warms buffers and caches and is not measured.
            if rep > 0 {
                a.push(ta);
                b.push(tb);
                tokens_differ += usize::from(tok != id);
            }
        }
    }
    Row {
        chain,
        vocab: n,
        shape: Shape::Real,
        nucleus_us_median: quantile(&mut a, 0.5),
        nucleus_us_p90: quantile(&mut a, 0.9),
        nucleus_us_p99: quantile(&mut a, 0.99),
        llama_us_median: quantile(&mut b, 0.5),
        llama_us_p90: quantile(&mut b, 0.9),
        llama_us_p99: quantile(&mut b, 0.99),
        tokens_differ,
    }
}

/// Median µs to read `row` once (sum of all values): the memory-read floor.
pub fn read_floor_us(row: &[f32]) -> f64 {
    let mut t = Vec::with_capacity(51);
    for _ in 0..51 {
        let t0 = Instant::now();
        let mut acc = [0.0f32; 16];
        for c in row.chunks_exact(16) {
            for (a, x) in acc.iter_mut().zip(c) {
                *a += *x;
            }
        }
        std::hint::black_box(acc);
        t.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    quantile(&mut t, 0.5)
}

/// Rows per second of [`nucleus_sampler::BatchSampler`] on `b` rows of `v` logits with the
/// given chain and `threads` rayon threads (median over `iters` batches).
pub fn batch_rows_per_sec(params: &SamplingParams, b: usize, v: usize, threads: usize, iters: usize) -> f64 {
    let mut rows = Vec::with_capacity(b * v);
    for r in 0..b {
        rows.extend(logits(v, if r % 2 == 0 { Shape::Confident } else { Shape::Flat }, r as u64 + 1));
    }
    let make = |i: usize| {
        let p = SamplingParams { seed: params.seed.wrapping_add(i as u32), ..params.clone() };
        TokenSampler::new(p.build(v, None).expect("benchmark params are valid"))
    };
    let mut batch = nucleus_sampler::BatchSampler::new((0..b).map(make).collect());
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool");
    let mut out = vec![Ok(0); b];
    let mut t = Vec::with_capacity(iters);
    pool.install(|| {
        for i in 0..iters + 2 {
            let t0 = Instant::now();
            batch.sample(&rows, v, &mut out).expect("batch shape");
            if i >= 2 {
                t.push(t0.elapsed().as_secs_f64());
            }
        }
    });
    b as f64 / quantile(&mut t, 0.5)
}
