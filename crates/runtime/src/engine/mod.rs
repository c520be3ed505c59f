//! The generation engine: slots of one [`Context`], each running a [`Sequence`] from its
//! prompt to a stop. It is the one loop behind both [`crate::generate`] (an engine with one
//! slot) and the server's scheduler (one slot per `--parallel` sequence), so a seeded request
//! is evaluated, sampled, scored and stopped by the same code wherever it runs.
//!
//! A driver hands jobs to free slots ([`Engine::start`]) and then alternates two calls:
//! * [`Engine::prefill`] evaluates waiting prompts in chunks of the engine's chunk size: all of
//!   them when no slot is generating, else at most `n_batch` tokens' worth, so prompts are
//!   interleaved with the other slots' decode steps instead of stalling them. A slot whose
//!   prompt is in samples its first token at once, from the logits of that very call.
//! * [`Engine::step`] decodes every slot's next token in one forward pass, then samples each
//!   slot's following token (or scores its next prompt token, for echo with logprobs). Tokens
//!   a token trie forces after it go into the same pass, one row of logits each, and are then
//!   stepped through without sampling.
//!
//! Everything that happens is reported to the driver's [`SlotSink`]: forward passes (metrics,
//! and the prompt cache's record of what each slot's KV holds), prompt scores, tokens, and
//! slots that end. Choosing slots, admission, prompt caching and clients are the driver's
//! business; the context is passed to each call, so the driver may copy, cut or restore a free
//! slot's KV between calls. Each slot keeps its own sampler chain and RNG, and a token's logits
//! do not depend on how it was batched (a batch-invariant model), so what a slot generates
//! depends neither on its neighbours nor on how its prompt was split.

mod sink;
mod slot;

use std::time::Instant;

use nucleus_sampler::probs::TokenProb;
use nucleus_sampler::Token;

pub use sink::{Finished, Pass, PromptToken, SlotFailure, SlotSink};
pub use slot::SlotJob;

use crate::draft_model::{DraftAsk, DraftModel};
use crate::error::RuntimeError;
use crate::model::{Context, SeqId};
use crate::score::raw_score;
use crate::sequence::StopReason;
use slot::{Phase, Scoring, Slot};

/// Slots running sequences in one context; `T` is the driver's data for each slot.
pub struct Engine<T> {
    slots: Vec<Option<Slot<T>>>,
    /// Most tokens one slot may hold (prompt and generated).
    slot_ctx: usize,
    /// Prompt tokens per prefill call.
    chunk: usize,
    /// Scratch for a scored prompt token's alternatives.
    top: Vec<TokenProb>,
    /// Whether tokens a constraint forces are decoded together with the token before them.
    decode_forced: bool,
    /// Drafts for sequences that speculate with a draft model ([`Engine::set_draft_model`]).
    draft: Option<DraftModel>,
}

/// What became of a slot after its logits were used.
enum Outcome {
    Running,
    Done(StopReason),
    Failed(RuntimeError),
}

impl<T> Engine<T> {
    /// An engine of `slots` slots (sequence ids `0..slots` of the contexts it is given), each
    /// holding at most `slot_ctx` tokens, evaluating prompts `chunk` tokens per call.
    pub fn new(slots: usize, slot_ctx: usize, chunk: usize) -> Self {
        Engine {
            slots: (0..slots).map(|_| None).collect(),
            slot_ctx,
            chunk: chunk.max(1),
            top: Vec::new(),
            decode_forced: true,
            draft: None,
        }
    }

    /// Drafts for the slots whose sequences speculate with a draft model
    /// ([`crate::Sequence::set_model_speculation`]); its context needs a sequence per slot.
    /// Without one, such sequences decode plainly.
    pub fn set_draft_model(&mut self, draft: DraftModel) {
        self.draft = Some(draft);
    }

    /// Hands the draft model back (its context keeps the tokens it holds, so a driver that
    /// runs one engine per generation, as the C handle does, keeps the draft KV between them).
    pub fn take_draft_model(&mut self) -> Option<DraftModel> {
        self.draft.take()
    }

