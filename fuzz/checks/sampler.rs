//! Sampling parameters and hostile logits: NaN, infinities, subnormals, extremes, an empty
//! row and large vocabularies. Building a chain and sampling must answer (a token or an error)
//! without panicking, and a returned token must be in the vocabulary.

use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams, TokenSampler};

/// Reads the fuzz input as a stream of choices (zeros once exhausted).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// A float, mostly from a palette of awkward values, else raw bits.
    fn f32(&mut self) -> f32 {
        const PALETTE: [f32; 16] = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE / 8.0, // subnormal
            -f32::MIN_POSITIVE / 8.0,
            f32::MAX,
            f32::MIN,
            0.0,
            -0.0,
            1.0,
            0.5,
            -1.0,
            1e-30,
            1e30,
            0.999_999_9,
            2.0,
        ];
        let b = self.u8();
        if b < 200 {
            PALETTE[b as usize % PALETTE.len()]
        } else {
            f32::from_bits(self.u32())
        }
    }

    fn i32(&mut self) -> i32 {
        match self.u8() % 6 {
            0 => -1,
            1 => 0,
            2 => 1,
            3 => i32::MAX,
            4 => i32::MIN,
            _ => self.u32() as i32 % 1000,
        }
    }
}

const TYPES: [SamplerType; 11] = [
    SamplerType::Dry,
    SamplerType::TopK,
    SamplerType::TypicalP,
    SamplerType::TopP,
    SamplerType::TopNSigma,
    SamplerType::MinP,
    SamplerType::Temperature,
    SamplerType::Xtc,
    SamplerType::Infill,
    SamplerType::Penalties,
    SamplerType::AdaptiveP,
];

/// The check: panics on a violated invariant.
pub fn check(data: &[u8]) {
    let mut b = Bytes(data);
    let mut p = SamplingParams { seed: b.u32(), ..Default::default() };
    p.min_keep = b.u8() as usize;
    p.top_k = b.i32();
    p.top_p = b.f32();
    p.min_p = b.f32();
    p.xtc_probability = b.f32();
    p.xtc_threshold = b.f32();
    p.typ_p = b.f32();
    p.temp = b.f32();
    p.dynatemp_range = b.f32();
    p.dynatemp_exponent = b.f32();
    p.penalty_last_n = b.i32();
    p.penalty_repeat = b.f32();
    p.penalty_freq = b.f32();
    p.penalty_present = b.f32();
    p.dry_multiplier = b.f32();
    p.dry_base = b.f32();
    p.dry_allowed_length = b.i32();
    p.dry_penalty_last_n = b.i32();
    p.adaptive_target = b.f32();
    p.adaptive_decay = b.f32();
    p.mirostat = [MirostatMode::Off, MirostatMode::V1, MirostatMode::V2][b.u8() as usize % 3];
    p.mirostat_tau = b.f32();
    p.mirostat_eta = b.f32();
    p.top_n_sigma = b.f32();
    p.samplers = (0..b.u8() % 12).map(|_| TYPES[b.u8() as usize % TYPES.len()]).collect();
    p.logit_bias = (0..b.u8() % 4).map(|_| (b.i32(), b.f32())).collect();
    let n_vocab = match b.u8() % 8 {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 1 + b.u8() as usize,
        4 => 1000,
        5 => 32_000,
        6 => 152_064,
        _ => 1 + b.u32() as usize % 4096,
    };
    if std::env::var_os("NUCLEUS_FUZZ_DEBUG").is_some() {
        eprintln!("{p:?}\nn_vocab = {n_vocab}");
    }
    let Ok(chain) = p.build(n_vocab, None) else { return };
    let mut s = TokenSampler::new(chain);
    s.set_fast_path(b.u8() & 1 == 0);
    // A row built from a short fuzzed pattern, repeated (so a large row costs few input bytes),
    // with a few fuzzed values at fuzzed places.
    let pattern: Vec<f32> = (0..1 + b.u8() % 16).map(|_| b.f32()).collect();
    let mut row: Vec<f32> = (0..n_vocab).map(|i| pattern[i % pattern.len()] - (i % 7) as f32).collect();
    for _ in 0..b.u8() % 8 {
        if n_vocab > 0 {
            let at = b.u32() as usize % n_vocab;
            row[at] = b.f32();
        }
    }
    if std::env::var_os("NUCLEUS_FUZZ_DEBUG").is_some() {
        eprintln!("pattern {pattern:?}; row[..16] {:?}", &row[..row.len().min(16)]);
    }
    for _ in 0..1 + b.u8() % 4 {
        let sampled = b.u8() & 1 == 0;
        let result = if sampled { s.sample(&row[..]) } else { s.apply(&row[..]) };
        if let Ok(t) = result {
            assert!(t >= 0 && (t as usize) < n_vocab, "token {t} outside a vocabulary of {n_vocab}");
            if !sampled {
                s.accept(t); // `sample` accepts by itself
            }
        }
        if n_vocab > 0 {
            let at = b.u32() as usize % n_vocab;
            row[at] = b.f32();
        }
    }
}
