//! Request sampling fields reach the sampler chain.
//!
//! * Mapping: a request body read by [`request::parse`] (the server's own reader, with the real
//!   SmolLM2 vocabulary for `logit_bias` text keys) gives exactly the [`SamplingParams`] expected,
//!   compared field by field, for every supported field under each of its names (OpenAI's,
//!   llama-server's, vLLM's) on both routes.
//! * End to end: a running server's answer with those fields and a seed (on `/v1/completions`,
//!   and a few on `/v1/chat/completions`) equals the runtime's [`generate`] with the expected
//!   parameters (the reference the CLI's `nucleus generate` also runs), and for each field, the
//!   reference with the field differs from the reference without it, so a server that dropped
//!   the field could not pass.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{config, model_path, TestServer};
use nucleus_runtime::{
    generate, prompt_tokens, ChatMessage, ContextOptions, LlamaCppModel, Model, Prompt, SequenceOptions,
};
use nucleus_sampler::fields::{self, Kind};
use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams, Token, DEFAULT_SEED};
use nucleus_server::request::{self, Endpoint};
use serde_json::{json, Map, Value};

/// The model, loaded once for the reader tests and the reference generations.
fn model() -> &'static LlamaCppModel {
    static M: OnceLock<LlamaCppModel> = OnceLock::new();
    M.get_or_init(|| LlamaCppModel::load(model_path()).expect("load SmolLM2"))
}

/// The parameters the server builds for `body` on `endpoint` over `defaults`.
fn parse_with(endpoint: Endpoint, body: Value, defaults: &SamplingParams) -> SamplingParams {
    let mut map: Map<String, Value> = body.as_object().expect("a JSON object").clone();
    match endpoint {
        Endpoint::Chat => map.insert("messages".into(), json!([{"role": "user", "content": "hi"}])),
        Endpoint::Completions => map.insert("prompt".into(), json!("hi")),
    };
    match request::parse(endpoint, &map, defaults, model()) {
        Ok(r) => r.params,
        Err(e) => panic!("{body} was refused: {e:?}"),
    }
}

/// The names of the fields where `a` and `b` differ. Destructuring is exhaustive, and unused
/// bindings are errors here: a field added to `SamplingParams` does not compile until it is
/// compared.
#[deny(unused_variables)]
fn differing_fields(a: &SamplingParams, b: &SamplingParams) -> Vec<&'static str> {
    // One list: the pattern binds every field (so it must name them all) and each is compared.
    macro_rules! differing {
        ($($field:ident),* $(,)?) => {{
            let SamplingParams { $($field),* } = a;
            let mut out = Vec::new();
            $(if *$field != b.$field {
                out.push(stringify!($field));
            })*
            out
        }};
    }
    differing!(
        seed,
        min_keep,
        top_k,
        top_p,
        min_p,
        xtc_probability,
        xtc_threshold,
        typ_p,
        temp,
        dynatemp_range,
        dynatemp_exponent,
        penalty_last_n,
        penalty_repeat,
        penalty_freq,
        penalty_present,
        dry_multiplier,
        dry_base,
        dry_allowed_length,
        dry_penalty_last_n,
        dry_sequence_breakers,
        adaptive_target,
        adaptive_decay,
        mirostat,
        mirostat_tau,
        mirostat_eta,
        top_n_sigma,
        ignore_eos,
        samplers,
        logit_bias,
    )
}

/// The tokens of `text` as the server tokenizes a `logit_bias` text key.
fn text_tokens(text: &str) -> Vec<Token> {
    let t = model().vocab().tokenize(text.as_bytes());
    assert!(!t.is_empty(), "{text:?} tokenizes");
    t
}

