//! The server's scheduler on the engine thread: the HTTP side's policy around the runtime's
//! generation engine ([`nucleus_runtime::engine`], which evaluates prompts in chunks, samples,
//! scores echoed prompts and decodes every running slot in one forward pass). Here: the job
//! queue and admission (a job starts once all its sequences have slots), the choice of slot
//! (the idle slot whose prompt cache keeps most of the prompt, [`crate::prompt_cache`]) and
//! the memory cache, clients that went away, the shutdown deadline, metrics, and turning the
//! engine's reports into events for each request. Each sequence keeps its own sampler chain
//! and RNG, and a token's logits do not depend on how it was batched, so what a sequence
//! generates depends neither on its neighbours nor on the cache.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleus_runtime::engine::{Finished, Pass, PromptToken, SlotFailure, SlotJob, SlotSink};
use nucleus_runtime::sequence::Step;
use nucleus_runtime::{Context, DraftModel, Engine, SeqId, StopReason};
use nucleus_sampler::Token;
use tokio::sync::mpsc::UnboundedSender;

use crate::engine::{lock, Event, Job, JobQueue, Msg, SeqJob, Shared, TokenOut};
use crate::prompt_cache::{choose_slot, MemoryCache, SlotCache};

/// The request a running slot serves.
struct Client {
    choice: usize,
    events: UnboundedSender<Event>,
    received: Instant,
    started_generating: bool,
    /// Prompt tokens kept from the slot's cache (not evaluated again).
    cached: usize,
}

/// The scheduler's side of the engine's reports: events to clients, metrics, and the record of
/// what each slot's KV holds.
struct Outbox {
    shared: Arc<Shared>,
    /// Per slot: the tokens its KV cache holds.
    caches: Vec<SlotCache>,
}

impl Outbox {
    /// A slot is given back (its KV stays, for later prompts that start the same way).
    fn release(&self) {
        let mut load = lock(&self.shared.load);
        load.busy = load.busy.saturating_sub(1);
        self.shared.metrics.set_busy(load.busy);
    }
}

impl SlotSink<Client> for Outbox {
    fn pass(&mut self, pass: Pass<'_>, took: Duration) {
        match pass {
            Pass::Prefill { tokens, .. } => self.shared.metrics.prompt_done(tokens.len(), took),
            Pass::Decode { runs } => self.shared.metrics.decode_step(runs.len(), took),
        }
    }

    fn appended(&mut self, slot: SeqId, tokens: &[Token]) {
        self.caches[slot].extend(tokens);
    }

    fn cleared(&mut self, slot: SeqId) {
        self.caches[slot].clear();
    }

    fn prompt_token(&mut self, _slot: SeqId, c: &mut Client, t: PromptToken<'_>) {
        let token = TokenOut { id: t.id, text: String::new(), logprob: t.logprob, top: t.top.to_vec(), end: false };
        let _ = c.events.send(Event::PromptToken { choice: c.choice, token });
    }

    fn token(&mut self, _slot: SeqId, c: &mut Client, step: &Step<'_>) -> ControlFlow<()> {
        if !c.started_generating {
            c.started_generating = true;
            self.shared.metrics.first_token(c.received.elapsed());
        }
        let ev = &step.event;
        let end = step.finished.as_ref().is_some_and(|r| *r == StopReason::EndOfGeneration) && ev.piece.is_empty();
        let token =
            TokenOut { id: ev.token, text: ev.text.to_string(), logprob: ev.logprob, top: ev.top.to_vec(), end };
        let _ = c.events.send(Event::Token { choice: c.choice, token });
        ControlFlow::Continue(())
    }

    fn finished(&mut self, _slot: SeqId, done: Finished<Client>) {
        let generated = done.sequence.generated().len();
        self.shared.metrics.sequence_done(generated, done.sequence.sample_time());
        let reasoning_tokens = done.sequence.reasoning_tokens();
        self.shared.metrics.reasoning_done(reasoning_tokens, done.sequence.reasoning_forced_end());
        let speculative = done.sequence.spec_stats();
        if let Some(s) = &speculative {
            self.shared.metrics.speculative_done(s);
        }
        let prompt_tokens = done.prompt.len();
        // Dropped before the client hears of the end: a drafter with the server's n-gram cache
        // leaves its tokens there then, so the client's next request can draft from them.
        drop(done.sequence);
        let _ = done.tag.events.send(Event::Finished {
            choice: done.tag.choice,
            reason: done.reason,
            prompt_tokens,
            cached_tokens: done.tag.cached,
            completion_tokens: generated,
            reasoning_tokens,
            speculative,
        });
        self.release();
    }

