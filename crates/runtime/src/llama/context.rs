//! [`LlamaCppContext`]: a llama.cpp context (KV cache) with per-sequence bookkeeping, so callers
//! get errors instead of llama.cpp aborts for bad sequences, bad tokens or a full context.

use std::num::NonZeroU32;
use std::sync::Arc;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{DecodeError, LlamaStateSeqFlags, SeqState as LlamaSeqState};
use nucleus_sampler::Token;

use super::backend::{backend, clear_recent, take_recent};
use crate::error::{Result, RuntimeError};
use crate::model::{Context, ContextOptions, SavedSequence, SeqId, DEFAULT_N_CTX};
use crate::threads::default_threads;

#[derive(Clone, Copy, Debug, Default)]
struct SeqState {
    /// Tokens in the KV cache (also the position of the next one).
    len: usize,
    /// This sequence's rows from the latest call that advanced it: (decode call number, batch
    /// row of its first token with logits, rows).
    logits: Option<(u64, i32, usize)>,
}

/// A llama.cpp context over a shared model.
pub struct LlamaCppContext {
    // Field order matters: `ctx` borrows the model behind `_model` and must be dropped first.
    ctx: LlamaContext<'static>,
    batch: LlamaBatch<'static>,
    seqs: Vec<SeqState>,
    n_ctx: usize,
    /// Room per sequence: `n_ctx` when unified, else each sequence's own stream.
    n_ctx_seq: usize,
    unified: bool,
    n_batch: usize,
    n_vocab: usize,
    calls: u64,
    _model: Arc<LlamaModel>,
}

impl LlamaCppContext {
    pub(crate) fn new(model: Arc<LlamaModel>, n_ctx_train: usize, opts: &ContextOptions) -> Result<Self> {
        let backend = backend()?;
        let want = opts.n_ctx.unwrap_or_else(|| DEFAULT_N_CTX.min(n_ctx_train.max(1))).max(1);
        let n_ctx = u32::try_from(want)
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or(RuntimeError::ContextFailed { n_ctx: want, detail: "context size out of range".into() })?;
        let n_seq = opts.n_seq_max.max(1);
        // One decode step holds a token per sequence, so a batch must fit every sequence.
        let n_batch = opts.n_batch.max(n_seq).clamp(1, want) as u32;
        let threads = opts.threads.unwrap_or_else(default_threads).max(1) as i32;
        // Flash attention off: with it, a token's K/V and logits depend on where the batch it was
        // evaluated in starts. Without it (and without tinyBLAS, `.cargo/config.toml`), a token
        // gets the same bits prefilled in one batch, in any chunks or decoded alone, so a cached
        // prefix (prompt or generated tokens) is exactly what a fresh prefill would give, and
        // the parity crate's reference contexts make the same choice. Measured on SmolLM2
        // (CPU): no loss of speed. `tests/kv_invariance.rs` checks the bits.
        let params = LlamaContextParams::default()
            .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED)
            .with_n_ctx(Some(n_ctx))
            .with_n_batch(n_batch)
            .with_n_ubatch(n_batch)
            .with_n_seq_max(n_seq as u32)
            .with_kv_unified(opts.kv_unified)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_no_perf(true);
        clear_recent();
        let ctx = model
            .new_context(backend, params)
            .map_err(|e| RuntimeError::ContextFailed { n_ctx: want, detail: or_display(take_recent(), e) })?;
        // SAFETY: `ctx` borrows the `LlamaModel` inside the `Arc` stored in `_model`. That heap
        // allocation never moves, stays alive as long as `self` holds the `Arc`, and `ctx` is
        // declared before `_model`, so it is dropped first. Extending the borrow to 'static
        // never lets it outlive the model.
        let ctx: LlamaContext<'static> = unsafe { std::mem::transmute::<LlamaContext<'_>, LlamaContext<'static>>(ctx) };
        let n_ctx = ctx.n_ctx() as usize;
        let n_ctx_seq = if opts.kv_unified { n_ctx } else { n_ctx / n_seq };
        let n_batch = ctx.n_batch() as usize;
        let n_vocab = model.vocab().n_tokens().max(0) as usize;
        Ok(LlamaCppContext {
            batch: LlamaBatch::new(n_batch.max(n_seq), 1),
            ctx,
            seqs: vec![SeqState::default(); n_seq],
            n_ctx,
            n_ctx_seq,
            unified: opts.kv_unified,
            n_batch,
            n_vocab,
            calls: 0,
            _model: model,
        })
    }

    fn check_seq(&self, seq: SeqId) -> Result<()> {
        if seq < self.seqs.len() {
            Ok(())
        } else {
            Err(RuntimeError::BadSequence { seq, problem: "no such sequence in this context" })
        }
    }

    fn check_token(&self, t: Token) -> Result<()> {
        if t >= 0 && (t as usize) < self.n_vocab {
            Ok(())
        } else {
            Err(RuntimeError::BadToken { token: t, n_vocab: self.n_vocab })
        }
    }

    fn used(&self) -> usize {
        self.seqs.iter().map(|s| s.len).sum()
    }

    /// Whether `seq` can take `n` more tokens (`others`: tokens the same call adds to other
    /// sequences of a unified cache).
    fn has_room(&self, seq: SeqId, n: usize, others: usize) -> bool {
        if self.unified {
            self.used() + n + others <= self.n_ctx
        } else {
            self.seqs[seq].len + n <= self.n_ctx_seq
        }
    }

    /// Runs the batch; on success the call counter moves on.
    fn run_batch(&mut self) -> Result<()> {
        clear_recent();
        let r = self.ctx.decode(&mut self.batch);
        self.calls += 1;
        r.map_err(|e| match e {
            DecodeError::NoKvCacheSlot => RuntimeError::ContextFull { n_ctx: self.n_ctx },
            e => RuntimeError::Decode(or_display(take_recent(), e)),
        })
    }
}

