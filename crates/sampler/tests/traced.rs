//! `TokenSampler::apply_traced`: the same tokens as the fast paths, a complete final array, and
//! per-sampler candidate counts that match what each sampler is known to keep.

use nucleus_sampler::{SamplingParams, TokenSampler};

fn row(n: usize, seed: u32) -> Vec<f32> {
    // A deterministic, uneven row (a few strong logits over a long tail).
    (0..n)
        .map(|i| {
            let x = (i as u32).wrapping_mul(2654435761).wrapping_add(seed.wrapping_mul(40503)) % 10_000;
            (x as f32 / 1000.0) - 5.0 + if i % 97 == 0 { 6.0 } else { 0.0 }
        })
        .collect()
}

#[test]
fn traced_tokens_equal_fast_path_tokens() {
    let chains = [
        SamplingParams { seed: 7, ..Default::default() },
        SamplingParams { seed: 8, top_k: 5, ..Default::default() },
        SamplingParams { seed: 9, top_k: 0, top_p: 0.5, min_p: 0.0, ..Default::default() },
        SamplingParams { seed: 10, top_k: 0, top_p: 1.0, min_p: 0.0, ..Default::default() },
        SamplingParams { seed: 11, xtc_probability: 0.5, xtc_threshold: 0.1, ..Default::default() },
    ];
    let n = 4096;
    for params in &chains {
        let mut fast = TokenSampler::new(params.build(n, None).unwrap());
        let mut traced = TokenSampler::new(params.build(n, None).unwrap());
        let mut counts = Vec::new();
        for step in 0..40 {
            let logits = row(n, step);
            let a = fast.sample(&logits[..]).unwrap();
            let b = traced.apply_traced(&logits[..], |_| {}, &mut counts).unwrap();
            traced.accept(b);
            assert_eq!(a, b, "step {step} of {params:?}");
            assert!(traced.candidates_complete());
            assert_eq!(counts.len(), traced.chain().len() + 1);
            assert_eq!(counts[0], n);
            assert!(counts.windows(2).all(|w| w[1] <= w[0]), "{counts:?}");
            let sum: f32 = traced.candidates().as_slice().iter().map(|d| d.p).sum();
            assert!((sum - 1.0).abs() < 1e-3, "post-chain probabilities sum to {sum}");
        }
    }
}

#[test]
fn counts_follow_each_sampler() {
    let params = SamplingParams { seed: 3, top_k: 40, top_p: 1.0, min_p: 0.0, ..Default::default() };
    let n = 2000;
    let mut s = TokenSampler::new(params.build(n, None).unwrap());
    let mut counts = Vec::new();
    let logits = row(n, 1);
    s.apply_traced(
        &logits[..],
        |c| c.as_mut_slice()[..1000].iter_mut().for_each(|d| d.logit = f32::NEG_INFINITY),
        &mut counts,
    )
    .unwrap();
    assert_eq!(counts[0], 1000, "the steer banned half");
    let names: Vec<&str> = s.chain().samplers().iter().map(|x| x.name()).collect();
    let k = names.iter().position(|&x| x == "top-k").unwrap();
    assert_eq!(counts[k + 1], 40, "{names:?} {counts:?}");
    assert_eq!(*counts.last().unwrap(), 40);
}
