//! `Sampler`: a [`TokenSampler`] built from llama.cpp's parameter names (camelCase or
//! snake_case), fed logits in place (`Float32Array`, or half precision: see [`LogitsArray`]).

use napi::bindgen_prelude::{ClassInstance, Object, Unknown};
use napi::{Error, Result, Status};
use napi_derive::napi;
use nucleus_sampler::params_map::Vocabulary;
use nucleus_sampler::probs::{surprisal_bits, top_n_post, Perplexity, RawDistribution, TokenProb};
use nucleus_sampler::{BatchSampler, Chain, Logits, SampleError, SamplingParams, Token, TokenSampler};
use serde_json::Value;

use crate::convert::params_map;
use crate::logits::LogitsArray;

/// The parameters of `new Sampler(nVocab, params)`, for TypeScript: llama.cpp's
/// `common_params_sampling` fields. Each may also be written in snake_case (`top_k`); absent
/// fields take llama.cpp's defaults. Read at run time by name, never through this struct.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // only generates the TypeScript interface
pub struct SamplerParams {
    /// RNG seed; -1 (the default) picks a random one.
    pub seed: Option<i64>,
    /// Temperature (0.8); <= 0 keeps only the most likely token.
    pub temp: Option<f64>,
    /// Top-k (40); <= 0 disables.
    pub top_k: Option<i32>,
    /// Top-p (0.95); 1 disables.
    pub top_p: Option<f64>,
    /// Min-p (0.05); 0 disables.
    pub min_p: Option<f64>,
    /// Locally typical sampling (1.0 = off).
    pub typ_p: Option<f64>,
    /// XTC probability (0 = off).
    pub xtc_probability: Option<f64>,
    /// XTC threshold (0.1).
    pub xtc_threshold: Option<f64>,
    /// Penalty window (64).
    pub penalty_last_n: Option<i32>,
    /// Repeat penalty (1.0 = off).
    pub penalty_repeat: Option<f64>,
    /// Frequency penalty (0 = off).
    pub penalty_freq: Option<f64>,
    /// Presence penalty (0 = off).
    pub penalty_present: Option<f64>,
    /// DRY multiplier (0 = off); needs `drySequenceBreakers: []` without a model.
    pub dry_multiplier: Option<f64>,
    /// DRY base (1.75).
    pub dry_base: Option<f64>,
    /// DRY allowed length (2).
    pub dry_allowed_length: Option<i32>,
    /// DRY window (64).
    pub dry_penalty_last_n: Option<i32>,
    /// DRY sequence breakers (strings).
    pub dry_sequence_breakers: Option<Vec<String>>,
    /// Mirostat: 0 off, 1 or 2.
    pub mirostat: Option<i32>,
    /// Mirostat target entropy (5.0).
    pub mirostat_tau: Option<f64>,
    /// Mirostat learning rate (0.1).
    pub mirostat_eta: Option<f64>,
    /// Top-n-sigma (-1 = off).
    pub top_n_sigma: Option<f64>,
    /// Dynamic temperature range (0 = off).
    pub dynatemp_range: Option<f64>,
    /// Dynamic temperature exponent (1.0).
    pub dynatemp_exponent: Option<f64>,
    /// Adaptive-p target (negative = off).
    pub adaptive_target: Option<f64>,
    /// Adaptive-p decay (0.9).
    pub adaptive_decay: Option<f64>,
    /// Minimum candidates kept (0).
    pub min_keep: Option<u32>,
    /// Sampler order: names (`["top_k", "min_p", "temperature"]`) or a `--sampling-seq` string (`"kmt"`).
    #[napi(ts_type = "string[] | string")]
    pub samplers: Option<Vec<String>>,
    /// Logit biases `{token: bias}` (or `[[token, bias], ...]`); `-Infinity` or `false` bans a token.
    #[napi(ts_type = "Record<number, number | false> | Array<[number, number | false]>")]
    pub logit_bias: Option<Vec<i32>>,
    /// Track the perplexity of sampled tokens (one extra pass over the logits per step).
    pub track_perplexity: Option<bool>,
}

