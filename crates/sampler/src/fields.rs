//! The sampling fields, each written once: its [`SamplingParams`] name (llama.cpp's
//! `common_params_sampling` name, what the C ABI's `params_json` and the Python keywords use),
//! the names an HTTP request gives it (OpenAI's, llama-server's, vLLM's; the first is the one
//! `/props` and error messages use), what kind of value it holds with its default and how to
//! read and write it in a [`SamplingParams`], the range an HTTP request may give it (the
//! server's check and its OpenAPI `minimum`/`maximum`), and the command-line flag with its help.
//!
//! Everything that reads sampling fields by name goes through this table: the map parser
//! ([`crate::params_map`]), the server's request reader, its OpenAPI ranges and `/props`, and
//! the command line's flags. It is read when parameters are parsed, never while sampling.
//!
//! A request range is the HTTP API's contract (OpenAI's ranges for OpenAI's fields, the
//! type's limits otherwise); whether a value makes a valid chain is
//! [`SamplingParams::validate`]'s to judge, for every caller.
//!
//! ```
//! use nucleus_sampler::fields;
//!
//! let f = fields::by_request_name("repetition_penalty").unwrap();
//! assert_eq!(f.name, "penalty_repeat");
//! assert_eq!(f.camel_name(), "penaltyRepeat");
//! assert_eq!(f.cli.unwrap().flag, "repeat-penalty");
//! ```

use crate::error::ParamError;
use crate::params::{MirostatMode, SamplingParams};
use crate::rng::DEFAULT_SEED;

/// llama.cpp's default DRY sequence breakers.
pub const DEFAULT_DRY_BREAKERS: &[&str] = &["\n", ":", "\"", "*"];

/// What a field holds, its default, and how it is read from and written to a
/// [`SamplingParams`] (plain function pointers: the table is a constant).
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A 32-bit float.
    Float {
        /// llama.cpp's default.
        default: f32,
        /// Reads the field.
        get: fn(&SamplingParams) -> f32,
        /// Writes the field.
        set: fn(&mut SamplingParams, f32),
    },
    /// An integer, held in `[min, max]` (the field's own type: `i32`, `u32` with `-1` for a
    /// random seed, a non-negative count).
    Int {
        /// llama.cpp's default, as the command line writes it (`-1` for the random seed).
        default: i64,
        /// The smallest value the field can hold.
        min: i64,
        /// The largest value the field can hold.
        max: i64,
        /// Reads the field.
        get: fn(&SamplingParams) -> i64,
        /// Writes the field (an error for an integer that names nothing, as mirostat's 3).
        set: fn(&mut SamplingParams, i64) -> Result<(), ParamError>,
    },
    /// A boolean.
    Bool {
        /// llama.cpp's default.
        default: bool,
        /// Reads the field.
        get: fn(&SamplingParams) -> bool,
        /// Writes the field.
        set: fn(&mut SamplingParams, bool),
    },
    /// DRY's sequence breakers (strings; default [`DEFAULT_DRY_BREAKERS`]).
    Breakers,
    /// The sampler order (names or one-letter codes; default [`crate::sampler_type::DEFAULT_SAMPLERS`]).
    Samplers,
    /// Logit biases, token id to bias (default none).
    LogitBias,
}

/// The values an HTTP request may give a numeric field: `[min, max]`, or `(min, max]` when
/// `min_excluded` holds the message for `min` itself. Every bound is exact as an `f64`
/// (integers below 2^53, `f32` values, `0.99`) and, for floats, is compared as an `f32`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
    /// When `min` itself is refused: what to say then.
    pub min_excluded: Option<&'static str>,
}

/// A command-line flag: its name without `--`, and its help line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cli {
    /// The flag (`repeat-penalty`).
    pub flag: &'static str,
    /// The help line `--help` prints.
    pub help: &'static str,
}

/// One sampling field (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The [`SamplingParams`] field, as llama.cpp's `common_params_sampling` names it: what
    /// `params_json`, Python's keywords and Node's snake_case keys use.
    pub name: &'static str,
    /// The names an HTTP request may give it, the first the main one (the others are aliases,
    /// e.g. vLLM's `repetition_penalty`; when a body gives several, the first wins).
    pub request: &'static [&'static str],
    /// What it holds, its default, and its accessors.
    pub kind: Kind,
    /// What an HTTP request may give it (numeric fields).
    pub range: Option<Range>,
    /// The flag of `sample`, `generate` and `serve`, when the command line takes it there.
    pub cli: Option<Cli>,
}

impl Field {
    /// Node's camelCase spelling of [`Field::name`] (`penalty_last_n` → `penaltyLastN`).
    pub fn camel_name(&self) -> String {
        let mut out = String::with_capacity(self.name.len());
        let mut up = false;
        for c in self.name.chars() {
            match c {
                '_' => up = true,
                c if up => {
                    out.push(c.to_ascii_uppercase());
                    up = false;
                }
                c => out.push(c),
            }
        }
        out
    }

