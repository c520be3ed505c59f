//! The whole-vocabulary fast paths give exactly the full-array result: same tokens, same
//! random streams, same final candidates (ids, order, logits, probabilities), over random rows
//! and chains. Steps that defer the candidates are checked through `materialize_candidates`.

use nucleus_sampler::samplers::{dry::Dry, logit_bias::LogitBias, penalties::Penalties, top_k::TopK};
use nucleus_sampler::{Candidates, Chain, MirostatMode, SamplerType, SamplingParams, TokenSampler};
use proptest::prelude::*;

/// Held by every test here that runs mirostat v2. The tier counters are process-wide and the
/// harness runs tests on several threads, so without it `mirostat_value_path_matches` would
/// count other tests' full-path steps as its own.
static MIROSTAT_COUNTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mirostat_counts() -> std::sync::MutexGuard<'static, ()> {
    MIROSTAT_COUNTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A proptest block's case count: `n`, divided by `NUCLEUS_FAST_PATH_CASES_DIV` when that is
/// set (at least one case). The aarch64 build runs these tests under QEMU user-mode emulation
/// in CI (`.ci/aarch64-tests`), where the full count, which compares the full path's sort of
/// rows up to 300,000 logits, would take hours; natively every case runs.
fn cases(n: u32) -> u32 {
    match std::env::var("NUCLEUS_FAST_PATH_CASES_DIV") {
        Ok(v) => {
            let div: u32 = v.trim().parse().expect("NUCLEUS_FAST_PATH_CASES_DIV is a positive integer");
            (n / div.max(1)).max(1)
        }
        Err(_) => n,
    }
}

fn row_strategy() -> impl Strategy<Value = Vec<f32>> {
    (1024usize..6000, any::<u32>(), 1u32..4000, prop::bool::ANY).prop_map(|(n, seed, levels, spikes)| {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let v = ((x >> 8) % levels) as f32 / 97.0 - 8.0;
                if spikes && i % 613 == 5 {
                    v + 12.0
                } else if x % 97 == 0 {
                    f32::NEG_INFINITY
                } else {
                    v
                }
            })
            .collect()
    })
}

/// The candidates as comparable bits: (id, logit bits, p bits), then sorted flag and selection.
fn bits(c: &Candidates) -> (Vec<(i32, u32, u32)>, bool, Option<usize>) {
    (c.as_slice().iter().map(|d| (d.id, d.logit.to_bits(), d.p.to_bits())).collect(), c.is_sorted(), c.selected())
}

fn compare(fast: TokenSampler, row: &[f32], history: &[i32], steps: usize) -> Result<(), TestCaseError> {
    compare_deferred(fast, row, history, steps, false)
}

/// Like `compare`; with `deferred`, every successful step must have taken a deferring fast path.
fn compare_deferred(
    mut fast: TokenSampler,
    row: &[f32],
    history: &[i32],
    steps: usize,
    deferred: bool,
) -> Result<(), TestCaseError> {
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
        if a.is_err() {
            continue;
        }
        prop_assert!(!deferred || !fast.candidates_complete(), "step {} took the full path", step);
        if !fast.candidates_complete() {
            // Only the selected token is kept; the exact array is rebuilt on request.
            let (sa, sb) = (fast.candidates().selected_token().unwrap(), slow.candidates().selected_token().unwrap());
            prop_assert_eq!((sa.id, sa.logit.to_bits()), (sb.id, sb.logit.to_bits()), "selected at step {}", step);
            fast.materialize_candidates(row);
            prop_assert!(fast.candidates_complete());
        }
        prop_assert_eq!(bits(fast.candidates()), bits(slow.candidates()), "candidates at step {}", step);
    }
    Ok(())
}

/// xorshift64* uniforms and Box-Muller normals.
struct Gen(u64);
impl Gen {
    fn unif(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f32 {
        let (u1, u2) = (self.unif(), self.unif());
        ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
    }
}

/// A row shaped like a real model's (see `real_shaped`'s callers): most logits a few nats
/// around -2, hundreds at or above 10 (llama.cpp's top sort bucket), a handful far ahead, on a
/// 1/4096 grid so that equal logits occur as in a quantized model's output.
fn real_shaped(n: usize, g: &mut Gen) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n)
        .map(|i| {
            let z = 4.0 * g.normal() - 2.0 + if i % 4099 == 7 { 12.0 } else { 0.0 };
            (z * 4096.0).round() / 4096.0
        })
        .collect();
    let top = (g.unif() * n as f64) as usize % n;
    v[top] += 6.0 + 12.0 * g.unif() as f32;
    v
}

