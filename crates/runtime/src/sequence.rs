//! [`Sequence`]: one generation's state between forward passes — sampler, detokenizer, stop
//! strings, limits — fed one row of logits at a time. The generation engine
//! ([`crate::engine`]) drives it, in [`crate::generate`] and in the server alike.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleus_grammar::continuations::TrieConstraint;
use nucleus_grammar::{AcceptError, GrammarSampler};
use nucleus_sampler::probs::{top_n_post, TokenProb};
use nucleus_sampler::{Candidates, SamplingParams, Token, TokenSampler};

use crate::error::{Result, RuntimeError};
use crate::model::{Model, Tokenizer};
use crate::reasoning::{harmony, BlockStyle, ReasoningOptions, ThinkSplitter};
use crate::speculative::{NgramDrafter, SpecOptions, SpecStats};
use crate::step_report::{self, StepSink, StepTrace};
use crate::stop::StopMatcher;
use crate::utf8::Utf8Stream;

/// Per-sequence generation settings besides sampling.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SequenceOptions {
    /// Most tokens to generate (`None`: until end of generation or a full context).
    pub max_tokens: Option<usize>,
    /// Stop strings: generation ends before the first one and its text is never emitted.
    pub stop: Vec<String>,
    /// Report each token's log-probability and this many top alternatives (under the model's
    /// raw softmax). `None` skips that work.
    pub n_probs: Option<usize>,
    /// Render control tokens (`<|im_start|>`) as text instead of nothing.
    pub render_special: bool,
    /// With `n_probs`: report the distribution the token was drawn from (after the chain,
    /// llama-server's `post_sampling_probs`) instead of the model's raw softmax.
    pub post_sampling_probs: bool,
    /// Tokens that end the generation as an end-of-generation token does (vLLM's
    /// `stop_token_ids`); they are not part of the text.
    pub stop_tokens: Vec<Token>,
    /// End-of-generation and stop tokens are banned until this many tokens have been
    /// generated (vLLM's `min_tokens`).
    pub min_tokens: usize,
}

/// Why a generation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The model produced an end-of-generation token (EOS, end of turn).
    EndOfGeneration,
    /// A stop string appeared (it is not part of the output).
    StopString(String),
    /// The token limit was reached.
    MaxTokens,
    /// The context has no room for another token.
    ContextFull,
    /// The caller stopped it.
    Cancelled,
}

impl StopReason {
    /// A short machine-friendly name (`eog`, `stop`, `limit`, `context`, `cancelled`).
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::EndOfGeneration => "eog",
            StopReason::StopString(_) => "stop",
            StopReason::MaxTokens => "limit",
            StopReason::ContextFull => "context",
            StopReason::Cancelled => "cancelled",
        }
    }
}

/// One generated token, as reported to the caller.
#[derive(Clone, Copy, Debug)]
pub struct TokenEvent<'a> {
    /// 0-based position among generated tokens.
    pub index: usize,
    /// The token id.
    pub token: Token,
    /// Text released by this step: complete characters only, never stop-string text. It may be
    /// empty (held back) or include text held back by earlier steps.
    pub text: &'a str,
    /// This token's own bytes (possibly part of a character).
    pub piece: &'a [u8],
    /// Natural-log probability of the token under the model's raw softmax (with `n_probs`;
    /// under the post-chain distribution with `post_sampling_probs`).
    pub logprob: Option<f32>,
    /// Top alternatives under the same distribution, best first (with `n_probs`).
    pub top: &'a [TokenProb],
}

/// The result of [`Sequence::step`].
#[derive(Clone, Debug)]
pub struct Step<'a> {
    /// The token and its text.
    pub event: TokenEvent<'a>,
    /// `Some` when this was the last token.
    pub finished: Option<StopReason>,
}