    fn failed(&mut self, slot: SeqId, c: Client, failure: SlotFailure) {
        let bad_input = failure.caused_by_input();
        let _ = c.events.send(Event::Failed { message: failure.to_string(), bad_input, shutting_down: false });
        self.release();
        // The engine cleared the slot's KV.
        self.caches[slot].clear();
    }
}

/// The engine loop's state.
pub(crate) struct Scheduler {
    ctx: Box<dyn Context>,
    rx: Receiver<Msg>,
    engine: Engine<Client>,
    out: Outbox,
    /// Slot contents moved out of slots that went to other prompts.
    memory: MemoryCache,
    /// Whether prompts may start from cached tokens (the model is batch-invariant).
    cache_on: bool,
    queue: JobQueue,
    /// Set once draining: running sequences are cut off at this instant.
    deadline: Option<Instant>,
}

impl Scheduler {
    pub(crate) fn new(
        ctx: Box<dyn Context>,
        draft: Option<DraftModel>,
        rx: Receiver<Msg>,
        shared: Arc<Shared>,
        slot_ctx: usize,
        chunk: usize,
        cache: Option<usize>,
    ) -> Self {
        let n = shared.parallel;
        let mut engine = Engine::new(n, slot_ctx, chunk);
        if let Some(d) = draft {
            engine.set_draft_model(d);
        }
        Scheduler {
            ctx,
            rx,
            engine,
            out: Outbox { shared, caches: vec![SlotCache::default(); n] },
            memory: MemoryCache::new(cache.unwrap_or(0)),
            cache_on: cache.is_some(),
            queue: JobQueue::new(),
            deadline: None,
        }
    }

    fn shared(&self) -> &Shared {
        &self.out.shared
    }

    /// Runs until drained (or the handle is gone) and nothing is left running.
    pub(crate) fn run(mut self) {
        loop {
            if !self.intake() {
                break;
            }
            self.drop_departed();
            if let Some(deadline) = self.deadline {
                if Instant::now() >= deadline {
                    self.cut_off();
                }
                if self.idle() {
                    break;
                }
            }
            self.admit();
            self.engine.prefill(self.ctx.as_mut(), &mut self.out);
            self.engine.step(self.ctx.as_mut(), &mut self.out);
        }
        self.shared().closed.store(true, Ordering::SeqCst);
        for job in std::mem::take(&mut self.queue) {
            self.unqueue();
            fail_job(&job.events, shutting_down());
        }
    }

    fn idle(&self) -> bool {
        self.queue.is_empty() && self.engine.is_idle()
    }

    /// Takes messages: waits when there is nothing to do. False when the loop should end.
    fn intake(&mut self) -> bool {
        if self.idle() {
            if self.deadline.is_some() {
                return false;
            }
            match self.rx.recv() {
                Ok(m) => self.handle(m),
                Err(_) => return false,
            }
        }
        loop {
            match self.rx.try_recv() {
                Ok(m) => self.handle(m),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => {
                    if self.deadline.is_none() {
                        self.start_drain(Duration::ZERO);
                    }
                    return true;
                }
            }
        }
    }

    fn handle(&mut self, m: Msg) {
        match m {
            Msg::Submit(job) if self.deadline.is_some() => {
                self.unqueue();
                fail_job(&job.events, shutting_down());
            }
            Msg::Submit(job) => self.queue.push_back(job),
            Msg::Drain { grace } => self.start_drain(grace),
        }
    }

    fn start_drain(&mut self, grace: Duration) {
        self.deadline = Some(Instant::now() + grace);
        for job in std::mem::take(&mut self.queue) {
            self.unqueue();
            fail_job(&job.events, shutting_down());
        }
    }

    /// One job fewer waiting.
    fn unqueue(&self) {
        let shared = self.shared();
        let mut load = lock(&shared.load);
        load.waiting = load.waiting.saturating_sub(1);
        shared.metrics.set_queue(load.waiting);
    }

    /// Frees the slots of clients that went away, and forgets their queued jobs.
    fn drop_departed(&mut self) {
        let departed: Vec<SeqId> =
            self.engine.running().filter(|(_, c)| c.events.is_closed()).map(|(slot, _)| slot).collect();
        for slot in departed {
            if self.engine.remove(slot).is_some() {
                self.shared().metrics.cancelled();
                self.out.release();
            }
        }
        let before = self.queue.len();
        self.queue.retain(|j| !j.events.is_closed());
        for _ in self.queue.len()..before {
            self.unqueue();
        }
    }

    /// Ends every running sequence with an error (the shutdown grace period is over).
    fn cut_off(&mut self) {
        let running: Vec<SeqId> = self.engine.running().map(|(slot, _)| slot).collect();
        for slot in running {
            if let Some((client, _)) = self.engine.remove(slot) {
                fail_job(&client.events, shutting_down());
                self.out.release();
            }
        }
    }