/// Whole-vocabulary rows, 1024 to 300000 logits, in shapes that stress the bounds: flat and
/// long-tailed, confident, bf16-like heavy ties, few distinct values, all equal, mostly -inf,
/// blocks far below the maximum, shaped like a real model's row, plus scattered -inf.
fn big_row_strategy() -> impl Strategy<Value = Vec<f32>> {
    (1024usize..300_000, 0u8..9, any::<u64>(), 0u32..40).prop_map(|(n, shape, seed, ninf)| {
        let mut g = Gen(seed | 1);
        let mut v: Vec<f32> = match shape {
            0 => (0..n)
                .map(|_| {
                    let z = g.normal();
                    0.8 * z - 0.05 * z * z
                })
                .collect(),
            1 => {
                let mut v: Vec<f32> =
                    (0..n).map(|i| 2.5 * g.normal() + if i % 997 == 3 { 15.0 } else { 0.0 }).collect();
                v[(seed as usize) % n] += 25.0;
                v
            }
            2 => (0..n).map(|_| half::bf16::from_f32(3.0 * g.normal()).to_f32()).collect(),
            3 => (0..n).map(|_| (g.unif() * 6.0).floor() as f32 * 0.5).collect(),
            4 => vec![(seed % 7) as f32 - 3.0; n],
            5 => (0..n).map(|i| if i % 13 == 0 { g.normal() } else { f32::NEG_INFINITY }).collect(),
            6 => (0..n).map(|i| g.normal() - if (i / 1024) % 3 == 1 { 150.0 } else { 0.0 }).collect(),
            7 => real_shaped(n, &mut g),
            _ => (0..n).map(|_| 0.01 * g.normal()).collect(),
        };
        for _ in 0..ninf {
            let i = (g.unif() * n as f64) as usize % n;
            v[i] = f32::NEG_INFINITY;
        }
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(200), ..ProptestConfig::default() })]

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

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(200), ..ProptestConfig::default() })]

    /// Top-p over the whole row (chain d's shape) on rows at the size where llama.cpp's top-p
    /// changes sorts: arrays of at most 1024 candidates are sorted whole by `std::sort`,
    /// longer ones bucket-sorted 256 at a time first. Few distinct values, so ties fall
    /// inside the nucleus and the tie order decides the token.
    #[test]
    fn top_p_matches_at_the_adaptive_sort_boundary(n in 1024usize..1030, seed in any::<u32>(), levels in 1u32..300,
                                                   top_p in prop::sample::select(vec![0.5f32, 0.95, 0.99, 0.999]),
                                                   min_p in prop::sample::select(vec![0.0f32, 0.05]),
                                                   hist in prop::collection::vec(0i32..1024, 0..32)) {
        let mut x = seed;
        let row: Vec<f32> = (0..n)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                ((x >> 8) % levels) as f32 / 7.0
            })
            .collect();
        let p = SamplingParams { seed: seed % 1000, top_k: 0, top_p, min_p, ..Default::default() };
        let s = TokenSampler::new(p.build(row.len(), None).unwrap());
        compare(s, &row, &hist, 3)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(160), ..ProptestConfig::default() })]

    /// (b): dist alone, alone after penalties / logit bias, many seeds, several steps.
    #[test]
    fn dist_only_matches(row in big_row_strategy(), seed in any::<u32>(), pen in prop::bool::ANY,
                         hist in prop::collection::vec(0i32..3000, 0..64)) {
        let n = row.len() as i32;
        let p = SamplingParams {
            seed,
            temp: 1.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            penalty_repeat: if pen { 1.3 } else { 1.0 },
            logit_bias: if pen { vec![(n - 1, 4.0), (3, f32::NEG_INFINITY), (n / 2, -2.0)] } else { vec![] },
            ..Default::default()
        };
        let s = TokenSampler::new(p.build(row.len(), None).unwrap());
        compare_deferred(s, &row, &hist, 3, true)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(160), ..ProptestConfig::default() })]

    /// (g): top-n-sigma then temperature then dist, with and without sparse samplers first,
    /// several n and temperatures (temp-ext without range, or plain temp).
    #[test]
    fn top_n_sigma_matches(row in big_row_strategy(), seed in any::<u32>(), nsig in prop::sample::select(vec![0.3f32, 1.0, 1.0, 2.0, 4.5]),
                           temp in prop::sample::select(vec![0.8f32, 1.0, 1.7]), pen in prop::bool::ANY,
                           hist in prop::collection::vec(0i32..3000, 0..64)) {
        let n = row.len() as i32;
        let p = SamplingParams {
            seed,
            top_n_sigma: nsig,
            temp,
            samplers: vec![SamplerType::Penalties, SamplerType::TopNSigma, SamplerType::Temperature],
            penalty_repeat: if pen { 1.3 } else { 1.0 },
            logit_bias: if pen { vec![(n - 1, 4.0), (3, f32::NEG_INFINITY), (n / 2, 30.0)] } else { vec![] },
            ..Default::default()
        };
        let s = TokenSampler::new(p.build(row.len(), None).unwrap());
        let all_ninf = row.iter().all(|&v| v == f32::NEG_INFINITY);
        compare_deferred(s, &row, &hist, 3, !all_ninf)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(120), ..ProptestConfig::default() })]

    /// (f): temperature then mirostat v2 over many steps (mu moves), with and without sparse
    /// samplers first, several tau / eta / temperatures.
    #[test]
    fn mirostat_v2_matches(row in big_row_strategy(), seed in any::<u32>(), tau in prop::sample::select(vec![1.0f32, 3.0, 5.0, 9.0]),
                           eta in prop::sample::select(vec![0.1f32, 0.5, 1.0]), temp in prop::sample::select(vec![0.8f32, 1.0, 1.3]),
                           bias in prop::bool::ANY, hist in prop::collection::vec(0i32..3000, 0..16)) {
        let _counts = mirostat_counts();
        let n = row.len() as i32;
        let p = SamplingParams {
            seed,
            mirostat: MirostatMode::V2,
            mirostat_tau: tau,
            mirostat_eta: eta,
            temp,
            logit_bias: if bias { vec![(n - 1, 4.0), (3, f32::NEG_INFINITY), (n / 2, 12.0)] } else { vec![] },
            ..Default::default()
        };
        let s = TokenSampler::new(p.build(row.len(), None).unwrap());
        compare(s, &row, &hist, 12)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(160), ..ProptestConfig::default() })]

    /// (d): the default chain without top-k (top-p, min-p, temperature, dist), several p /
    /// min-p / min_keep, with and without sparse samplers first.
    #[test]
    fn top_p_chain_matches(row in big_row_strategy(), seed in any::<u32>(), top_p in prop::sample::select(vec![0.5f32, 0.9, 0.95, 0.99, 0.0]),
                           min_p in prop::sample::select(vec![0.0f32, 0.05, 0.2]), min_keep in 0usize..4, temp in prop::sample::select(vec![0.8f32, 1.0]),
                           pen in prop::bool::ANY, hist in prop::collection::vec(0i32..3000, 0..64)) {
        let n = row.len() as i32;
        let p = SamplingParams {
            seed,
            top_k: 0,
            top_p,
            min_p,
            min_keep,
            temp,
            penalty_repeat: if pen { 1.3 } else { 1.0 },
            logit_bias: if pen { vec![(n - 1, 4.0), (3, f32::NEG_INFINITY), (n / 2, 12.0)] } else { vec![] },
            ..Default::default()
        };
        let s = TokenSampler::new(p.build(row.len(), None).unwrap());
        compare(s, &row, &hist, 3)?;
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

    // Whole-vocabulary chains, with the bad value under a logit bias (still an error).
    for p in [
        SamplingParams {
            seed: 1,
            temp: 1.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            logit_bias: vec![(4000, -1.0)],
            ..Default::default()
        },
        SamplingParams {
            seed: 1,
            top_n_sigma: 1.0,
            samplers: vec![SamplerType::TopNSigma, SamplerType::Temperature],
            logit_bias: vec![(4000, -1.0)],
            ..Default::default()
        },
    ] {
        let mut fast = TokenSampler::new(p.build(row.len(), None).unwrap());
        let mut slow = fast.clone();
        slow.set_fast_path(false);
        for bad in [f32::NAN, f32::INFINITY] {
            row[4000] = bad;
            assert_eq!(fast.sample(&row), slow.sample(&row));
            assert!(fast.sample(&row).is_err());
        }
        // Every logit -inf: both paths report no candidate.
        let all = vec![f32::NEG_INFINITY; 4096];
        assert_eq!(fast.sample(&all), slow.sample(&all));
    }
}

