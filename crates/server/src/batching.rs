//! Continuous batching on the engine thread: between forward passes new jobs join free slots
//! (the idle slot whose prompt cache keeps most of the prompt, [`crate::prompt_cache`]), the
//! rest of their prompts is evaluated in chunks (at most `n_batch` tokens' worth between two
//! decode steps while other sequences are generating, so long or many prompts do not stall
//! them) and their first token is sampled as soon as the prompt is in; departed clients free
//! their slots; one decode call advances every running sequence by a token. Each sequence
//! keeps its own sampler chain and RNG, and a token's logits do not depend on how it was
//! batched, so what a sequence generates depends neither on its neighbours nor on the cache.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleus_runtime::{Context, RuntimeError, Sequence, StopReason};
use nucleus_sampler::probs::{top_n_raw, RawDistribution};
use nucleus_sampler::{Logits, Token};
use tokio::sync::mpsc::UnboundedSender;

use crate::engine::{lock, Event, Job, JobQueue, Msg, SeqJob, Shared, TokenOut};
use crate::prompt_cache::{choose_slot, MemoryCache, SlotCache};

/// A sequence holding a slot.
struct Active {
    choice: usize,
    prompt: Arc<[Token]>,
    seq: Sequence,
    max_tokens: usize,
    /// While scoring the prompt: (index of the prompt token the current logits predict, top n).
    scoring: Option<(usize, usize)>,
    /// Prompt tokens already in the context (the prompt is in once this is its length).
    prefilled: usize,
    /// The token to decode next.
    pending: Option<Token>,
    events: UnboundedSender<Event>,
    received: Instant,
    started_generating: bool,
    /// Prompt tokens kept from the slot's cache (not evaluated again).
    cached: usize,
}

/// Why a sequence stopped early.
struct Failure {
    message: String,
    bad_input: bool,
}

impl From<RuntimeError> for Failure {
    fn from(e: RuntimeError) -> Self {
        let bad_input = matches!(e, RuntimeError::Sample(_) | RuntimeError::Param(_));
        Failure { message: e.to_string(), bad_input }
    }
}

/// The engine loop's state.
pub(crate) struct Scheduler {
    ctx: Box<dyn Context>,
    rx: Receiver<Msg>,
    shared: Arc<Shared>,
    slot_ctx: usize,
    slots: Vec<Option<Active>>,
    /// Per slot: the tokens its KV cache holds.
    caches: Vec<SlotCache>,
    /// Slot contents moved out of slots that went to other prompts.
    memory: MemoryCache,
    /// Whether prompts may start from cached tokens (the model is batch-invariant).
    cache_on: bool,
    /// Prompt tokens per prefill call.
    chunk: usize,
    queue: JobQueue,
    /// Set once draining: running sequences are cut off at this instant.
    deadline: Option<Instant>,
}