    /// Whether a slot's forced tokens (a token trie's unique continuation,
    /// [`crate::Sequence::forced_ahead`]) go into the same decode call as the token before them
    /// (on by default), instead of one decode call each. Answers are the same either way: the
    /// steps still take one row of logits each, and a batch-invariant model gives each row the
    /// same bits. Off is the reference the fast path is measured and tested against.
    pub fn set_decode_forced(&mut self, on: bool) {
        self.decode_forced = on;
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the engine has no slots at all.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether no slot is running.
    pub fn is_idle(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }

    /// The slots not running, in order.
    pub fn free_slots(&self) -> Vec<SeqId> {
        (0..self.slots.len()).filter(|&i| self.slots[i].is_none()).collect()
    }

    /// The running slots and their data.
    pub fn running(&self) -> impl Iterator<Item = (SeqId, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (i, &s.tag)))
    }

    /// Puts `job` in `slot`, which must be free (else the job is handed back, boxed). The slot's KV must
    /// hold exactly the job's `cached` prompt tokens. A scored prompt gets its first token
    /// evaluated now and the rest through decode steps; any other prompt is evaluated by
    /// [`Engine::prefill`]. A job that cannot run (an empty prompt, a fully cached one) fails
    /// through the sink.
    pub fn start(
        &mut self,
        ctx: &mut dyn Context,
        slot: SeqId,
        job: SlotJob<T>,
        sink: &mut dyn SlotSink<T>,
    ) -> Result<(), Box<SlotJob<T>>> {
        if self.slots.get(slot).is_none_or(Option::is_some) {
            return Err(Box::new(job));
        }
        let len = job.prompt.len();
        let problem = if len == 0 {
            Some(RuntimeError::EmptyPrompt)
        } else if job.cached >= len {
            Some(RuntimeError::BadSequence { seq: slot, problem: "a prompt's last token must be evaluated" })
        } else if job.score_prompt.is_some() && job.cached > 0 {
            Some(RuntimeError::BadSequence { seq: slot, problem: "a scored prompt is evaluated from its start" })
        } else {
            None
        };
        if let Some(e) = problem {
            ctx.clear(slot);
            sink.failed(slot, job.tag, SlotFailure::Own(e));
            return Ok(());
        }
        let SlotJob { tag, prompt, sequence, cached, score_prompt, prompt_only } = job;
        let scoring = score_prompt.map(|top| Scoring { next: 1, top });
        // A scored prompt goes in token by token through decode steps, after this first one.
        let phase = Phase::Prefill { next: if scoring.is_some() { len } else { cached } };
        self.slots[slot] = Some(Slot { tag, prompt: prompt.clone(), seq: sequence, prompt_only, scoring, phase });
        if scoring.is_some() {
            let first = &prompt[..1];
            let t0 = Instant::now();
            let r = ctx.prefill(slot, first);
            sink.pass(Pass::Prefill { slot, tokens: first }, t0.elapsed());
            if r.is_ok() {
                sink.appended(slot, first);
            }
            if let Some(s) = self.slots[slot].as_mut() {
                let token = PromptToken { index: 0, id: prompt[0], logprob: None, top: &[] };
                sink.prompt_token(slot, &mut s.tag, token);
            }
            match r {
                Ok(()) => {
                    let held = ctx.seq_len(slot);
                    self.advance(ctx, slot, None, held, sink)
                }
                Err(e) => self.fail(ctx, slot, SlotFailure::Own(e), sink),
            }
        }
        Ok(())
    }

    /// Evaluates waiting prompts in chunks, slot by slot: all of them when no slot is
    /// generating, else `n_batch` tokens' worth. A slot whose prompt is in samples its first
    /// token (or ends, for a prompt-only job).
    pub fn prefill(&mut self, ctx: &mut dyn Context, sink: &mut dyn SlotSink<T>) {
        let chunk = self.chunk;
        let generating = self.slots.iter().flatten().any(|s| matches!(s.phase, Phase::Decode { .. }));
        let per_step = (ctx.n_batch() / chunk).max(1);
        let mut chunks_left = if generating { per_step } else { usize::MAX };
        for slot in 0..self.slots.len() {
            while chunks_left > 0 {
                let Some(s) = self.slots[slot].as_mut() else { break };
                let Phase::Prefill { next: from } = s.phase else { break };
                let len = s.prompt.len();
                if from >= len {
                    break;
                }
                if sink.cancelled(slot, &s.tag) {
                    s.seq.cancel();
                    self.finish(slot, StopReason::Cancelled, sink);
                    break;
                }
                let to = (from + chunk).min(len);
                let prompt = s.prompt.clone();
                s.phase = Phase::Prefill { next: to };
                chunks_left -= 1;
                let tokens = &prompt[from..to];
                let t0 = Instant::now();
                let r = ctx.prefill(slot, tokens);
                sink.pass(Pass::Prefill { slot, tokens }, t0.elapsed());
                if r.is_ok() {
                    sink.appended(slot, tokens);
                }
                match r {
                    Ok(()) if to == len => {
                        let held = ctx.seq_len(slot);
                        self.advance(ctx, slot, None, held, sink)
                    }
                    Ok(()) => {}
                    Err(e) => self.fail(ctx, slot, SlotFailure::Own(e), sink),
                }
            }
        }
    }

    /// Decodes every slot's pending token in one forward pass, then uses each slot's new logits.
    /// A slot whose next tokens are forced has them decoded in the same pass (see
    /// [`Engine::set_decode_forced`]); its steps then take the rows one by one.
    pub fn step(&mut self, ctx: &mut dyn Context, sink: &mut dyn SlotSink<T>) {
        let mut runs: Vec<(SeqId, Vec<Token>)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.as_ref()?.phase {
                Phase::Decode { token } => Some((i, vec![token])),
                Phase::Prefill { .. } => None,
            })
            .collect();
        if runs.is_empty() {
            return;
        }
        let drafted = if self.decode_forced { self.add_forced(&*ctx, &mut runs) } else { vec![0; runs.len()] };
        let held: Vec<usize> = runs.iter().map(|&(slot, _)| ctx.seq_len(slot)).collect();
        let refs: Vec<(SeqId, &[Token])> = runs.iter().map(|(slot, run)| (*slot, run.as_slice())).collect();
        let t0 = Instant::now();
        let r = ctx.decode_runs(&refs);
        sink.pass(Pass::Decode { runs: &refs }, t0.elapsed());
        match r {
            Ok(()) => {
                for ((&(slot, run), held), drafted) in refs.iter().zip(held).zip(drafted) {
                    self.take_run(ctx, slot, run, held, drafted, sink);
                }
            }
            Err(e) => {
                let e = std::sync::Arc::new(e);
                for &(slot, _) in &refs {
                    self.fail(ctx, slot, SlotFailure::Batch(e.clone()), sink);
                }
            }
        }
    }

    /// Appends to each run the forced tokens that token-by-token decoding would decode too, or,
    /// when nothing is forced, the sequence's speculative draft: none past the slot's token
    /// limit or its room in the context, and all runs together within one batch. (A stop the
    /// engine cannot foresee, such as a stop string, is handled by [`Engine::take_run`].)
    /// Returns, per run, how many of its tokens are a draft (to be verified, not taken).
    fn add_forced(&mut self, ctx: &dyn Context, runs: &mut [(SeqId, Vec<Token>)]) -> Vec<usize> {
        let mut room = ctx.n_batch().saturating_sub(runs.len());
        let mut drafted = vec![0; runs.len()];
        // Runs whose draft comes from the draft model, with the length each may have (its room
        // in the batch is set aside until the drafts are known).
        let mut from_model: Vec<(usize, usize)> = Vec::new();
        for (i, (slot, run)) in runs.iter_mut().enumerate() {
            let Some(s) = self.slots[*slot].as_mut() else { continue };
            if room == 0 {
                break;
            }
            if s.scoring.is_some() {
                continue; // a prompt token being scored: the sequence has not started
            }
            // The step that takes extra token i makes i + 2 tokens after the pending one's
            // generation began; it is decoded only if the sequence goes on after it.
            let mut k = room;
            if let Some(max) = s.seq.options().max_tokens {
                k = k.min(max.saturating_sub(s.seq.generated().len() + 1));
            }
            k = k.min(self.slot_ctx.saturating_sub(ctx.seq_len(*slot) + 1));
            let forced = s.seq.forced_ahead();
            if forced.is_empty() && self.draft.is_some() {
                let budget = s.seq.draft_budget(k);
                if budget > 0 {
                    from_model.push((i, budget));
                    room -= budget;
                    continue;
                }
            }
            if forced.is_empty() {
                let draft = s.seq.draft(k);
                drafted[i] = draft.len();
                run.extend_from_slice(&draft);
                room -= draft.len();
                continue;
            }
            let k = k.min(forced.len());
            run.extend_from_slice(&forced[..k]);
            room -= k;
        }
        if let (Some(dm), false) = (self.draft.as_mut(), from_model.is_empty()) {
            let histories: Vec<Vec<Token>> = from_model
                .iter()
                .map(|&(i, _)| {
                    let Some(s) = self.slots[runs[i].0].as_ref() else { return Vec::new() };
                    [&s.prompt[..], s.seq.generated()].concat()
                })
                .collect();
            let asks: Vec<DraftAsk<'_>> = from_model
                .iter()
                .zip(&histories)
                .map(|(&(i, max), h)| DraftAsk { slot: runs[i].0, tokens: h, max })
                .collect();
            let drafts = dm.draft(&asks);
            for ((i, _), draft) in from_model.into_iter().zip(drafts) {
                let Some(s) = self.slots[runs[i].0].as_ref() else { continue };
                let draft = s.seq.fit_draft(draft);
                drafted[i] = draft.len();
                runs[i].1.extend_from_slice(&draft);
            }
        }
        drafted
    }

    /// Uses the rows of a slot's decoded run one by one, as one decode call per token would
    /// have. Should the slot end before its last row (a stop string inside the forced
    /// tokens), the tokens after that row are cut from its KV again, which then holds what
    /// token-by-token decoding would have left. The last `drafted` tokens of the run are a
    /// speculative draft: a row is used only while the token sampled before it equals the
    /// draft token decoded there; at the first mismatch the sampled token is the slot's next
    /// token (as plain decoding gives it) and the rows after it are cut unsampled.
    fn take_run(
        &mut self,
        ctx: &mut dyn Context,
        slot: SeqId,
        run: &[Token],
        held: usize,
        drafted: usize,
        sink: &mut dyn SlotSink<T>,
    ) {
        let first_draft = run.len() - drafted;
        let mut accepted = 0;
        for (i, &token) in run.iter().enumerate() {
            if i >= first_draft {
                accepted += 1;
            }
            sink.appended(slot, &[token]);
            self.advance(ctx, slot, Some(i), held + i + 1, sink);
            let Some(&next) = run.get(i + 1) else { break };
            let cut = match self.slots[slot].as_ref().map(|s| s.phase) {
                Some(Phase::Decode { token }) if token == next => false,
                Some(_) if i + 1 >= first_draft => true, // a rejected draft token
                Some(_) => {
                    // Never expected: a step did not take the token its trie forced.
                    let e = RuntimeError::BadSequence { seq: slot, problem: "did not take a forced token" };
                    self.fail(ctx, slot, SlotFailure::Own(e), sink);
                    return;
                }
                None => {
                    if ctx.seq_len(slot) > held + i + 1 && ctx.truncate(slot, held + i + 1).is_err() {
                        ctx.clear(slot);
                        sink.cleared(slot);
                    }
                    return;
                }
            };
            if cut {
                if ctx.truncate(slot, held + i + 1).is_err() {
                    let e = RuntimeError::BadSequence { seq: slot, problem: "could not cut a rejected draft" };
                    self.fail(ctx, slot, SlotFailure::Own(e), sink);
                    return;
                }
                break;
            }
        }
        if drafted > 0 {
            if let Some(s) = self.slots[slot].as_mut() {
                s.seq.draft_verified(drafted, accepted);
            }
        }
    }

    /// Takes a running slot away (its client left, or a deadline passed): its sequence is
    /// cancelled and handed back with its data. The slot's KV stays as it is.
    pub fn remove(&mut self, slot: SeqId) -> Option<(T, crate::Sequence)> {
        let mut s = self.slots.get_mut(slot)?.take()?;
        s.seq.cancel();
        Some((s.tag, s.seq))
    }

    /// Uses the slot's fresh logits (the last call's last row for the slot, or row `row` of its
    /// run) with `held` tokens in its KV: the next prompt score, or the next sampled token.
    fn advance(
        &mut self,
        ctx: &mut dyn Context,
        slot: SeqId,
        row: Option<usize>,
        held: usize,
        sink: &mut dyn SlotSink<T>,
    ) {
        let Some(s) = self.slots[slot].as_mut() else { return };
        let logits = match row {
            None => ctx.logits(slot),
            Some(i) => ctx.logits_at(slot, i),
        };
        let can_continue = held < self.slot_ctx;
        match advance_slot(logits, can_continue, slot, s, sink, &mut self.top) {
            Outcome::Running => {}
            Outcome::Done(reason) => self.finish(slot, reason, sink),
            Outcome::Failed(e) => self.fail(ctx, slot, SlotFailure::Own(e), sink),
        }
    }

    fn finish(&mut self, slot: SeqId, reason: StopReason, sink: &mut dyn SlotSink<T>) {
        if let Some(s) = self.slots[slot].take() {
            sink.finished(slot, Finished { tag: s.tag, reason, sequence: s.seq, prompt: s.prompt });
        }
    }

    /// Ends a slot with an error; after a failed call its KV is not to be trusted, so it is
    /// cleared.
    fn fail(&mut self, ctx: &mut dyn Context, slot: SeqId, failure: SlotFailure, sink: &mut dyn SlotSink<T>) {
        ctx.clear(slot);
        if let Some(s) = self.slots[slot].take() {
            sink.failed(slot, s.tag, failure);
        }
    }
}