/// A user sampler that bans the best token and counts its calls. Its name starts with `?`,
/// which is how built-in no-op samplers are named: the fast paths must still run it.
#[derive(Clone)]
struct BanBest {
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl nucleus_sampler::Sampler for BanBest {
    fn name(&self) -> &str {
        "?ban-best"
    }

    fn apply(&mut self, c: &mut Candidates) {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let data = c.as_mut_slice();
        if let Some(best) = (0..data.len()).max_by(|&a, &b| data[a].logit.total_cmp(&data[b].logit)) {
            data[best].logit = f32::NEG_INFINITY;
        }
    }

    fn clone_box(&self) -> Box<dyn nucleus_sampler::Sampler> {
        Box::new(self.clone())
    }
}

/// A user sampler placed where only no-op or sparse built-ins may sit on a fast path is never
/// skipped: every chain kind gives the full path's token, and `apply` runs every step.
#[test]
fn custom_sampler_is_never_skipped() {
    let _counts = mirostat_counts();
    use nucleus_sampler::Step;
    let n = 4096;
    let mut row: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 250.0).collect();
    row[1234] = 40.0; // the best token, far ahead: every chain would pick it unless banned
    let base = SamplingParams { seed: 9, ..Default::default() };
    let all = [
        base.clone(),
        SamplingParams { top_k: 0, ..base.clone() },
        SamplingParams { samplers: vec![], ..base.clone() },
        SamplingParams { mirostat: MirostatMode::V2, ..base.clone() },
        SamplingParams { top_n_sigma: 1.0, samplers: vec![SamplerType::TopNSigma], ..base.clone() },
    ];
    for params in all {
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut chain = params.build(n, None).unwrap();
        chain.insert(0, Step::custom(BanBest { calls: calls.clone() }));
        let mut fast = TokenSampler::new(chain);
        let mut slow = fast.clone();
        slow.set_fast_path(false);
        for step in 0..4 {
            let a = fast.sample(&row).unwrap();
            assert_ne!(a, 1234, "{}: the user sampler was skipped", fast.chain().describe());
            assert_eq!(a, slow.sample(&row).unwrap(), "step {step}");
        }
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 8, "{}", fast.chain().describe());
    }
}

/// The compiled plan follows edits of the chain: removing the user sampler brings the fast
/// path (and the banned token) back, inserting it again takes it away.
#[test]
fn plan_is_recompiled_after_chain_edits() {
    use nucleus_sampler::Step;
    let n = 4096;
    let mut row: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 250.0).collect();
    row[77] = 40.0;
    let params = SamplingParams { seed: 3, ..Default::default() };
    let mut ts = TokenSampler::new(params.build(n, None).unwrap());
    assert_eq!(ts.sample(&row).unwrap(), 77);
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    ts.chain_mut().insert(0, Step::custom(BanBest { calls: calls.clone() }));
    assert_ne!(ts.sample(&row).unwrap(), 77);
    ts.chain_mut().remove(0);
    assert_eq!(ts.sample(&row).unwrap(), 77);
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// A flat row of `n` logits (`0.8 z - 0.05 z^2` for normal `z`, seeded), rounded through bf16
/// when `bf16` is set (then most values are tied).
fn quadratic_flat_row(n: usize, bf16: bool, seed: u64) -> Vec<f32> {
    let mut g = Gen((seed * 0x9E37_79B9) | 1);
    (0..n)
        .map(|_| {
            let z = g.normal();
            let v = 0.8 * z - 0.05 * z * z;
            if bf16 {
                half::bf16::from_f32(v).to_f32()
            } else {
                v
            }
        })
        .collect()
}