#[test]
fn every_sampling_field_reaches_the_params() {
    let breakers = vec!["\n".to_string(), ". ".to_string()];
    let zebra = text_tokens(" zebra");
    let body = json!({
        "seed": 1234,
        "min_keep": 3,
        "top_k": 17,
        "top_p": 0.5,
        "min_p": 0.25,
        "xtc_probability": 0.75,
        "xtc_threshold": 0.125,
        "typical_p": 0.625,
        "temperature": 1.25,
        "dynatemp_range": 0.5,
        "dynatemp_exponent": 1.5,
        "repeat_last_n": 33,
        "repeat_penalty": 1.375,
        "frequency_penalty": 0.25,
        "presence_penalty": -0.5,
        "dry_multiplier": 0.875,
        "dry_base": 2.5,
        "dry_allowed_length": 4,
        "dry_penalty_last_n": 96,
        "dry_sequence_breakers": breakers,
        "adaptive_target": 0.375,
        "adaptive_decay": 0.5,
        "mirostat": 2,
        "mirostat_tau": 3.5,
        "mirostat_eta": 0.25,
        "top_n_sigma": 1.75,
        "ignore_eos": true,
        "samplers": ["penalties", "top_k", "adaptive_p"],
        "logit_bias": {"42": 2.5, " zebra": -1.5},
    });
    let mut logit_bias = vec![(42, 2.5)];
    logit_bias.extend(zebra.iter().map(|&t| (t, -1.5)));
    // Every field written out (no `..Default::default()`): a new field must be listed here.
    let expected = SamplingParams {
        seed: 1234,
        min_keep: 3,
        top_k: 17,
        top_p: 0.5,
        min_p: 0.25,
        xtc_probability: 0.75,
        xtc_threshold: 0.125,
        typ_p: 0.625,
        temp: 1.25,
        dynatemp_range: 0.5,
        dynatemp_exponent: 1.5,
        penalty_last_n: 33,
        penalty_repeat: 1.375,
        penalty_freq: 0.25,
        penalty_present: -0.5,
        dry_multiplier: 0.875,
        dry_base: 2.5,
        dry_allowed_length: 4,
        dry_penalty_last_n: 96,
        dry_sequence_breakers: breakers,
        adaptive_target: 0.375,
        adaptive_decay: 0.5,
        mirostat: MirostatMode::V2,
        mirostat_tau: 3.5,
        mirostat_eta: 0.25,
        top_n_sigma: 1.75,
        ignore_eos: true,
        samplers: vec![SamplerType::Penalties, SamplerType::TopK, SamplerType::AdaptiveP],
        logit_bias,
    };
    let defaults = SamplingParams::default();
    // Each expected value differs from the default, so each equality below says something.
    let changed = differing_fields(&expected, &defaults);
    assert_eq!(changed.len(), 29, "every field is set to a non-default value; changed: {changed:?}");
    for endpoint in [Endpoint::Chat, Endpoint::Completions] {
        let got = parse_with(endpoint, body.clone(), &defaults);
        assert_eq!(differing_fields(&got, &expected), Vec::<&str>::new(), "{endpoint:?}: {got:#?}");
    }
}

/// One request field (under one of its names) and what it must set.
struct FieldCase {
    body: Value,
    expect: fn(&mut SamplingParams),
    /// The params fields it changes.
    changes: &'static [&'static str],
}

fn case(body: Value, changes: &'static [&'static str], expect: fn(&mut SamplingParams)) -> FieldCase {
    FieldCase { body, expect, changes }
}

