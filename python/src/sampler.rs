//! `nucleus.Sampler` and `nucleus.sample_batch`: a [`TokenSampler`] built from llama.cpp's
//! parameter names, fed logits straight from a Python buffer.

use std::sync::{Mutex, MutexGuard};

use nucleus_sampler::params_map::{FieldError, Vocabulary};
use nucleus_sampler::probs::{top_n_post, Perplexity, RawDistribution, TokenProb};
use nucleus_sampler::{BatchSampler, Chain, Logits, SampleError, SamplingParams, Token, TokenSampler};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::buffer::{Dtype, LogitsBuffer};
use crate::convert::dict_to_map;

/// The logits object of the last step (kept by reference, never copied) and what was drawn.
struct Last {
    obj: Py<PyAny>,
    /// Row of `obj` (for `sample_batch`; 0 otherwise).
    row: usize,
    token: Token,
    /// How `obj` was read (`dtype=`).
    dtype: Option<Dtype>,
}

/// What a `Sampler` mutates; behind a mutex so calls can run with the GIL released.
struct State {
    sampler: TokenSampler,
    perplexity: Option<Perplexity>,
    last: Option<Last>,
}

impl State {
    /// Samples and accepts one token, recording its log-probability when tracked.
    fn step(&mut self, logits: Logits<'_>) -> Result<Token, SampleError> {
        let tok = self.sampler.sample(logits)?;
        if let Some(ppl) = &mut self.perplexity {
            let dist = RawDistribution::of(logits);
            ppl.push_logprob(dist.logprob(logits.get(tok as usize)));
        }
        Ok(tok)
    }
}

/// A llama.cpp sampler chain for one sequence.
///
/// `Sampler(n_vocab, *, track_perplexity=False, **params)`: `params` are llama.cpp's
/// `common_params_sampling` fields with its defaults (`seed`, `temp`, `top_k`, `top_p`,
/// `min_p`, `typ_p`, `penalty_*`, `dry_*`, `xtc_*`, `mirostat*`, `top_n_sigma`, `dynatemp_*`,
/// `adaptive_*`, `min_keep`, `samplers`, `logit_bias`). A bad value raises `ValueError`
/// naming the field; an unknown name raises `TypeError`.
#[pyclass(module = "nucleus._nucleus")]
pub(crate) struct Sampler {
    n_vocab: usize,
    state: Mutex<State>,
}

fn sample_error(e: SampleError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn bad_param(e: FieldError) -> PyErr {
    if e.is_unknown() {
        PyTypeError::new_err(format!("Sampler() got an unexpected keyword argument '{}'", e.field()))
    } else {
        PyValueError::new_err(e.to_string())
    }
}

impl Sampler {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic cannot leave the chain half-updated in a way a later call could observe as
        // unsafe; keep serving rather than failing every later call.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks that a buffer holds exactly `rows` rows of `n_vocab` logits.
    fn check_len(&self, buf: &LogitsBuffer, rows: usize) -> PyResult<()> {
        if buf.len() != rows * self.n_vocab {
            return Err(PyValueError::new_err(format!(
                "logits have {} values (shape {:?}) but the sampler's n_vocab is {}",
                buf.len(),
                buf.shape(),
                self.n_vocab
            )));
        }
        Ok(())
    }

    /// The last step's logits row, exported again from the object it came from.
    fn with_last_row<R>(&self, py: Python<'_>, f: impl FnOnce(&mut State, Logits<'_>, Token) -> R) -> PyResult<R> {
        let mut st = self.lock();
        let (obj, row, token, dtype) = match &st.last {
            Some(l) => (l.obj.clone_ref(py), l.row, l.token, l.dtype),
            None => {
                return Err(PyValueError::new_err("no token has been sampled since the sampler was created or reset"))
            }
        };
        let buf = LogitsBuffer::get(obj.bind(py), dtype)?;
        if buf.len() < (row + 1) * self.n_vocab {
            return Err(PyValueError::new_err("the last step's logits array has changed size"));
        }
        Ok(f(&mut st, buf.row(row, self.n_vocab), token))
    }
}

#[pymethods]
impl Sampler {
    #[new]
    #[pyo3(signature = (n_vocab, *, track_perplexity = false, **params))]
    fn new(n_vocab: i64, track_perplexity: bool, params: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        if n_vocab <= 0 || n_vocab > i32::MAX as i64 {
            return Err(PyValueError::new_err(format!("n_vocab must be in [1, 2^31), got {n_vocab}")));
        }
        let n = n_vocab as usize;
        let map = match params {
            Some(d) => dict_to_map(d)?,
            None => Default::default(),
        };
        let p = SamplingParams::from_map(&map, Vocabulary::Ids(n)).map_err(bad_param)?;
        let chain = p.build(n, None).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let state =
            State { sampler: TokenSampler::new(chain), perplexity: track_perplexity.then(Perplexity::new), last: None };
        Ok(Sampler { n_vocab: n, state: Mutex::new(state) })
    }