/// (d) on flat rows, where the nucleus holds tens of thousands of tokens: the wide top-p path
/// decides the draws (the counter moves) and gives the full path's token, random stream and,
/// once materialised, candidates — on f32 rows and on bf16 rows, whose many tied logits make
/// the selected index land in a tie group (the bucket replay) on most draws.
#[test]
fn wide_top_p_matches_on_flat_rows() {
    let n = 65536;
    let before = wide_decided();
    for (shape, seed) in [(0u8, 1u64), (0, 2), (1, 3), (1, 4)] {
        let row = quadratic_flat_row(n, shape == 1, seed);
        for top_p in [0.9f32, 0.95] {
            let p = SamplingParams { seed: seed as u32, top_k: 0, top_p, ..Default::default() };
            let s = TokenSampler::new(p.build(n, None).unwrap());
            compare_deferred(s, &row, &[5, 6, 7], 24, true).unwrap();
        }
    }
    let after = wide_decided();
    assert!(after - before >= 8 * 24, "wide path decided {} draws", after - before);
}

/// (d) on a real model's flat step: a few dozen tokens a few nats ahead of a flat rest, so
/// top-p's nucleus holds thousands of tokens while min-p 0.05 keeps only the head. The narrow
/// path proves the nucleus wider than 256 and min-p's draw decides on the head alone (the
/// unsorted-draw counter moves on every draw); f32 rows and bf16 rows (ties in the head),
/// with the full path's tokens, random stream and candidates.
#[test]
fn wide_top_p_min_p_head_matches() {
    let n = 65536;
    let before = nucleus_sampler::tier_counts::top_p_wide_min_p_count();
    for (bf16, seed, head) in [(false, 21u64, 40usize), (true, 22, 120), (true, 23, 250)] {
        let mut row = quadratic_flat_row(n, bf16, seed);
        for k in 0..head {
            let v = 6.0 + 2.5 * ((k * 37) % 101) as f32 / 101.0;
            row[(k * 7919 + 13) % n] = if bf16 { half::bf16::from_f32(v).to_f32() } else { v };
        }
        for top_p in [0.9f32, 0.95] {
            let p = SamplingParams { seed: seed as u32, top_k: 0, top_p, ..Default::default() };
            compare_deferred(TokenSampler::new(p.build(n, None).unwrap()), &row, &[5, 6, 7], 12, true).unwrap();
        }
    }
    let decided = nucleus_sampler::tier_counts::top_p_wide_min_p_count() - before;
    assert!(decided >= 3 * 2 * 12, "min-p decided {decided} draws");
}

/// Draws the wide top-p path decided so far: sorted, and without sorting (min-p decided).
fn wide_decided() -> u64 {
    nucleus_sampler::tier_counts::top_p_wide_tier_counts()[0] + nucleus_sampler::tier_counts::top_p_wide_min_p_count()
}

/// The wide top-p path's replay of the chain after top-p (`fast::top_p_wide::draw_tail`) on
/// hand-built chains over flat rows (f32, and bf16 with many ties): min-p before and after
/// temperatures, two of each, min-p cut by `min_keep`, by `p = 1` (ties with the maximum) and
/// `p > 1`, no-op members, a temperature small enough that dist's sums are not exact or
/// overflow, and more temperatures than the replay takes (the generic tail); with top-p 0.95
/// (min-p decides what is kept: no sort, `min_p_draw`, on several tails) and 0.6 (top-p cuts
/// first: the sorted path).
#[test]
fn wide_top_p_tails_match() {
    use nucleus_sampler::samplers::{dist::Dist, min_p::MinP, temp::Temp, top_p::TopP};
    use nucleus_sampler::step::Step;
    let n = 65536;
    let mp = |p, k| Step::from(MinP::new(p, k));
    let t = |t| Step::from(Temp::new(t));
    let tails: Vec<Vec<Step>> = vec![
        vec![mp(0.05, 1), t(0.8)],
        vec![t(0.8), mp(0.05, 1)],
        vec![t(0.8), mp(0.05, 1), t(1.3), mp(0.3, 20_000)],
        vec![mp(0.0, 1), t(1.0), mp(1.0, 1), t(0.8)],
        vec![mp(1.5, 300)],
        vec![t(0.02)],
        vec![t(1e-38), mp(0.05, 1)],
        vec![t(0.9), t(0.9), t(0.9), t(0.9), t(0.9), mp(0.05, 1)],
        vec![mp(0.05, 50_000), t(0.8)],
        vec![t(0.5), mp(0.05, 1)],
    ];
    let before = wide_decided();
    let unsorted = nucleus_sampler::tier_counts::top_p_wide_min_p_count();
    let mut steps = 0;
    for (shape, seed) in [(0u8, 11u64), (1, 12)] {
        let row = quadratic_flat_row(n, shape == 1, seed);
        // top-p 0.6 cuts before min-p's threshold: the sorted path, not the min-p one.
        for top_p in [0.95f32, 0.6] {
            for (k, tail) in tails.iter().enumerate() {
                let mut chain = Chain::new().with(TopP::new(top_p, 1));
                for s in tail {
                    chain.push(s.clone());
                }
                let chain = chain.with(Dist::new(seed as u32 + k as u32));
                compare_deferred(TokenSampler::new(chain), &row, &[], 6, true).unwrap();
                steps += 6;
            }
        }
    }
    let after = wide_decided();
    assert!(after - before >= steps, "wide path decided {} of {steps} draws", after - before);
    let unsorted = nucleus_sampler::tier_counts::top_p_wide_min_p_count() - unsorted;
    assert!(unsorted >= 12 && unsorted < steps, "{unsorted} of {steps} draws without sorting");
}