    /// The main name an HTTP request gives it.
    pub fn request_name(&self) -> &'static str {
        self.request[0]
    }
}

const F32_MAX: f64 = f32::MAX as f64;
const I32_MIN: i64 = i32::MIN as i64;
const I32_MAX: i64 = i32::MAX as i64;

/// `[min, max]`.
const fn closed(min: f64, max: f64) -> Option<Range> {
    Some(Range { min, max, min_excluded: None })
}

const fn cli(flag: &'static str, help: &'static str) -> Option<Cli> {
    Some(Cli { flag, help })
}

/// A float field's kind: its default and accessors.
macro_rules! float {
    ($field:ident = $default:expr) => {
        Kind::Float { default: $default, get: |p| p.$field, set: |p, v| p.$field = v }
    };
}

/// An `i32` field's kind.
macro_rules! int {
    ($field:ident = $default:expr) => {
        Kind::Int {
            default: $default,
            min: I32_MIN,
            max: I32_MAX,
            get: |p| p.$field as i64,
            set: |p, v| {
                p.$field = v as i32;
                Ok(())
            },
        }
    };
}

/// Every sampling field, in `common_params_sampling`'s order.
pub const FIELDS: &[Field] = &[
    Field {
        name: "seed",
        request: &["seed"],
        kind: Kind::Int {
            default: -1,
            min: -1,
            max: u32::MAX as i64,
            get: |p| if p.seed == DEFAULT_SEED { -1 } else { p.seed as i64 },
            set: |p, v| {
                p.seed = if v < 0 { DEFAULT_SEED } else { v as u32 };
                Ok(())
            },
        },
        range: closed(-1.0, u32::MAX as f64),
        cli: cli("seed", "RNG seed (-1 = random)"),
    },
    Field {
        name: "temp",
        request: &["temperature"],
        kind: float!(temp = 0.8),
        range: closed(0.0, 2.0),
        cli: cli("temp", "Temperature (<= 0: always the most likely token)"),
    },
    Field {
        name: "top_k",
        request: &["top_k"],
        kind: int!(top_k = 40),
        range: closed(-1.0, I32_MAX as f64),
        cli: cli("top-k", "Top-k sampling (<= 0 disables)"),
    },
    Field {
        name: "top_p",
        request: &["top_p"],
        kind: float!(top_p = 0.95),
        range: closed(0.0, 1.0),
        cli: cli("top-p", "Top-p sampling (1.0 disables)"),
    },
    Field {
        name: "min_p",
        request: &["min_p"],
        kind: float!(min_p = 0.05),
        range: closed(0.0, 1.0),
        cli: cli("min-p", "Min-p sampling (0.0 disables)"),
    },
    Field {
        name: "typ_p",
        request: &["typical_p"],
        kind: float!(typ_p = 1.0),
        range: closed(0.0, 1.0),
        cli: cli("typical", "Locally typical sampling (1.0 disables)"),
    },
    Field {
        name: "xtc_probability",
        request: &["xtc_probability"],
        kind: float!(xtc_probability = 0.0),
        range: closed(0.0, 1.0),
        cli: cli("xtc-probability", "XTC probability (0.0 disables)"),
    },
    Field {
        name: "xtc_threshold",
        request: &["xtc_threshold"],
        kind: float!(xtc_threshold = 0.1),
        range: closed(0.0, 1.0),
        cli: cli("xtc-threshold", "XTC threshold (> 0.5 disables)"),
    },
    Field {
        name: "penalty_last_n",
        request: &["repeat_last_n"],
        kind: int!(penalty_last_n = 64),
        range: closed(0.0, I32_MAX as f64),
        cli: cli("repeat-last-n", "Last n tokens considered for penalties (0 disables)"),
    },
    Field {
        name: "penalty_repeat",
        request: &["repeat_penalty", "repetition_penalty"],
        kind: float!(penalty_repeat = 1.0),
        range: Some(Range { min: 0.0, max: F32_MAX, min_excluded: Some("must be > 0 (1.0 disables)") }),
        cli: cli("repeat-penalty", "Repeat penalty (1.0 disables)"),
    },
    Field {
        name: "penalty_freq",
        request: &["frequency_penalty"],
        kind: float!(penalty_freq = 0.0),
        range: closed(-2.0, 2.0),
        cli: cli("frequency-penalty", "Frequency penalty (0.0 disables)"),
    },
    Field {
        name: "penalty_present",
        request: &["presence_penalty"],
        kind: float!(penalty_present = 0.0),
        range: closed(-2.0, 2.0),
        cli: cli("presence-penalty", "Presence penalty (0.0 disables)"),
    },
    Field {
        name: "dry_multiplier",
        request: &["dry_multiplier"],
        kind: float!(dry_multiplier = 0.0),
        range: closed(0.0, F32_MAX),
        cli: cli("dry-multiplier", "DRY multiplier (0.0 disables)"),
    },
    Field {
        name: "dry_base",
        request: &["dry_base"],
        kind: float!(dry_base = 1.75),
        range: closed(-F32_MAX, F32_MAX),
        cli: cli("dry-base", "DRY base"),
    },
    Field {
        name: "dry_allowed_length",
        request: &["dry_allowed_length"],
        kind: int!(dry_allowed_length = 2),
        range: closed(0.0, I32_MAX as f64),
        cli: cli("dry-allowed-length", "DRY allowed length"),
    },
    Field {
        name: "dry_penalty_last_n",
        request: &["dry_penalty_last_n"],
        kind: int!(dry_penalty_last_n = 64),
        range: closed(0.0, I32_MAX as f64),
        cli: cli("dry-penalty-last-n", "DRY window (0 disables)"),
    },
    Field {
        name: "dry_sequence_breakers",
        request: &["dry_sequence_breakers"],
        kind: Kind::Breakers,
        range: None,
        cli: cli("dry-sequence-breaker", "DRY sequence breaker (repeatable; `none` clears the list)"),
    },
    Field {
        name: "mirostat",
        request: &["mirostat"],
        kind: Kind::Int {
            default: 0,
            min: I32_MIN,
            max: I32_MAX,
            get: |p| p.mirostat as i64,
            set: |p, v| {
                p.mirostat = MirostatMode::from_i32(v as i32)?;
                Ok(())
            },
        },
        range: closed(0.0, 2.0),
        cli: cli("mirostat", "Mirostat (0 off, 1 v1, 2 v2)"),
    },
    Field {
        name: "mirostat_tau",
        request: &["mirostat_tau"],
        kind: float!(mirostat_tau = 5.0),
        range: closed(0.0, F32_MAX),
        cli: cli("mirostat-ent", "Mirostat target entropy (tau)"),
    },
    Field {
        name: "mirostat_eta",
        request: &["mirostat_eta"],
        kind: float!(mirostat_eta = 0.1),
        range: closed(0.0, F32_MAX),
        cli: cli("mirostat-lr", "Mirostat learning rate (eta)"),
    },
    Field {
        name: "top_n_sigma",
        request: &["top_n_sigma"],
        kind: float!(top_n_sigma = -1.0),
        range: closed(-F32_MAX, F32_MAX),
        cli: cli("top-n-sigma", "Top-n-sigma sampling (<= 0 disables)"),
    },
    Field {
        name: "dynatemp_range",
        request: &["dynatemp_range"],
        kind: float!(dynatemp_range = 0.0),
        range: closed(0.0, F32_MAX),
        cli: cli("dynatemp-range", "Dynamic temperature range (0.0 disables)"),
    },
    Field {
        name: "dynatemp_exponent",
        request: &["dynatemp_exponent"],
        kind: float!(dynatemp_exponent = 1.0),
        range: closed(0.0, F32_MAX),
        cli: cli("dynatemp-exp", "Dynamic temperature exponent"),
    },
    Field {
        name: "min_keep",
        request: &["min_keep"],
        kind: Kind::Int {
            default: 0,
            min: 0,
            max: I32_MAX,
            get: |p| p.min_keep as i64,
            set: |p, v| {
                p.min_keep = v as usize;
                Ok(())
            },
        },
        range: closed(0.0, I32_MAX as f64),
        cli: cli("min-keep", "Minimum candidates kept by top-p, min-p, typical and XTC"),
    },
    Field {
        name: "samplers",
        request: &["samplers"],
        kind: Kind::Samplers,
        range: None,
        cli: cli("samplers", "Sampler order, ';'-separated names (e.g. \"top_k;top_p;temperature\")"),
    },
    Field {
        name: "logit_bias",
        request: &["logit_bias"],
        kind: Kind::LogitBias,
        range: None,
        cli: cli("logit-bias", "Logit bias TOKEN(+|-)BIAS, e.g. 15043+1 or 15043-inf (repeatable)"),
    },
    Field {
        name: "adaptive_target",
        request: &["adaptive_target"],
        kind: float!(adaptive_target = -1.0),
        range: closed(-F32_MAX, 1.0),
        cli: cli("adaptive-target", "Adaptive-p target probability (negative disables)"),
    },
    Field {
        name: "adaptive_decay",
        request: &["adaptive_decay"],
        kind: float!(adaptive_decay = 0.9),
        range: closed(0.0, 0.99),
        cli: cli("adaptive-decay", "Adaptive-p decay, in [0, 0.99]"),
    },
    Field {
        name: "ignore_eos",
        request: &["ignore_eos"],
        kind: Kind::Bool { default: false, get: |p| p.ignore_eos, set: |p, v| p.ignore_eos = v },
        range: None,
        // `generate` has its own `--ignore-eos`; `sample` has no vocabulary to ban.
        cli: None,
    },
];

