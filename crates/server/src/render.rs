//! Engine tokens to OpenAI pieces: chat logprob entries, legacy logprob arrays, and what every
//! response of a request shares ([`ResponseMeta`]).

use std::sync::Arc;

use nucleus_runtime::Tokenizer;
use nucleus_sampler::probs::TokenProb;
use serde_json::{Map, Value};

use crate::engine::TokenOut;
use crate::openai_types::{Completion, LegacyLogprobs, LogprobEntry, TopLogprob, UsageField};

/// Turns token ids into the text and bytes clients see.
#[derive(Clone)]
pub struct Renderer {
    tok: Arc<dyn Tokenizer>,
    /// Probabilities are post-chain (`post_sampling_probs`): also report `prob`.
    post: bool,
}

impl Renderer {
    /// A renderer over the model's tokenizer.
    pub fn new(tok: Arc<dyn Tokenizer>, post_sampling_probs: bool) -> Self {
        Renderer { tok, post: post_sampling_probs }
    }

    /// A token's bytes (control tokens as their text) and its lossy text.
    pub fn piece(&self, id: i32) -> (String, Vec<u8>) {
        let mut bytes = Vec::new();
        self.tok.append_piece(id, true, &mut bytes);
        (String::from_utf8_lossy(&bytes).into_owned(), bytes)
    }

    fn prob(&self, logprob: f32) -> Option<f32> {
        self.post.then(|| if logprob <= f32::MIN { 0.0 } else { logprob.exp() })
    }

    /// The chat logprobs entry of a generated token (`None` for end tokens, which have no text).
    pub fn chat_entry(&self, t: &TokenOut) -> Option<LogprobEntry> {
        if t.end {
            return None;
        }
        let (token, bytes) = self.piece(t.id);
        let logprob = t.logprob.unwrap_or(0.0);
        let top_logprobs = t
            .top
            .iter()
            .map(|a: &TokenProb| {
                let (token, bytes) = self.piece(a.id);
                TopLogprob { token, logprob: a.logprob, bytes, id: a.id, prob: self.post.then_some(a.p) }
            })
            .collect();
        Some(LogprobEntry { token, logprob, bytes, id: t.id, prob: self.prob(logprob), top_logprobs })
    }

    /// Legacy logprobs of `tokens` whose text starts at character `offset`; returns the
    /// offset after them. A token without a score (the first prompt token) gets nulls.
    pub fn legacy(&self, tokens: &[TokenOut], mut offset: usize, out: &mut LegacyLogprobs) -> usize {
        for t in tokens.iter().filter(|t| !t.end) {
            let (text, _) = self.piece(t.id);
            out.text_offset.push(offset);
            offset += text.chars().count();
            out.token_logprobs.push(t.logprob);
            out.top_logprobs.push(t.logprob.map(|lp| {
                let mut m = Map::new();
                for a in &t.top {
                    let (k, _) = self.piece(a.id);
                    m.entry(k).or_insert_with(|| f32_value(a.logprob));
                }
                m.entry(text.clone()).or_insert_with(|| f32_value(lp));
                m
            }));
            out.tokens.push(text);
        }
        offset
    }
}

/// An f32 as a JSON number written with f32's shortest digits (not widened to f64's).
pub fn f32_value(x: f32) -> Value {
    let v: f64 = format!("{x}").parse().unwrap_or(x as f64);
    serde_json::Number::from_f64(v).map(Value::Number).unwrap_or(Value::Null)
}

/// What every response (whole or streamed) to one request shares.
#[derive(Clone)]
pub struct ResponseMeta {
    /// The route.
    pub endpoint: crate::request::Endpoint,
    /// `chatcmpl-...` / `cmpl-...`, the same in every chunk.
    pub id: String,
    /// Unix seconds, the same in every chunk.
    pub created: u64,
    /// The model id.
    pub model: String,
    /// Server build and model.
    pub system_fingerprint: String,
    /// Per choice, in order.
    pub choices: Vec<crate::prepare::ChoiceInfo>,
    /// Prompt tokens for usage.
    pub prompt_tokens: usize,
    /// Log-probabilities were asked for.
    pub logprobs: bool,
    /// Streaming: send the usage chunk.
    pub include_usage: bool,
    /// Token ids to text.
    pub renderer: Renderer,
    /// With tools in use: answers are read for calls in this format.
    pub tool_format: Option<crate::tools::ToolFormat>,
    /// Answers are read for a reasoning block: the reader each answer starts with.
    pub reasoning: Option<nucleus_runtime::ThinkSplitter>,
    /// With `trace_steps`: each token's sampling step ([`crate::step_trace`]).
    pub steps: Option<crate::step_trace::StepQueues>,
}

impl ResponseMeta {
    /// A reader for one choice's answer: for calls with tools in use, for a reasoning block
    /// when the request reads one.
    pub fn answer_reader(&self) -> crate::answer::AnswerReader {
        crate::answer::AnswerReader::new(self.tool_format).with_reasoning(self.reasoning.clone())
    }

    /// Cached prompt tokens for `usage`, each prompt once (from its first choice), as
    /// `prompt_tokens` counts them; `per_choice` in choice order.
    pub fn cached_tokens(&self, per_choice: &[usize]) -> usize {
        let mut total = 0;
        for (i, c) in self.choices.iter().enumerate() {
            if i == 0 || !Arc::ptr_eq(&self.choices[i - 1].prompt, &c.prompt) {
                total += per_choice.get(i).copied().unwrap_or(0);
            }
        }
        total
    }

    /// A response or stream chunk of this request (its id, creation time, model and
    /// fingerprint) with `object`, `choices` and `usage`.
    pub fn completion<C, U: UsageField>(&self, object: &'static str, choices: Vec<C>, usage: U) -> Completion<C, U> {
        Completion {
            id: self.id.clone(),
            object,
            created: self.created,
            model: self.model.clone(),
            system_fingerprint: self.system_fingerprint.clone(),
            choices,
            usage,
        }
    }
}
