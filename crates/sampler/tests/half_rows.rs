//! Half-precision rows (f16, bf16) mean their f32 widening: sampled through the fast paths they
//! give, step after step, the tokens the full path gives on the same half row and the tokens an
//! f32 sampler gives on the widened row, for every chain shape the fast paths cover; their final
//! candidates, rebuilt from the half row, are the full path's.

use half::{bf16, f16};
use nucleus_sampler::{Candidates, MirostatMode, SamplingParams, TokenSampler};

/// A deterministic row of `n` logits with a long tail and a few ties (LCG noise).
fn row(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (x >> 40) as f32 / (1u64 << 24) as f32;
            (u * 12.0 - 6.0) * (u * u)
        })
        .collect()
}

fn bits(c: &Candidates) -> Vec<(i32, u32, u32)> {
    c.as_slice().iter().map(|t| (t.id, t.logit.to_bits(), t.p.to_bits())).collect()
}

fn chains() -> Vec<(&'static str, SamplingParams)> {
    let d = SamplingParams { seed: 3, ..SamplingParams::default() };
    vec![
        ("default", d.clone()),
        ("top_k 0", SamplingParams { top_k: 0, ..d.clone() }),
        ("dist only", SamplingParams { top_k: 0, top_p: 1.0, min_p: 0.0, ..d.clone() }),
        ("greedy", SamplingParams { temp: 0.0, ..d.clone() }),
        ("top-n-sigma", SamplingParams { top_n_sigma: 1.5, ..d.clone() }),
        ("mirostat v2", SamplingParams { mirostat: MirostatMode::V2, ..d.clone() }),
        ("penalties", SamplingParams { penalty_repeat: 1.3, penalty_last_n: 16, ..d }),
    ]
}

#[test]
fn half_rows_take_the_fast_paths_and_equal_their_widening() {
    let n = 20_000;
    for (name, p) in chains() {
        let mut fast_f16 = TokenSampler::new(p.build(n, None).unwrap());
        let mut full_f16 = TokenSampler::new(p.build(n, None).unwrap());
        full_f16.set_fast_path(false);
        let mut f32s = TokenSampler::new(p.build(n, None).unwrap());
        let mut fast_bf16 = TokenSampler::new(p.build(n, None).unwrap());
        let mut full_bf16 = TokenSampler::new(p.build(n, None).unwrap());
        full_bf16.set_fast_path(false);
        let mut f32b = TokenSampler::new(p.build(n, None).unwrap());
        for step in 0..12 {
            let r = row(n, 100 + step);
            let h: Vec<f16> = r.iter().map(|&v| f16::from_f32(v)).collect();
            let hw: Vec<f32> = h.iter().map(|v| v.to_f32()).collect();
            let b: Vec<bf16> = r.iter().map(|&v| bf16::from_f32(v)).collect();
            let bw: Vec<f32> = b.iter().map(|v| v.to_f32()).collect();
            let t = fast_f16.sample(h.as_slice()).unwrap();
            assert_eq!(t, full_f16.sample(h.as_slice()).unwrap(), "{name} f16 step {step}: fast vs full");
            // The fast path may defer the final candidates; rebuilt from the half row they are
            // the full path's, bit for bit.
            let got = bits(fast_f16.materialize_candidates(h.as_slice()));
            assert_eq!(got, bits(full_f16.candidates()), "{name} f16 step {step}: candidates");
            assert_eq!(t, f32s.sample(hw.as_slice()).unwrap(), "{name} f16 step {step}: vs f32 widening");
            let t = fast_bf16.sample(b.as_slice()).unwrap();
            assert_eq!(t, full_bf16.sample(b.as_slice()).unwrap(), "{name} bf16 step {step}: fast vs full");
            assert_eq!(t, f32b.sample(bw.as_slice()).unwrap(), "{name} bf16 step {step}: vs f32 widening");
        }
    }
}

#[test]
fn a_bad_half_logit_is_the_same_error_as_its_widening() {
    let p = SamplingParams::default();
    let mut h = vec![f16::from_f32(0.5); 1000];
    h[7] = f16::NAN;
    let w: Vec<f32> = h.iter().map(|v| v.to_f32()).collect();
    let mut a = TokenSampler::new(p.build(1000, None).unwrap());
    let mut b = TokenSampler::new(p.build(1000, None).unwrap());
    let ea = a.sample(h.as_slice()).unwrap_err().to_string();
    let eb = b.sample(w.as_slice()).unwrap_err().to_string();
    assert_eq!(ea, eb);
}