impl Scheduler {
    pub(crate) fn new(
        ctx: Box<dyn Context>,
        rx: Receiver<Msg>,
        shared: Arc<Shared>,
        slot_ctx: usize,
        chunk: usize,
        cache: Option<usize>,
    ) -> Self {
        let n = shared.parallel;
        Scheduler {
            ctx,
            rx,
            shared,
            slot_ctx,
            slots: (0..n).map(|_| None).collect(),
            caches: vec![SlotCache::default(); n],
            memory: MemoryCache::new(cache.unwrap_or(0)),
            cache_on: cache.is_some(),
            chunk: chunk.max(1),
            queue: JobQueue::new(),
            deadline: None,
        }
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
            self.prefill();
            self.step();
        }
        self.shared.closed.store(true, Ordering::SeqCst);
        for job in std::mem::take(&mut self.queue) {
            self.unqueue();
            fail_job(&job.events, shutting_down());
        }
    }

    fn idle(&self) -> bool {
        self.queue.is_empty() && self.slots.iter().all(Option::is_none)
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
        let mut load = lock(&self.shared.load);
        load.waiting = load.waiting.saturating_sub(1);
        self.shared.metrics.set_queue(load.waiting);
    }

    /// Frees the slots of clients that went away, and forgets their queued jobs.
    fn drop_departed(&mut self) {
        for i in 0..self.slots.len() {
            if self.slots[i].as_ref().is_some_and(|a| a.events.is_closed()) {
                if let Some(a) = self.slots[i].as_mut() {
                    a.seq.cancel();
                }
                self.shared.metrics.cancelled();
                self.free(i);
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
        for i in 0..self.slots.len() {
            if let Some(a) = &self.slots[i] {
                fail_job(&a.events, shutting_down());
                self.free(i);
            }
        }
    }

    /// Starts queued jobs, in order, while their sequences fit in the free slots.
    fn admit(&mut self) {
        while let Some(job) = self.queue.front() {
            let free = self.slots.iter().filter(|s| s.is_none()).count();
            if job.seqs.len() > free {
                break;
            }
            let Some(job) = self.queue.pop_front() else { break };
            self.unqueue();
            if job.events.send(Event::Started).is_err() {
                continue;
            }
            self.shared.metrics.admitted(job.received.elapsed());
            let Job { seqs, events, received } = job;
            for sj in seqs {
                let free: Vec<usize> = (0..self.slots.len()).filter(|&i| self.slots[i].is_none()).collect();
                let cacheable = self.cache_on && sj.cache_prompt && sj.prompt_logprobs.is_none();
                let key: &[Token] = if cacheable { &sj.prompt } else { &[] };
                let Some(slot) = choose_slot(&free, &self.caches, key) else { break };
                self.start(slot, sj, events.clone(), received);
            }
        }
    }

    /// Puts a sequence in `slot`. Its prompt is evaluated by [`Scheduler::prefill`]; a prompt
    /// that is scored token by token (echo with logprobs) gets only its first token now and
    /// the rest through decode steps.
    fn start(&mut self, slot: usize, sj: SeqJob, events: UnboundedSender<Event>, received: Instant) {
        {
            let mut load = lock(&self.shared.load);
            load.busy += 1;
            self.shared.metrics.set_busy(load.busy);
        }
        let scoring = sj.prompt_logprobs.is_some();
        // A scored prompt needs the logits after each of its tokens, so it starts from nothing.
        let cacheable = self.cache_on && sj.cache_prompt && !scoring;
        let mut reuse = if cacheable { self.caches[slot].reusable(&sj.prompt) } else { 0 };
        if reuse < self.caches[slot].len() {
            self.stash(slot);
        }
        let (entry, from_memory) = if cacheable { self.memory.best(&sj.prompt) } else { (None, 0) };
        match entry {
            Some(i) if from_memory > reuse => reuse = self.unstash(slot, i, from_memory),
            _ => {
                if reuse > 0 && self.ctx.truncate(slot, reuse).is_ok() {
                    self.caches[slot].truncate(reuse);
                } else {
                    reuse = 0;
                    self.ctx.clear(slot);
                    self.caches[slot].clear();
                }
            }
        }
        self.shared.metrics.prompt_cached(reuse);
        let active = Active {
            choice: sj.choice,
            prompt: sj.prompt.clone(),
            seq: sj.sequence,
            max_tokens: sj.max_tokens,
            scoring: sj.prompt_logprobs.map(|k| (1, k)),
            prefilled: reuse,
            pending: None,
            events,
            received,
            started_generating: false,
            cached: reuse,
        };
        self.slots[slot] = Some(active);
        if scoring {
            let t0 = Instant::now();
            let r = self.ctx.prefill(slot, &sj.prompt[..1]);
            self.shared.metrics.prompt_done(1, t0.elapsed());
            if r.is_ok() {
                self.caches[slot].extend(&sj.prompt[..1]);
            }
            if let Some(a) = self.slots[slot].as_mut() {
                a.prefilled = a.prompt.len();
                let first =
                    TokenOut { id: a.prompt[0], text: String::new(), logprob: None, top: Vec::new(), end: false };
                let _ = a.events.send(Event::PromptToken { choice: a.choice, token: first });
            }
            match r {
                Ok(()) => self.advance_slot(slot),
                Err(e) => self.fail_slot(slot, e.into()),
            }
        }
    }

    /// Copies the slot's tokens and their KV into the memory cache before they are cut.
    fn stash(&mut self, slot: usize) {
        let cache = &self.caches[slot];
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
            self.caches[slot].clear();
            return;
        }
        if let Ok(saved) = self.ctx.save(slot) {
            self.memory.insert(cache.clone(), saved);
            self.shared.metrics.memory_cache(self.memory.len(), self.memory.bytes());
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
            self.caches[slot] = cache;
            self.shared.metrics.memory_cache_hit(keep);
            keep
        } else {
            self.ctx.clear(slot);
            self.caches[slot].clear();
            0
        }
    }

    /// Evaluates waiting prompts in chunks of the prefill size, slot by slot: all of them when
    /// nothing is generating, else `n_batch` tokens' worth. What is evaluated joins the slot's
    /// prompt cache. A sequence whose prompt is in samples its first token at once (its logits
    /// are those of this very call).
    fn prefill(&mut self) {
        let chunk = self.chunk;
        let generating = self.slots.iter().any(|s| s.as_ref().is_some_and(|a| a.pending.is_some()));
        // While others generate, at most `n_batch` prompt tokens go in between two decode steps.
        let per_step = (self.ctx.n_batch() / chunk).max(1);
        let mut chunks_left = if generating { per_step } else { usize::MAX };
        for slot in 0..self.slots.len() {
            while chunks_left > 0 {
                let Some(a) = self.slots[slot].as_mut() else { break };
                let (from, len) = (a.prefilled, a.prompt.len());
                if from >= len {
                    break;
                }
                let to = (from + chunk).min(len);
                let prompt = a.prompt.clone();
                a.prefilled = to;
                chunks_left -= 1;
                let t0 = Instant::now();
                let r = self.ctx.prefill(slot, &prompt[from..to]);
                self.shared.metrics.prompt_done(to - from, t0.elapsed());
                if r.is_ok() {
                    self.caches[slot].extend(&prompt[from..to]);
                }
                match r {
                    Ok(()) if to == len => self.advance_slot(slot),
                    Ok(()) => {}
                    Err(e) => self.fail_slot(slot, e.into()),
                }
            }
        }
    }

    /// Decodes every pending token in one forward pass, then advances each sequence.
    fn step(&mut self) {
        let steps: Vec<(usize, Token)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().and_then(|a| a.pending.map(|t| (i, t))))
            .collect();
        if steps.is_empty() {
            return;
        }
        let t0 = Instant::now();
        let r = self.ctx.decode(&steps);
        self.shared.metrics.decode_step(steps.len(), t0.elapsed());
        for &(i, t) in &steps {
            if let Some(a) = self.slots[i].as_mut() {
                a.pending = None;
            }
            match &r {
                Ok(()) => {
                    self.caches[i].extend(&[t]);
                    self.advance_slot(i)
                }
                Err(e) => self.fail_slot(i, Failure { message: e.to_string(), bad_input: false }),
            }
        }
    }

    /// Uses the slot's fresh logits: the next prompt score, or the next sampled token.
    fn advance_slot(&mut self, slot: usize) {
        let Some(a) = self.slots[slot].as_mut() else { return };
        match advance(self.ctx.as_ref(), slot, a, self.slot_ctx, &self.shared) {
            Ok(false) => {}
            Ok(true) => self.free(slot),
            Err(f) => self.fail_slot(slot, f),
        }
    }

    fn fail_slot(&mut self, slot: usize, f: Failure) {
        if let Some(a) = &self.slots[slot] {
            let _ = a.events.send(Event::Failed { message: f.message, bad_input: f.bad_input, shutting_down: false });
        }
        self.free(slot);
        // After a failed call the slot's KV is not to be trusted.
        self.ctx.clear(slot);
        self.caches[slot].clear();
    }

    /// Gives the slot back. Its KV cache stays: the prompt and answer in it serve later prompts
    /// that start the same way (a conversation's next turn resends both).
    fn free(&mut self, slot: usize) {
        if self.slots[slot].take().is_some() {
            let mut load = lock(&self.shared.load);
            load.busy = load.busy.saturating_sub(1);
            self.shared.metrics.set_busy(load.busy);
        }
    }
}

