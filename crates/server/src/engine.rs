//! The engine: one llama.cpp context with `--parallel` sequences, owned by a dedicated thread
//! (contexts are not `Sync`), fed [`Job`]s through a channel and answering with [`Event`]s.
//! [`EngineHandle`] is the HTTP side's view: submit with a bounded queue (full means 429).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nucleus_runtime::{Context, DraftModel, Sequence, SpecStats, StopReason};
use nucleus_sampler::probs::TokenProb;
use nucleus_sampler::Token;
use tokio::sync::mpsc::UnboundedSender;

use crate::batching::Scheduler;
use crate::metrics::Metrics;

/// One sequence of a job: a prompt and the state that generates from it.
pub struct SeqJob {
    /// Index of the choice in the response.
    pub choice: usize,
    /// The prompt's tokens (already accepted into the sequence's sampler history).
    pub prompt: Arc<[Token]>,
    /// Sampler, stop strings, limits.
    pub sequence: Sequence,
    /// Most tokens to generate; 0 evaluates the prompt only.
    pub max_tokens: usize,
    /// Score the prompt (echo with logprobs): each prompt token's log-probability and this many
    /// alternatives.
    pub prompt_logprobs: Option<usize>,
    /// Reuse a slot's cached prefix of this prompt (`cache_prompt`, on by default).
    pub cache_prompt: bool,
}

/// A request's work: one sequence per choice, all admitted together.
pub struct Job {
    /// The sequences.
    pub seqs: Vec<SeqJob>,
    /// Where events go; a closed channel means the client left.
    pub events: UnboundedSender<Event>,
    /// When the request arrived (time to first token counts from here).
    pub received: Instant,
}

/// A generated (or, when scoring, a prompt) token as the engine reports it.
#[derive(Clone, Debug)]
pub struct TokenOut {
    /// The token.
    pub id: Token,
    /// Text released by this token (complete characters, never stop-string text).
    pub text: String,
    /// Its log-probability, when asked for.
    pub logprob: Option<f32>,
    /// Top alternatives, when asked for.
    pub top: Vec<TokenProb>,
    /// An end-of-generation or stop token: no text of its own.
    pub end: bool,
}

/// What the engine tells a request.
#[derive(Clone, Debug)]
pub enum Event {
    /// Every sequence of the job has a slot; tokens follow.
    Started,
    /// A prompt token with its score (echo with logprobs); the first has none.
    PromptToken {
        /// The choice.
        choice: usize,
        /// The token.
        token: TokenOut,
    },
    /// A generated token.
    Token {
        /// The choice.
        choice: usize,
        /// The token.
        token: TokenOut,
    },
    /// A choice is done.
    Finished {
        /// The choice.
        choice: usize,
        /// Why.
        reason: StopReason,
        /// Prompt tokens of this choice.
        prompt_tokens: usize,
        /// Of those, how many came from the slot's prompt cache.
        cached_tokens: usize,
        /// Tokens generated (an end-of-generation token counts).
        completion_tokens: usize,
        /// Of those, how many were inside a reasoning block.
        reasoning_tokens: usize,
        /// What speculative decoding did for it (`None`: it did not speculate).
        speculative: Option<SpecStats>,
    },
    /// The job failed; no more events follow.
    Failed {
        /// What went wrong.
        message: String,
        /// Caused by the request (a 400), not by the server.
        bad_input: bool,
        /// The server is shutting down (a 503).
        shutting_down: bool,
    },
}

/// Why a job was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// Every slot is busy and the queue is full.
    QueueFull,
    /// The engine is shutting down or gone.
    Closed,
}

/// Messages to the engine thread.
pub(crate) enum Msg {
    Submit(Job),
    /// Stop admitting: queued jobs fail, running ones finish (cancelled after `grace`).
    Drain {
        grace: Duration,
    },
}

/// Slot and queue accounting shared by the handlers (admission control) and the engine.
#[derive(Debug, Default)]
pub(crate) struct Load {
    /// Jobs submitted but not yet admitted.
    pub waiting: usize,
    /// Sequences holding a slot.
    pub busy: usize,
}