/// One sequence's generation state.
pub struct Sequence {
    sampler: TokenSampler,
    tokenizer: Arc<dyn Tokenizer>,
    opts: SequenceOptions,
    utf8: Utf8Stream,
    stop: StopMatcher,
    piece: Vec<u8>,
    decoded: String,
    released: String,
    top: Vec<TokenProb>,
    generated: Vec<Token>,
    finished: Option<StopReason>,
    sample_time: Duration,
    /// Sorted ids banned while fewer than `min_tokens` are generated.
    banned: Vec<Token>,
    /// Output constraint, if any ([`Sequence::set_grammar`]).
    grammar: Option<GrammarSampler>,
    /// Token-trie constraint and whether it is greedy, if any ([`Sequence::set_token_trie`]).
    trie: Option<(TrieConstraint, bool)>,
    /// Step reports: top-n and where they go ([`Sequence::set_step_report`]).
    report: Option<(usize, StepSink)>,
    /// What the last sampling step recorded for its report.
    trace: StepTrace,
    /// Speculative drafts over the tokens so far ([`Sequence::set_speculation`]).
    spec: Option<NgramDrafter>,
    /// Candidates for counting what the grammar allows (step reports only).
    mask_scratch: Candidates,
    /// A reasoning block, if answers may start with one ([`Sequence::set_reasoning`]).
    reasoning: Option<Reasoning>,
}

/// A sequence's reasoning block: where it is, what it cost, and the forced end.
struct Reasoning {
    opts: ReasoningOptions,
    /// The generated text read for the block (the same rule the server reads answers with).
    splitter: ThinkSplitter,
    /// The forced end's tokens.
    end_tokens: Vec<Token>,
    /// Forced tokens still to take, in order.
    forced: VecDeque<Token>,
    /// Tokens generated inside the block (forced ones and the closing tag's included).
    tokens: usize,
    /// The budget forced the end.
    forced_end: bool,
    /// Tokens taken unconstrained at the start while they could still open the block; if the
    /// answer turns out to have none, the constraint is given them.
    start_tokens: Vec<Token>,
}

impl Sequence {
    /// A sequence sampling with `params` (validated and built against the model's vocabulary,
    /// so DRY breakers are tokenized by the model and `ignore_eos` knows its EOG tokens).
    pub fn new(model: &dyn Model, params: &SamplingParams, opts: SequenceOptions) -> Result<Self> {
        let chain = params.build(model.n_vocab(), Some(model.vocab()))?;
        let mut banned = Vec::new();
        if opts.min_tokens > 0 {
            let tok = model.tokenizer();
            banned = (0..model.n_vocab() as Token).filter(|&t| tok.is_eog(t)).collect();
            banned.extend(opts.stop_tokens.iter().copied());
            banned.sort_unstable();
            banned.dedup();
        }
        Ok(Sequence {
            sampler: TokenSampler::new(chain),
            tokenizer: model.tokenizer(),
            stop: StopMatcher::new(&opts.stop),
            top: Vec::with_capacity(opts.n_probs.unwrap_or(0)),
            opts,
            utf8: Utf8Stream::new(),
            piece: Vec::new(),
            decoded: String::new(),
            released: String::new(),
            generated: Vec::new(),
            finished: None,
            sample_time: Duration::ZERO,
            banned,
            grammar: None,
            trie: None,
            report: None,
            trace: StepTrace::default(),
            mask_scratch: Candidates::new(),
            reasoning: None,
            spec: None,
        })
    }

    /// Drafts tokens from n-gram matches over the prompt and the generated tokens (see
    /// [`crate::speculative`]); the engine verifies them exactly, so the answer does not
    /// change. Call it before [`Sequence::accept_prompt`], which gives the drafter the prompt.
    pub fn set_speculation(&mut self, opts: SpecOptions) {
        self.spec = Some(NgramDrafter::new(opts));
    }

