//! `GET /props`: the server's properties under llama-server's field names — the defaults a
//! request starts from (the command line's sampling flags), each slot's context, the slots, the
//! model and its chat template. Only what Nucleus can say truthfully is filled: no speculative
//! decoding, LoRA or context shifting fields (it has none of them).

use nucleus_runtime::ReasoningFormat;
use nucleus_sampler::{MirostatMode, SamplingParams};
use schemars::JsonSchema;
use serde::Serialize;

use crate::speculative::SpecDefaults;
use crate::state::{Ready, ServerConfig};

/// The answer of `GET /props`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "ServerProps")]
pub struct Props {
    /// What a request gets for every field it does not send, and each slot's context.
    pub default_generation_settings: GenerationSettings,
    /// Sequences decoded side by side (`--parallel`).
    pub total_slots: usize,
    /// The model id requests name (`--alias`, or the model's short name).
    pub model_alias: String,
    /// The model file (empty when the server was not started from one).
    pub model_path: String,
    /// Input kinds beyond text: none.
    pub modalities: PropsModalities,
    /// `GET /slots` is served: no.
    pub endpoint_slots: bool,
    /// `POST /props` is served: no.
    pub endpoint_props: bool,
    /// `GET /metrics` is served: yes.
    pub endpoint_metrics: bool,
    /// A web page is served at `/` (the playground): yes.
    pub webui: bool,
    /// The chat template in use (`--chat-template`, the model's, or the built-in one).
    pub chat_template: String,
    /// The text of the model's BOS token (empty if none).
    pub bos_token: String,
    /// The text of the model's EOS token (empty if none).
    pub eos_token: String,
    /// `nucleus <version>`.
    pub build_info: String,
    /// Always false (the server does not unload the model when idle).
    pub is_sleeping: bool,
}

/// `default_generation_settings`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "PropsGenerationSettings")]
pub struct GenerationSettings {
    /// Tokens each request may fill (prompt and answer): the context of one slot.
    pub n_ctx: usize,
    /// The sampling defaults, under llama-server's request field names.
    pub params: PropsParams,
}

// Every field of `nucleus_sampler::fields` is here under its main request name (a test checks),
// beside the rest of llama-server's defaults. (Not in the doc comment: that is the schema's
// published description.)
/// The sampling defaults (llama-server's `params` object).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PropsParams {
    /// 4294967295: a random seed per request.
    pub seed: u32,
    pub temperature: f32,
    pub dynatemp_range: f32,
    pub dynatemp_exponent: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub top_n_sigma: f32,
    pub xtc_probability: f32,
    pub xtc_threshold: f32,
    pub typical_p: f32,
    pub repeat_last_n: i32,
    pub repeat_penalty: f32,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    pub dry_multiplier: f32,
    pub dry_base: f32,
    pub dry_allowed_length: i32,
    pub dry_penalty_last_n: i32,
    pub dry_sequence_breakers: Vec<String>,
    pub adaptive_target: f32,
    pub adaptive_decay: f32,
    /// 0 off, 1 or 2.
    pub mirostat: i32,
    pub mirostat_tau: f32,
    pub mirostat_eta: f32,
    /// No stop strings by default.
    pub stop: Vec<String>,
    /// -1: until the end of generation or of the slot's context.
    pub max_tokens: i64,
    /// llama-server's name for `max_tokens`.
    pub n_predict: i64,
    pub ignore_eos: bool,
    /// Answers are whole unless `stream: true`.
    pub stream: bool,
    pub n_probs: usize,
    pub min_keep: usize,
    pub post_sampling_probs: bool,
    /// `[{"bias", "token"}]`.
    pub logit_bias: Vec<PropsLogitBias>,
    /// The sampler chain's order, by llama.cpp's names.
    pub samplers: Vec<&'static str>,
    /// `--reasoning-format`: `none`, `deepseek`, `harmony` or `auto`.
    pub reasoning_format: &'static str,
    /// `--draft-max` (llama-server's name).
    #[serde(rename = "speculative.n_max")]
    pub speculative_n_max: usize,
    /// `--draft-min` (llama-server's name).
    #[serde(rename = "speculative.n_min")]
    pub speculative_n_min: usize,
    /// `--spec-type`: `none`, `ngram` or `draft` (this server's).
    #[serde(rename = "speculative.type")]
    pub speculative_type: &'static str,
}

/// One default logit bias.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PropsLogitBias {
    pub bias: f32,
    pub token: i32,
}

