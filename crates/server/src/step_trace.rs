//! The `trace_steps` request extension: with `"trace_steps": N` (1 to 64) every generated
//! token comes with its sampling step in `choices[].steps` ([`StepEntry`]): the top `N` of the
//! raw softmax and of the post-chain distribution, entropy, surprisal, the candidates each
//! sampler left, and the tokens a constraint allowed. It is what the playground page (`/`)
//! draws. Only the top `N` goes over the wire, so it stays small on any vocabulary.
//!
//! The engine thread's sequences hand their reports to a per-choice queue ([`StepQueues`])
//! before the token's own event is sent, so the response side finds a token's report there
//! when the token arrives and pairs them in order.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use nucleus_runtime::StepReport;
use nucleus_sampler::probs::TokenProb;
use serde_json::{Map, Value};

use crate::engine::{lock, SeqJob, TokenOut};
use crate::errors::ApiError;
use crate::openai_types::{ChainCount, StepCandidate, StepEntry};
use crate::render::Renderer;

/// Most candidates per distribution a step may report.
pub const MAX_TRACE_STEPS: i64 = 64;

/// Reads `trace_steps` (absent, null or 0: off): an integer in `[0, 64]`, else a 400 naming it.
pub fn parse(map: &Map<String, Value>) -> Result<Option<usize>, ApiError> {
    const NAME: &str = "trace_steps";
    let n = match map.get(NAME) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n,
        Some(_) => return Err(ApiError::wrong_type(NAME, "an integer")),
    };
    let k = match (n.as_i64(), n.as_f64()) {
        (Some(k), _) => k,
        (None, Some(f)) if f.is_finite() && f.fract() == 0.0 => f.clamp(-1e18, 1e18) as i64,
        (None, _) if n.as_u64().is_some() => i64::MAX,
        _ => return Err(ApiError::wrong_type(NAME, "an integer")),
    };
    if k > MAX_TRACE_STEPS {
        return Err(ApiError::above_max(NAME, MAX_TRACE_STEPS, n, true));
    }
    if k < 0 {
        return Err(ApiError::below_min(NAME, 0, n, true));
    }
    Ok((k > 0).then_some(k as usize))
}

/// Per choice, the step reports whose tokens the response has not seen yet.
#[derive(Clone, Default)]
pub struct StepQueues(Arc<Vec<Mutex<VecDeque<StepReport>>>>);

impl StepQueues {
    /// Makes every sequence of `seqs` report its steps (top `n`) into the new queues.
    pub fn attach(n: usize, seqs: &mut [SeqJob]) -> Self {
        let choices = seqs.iter().map(|s| s.choice + 1).max().unwrap_or(0);
        let queues = StepQueues(Arc::new((0..choices).map(|_| Mutex::new(VecDeque::new())).collect()));
        for s in seqs.iter_mut() {
            let (q, choice) = (queues.clone(), s.choice);
            s.sequence.set_step_report(
                n,
                Box::new(move |r| {
                    if let Some(m) = q.0.get(choice) {
                        lock(m).push_back(r);
                    }
                }),
            );
        }
        queues
    }

    /// The report of `choice`'s next token.
    pub fn pop(&self, choice: usize) -> Option<StepReport> {
        self.0.get(choice).and_then(|m| lock(m).pop_front())
    }

    /// The [`StepEntry`] of `token` (`None` when no report is waiting for it).
    pub fn entry(&self, choice: usize, token: &TokenOut, r: &Renderer) -> Option<StepEntry> {
        let rep = self.pop(choice)?;
        let (text, bytes) = r.piece(token.id);
        let cands = |v: &[TokenProb]| {
            v.iter().map(|c| StepCandidate { id: c.id, token: r.piece(c.id).0, p: c.p }).collect::<Vec<_>>()
        };
        Some(StepEntry {
            id: token.id,
            token: if token.end { String::new() } else { text },
            bytes: if token.end { Vec::new() } else { bytes },
            end: token.end,
            p: rep.p,
            post_p: rep.post_p,
            entropy: rep.entropy,
            post_entropy: rep.post_entropy,
            surprisal: rep.surprisal,
            raw_top: cands(&rep.raw_top),
            post_top: cands(&rep.post_top),
            candidates_in: rep.candidates_in,
            chain: rep.chain.into_iter().map(|(sampler, candidates)| ChainCount { sampler, candidates }).collect(),
            allowed: rep.allowed,
            sampled: rep.sampled,
            resampled: rep.resampled,
        })
    }
}