impl Context for LlamaCppContext {
    fn n_ctx(&self) -> usize {
        self.n_ctx
    }

    fn n_seq_max(&self) -> usize {
        self.seqs.len()
    }

    fn n_ctx_seq(&self) -> usize {
        self.n_ctx_seq
    }

    fn n_batch(&self) -> usize {
        self.n_batch
    }

    fn seq_len(&self, seq: SeqId) -> usize {
        self.seqs.get(seq).map_or(0, |s| s.len)
    }

    fn clear(&mut self, seq: SeqId) {
        if let Some(s) = self.seqs.get_mut(seq) {
            *s = SeqState::default();
            let _ = self.ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
        }
    }

    fn truncate(&mut self, seq: SeqId, len: usize) -> Result<()> {
        self.check_seq(seq)?;
        if len == 0 {
            self.clear(seq);
            return Ok(());
        }
        if len > self.seqs[seq].len {
            return Err(RuntimeError::BadSequence { seq, problem: "cannot keep more tokens than it holds" });
        }
        // Removes positions len.. of this sequence; the cells before stay as they were written.
        let kept = self.ctx.clear_kv_cache_seq(Some(seq as u32), Some(len as u32), None);
        if !matches!(kept, Ok(true)) {
            self.clear(seq);
            return Err(RuntimeError::BadSequence {
                seq,
                problem: "llama.cpp could not remove the end of the sequence",
            });
        }
        self.seqs[seq] = SeqState { len, logits: None };
        Ok(())
    }

    fn prefill(&mut self, seq: SeqId, tokens: &[Token]) -> Result<()> {
        self.check_seq(seq)?;
        if tokens.is_empty() {
            return Err(RuntimeError::EmptyPrompt);
        }
        for &t in tokens {
            self.check_token(t)?;
        }
        if !self.has_room(seq, tokens.len(), 0) {
            return Err(RuntimeError::ContextFull { n_ctx: self.n_ctx_seq });
        }
        self.seqs[seq].logits = None;
        let n_chunks = tokens.len().div_ceil(self.n_batch);
        for (ci, chunk) in tokens.chunks(self.n_batch).enumerate() {
            self.batch.clear();
            let start = self.seqs[seq].len;
            let last_chunk = ci + 1 == n_chunks;
            for (i, &t) in chunk.iter().enumerate() {
                let want_logits = last_chunk && i + 1 == chunk.len();
                self.batch
                    .add(LlamaToken(t), (start + i) as i32, &[seq as i32], want_logits)
                    .map_err(|e| RuntimeError::Decode(e.to_string()))?;
            }
            self.run_batch()?;
            self.seqs[seq].len += chunk.len();
        }
        self.seqs[seq].logits = Some((self.calls, (tokens.len() - (n_chunks - 1) * self.n_batch - 1) as i32, 1));
        Ok(())
    }

