//! Scratch benchmark of nucleus alone (see `nucleus bench` for the side-by-side).
use nucleus_parity::bench::{chains, logits, Shape};
use nucleus_sampler::TokenSampler;
use std::time::Instant;
fn main() {
    let n = 262144;
    let which = std::env::args().nth(1).unwrap_or_else(|| "bdfg".into());
    let iters: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(200);
    let slow = std::env::args().nth(3).is_some_and(|s| s == "slow");
    let only = std::env::var("SHAPE").unwrap_or_default();
    for shape in [Shape::Confident, Shape::Flat] {
        if !only.is_empty() && only != shape.name() {
            continue;
        }
        let row = logits(n, shape, 7);
        for (l, _, p) in chains() {
            if !which.contains(l) {
                continue;
            }
            let mut s = TokenSampler::new(p.build(n, None).unwrap());
            s.set_fast_path(!slow);
            for t in 0..64 {
                s.accept(((t * 7919) % n) as i32);
            }
            let before = nucleus_sampler::tier_counts::dist_tier_counts();
            let sb = nucleus_sampler::tier_counts::sigma_tier_counts();
            let mb = nucleus_sampler::tier_counts::mirostat_tier_counts();
            let pb = nucleus_sampler::tier_counts::top_p_tier_counts();
            let wb = nucleus_sampler::tier_counts::top_p_wide_tier_counts();
            // Like `nucleus bench`: 3 warm-up steps then 30 measured, repeated from a reset.
            let mut v = vec![];
            while v.len() < iters {
                s.reset();
                for t in 0..64 {
                    s.accept(((t * 7919) % n) as i32);
                }
                for _ in 0..3 {
                    s.sample(&row).unwrap();
                }
                for _ in 0..30 {
                    let t0 = Instant::now();
                    std::hint::black_box(s.sample(&row).unwrap());
                    v.push(t0.elapsed().as_secs_f64() * 1e6);
                }
            }
            let iters = v.len();
            let after = nucleus_sampler::tier_counts::dist_tier_counts();
            let tiers: Vec<u64> = (0..4).map(|i| after[i] - before[i]).collect();
            let sa = nucleus_sampler::tier_counts::sigma_tier_counts();
            let sig: Vec<u64> = (0..2).map(|i| sa[i] - sb[i]).collect();
            let ma = nucleus_sampler::tier_counts::mirostat_tier_counts();
            let mir: Vec<u64> = (0..2).map(|i| ma[i] - mb[i]).collect();
            let pa = nucleus_sampler::tier_counts::top_p_tier_counts();
            let topp: Vec<u64> = (0..2).map(|i| pa[i] - pb[i]).collect();
            let wa = nucleus_sampler::tier_counts::top_p_wide_tier_counts();
            let wide: Vec<u64> = (0..2).map(|i| wa[i] - wb[i]).collect();
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!(
                "{l} {:>9}: median {:8.1} us  min {:8.1}  p90 {:8.1}  dist {:?} sigma {:?} miro {:?} top-p {:?} wide {:?}",
                shape.name(),
                v[iters / 2],
                v[0],
                v[iters * 9 / 10],
                tiers,
                sig,
                mir,
                topp,
                wide
            );
        }
    }
}