/// `modalities`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PropsModalities {
    /// Images: no.
    pub vision: bool,
    /// Audio: no.
    pub audio: bool,
}

/// The properties of the server `config` with the model loaded (`ready`).
pub fn props(config: &ServerConfig, ready: &Ready) -> Props {
    let tok = ready.model.tokenizer();
    let special = tok.special();
    Props {
        default_generation_settings: GenerationSettings {
            n_ctx: ready.engine.slot_ctx(),
            params: params(&config.defaults, config.reasoning.format, &config.speculative),
        },
        total_slots: ready.engine.parallel(),
        model_alias: config.model_id.clone(),
        model_path: config.model_path.clone().unwrap_or_default(),
        modalities: PropsModalities { vision: false, audio: false },
        endpoint_slots: false,
        endpoint_props: false,
        endpoint_metrics: true,
        webui: true,
        chat_template: ready.template.source().to_string(),
        bos_token: special.bos_text.clone(),
        eos_token: special.eos_text.clone(),
        build_info: format!("nucleus {}", env!("CARGO_PKG_VERSION")),
        is_sleeping: false,
    }
}

/// `params` from the server's sampling defaults.
fn params(d: &SamplingParams, reasoning: ReasoningFormat, spec: &SpecDefaults) -> PropsParams {
    PropsParams {
        seed: d.seed,
        temperature: d.temp,
        dynatemp_range: d.dynatemp_range,
        dynatemp_exponent: d.dynatemp_exponent,
        top_k: d.top_k,
        top_p: d.top_p,
        min_p: d.min_p,
        top_n_sigma: d.top_n_sigma,
        xtc_probability: d.xtc_probability,
        xtc_threshold: d.xtc_threshold,
        typical_p: d.typ_p,
        repeat_last_n: d.penalty_last_n,
        repeat_penalty: d.penalty_repeat,
        presence_penalty: d.penalty_present,
        frequency_penalty: d.penalty_freq,
        dry_multiplier: d.dry_multiplier,
        dry_base: d.dry_base,
        dry_allowed_length: d.dry_allowed_length,
        dry_penalty_last_n: d.dry_penalty_last_n,
        dry_sequence_breakers: d.dry_sequence_breakers.clone(),
        adaptive_target: d.adaptive_target,
        adaptive_decay: d.adaptive_decay,
        mirostat: match d.mirostat {
            MirostatMode::Off => 0,
            MirostatMode::V1 => 1,
            MirostatMode::V2 => 2,
        },
        mirostat_tau: d.mirostat_tau,
        mirostat_eta: d.mirostat_eta,
        stop: Vec::new(),
        max_tokens: -1,
        n_predict: -1,
        ignore_eos: d.ignore_eos,
        stream: false,
        n_probs: 0,
        min_keep: d.min_keep,
        post_sampling_probs: false,
        logit_bias: d.logit_bias.iter().map(|&(token, bias)| PropsLogitBias { bias, token }).collect(),
        samplers: d.samplers.iter().map(|s| s.name()).collect(),
        reasoning_format: reasoning.as_str(),
        speculative_n_max: spec.opts.draft_max,
        speculative_n_min: spec.opts.draft_min,
        speculative_type: spec.kind.as_str(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleus_sampler::fields::{self, Kind};
    use nucleus_sampler::SamplerType;
    use serde_json::{json, Value};

    /// Each field of the table is in `params` under its main request name, with the value the
    /// table reads off the defaults (over defaults that are not llama.cpp's, so a value cannot
    /// come from anywhere else).
    #[test]
    fn params_hold_every_table_field() {
        let d = SamplingParams {
            seed: 5,
            top_k: 3,
            mirostat: MirostatMode::V2,
            logit_bias: vec![(2, -1.5)],
            samplers: vec![SamplerType::TopK],
            ..SamplingParams::default()
        };
        let v = serde_json::to_value(params(&d, ReasoningFormat::Auto, &SpecDefaults::default())).unwrap();
        for f in fields::FIELDS {
            let want = match f.kind {
                Kind::Float { get, .. } => json!(get(&d)),
                Kind::Int { get, .. } => json!(get(&d)),
                Kind::Bool { get, .. } => json!(get(&d)),
                Kind::Breakers => json!(d.dry_sequence_breakers),
                Kind::Samplers => json!(["top_k"]),
                Kind::LogitBias => json!([{"bias": -1.5, "token": 2}]),
            };
            assert_eq!(v.get(f.request_name()), Some(&want), "{}", f.name);
        }
        assert_eq!(v["seed"], Value::from(5));
    }
}