/// One sequence's work on fresh logits. `Ok(true)` when it is finished.
fn advance(ctx: &dyn Context, slot: usize, a: &mut Active, slot_ctx: usize, shared: &Shared) -> Result<bool, Failure> {
    let logits = ctx.logits(slot)?;
    if let Some((next, k)) = a.scoring {
        if next < a.prompt.len() {
            let t = a.prompt[next];
            let dist = RawDistribution::of(Logits::F32(logits));
            let logprob = logits.get(t as usize).map(|&l| dist.logprob(l));
            let mut top = Vec::with_capacity(k);
            top_n_raw(Logits::F32(logits), &dist, k, &mut top);
            let token = TokenOut { id: t, text: String::new(), logprob, top, end: false };
            let _ = a.events.send(Event::PromptToken { choice: a.choice, token });
            a.pending = Some(t);
            a.scoring = Some((next + 1, k));
            return Ok(false);
        }
        a.scoring = None;
    }
    if a.max_tokens == 0 {
        finish(a, StopReason::MaxTokens, shared);
        return Ok(true);
    }
    let can_continue = ctx.seq_len(slot) < slot_ctx;
    let step = a.seq.step(logits, can_continue)?;
    if !a.started_generating {
        a.started_generating = true;
        shared.metrics.first_token(a.received.elapsed());
    }
    let ev = &step.event;
    let end = step.finished.as_ref().is_some_and(|r| *r == StopReason::EndOfGeneration) && ev.piece.is_empty();
    let token = TokenOut { id: ev.token, text: ev.text.to_string(), logprob: ev.logprob, top: ev.top.to_vec(), end };
    let _ = a.events.send(Event::Token { choice: a.choice, token });
    if let Some(reason) = step.finished {
        finish(a, reason, shared);
        return Ok(true);
    }
    a.pending = Some(step.event.token);
    Ok(false)
}

fn finish(a: &Active, reason: StopReason, shared: &Shared) {
    let generated = a.seq.generated().len();
    shared.metrics.sequence_done(generated, a.seq.sample_time());
    let _ = a.events.send(Event::Finished {
        choice: a.choice,
        reason,
        prompt_tokens: a.prompt.len(),
        cached_tokens: a.cached,
        completion_tokens: generated,
    });
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