/// Every [`Field::name`], in table order.
pub const NAMES: [&str; FIELDS.len()] = {
    let mut out = [""; FIELDS.len()];
    let mut i = 0;
    while i < FIELDS.len() {
        out[i] = FIELDS[i].name;
        i += 1;
    }
    out
};

/// The field [`SamplingParams`] names `name`.
pub fn by_name(name: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.name == name)
}

/// The field an HTTP request names `name` (any of its [`Field::request`] names).
pub fn by_request_name(name: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.request.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler_type::DEFAULT_SAMPLERS;

    /// The table's defaults, written over `p`.
    fn write_defaults(p: &mut SamplingParams) {
        for f in FIELDS {
            match f.kind {
                Kind::Float { default, set, .. } => set(p, default),
                Kind::Int { default, set, .. } => set(p, default).expect("the table's defaults are valid"),
                Kind::Bool { default, set, .. } => set(p, default),
                Kind::Breakers => {
                    p.dry_sequence_breakers = DEFAULT_DRY_BREAKERS.iter().map(|s| s.to_string()).collect()
                }
                Kind::Samplers => p.samplers = DEFAULT_SAMPLERS.to_vec(),
                Kind::LogitBias => p.logit_bias.clear(),
            }
        }
    }

    /// The table's defaults are [`SamplingParams::default`]'s, field by field: writing them over
    /// parameters where every field differs from its default gives the default back.
    #[test]
    fn table_defaults_are_sampling_params_default() {
        let mut p = SamplingParams {
            seed: 7,
            min_keep: 3,
            top_k: 1,
            top_p: 0.5,
            min_p: 0.5,
            xtc_probability: 0.5,
            xtc_threshold: 0.5,
            typ_p: 0.5,
            temp: 0.5,
            dynatemp_range: 0.5,
            dynatemp_exponent: 0.5,
            penalty_last_n: 1,
            penalty_repeat: 0.5,
            penalty_freq: 0.5,
            penalty_present: 0.5,
            dry_multiplier: 0.5,
            dry_base: 0.5,
            dry_allowed_length: 1,
            dry_penalty_last_n: 1,
            dry_sequence_breakers: vec![],
            adaptive_target: 0.5,
            adaptive_decay: 0.5,
            mirostat: MirostatMode::V1,
            mirostat_tau: 0.5,
            mirostat_eta: 0.5,
            top_n_sigma: 0.5,
            ignore_eos: true,
            samplers: vec![],
            logit_bias: vec![(1, 1.0)],
        };
        let d = SamplingParams::default();
        for f in FIELDS {
            // Each scalar accessor reads what it writes, and reads a value off the defaults.
            match f.kind {
                Kind::Float { default, get, .. } => assert_eq!(get(&d).to_bits(), default.to_bits(), "{}", f.name),
                Kind::Int { default, get, .. } if f.name != "seed" => assert_eq!(get(&d), default, "{}", f.name),
                Kind::Bool { default, get, .. } => assert_eq!(get(&d), default, "{}", f.name),
                _ => {}
            }
        }
        assert_ne!(p, d);
        write_defaults(&mut p);
        assert_eq!(p, d);
    }

    #[test]
    fn names_are_unique_and_ranges_ordered() {
        for (i, f) in FIELDS.iter().enumerate() {
            assert!(FIELDS[..i].iter().all(|g| g.name != f.name), "{}", f.name);
            for r in f.request {
                assert_eq!(by_request_name(r).map(|g| g.name), Some(f.name), "{r}");
            }
            assert_eq!(by_name(f.name).map(|g| g.name), Some(f.name));
            if let Some(r) = f.range {
                assert!(r.min < r.max, "{}", f.name);
            }
            let numeric = matches!(f.kind, Kind::Float { .. } | Kind::Int { .. });
            assert_eq!(numeric, f.range.is_some(), "{}: a numeric field has a request range", f.name);
            if let Some(c) = f.cli {
                assert!(FIELDS[..i].iter().all(|g| g.cli.map(|x| x.flag) != Some(c.flag)), "--{}", c.flag);
            }
        }
        assert_eq!(by_name("dynatemp_exponent").unwrap().camel_name(), "dynatempExponent");
        assert_eq!(by_name("temp").unwrap().request_name(), "temperature");
        assert!(by_name("temperature").is_none() && by_request_name("temp").is_none());
    }
}