    /// Like [`Sequence::set_speculation`], for a sequence whose prompt was accepted already:
    /// the drafter is given `prompt` (the tokens [`Sequence::accept_prompt`] took) here.
    pub fn set_speculation_over(&mut self, opts: SpecOptions, prompt: &[Token]) {
        let mut d = NgramDrafter::new(opts);
        for &t in prompt {
            d.push(t);
        }
        self.spec = Some(d);
    }

    /// Lets the n-gram drafter also draft from `cache` (recent sequences' tokens: see
    /// [`crate::ngram_cache`]) and leave this sequence's tokens in it when it is dropped. After
    /// [`Sequence::set_speculation`] or [`Sequence::set_speculation_over`]; no effect otherwise.
    pub fn set_speculation_cache(&mut self, cache: std::sync::Arc<crate::NgramCache>) {
        if let Some(d) = self.spec.as_mut() {
            d.set_cache(cache);
        }
    }

    /// What speculation did so far (`None` without it).
    pub fn spec_stats(&self) -> Option<SpecStats> {
        self.spec.as_ref().map(NgramDrafter::stats)
    }

    /// Up to `max` tokens the next steps are likely to take, to be decoded after the pending
    /// token in one pass and verified row by row ([`Sequence::draft_verified`]). Empty without
    /// speculation, once finished, or while the next tokens are forced (those are free). Under
    /// an active grammar the draft ends before the first token the grammar refuses; under a
    /// token trie nothing is drafted (its forced tokens are decoded ahead already).
    pub fn draft(&self, max: usize) -> Vec<Token> {
        let Some(spec) = self.drafter(max) else { return Vec::new() };
        if spec.drafts_from_model() {
            return Vec::new();
        }
        let draft = spec.draft(max);
        self.fit_draft(draft)
    }

    /// Drafts tokens with a draft model ([`crate::draft_model`]) instead of n-gram lookup: the
    /// engine that runs the sequence asks its draft model, and verifies the drafts exactly as
    /// n-gram drafts. Any time before the first step.
    pub fn set_model_speculation(&mut self, opts: SpecOptions) {
        self.spec = Some(NgramDrafter::for_model(opts));
    }

    /// With a draft model: how many tokens to ask it for now (at most `max`; 0 when nothing is
    /// to be drafted, for the reasons [`Sequence::draft`] gives none).
    pub fn draft_budget(&self, max: usize) -> usize {
        match self.drafter(max) {
            Some(spec) if spec.drafts_from_model() => spec.budget(max),
            _ => 0,
        }
    }

    /// The drafter, when a draft of up to `max` tokens may be made now.
    fn drafter(&self, max: usize) -> Option<&NgramDrafter> {
        let spec = self.spec.as_ref()?;
        if max == 0 || self.finished.is_some() || self.trie.is_some() || !self.forced_ahead().is_empty() {
            return None;
        }
        if self.reasoning.as_ref().is_some_and(|r| !r.forced.is_empty()) {
            return None;
        }
        Some(spec)
    }

    /// A proposed draft cut before the first token an active grammar refuses; empty when what
    /// is left is shorter than `draft_min`.
    pub fn fit_draft(&self, mut draft: Vec<Token>) -> Vec<Token> {
        let unconstrained = self.reasoning.as_ref().is_some_and(|r| r.unconstrained());
        if let Some(g) = self.grammar.as_ref().filter(|g| g.is_active() && !unconstrained) {
            let mut g = g.clone();
            let ok = draft.iter().take_while(|&&t| g.try_accept(t).is_ok()).count();
            draft.truncate(ok);
        }
        if self.spec.as_ref().is_some_and(|s| !s.long_enough(draft.len())) {
            draft.clear();
        }
        draft
    }

    /// Records how a draft fared: `drafted` tokens decoded, the first `accepted` taken.
    pub fn draft_verified(&mut self, drafted: usize, accepted: usize) {
        if let Some(spec) = self.spec.as_mut() {
            spec.verified(drafted, accepted);
        }
    }

