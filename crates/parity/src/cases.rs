//! The randomized case generator: a [`Case`] is a vocabulary size, a recipe for the logits of
//! every step, a sampler chain, a token history and a number of steps.
//!
//! Everything is derived from `(harness_seed, index)` through a ChaCha8 stream, so a failing
//! case is reproduced from those two numbers alone (see [`generate`], and
//! `harness::case_for`, which moves some cases onto a knife edge).
//!
//! The inputs stay inside what llama.cpp is defined for: every row keeps at least one finite
//! logit (token `safe`, never masked and never given a `-inf` bias), no logit is `+inf` or
//! NaN, repetition penalties are positive and DRY penalties stay finite. Outside that,
//! llama.cpp's sorts can reach undefined behaviour. Chains may still drive llama.cpp itself
//! into NaNs (XTC with threshold 0 keeping only a masked token, a dynamic temperature that
//! underflows): those steps are compared like any other, since the result is deterministic.

use nucleus_sampler::StepSpec;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::spec::SpecExt;

/// One differential test case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// Vocabulary size (number of logits per row).
    pub vocab: usize,
    /// The logits of each step.
    pub rows: Rows,
    /// The chain, in order (ends with a selector).
    pub chain: Vec<StepSpec>,
    /// Tokens accepted into both chains before the first step (like a prompt).
    pub history: Vec<i32>,
    /// Number of apply/accept steps.
    pub steps: usize,
    /// How each step's candidate array is laid out (all ids in id order, or a permutation).
    pub layout: Layout,
    /// Reset both chains (`llama_sampler_reset`) just before this step, if any.
    pub reset_before: Option<usize>,
    /// Replace both chains by clones (`llama_sampler_clone` / `clone_box`) just before this
    /// step (after any reset), if any.
    pub clone_before: Option<usize>,
    /// Logit overrides `(step, id, logit)` applied on top of the rows (see
    /// `harness::knife_edge`, which puts one logit exactly where llama.cpp's choice flips).
    pub edits: Vec<(usize, i32, f32)>,
}

/// The candidate array given to the chain at each step.
#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    /// One entry per id, in id order (what `llama_sampler_sample` builds from a logits row).
    Identity,
    /// The entries in an order drawn from `seed`, keeping each id with probability `keep`
    /// (the `safe` id is always kept): like candidates handed over by a backend sampler.
    Shuffled { seed: u64, keep: f32 },
    /// Exactly these ids, in this order (a materialized `Shuffled`).
    Explicit(Vec<i32>),
}

/// Where the logits of each step come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Rows {
    /// Generated from a shape and a seed; later steps change as `change` says.
    Gen { shape: Shape, seed: u64, change: StepChange },
    /// Explicit rows; step `i` uses `rows[min(i, len - 1)]` (used by regressions and shrinking).
    Explicit(Vec<Vec<f32>>),
}

/// How the logits of step `i > 0` relate to step 0's.
#[derive(Clone, Debug, PartialEq)]
pub enum StepChange {
    /// The same row every step.
    Same,
    /// Step 0's row plus independent normal noise of this deviation (then re-quantized).
    Noise { sigma: f32 },
    /// A fresh draw from the same shape.
    Fresh,
}

/// A logits distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// The base distribution.
    pub base: Base,
    /// Rounding applied to every value (creates ties).
    pub quantize: Quantize,
    /// Fraction of entries set to `-inf`.
    pub neg_inf_frac: f32,
    /// A token that is always finite.
    pub safe: usize,
}

/// Base distributions of logits.
#[derive(Clone, Debug, PartialEq)]
pub enum Base {
    /// Normal(mean, sigma).
    Normal { mean: f32, sigma: f32 },
    /// A normal bulk, an exponential right tail on a fraction `tail` of tokens, and `spikes`
    /// tokens lifted `height` above the bulk: the shape of a confident LLM step.
    Spiky { sigma: f32, tail: f32, spikes: u32, height: f32 },
    /// Gumbel(0, scale).
    Gumbel { scale: f32 },
    /// Every logit equal.
    Constant { value: f32 },
    /// `start + step * id`: already sorted (ascending or descending) in id order.
    Ramp { start: f32, step: f32 },
    /// Uniform small integers in `-max..=max`: massive ties.
    Integers { max: i32 },
}

/// Rounding applied to generated logits.
#[derive(Clone, Debug, PartialEq)]
pub enum Quantize {
    /// Keep f32 values.
    None,
    /// Round to bfloat16 (as logits from a bf16 model), which creates many ties.
    Bf16,
    /// Round to a multiple of this step.
    Step(f32),
}

/// Rounds to the nearest bfloat16 (ties to even), returned as f32.
pub fn round_bf16(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let b = x.to_bits();
    let r = b.wrapping_add(0x7FFF + ((b >> 16) & 1)) & 0xFFFF_0000;
    f32::from_bits(r)
}