/// Rows shaped like a real model's (thousands of logits in llama.cpp's top sort bucket, equal
/// logits): top-p over the whole vocabulary (chain d) takes the narrow path with llama.cpp's
/// exact sum when the bracket is too wide, and mirostat v2 keeps a prefix of thousands of tokens
/// once `mu` has grown (confident steps); both bit for bit with the full path, over many steps.
#[test]
fn real_shaped_rows_match() {
    let _counts = mirostat_counts();
    let n = 262_144;
    let (tp0, miro0) =
        (nucleus_sampler::tier_counts::top_p_tier_counts(), nucleus_sampler::tier_counts::mirostat_tier_counts());
    for seed in 1..4u64 {
        let mut g = Gen((seed * 0x9E37_79B9) | 1);
        let row = real_shaped(n, &mut g);
        for top_p in [0.9f32, 0.95, 0.99] {
            let p = SamplingParams { seed: seed as u32, top_k: 0, top_p, ..Default::default() };
            compare(TokenSampler::new(p.build(n, None).unwrap()), &row, &[5, 6, 7], 4).unwrap();
        }
        let p =
            SamplingParams { seed: seed as u32, mirostat: MirostatMode::V2, mirostat_eta: 1.0, ..Default::default() };
        compare(TokenSampler::new(p.build(n, None).unwrap()), &row, &[], 20).unwrap();
    }
    let (tp1, miro1) =
        (nucleus_sampler::tier_counts::top_p_tier_counts(), nucleus_sampler::tier_counts::mirostat_tier_counts());
    assert!(tp1[0] - tp0[0] >= 9, "top-p nucleus built {} times", tp1[0] - tp0[0]);
    assert!(miro1[0] - miro0[0] >= 40, "mirostat prefix built {} times", miro1[0] - miro0[0]);
}

/// (d) on rows shaped like a real model's, where the narrow top-p path reads the nucleus off
/// the values and takes llama.cpp's sum from the values near the running maximum only: the
/// maximum late in the row (so the values before it are taken relative to smaller running
/// maxima), early, tied with another token (llama.cpp's bucket order is replayed), far above
/// every other value (fewer than 257 values near it), and after a start far below it. Same
/// tokens and candidates as the full path; both the value order and the replay run. NaN and
/// `+inf` give the full path's error.
#[test]
fn top_p_value_path_matches() {
    let _counts = mirostat_counts(); // the top-p counters are process-wide too
    let n = 262_144;
    let before = nucleus_sampler::tier_counts::top_p_tier_counts();
    for seed in 1..4u64 {
        let mut g = Gen((seed * 0x51ED_2701) | 1);
        let base = real_shaped(n, &mut g);
        let imax = (0..n).max_by(|&a, &b| base[a].total_cmp(&base[b])).unwrap();
        let mut late = base.clone();
        late.swap(imax, n - 77);
        let mut early = base.clone();
        early.swap(imax, 3);
        let mut tied = late.clone();
        tied[n / 3] = tied[n - 77];
        let mut peaked = base.clone();
        peaked[imax] += 30.0;
        // The first running maxima more than 87 nats below the row's: the max pass runs first.
        let mut low_start = late.clone();
        low_start[..3000].iter_mut().for_each(|v| *v -= 150.0);
        for row in [&late, &early, &tied, &peaked, &low_start] {
            for top_p in [0.9f32, 0.95, 0.99] {
                for min_keep in [0, 3] {
                    let p = SamplingParams { seed: seed as u32, top_k: 0, top_p, min_keep, ..Default::default() };
                    compare(TokenSampler::new(p.build(n, None).unwrap()), row, &[], 2).unwrap();
                }
            }
        }
    }
    // The one-pass scan reports the first NaN or `+inf` (in a vector group or in the tail),
    // as the full path does.
    let mut g = Gen(99);
    let base = real_shaped(n - 21, &mut g);
    for (at, later) in [(5, 900), (n / 2 + 3, n - 30), (n - 25, n - 22), (n - 23, n - 22)] {
        for bad in [f32::NAN, f32::INFINITY] {
            let mut row = base.clone();
            row[at] = bad;
            row[later] = f32::NAN;
            let p = SamplingParams { seed: 5, top_k: 0, ..Default::default() };
            let mut fast = TokenSampler::new(p.build(row.len(), None).unwrap());
            let mut slow = fast.clone();
            slow.set_fast_path(false);
            let got = fast.sample(&row);
            assert!(got.is_err(), "{at} {bad}");
            assert_eq!(got, slow.sample(&row), "{at} {bad}");
        }
    }
    let after = nucleus_sampler::tier_counts::top_p_tier_counts();
    let (built, replayed) = (after[0] - before[0], after[2] - before[2]);
    assert!(built >= 60, "top-p nucleus built {built} times");
    assert!(replayed >= 30 && built - replayed >= 30, "bucket order replayed {replayed} of {built}");
}