#[test]
fn each_name_sets_only_its_field() {
    let cases = vec![
        // OpenAI's names
        case(json!({"temperature": 0.0}), &["temp"], |p| p.temp = 0.0),
        case(json!({"temperature": 2}), &["temp"], |p| p.temp = 2.0),
        case(json!({"top_p": 0.25}), &["top_p"], |p| p.top_p = 0.25),
        case(json!({"presence_penalty": 1.5}), &["penalty_present"], |p| p.penalty_present = 1.5),
        case(json!({"frequency_penalty": -2}), &["penalty_freq"], |p| p.penalty_freq = -2.0),
        case(json!({"seed": 0}), &["seed"], |p| p.seed = 0),
        case(json!({"seed": 4294967294u32}), &["seed"], |p| p.seed = 4294967294),
        case(json!({"logit_bias": {"7": -100}}), &["logit_bias"], |p| p.logit_bias = vec![(7, -100.0)]),
        // llama-server's names
        case(json!({"top_k": 0}), &["top_k"], |p| p.top_k = 0),
        case(json!({"top_k": 5.0}), &["top_k"], |p| p.top_k = 5),
        case(json!({"min_p": 0.0}), &["min_p"], |p| p.min_p = 0.0),
        case(json!({"typical_p": 0.5}), &["typ_p"], |p| p.typ_p = 0.5),
        case(json!({"repeat_penalty": 1.1}), &["penalty_repeat"], |p| p.penalty_repeat = 1.1),
        case(json!({"repeat_last_n": 0}), &["penalty_last_n"], |p| p.penalty_last_n = 0),
        case(json!({"dry_multiplier": 0.8}), &["dry_multiplier"], |p| p.dry_multiplier = 0.8),
        case(json!({"dry_base": 1.5}), &["dry_base"], |p| p.dry_base = 1.5),
        case(json!({"dry_allowed_length": 3}), &["dry_allowed_length"], |p| p.dry_allowed_length = 3),
        case(json!({"dry_penalty_last_n": 0}), &["dry_penalty_last_n"], |p| p.dry_penalty_last_n = 0),
        case(json!({"dry_sequence_breakers": ["x"]}), &["dry_sequence_breakers"], |p| {
            p.dry_sequence_breakers = vec!["x".into()]
        }),
        case(json!({"xtc_probability": 1}), &["xtc_probability"], |p| p.xtc_probability = 1.0),
        case(json!({"xtc_threshold": 0.3}), &["xtc_threshold"], |p| p.xtc_threshold = 0.3),
        case(json!({"mirostat": 1}), &["mirostat"], |p| p.mirostat = MirostatMode::V1),
        case(json!({"mirostat": 2}), &["mirostat"], |p| p.mirostat = MirostatMode::V2),
        case(json!({"mirostat_tau": 2.0}), &["mirostat_tau"], |p| p.mirostat_tau = 2.0),
        case(json!({"mirostat_eta": 0.5}), &["mirostat_eta"], |p| p.mirostat_eta = 0.5),
        case(json!({"top_n_sigma": 2.0}), &["top_n_sigma"], |p| p.top_n_sigma = 2.0),
        case(json!({"dynatemp_range": 0.25}), &["dynatemp_range"], |p| p.dynatemp_range = 0.25),
        case(json!({"dynatemp_exponent": 2}), &["dynatemp_exponent"], |p| p.dynatemp_exponent = 2.0),
        case(json!({"adaptive_target": 0.5}), &["adaptive_target"], |p| p.adaptive_target = 0.5),
        case(json!({"adaptive_decay": 0.0}), &["adaptive_decay"], |p| p.adaptive_decay = 0.0),
        case(json!({"min_keep": 1}), &["min_keep"], |p| p.min_keep = 1),
        case(json!({"ignore_eos": true}), &["ignore_eos"], |p| p.ignore_eos = true),
        case(json!({"samplers": ["top-k", "temp", "min_p"]}), &["samplers"], |p| {
            p.samplers = vec![SamplerType::TopK, SamplerType::Temperature, SamplerType::MinP]
        }),
        case(json!({"samplers": "kyt"}), &["samplers"], |p| {
            p.samplers = vec![SamplerType::TopK, SamplerType::TypicalP, SamplerType::Temperature]
        }),
        case(json!({"logit_bias": [[9, false], [10, 1.5]]}), &["logit_bias"], |p| {
            p.logit_bias = vec![(9, f32::NEG_INFINITY), (10, 1.5)]
        }),
        case(json!({"logit_bias": [["11", -3]]}), &["logit_bias"], |p| p.logit_bias = vec![(11, -3.0)]),
        // vLLM's name for the repeat penalty; llama-server's wins when both are sent
        case(json!({"repetition_penalty": 1.2}), &["penalty_repeat"], |p| p.penalty_repeat = 1.2),
        case(json!({"repeat_penalty": 1.3, "repetition_penalty": 1.2}), &["penalty_repeat"], |p| {
            p.penalty_repeat = 1.3
        }),
        // null is "absent"; seed -1 is "random"
        case(json!({"temperature": null, "top_k": null, "logit_bias": null}), &[], |_| {}),
        case(json!({"seed": -1}), &["seed"], |p| p.seed = DEFAULT_SEED),
    ];
    // Over defaults that differ from llama.cpp's, so "absent keeps the server's default" is
    // visible (and the seed case above changes a seed that is not already random).
    let defaults = SamplingParams { seed: 99, temp: 0.3, top_k: 7, ..SamplingParams::default() };
    for c in &cases {
        let mut expected = defaults.clone();
        (c.expect)(&mut expected);
        assert_eq!(differing_fields(&expected, &defaults), c.changes, "the case {} itself", c.body);
        for endpoint in [Endpoint::Chat, Endpoint::Completions] {
            let got = parse_with(endpoint, c.body.clone(), &defaults);
            assert_eq!(differing_fields(&got, &expected), Vec::<&str>::new(), "{endpoint:?} {}: {got:#?}", c.body);
        }
    }
}