/// State shared between the handle and the engine thread.
pub(crate) struct Shared {
    pub load: Mutex<Load>,
    pub parallel: usize,
    pub queue: usize,
    pub closed: AtomicBool,
    pub metrics: Arc<Metrics>,
}

/// The HTTP side's handle on the engine.
pub struct EngineHandle {
    tx: Mutex<mpsc::Sender<Msg>>,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    slot_ctx: usize,
}

/// Engine settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Sequences decoded side by side (slots).
    pub parallel: usize,
    /// Jobs that may wait for slots beyond those running.
    pub queue: usize,
    /// Prompt tokens per prefill call: while other sequences generate, prompts go in this many
    /// tokens at a time between decode steps (see [`crate::batching`]).
    pub prefill_chunk: usize,
    /// Bytes of KV copies the prompt cache may keep in memory for prompts whose slot went to
    /// another prompt (0: none).
    pub cache_ram: usize,
    /// Whether prompts may start from a slot's cached tokens: only when the model's logits do
    /// not depend on batching ([`nucleus_runtime::Model::batch_invariant`]), else a cached
    /// prefix could change an answer.
    pub prompt_cache: bool,
}

impl EngineHandle {
    /// Starts the engine thread over `ctx` (which must hold `config.parallel` sequences), with
    /// `draft` proposing tokens for requests that speculate with the draft model (its context
    /// holding as many sequences).
    pub fn spawn(
        ctx: Box<dyn Context>,
        draft: Option<DraftModel>,
        config: &EngineConfig,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<Self> {
        let parallel = config.parallel.max(1);
        let slot_ctx = ctx.n_ctx_seq();
        let chunk = config.prefill_chunk.clamp(1, ctx.n_batch().max(1));
        let cache = config.prompt_cache.then_some(config.cache_ram);
        let shared = Arc::new(Shared {
            load: Mutex::new(Load::default()),
            parallel,
            queue: config.queue,
            closed: AtomicBool::new(false),
            metrics,
        });
        let (tx, rx) = mpsc::channel();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("nucleus-engine".into())
            .spawn(move || Scheduler::new(ctx, draft, rx, sh, slot_ctx, chunk, cache).run())?;
        Ok(EngineHandle { tx: Mutex::new(tx), shared, thread: Mutex::new(Some(thread)), slot_ctx })
    }

    /// Tokens each sequence may hold (prompt and generated): the context divided by the slots.
    pub fn slot_ctx(&self) -> usize {
        self.slot_ctx
    }

    /// Number of slots.
    pub fn parallel(&self) -> usize {
        self.shared.parallel
    }

    /// Queues a job. Refused when the queue is full, unless the job can start at once.
    pub fn submit(&self, job: Job) -> Result<(), SubmitError> {
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(SubmitError::Closed);
        }
        {
            let mut load = lock(&self.shared.load);
            let fits_now = load.waiting == 0 && load.busy + job.seqs.len() <= self.shared.parallel;
            if !fits_now && load.waiting >= self.shared.queue {
                return Err(SubmitError::QueueFull);
            }
            load.waiting += 1;
            self.shared.metrics.set_queue(load.waiting);
        }
        let sent = lock(&self.tx).send(Msg::Submit(job));
        if sent.is_err() {
            let mut load = lock(&self.shared.load);
            load.waiting -= 1;
            return Err(SubmitError::Closed);
        }
        Ok(())
    }

    /// Stops admitting jobs: queued ones fail with "shutting down"; running ones go on for up
    /// to `grace`, then end with an error. The thread exits once nothing runs.
    pub fn drain(&self, grace: Duration) {
        self.shared.closed.store(true, Ordering::SeqCst);
        let _ = lock(&self.tx).send(Msg::Drain { grace });
    }

    /// Waits for the engine thread to exit (after [`EngineHandle::drain`]).
    pub fn join(&self) {
        let t = lock(&self.thread).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }
}

/// Locks a mutex, recovering it if a thread panicked while holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Queue helper for the scheduler.
pub(crate) type JobQueue = VecDeque<Job>;
