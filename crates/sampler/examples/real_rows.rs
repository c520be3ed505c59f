//! Profiling aid: times the benchmark chains (a to i of `nucleus bench`) on logits rows
//! recorded by `NUCLEUS_BENCH_DUMP_ROWS=dir nucleus bench --shapes real` (raw little-endian
//! f32, rows of `V` values back to back), nucleus side only, each step preceded by an untimed
//! read of the row as in `nucleus bench`. Each step is paired with an AVX-512 max pass over
//! the same row in the same state (the read floor), so a busy machine slows both alike and
//! the ratio step / floor stays comparable between runs. `REAL_ROWS_DETAIL=1` prints every
//! row's time and which fast-path tiers decided it; `REAL_ROWS_THRASH=MiB` writes that much
//! memory before each row, as llama.cpp's step does between nucleus's steps in the bench. The side-by-side figures against
//! llama.cpp come from `nucleus bench`; this says where nucleus's own time goes (run it under
//! `perf record`).
//!
//! ```sh
//! cargo run --release -p nucleus-sampler --example real_rows -- rows/262144.f32 262144 [chains] [reps]
//! ```

use std::time::Instant;

use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams, TokenSampler};

fn chains() -> Vec<(&'static str, SamplingParams)> {
    let d = SamplingParams { seed: 42, ..Default::default() };
    vec![
        ("a", SamplingParams { temp: 0.0, ..d.clone() }),
        ("b", SamplingParams { temp: 1.0, top_k: 0, top_p: 1.0, min_p: 0.0, ..d.clone() }),
        ("c", d.clone()),
        ("d", SamplingParams { top_k: 0, ..d.clone() }),
        ("e", SamplingParams { penalty_repeat: 1.1, penalty_freq: 0.1, penalty_present: 0.1, ..d.clone() }),
        ("f", SamplingParams { mirostat: MirostatMode::V2, ..d.clone() }),
        (
            "g",
            SamplingParams {
                top_n_sigma: 1.0,
                samplers: vec![SamplerType::TopNSigma, SamplerType::Temperature],
                ..d.clone()
            },
        ),
        (
            "h",
            SamplingParams {
                typ_p: 0.9,
                samplers: vec![SamplerType::TopK, SamplerType::TypicalP, SamplerType::Temperature],
                ..d.clone()
            },
        ),
        ("i", SamplingParams { xtc_probability: 0.5, xtc_threshold: 0.1, ..d }),
    ]
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The read floor: one max pass over the row (AVX-512 or AVX2 when the CPU has it).
fn max_pass(row: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F is present.
        return unsafe { max_pass_avx512(row) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present.
        return unsafe { max_pass_avx2(row) };
    }
    row.iter().fold(f32::NEG_INFINITY, |a, &x| if x > a { x } else { a })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn max_pass_avx512(row: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let mut m = [_mm512_set1_ps(f32::NEG_INFINITY); 4];
    let mut c = row.chunks_exact(64);
    for g in &mut c {
        for (j, mj) in m.iter_mut().enumerate() {
            // SAFETY: `g` holds 64 floats, so 16 from `16 * j` are inside it.
            *mj = _mm512_max_ps(*mj, unsafe { _mm512_loadu_ps(g.as_ptr().add(16 * j)) });
        }
    }
    let v = _mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3]));
    c.remainder().iter().fold(_mm512_reduce_max_ps(v), |a, &x| if x > a { x } else { a })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn max_pass_avx2(row: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let mut m = [_mm256_set1_ps(f32::NEG_INFINITY); 8];
    let mut c = row.chunks_exact(64);
    for g in &mut c {
        for (j, mj) in m.iter_mut().enumerate() {
            // SAFETY: `g` holds 64 floats, so 8 from `8 * j` are inside it.
            *mj = _mm256_max_ps(*mj, unsafe { _mm256_loadu_ps(g.as_ptr().add(8 * j)) });
        }
    }
    let v = m.iter().fold(_mm256_set1_ps(f32::NEG_INFINITY), |a, &b| _mm256_max_ps(a, b));
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds 8 floats.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
    lanes.iter().chain(c.remainder()).fold(f32::NEG_INFINITY, |a, &x| if x > a { x } else { a })
}

/// Every fast path's tier counters, concatenated (dist, dist staged refinement [decided, not], sigma, mirostat, top-p, wide top-p [sorted, full], wide top-p decided by min-p without sorting).
fn tiers() -> Vec<u64> {
    use nucleus_sampler::tier_counts::*;
    let mut v = dist_tier_counts().to_vec();
    v.extend(dist_partial_counts());
    v.extend(sigma_tier_counts());
    v.extend(mirostat_tier_counts());
    v.extend(top_p_tier_counts());
    v.extend(top_p_wide_tier_counts());
    v.push(top_p_wide_min_p_count());
    v
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(v)) = (args.get(1), args.get(2).and_then(|s| s.parse::<usize>().ok())) else {
        eprintln!("usage: real_rows FILE V [chains, e.g. acd] [reps]");
        std::process::exit(2);
    };
    let which = args.get(3).cloned().unwrap_or_else(|| "abcdefghi".into());
    let reps: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(2);
    let bytes = std::fs::read(path).expect("read the rows file");
    let all: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let rows: Vec<&[f32]> = all.chunks_exact(v).collect();
    let detail = std::env::var_os("REAL_ROWS_DETAIL").is_some();
    // REAL_ROWS_THRASH=MiB: write that much memory before each row (as llama.cpp's step does
    // between nucleus's steps in `nucleus bench`).
    let thrash_mib: usize = std::env::var("REAL_ROWS_THRASH").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut thrash = vec![0f32; thrash_mib << 18];
    let touch = |row: &[f32]| std::hint::black_box(row.iter().fold(0.0f32, |a, &x| a + x));
    for (name, params) in chains() {
        if !which.contains(name) {
            continue;
        }
        let mut s = TokenSampler::new(params.build(v, None).expect("valid params"));
        for t in 0..64 {
            s.accept(((t * 7919) % v) as i32);
        }
        let (mut times, mut floor) = (Vec::new(), Vec::new());
        for rep in 0..reps + 1 {
            for (ri, row) in rows.iter().enumerate() {
                if !thrash.is_empty() {
                    // What the other side's step does to the caches in `nucleus bench`.
                    thrash.iter_mut().step_by(16).for_each(|x| *x += 1.0);
                    std::hint::black_box(&thrash);
                }
                touch(row);
                let t0 = Instant::now();
                std::hint::black_box(max_pass(row));
                let tf = t0.elapsed().as_secs_f64() * 1e6;
                touch(row);
                let before = tiers();
                let t0 = Instant::now();
                let tok = s.sample(*row).expect("valid logits");
                let t = t0.elapsed().as_secs_f64() * 1e6;
                std::hint::black_box(tok);
                if detail && rep == reps {
                    let after = tiers();
                    let d: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
                    println!("  row {ri}: {t:.1} us, tiers {d:?}");
                }
                if rep > 0 {
                    times.push(t);
                    floor.push(tf);
                }
            }
        }
        let med = median(&mut times);
        let p90 = times[times.len() * 9 / 10];
        let fl = median(&mut floor);
        println!("{name}: median {med:.2} us, p90 {p90:.2} us; read floor (max pass) {fl:.2} us in the same loop");
    }
}
