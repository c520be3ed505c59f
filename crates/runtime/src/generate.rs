//! [`generate`]: one sequence from a prompt to a stop condition — the generation engine
//! ([`crate::engine`]) with a single slot — with the timings users ask for.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nucleus_sampler::{SamplingParams, Token};

use crate::draft_model::DraftModel;
use crate::engine::{Engine, Finished, Pass, SlotFailure, SlotJob, SlotSink};
use crate::error::{Result, RuntimeError};
use crate::model::{Context, ContextOptions, Model, SeqId};
use crate::sequence::{Sequence, SequenceOptions, Step, StopReason, TokenEvent};
use crate::speculative::{SpecOptions, SpecType};

/// Prompt tokens per forward pass when a prompt is evaluated, chunks starting at multiples of it.
///
/// For a batch-invariant model ([`crate::Model::batch_invariant`]: flash attention off, no
/// tinyBLAS, no repacked weights, no tiled K-quant matmul — the defaults here) the chunk size
/// changes no bit; the server uses it as the unit in which prompts are interleaved with other
/// slots' decode steps. Should a model be batch dependent anyway (e.g. `GGML_CPU_TILED_MM=1`),
/// [`generate`] (and so `nucleus generate` and the Python, Node and C bindings) and the server's
/// default `--prefill-chunk` use the same chunks, so a seeded cold request still gets the same
/// answer on all of them.
pub const PREFILL_CHUNK: usize = 64;

/// What a finished generation reports.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerationStats {
    /// Prompt length in tokens.
    pub prompt_tokens: usize,
    /// Tokens generated (a final end-of-generation token counts).
    pub generated_tokens: usize,
    /// Wall time of the prompt's forward passes.
    pub prompt_time: Duration,
    /// Wall time from the end of the prompt to the end (sampling, detokenizing, forward passes).
    pub generation_time: Duration,
    /// Time spent in the sampler chain.
    pub sampling_time: Duration,
    /// Why it ended.
    pub stop: StopReason,
    /// The generated token ids.
    pub tokens: Vec<Token>,
    /// What speculative decoding did (`None` when it was off).
    pub spec: Option<crate::speculative::SpecStats>,
}

impl GenerationStats {
    /// Prompt tokens per second.
    pub fn prompt_tokens_per_sec(&self) -> f64 {
        per_sec(self.prompt_tokens, self.prompt_time)
    }

    /// Generated tokens per second.
    pub fn generation_tokens_per_sec(&self) -> f64 {
        per_sec(self.generated_tokens, self.generation_time)
    }

    /// Mean sampling time per generated token.
    pub fn sampling_time_per_token(&self) -> Duration {
        if self.generated_tokens == 0 {
            Duration::ZERO
        } else {
            self.sampling_time / self.generated_tokens as u32
        }
    }
}