    /// Reads the answer for a reasoning block (see [`crate::reasoning`]): while the model
    /// thinks, the grammar and token trie wait (they constrain the answer after the block, from
    /// their start), and once `opts.budget` tokens of thinking are spent the block's end is
    /// forced — after the character in progress is complete — as tokens taken without a
    /// sampling step (the sampler's history sees them; the random stream does not move).
    ///
    /// In harmony ([`BlockStyle::Harmony`]) the markers are control tokens on gpt-oss: their
    /// text is rendered into the pieces (which control tokens otherwise are not), so the reader
    /// sees the channels; no other control token is rendered.
    pub fn set_reasoning(&mut self, opts: ReasoningOptions) -> Result<()> {
        let end_tokens = self.tokenizer.encode(&opts.forced_end_text(), false, true)?;
        let mut r = Reasoning {
            splitter: ThinkSplitter::with_style(opts.style, opts.starts_inside),
            opts,
            end_tokens,
            forced: VecDeque::new(),
            tokens: 0,
            forced_end: false,
            start_tokens: Vec::new(),
        };
        r.maybe_force(false);
        if r.opts.budget == Some(0) && r.splitter.undecided() && r.forced.is_empty() {
            // No thinking at all where the model would open the first message itself: the
            // final channel's header is forced at once.
            if let Some(header) = r.opts.forced_final_header() {
                r.forced_end = true;
                r.forced.extend(self.tokenizer.encode(&header, false, true)?);
            }
        }
        self.reasoning = Some(r);
        Ok(())
    }

    /// Whether the answer is read for harmony (its markers' control tokens are rendered).
    fn reads_harmony(&self) -> bool {
        self.reasoning.as_ref().is_some_and(|r| r.opts.style == BlockStyle::Harmony)
    }

    /// Tokens generated inside the reasoning block (0 without one).
    pub fn reasoning_tokens(&self) -> usize {
        self.reasoning.as_ref().map_or(0, |r| r.tokens)
    }

    /// Whether the reasoning budget forced the block's end.
    pub fn reasoning_forced_end(&self) -> bool {
        self.reasoning.as_ref().is_some_and(|r| r.forced_end)
    }

    /// Constrains the output with `grammar` (see [`crate::constraint`]). Sampling follows
    /// llama.cpp: the chain runs on the raw logits; only if the grammar rejects its token are
    /// the logits masked by the grammar and the chain run again. End of generation is allowed
    /// only where the grammar can end, and the sequence ends once the grammar is complete.
    pub fn set_grammar(&mut self, grammar: GrammarSampler) {
        self.grammar = Some(grammar);
    }

    /// Constrains the output to the leaves of a token trie (nucleus-grammar `continuations`):
    /// only tokens continuing a leaf are allowed; where exactly one continuation is possible
    /// the token is taken without a sampling step (fast-forward); in greedy mode the most likely
    /// allowed token is taken, in sampled mode the chain samples among the allowed ones. The
    /// sequence ends when a leaf with no longer continuation is complete.
    pub fn set_token_trie(&mut self, trie: TrieConstraint, greedy: bool) {
        self.trie = Some((trie, greedy));
    }

    /// [`Sequence::set_token_trie`] when `trie` is given (a binding's per-model setting).
    pub fn with_token_trie(mut self, trie: Option<crate::constraint::TrieSetting>) -> Self {
        if let Some((t, greedy)) = trie {
            self.set_token_trie(t, greedy);
        }
        self
    }

    /// Reports every step to `sink` (see [`crate::step_report`]) with the top `n` of both
    /// distributions. Tokens do not change: sampling takes the chain's full path, which gives
    /// the fast paths' tokens, and costs a few passes over the vocabulary per token more.
    pub fn set_step_report(&mut self, n: usize, sink: StepSink) {
        self.report = Some((n, sink));
    }