/// One slot's work on its fresh logits; `can_continue` is false when its KV has no room for
/// the token sampled now.
fn advance_slot<T>(
    logits: crate::error::Result<&[f32]>,
    can_continue: bool,
    slot: SeqId,
    s: &mut Slot<T>,
    sink: &mut dyn SlotSink<T>,
    top: &mut Vec<TokenProb>,
) -> Outcome {
    let logits = match logits {
        Ok(l) => l,
        Err(e) => return Outcome::Failed(e),
    };
    if let Some(sc) = s.scoring {
        if let Some(&id) = s.prompt.get(sc.next) {
            let logprob = raw_score(logits, id, sc.top, top);
            sink.prompt_token(slot, &mut s.tag, PromptToken { index: sc.next, id, logprob, top });
            s.scoring = Some(Scoring { next: sc.next + 1, ..sc });
            s.phase = Phase::Decode { token: id };
            return Outcome::Running;
        }
        s.scoring = None;
    }
    if s.prompt_only {
        return Outcome::Done(StopReason::MaxTokens);
    }
    if sink.cancelled(slot, &s.tag) {
        s.seq.cancel();
        return Outcome::Done(StopReason::Cancelled);
    }
    let step = match s.seq.step(logits, can_continue) {
        Ok(step) => step,
        Err(e) => return Outcome::Failed(e),
    };
    let flow = sink.token(slot, &mut s.tag, &step);
    let token = step.event.token;
    if let Some(reason) = step.finished {
        return Outcome::Done(reason);
    }
    if flow.is_break() {
        s.seq.cancel();
        return Outcome::Done(StopReason::Cancelled);
    }
    s.phase = Phase::Decode { token };
    Outcome::Running
}