/// Every field of nucleus-sampler's table, under each of its request names, on both routes,
/// sets what the table's own setter sets (a value inside the field's request range, other than
/// the default), and nothing else.
#[test]
fn every_table_field_round_trips_through_the_body() {
    let defaults = SamplingParams::default();
    for f in fields::FIELDS {
        let mut want = defaults.clone();
        let value = match f.kind {
            Kind::Float { default, set, .. } => {
                let x = if default == 0.5 { 0.25 } else { 0.5 };
                set(&mut want, x);
                json!(x)
            }
            Kind::Int { default, set, .. } => {
                let x = if default == 1 { 2 } else { 1 };
                set(&mut want, x).unwrap();
                json!(x)
            }
            Kind::Bool { default, set, .. } => {
                set(&mut want, !default);
                json!(!default)
            }
            Kind::Breakers => {
                want.dry_sequence_breakers = vec!["x".into()];
                json!(["x"])
            }
            Kind::Samplers => {
                want.samplers = vec![SamplerType::TopK];
                json!(["top_k"])
            }
            Kind::LogitBias => {
                want.logit_bias = vec![(1, 2.0)];
                json!({"1": 2.0})
            }
        };
        assert_eq!(differing_fields(&want, &defaults), [f.name], "the case of {} itself", f.name);
        for name in f.request {
            for endpoint in [Endpoint::Chat, Endpoint::Completions] {
                let got = parse_with(endpoint, json!({ *name: value.clone() }), &defaults);
                assert_eq!(differing_fields(&got, &want), Vec::<&str>::new(), "{endpoint:?} {name}: {got:#?}");
            }
        }
    }
}

