//! The whole-vocabulary fast path gives exactly the full-array result: same tokens, same
//! final candidates (ids, order, logits, probabilities), over random rows and chains.

use nucleus_sampler::samplers::{dry::Dry, logit_bias::LogitBias, penalties::Penalties, top_k::TopK};
use nucleus_sampler::{Chain, SamplingParams, TokenSampler};
use proptest::prelude::*;

fn row_strategy() -> impl Strategy<Value = Vec<f32>> {
    (1024usize..6000, any::<u32>(), 1u32..4000, prop::bool::ANY).prop_map(|(n, seed, levels, spikes)| {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let v = ((x >> 8) % levels) as f32 / 97.0 - 8.0;
                if spikes && i % 613 == 5 { v + 12.0 } else if x % 97 == 0 { f32::NEG_INFINITY } else { v }
            })
            .collect()
    })
}

fn compare(mut fast: TokenSampler, row: &[f32], history: &[i32], steps: usize) -> Result<(), TestCaseError> {
    let mut slow = fast.clone();
    slow.set_fast_path(false);
    for &t in history {
        fast.accept(t);
        slow.accept(t);
    }
    for step in 0..steps {
        let a = fast.sample(row);
        let b = slow.sample(row);
        prop_assert_eq!(&a, &b, "step {}", step);
        let (ca, cb) = (fast.candidates(), slow.candidates());
        prop_assert_eq!(ca.as_slice(), cb.as_slice(), "candidates at step {}", step);
        prop_assert_eq!(ca.is_sorted(), cb.is_sorted());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn common_chains_match(row in row_strategy(), seed in any::<u32>(), k in 1i32..200, rep in 1.0f32..1.5,
                           freq in 0.0f32..0.5, bias_tok in 0i32..1024, dry in 0.0f32..1.0, temp in 0.0f32..1.5,
                           hist in prop::collection::vec(0i32..1100, 0..80)) {
        let p = SamplingParams {
            seed: seed % 1000,
            top_k: k,
            temp,
            penalty_repeat: rep,
            penalty_freq: freq,
            dry_multiplier: dry,
            logit_bias: vec![(bias_tok, 3.5), (bias_tok, -1.0), (7, f32::NEG_INFINITY)],
            ..Default::default()
        };
        let s = TokenSampler::new(p.build(row.len(), None).unwrap());
        compare(s, &row, &hist, 4)?;
    }

    #[test]
    fn hand_built_prefixes_match(row in row_strategy(), k in 1i32..129, hist in prop::collection::vec(-5i32..7000, 0..40)) {
        let n = row.len();
        let chain = Chain::new()
            .with(Penalties::new(n, 32, 1.3, 0.2, 0.4))
            .with(LogitBias::new(n, vec![(1, 100.0), (1, -50.0), (9999, 2.0), (-3, 1.0)]))
            .with(Dry::from_token_breakers(n, 1.0, 1.75, 1, 40, &[vec![5]]))
            .with(TopK::new(k))
            .with(nucleus_sampler::samplers::dist::Dist::new(3));
        compare(TokenSampler::new(chain), &row, &hist, 3)?;
    }
}

#[test]
fn nan_and_inf_are_errors_on_both_paths() {
    let mut row = vec![0.5f32; 4096];
    row[4000] = f32::NAN;
    let p = SamplingParams { seed: 1, ..Default::default() };
    let mut fast = TokenSampler::new(p.build(row.len(), None).unwrap());
    let mut slow = fast.clone();
    slow.set_fast_path(false);
    assert_eq!(fast.sample(&row), slow.sample(&row));
    assert!(fast.sample(&row).is_err());
    row[4000] = f32::INFINITY;
    assert_eq!(fast.sample(&row), slow.sample(&row));
    assert!(fast.sample(&row).is_err());
}