/// mirostat v2 once `mu` has grown past every surprise (confident rows, large `eta`): the kept
/// prefix holds most of the vocabulary, so it is built from values alone and the selected id
/// read off the row — with equal logits everywhere (bf16-rounded rows and a 1/4096 grid), so the
/// selected value is often tied and llama.cpp's sort of its bucket is replayed; `mu` passes 120,
/// where kept terms are subnormal. Same tokens, `mu` stream and (materialised) candidates as the
/// full path at every step.
#[test]
fn mirostat_value_path_matches() {
    let _counts = mirostat_counts();
    let n = 65_536;
    let before = nucleus_sampler::tier_counts::mirostat_tier_counts();
    for seed in 1..5u64 {
        let mut g = Gen((seed * 0x51_7CC1_B727) | 1);
        let mut row = real_shaped(n, &mut g);
        if seed % 2 == 0 {
            for v in row.iter_mut() {
                *v = half::bf16::from_f32(*v).to_f32();
            }
        }
        for (tau, eta, temp) in [(5.0f32, 1.0f32, 1.0f32), (9.0, 1.0, 0.7), (3.0, 0.5, 1.0)] {
            let p = SamplingParams {
                seed: seed as u32,
                mirostat: MirostatMode::V2,
                mirostat_tau: tau,
                mirostat_eta: eta,
                temp,
                ..Default::default()
            };
            compare(TokenSampler::new(p.build(n, None).unwrap()), &row, &[], 40).unwrap();
        }
    }
    let after = nucleus_sampler::tier_counts::mirostat_tier_counts();
    assert!(after[2] - before[2] >= 100, "value path took {} steps", after[2] - before[2]);
    assert_eq!(after[1], before[1], "no step was left to the full path");
}

/// A row like a real model's: one token 14 nats above a wide flat tail, dozens 6 nats above
/// it. The top token usually wins, so `mu` grows until mirostat v2 keeps tens of thousands of
/// tail tokens and the draw is decided from mass bins; then a tail token wins and `mu` drops.
/// `grid` > 0 rounds the logits to multiples of `1 / grid` (many equal values).
fn flat_row(n: usize, grid: f32, g: &mut Gen) -> Vec<f32> {
    let top = (g.unif() * n as f64) as usize % n;
    (0..n)
        .map(|i| {
            let z = 1.6 * g.normal() + if i % 911 == 3 { 6.0 } else { 0.0 } + if i == top { 14.0 } else { 0.0 };
            if grid > 0.0 {
                (z * grid).round() / grid
            } else {
                z
            }
        })
        .collect()
}

/// Runs mirostat v2 (f's parameters, or as given) for `steps` steps on `row`, bit for bit
/// against the full path; returns the change of the mirostat tier counters.
fn bounded_run(row: &[f32], seed: u32, tau: f32, eta: f32, temp: f32, steps: usize) -> [u64; 7] {
    let before = nucleus_sampler::tier_counts::mirostat_tier_counts();
    let p = SamplingParams {
        seed,
        mirostat: MirostatMode::V2,
        mirostat_tau: tau,
        mirostat_eta: eta,
        temp,
        ..Default::default()
    };
    compare(TokenSampler::new(p.build(row.len(), None).unwrap()), row, &[], steps).unwrap();
    let after = nucleus_sampler::tier_counts::mirostat_tier_counts();
    std::array::from_fn(|i| after[i] - before[i])
}

/// mirostat v2 on flat rows (f: tau 5, eta 0.1, temperature 0.8, and faster-moving `mu`):
/// the kept prefix holds most of the row and the draw is decided from mass bins; with equal
/// logits (a grid, bf16), many steps so `mu` moves through small and large kept sets. Same
/// tokens, `mu` stream and materialised candidates as the full path at every step.
#[test]
fn mirostat_bounded_draw_matches() {
    let _counts = mirostat_counts();
    let mut total = [0u64; 7];
    for seed in 1..7u64 {
        let mut g = Gen((seed * 0x2545_F491_4F6C_DD1D) | 1);
        let n = if seed % 3 == 0 { 262_144 } else { 40_000 + 7_919 * seed as usize };
        let grid = [0.0f32, 64.0, 4096.0][seed as usize % 3];
        let mut row = flat_row(n, grid, &mut g);
        if seed == 4 {
            for v in row.iter_mut() {
                *v = half::bf16::from_f32(*v).to_f32();
            }
        }
        for (tau, eta, temp) in [(5.0f32, 0.1f32, 0.8f32), (9.0, 1.0, 1.0), (14.0, 0.5, 0.6)] {
            let d = bounded_run(&row, seed as u32, tau, eta, temp, 30);
            for (t, x) in total.iter_mut().zip(d) {
                *t += x;
            }
        }
    }
    eprintln!("mirostat tiers (built, full, values, bins, literal): {total:?}");
    assert!(total[3] >= 200, "mass bins decided {} steps ({total:?})", total[3]);
    assert_eq!(total[1], 0, "no step was left to the full path");
}

