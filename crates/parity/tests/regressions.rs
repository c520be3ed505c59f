//! Mismatches the differential oracle found, shrunk to small cases. Each test runs its case
//! on both sides and requires parity; each was fixed in nucleus-sampler after it was found.

use nucleus_parity::cases::{Case, Layout, Rows};
use nucleus_parity::harness::{assert_parity, trace};
use nucleus_sampler::StepSpec as S;

fn explicit(rows: Vec<Vec<f32>>, chain: Vec<S>, history: Vec<i32>, steps: usize) -> Case {
    Case {
        vocab: rows[0].len(),
        rows: Rows::Explicit(rows),
        chain,
        history,
        steps,
        layout: Layout::Identity,
        reset_before: None,
        clone_before: None,
        edits: vec![],
    }
}

fn check(case: &Case) {
    if std::env::var_os("NUCLEUS_PARITY_TRACE").is_some() {
        eprintln!("{}", trace(case, 16));
    }
    assert_parity(case);
}

/// adaptive-p after XTC (threshold 0, which cuts to the least likely candidate).
#[test]
fn adaptive_p_after_xtc_threshold_zero() {
    let case = explicit(
        vec![
            vec![-0.507087, -0.992545],
            vec![-0.74853384, 0.42751694],
            vec![0.099737346, -0.8583333],
            vec![-0.8991363, -1.4155806],
            vec![-1.0794237, -1.0343094],
        ],
        vec![
            S::TopNSigma { n: 1.0 },
            S::Xtc { probability: 0.8399476, threshold: 0.0, min_keep: 1, seed: 90 },
            S::AdaptiveP { target: 0.5, decay: 0.7839727, seed: 1427086398 },
        ],
        vec![],
        5,
    );
    check(&case);
}

/// temp-ext whose dynamic temperature underflows to a denormal, turning logits into +inf and
/// probabilities into NaN; adaptive-p then samples from NaN weights.
#[test]
fn temp_ext_denormal_temperature_then_adaptive_p() {
    let case = explicit(
        vec![vec![40.574577, 40.202477]],
        vec![
            S::LogitBias { n_vocab: 2, biases: vec![(1, 100.0), (9, 4.576948), (9, -5.9833074), (-1, 1.5353317)] },
            S::TempExt { t: 0.19053826, delta: 0.19053826, exponent: 1.0 },
            S::AdaptiveP { target: 0.22884512, decay: 0.6291387, seed: 1542471959 },
        ],
        vec![],
        1,
    );
    check(&case);
}

/// mirostat-v2 through `TokenSampler`'s fast path when `mu` is so large that the cut falls
/// among denormal probabilities (here `mu = 2 * tau = 149` at the first step, also seen at
/// 147.5; in longer runs `mu` grows there by itself): llama.cpp keeps every
/// candidate whose `p` is a denormal down to the smallest one (`p = 1e-45`, `-log2f(p) =
/// 149`, not `> mu`) and drops only `p = 0`; the fast path kept 637 of llama.cpp's 638 here
/// (up to 22 fewer in other cases). Found by the oracle (harness seeds 0x18ea5f95c512f9de
/// cases 126274, 129626, 193090; 0x18ea28172dcd49b2 cases 7130, 66177), reduced to one step
/// on a closed-form row.
#[test]
fn mirostat_v2_fast_path_cut_among_denormal_probabilities() {
    let row: Vec<f32> = (0..1024).map(|i| ((i * 7919 % 1024) as f32) * 0.16 - 80.0).collect();
    let case = explicit(vec![row], vec![S::MirostatV2 { seed: 0, tau: 74.5, eta: 0.1 }], vec![], 1);
    check(&case);
}

/// Logits past about 3.4e8: llama.cpp's bucket index (`6.4 v + 64` converted to int) leaves
/// the int range, so such a value lands in bucket 0, behind every ordinary value, and its
/// sorted arrays are no longer in value order. nucleus's fast paths assumed the bucket order
/// follows the values; the fuzz target (`fuzz/regressions/sampler/ci-stop22-crash`) found
/// mirostat v2's indexing out of bounds there, and they now leave such rows to the full path
/// (`tests/fast_path.rs::extreme_magnitudes_match` in the sampler is the test that fails without
/// that guard). Here: every chain with a whole-vocabulary fast path, on rows holding a few huge
/// values or scaled far past the range, matches llama.cpp itself.
#[test]
fn huge_logits_past_the_bucket_int_range() {
    let n = 3000;
    let base: Vec<f32> = (0..n).map(|i| ((i * 7919 % n) as f32) * 0.01 - 10.0).collect();
    let mut spiky = base.clone();
    for (at, v) in [(5, 1e30f32), (6, 1e30), (900, 4e8), (1700, -1e9), (2999, 1.7e38)] {
        spiky[at] = v;
    }
    let scaled: Vec<f32> = base.iter().map(|&v| v * 1e8).collect();
    let chains = [
        vec![S::Temp { t: 0.5 }, S::MirostatV2 { seed: 3, tau: 5.0, eta: 0.1 }],
        vec![
            S::TopP { p: 0.95, min_keep: 1 },
            S::MinP { p: 0.05, min_keep: 1 },
            S::Temp { t: 0.8 },
            S::Dist { seed: 3 },
        ],
        vec![S::TopK { k: 40 }, S::TopP { p: 0.95, min_keep: 1 }, S::Temp { t: 0.8 }, S::Dist { seed: 3 }],
        vec![S::TopNSigma { n: 1.0 }, S::Temp { t: 0.8 }, S::Dist { seed: 3 }],
        vec![S::Dist { seed: 3 }],
    ];
    for row in [&spiky, &scaled] {
        for chain in &chains {
            check(&explicit(vec![row.clone()], chain.clone(), vec![], 3));
        }
    }
}
