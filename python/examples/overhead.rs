//! The Rust side of the bindings' per-call overhead figure (docs/PERFORMANCE.md): the time of
//! one `TokenSampler::sample` call at V = 151936 (or the V given as argument) for three chains, on the logits that
//! `overhead.py` (Python) and `node/examples/overhead.cjs` (Node) feed through the bindings.
//! Run: `cargo run --release -p nucleus-python --example overhead`.

use std::time::Instant;

use half::f16;
use nucleus_sampler::{Logits, SamplingParams, TokenSampler};

/// The vectors' generator (a 32-bit LCG, logits in [-10, 10) in 0.001 steps), also used by the
/// Python and Node scripts.
fn logits(seed: u32, n: usize) -> Vec<f32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((x >> 8) % 20_000) as f32 / 1000.0f32 - 10.0f32
        })
        .collect()
}

fn main() {
    // V = 151936 (Qwen's vocabulary) by default; a tiny V isolates the per-call cost.
    let v: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(151_936);
    let f32_row = logits(11, v);
    // The same row in half precision (round to nearest even), read by the sampler's f16 path.
    let f16_row: Vec<f16> = f32_row.iter().map(|&x| f16::from_f32(x)).collect();
    let (f32_row, f16_row) = (Logits::F32(&f32_row), Logits::F16(&f16_row));
    let chains: [(&str, SamplingParams, Logits<'_>); 4] = [
        ("default chain (top-k 40 ...)", SamplingParams { seed: 42, ..Default::default() }, f32_row),
        ("dist only", SamplingParams { seed: 42, samplers: Vec::new(), ..Default::default() }, f32_row),
        ("greedy (temp 0)", SamplingParams { seed: 42, temp: 0.0, ..Default::default() }, f32_row),
        ("default chain, float16 row", SamplingParams { seed: 42, ..Default::default() }, f16_row),
    ];
    for (name, p, row) in chains {
        let mut s = TokenSampler::new(p.build(v, None).expect("valid params"));
        for _ in 0..200 {
            s.sample(row).expect("sample");
        }
        let mut per_call = Vec::new();
        for _ in 0..7 {
            let n = 2000;
            let t = Instant::now();
            for _ in 0..n {
                s.sample(row).expect("sample");
            }
            per_call.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        }
        per_call.sort_by(f64::total_cmp);
        println!("rust   V={v:<6} {name:32} median {:7.2} µs/call  (min {:.2})", per_call[3], per_call[0]);
    }
}