/// A confident row like a real model's: one token far above the rest, a few dozen heads,
/// a wide tail more than 16.7 below the top after temperature (outside the terms of `s1`),
/// a sprinkling of tokens so far down that their terms are subnormal, and `-inf` entries.
/// With `crowd`, 60 heads within 0.02 of each other and 1 under the top share the draw (so
/// the crossing bin holds many tokens).
fn confident_tail_row(n: usize, crowd: bool, g: &mut Gen) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n)
        .map(|i| match i % 5003 {
            11 => -48.0 - 4.0 * g.unif() as f32,
            29 => f32::NEG_INFINITY,
            _ => 2.0 * g.normal(),
        })
        .collect();
    for h in 0..60 {
        let i = (g.unif() * n as f64) as usize % n;
        v[i] = if crowd {
            26.0 + 0.02 * g.unif() as f32
        } else {
            16.0 + 8.0 * g.unif() as f32 - if h % 7 == 0 { 0.0 } else { 2.0 }
        };
    }
    let top = (g.unif() * n as f64) as usize % n;
    v[top] = 27.0 + g.unif() as f32;
    v
}

/// mirostat v2 on confident rows once `mu` has grown so that the whole tail is kept (and on,
/// to `mu` where the smallest kept term is subnormal): the draw is decided among the top
/// tokens, with the tail only counted and its mass bracketed ([`top` tier]); draws that land
/// in the tail or near a boundary bin the whole kept set. Same tokens, `mu` stream and
/// materialised candidates as the full path at every step.
#[test]
fn mirostat_top_tier_matches() {
    let _counts = mirostat_counts();
    let mut total = [0u64; 7];
    for seed in 1..5u64 {
        let mut g = Gen((seed * 0x2545_F491_4F6C_DD1D) | 1);
        let n = if seed % 2 == 0 { 262_144 } else { 70_000 + 3_331 * seed as usize };
        let row = confident_tail_row(n, seed > 2, &mut g);
        for (tau, eta, temp) in [(5.0f32, 0.5f32, 0.8f32), (5.0, 2.0, 1.0)] {
            let d = bounded_run(&row, seed as u32, tau, eta, temp, 70);
            for (t, x) in total.iter_mut().zip(d) {
                *t += x;
            }
        }
    }
    eprintln!("mirostat tiers (built, full, values, bins, literal, top, top by count): {total:?}");
    assert!(total[5] >= 200, "the top tokens decided {} draws ({total:?})", total[5]);
    assert!(total[6] >= 100, "the tail's count alone decided {} draws ({total:?})", total[6]);
    assert!(total[5] - total[6] >= 5, "the tail's terms decided {} draws ({total:?})", total[5] - total[6]);
    assert_eq!(total[1], 0, "no step was left to the full path");
}

/// A confident row whose wide tail sits just under the gather threshold at temperature `temp`
/// (16.75 to 17.5 below the top after it): once kept, the tail holds about 1% of the mass, so
/// some draws land in it and the tail's bracket decides near the top tokens' last boundary.
fn shallow_tail_row(n: usize, temp: f32, g: &mut Gen) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n).map(|_| temp * (-16.75 - 0.75 * g.unif() as f32)).collect();
    for h in 0..40 {
        let i = (g.unif() * n as f64) as usize % n;
        v[i] = temp * (-2.0 - 10.0 * g.unif() as f32 - if h % 5 == 0 { 0.0 } else { 3.0 });
    }
    let top = (g.unif() * n as f64) as usize % n;
    v[top] = 0.0;
    v
}

/// mirostat v2's top tier where the tail's mass matters (about 1% of the draw): draws in the
/// tail or near the top tokens' last boundary must not be decided from a wrong bracket (the
/// tail's count alone, or its terms' bounds). Same tokens, `mu` stream and materialised
/// candidates as the full path at every step.
#[test]
fn mirostat_top_tier_shallow_tail_matches() {
    let _counts = mirostat_counts();
    let mut total = [0u64; 7];
    for seed in 1..4u64 {
        let mut g = Gen((seed * 0x9E37_79B9_7F4A_7C15) | 1);
        for (tau, eta, temp) in [(5.0f32, 2.0f32, 0.8f32), (5.0, 1.0, 1.0)] {
            let row = shallow_tail_row(262_144, temp, &mut g);
            let d = bounded_run(&row, seed as u32, tau, eta, temp, 80);
            for (t, x) in total.iter_mut().zip(d) {
                *t += x;
            }
        }
    }
    eprintln!("mirostat tiers (built, full, values, bins, literal, top, top by count): {total:?}");
    assert!(total[6] >= 100, "the tail's count alone decided {} draws ({total:?})", total[6]);
    assert!(total[3] - total[5] >= 3, "{} draws binned the whole kept set ({total:?})", total[3] - total[5]);
    assert_eq!(total[1], 0, "no step was left to the full path");
}