/// A standard normal draw (Box-Muller; one draw per call).
fn normal(rng: &mut impl Rng) -> f32 {
    let u1: f64 = rng.random::<f64>().max(1e-300);
    let u2: f64 = rng.random::<f64>();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

fn mix(a: u64, b: u64) -> u64 {
    // splitmix64 finalizer over a combination, for derived seeds.
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Shape {
    fn quant(&self, x: f32) -> f32 {
        match self.quantize {
            Quantize::None => x,
            Quantize::Bf16 => round_bf16(x),
            Quantize::Step(s) => (x / s).round() * s,
        }
    }

    /// Draws a row of `n` logits from `seed`.
    pub fn draw(&self, n: usize, seed: u64) -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut v: Vec<f32> = match self.base {
            Base::Normal { mean, sigma } => (0..n).map(|_| mean + sigma * normal(&mut rng)).collect(),
            Base::Spiky { sigma, tail, spikes, height } => {
                let mut v: Vec<f32> = (0..n)
                    .map(|_| {
                        let mut x = sigma * normal(&mut rng);
                        if rng.random::<f32>() < tail {
                            let e = -(rng.random::<f32>().max(1e-12)).ln();
                            x += 2.0 * sigma * e;
                        }
                        x
                    })
                    .collect();
                for _ in 0..spikes.min(n as u32) {
                    let i = rng.random_range(0..n);
                    v[i] = height + sigma * normal(&mut rng);
                }
                v
            }
            Base::Gumbel { scale } => (0..n)
                .map(|_| {
                    let u: f64 = rng.random::<f64>().clamp(1e-300, 1.0 - 1e-16);
                    (-(-u.ln()).ln()) as f32 * scale
                })
                .collect(),
            Base::Constant { value } => vec![value; n],
            Base::Ramp { start, step } => (0..n).map(|i| start + step * i as f32).collect(),
            Base::Integers { max } => (0..n).map(|_| rng.random_range(-max..=max) as f32).collect(),
        };
        for x in v.iter_mut() {
            *x = self.quant(*x);
        }
        self.mask(&mut v, &mut rng);
        v
    }

    fn mask(&self, v: &mut [f32], rng: &mut impl Rng) {
        if self.neg_inf_frac > 0.0 {
            for (i, x) in v.iter_mut().enumerate() {
                if i != self.safe && rng.random::<f32>() < self.neg_inf_frac {
                    *x = f32::NEG_INFINITY;
                }
            }
        }
    }
}

impl Case {
    /// The logits of step `step`.
    pub fn row(&self, step: usize) -> Vec<f32> {
        let mut r = self.base_row(step);
        for &(s, id, logit) in &self.edits {
            if s == step && id >= 0 && (id as usize) < r.len() {
                r[id as usize] = logit;
            }
        }
        r
    }

    fn base_row(&self, step: usize) -> Vec<f32> {
        match &self.rows {
            Rows::Explicit(rows) => rows[step.min(rows.len() - 1)].clone(),
            Rows::Gen { shape, seed, change } => match change {
                _ if step == 0 => shape.draw(self.vocab, *seed),
                StepChange::Same => shape.draw(self.vocab, *seed),
                StepChange::Fresh => shape.draw(self.vocab, mix(*seed, step as u64)),
                StepChange::Noise { sigma } => {
                    let mut v = shape.draw(self.vocab, *seed);
                    let mut rng = ChaCha8Rng::seed_from_u64(mix(*seed, step as u64));
                    for x in v.iter_mut() {
                        if x.is_finite() {
                            *x = shape.quant(*x + sigma * normal(&mut rng));
                        }
                    }
                    v
                }
            },
        }
    }

    /// The candidate entries `(id, logit)` of step `step`, in array order.
    pub fn entries(&self, step: usize) -> Vec<(i32, f32)> {
        self.entries_of(&self.row(step))
    }

    /// The candidate entries `(id, logit)` built from `row` (step `i`'s logits) per the layout.
    pub fn entries_of(&self, row: &[f32]) -> Vec<(i32, f32)> {
        match self.layout {
            Layout::Identity => row.iter().enumerate().map(|(i, &x)| (i as i32, x)).collect(),
            Layout::Shuffled { seed, keep } => {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let safe = match &self.rows {
                    Rows::Gen { shape, .. } => Some(shape.safe),
                    Rows::Explicit(_) => None,
                };
                let mut ids: Vec<usize> =
                    (0..row.len()).filter(|&i| Some(i) == safe || rng.random::<f32>() < keep).collect();
                if ids.is_empty() && !row.is_empty() {
                    ids.push(0);
                }
                ids.shuffle(&mut rng);
                ids.into_iter().map(|i| (i as i32, row[i])).collect()
            }
            Layout::Explicit(ref ids) => ids.iter().map(|&i| (i, row[i as usize])).collect(),
        }
    }

    /// The same case with every step's logits written out (for shrinking and regressions).
    pub fn materialize(&self) -> Case {
        let rows = (0..self.steps.max(1)).map(|s| self.row(s)).collect();
        let layout = match self.layout {
            Layout::Shuffled { .. } => Layout::Explicit(self.entries(0).iter().map(|e| e.0).collect()),
            ref l => l.clone(),
        };
        Case { rows: Rows::Explicit(rows), layout, edits: Vec::new(), ..self.clone() }
    }

    /// A one-line summary: vocabulary, steps, history length and chain kinds.
    pub fn summary(&self) -> String {
        let kinds: Vec<&str> = self.chain.iter().map(|s| s.kind()).collect();
        let mut s = format!(
            "V={} steps={} history={} chain=[{}]",
            self.vocab,
            self.steps,
            self.history.len(),
            kinds.join(", ")
        );
        match &self.layout {
            Layout::Identity => {}
            Layout::Shuffled { keep, .. } => s += &format!(" layout=shuffled(keep {keep})"),
            Layout::Explicit(ids) => s += &format!(" layout=explicit({} ids)", ids.len()),
        }
        if let Some(r) = self.reset_before {
            s += &format!(" reset_before={r}");
        }
        if let Some(r) = self.clone_before {
            s += &format!(" clone_before={r}");
        }
        if !self.edits.is_empty() {
            s += &format!(" edits={:?}", self.edits);
        }
        s
    }
}

/// Case generator; one instance per case, seeded from `(harness_seed, index)`.
struct Gen {
    rng: ChaCha8Rng,
    vocab: usize,
    /// Token ids that matter: the best few of row 0 plus some random ones.
    hot: Vec<i32>,
    /// The token that always stays finite.
    safe: usize,
    /// The seed shared by the random samplers (like common's `params.seed`), when shared.
    shared_seed: Option<u32>,
    /// The min_keep shared by the filters (like common's `params.min_keep`), when shared.
    shared_min_keep: Option<usize>,
    history_len: usize,
    steps: usize,
    /// Step 0's candidates as (logit, p), best first, `p` from an f32 softmax like
    /// llama.cpp's (max, then `expf`, summed in id order): the source of boundary values.
    top: Vec<(f32, f32)>,
    /// Step 0's logits.
    row0: Vec<f32>,
}

/// The best `n` entries of `row` as `(logit, p)`, best first, with `p` computed like
/// llama.cpp's softmax (f32 `expf(l - max)`, summed in id order).
fn top_probs(row: &[f32], n: usize) -> Vec<(f32, f32)> {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for &l in row {
        sum += (l - max).exp();
    }
    let mut idx: Vec<usize> = (0..row.len()).collect();
    let n = n.min(row.len());
    if n > 0 && n < row.len() {
        idx.select_nth_unstable_by(n - 1, |&a, &b| row[b].total_cmp(&row[a]));
        idx.truncate(n);
    }
    idx.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
    idx.iter().map(|&i| (row[i], (row[i] - max).exp() / sum)).collect()
}

/// `x` moved by `ulps` units in the last place (towards +inf for positive `ulps`).
fn nudge(x: f32, ulps: i32) -> f32 {
    if !x.is_finite() || ulps == 0 {
        return x;
    }
    let mut y = x;
    for _ in 0..ulps.unsigned_abs() {
        y = if (ulps > 0) == (y >= 0.0) {
            f32::from_bits(y.to_bits() + 1)
        } else if y == 0.0 {
            -f32::from_bits(1)
        } else {
            f32::from_bits(y.to_bits() - 1)
        };
    }
    y
}

impl Gen {
    /// Whether this parameter should sit on a decision boundary of step 0's logits.
    fn edge(&mut self) -> bool {
        !self.top.is_empty() && self.p(0.15)
    }

    /// A boundary value: `v` exactly, or a few ulps to either side.
    fn near(&mut self, v: f32) -> f32 {
        let u = self.pick(&[0, 0, 0, 1, -1, 2, -2]);
        nudge(v, u)
    }

    /// The index of a random entry among the best few (for boundary values).
    fn top_index(&mut self) -> usize {
        let n = self.top.len();
        if self.p(0.5) {
            self.rng.random_range(0..n.min(4))
        } else {
            self.rng.random_range(0..n)
        }
    }

    /// The f32 running sum of the best `j + 1` probabilities (a top-p boundary).
    fn cum_p(&mut self) -> f32 {
        let j = self.top_index();
        let mut c = 0.0f32;
        for &(_, p) in &self.top[..=j] {
            c += p;
        }
        c
    }
    fn p(&mut self, prob: f64) -> bool {
        self.rng.random_bool(prob)
    }

    fn uf(&mut self, lo: f32, hi: f32) -> f32 {
        self.rng.random_range(lo..=hi)
    }

    fn seed(&mut self) -> u32 {
        if let Some(s) = self.shared_seed {
            return s;
        }
        self.fresh_seed()
    }

    fn fresh_seed(&mut self) -> u32 {
        // Never LLAMA_DEFAULT_SEED (0xFFFFFFFF): that asks for a random seed on both sides.
        match self.rng.random_range(0..10) {
            0 => 0,
            1 => self.rng.random_range(1..100),
            2 => 0xFFFF_FFFE,
            _ => self.rng.random_range(0..0xFFFF_FFFF),
        }
    }

    fn min_keep(&mut self) -> usize {
        if let Some(m) = self.shared_min_keep {
            return m;
        }
        self.fresh_min_keep()
    }

    fn fresh_min_keep(&mut self) -> usize {
        match self.rng.random_range(0..10) {
            0..=3 => 0,
            4..=5 => 1,
            6 => 2,
            7 => self.rng.random_range(3..=20),
            8 => self.vocab,
            _ => self.rng.random_range(0..=self.vocab + 2),
        }
    }

    fn token(&mut self) -> i32 {
        if !self.hot.is_empty() && self.p(0.7) {
            let i = self.rng.random_range(0..self.hot.len());
            self.hot[i]
        } else {
            self.rng.random_range(0..self.vocab) as i32
        }
    }

    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())].clone()
    }

    fn shape(&mut self) -> Shape {
        let base = match self.rng.random_range(0..20) {
            0..=4 => {
                let sigma = self.pick(&[0.5f32, 1.0, 2.0, 3.0, 10.0, 30.0]);
                let mean = if self.p(0.5) { 0.0 } else { self.uf(-30.0, 30.0) };
                Base::Normal { mean, sigma }
            }
            5..=10 => Base::Spiky {
                sigma: self.pick(&[0.5f32, 1.0, 2.0, 3.0]),
                tail: self.pick(&[0.0f32, 0.01, 0.05, 0.2]),
                spikes: self.pick(&[0u32, 1, 1, 2, 3, 5, 20]),
                height: self.pick(&[5.0f32, 10.0, 15.0, 25.0, 40.0]),
            },
            11..=13 => Base::Gumbel { scale: self.pick(&[0.5f32, 1.0, 2.0, 5.0]) },
            14 => Base::Constant { value: self.pick(&[0.0f32, 1.0, -3.5, 17.25]) },
            15 => {
                let step = self.pick(&[0.001f32, 0.01, 0.1, -0.001, -0.01, -0.1]);
                Base::Ramp { start: self.uf(-5.0, 5.0), step: step * 1000.0 / (self.vocab as f32).max(1000.0) }
            }
            _ => Base::Integers { max: self.pick(&[1i32, 2, 3, 5, 10]) },
        };
        let quantize = match self.rng.random_range(0..10) {
            0..=4 => Quantize::None,
            5..=7 => Quantize::Bf16,
            _ => Quantize::Step(self.pick(&[0.125f32, 0.5, 1.0])),
        };
        let neg_inf_frac = match self.rng.random_range(0..10) {
            0..=6 => 0.0,
            7 => 0.001,
            8 => 0.1,
            _ => self.pick(&[0.5f32, 0.9, 0.999]),
        };
        Shape { base, quantize, neg_inf_frac, safe: self.safe }
    }

    // ---- one sampler each; weights favour realistic values, with "off" and edge values ----

    fn top_k(&mut self) -> StepSpec {
        let v = self.vocab as i32;
        let k = match self.rng.random_range(0..12) {
            0 => 0,
            1 => -1,
            2 => 1,
            3 => 2,
            4 => self.rng.random_range(3..=10),
            5 | 6 => 40,
            7 => self.rng.random_range(50..=200),
            8 => v,
            9 => v + 1,
            10 => self.rng.random_range(1..=v.max(1)),
            _ => self.rng.random_range(129..=5000),
        };
        StepSpec::TopK { k }
    }

    fn top_p(&mut self) -> StepSpec {
        if self.edge() {
            let c = self.cum_p();
            let p = self.near(c);
            return StepSpec::TopP { p, min_keep: self.min_keep() };
        }
        let p = match self.rng.random_range(0..12) {
            0 => 1.0,
            1 => 1.5,
            2 => 0.0,
            3 | 4 => 0.95,
            5 => 0.9,
            6 => 0.999_999,
            7 => 1e-6,
            _ => self.uf(0.05, 0.999),
        };
        StepSpec::TopP { p, min_keep: self.min_keep() }
    }

    fn min_p(&mut self) -> StepSpec {
        if self.edge() {
            // min-p keeps `logit >= max + logf(p)`: aim `logf(p)` at a logit gap.
            let j = self.top_index();
            let gap = self.top[j].0 - self.top[0].0;
            let p = self.near(gap.exp());
            return StepSpec::MinP { p, min_keep: self.min_keep() };
        }
        let p = match self.rng.random_range(0..12) {
            0 => 0.0,
            1 => -0.1,
            2 | 3 => 0.05,
            4 => 0.1,
            5 => 1.0,
            6 => self.uf(0.5, 1.0),
            7 => 1e-6,
            _ => self.uf(0.001, 0.5),
        };
        StepSpec::MinP { p, min_keep: self.min_keep() }
    }

    fn typical(&mut self) -> StepSpec {
        if self.edge() {
            let c = self.cum_p();
            let p = self.near(c);
            return StepSpec::Typical { p, min_keep: self.min_keep() };
        }
        let p = match self.rng.random_range(0..10) {
            0 => 1.0,
            1 => 0.0,
            2 | 3 => 0.95,
            4 => 0.5,
            _ => self.uf(0.05, 0.999),
        };
        StepSpec::Typical { p, min_keep: self.min_keep() }
    }

    fn temp_value(&mut self) -> f32 {
        match self.rng.random_range(0..12) {
            0 | 1 => 1.0,
            2 => 0.0,
            3 => -0.5,
            4 | 5 => 0.8,
            6 => 0.01,
            _ => self.uf(0.05, 2.5),
        }
    }

    fn temp(&mut self) -> StepSpec {
        StepSpec::Temp { t: self.temp_value() }
    }

    fn temp_ext(&mut self) -> StepSpec {
        let t = self.temp_value();
        let delta = match self.rng.random_range(0..10) {
            0..=4 => 0.0,
            5 => -0.1,
            6 => t.abs(),
            _ => self.uf(0.05, 1.5),
        };
        let exponent = match self.rng.random_range(0..6) {
            0..=2 => 1.0,
            3 => 0.0,
            _ => self.uf(0.25, 3.0),
        };
        StepSpec::TempExt { t, delta, exponent }
    }

    fn xtc(&mut self) -> StepSpec {
        let probability = match self.rng.random_range(0..10) {
            0 => 0.0,
            1 | 2 => 0.5,
            3 | 4 => 1.0,
            _ => self.uf(0.01, 1.0),
        };
        let threshold = if self.edge() {
            let j = self.top_index();
            let p = self.top[j].1;
            self.near(p)
        } else {
            match self.rng.random_range(0..10) {
                0..=2 => 0.1,
                3 => 0.6,
                4 => 0.5,
                5 => 0.0,
                _ => self.uf(0.001, 0.5),
            }
        };
        StepSpec::Xtc { probability, threshold, min_keep: self.min_keep(), seed: self.seed() }
    }

    fn top_n_sigma(&mut self) -> StepSpec {
        if self.edge() && self.top.len() > 1 {
            // The mask is `logit < max - n * std`: aim `n * std` at a logit gap.
            let j = self.rng.random_range(1..self.top.len());
            let fin: Vec<f32> = self.row0.iter().copied().filter(|x| x.is_finite()).collect();
            let mean = fin.iter().sum::<f32>() / fin.len() as f32;
            let var = fin.iter().map(|x| ((x - mean) as f64).powi(2)).sum::<f64>() as f32 / fin.len() as f32;
            let std = var.sqrt();
            if std > 0.0 {
                let n = (self.top[0].0 - self.top[j].0) / std;
                if n > 0.0 && n.is_finite() {
                    let n = self.near(n);
                    return StepSpec::TopNSigma { n };
                }
            }
        }
        let n = match self.rng.random_range(0..8) {
            0 => -1.0,
            1 => 0.0,
            2 | 3 => 1.0,
            4 => 0.001,
            _ => self.uf(0.1, 4.0),
        };
        StepSpec::TopNSigma { n }
    }

    fn penalties(&mut self) -> StepSpec {
        let last_n = match self.rng.random_range(0..10) {
            0 => 0,
            1 => -1,
            2..=4 => 64,
            _ => self.rng.random_range(1..=128),
        };
        let repeat = match self.rng.random_range(0..6) {
            0 | 1 => 1.0,
            2 => 1.1,
            _ => self.uf(0.5, 2.0),
        };
        let freq = if self.p(0.5) { 0.0 } else { self.uf(-0.5, 1.0) };
        let present = if self.p(0.5) { 0.0 } else { self.uf(-0.5, 1.0) };
        StepSpec::Penalties { n_vocab: self.vocab, last_n, repeat, freq, present }
    }

    fn dry(&mut self) -> StepSpec {
        let multiplier = match self.rng.random_range(0..8) {
            0 => 0.0,
            1..=3 => 0.8,
            _ => self.uf(0.1, 3.0),
        };
        let mut base = match self.rng.random_range(0..12) {
            0 => 0.9,
            1 => 1.0,
            2..=5 => 1.75,
            6 => 8.0,
            _ => self.uf(1.0, 3.0),
        };
        let allowed_length = match self.rng.random_range(0..6) {
            0..=2 => 2,
            _ => self.rng.random_range(0..=5),
        };
        let last_n = match self.rng.random_range(0..10) {
            0 => -1,
            1 => 0,
            2..=4 => 64,
            _ => self.rng.random_range(1..=256),
        };
        let n_breakers = self.rng.random_range(0..=4);
        let breakers: Vec<Vec<i32>> = (0..n_breakers)
            .map(|_| {
                let len = if self.p(0.6) { 1 } else { self.rng.random_range(2..=4) };
                (0..len).map(|_| self.token()).collect()
            })
            .collect();
        // Keep the largest possible penalty finite (llama.cpp clamps the exponent to about
        // log(FLT_MAX) / log(base), but `multiplier * base^exp` can still overflow; a `-inf`
        // on every token would make both sides compute NaNs).
        let max_rep = (last_n.max(0) as usize).min(self.history_len + self.steps) as i32;
        let mut exp = (max_rep - allowed_length).max(0);
        if base > 1.000_001 {
            let max_exp = (88.722_84f32 / base.ln()) as i32;
            if max_exp > 0 {
                exp = exp.min(max_exp);
            }
        }
        let worst = multiplier as f64 * (base as f64).powi(exp);
        let multiplier = if worst > 1e30 {
            base = 1.75;
            0.8
        } else {
            multiplier
        };
        StepSpec::Dry { n_vocab: self.vocab, multiplier, base, allowed_length, last_n, breakers }
    }

    fn logit_bias(&mut self) -> StepSpec {
        let n = match self.rng.random_range(0..10) {
            0 => 0,
            1..=5 => self.rng.random_range(1..=3),
            _ => self.rng.random_range(4..=12),
        };
        let v = self.vocab as i32;
        let mut biases = Vec::with_capacity(n);
        for _ in 0..n {
            let token = match self.rng.random_range(0..12) {
                0 => -1,
                1 => v,
                2 => v + 7,
                _ => self.token(),
            };
            let bias = match self.rng.random_range(0..10) {
                0..=2 if token != self.safe as i32 => f32::NEG_INFINITY,
                3 => self.pick(&[-100.0f32, 100.0, 1e-3, -1e-3, 0.0]),
                _ => self.uf(-10.0, 10.0),
            };
            biases.push((token, bias));
        }
        StepSpec::LogitBias { n_vocab: self.vocab, biases }
    }

    fn mirostat(&mut self) -> StepSpec {
        let tau = if self.p(0.5) { 5.0 } else { self.uf(0.5, 10.0) };
        let eta = if self.p(0.5) { 0.1 } else { self.uf(0.01, 1.0) };
        let m = match self.rng.random_range(0..10) {
            0..=6 => 100,
            7 => self.pick(&[0, 1, 2]),
            _ => self.rng.random_range(3..=300),
        };
        StepSpec::Mirostat { n_vocab: self.vocab, seed: self.seed(), tau, eta, m }
    }

    fn mirostat_v2(&mut self) -> StepSpec {
        let tau = if self.edge() {
            // The first cut is at surprise `-log2(p) > mu = 2 * tau`.
            let j = self.top_index();
            let t = -self.top[j].1.log2() / 2.0;
            if t.is_finite() {
                self.near(t)
            } else {
                5.0
            }
        } else if self.p(0.08) {
            // Cut-offs among denormal probabilities (surprise 126 to 150 bits) and beyond.
            self.pick(&[63.0f32, 70.0, 73.75, 74.5, 75.0, 90.0])
        } else if self.p(0.5) {
            5.0
        } else {
            self.uf(0.1, 10.0)
        };
        let eta = if self.p(0.5) { 0.1 } else { self.uf(0.01, 1.0) };
        StepSpec::MirostatV2 { seed: self.seed(), tau, eta }
    }

    fn adaptive_p(&mut self) -> StepSpec {
        let target = if self.edge() {
            let j = self.top_index();
            let p = self.top[j].1;
            self.near(p)
        } else {
            match self.rng.random_range(0..10) {
                0 => -1.0,
                1 => 0.0,
                2 => 1.0,
                3 => 1.5,
                4 | 5 => 0.5,
                _ => self.uf(0.0, 1.0),
            }
        };
        let decay = match self.rng.random_range(0..8) {
            0..=2 => 0.9,
            3 => 0.0,
            4 => 1.2,
            _ => self.uf(0.0, 0.99),
        };
        StepSpec::AdaptiveP { target, decay, seed: self.seed() }
    }

    fn filter(&mut self, which: usize) -> StepSpec {
        match which {
            0 => self.penalties(),
            1 => self.dry(),
            2 => self.top_n_sigma(),
            3 => self.top_k(),
            4 => self.typical(),
            5 => self.top_p(),
            6 => self.min_p(),
            7 => self.xtc(),
            8 => self.temp_ext(),
            9 => self.temp(),
            _ => self.logit_bias(),
        }
    }

    fn selector(&mut self) -> StepSpec {
        match self.rng.random_range(0..100) {
            0..=79 => StepSpec::Dist { seed: self.seed() },
            80..=91 => self.adaptive_p(),
            _ => StepSpec::Greedy,
        }
    }

    /// A chain shaped like the benchmark chains of issue 3 (what the whole-vocabulary fast
    /// paths target), as llama.cpp's common layer builds them: every filter present in the
    /// default order, the unused ones with their "off" value; parameters jittered now and
    /// then; sometimes a sparse prefix (logit bias, penalties, DRY).
    fn bench_chain(&mut self) -> Vec<StepSpec> {
        use StepSpec as S;
        let jitter = self.p(0.3);
        let mut k = 40;
        let mut top_p = 0.95f32;
        let mut min_p = 0.05f32;
        let mut t = 0.8f32;
        if jitter {
            k = self.pick(&[1, 2, 8, 40, 64, 100, 128, 129, 200]);
            top_p = self.pick(&[0.5f32, 0.9, 0.95, 0.99]);
            min_p = self.pick(&[0.01f32, 0.05, 0.1, 0.3]);
            t = self.pick(&[0.3f32, 0.7, 0.8, 1.0, 1.2]);
        }
        let seed = self.seed();
        // (penalties, dry, top_n_sigma, top_k, typical, top_p, min_p, xtc, temp_ext)
        let off = [
            S::Penalties { n_vocab: self.vocab, last_n: 64, repeat: 1.0, freq: 0.0, present: 0.0 },
            S::Dry {
                n_vocab: self.vocab,
                multiplier: 0.0,
                base: 1.75,
                allowed_length: 2,
                last_n: -1,
                breakers: vec![],
            },
            S::TopNSigma { n: -1.0 },
            S::TopK { k: 0 },
            S::Typical { p: 1.0, min_keep: 0 },
            S::TopP { p: 1.0, min_keep: 0 },
            S::MinP { p: 0.0, min_keep: 0 },
            S::Xtc { probability: 0.0, threshold: 0.1, min_keep: 0, seed },
            S::TempExt { t: 1.0, delta: 0.0, exponent: 1.0 },
        ];
        let mut f: Vec<StepSpec> = off.to_vec();
        let default = |f: &mut Vec<StepSpec>| {
            f[3] = S::TopK { k };
            f[5] = S::TopP { p: top_p, min_keep: 0 };
            f[6] = S::MinP { p: min_p, min_keep: 0 };
            f[8] = S::TempExt { t, delta: 0.0, exponent: 1.0 };
        };
        let mut chain = Vec::new();
        if self.p(0.3) {
            chain.push(self.logit_bias());
        }
        let mut tail = S::Dist { seed };
        match self.rng.random_range(0..9) {
            0 => {
                // (a) greedy: temperature 0 through temp-ext, or the greedy sampler.
                f[8] = S::TempExt { t: 0.0, delta: 0.0, exponent: 1.0 };
                if self.p(0.3) {
                    tail = S::Greedy;
                }
            }
            1 => {} // (b) dist only
            2 => default(&mut f),
            3 => {
                default(&mut f);
                f[3] = S::TopK { k: 0 };
            }
            4 => {
                default(&mut f);
                f[0] = S::Penalties { n_vocab: self.vocab, last_n: 64, repeat: 1.1, freq: 0.1, present: 0.1 };
            }
            5 => {
                // (f) mirostat v2: temp, then mirostat-v2 (no filters).
                let m = self.mirostat_v2();
                return [chain, vec![S::Temp { t }, m]].concat();
            }
            6 => {
                f[2] = S::TopNSigma { n: if jitter { self.pick(&[0.5f32, 1.0, 2.0]) } else { 1.0 } };
                f[8] = S::TempExt { t, delta: 0.0, exponent: 1.0 };
            }
            7 => {
                f[3] = S::TopK { k };
                f[4] = S::Typical { p: 0.9, min_keep: 0 };
            }
            _ => {
                default(&mut f);
                f[7] = S::Xtc { probability: 0.5, threshold: 0.1, min_keep: 0, seed };
            }
        }
        if self.p(0.25) {
            f[0] = self.penalties();
        }
        if self.p(0.2) {
            f[1] = self.dry();
        }
        if self.p(0.3) {
            // Drop the "off" members (a hand-built chain rather than common's).
            f.retain(|s| !s.to_llama().name().starts_with('?'));
        }
        chain.extend(f);
        chain.push(tail);
        chain
    }

    fn chain(&mut self) -> Vec<StepSpec> {
        let mut chain = Vec::new();
        let branch = self.rng.random_range(0..100);
        if branch < 8 {
            // A single sampler in focus, then a selector.
            let which = self.rng.random_range(0..11);
            chain.push(self.filter(which));
            chain.push(self.selector());
            return chain;
        }
        if branch < 28 {
            return self.bench_chain();
        }
        if self.p(0.25) {
            chain.push(self.logit_bias());
        }
        if branch < 80 {
            // llama.cpp's common chain: a subset of the filters in the default order or shuffled,
            // then dist (or adaptive-p, sometimes greedy).
            let mut order: Vec<usize> = (0..9).filter(|_| self.rng.random_bool(0.55)).collect();
            if self.p(0.5) {
                order.shuffle(&mut self.rng);
            }
            if self.p(0.15) {
                let extra = self.rng.random_range(0..11);
                let at = self.rng.random_range(0..=order.len());
                order.insert(at, extra);
            }
            for w in order {
                chain.push(self.filter(w));
            }
            chain.push(self.selector());
        } else {
            // Mirostat branches (common: temp, then mirostat); sometimes with filters before.
            if self.p(0.2) {
                for _ in 0..self.rng.random_range(1..=2) {
                    let w = self.rng.random_range(0..9);
                    chain.push(self.filter(w));
                }
            }
            chain.push(self.temp());
            if branch < 90 {
                chain.push(self.mirostat());
            } else {
                chain.push(self.mirostat_v2());
            }
        }
        chain
    }

    fn history(&mut self) -> Vec<i32> {
        let n = self.history_len;
        let mut h: Vec<i32> = Vec::with_capacity(n);
        let alphabet: Vec<i32> = if self.p(0.5) {
            let size = self.rng.random_range(1..=8usize);
            (0..size).map(|_| self.token()).collect()
        } else {
            Vec::new()
        };
        while h.len() < n {
            if h.len() >= 2 && self.p(0.3) {
                // Repeat an earlier segment (what DRY looks for).
                let start = self.rng.random_range(0..h.len() - 1);
                let len = self.rng.random_range(1..=(h.len() - start).min(12));
                for i in 0..len {
                    if h.len() < n {
                        h.push(h[start + i]);
                    }
                }
            } else if !alphabet.is_empty() {
                let t = alphabet[self.rng.random_range(0..alphabet.len())];
                h.push(t);
            } else {
                let t = self.token();
                h.push(t);
            }
        }
        h
    }
}

