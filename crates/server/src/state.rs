//! [`AppState`]: what every handler shares — configuration, metrics, and, once the model has
//! loaded, the [`Ready`] part (model, engine, ids). Before that, handlers answer 503.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use nucleus_runtime::Model;
use nucleus_sampler::SamplingParams;

use crate::engine::EngineHandle;
use crate::errors::ApiError;
use crate::metrics::Metrics;

/// Default prompt tokens per prefill call (the runtime's [`nucleus_runtime::PREFILL_CHUNK`]):
/// while other sequences generate, prompts go in this many tokens at a time between their
/// decode steps. Answers do not depend on it (a token's logits do not depend on its batch).
pub const DEFAULT_PREFILL_CHUNK: usize = nucleus_runtime::PREFILL_CHUNK;

/// Memory the prompt cache may keep by default, in MiB (`--cache-ram`): KV copies of prompts
/// whose slot went to another prompt (SmolLM2-135M: about 23 KB per token, so ~46,000 tokens).
pub const DEFAULT_CACHE_RAM_MIB: usize = 1024;

/// Responses kept by default for `GET /v1/responses/{id}` and `previous_response_id`
/// (`--responses-store`; least recently used dropped first).
pub const DEFAULT_RESPONSES_STORE: usize = 256;

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address to bind (`127.0.0.1` by default).
    pub host: String,
    /// Port (0 picks a free one).
    pub port: u16,
    /// Sequences decoded side by side.
    pub parallel: usize,
    /// Requests that may wait for a slot; more get 429.
    pub queue: usize,
    /// Context tokens for all slots together (`None`: 4096 per slot, at most the model's
    /// training context per slot).
    pub ctx_size: Option<usize>,
    /// CPU threads for llama.cpp (`None`: cores minus one).
    pub threads: Option<usize>,
    /// When set, `/v1/*` and `/metrics` need `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// Largest request body in bytes (413 beyond).
    pub max_body: usize,
    /// Sampling defaults (the command line's flags); requests override them.
    pub defaults: SamplingParams,
    /// The id `/v1/models` reports and requests name.
    pub model_id: String,
    /// The model file, as `GET /props` reports it (`model_path`).
    pub model_path: Option<String>,
    /// Other names requests may use for the model (file name, path).
    pub model_aliases: Vec<String>,
    /// After a shutdown signal, running generations get this long to finish.
    pub shutdown_grace: Duration,
    /// Shut down gracefully on SIGINT / SIGTERM.
    pub handle_signals: bool,
    /// A Jinja chat template used instead of the model's (`--chat-template FILE`).
    pub chat_template: Option<String>,
    /// Prompt tokens per prefill call (the unit prompts are interleaved with decode steps in).
    pub prefill_chunk: usize,
    /// Bytes the prompt cache may keep in memory for prompts whose slot went to another
    /// (`--cache-ram`, 0: none).
    pub cache_ram: usize,
    /// How answers are read for reasoning and how long models may think
    /// (`--reasoning-format`, `--reasoning-budget`, `--reasoning-budget-message`,
    /// `--chat-template-kwargs`).
    pub reasoning: crate::reasoning::ReasoningDefaults,
    /// Responses kept in memory for `/v1/responses` chaining (`--responses-store`, 0: none).
    pub responses_store: usize,
    /// Speculative decoding unless a request says otherwise (`--spec-type`, `--draft-max`,
    /// `--draft-min`, `--spec-ngram-size-n`).
    pub speculative: crate::speculative::SpecDefaults,
    /// Tokens of recent requests (prompt and answer) that n-gram drafts may also draft from
    /// (`--spec-ngram-cache`, 0: none). Off by default: with it, what a request drafts (and its
    /// `usage.speculative`) depends on the requests before it; its answer never does.
    pub spec_ngram_cache: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            host: "127.0.0.1".into(),
            port: 8080,
            parallel: 4,
            queue: 64,
            ctx_size: None,
            threads: None,
            api_key: None,
            max_body: 8 << 20,
            defaults: SamplingParams::default(),
            model_id: "model".into(),
            model_path: None,
            model_aliases: Vec::new(),
            shutdown_grace: Duration::from_secs(30),
            handle_signals: false,
            chat_template: None,
            prefill_chunk: DEFAULT_PREFILL_CHUNK,
            cache_ram: DEFAULT_CACHE_RAM_MIB << 20,
            reasoning: Default::default(),
            responses_store: DEFAULT_RESPONSES_STORE,
            speculative: Default::default(),
            spec_ngram_cache: 0,
        }
    }
}

/// The loaded model and its engine.
pub struct Ready {
    /// The model (tokenizer, template).
    pub model: Arc<dyn Model>,
    /// The batching engine.
    pub engine: EngineHandle,
    /// Unix seconds when loading finished.
    pub created: u64,
    /// `nucleus-<version>-<model id>`.
    pub fingerprint: String,
    /// The chat template (`--chat-template`, else the model's or a built-in one).
    pub template: nucleus_runtime::ChatTemplate,
    /// A draft model was loaded (`--model-draft`).
    pub has_draft: bool,
}

/// Shared by every handler.
pub struct AppState {
    /// Settings.
    pub config: ServerConfig,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Set once the model has loaded.
    pub ready: OnceLock<Ready>,
    /// Set if loading failed.
    pub load_error: OnceLock<String>,
    /// Responses kept for `GET /v1/responses/{id}` and `previous_response_id`.
    pub responses: crate::responses::store::ResponseStore,
    /// The n-gram drafts' cache of recent requests (`ServerConfig::spec_ngram_cache`).
    pub ngram_cache: Option<Arc<nucleus_runtime::NgramCache>>,
}

impl AppState {
    /// The loaded model, or 503.
    pub fn ready(&self) -> Result<&Ready, ApiError> {
        match self.ready.get() {
            Some(r) => Ok(r),
            None => match self.load_error.get() {
                Some(e) => Err(ApiError::unavailable(format!("The model failed to load: {e}"))),
                None => Err(ApiError::unavailable("Loading model")),
            },
        }
    }

    /// Whether `name` names the served model (its id, file name or path; any case).
    pub fn serves(&self, name: &str) -> bool {
        let n = name.trim();
        n.eq_ignore_ascii_case(&self.config.model_id)
            || self.config.model_aliases.iter().any(|a| n.eq_ignore_ascii_case(a))
    }
}