    /// The tokens a token-trie constraint forces next, in order (a single continuation and no
    /// leaf ending on the way): the steps that follow will take them without sampling, so they
    /// may be decoded ahead in one forward pass. Empty without a trie or once finished.
    pub fn forced_ahead(&self) -> Vec<Token> {
        if let Some(r) = self.reasoning.as_ref().filter(|r| !r.forced.is_empty()) {
            return if self.finished.is_none() { r.forced.iter().copied().collect() } else { Vec::new() };
        }
        if self.reasoning.as_ref().is_some_and(|r| r.unconstrained()) {
            return Vec::new();
        }
        match &self.trie {
            Some((trie, _)) if self.finished.is_none() && !trie.is_finished() => trie.forced(),
            _ => Vec::new(),
        }
    }

    /// The settings this sequence was made with.
    pub fn options(&self) -> &SequenceOptions {
        &self.opts
    }

    /// Feeds prompt tokens to the sampler's history (penalties and DRY see the prompt, as in
    /// llama.cpp's server).
    pub fn accept_prompt(&mut self, tokens: &[Token]) {
        for &t in tokens {
            self.sampler.accept(t);
            if let Some(spec) = self.spec.as_mut() {
                spec.push(t);
            }
        }
    }

    /// Samples the next token from `logits` and works out its text. `can_continue` is false
    /// when the context has no room to decode this token, making it the last one. Call it until
    /// a step reports `finished`.
    pub fn step(&mut self, logits: &[f32], can_continue: bool) -> Result<Step<'_>> {
        let t0 = Instant::now();
        let token = self.sample(logits)?;
        self.sample_time += t0.elapsed();
        if let Some((n, sink)) = self.report.as_mut() {
            sink(step_report::build(logits, token, &self.sampler, &self.trace, *n));
        }
        let index = self.generated.len();
        self.generated.push(token);
        if let Some(spec) = self.spec.as_mut() {
            spec.push(token);
        }

        let mut logprob = None;
        self.top.clear();
        if let Some(k) = self.opts.n_probs {
            if self.opts.post_sampling_probs {
                // Fast paths may defer building the full final array; rebuild it exactly.
                let cands = self.sampler.materialize_candidates(logits);
                let p = cands.as_slice().iter().find(|d| d.id == token).map_or(0.0, |d| d.p);
                logprob = Some(if p > 0.0 { p.ln() } else { f32::MIN });
                top_n_post(cands, k, &mut self.top);
            } else {
                logprob = crate::score::raw_score(logits, token, k, &mut self.top);
            }
        }