/// One token of a distribution.
#[napi(object)]
pub struct TokenProbability {
    /// Token id.
    pub token: i32,
    /// Probability.
    pub p: f64,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, msg.into())
}

fn sample_error(e: SampleError) -> Error {
    Error::new(Status::GenericFailure, e.to_string())
}

/// A llama.cpp sampler chain for one sequence: `new Sampler(nVocab, params)`, where `params`
/// holds llama.cpp's `common_params_sampling` fields in camelCase (`topK`, `minP`,
/// `penaltyLastN`, ...) or snake_case (`top_k`, ...), with llama.cpp's defaults, plus
/// `trackPerplexity`. A bad value throws an error naming the field.
#[napi]
pub struct Sampler {
    n_vocab: usize,
    sampler: TokenSampler,
    perplexity: Option<Perplexity>,
    /// The last step's logits (a reference to the caller's array, not a copy) and token.
    last: Option<(LogitsArray, Token)>,
}

impl Sampler {
    fn check_len(&self, logits: &LogitsArray) -> Result<()> {
        if logits.len() != self.n_vocab {
            return Err(invalid(format!(
                "logits have {} values but the sampler's nVocab is {}",
                logits.len(),
                self.n_vocab
            )));
        }
        Ok(())
    }

    fn last(&self) -> Result<(Logits<'_>, Token)> {
        match &self.last {
            Some((l, t)) if l.len() == self.n_vocab => Ok((l.logits(), *t)),
            Some(_) => Err(invalid("the last step's logits array has changed size")),
            None => Err(invalid("no token has been sampled since the sampler was created or reset")),
        }
    }
}