/// Draws a vocabulary size: mostly small and medium, a few up to 262144.
fn vocab_size(rng: &mut ChaCha8Rng) -> usize {
    match rng.random_range(0..1000) {
        0..=99 => rng.random_range(1..=8),
        100..=399 => rng.random_range(9..=256),
        400..=749 => rng.random_range(257..=4096),
        750..=949 => rng.random_range(4097..=32768),
        950..=984 => rng.random_range(32769..=131072),
        985..=992 => [32000, 128256, 151936, 262144][rng.random_range(0..4)],
        _ => rng.random_range(131073..=262144),
    }
}

/// The case with index `index` of the run seeded with `harness_seed`.
pub fn generate(harness_seed: u64, index: u64) -> Case {
    let mut rng = ChaCha8Rng::seed_from_u64(harness_seed);
    rng.set_stream(index);
    let vocab = vocab_size(&mut rng);
    let steps = match vocab {
        0..=4096 => rng.random_range(1..=8),
        4097..=32768 => rng.random_range(1..=4),
        _ => rng.random_range(1..=2),
    };
    let history_len = match rng.random_range(0..10) {
        0..=2 => 0,
        3..=7 => rng.random_range(1..=32),
        _ => rng.random_range(33..=160),
    };
    let safe = rng.random_range(0..vocab);
    let rows_seed = rng.next_u64();
    let mut g = Gen {
        rng,
        vocab,
        hot: Vec::new(),
        safe,
        shared_seed: None,
        shared_min_keep: None,
        history_len,
        steps,
        top: Vec::new(),
        row0: Vec::new(),
    };
    let shape = g.shape();
    let change = match g.rng.random_range(0..10) {
        0..=3 => StepChange::Same,
        4..=6 => StepChange::Noise { sigma: g.pick(&[0.01f32, 0.1, 1.0]) },
        _ => StepChange::Fresh,
    };
    // The ids that matter most are the best of row 0 (what survives truncation).
    let row0 = shape.draw(vocab, rows_seed);
    let mut idx: Vec<usize> = (0..vocab).collect();
    let top = 12.min(vocab);
    if top > 0 && top < vocab {
        idx.select_nth_unstable_by(top - 1, |&a, &b| row0[b].total_cmp(&row0[a]));
    }
    let mut hot: Vec<i32> = idx[..top].iter().map(|&i| i as i32).collect();
    for _ in 0..4 {
        hot.push(g.rng.random_range(0..vocab) as i32);
    }
    g.hot = hot;
    g.top = top_probs(&row0, 64);
    g.row0 = row0;
    if g.p(0.6) {
        g.shared_seed = Some(g.fresh_seed());
    }
    if g.p(0.5) {
        g.shared_min_keep = Some(g.fresh_min_keep());
    }
    let chain = g.chain();
    let history = g.history();
    let layout = if g.p(0.1) {
        Layout::Shuffled { seed: g.rng.next_u64(), keep: g.pick(&[1.0f32, 1.0, 0.5, 0.05]) }
    } else {
        Layout::Identity
    };
    let reset_before = (steps > 1 && g.p(0.1)).then(|| g.rng.random_range(1..steps));
    let clone_before = (g.p(0.1)).then(|| g.rng.random_range(0..steps));
    Case {
        vocab,
        rows: Rows::Gen { shape, seed: rows_seed, change },
        chain,
        history,
        steps,
        layout,
        reset_before,
        clone_before,
        edits: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a over the debug form of cases `0..50` of harness seed `seed` and the bits of every
    /// row they use.
    fn fingerprint(seed: u64) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        for i in 0..50 {
            let c = generate(seed, i);
            eat(format!("{c:?}").as_bytes());
            for s in 0..c.steps {
                for x in c.row(s) {
                    eat(&x.to_bits().to_le_bytes());
                }
            }
        }
        h
    }

    /// A case is reproduced from `(harness seed, index)` alone, across runs and builds: the
    /// cases and rows of seed 7 match the fingerprint recorded when the generator last changed
    /// (a deliberate change to the generator updates it, and makes older failure reports'
    /// seeds and indices point to other cases). The seed and the index both matter.
    #[test]
    fn cases_reproduce_from_seed_and_index() {
        assert_eq!(fingerprint(7), RECORDED_FINGERPRINT, "the case generator's output changed");
        assert_ne!(fingerprint(8), RECORDED_FINGERPRINT);
        let distinct = (0..50).filter(|&i| generate(7, i) != generate(7, i + 1)).count();
        assert_eq!(distinct, 50);
    }

    const RECORDED_FINGERPRINT: u64 = 0xfa26_374b_a4f1_1e5b;

    #[test]
    fn rows_have_a_finite_logit_and_no_nan() {
        for i in 0..300 {
            let c = generate(11, i);
            for s in 0..c.steps {
                let r = c.row(s);
                assert_eq!(r.len(), c.vocab);
                assert!(r.iter().any(|x| x.is_finite()), "case {i} step {s}");
                assert!(r.iter().all(|x| !x.is_nan() && *x != f32::INFINITY), "case {i} step {s}");
            }
            assert!(c.chain.last().unwrap().is_selector());
            assert!(c.history.iter().all(|&t| t >= 0 && (t as usize) < c.vocab));
        }
    }

    #[test]
    fn bf16_rounding() {
        assert_eq!(round_bf16(1.0), 1.0);
        assert_eq!(round_bf16(1.0 + 1.0 / 256.0), 1.0); // tie, to even
        assert_eq!(round_bf16(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
        assert_eq!(round_bf16(f32::NEG_INFINITY), f32::NEG_INFINITY);
    }
}