        self.piece.clear();
        self.decoded.clear();
        self.released.clear();
        let mut finished = None;
        if self.tokenizer.is_eog(token) || self.opts.stop_tokens.contains(&token) {
            finished = Some(StopReason::EndOfGeneration);
        } else {
            let harmony = self.reads_harmony();
            append_piece(&*self.tokenizer, token, self.opts.render_special, harmony, &mut self.piece);
            self.utf8.push(&self.piece, &mut self.decoded);
            self.read_reasoning(token)?;
            if let Some(i) = self.stop.push(&self.decoded, &mut self.released) {
                finished = Some(StopReason::StopString(self.stop.stops()[i].clone()));
            }
        }
        if finished.is_none() && self.grammar.as_ref().is_some_and(|g| g.is_complete()) {
            finished = Some(StopReason::EndOfGeneration);
        }
        if finished.is_none() && self.trie.as_ref().is_some_and(|(t, _)| t.is_finished()) {
            finished = Some(StopReason::EndOfGeneration);
        }
        if finished.is_none() && self.opts.max_tokens.is_some_and(|m| self.generated.len() >= m) {
            finished = Some(StopReason::MaxTokens);
        }
        if finished.is_none() && !can_continue {
            finished = Some(StopReason::ContextFull);
        }
        if finished.is_some() {
            let stopped_by_string = matches!(finished, Some(StopReason::StopString(_)));
            self.finished = finished;
            if !stopped_by_string {
                self.flush(); // may still find a stop string in the released tail
            }
        }
        let finished = self.finished.clone();
        let event = TokenEvent { index, token, text: &self.released, piece: &self.piece, logprob, top: &self.top };
        Ok(Step { event, finished })
    }

    /// Follows the reasoning block with this step's decoded text: counts a thinking token, forces
    /// the end once the budget is spent, and gives the constraint the start tokens it did not
    /// see when the answer turns out to have no block.
    fn read_reasoning(&mut self, token: Token) -> Result<()> {
        let pending = self.utf8.has_pending();
        let Some(r) = self.reasoning.as_mut() else { return Ok(()) };
        // A harmony tool call's arguments are not thinking (nor are they constrained).
        let was_open = r.splitter.thinking() || r.splitter.undecided();
        // Only the phase matters here (the server reads the text itself): nothing is copied.
        r.splitter.feed(&self.decoded, &mut |_, _| {});
        if r.splitter.undecided() {
            r.start_tokens.push(token);
        } else if r.splitter.opened() {
            // Inside the block, or the token that closed it; the start tokens that opened it
            // were thinking too.
            if was_open {
                r.tokens += 1 + std::mem::take(&mut r.start_tokens).len();
            }
        } else {
            // No block after all: `sample` gave the start tokens to the constraint already.
            r.start_tokens.clear();
        }
        if let Some(r) = self.reasoning.as_mut() {
            r.maybe_force(pending);
        }
        Ok(())
    }

    /// Picks and accepts the next token: a forced one, else the chain (with `min_tokens` bans),
    /// checked against the grammar if there is one and the reasoning block (if any) is over.
    fn sample(&mut self, logits: &[f32]) -> Result<Token> {
        let banned: &[Token] = if self.generated.len() < self.opts.min_tokens { &self.banned } else { &[] };
        let ban = |c: &mut nucleus_sampler::Candidates| {
            let data = c.as_mut_slice();
            for &b in banned {
                // After a fill, candidate i is token i.
                if let Some(d) = data.get_mut(b as usize).filter(|d| d.id == b) {
                    d.logit = f32::NEG_INFINITY;
                }
            }
        };
        let tracing = self.report.is_some();
        self.trace.clear();
        if let Some(t) = self.reasoning.as_mut().and_then(|r| r.forced.pop_front()) {
            self.sampler.accept(t);
            return Ok(t);
        }
        // Thinking, or (harmony) inside a tool call's arguments: the constraints wait.
        let thinking = self.reasoning.as_ref().is_some_and(|r| r.splitter.thinking() || r.splitter.in_call());
        let undecided = self.reasoning.as_ref().is_some_and(|r| r.splitter.undecided());
        let in_call = self.reasoning.as_ref().is_some_and(|r| r.splitter.in_call());
        let harmony = self.reads_harmony();
        if let Some((trie, greedy)) = self.trie.as_mut().filter(|(t, _)| !t.is_finished() && !thinking && !undecided) {
            let trace = tracing.then_some(&mut self.trace);
            return sample_in_trie(&mut self.sampler, trie, *greedy, logits, trace);
        }
        if thinking && (self.grammar.is_some() || self.trie.is_some()) {
            // A constraint waits for the answer, so the model may not end inside the block: an
            // end-of-generation token there closes the block instead (the forced end) — except
            // after a harmony tool call, which ends the turn.
            let t = if tracing {
                self.trace.sampled = true;
                self.sampler.apply_traced(logits, ban, &mut self.trace.counts)?
            } else if banned.is_empty() {
                self.sampler.apply(logits)?
            } else {
                self.sampler.apply_steered(logits, ban)?
            };
            let ends = !in_call && (self.tokenizer.is_eog(t) || self.opts.stop_tokens.contains(&t));
            let t = match self.reasoning.as_mut().filter(|_| ends).and_then(Reasoning::force_end) {
                Some(first) => first,
                None => t,
            };
            self.sampler.accept(t);
            return Ok(t);
        }
        let Some(g) = self.grammar.as_mut().filter(|g| g.is_active() && !thinking) else {
            if tracing {
                self.trace.sampled = true;
                let token = self.sampler.apply_traced(logits, ban, &mut self.trace.counts)?;
                self.sampler.accept(token);
                return Ok(token);
            }
            return Ok(if banned.is_empty() {
                self.sampler.sample(logits)?
            } else {
                self.sampler.sample_steered(logits, ban)?
            });
        };
        let first = if tracing {
            self.trace.sampled = true;
            self.trace.allowed = Some(count_allowed(g, logits, &mut self.mask_scratch));
            self.sampler.apply_traced(logits, ban, &mut self.trace.counts)?
        } else if banned.is_empty() {
            self.sampler.apply(logits)?
        } else {
            self.sampler.apply_steered(logits, ban)?
        };
        if undecided {
            // At the start of an answer that may open a reasoning block: a token that keeps
            // that possible is taken without the constraint (it waits for the answer).
            let mut piece = Vec::new();
            append_piece(&*self.tokenizer, first, self.opts.render_special, harmony, &mut piece);
            let text = String::from_utf8_lossy(&piece);
            if self.reasoning.as_ref().is_some_and(|r| r.splitter.would_open(&text)) {
                self.sampler.accept(first);
                return Ok(first);
            }
            // No block after all: the constraint takes the start as the answer's first tokens.
            let start = self.reasoning.as_mut().map(|r| std::mem::take(&mut r.start_tokens)).unwrap_or_default();
            for t in start {
                g.try_accept(t).map_err(|e| RuntimeError::GrammarDeadEnd(e.to_string()))?;
            }
        }
        let token = if g.is_allowed(first) {
            first
        } else {
            let steer = |c: &mut Candidates| {
                ban(c);
                nucleus_sampler::Sampler::apply(g, c);
            };
            let steered = if tracing {
                self.trace.resampled = true;
                self.sampler.apply_traced(logits, steer, &mut self.trace.counts)
            } else {
                self.sampler.apply_steered(logits, steer)
            };
            match steered {
                // Every token masked out because the grammar became too ambiguous to follow:
                // say so rather than "no candidate left".
                Err(_) if g.exhausted() => {
                    return Err(RuntimeError::GrammarDeadEnd(AcceptError::TooAmbiguous.to_string()))
                }
                r => r?,
            }
        };
        g.try_accept(token).map_err(|e| RuntimeError::GrammarDeadEnd(e.to_string()))?;
        self.sampler.accept(token);
        Ok(token)
    }

    /// Ends the sequence from outside (cancelled): text still held back is dropped.
    pub fn cancel(&mut self) {
        self.utf8.reset();
        self.finished = Some(StopReason::Cancelled);
    }

    /// Releases held text at a natural end: an unfinished character becomes U+FFFD; a partial
    /// stop-string match was not a stop after all.
    fn flush(&mut self) {
        let mut tail = String::new();
        self.utf8.finish(&mut tail);
        if !tail.is_empty() {
            // Even a U+FFFD could complete a stop string.
            if let Some(i) = self.stop.push(&tail, &mut self.released) {
                self.finished = Some(StopReason::StopString(self.stop.stops()[i].clone()));
                return;
            }
        }
        self.stop.finish(&mut self.released);
    }

    /// Why the sequence ended, once it has.
    pub fn finished(&self) -> Option<&StopReason> {
        self.finished.as_ref()
    }

    /// Tokens generated so far (including a final end-of-generation token).
    pub fn generated(&self) -> &[Token] {
        &self.generated
    }

    /// Time spent in the sampler chain.
    pub fn sample_time(&self) -> Duration {
        self.sample_time
    }
}