    /// Vocabulary size.
    #[getter]
    fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// Samples a token from `logits` (1-D float32 or float16 buffer of `n_vocab` values,
    /// C-contiguous; read in place, never copied) and accepts it, like
    /// `llama_sampler_sample`. With `dtype="bfloat16"` (or `"float16"`) a uint16/int16 buffer
    /// is read as those bits. The GIL is released while sampling.
    #[pyo3(signature = (logits, dtype = None))]
    fn sample(&self, py: Python<'_>, logits: &Bound<'_, PyAny>, dtype: Option<&str>) -> PyResult<Token> {
        let dtype = dtype.map(Dtype::parse).transpose()?;
        let buf = LogitsBuffer::get(logits, dtype)?;
        self.check_len(&buf, 1)?;
        let keep = Last { obj: logits.clone().unbind(), row: 0, token: 0, dtype };
        let (res, old) = py.detach(|| {
            let mut st = self.lock();
            let res = st.step(buf.logits());
            let old = match res {
                Ok(token) => st.last.replace(Last { token, ..keep }),
                Err(_) => None,
            };
            (res, old)
        });
        drop(old); // released with the GIL held
        res.map_err(sample_error)
    }

    /// Runs the chain on `logits` and returns the selected token without accepting it (call
    /// `accept` once the token is committed). `logits` and `dtype` as for `sample`.
    #[pyo3(signature = (logits, dtype = None))]
    fn apply(&self, py: Python<'_>, logits: &Bound<'_, PyAny>, dtype: Option<&str>) -> PyResult<Token> {
        let dtype = dtype.map(Dtype::parse).transpose()?;
        let buf = LogitsBuffer::get(logits, dtype)?;
        self.check_len(&buf, 1)?;
        let keep = Last { obj: logits.clone().unbind(), row: 0, token: 0, dtype };
        let (res, old) = py.detach(|| {
            let mut st = self.lock();
            let res = st.sampler.apply(buf.logits());
            let old = match res {
                Ok(token) => st.last.replace(Last { token, ..keep }),
                Err(_) => None,
            };
            (res, old)
        });
        drop(old);
        res.map_err(sample_error)
    }

    /// Feeds a committed token (a prompt token, or one chosen elsewhere) into the history
    /// that penalties, DRY and mirostat see.
    fn accept(&self, token: i64) -> PyResult<()> {
        if token < 0 || token as usize >= self.n_vocab {
            return Err(PyValueError::new_err(format!(
                "token {token} is outside the vocabulary [0, {})",
                self.n_vocab
            )));
        }
        self.lock().sampler.accept(token as Token);
        Ok(())
    }

    /// Clears the history and restarts every random stream from its seed.
    fn reset(&self) {
        let mut st = self.lock();
        st.sampler.reset();
        st.last = None;
        if st.perplexity.is_some() {
            st.perplexity = Some(Perplexity::new());
        }
    }

    /// An independent copy with the same history and random-stream position.
    fn clone(&self, py: Python<'_>) -> Self {
        let st = self.lock();
        let last =
            st.last.as_ref().map(|l| Last { obj: l.obj.clone_ref(py), row: l.row, token: l.token, dtype: l.dtype });
        let state = State { sampler: st.sampler.clone(), perplexity: st.perplexity.clone(), last };
        Sampler { n_vocab: self.n_vocab, state: Mutex::new(state) }
    }

    fn __copy__(&self, py: Python<'_>) -> Self {
        self.clone(py)
    }

    /// The `n` most likely tokens of the distribution the last token was drawn from (after the
    /// chain, llama-server's `post_sampling_probs`), as `(token, probability)` pairs, best
    /// first. Reads the last step's logits array again: do not modify it before calling this.
    #[pyo3(signature = (n = 10))]
    fn last_probs(&self, py: Python<'_>, n: usize) -> PyResult<Vec<(Token, f32)>> {
        self.with_last_row(py, |st, row, _| {
            let mut out: Vec<TokenProb> = Vec::with_capacity(n);
            // A fast path may have deferred the candidates; this rebuilds them from the row
            // (any precision) and is free when they are complete.
            let cands = st.sampler.materialize_candidates(row);
            top_n_post(cands, n, &mut out);
            out.into_iter().map(|t| (t.id, t.p)).collect()
        })
    }

    /// Entropy in nats of the model's own distribution (softmax of the raw logits) at the last
    /// step.
    fn entropy(&self, py: Python<'_>) -> PyResult<f64> {
        self.with_last_row(py, |_, row, _| RawDistribution::of(row).entropy)
    }