#[test]
fn logit_bias_text_keys_bias_each_of_their_tokens() {
    let defaults = SamplingParams::default();
    let t = text_tokens(" unbelievable");
    assert!(t.len() > 1, "a key of several tokens: {t:?}");
    let got = parse_with(Endpoint::Chat, json!({"logit_bias": {" unbelievable": 4}}), &defaults);
    assert_eq!(got.logit_bias, t.iter().map(|&x| (x, 4.0)).collect::<Vec<_>>());
    let got = parse_with(Endpoint::Completions, json!({"logit_bias": [[" unbelievable", false]]}), &defaults);
    assert_eq!(got.logit_bias, t.iter().map(|&x| (x, f32::NEG_INFINITY)).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------------
// End to end: the server against the runtime's `generate`.

/// Tokens per answer: enough for penalties and DRY to meet repeats, few enough to stay fast.
const MAX_TOKENS: usize = 8;
/// A prompt that repeats itself, so repetition penalties and DRY bite from the first token.
const PROMPT: &str = "red green blue red green blue red green blue red green";
/// The seed every end-to-end request carries (except the seed case).
const SEED: u32 = 7;

/// A request field in JSON and what it sets in the reference parameters.
type Field = (&'static str, Value, fn(&mut SamplingParams));

/// `field` is proven to matter in the context of `context`: the reference with both differs
/// from the reference with `context` alone.
struct Effect {
    context: Vec<Field>,
    field: Field,
}

fn field(name: &'static str, value: Value, set: fn(&mut SamplingParams)) -> Field {
    (name, value, set)
}

fn effect(context: Vec<Field>, field: Field) -> Effect {
    Effect { context, field }
}

/// The chat message of the chat-route requests.
const MESSAGE: &str = "Repeat after me: red green blue red green blue red green blue";

/// The request body (for `/v1/completions`, or `/v1/chat/completions` when `chat`) and the
/// reference parameters of a set of fields.
fn request_of(chat: bool, fields: &[&Field]) -> (Value, SamplingParams) {
    let mut body = match chat {
        false => json!({"prompt": PROMPT, "max_tokens": MAX_TOKENS, "seed": SEED}),
        true => json!({"messages": [{"role": "user", "content": MESSAGE}], "max_tokens": MAX_TOKENS, "seed": SEED}),
    };
    let mut params = SamplingParams { seed: SEED, ..SamplingParams::default() };
    for (name, value, set) in fields {
        body[*name] = value.clone();
        set(&mut params);
    }
    (body, params)
}

/// (text, completion tokens) of the runtime generating with `params` from [`PROMPT`], or from
/// [`MESSAGE`] through the chat template when `chat`, in a context shaped like the server's (four
/// streams, one thread).
fn reference(chat: bool, params: &SamplingParams) -> (String, usize) {
    static CTX: OnceLock<Mutex<Box<dyn nucleus_runtime::Context>>> = OnceLock::new();
    let m = model();
    let ctx = CTX.get_or_init(|| {
        let opts = ContextOptions {
            n_ctx: Some(4 * 1024),
            n_seq_max: 4,
            threads: Some(1),
            kv_unified: false,
            ..Default::default()
        };
        Mutex::new(m.new_context(&opts).expect("context"))
    });
    let mut ctx = ctx.lock().unwrap();
    let prompt = match chat {
        false => Prompt::Text(PROMPT.into()),
        true => Prompt::Chat(vec![ChatMessage::new("user", MESSAGE)]),
    };
    let prompt = prompt_tokens(m, &prompt).unwrap();
    let opts = SequenceOptions { max_tokens: Some(MAX_TOKENS), ..Default::default() };
    let mut text = String::new();
    let stats = generate(m, ctx.as_mut(), &prompt, params, &opts, None, &mut |ev| {
        text.push_str(ev.text);
        ControlFlow::Continue(())
    })
    .expect("reference generation");
    (text, stats.generated_tokens)
}

/// (text, completion tokens) of the server's answer to `body`: `/v1/chat/completions` for a
/// body with messages, else `/v1/completions`.
fn ask(addr: SocketAddr, body: &Value) -> (String, usize) {
    let chat = body.get("messages").is_some();
    let path = if chat { "/v1/chat/completions" } else { "/v1/completions" };
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, json_body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{body}: {text}");
    let v: Value = serde_json::from_str(json_body).expect("a JSON body");
    let text = if chat { &v["choices"][0]["message"]["content"] } else { &v["choices"][0]["text"] };
    let out = text.as_str().expect("text").to_string();
    (out, v["usage"]["completion_tokens"].as_u64().expect("usage") as usize)
}

/// Effects on the chat route (same reader, but its own prompt path).
fn chat_effects() -> Vec<Effect> {
    vec![
        // Below 1 it favours the prompt's tokens (above it, this answer repeats none of them).
        effect(Vec::new(), field("repeat_penalty", json!(0.5), |p| p.penalty_repeat = 0.5)),
        effect(Vec::new(), field("mirostat", json!(2), |p| p.mirostat = MirostatMode::V2)),
        effect(Vec::new(), field("min_p", json!(0.5), |p| p.min_p = 0.5)),
        effect(Vec::new(), field("xtc_probability", json!(1.0), |p| p.xtc_probability = 1.0)),
    ]
}

fn effects() -> Vec<Effect> {
    let none = Vec::new;
    let dry: Field = field("dry_multiplier", json!(2.0), |p| p.dry_multiplier = 2.0);
    let mirostat: Field = field("mirostat", json!(2), |p| p.mirostat = MirostatMode::V2);
    let adaptive: Field = field("samplers", json!(["top_k", "adaptive_p"]), |p| {
        p.samplers = vec![SamplerType::TopK, SamplerType::AdaptiveP]
    });
    vec![
        effect(none(), field("seed", json!(8), |p| p.seed = 8)),
        effect(none(), field("temperature", json!(0), |p| p.temp = 0.0)),
        effect(none(), field("top_k", json!(1), |p| p.top_k = 1)),
        effect(none(), field("top_p", json!(0.05), |p| p.top_p = 0.05)),
        effect(none(), field("min_p", json!(0.6), |p| p.min_p = 0.6)),
        effect(none(), field("typical_p", json!(0.1), |p| p.typ_p = 0.1)),
        effect(none(), field("presence_penalty", json!(2.0), |p| p.penalty_present = 2.0)),
        effect(none(), field("frequency_penalty", json!(2.0), |p| p.penalty_freq = 2.0)),
        effect(none(), field("repeat_penalty", json!(2.0), |p| p.penalty_repeat = 2.0)),
        effect(none(), field("repetition_penalty", json!(1.7), |p| p.penalty_repeat = 1.7)),
        effect(
            vec![field("repeat_penalty", json!(2.0), |p| p.penalty_repeat = 2.0)],
            field("repeat_last_n", json!(0), |p| p.penalty_last_n = 0),
        ),
        effect(none(), dry.clone()),
        effect(vec![dry.clone()], field("dry_base", json!(0.5), |p| p.dry_base = 0.5)),
        effect(vec![dry.clone()], field("dry_allowed_length", json!(20), |p| p.dry_allowed_length = 20)),
        effect(vec![dry.clone()], field("dry_penalty_last_n", json!(0), |p| p.dry_penalty_last_n = 0)),
        effect(
            vec![dry],
            field("dry_sequence_breakers", json!([" green"]), |p| p.dry_sequence_breakers = vec![" green".into()]),
        ),
        effect(none(), field("xtc_probability", json!(1.0), |p| p.xtc_probability = 1.0)),
        effect(
            vec![field("xtc_probability", json!(1.0), |p| p.xtc_probability = 1.0)],
            field("xtc_threshold", json!(0.9), |p| p.xtc_threshold = 0.9),
        ),
        effect(none(), mirostat.clone()),
        effect(none(), field("mirostat", json!(1), |p| p.mirostat = MirostatMode::V1)),
        effect(vec![mirostat.clone()], field("mirostat_tau", json!(0.5), |p| p.mirostat_tau = 0.5)),
        effect(vec![mirostat], field("mirostat_eta", json!(1.0), |p| p.mirostat_eta = 1.0)),
        effect(none(), field("top_n_sigma", json!(0.3), |p| p.top_n_sigma = 0.3)),
        effect(none(), field("dynatemp_range", json!(0.8), |p| p.dynatemp_range = 0.8)),
        effect(
            vec![field("dynatemp_range", json!(0.8), |p| p.dynatemp_range = 0.8)],
            field("dynatemp_exponent", json!(4.0), |p| p.dynatemp_exponent = 4.0),
        ),
        effect(none(), adaptive.clone()),
        effect(vec![adaptive.clone()], field("adaptive_target", json!(0.3), |p| p.adaptive_target = 0.3)),
        effect(
            vec![adaptive, field("adaptive_target", json!(0.3), |p| p.adaptive_target = 0.3)],
            field("adaptive_decay", json!(0.0), |p| p.adaptive_decay = 0.0),
        ),
        effect(vec![field("min_p", json!(1.0), |p| p.min_p = 1.0)], field("min_keep", json!(30), |p| p.min_keep = 30)),
        effect(
            none(),
            field("samplers", json!("kt"), |p| p.samplers = vec![SamplerType::TopK, SamplerType::Temperature]),
        ),
        effect(none(), field("logit_bias", json!({"1000": 100}), |p| p.logit_bias = vec![(1000, 100.0)])),
        effect(
            vec![field("temperature", json!(0), |p| p.temp = 0.0)],
            field("logit_bias", json!([[" green", false]]), |p| {
                p.logit_bias = text_tokens(" green").into_iter().map(|t| (t, f32::NEG_INFINITY)).collect()
            }),
        ),
        effect(
            vec![field("logit_bias", json!({"2": 100}), |p| p.logit_bias = vec![(2, 100.0)])],
            field("ignore_eos", json!(true), |p| p.ignore_eos = true),
        ),
    ]
}

#[test]
fn server_answers_equal_the_runtime_and_each_field_changes_them() {
    let server = TestServer::start(config(4, 64));
    let addr = server.server.addr();
    // Every distinct request: each effect with and without its field.
    let mut requests: Vec<(Value, SamplingParams)> = Vec::new();
    let mut pairs = Vec::new();
    let effects: Vec<(bool, Effect)> =
        effects().into_iter().map(|e| (false, e)).chain(chat_effects().into_iter().map(|e| (true, e))).collect();
    for (chat, e) in &effects {
        let context: Vec<&Field> = e.context.iter().collect();
        let with: Vec<&Field> = context.iter().copied().chain([&e.field]).collect();
        let mut index = |fields: &[&Field]| {
            let r = request_of(*chat, fields);
            requests.iter().position(|x| x.0 == r.0).unwrap_or_else(|| {
                requests.push(r);
                requests.len() - 1
            })
        };
        pairs.push((e.field.0, index(&with), index(&context)));
    }
    // The server answers (four at a time, as it has four slots) while the reference runs here.
    let bodies: Arc<Vec<Value>> = Arc::new(requests.iter().map(|r| r.0.clone()).collect());
    let next = Arc::new(Mutex::new(0usize));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (bodies, next) = (bodies.clone(), next.clone());
            std::thread::spawn(move || {
                let mut out = Vec::new();
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(b) = bodies.get(i) else { return out };
                    out.push((i, ask(addr, b)));
                }
            })
        })
        .collect();
    let refs: Vec<(String, usize)> = requests.iter().map(|r| reference(r.0.get("messages").is_some(), &r.1)).collect();
    let mut served = vec![None; requests.len()];
    for w in workers {
        for (i, answer) in w.join().expect("a request thread") {
            served[i] = Some(answer);
        }
    }
    let mut failures = Vec::new();
    for (i, (body, _)) in requests.iter().enumerate() {
        let got = served[i].as_ref().expect("answered");
        if *got != refs[i] {
            failures.push(format!("{body}: server {got:?}, runtime {:?}", refs[i]));
        }
    }
    for (name, with, without) in pairs {
        if refs[with] == refs[without] {
            failures.push(format!(
                "{name} changes nothing here: {} and {} both give {:?}",
                requests[with].0, requests[without].0, refs[with]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} checks failed:\n{}",
        failures.len(),
        requests.len() + effects.len(),
        failures.join("\n")
    );
    server.server.shutdown();
    server.server.wait().unwrap();
}