#[napi]
impl Sampler {
    #[napi(catch_unwind, constructor, ts_args_type = "nVocab: number, params?: SamplerParams")]
    pub fn new(n_vocab: i64, params: Option<Object<'_>>) -> Result<Self> {
        if n_vocab <= 0 || n_vocab > i32::MAX as i64 {
            return Err(invalid(format!("nVocab must be in [1, 2^31), got {n_vocab}")));
        }
        let n = n_vocab as usize;
        let mut map = params_map(params.as_ref(), &[])?;
        let track = match map.remove("track_perplexity") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(other) => return Err(invalid(format!("`trackPerplexity` must be a boolean, not {other}"))),
        };
        let p = SamplingParams::from_map(&map, Vocabulary::Ids(n)).map_err(|e| {
            if e.is_unknown() {
                Error::new(Status::InvalidArg, format!("unknown sampling parameter `{}`", e.field()))
            } else {
                invalid(e.to_string())
            }
        })?;
        let chain = p.build(n, None).map_err(|e| invalid(e.to_string()))?;
        Ok(Sampler {
            n_vocab: n,
            sampler: TokenSampler::new(chain),
            perplexity: track.then(Perplexity::new),
            last: None,
        })
    }

    /// Vocabulary size.
    #[napi(catch_unwind, getter)]
    pub fn n_vocab(&self) -> u32 {
        self.n_vocab as u32
    }

    /// Samples a token from `logits` (read in place, never copied) and accepts it, like
    /// `llama_sampler_sample`. `logits` is a `Float32Array`, a `Float16Array`, or a
    /// `Uint16Array` of IEEE half-precision bits (`dtype` "float16", the default) or of
    /// bfloat16 bits (`dtype` "bfloat16").
    #[napi(
        catch_unwind,
        ts_args_type = "logits: Float32Array | Uint16Array | ArrayBufferView, dtype?: 'float32' | 'float16' | 'bfloat16'"
    )]
    pub fn sample(&mut self, logits: Unknown<'_>, dtype: Option<String>) -> Result<i32> {
        let logits = LogitsArray::from_js(&logits, dtype.as_deref())?;
        self.check_len(&logits)?;
        let row = logits.logits();
        let tok = self.sampler.sample(row).map_err(sample_error)?;
        if let Some(ppl) = &mut self.perplexity {
            let dist = RawDistribution::of(row);
            ppl.push_logprob(dist.logprob(row.get(tok as usize)));
        }
        self.last = Some((logits, tok));
        Ok(tok)
    }

    /// Runs the chain and returns the selected token without accepting it (call `accept` once
    /// the token is committed). `logits` and `dtype` as for `sample`.
    #[napi(
        catch_unwind,
        ts_args_type = "logits: Float32Array | Uint16Array | ArrayBufferView, dtype?: 'float32' | 'float16' | 'bfloat16'"
    )]
    pub fn apply(&mut self, logits: Unknown<'_>, dtype: Option<String>) -> Result<i32> {
        let logits = LogitsArray::from_js(&logits, dtype.as_deref())?;
        self.check_len(&logits)?;
        let tok = self.sampler.apply(logits.logits()).map_err(sample_error)?;
        self.last = Some((logits, tok));
        Ok(tok)
    }

    /// Feeds a committed token (a prompt token, or one chosen elsewhere) into the history.
    #[napi(catch_unwind)]
    pub fn accept(&mut self, token: i64) -> Result<()> {
        if token < 0 || token as usize >= self.n_vocab {
            return Err(invalid(format!("token {token} is outside the vocabulary [0, {})", self.n_vocab)));
        }
        self.sampler.accept(token as Token);
        Ok(())
    }

    /// Clears the history and restarts every random stream from its seed.
    #[napi(catch_unwind)]
    pub fn reset(&mut self) {
        self.sampler.reset();
        self.last = None;
        if self.perplexity.is_some() {
            self.perplexity = Some(Perplexity::new());
        }
    }

    /// An independent copy with the same history and random-stream position.
    #[napi(catch_unwind)]
    pub fn clone(&self) -> Sampler {
        Sampler {
            n_vocab: self.n_vocab,
            sampler: self.sampler.clone(),
            perplexity: self.perplexity.clone(),
            // The copy starts without a last step (it holds no reference to the caller's array).
            last: None,
        }
    }

    /// The `n` (default 10) most likely tokens of the distribution the last token was drawn
    /// from (after the chain), best first. Reads the last step's array again: do not modify it
    /// before calling this.
    #[napi(catch_unwind)]
    pub fn last_probs(&mut self, n: Option<u32>) -> Result<Vec<TokenProbability>> {
        let n = n.unwrap_or(10) as usize;
        self.last()?;
        // Take the last row out while the sampler rebuilds its candidates from it.
        let Some((row, tok)) = self.last.take() else { return Ok(Vec::new()) };
        // A fast path may have deferred the candidates; this rebuilds them from the row (any
        // precision) and is free when they are complete.
        let cands = self.sampler.materialize_candidates(row.logits());
        let mut out: Vec<TokenProb> = Vec::with_capacity(n);
        top_n_post(cands, n, &mut out);
        self.last = Some((row, tok));
        Ok(out.into_iter().map(|t| TokenProbability { token: t.id, p: t.p as f64 }).collect())
    }

    /// Entropy in nats of the model's own distribution (softmax of the raw logits) at the last
    /// step.
    #[napi(catch_unwind)]
    pub fn entropy(&self) -> Result<f64> {
        let (row, _) = self.last()?;
        Ok(RawDistribution::of(row).entropy)
    }

    /// Surprisal in bits (`-log2 p`) of the last token under the model's own distribution.
    #[napi(catch_unwind)]
    pub fn surprisal(&self) -> Result<f64> {
        let (row, tok) = self.last()?;
        let p = RawDistribution::of(row).prob(row.get(tok as usize));
        Ok(surprisal_bits(p) as f64)
    }

    /// Perplexity of the sampled tokens under the model's own distribution (1 before any
    /// token). Needs `trackPerplexity: true`, which adds one pass over the logits per step.
    #[napi(catch_unwind)]
    pub fn perplexity(&self) -> Result<f64> {
        match &self.perplexity {
            Some(p) => Ok(p.value()),
            None => Err(invalid("perplexity is not tracked: create the Sampler with trackPerplexity: true")),
        }
    }

    /// The chain, as llama.cpp names its members (`?` marks a no-op member).
    #[napi(catch_unwind)]
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.sampler.chain().samplers().iter().map(|s| s.name()).collect();
        format!("Sampler(nVocab={}, chain=[{}])", self.n_vocab, names.join(", "))
    }
}