    /// Surprisal in bits (`-log2 p`) of the last token under the model's own distribution.
    fn surprisal(&self, py: Python<'_>) -> PyResult<f32> {
        self.with_last_row(py, |_, row, tok| {
            let p = RawDistribution::of(row).prob(row.get(tok as usize));
            nucleus_sampler::probs::surprisal_bits(p)
        })
    }

    /// Perplexity of the tokens sampled so far under the model's own distribution
    /// (`exp(mean(-ln p))`; 1.0 before any token). Needs `track_perplexity=True`, which adds
    /// one pass over the logits per step.
    fn perplexity(&self) -> PyResult<f64> {
        match &self.lock().perplexity {
            Some(p) => Ok(p.value()),
            None => {
                Err(PyValueError::new_err("perplexity is not tracked: create the Sampler with track_perplexity=True"))
            }
        }
    }

    fn __repr__(&self) -> String {
        let st = self.lock();
        let names: Vec<&str> = st.sampler.chain().samplers().iter().map(|s| s.name()).collect();
        format!("Sampler(n_vocab={}, chain=[{}])", self.n_vocab, names.join(", "))
    }
}

/// Samples one token per row of `matrix` (`[len(samplers), n_vocab]`, float32 or float16,
/// C-contiguous, read in place; `dtype` as for `Sampler.sample`) with `samplers[i]` for row
/// `i`, across threads with the GIL released, and accepts each. Returns the tokens. Every
/// sampler must be distinct and have the same `n_vocab`. If a row fails, `ValueError` names it
/// (the other rows' tokens are accepted).
#[pyfunction]
#[pyo3(signature = (samplers, matrix, dtype = None))]
pub(crate) fn sample_batch(
    py: Python<'_>,
    samplers: &Bound<'_, PyList>,
    matrix: &Bound<'_, PyAny>,
    dtype: Option<&str>,
) -> PyResult<Vec<Token>> {
    let dtype = dtype.map(Dtype::parse).transpose()?;
    let items: Vec<Bound<'_, Sampler>> =
        samplers.iter().map(|s| s.cast_into::<Sampler>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
    let refs: Vec<PyRef<'_, Sampler>> = items.iter().map(|s| s.borrow()).collect();
    let Some(first) = refs.first() else {
        return Ok(Vec::new());
    };
    let v = first.n_vocab;
    for (i, r) in refs.iter().enumerate() {
        if r.n_vocab != v {
            return Err(PyValueError::new_err(format!(
                "samplers[{i}] has n_vocab {} but samplers[0] has {v}",
                r.n_vocab
            )));
        }
        if refs[..i].iter().any(|o| std::ptr::eq::<Sampler>(&**o, &**r)) {
            return Err(PyValueError::new_err(format!("samplers[{i}] appears twice in the batch")));
        }
    }
    let buf = LogitsBuffer::get(matrix, dtype)?;
    first.check_len(&buf, refs.len())?;
    let b = refs.len();
    let mut guards: Vec<MutexGuard<'_, State>> = refs.iter().map(|r| r.lock()).collect();
    let res = {
        // Move each chain into a BatchSampler for the parallel step and back afterwards.
        let rows: Vec<TokenSampler> =
            guards.iter_mut().map(|g| std::mem::replace(&mut g.sampler, TokenSampler::new(Chain::new()))).collect();
        let mut batch = BatchSampler::new(rows);
        let mut out: Vec<Result<Token, SampleError>> = vec![Ok(0); b];
        let shape = py.detach(|| match buf.logits() {
            Logits::F32(all) => batch.sample(all, v, &mut out),
            // BatchSampler reads f32 rows; half-precision rows go one by one.
            _ => {
                for (i, (s, o)) in batch.rows_mut().iter_mut().zip(out.iter_mut()).enumerate() {
                    *o = s.sample(buf.row(i, v));
                }
                Ok(())
            }
        });
        for (g, s) in guards.iter_mut().zip(batch.rows_mut()) {
            std::mem::swap(&mut g.sampler, s);
        }
        shape.map(|_| out)
    };
    let out = res.map_err(sample_error)?;
    let mut tokens = Vec::with_capacity(b);
    let mut first_err = None;
    for (i, (g, r)) in guards.iter_mut().zip(out).enumerate() {
        match r {
            Ok(tok) => {
                if let Some(ppl) = &mut g.perplexity {
                    let row = buf.row(i, v);
                    ppl.push_logprob(RawDistribution::of(row).logprob(row.get(tok as usize)));
                }
                g.last = Some(Last { obj: matrix.clone().unbind(), row: i, token: tok, dtype });
                tokens.push(tok);
            }
            Err(e) => {
                first_err.get_or_insert_with(|| PyValueError::new_err(format!("row {i}: {e}")));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok(tokens)
}