impl Reasoning {
    /// Nothing constrains the next token (inside the block, at a start that may open one, or in
    /// a harmony tool call's arguments).
    fn unconstrained(&self) -> bool {
        self.splitter.thinking() || self.splitter.undecided() || self.splitter.in_call()
    }

    /// Queues the forced end now and takes its first token (`None` if it is already queued).
    fn force_end(&mut self) -> Option<Token> {
        if !self.forced.is_empty() || self.end_tokens.is_empty() {
            return None;
        }
        self.forced_end = true;
        self.forced.extend(self.end_tokens.iter().copied());
        self.forced.pop_front()
    }

    /// Queues the forced end once the budget is spent inside the block (not while a character
    /// is incomplete: `pending`).
    fn maybe_force(&mut self, pending: bool) {
        let spent = self.opts.budget.is_some_and(|b| self.tokens >= b);
        if spent && self.splitter.thinking() && self.forced.is_empty() && !self.forced_end && !pending {
            self.forced_end = true;
            self.forced.extend(self.end_tokens.iter().copied());
        }
    }
}

/// Appends `token`'s text to `out` as a sequence reads it: control tokens only with
/// `render_special`, except harmony's markers when the answer is read for harmony (`harmony`).
fn append_piece(tok: &dyn Tokenizer, token: Token, render_special: bool, harmony: bool, out: &mut Vec<u8>) {
    let from = out.len();
    tok.append_piece(token, render_special, out);
    if out.len() == from && harmony && !render_special {
        tok.append_piece(token, true, out);
        if !harmony::MARKERS.iter().any(|m| m.as_bytes() == &out[from..]) {
            out.truncate(from);
        }
    }
}