fn per_sec(n: usize, t: Duration) -> f64 {
    let s = t.as_secs_f64();
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

/// Generates from `prompt` in sequence 0 of `ctx` (cleared first; the prompt goes in in
/// [`PREFILL_CHUNK`]-token chunks). `on_token` sees every token
/// as it is made and may stop the generation; so may `cancel` (checked between forward passes).
pub fn generate(
    model: &dyn Model,
    ctx: &mut dyn Context,
    prompt: &[Token],
    sampling: &SamplingParams,
    opts: &SequenceOptions,
    cancel: Option<&AtomicBool>,
    on_token: &mut dyn FnMut(&TokenEvent<'_>) -> ControlFlow<()>,
) -> Result<GenerationStats> {
    let seq = Sequence::new(model, sampling, opts.clone())?;
    generate_sequence(ctx, prompt, seq, cancel, on_token)
}

/// Like [`generate`] with a sequence the caller built (e.g. with a grammar constraint,
/// [`Sequence::set_grammar`]). It runs on the generation [`Engine`] with one slot, the same
/// engine the server runs its slots on.
pub fn generate_sequence(
    ctx: &mut dyn Context,
    prompt: &[Token],
    seq: Sequence,
    cancel: Option<&AtomicBool>,
    on_token: &mut dyn FnMut(&TokenEvent<'_>) -> ControlFlow<()>,
) -> Result<GenerationStats> {
    run_one(ctx, prompt, seq, None, cancel, on_token)
}

/// Like [`generate_sequence`] for a sequence that drafts with a draft model
/// ([`Sequence::set_model_speculation`]): `draft`'s context (one sequence at least) proposes
/// the tokens the model verifies.
pub fn generate_sequence_drafted(
    ctx: &mut dyn Context,
    prompt: &[Token],
    seq: Sequence,
    draft: DraftModel,
    cancel: Option<&AtomicBool>,
    on_token: &mut dyn FnMut(&TokenEvent<'_>) -> ControlFlow<()>,
) -> Result<GenerationStats> {
    run_one(ctx, prompt, seq, Some(draft), cancel, on_token)
}

/// Like [`generate_sequence`], speculating as `spec` (a request's checked `speculative` field,
/// [`crate::spec_binding_option`]) says: not at all (`None`), with n-gram drafts, or with
/// drafts from `draft`'s model in a fresh context of its own made with `draft`'s options. One
/// place for what every binding's generation does with the field; `draft` asked for without
/// a draft model is [`RuntimeError::NoDraftModel`].
#[allow(clippy::too_many_arguments)]
pub fn generate_speculating(
    ctx: &mut dyn Context,
    prompt: &[Token],
    mut seq: Sequence,
    spec: Option<(SpecType, SpecOptions)>,
    draft: Option<(&dyn Model, &ContextOptions)>,
    cancel: Option<&AtomicBool>,
    on_token: &mut dyn FnMut(&TokenEvent<'_>) -> ControlFlow<()>,
) -> Result<GenerationStats> {
    match spec {
        Some((SpecType::Draft, o)) => {
            let (model, opts) = draft.ok_or(RuntimeError::NoDraftModel)?;
            seq.set_model_speculation(o);
            let drafter = DraftModel::new(model.new_context(opts)?);
            generate_sequence_drafted(ctx, prompt, seq, drafter, cancel, on_token)
        }
        Some((_, o)) => {
            seq.set_speculation(o);
            generate_sequence(ctx, prompt, seq, cancel, on_token)
        }
        None => generate_sequence(ctx, prompt, seq, cancel, on_token),
    }
}

fn run_one(
    ctx: &mut dyn Context,
    prompt: &[Token],
    mut seq: Sequence,
    draft: Option<DraftModel>,
    cancel: Option<&AtomicBool>,
    on_token: &mut dyn FnMut(&TokenEvent<'_>) -> ControlFlow<()>,
) -> Result<GenerationStats> {
    const SLOT: usize = 0;
    if prompt.is_empty() {
        return Err(RuntimeError::EmptyPrompt);
    }
    if prompt.len() >= ctx.n_ctx() {
        return Err(RuntimeError::PromptTooLong { prompt: prompt.len(), n_ctx: ctx.n_ctx() });
    }
    seq.accept_prompt(prompt);
    ctx.clear(SLOT);

    let mut engine = Engine::new(1, ctx.n_ctx(), PREFILL_CHUNK.min(ctx.n_batch()).max(1));
    if let Some(d) = draft {
        engine.set_draft_model(d);
    }
    let prompt_only = seq.options().max_tokens == Some(0);
    let job = SlotJob { tag: (), prompt: prompt.into(), sequence: seq, cached: 0, score_prompt: None, prompt_only };
    let t0 = Instant::now();
    let mut sink = OneSlot { cancel, on_token, prompt_end: t0, outcome: None };
    if engine.start(ctx, SLOT, job, &mut sink).is_err() {
        return Err(RuntimeError::BadSequence { seq: SLOT, problem: "the slot is taken" });
    }
    while !engine.is_idle() {
        engine.prefill(ctx, &mut sink);
        engine.step(ctx, &mut sink);
    }
    let end = Instant::now();
    let (stop, seq) = match sink.outcome {
        Some(Ok(done)) => done,
        Some(Err(e)) => return Err(e),
        None => return Err(RuntimeError::BadSequence { seq: SLOT, problem: "the generation did not end" }),
    };
    Ok(GenerationStats {
        prompt_tokens: prompt.len(),
        generated_tokens: seq.generated().len(),
        prompt_time: sink.prompt_end - t0,
        generation_time: end - sink.prompt_end,
        sampling_time: seq.sample_time(),
        stop,
        tokens: seq.generated().to_vec(),
        spec: seq.spec_stats(),
    })
}

/// The one-slot driver: the caller's callback and cancel flag, and what the stats need.
struct OneSlot<'a, 'f> {
    cancel: Option<&'a AtomicBool>,
    on_token: &'a mut (dyn FnMut(&TokenEvent<'_>) -> ControlFlow<()> + 'f),
    /// When the last prompt chunk was evaluated (the start, until one is).
    prompt_end: Instant,
    /// How it ended.
    outcome: Option<Result<(StopReason, Sequence)>>,
}

impl SlotSink<()> for OneSlot<'_, '_> {
    fn pass(&mut self, pass: Pass<'_>, _took: Duration) {
        if let Pass::Prefill { .. } = pass {
            self.prompt_end = Instant::now();
        }
    }

    fn cancelled(&mut self, _slot: SeqId, _tag: &()) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    fn token(&mut self, _slot: SeqId, _tag: &mut (), step: &Step<'_>) -> ControlFlow<()> {
        (self.on_token)(&step.event)
    }

    fn finished(&mut self, _slot: SeqId, done: Finished<()>) {
        self.outcome = Some(Ok((done.reason, done.sequence)));
    }

    fn failed(&mut self, _slot: SeqId, _tag: (), failure: SlotFailure) {
        self.outcome = Some(Err(failure.into_error()));
    }
}