/// The draw from mass bins with its error margin widened (2^20: about a tail token's mass, so
/// the walk decides token by token near boundaries; 2^34: a sizeable share of all the mass):
/// draws within the margin take the literal replay with the `u` already drawn, the bins decide
/// the others. Both must match the full path bit for bit.
#[test]
fn mirostat_bounded_draw_near_boundaries_matches() {
    let _counts = mirostat_counts();
    let mut total = [0u64; 7];
    /// Restores the proven margin even when a comparison panics.
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            nucleus_sampler::tier_counts::mirostat_margin_scale(1);
        }
    }
    let _restore = Restore;
    for seed in 1..7u64 {
        nucleus_sampler::tier_counts::mirostat_margin_scale(if seed % 2 == 0 { 1 << 20 } else { 1 << 34 });
        let mut g = Gen((seed * 0x9E37_79B9_7F4A_7C15) | 1);
        let grid = if seed % 3 == 0 { 512.0 } else { 0.0 };
        let row = flat_row(65_536, grid, &mut g);
        for (tau, eta, temp) in [(9.0f32, 1.0f32, 1.0f32), (12.0, 0.5, 0.8)] {
            let d = bounded_run(&row, seed as u32, tau, eta, temp, 24);
            for (t, x) in total.iter_mut().zip(d) {
                *t += x;
            }
        }
    }
    eprintln!("mirostat tiers (built, full, values, bins, literal): {total:?}");
    assert!(total[4] >= 20, "literal replay took {} steps ({total:?})", total[4]);
    assert!(total[3] - total[4] >= 20, "bins decided {} steps ({total:?})", total[3] - total[4]);
    assert_eq!(total[1], 0, "no step was left to the full path");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(200), ..ProptestConfig::default() })]

    /// Logits far outside a model's range (found by fuzzing): llama.cpp's bucket index
    /// truncates `6.4 v + 64` to an int, so a value past about 3.4e8 lands in bucket 0 and the
    /// bucket order stops following the values. Every fast path must still give the full
    /// path's answer, for every chain with one, on rows scaled up or carrying a few huge values.
    #[test]
    fn extreme_magnitudes_match(row in big_row_strategy(), scale in prop::sample::select(vec![1.0f32, 1e3, 1e8, 1e9, 1e20, 1e37]),
                                spikes in prop::collection::vec((any::<u32>(), prop::sample::select(vec![3.0e8f32, 1e9, -1e9, 1e30, 1.7e38, -3.0e38])), 0..4),
                                chain in 0u8..6, seed in any::<u32>(), temp in prop::sample::select(vec![0.5f32, 1.0, 1.7])) {
        let _counts = mirostat_counts();
        let n = row.len().min(40_000);
        let mut row: Vec<f32> = row[..n].iter().map(|&v| v * scale).collect();
        for &(at, v) in &spikes {
            row[at as usize % n] = v;
        }
        let base = SamplingParams { seed, temp, ..Default::default() };
        let p = match chain {
            0 => base,
            1 => SamplingParams { top_k: 0, top_p: 0.9, min_p: 0.05, ..base },
            2 => SamplingParams { mirostat: MirostatMode::V2, mirostat_tau: 5.0, mirostat_eta: 0.5, ..base },
            3 => SamplingParams {
                top_n_sigma: 1.0,
                samplers: vec![SamplerType::TopNSigma, SamplerType::Temperature],
                ..base
            },
            4 => SamplingParams { top_k: 0, top_p: 1.0, min_p: 0.0, temp: 1.0, ..base },
            _ => SamplingParams { top_k: 200, top_p: 0.95, ..base },
        };
        let s = TokenSampler::new(p.build(n, None).unwrap());
        compare(s, &row, &[], 3)?;
    }
}

/// A row like a confident real model's, for chain (b): a long tail of `2.5 N(0, 1)` logits,
/// `heads` tokens `lead` nats or so above it spread over the row (the blocks holding them carry
/// most of the coarse bounds' width), plus `-inf` entries.
fn confident_row(n: usize, heads: usize, lead: f32, g: &mut Gen) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n).map(|_| 2.5 * g.normal()).collect();
    for h in 0..heads {
        let i = (g.unif() * n as f64) as usize % n;
        v[i] = lead - 1.5 * h as f32 * g.unif() as f32;
    }
    for _ in 0..8 {
        let i = (g.unif() * n as f64) as usize % n;
        v[i] = f32::NEG_INFINITY;
    }
    v
}

fn dist_params(seed: u32) -> SamplingParams {
    SamplingParams { seed, temp: 1.0, top_k: 0, top_p: 1.0, min_p: 0.0, ..Default::default() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(64), ..ProptestConfig::default() })]

    /// (b) on confident rows, where the coarse bounds often leave the draw open and the staged
    /// near refinement of the widest blocks (`fast::dist::refine_widest`) decides it: same
    /// token and random stream as the full path over many steps, with and without sparse
    /// samplers first.
    #[test]
    fn dist_staged_refinement_matches(n in 65_536usize..300_000, heads in 1usize..24, lead in 12.0f32..26.0,
                                      seed in any::<u64>(), pen in prop::bool::ANY) {
        let mut g = Gen(seed | 1);
        let row = confident_row(n, heads, lead, &mut g);
        let mut p = dist_params(seed as u32);
        if pen {
            p.penalty_repeat = 1.3;
            p.logit_bias = vec![(n as i32 - 1, 4.0), (3, f32::NEG_INFINITY)];
        }
        let s = TokenSampler::new(p.build(n, None).unwrap());
        compare_deferred(s, &row, &[1, 2, 3, 4000], 24, true)?;
    }
}

/// The staged refinement of chain (b) does decide draws on confident rows (so the proptest
/// above exercises it), always with the full path's token.
#[test]
fn dist_staged_refinement_decides() {
    let n = 262_144;
    let before = nucleus_sampler::tier_counts::dist_partial_counts();
    for seed in 1..7u64 {
        let mut g = Gen((seed * 0x9E37_79B9) | 1);
        let row = confident_row(n, 2 + 3 * seed as usize, 14.0 + 2.0 * seed as f32, &mut g);
        compare_deferred(TokenSampler::new(dist_params(seed as u32).build(n, None).unwrap()), &row, &[], 40, true)
            .unwrap();
    }
    let after = nucleus_sampler::tier_counts::dist_partial_counts();
    eprintln!("staged refinement: {:?} -> {:?}", before, after);
    assert!(after[0] - before[0] >= 20, "staged refinement decided {} draws", after[0] - before[0]);
}