/// How many tokens the grammar allows next: its mask applied to a full candidate set.
fn count_allowed(g: &mut GrammarSampler, logits: &[f32], scratch: &mut Candidates) -> usize {
    scratch.fill_f32(logits);
    nucleus_sampler::Sampler::apply(g, scratch);
    nucleus_sampler::chain::live_candidates(scratch)
}

/// The next token inside a token trie: the forced one without sampling, the most likely allowed
/// one in greedy mode, else the chain over the allowed tokens. The trie and the sampler's
/// history both take the token. With `trace`, records the step for its report.
fn sample_in_trie(
    sampler: &mut TokenSampler,
    trie: &mut TrieConstraint,
    greedy: bool,
    logits: &[f32],
    trace: Option<&mut StepTrace>,
) -> Result<Token> {
    let mut trace = trace;
    if let Some(t) = trace.as_deref_mut() {
        t.allowed = Some(trie.allowed().count());
    }
    let token = if let Some(&t) = trie.forced().first() {
        t
    } else if greedy {
        let mut best: Option<Token> = None;
        for t in trie.allowed() {
            let l = logits.get(t as usize).copied().unwrap_or(f32::NEG_INFINITY);
            if best.is_none_or(|b| l > logits[b as usize]) {
                best = Some(t);
            }
        }
        best.ok_or_else(|| RuntimeError::GrammarDeadEnd("the token trie allows nothing here".into()))?
    } else {
        let allowed: Vec<Token> = trie.allowed().collect();
        return {
            let steer = |c: &mut Candidates| {
                for d in c.as_mut_slice() {
                    if !allowed.contains(&d.id) {
                        d.logit = f32::NEG_INFINITY;
                    }
                }
            };
            let t = match trace {
                Some(tr) => {
                    tr.sampled = true;
                    let t = sampler.apply_traced(logits, steer, &mut tr.counts)?;
                    sampler.accept(t);
                    t
                }
                None => sampler.sample_steered(logits, steer)?,
            };
            trie.advance(t).map_err(|e| RuntimeError::GrammarDeadEnd(e.to_string()))?;
            Ok(t)
        };
    };
    trie.advance(token).map_err(|e| RuntimeError::GrammarDeadEnd(e.to_string()))?;
    sampler.accept(token);
    Ok(token)
}
