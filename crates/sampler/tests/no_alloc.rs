//! After warm-up, sampling a token allocates nothing: a counting global allocator proves it
//! for a chain with every allocation-free sampler active.

mod common;

use common::alloc_count::{allocs, CountingAlloc};
use nucleus_sampler::probs::{top_n_post, top_n_raw, RawDistribution};
use nucleus_sampler::samplers::{
    adaptive_p::AdaptiveP, dry::Dry, logit_bias::LogitBias, min_p::MinP, mirostat::Mirostat, mirostat_v2::MirostatV2,
    penalties::Penalties, temp::Temp, temp_ext::TempExt, top_k::TopK, top_n_sigma::TopNSigma, top_p::TopP,
    typical::Typical, xtc::Xtc,
};
use nucleus_sampler::{Chain, Logits, MirostatMode, SamplerType, SamplingParams, TokenSampler};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn logits(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((x >> 8) % 20_000) as f32 / 1000.0 - 10.0
        })
        .collect()
}

/// Rows of `n` logits: even seeds confident (one token far ahead), odd seeds flat.
fn shaped(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    let mut u = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        (x as f64 + 0.5) / 4_294_967_296.0
    };
    (0..n)
        .map(|i| {
            let z = ((-2.0 * u().ln()).sqrt() * (2.0 * std::f64::consts::PI * u()).cos()) as f32;
            if seed.is_multiple_of(2) {
                2.5 * z + if i == n / 3 { 30.0 } else { 0.0 }
            } else {
                0.8 * z - 0.05 * z * z
            }
        })
        .collect()
}

fn assert_no_alloc(name: &str, mut s: TokenSampler, rows: &[Vec<f32>]) {
    // Warm up until every history window (64 tokens here) is full and buffers reach their
    // final size.
    for _ in 0..20 {
        for r in rows {
            let t = s.sample(r).unwrap();
            s.accept(t);
        }
    }
    let before = allocs();
    for _ in 0..5 {
        for r in rows {
            let t = s.sample(r).unwrap();
            s.accept(t);
        }
    }
    assert_eq!(allocs() - before, 0, "{name}: allocated during sampling");
}

/// The counter the checks here rest on counts: a known allocation, a growth (realloc) and a
/// fresh sampler's first step (its buffers are allocated inside the library, on this thread)
/// each show up, and freeing does not.
#[test]
fn the_counter_sees_allocations() {
    let before = allocs();
    let mut v: Vec<u64> = Vec::with_capacity(std::hint::black_box(16));
    assert_eq!(allocs() - before, 1, "Vec::with_capacity");
    v.extend(0..std::hint::black_box(1000));
    assert!(allocs() - before >= 2, "growing a Vec");
    let grown = allocs();
    drop(std::hint::black_box(v));
    assert_eq!(allocs(), grown, "a free is not an allocation");

    let row = logits(5000, 9);
    let mut s = TokenSampler::new(SamplingParams { seed: 3, ..Default::default() }.build(row.len(), None).unwrap());
    let before = allocs();
    s.sample(&row).unwrap();
    assert!(allocs() > before, "a fresh sampler's first step allocated nothing that was seen");
}

#[test]
fn sampling_allocates_nothing_after_warmup() {
    let n = 5000;
    let rows: Vec<Vec<f32>> = (0..4).map(|s| logits(n, s + 1)).collect();

    let every = Chain::new()
        .with(LogitBias::new(n, vec![(3, 1.0), (7, f32::NEG_INFINITY)]))
        .with(Penalties::new(n, 64, 1.1, 0.1, 0.1))
        .with(Dry::from_token_breakers(n, 0.8, 1.75, 2, 64, &[vec![10], vec![11, 12]]))
        .with(TopNSigma::new(2.0))
        .with(TopK::new(200))
        .with(Typical::new(0.95, 1))
        .with(TopP::new(0.95, 1))
        .with(MinP::new(0.01, 1))
        .with(Xtc::new(0.5, 0.01, 1, 5))
        .with(TempExt::new(0.8, 0.3, 1.0))
        .with(AdaptiveP::new(0.3, 0.9, 5));
    assert_no_alloc("every sampler + adaptive-p", TokenSampler::new(every), &rows);

    let wide = Chain::new().with(TopP::new(0.999, 0)).with(nucleus_sampler::samplers::dist::Dist::new(1));
    assert_no_alloc("top-p adaptive sort path", TokenSampler::new(wide), &rows);

    let m1 = Chain::new().with(Temp::new(0.9)).with(Mirostat::new(n, 1, 5.0, 0.1, 100));
    assert_no_alloc("mirostat", TokenSampler::new(m1), &rows);
    let m2 = Chain::new().with(Temp::new(0.9)).with(MirostatV2::new(1, 5.0, 0.1));
    assert_no_alloc("mirostat v2", TokenSampler::new(m2), &rows);

    let p = SamplingParams { seed: 3, penalty_repeat: 1.1, ..Default::default() };
    assert_no_alloc("default chain", TokenSampler::new(p.build(n, None).unwrap()), &rows);

    // The whole-vocabulary fast paths: dist only, top-n-sigma, mirostat v2, top-p without
    // top-k, each on a confident and a flat row (every tier and fallback warms up).
    let mut both = rows.clone();
    both.extend((0..4).map(|s| shaped(n * 8, s)));
    let chains = [
        (
            "dist only",
            SamplingParams {
                seed: 3,
                temp: 1.0,
                top_k: 0,
                top_p: 1.0,
                min_p: 0.0,
                penalty_repeat: 1.1,
                ..Default::default()
            },
        ),
        (
            "top-n-sigma",
            SamplingParams {
                seed: 3,
                top_n_sigma: 1.0,
                samplers: vec![SamplerType::Penalties, SamplerType::TopNSigma, SamplerType::Temperature],
                penalty_repeat: 1.1,
                ..Default::default()
            },
        ),
        ("mirostat v2 fast", SamplingParams { seed: 3, mirostat: MirostatMode::V2, ..Default::default() }),
        ("top-p without top-k", SamplingParams { seed: 3, top_k: 0, ..Default::default() }),
    ];
    for (name, p) in chains {
        for r in &both {
            let s = TokenSampler::new(p.build(r.len(), None).unwrap());
            assert_no_alloc(name, s, std::slice::from_ref(r));
        }
    }

    // Reporting log-probabilities reuses its output buffers too.
    let mut out = Vec::with_capacity(20);
    let mut s = TokenSampler::new(SamplingParams { seed: 3, ..Default::default() }.build(n, None).unwrap());
    s.sample(&rows[0]).unwrap();
    top_n_post(s.candidates(), 20, &mut out);
    let before = allocs();
    for r in &rows {
        s.sample(r).unwrap();
        let d = RawDistribution::of(Logits::F32(r));
        top_n_raw(Logits::F32(r), &d, 20, &mut out);
        top_n_post(s.candidates(), 20, &mut out);
    }
    assert_eq!(allocs() - before, 0, "log-probabilities allocated");
}