/// Samples one token per row of `matrix` (`samplers.length` rows of `nVocab` logits, row after
/// row, read in place; element types and `dtype` as for `Sampler.sample`) with `samplers[i]`
/// for row `i`, float32 rows spread over all cores, and accepts each. Every sampler must be
/// distinct and have the same `nVocab`. If a row fails, the error names it (the other rows'
/// tokens are accepted).
// napi registers free functions with Node only outside test builds, so a test build (e.g.
// `clippy --all-targets`) sees no caller.
#[cfg_attr(test, allow(dead_code))]
#[napi(
    catch_unwind,
    ts_args_type = "samplers: Sampler[], matrix: Float32Array | Uint16Array | ArrayBufferView, dtype?: 'float32' | 'float16' | 'bfloat16'"
)]
pub fn sample_batch(
    mut samplers: Vec<ClassInstance<'_, Sampler>>,
    matrix: Unknown<'_>,
    dtype: Option<String>,
) -> Result<Vec<i32>> {
    let matrix = LogitsArray::from_js(&matrix, dtype.as_deref())?;
    let Some(first) = samplers.first() else { return Ok(Vec::new()) };
    let v = first.n_vocab;
    for i in 0..samplers.len() {
        if samplers[i].n_vocab != v {
            return Err(invalid(format!("samplers[{i}] has nVocab {} but samplers[0] has {v}", samplers[i].n_vocab)));
        }
        if samplers[..i].iter().any(|o| std::ptr::eq::<Sampler>(&**o, &*samplers[i])) {
            return Err(invalid(format!("samplers[{i}] appears twice in the batch")));
        }
    }
    let b = samplers.len();
    if matrix.len() != b * v {
        return Err(invalid(format!("the matrix has {} values; {b} rows of nVocab {v} need {}", matrix.len(), b * v)));
    }
    // Move each chain into a BatchSampler for the parallel step and back afterwards.
    let rows: Vec<TokenSampler> =
        samplers.iter_mut().map(|s| std::mem::replace(&mut s.sampler, TokenSampler::new(Chain::new()))).collect();
    let mut batch = BatchSampler::new(rows);
    let mut out: Vec<std::result::Result<Token, SampleError>> = vec![Ok(0); b];
    let all = matrix.logits();
    let shape = match all {
        Logits::F32(rows) => batch.sample(rows, v, &mut out),
        // BatchSampler reads f32 rows; half-precision rows go one by one.
        _ => {
            for (i, (s, o)) in batch.rows_mut().iter_mut().zip(out.iter_mut()).enumerate() {
                *o = s.sample(row_of(all, i, v));
            }
            Ok(())
        }
    };
    for (s, r) in samplers.iter_mut().zip(batch.rows_mut()) {
        std::mem::swap(&mut s.sampler, r);
    }
    shape.map_err(sample_error)?;
    let mut tokens = Vec::with_capacity(b);
    let mut first_err = None;
    for (i, (s, r)) in samplers.iter_mut().zip(out).enumerate() {
        match r {
            Ok(tok) => {
                if let Some(ppl) = &mut s.perplexity {
                    let row = row_of(all, i, v);
                    ppl.push_logprob(RawDistribution::of(row).logprob(row.get(tok as usize)));
                }
                // The last-step statistics need a row of their own; the batch keeps none.
                s.last = None;
                tokens.push(tok);
            }
            Err(e) => {
                first_err.get_or_insert_with(|| Error::new(Status::GenericFailure, format!("row {i}: {e}")));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(tokens),
    }
}

/// Row `i` of equal rows of `width` logits.
#[cfg_attr(test, allow(dead_code))] // its caller, `sample_batch`, is compiled out of test builds' registration
fn row_of(all: Logits<'_>, i: usize, width: usize) -> Logits<'_> {
    match all {
        Logits::F32(l) => Logits::F32(&l[i * width..(i + 1) * width]),
        Logits::F16(l) => Logits::F16(&l[i * width..(i + 1) * width]),
        Logits::Bf16(l) => Logits::Bf16(&l[i * width..(i + 1) * width]),
    }
}
