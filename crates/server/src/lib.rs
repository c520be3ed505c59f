//! # nucleus-server
//!
//! An OpenAI-compatible HTTP server (chat and legacy completions, streamed or not, with
//! llama.cpp's and vLLM's sampling extras) over one llama.cpp context shared by continuous
//! batching; every token is chosen by nucleus-sampler.
//!
//! ```no_run
//! use std::sync::Arc;
//! use nucleus_runtime::{LlamaCppModel, Model};
//! use nucleus_server::{Server, ServerConfig};
//!
//! let config = ServerConfig { port: 0, model_id: "smollm2".into(), ..Default::default() };
//! let server = Server::start(config, Box::new(|| {
//!     let m = LlamaCppModel::load("model.gguf".as_ref()).map_err(|e| e.to_string())?;
//!     Ok(Arc::new(m) as Arc<dyn Model>)
//! }))?;
//! server.wait_ready()?;
//! println!("listening on http://{}", server.addr());
//! server.shutdown();
//! server.wait()?;
//! # Ok::<(), String>(())
//! ```
//!
//! * [`routes`] (HTTP surface) → [`request`] / [`sampling_fields`] / [`constraint`] (checked
//!   fields) → [`prepare`] (tokens, sequences) → [`engine`] + [`batching`] (the engine thread)
//!   → [`answer`] (each choice's text read into protocol-neutral pieces: text, tool calls) →
//!   [`chunks`] (the OpenAI stream as values) → [`streaming`] (written as SSE) or [`collect`]
//!   (folded into the whole response by [`assemble`], as the SDKs fold a stream), in
//!   [`openai_types`] shapes, via [`render`].
//! * [`errors`]: OpenAI-shaped errors; [`metrics`]: Prometheus counters; [`state`]: settings
//!   and shared state; [`shutdown`]: signals.

pub mod answer;
pub mod anthropic;
pub mod assemble;
pub mod batching;
pub mod body;
pub mod chunks;
pub mod collect;
pub mod constraint;
pub mod engine;
pub mod errors;
pub mod fields;
pub mod metrics;
pub mod openai_types;
pub mod openapi;
pub mod playground;
pub mod prepare;
pub(crate) mod prompt_cache;
pub mod reasoning;
pub mod render;
pub mod request;
pub mod responses;
pub mod routes;
pub mod sampling_fields;
pub mod shutdown;
pub mod speculative;
pub mod sse;
pub mod state;
pub mod step_trace;
pub mod streaming;
pub mod tools;
pub mod utility;

use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use nucleus_runtime::model::DEFAULT_N_CTX;
use nucleus_runtime::{ContextOptions, Model};
use tokio::sync::Notify;

pub use engine::EngineHandle;
pub use errors::ApiError;
pub use metrics::Metrics;
pub use state::{AppState, ServerConfig};

/// Loads the model (on a worker thread, while `/health` answers 503).
pub type ModelLoader = Box<dyn FnOnce() -> Result<Arc<dyn Model>, String> + Send>;

/// A running server.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<Notify>,
    ready: Mutex<mpsc::Receiver<Result<(), String>>>,
    thread: Mutex<Option<JoinHandle<Result<(), String>>>>,
    state: Arc<AppState>,
}

impl Server {
    /// Binds the address (so [`Server::addr`] is known at once), then serves on its own
    /// threads while the model loads in the background.
    pub fn start(config: ServerConfig, load: ModelLoader) -> Result<Server, String> {
        Server::start_with_draft(config, load, None)
    }

