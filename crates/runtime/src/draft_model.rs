//! Drafts from a second, smaller model of the same vocabulary (`--model-draft`), verified by
//! the same exact verifier as n-gram drafts ([`crate::speculative`]): the target model's
//! answer does not change, whatever the draft model proposes.
//!
//! [`DraftModel`] owns a context of the draft model with one sequence per engine slot and
//! remembers which tokens each slot's draft KV holds. Asked for drafts, it first brings every
//! asking slot's KV to the slot's tokens (keeping the longest common prefix, so after an
//! accepted draft only the new tokens are evaluated), then proposes each slot's most likely
//! next tokens one position at a time, all asking slots in one decode call per position.
//! Drafting is greedy (argmax of the draft logits): the target's sampler decides.

use nucleus_sampler::Token;

use crate::error::{Result, RuntimeError};
use crate::model::{Context, Model, SeqId};

/// A draft model's context, one sequence per slot of the engine it drafts for.
pub struct DraftModel {
    ctx: Box<dyn Context>,
    /// Per slot: the tokens the draft KV holds.
    held: Vec<Vec<Token>>,
}

/// One slot's request for a draft.
pub struct DraftAsk<'a> {
    /// The slot (the same sequence id in the draft context).
    pub slot: SeqId,
    /// The slot's tokens so far (prompt and generated; the last one is the token the target
    /// decodes next, which the draft continues).
    pub tokens: &'a [Token],
    /// Most tokens to draft.
    pub max: usize,
}

/// Checks that `draft` can draft for `target`: the same vocabulary size and every token's
/// text (special tokens included) the same.
pub fn check_vocabulary(target: &dyn Model, draft: &dyn Model) -> Result<()> {
    let (n, m) = (target.n_vocab(), draft.n_vocab());
    if n != m {
        return Err(RuntimeError::DraftVocabulary(format!(
            "its vocabulary has {m} tokens and the model's {n}; the draft model must share the model's vocabulary"
        )));
    }
    let (a, b) = (target.tokenizer(), draft.tokenizer());
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    for t in 0..n as Token {
        pa.clear();
        pb.clear();
        a.append_piece(t, true, &mut pa);
        b.append_piece(t, true, &mut pb);
        if pa != pb {
            return Err(RuntimeError::DraftVocabulary(format!(
                "token {t} is {:?} in the model and {:?} in the draft model; the draft model must share the model's vocabulary",
                String::from_utf8_lossy(&pa),
                String::from_utf8_lossy(&pb)
            )));
        }
    }
    Ok(())
}

impl DraftModel {
    /// Drafts with `ctx`, a context of a draft model whose vocabulary was checked against the
    /// target's ([`check_vocabulary`]), with a sequence for every slot of the engine.
    pub fn new(ctx: Box<dyn Context>) -> Self {
        let n = ctx.n_seq_max();
        DraftModel { ctx, held: vec![Vec::new(); n] }
    }

    /// Drafts for each ask, in order (an empty draft where the draft model cannot help: no
    /// room in its context, or a failed call — speculation is never worth failing a request).
    pub fn draft(&mut self, asks: &[DraftAsk<'_>]) -> Vec<Vec<Token>> {
        let mut drafts: Vec<Vec<Token>> = vec![Vec::new(); asks.len()];
        // Each ask's next proposal, once its KV holds its tokens.
        let mut next: Vec<Option<Token>> = vec![None; asks.len()];
        for (i, a) in asks.iter().enumerate() {
            if a.max > 0 && a.slot < self.held.len() && !a.tokens.is_empty() {
                next[i] = self.sync(a.slot, a.tokens).ok();
            }
        }
        loop {
            let mut steps = Vec::new();
            for (i, a) in asks.iter().enumerate() {
                let Some(t) = next[i] else { continue };
                drafts[i].push(t);
                let room = self.ctx.n_ctx_seq().saturating_sub(self.ctx.seq_len(a.slot));
                if drafts[i].len() >= a.max || room == 0 {
                    next[i] = None;
                } else {
                    steps.push((i, a.slot, t));
                }
            }
            if steps.is_empty() {
                break;
            }
            let batch: Vec<(SeqId, Token)> = steps.iter().map(|&(_, s, t)| (s, t)).collect();
            if self.ctx.decode(&batch).is_err() {
                for &(i, slot, _) in &steps {
                    self.forget(slot);
                    next[i] = None;
                }
                break;
            }
            for &(i, slot, t) in &steps {
                self.held[slot].push(t);
                next[i] = self.ctx.logits(slot).ok().map(argmax);
            }
        }
        drafts
    }

    /// Brings `slot`'s KV to `tokens` (keeping the common prefix, evaluating at least the last
    /// token for its logits) and returns the most likely token after them.
    fn sync(&mut self, slot: SeqId, tokens: &[Token]) -> Result<Token> {
        let held = &self.held[slot];
        let common = held.iter().zip(tokens).take_while(|(a, b)| a == b).count();
        let keep = common.min(tokens.len() - 1);
        if keep < held.len() {
            if self.ctx.truncate(slot, keep).is_ok() {
                self.held[slot].truncate(keep);
            } else {
                self.forget(slot);
            }
        }
        let from = self.held[slot].len();
        if tokens.len() > self.ctx.n_ctx_seq() {
            self.forget(slot);
            return Err(RuntimeError::BadSequence { seq: slot, problem: "does not fit the draft context" });
        }
        if let Err(e) = self.ctx.prefill(slot, &tokens[from..]) {
            self.forget(slot);
            return Err(e);
        }
        self.held[slot].extend_from_slice(&tokens[from..]);
        Ok(argmax(self.ctx.logits(slot)?))
    }

    /// Empties a slot's draft KV (after a failed call its contents are unknown).
    fn forget(&mut self, slot: SeqId) {
        self.ctx.clear(slot);
        self.held[slot].clear();
    }
}

/// The most likely token (the first of equal logits).
fn argmax(logits: &[f32]) -> Token {
    let mut best = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[best] {
            best = i;
        }
    }
    best as Token
}
