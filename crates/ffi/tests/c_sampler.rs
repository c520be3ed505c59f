//! C programs linked with libnucleus: a seeded stream sampled through the C API equals the Rust
//! `TokenSampler` stream and llama.cpp's own chain (through nucleus-parity) on fixed logits, in
//! f32, f16 and bf16; every sampler function called with NULL, wrong sizes and bad values
//! returns an error and never crashes (under valgrind when installed).

mod common;

use half::{bf16, f16};
use nucleus_parity::common_chain::llama_chain;
use nucleus_parity::llama::LlamaCandidates;
use nucleus_sampler::probs::{top_n_raw, RawDistribution};
use nucleus_sampler::{Logits, SamplingParams, TokenSampler};

/// Deterministic logits: a few peaked tokens over a noisy floor, different for every step.
fn rows(n_vocab: usize, n_steps: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n_steps)
        .map(|_| {
            let mut row: Vec<f32> =
                (0..n_vocab).map(|_| ((next() >> 40) as f32 / (1u64 << 24) as f32) * 6.0 - 4.0).collect();
            for _ in 0..4 {
                let i = (next() % n_vocab as u64) as usize;
                row[i] += 6.0 + (next() % 4) as f32;
            }
            row
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    F32,
    F16,
    Bf16,
}

/// The rows as the C program reads them, and as f32 values after the same widening.
fn encode(rows: &[Vec<f32>], fmt: Format) -> (Vec<u8>, Vec<Vec<f32>>) {
    let mut bytes = Vec::new();
    let mut widened = Vec::new();
    for r in rows {
        let w: Vec<f32> = match fmt {
            Format::F32 => {
                r.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
                r.clone()
            }
            Format::F16 => r
                .iter()
                .map(|&x| {
                    let h = f16::from_f32(x);
                    bytes.extend_from_slice(&h.to_bits().to_le_bytes());
                    h.to_f32()
                })
                .collect(),
            Format::Bf16 => r
                .iter()
                .map(|&x| {
                    let h = bf16::from_f32(x);
                    bytes.extend_from_slice(&h.to_bits().to_le_bytes());
                    h.to_f32()
                })
                .collect(),
        };
        widened.push(w);
    }
    (bytes, widened)
}

/// The stream through the Rust API.
fn rust_stream(p: &SamplingParams, rows: &[Vec<f32>]) -> (Vec<i32>, f64, Vec<(i32, f32)>) {
    let mut s = TokenSampler::new(p.build(rows[0].len(), None).unwrap());
    let toks: Vec<i32> = rows.iter().map(|r| s.sample(r).unwrap()).collect();
    let last = rows.last().unwrap();
    let dist = RawDistribution::of(Logits::F32(last));
    let mut top = Vec::new();
    top_n_raw(Logits::F32(last), &dist, 3, &mut top);
    (toks, dist.entropy, top.iter().map(|t| (t.id, t.logprob)).collect())
}

/// The stream through llama.cpp's own samplers (the common chain built from the same params).
fn llama_stream(p: &SamplingParams, rows: &[Vec<f32>]) -> Vec<i32> {
    let mut chain = llama_chain(p, rows[0].len());
    let mut cands = LlamaCandidates::new();
    rows.iter()
        .map(|r| {
            cands.fill(r);
            chain.apply(&mut cands);
            let id = cands.as_slice()[cands.selected().expect("llama.cpp selected a token")].id;
            chain.accept(id);
            id
        })
        .collect()
}

fn parse_line<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} line in:\n{out}")).trim()
}