    fn decode(&mut self, steps: &[(SeqId, Token)]) -> Result<()> {
        let runs: Vec<(SeqId, &[Token])> = steps.iter().map(|(seq, t)| (*seq, std::slice::from_ref(t))).collect();
        self.decode_runs(&runs)
    }

    fn decode_runs(&mut self, runs: &[(SeqId, &[Token])]) -> Result<()> {
        if runs.is_empty() {
            return Ok(());
        }
        let total: usize = runs.iter().map(|(_, run)| run.len()).sum();
        for (i, &(seq, run)) in runs.iter().enumerate() {
            self.check_seq(seq)?;
            if run.is_empty() {
                return Err(RuntimeError::BadSequence { seq, problem: "was given no token to decode" });
            }
            for &t in run {
                self.check_token(t)?;
            }
            if runs[..i].iter().any(|&(s, _)| s == seq) {
                return Err(RuntimeError::BadSequence { seq, problem: "appears twice in one decode step" });
            }
        }
        if total > self.n_batch {
            return Err(RuntimeError::Decode(format!("{total} tokens do not fit a batch of {}", self.n_batch)));
        }
        for &(seq, run) in runs {
            if !self.has_room(seq, run.len(), total - run.len()) {
                return Err(RuntimeError::ContextFull { n_ctx: self.n_ctx_seq });
            }
        }
        self.batch.clear();
        for &(seq, run) in runs {
            let start = self.seqs[seq].len;
            for (i, &t) in run.iter().enumerate() {
                self.batch
                    .add(LlamaToken(t), (start + i) as i32, &[seq as i32], true)
                    .map_err(|e| RuntimeError::Decode(e.to_string()))?;
            }
        }
        self.run_batch()?;
        let mut row = 0;
        for &(seq, run) in runs {
            let s = &mut self.seqs[seq];
            s.len += run.len();
            s.logits = Some((self.calls, row as i32, run.len()));
            row += run.len();
        }
        Ok(())
    }

    fn logits(&self, seq: SeqId) -> Result<&[f32]> {
        self.check_seq(seq)?;
        match self.seqs[seq].logits {
            Some((call, first, rows)) if call == self.calls => Ok(self.ctx.get_logits_ith(first + rows as i32 - 1)),
            _ => Err(RuntimeError::BadSequence { seq, problem: "has no logits from the last decode call" }),
        }
    }

    fn logits_at(&self, seq: SeqId, i: usize) -> Result<&[f32]> {
        self.check_seq(seq)?;
        match self.seqs[seq].logits {
            Some((call, first, rows)) if call == self.calls && i < rows => {
                Ok(self.ctx.get_logits_ith(first + i as i32))
            }
            _ => Err(RuntimeError::BadSequence { seq, problem: "has no logits for that token from the last call" }),
        }
    }

    fn save(&self, seq: SeqId) -> Result<SavedSequence> {
        self.check_seq(seq)?;
        let state = self
            .ctx
            .state_seq_get(seq as i32, LlamaStateSeqFlags::empty())
            .map_err(|e| RuntimeError::Decode(format!("could not copy sequence {seq}: {e}")))?;
        Ok(SavedSequence { len: self.seqs[seq].len, bytes: state.byte_len(), state: Box::new(state) })
    }

    fn restore(&mut self, seq: SeqId, saved: &SavedSequence) -> Result<()> {
        self.check_seq(seq)?;
        self.clear(seq);
        let Some(state) = saved.state.downcast_ref::<LlamaSeqState>() else {
            return Err(RuntimeError::BadSequence { seq, problem: "was given a copy made by another backend" });
        };
        if saved.len > self.n_ctx_seq {
            return Err(RuntimeError::ContextFull { n_ctx: self.n_ctx_seq });
        }
        if let Err(e) = self.ctx.state_seq_set(state, seq as i32) {
            self.clear(seq);
            return Err(RuntimeError::Decode(format!("could not restore sequence {seq}: {e}")));
        }
        self.seqs[seq] = SeqState { len: saved.len, logits: None };
        Ok(())
    }
}

fn or_display(recent: String, e: impl std::fmt::Display) -> String {
    if recent.is_empty() {
        e.to_string()
    } else {
        recent
    }
}