    /// Starts queued jobs, in order, while their sequences fit in the free slots.
    fn admit(&mut self) {
        while let Some(job) = self.queue.front() {
            let free = self.engine.free_slots().len();
            if job.seqs.len() > free {
                break;
            }
            let Some(job) = self.queue.pop_front() else { break };
            self.unqueue();
            if job.events.send(Event::Started).is_err() {
                continue;
            }
            self.shared().metrics.admitted(job.received.elapsed());
            let Job { seqs, events, received } = job;
            for sj in seqs {
                let free = self.engine.free_slots();
                let cacheable = self.cache_on && sj.cache_prompt && sj.prompt_logprobs.is_none();
                let key: &[Token] = if cacheable { &sj.prompt } else { &[] };
                let Some(slot) = choose_slot(&free, &self.out.caches, key) else { break };
                self.start(slot, sj, events.clone(), received);
            }
        }
    }

    /// Puts a sequence in `slot`, keeping what the prompt cache has of its prompt; the engine
    /// evaluates the rest.
    fn start(&mut self, slot: usize, sj: SeqJob, events: UnboundedSender<Event>, received: Instant) {
        {
            let shared = self.shared();
            let mut load = lock(&shared.load);
            load.busy += 1;
            shared.metrics.set_busy(load.busy);
        }
        let scoring = sj.prompt_logprobs.is_some();
        // A scored prompt needs the logits after each of its tokens, so it starts from nothing.
        let cacheable = self.cache_on && sj.cache_prompt && !scoring;
        let caches = &mut self.out.caches;
        let mut reuse = if cacheable { caches[slot].reusable(&sj.prompt) } else { 0 };
        if reuse < caches[slot].len() {
            self.stash(slot);
        }
        let (entry, from_memory) = if cacheable { self.memory.best(&sj.prompt) } else { (None, 0) };
        match entry {
            Some(i) if from_memory > reuse => reuse = self.unstash(slot, i, from_memory),
            _ => {
                if reuse > 0 && self.ctx.truncate(slot, reuse).is_ok() {
                    self.out.caches[slot].truncate(reuse);
                } else {
                    reuse = 0;
                    self.ctx.clear(slot);
                    self.out.caches[slot].clear();
                }
            }
        }
        self.shared().metrics.prompt_cached(reuse);
        let client = Client { choice: sj.choice, events, received, started_generating: false, cached: reuse };
        let job = SlotJob {
            tag: client,
            prompt: sj.prompt,
            sequence: sj.sequence,
            cached: reuse,
            score_prompt: sj.prompt_logprobs,
            prompt_only: sj.max_tokens == 0,
        };
        if let Err(job) = self.engine.start(self.ctx.as_mut(), slot, job, &mut self.out) {
            // Never expected: the slot was chosen among the free ones.
            let message = "internal error: the chosen slot is busy".to_string();
            let _ = job.tag.events.send(Event::Failed { message, bad_input: false, shutting_down: false });
            self.out.release();
        }
    }

    /// Copies the slot's tokens and their KV into the memory cache before they are cut.
    fn stash(&mut self, slot: usize) {
        let cache = &self.out.caches[slot];
        if !self.memory.enabled()
            || cache.len() == 0
            || !self.memory.could_fit(cache.len())
            || self.memory.covers(cache)
        {
            return;
        }
        if self.ctx.seq_len(slot) != cache.len() {
            // Never expected: the KV and the record of it disagree, so neither is kept.
            self.ctx.clear(slot);
            self.out.caches[slot].clear();
            return;
        }
        if let Ok(saved) = self.ctx.save(slot) {
            self.memory.insert(cache.clone(), saved);
            self.shared().metrics.memory_cache(self.memory.len(), self.memory.bytes());
        }
    }

    /// Puts memory-cache entry `i` into the slot, keeping its first `keep` tokens; returns the
    /// tokens kept (0 if the copy could not be restored: the slot is then empty).
    fn unstash(&mut self, slot: usize, i: usize, keep: usize) -> usize {
        let (cache, saved) = self.memory.take(i);
        let restored = self.ctx.restore(slot, saved).is_ok() && self.ctx.truncate(slot, keep).is_ok();
        if restored {
            let mut cache = cache.clone();
            cache.truncate(keep);
            self.out.caches[slot] = cache;
            self.out.shared.metrics.memory_cache_hit(keep);
            keep
        } else {
            self.ctx.clear(slot);
            self.out.caches[slot].clear();
            0
        }
    }
}

fn shutting_down() -> Event {
    Event::Failed {
        message: "the server is shutting down; this request was not completed".into(),
        bad_input: false,
        shutting_down: true,
    }
}

fn fail_job(events: &UnboundedSender<Event>, ev: Event) {
    let _ = events.send(ev);
}