const CASES: &[(&str, usize)] = &[
    (r#"{"seed": 42}"#, 2048),
    (r#"{"seed": 42}"#, 50),
    (
        r#"{"seed": 7, "temp": 1.2, "top_k": 0, "top_p": 0.9, "min_p": 0.0, "penalty_last_n": 16,
            "penalty_repeat": 1.3, "penalty_freq": 0.2, "penalty_present": 0.1}"#,
        2048,
    ),
    (r#"{"seed": 3, "mirostat": 2, "mirostat_tau": 4.0}"#, 2048),
    (r#"{"seed": 4, "mirostat": 1, "temp": 0.9}"#, 300),
    (r#"{"seed": 11, "samplers": "st", "top_n_sigma": 1.5, "logit_bias": [[5, "-inf"], [9, 2.5]]}"#, 2048),
    (
        r#"{"seed": 5, "xtc_probability": 0.5, "xtc_threshold": 0.1, "typ_p": 0.9, "dry_multiplier": 0.8,
            "dry_sequence_breakers": [], "samplers": ["dry", "top_k", "typ_p", "xtc", "temperature"]}"#,
        1000,
    ),
    (r#"{"seed": 9, "temp": 0}"#, 2048),
    (r#"{"seed": 13, "top_k": 1000, "dynatemp_range": 0.5, "logit_bias": {"3": false}}"#, 4096),
];

#[test]
fn c_stream_equals_rust_and_llama_cpp() {
    let exe = common::build_c("sample_stream", &[]);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("nucleus-ffi-c");
    let n_steps = 24;
    for (i, &(json, n_vocab)) in CASES.iter().enumerate() {
        for fmt in [Format::F32, Format::F16, Format::Bf16] {
            let (bytes, widened) = encode(&rows(n_vocab, n_steps, i as u64 + 1), fmt);
            let name = match fmt {
                Format::F32 => "f32",
                Format::F16 => "f16",
                Format::Bf16 => "bf16",
            };
            let file = dir.join(format!("rows-{i}-{name}.bin"));
            std::fs::write(&file, bytes).unwrap();
            let out =
                common::run(&exe, &[&n_vocab.to_string(), &n_steps.to_string(), name, file.to_str().unwrap(), json]);
            let c_tokens: Vec<i32> = parse_line(&out, "tokens:").split(' ').map(|t| t.parse().unwrap()).collect();

            let p: SamplingParams = parse_params(json, n_vocab);
            let (rust_tokens, entropy, top) = rust_stream(&p, &widened);
            assert_eq!(c_tokens, rust_tokens, "case {i} ({name}): C vs Rust TokenSampler, params {json}");
            assert_eq!(c_tokens, llama_stream(&p, &widened), "case {i} ({name}): C vs llama.cpp, params {json}");

            let c_entropy: f64 = parse_line(&out, "entropy:").parse().unwrap();
            assert_eq!(c_entropy.to_bits(), entropy.to_bits(), "case {i} ({name}) entropy");
            let c_top: Vec<(i32, f32)> = parse_line(&out, "top:")
                .split(' ')
                .map(|e| {
                    let (id, lp) = e.split_once(':').unwrap();
                    (id.parse().unwrap(), lp.parse().unwrap())
                })
                .collect();
            assert_eq!(c_top, top, "case {i} ({name}) top log-probabilities");
        }
    }
}

/// The same params through the Rust types (field names equal llama.cpp's; the C side parses
/// JSON, this side sets the fields, so a parser slip shows up as a stream mismatch).
fn parse_params(json: &str, n_vocab: usize) -> SamplingParams {
    use nucleus_sampler::{MirostatMode, SamplerType};
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut p = SamplingParams::default();
    for (k, x) in v.as_object().unwrap() {
        let f = || x.as_f64().unwrap() as f32;
        let i = || x.as_i64().unwrap() as i32;
        match k.as_str() {
            "seed" => p.seed = x.as_u64().unwrap() as u32,
            "temp" => p.temp = f(),
            "top_k" => p.top_k = i(),
            "top_p" => p.top_p = f(),
            "min_p" => p.min_p = f(),
            "typ_p" => p.typ_p = f(),
            "xtc_probability" => p.xtc_probability = f(),
            "xtc_threshold" => p.xtc_threshold = f(),
            "penalty_last_n" => p.penalty_last_n = i(),
            "penalty_repeat" => p.penalty_repeat = f(),
            "penalty_freq" => p.penalty_freq = f(),
            "penalty_present" => p.penalty_present = f(),
            "dry_multiplier" => p.dry_multiplier = f(),
            "dry_sequence_breakers" => p.dry_sequence_breakers = vec![],
            "mirostat" => p.mirostat = MirostatMode::from_i32(i()).unwrap(),
            "mirostat_tau" => p.mirostat_tau = f(),
            "top_n_sigma" => p.top_n_sigma = f(),
            "dynatemp_range" => p.dynatemp_range = f(),
            "samplers" => {
                p.samplers = match x {
                    serde_json::Value::String(s) => SamplerType::parse_codes(s).unwrap(),
                    _ => x
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|n| SamplerType::from_name(n.as_str().unwrap()).unwrap())
                        .collect(),
                }
            }
            "logit_bias" => {
                p.logit_bias = match x {
                    serde_json::Value::Object(m) => m.keys().map(|k| (k.parse().unwrap(), f32::NEG_INFINITY)).collect(),
                    _ => x
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|pair| {
                            let b = pair[1].as_f64().map_or(f32::NEG_INFINITY, |b| b as f32);
                            (pair[0].as_i64().unwrap() as i32, b)
                        })
                        .collect(),
                }
            }
            other => panic!("test params use an unhandled field {other}"),
        }
    }
    p.validate(Some(n_vocab)).unwrap();
    p
}

#[test]
fn c_null_and_size_checks() {
    let exe = common::build_c("null_checks", &[]);
    let out = common::run_checked(&exe, &[]);
    assert!(out.starts_with("ok "), "{out}");
}