    /// Like [`Server::start`], with a draft model (`--model-draft`) for speculative decoding
    /// (`--spec-type draft`, or a request's `speculative.type: draft`). Its vocabulary must be
    /// the model's: loading fails with a message saying so otherwise.
    pub fn start_with_draft(
        config: ServerConfig,
        load: ModelLoader,
        draft: Option<ModelLoader>,
    ) -> Result<Server, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("nucleus-http")
            .enable_all()
            .build()
            .map_err(|e| format!("could not start the async runtime: {e}"))?;
        let listener = rt
            .block_on(tokio::net::TcpListener::bind((config.host.as_str(), config.port)))
            .map_err(|e| format!("could not listen on {}:{}: {e}", config.host, config.port))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let state = Arc::new(AppState {
            metrics: Arc::new(Metrics::new(config.parallel.max(1))),
            responses: responses::store::ResponseStore::new(config.responses_store),
            ngram_cache: (config.spec_ngram_cache > 0).then(|| {
                Arc::new(nucleus_runtime::NgramCache::new(config.speculative.opts.min_match, config.spec_ngram_cache))
            }),
            config,
            ready: OnceLock::new(),
            load_error: OnceLock::new(),
        });
        let stop = Arc::new(Notify::new());
        let (ready_tx, ready_rx) = mpsc::channel();
        let (st, sp) = (state.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("nucleus-server".into())
            .spawn(move || rt.block_on(serve(listener, st, load, draft, sp, ready_tx)))
            .map_err(|e| e.to_string())?;
        Ok(Server { addr, stop, ready: Mutex::new(ready_rx), thread: Mutex::new(Some(thread)), state })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The shared state (metrics, configuration).
    pub fn state(&self) -> &Arc<AppState> {
        &self.state
    }

    /// Blocks until the model is loaded (or failed to load).
    pub fn wait_ready(&self) -> Result<(), String> {
        if self.state.ready.get().is_some() {
            return Ok(());
        }
        let rx = engine::lock(&self.ready);
        match rx.recv() {
            Ok(r) => r,
            Err(_) => self.state.load_error.get().map_or(Ok(()), |e| Err(e.clone())),
        }
    }

    /// Starts a graceful shutdown: no new requests; running ones finish within the grace
    /// period or end with an error.
    pub fn shutdown(&self) {
        self.stop.notify_one();
    }

    /// Waits until the server has stopped.
    pub fn wait(&self) -> Result<(), String> {
        let t = engine::lock(&self.thread).take();
        match t {
            Some(t) => t.join().map_err(|_| "the server thread panicked".to_string())?,
            None => Ok(()),
        }
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    load: ModelLoader,
    draft: Option<ModelLoader>,
    stop: Arc<Notify>,
    ready_tx: mpsc::Sender<Result<(), String>>,
) -> Result<(), String> {
    let st = state.clone();
    let loading = tokio::task::spawn_blocking(move || {
        let r = load_engine(&st, load, draft);
        if let Err(e) = &r {
            let _ = st.load_error.set(e.clone());
        }
        let _ = ready_tx.send(r);
    });
    let app = routes::router(state.clone());
    let st = state.clone();
    let grace = state.config.shutdown_grace;
    let on_stop = async move {
        shutdown::requested(stop, st.config.handle_signals).await;
        if let Some(r) = st.ready.get() {
            r.engine.drain(grace);
        }
    };
    let served = axum::serve(listener, app).with_graceful_shutdown(on_stop).await;
    let _ = loading.await;
    if let Some(r) = state.ready.get() {
        r.engine.drain(Duration::ZERO);
        tokio::task::block_in_place(|| r.engine.join());
    }
    served.map_err(|e| format!("server error: {e}"))
}

/// Loads the model and starts the engine over a context of `--parallel` sequences.
fn load_engine(state: &AppState, load: ModelLoader, draft: Option<ModelLoader>) -> Result<(), String> {
    let model = load()?;
    let c = &state.config;
    let parallel = c.parallel.max(1);
    let per_slot = DEFAULT_N_CTX.min(model.n_ctx_train().max(1));
    let n_ctx = c.ctx_size.unwrap_or(per_slot * parallel);
    if n_ctx / parallel < 2 {
        return Err(format!("--ctx-size {n_ctx} leaves fewer than 2 tokens for each of the {parallel} slots"));
    }
    // One KV stream per slot: a sequence's logits never depend on its neighbours.
    let opts = ContextOptions {
        n_ctx: Some(n_ctx),
        n_seq_max: parallel,
        threads: c.threads,
        kv_unified: false,
        ..Default::default()
    };
    let ctx = model.new_context(&opts).map_err(|e| e.to_string())?;
    let draft = match draft {
        Some(load_draft) => {
            let dm = load_draft().map_err(|e| format!("the draft model failed to load: {e}"))?;
            nucleus_runtime::check_vocabulary(model.as_ref(), dm.as_ref()).map_err(|e| e.to_string())?;
            let dctx = dm.new_context(&opts).map_err(|e| format!("the draft model's context: {e}"))?;
            Some(nucleus_runtime::DraftModel::new(dctx))
        }
        None => None,
    };
    let has_draft = draft.is_some();
    let prompt_cache = model.batch_invariant();
    if !prompt_cache {
        eprintln!(
            "nucleus serve: prompt cache off for this model: its logits depend on how tokens are batched (llama.cpp \
             repacked its weights, or GGML_CPU_TILED_MM is on), so a cached prefix would not give the bits of a \
             fresh prefill"
        );
    }
    let engine = EngineHandle::spawn(
        ctx,
        draft,
        &engine::EngineConfig {
            parallel,
            queue: c.queue,
            prefill_chunk: c.prefill_chunk,
            cache_ram: c.cache_ram,
            prompt_cache,
        },
        state.metrics.clone(),
    )
    .map_err(|e| format!("could not start the engine thread: {e}"))?;
    let fingerprint = format!("nucleus-{}-{}", env!("CARGO_PKG_VERSION"), c.model_id);
    let template = nucleus_runtime::ChatTemplate::for_model_or(model.as_ref(), c.chat_template.as_deref());
    let ready = state::Ready { model, engine, created: openai_types::unix_now(), fingerprint, template, has_draft };
    let _ = state.ready.set(ready);
    Ok(())
}
