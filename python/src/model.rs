//! `nucleus.Model`: a GGUF model run by nucleus-runtime (llama.cpp computes the logits,
//! nucleus-sampler picks every token), with `generate` streaming tokens and text as a Python
//! iterator. The generation runs on its own thread; the iterator waits for each token with the
//! GIL released.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use nucleus_runtime::{
    generate_speculating, locate, models_dir, prompt_tokens, spec_binding_option, ChatMessage, ContextOptions,
    LlamaCppModel, Model as _, ModelRef, Pip, Prompt, RuntimeError, Sequence, SequenceOptions, SpecStats, SpecType,
    TrieSetting,
};
use nucleus_sampler::params_map::Vocabulary;
use nucleus_sampler::SamplingParams;
use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::convert::{dict_to_map, to_value};
use crate::grammar::TokenTrie;

/// A model: `Model("smollm2")` (a catalog name, pulled on first use like `nucleus pull`) or
/// `Model(path)` to a GGUF file; `draft_model=` (a name or path of the same vocabulary) gives
/// it a draft model for `speculative={"type": "draft"}`.
#[pyclass(module = "nucleus._nucleus", frozen)]
pub(crate) struct Model {
    model: Arc<LlamaCppModel>,
    /// The draft model, its vocabulary checked against `model`'s; each drafting generation
    /// gives it a context of its own.
    draft: Option<Arc<LlamaCppModel>>,
    /// The `modelId` token-trie descriptors must carry.
    id: String,
    /// The token trie constraining the next generations ([`Model::set_token_trie`]).
    trie: Mutex<Option<TrieSetting>>,
}

fn runtime_error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// Why a draft model could not be given, as its Python type: a missing file is
/// `FileNotFoundError`, an unknown name, a file that is not GGUF or a model of another
/// vocabulary `ValueError`, anything else (a failed download or load) `RuntimeError`.
fn draft_error(e: RuntimeError) -> PyErr {
    let msg = format!("draft_model: {e}");
    match e {
        RuntimeError::ModelNotFound { .. } => PyFileNotFoundError::new_err(msg),
        RuntimeError::UnknownModel { .. } | RuntimeError::NotGguf { .. } | RuntimeError::DraftVocabulary(_) => {
            PyValueError::new_err(msg)
        }
        _ => PyRuntimeError::new_err(msg),
    }
}

/// A prompt: text, token ids, or chat messages (`[{"role", "content"}]`).
fn prompt_of(obj: &Bound<'_, PyAny>) -> PyResult<Prompt> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Prompt::Text(s.to_str()?.to_string()));
    }
    let list = obj
        .cast::<PyList>()
        .map_err(|_| PyValueError::new_err("prompt must be a str, a list of token ids or a list of messages"))?;
    if list.iter().all(|x| x.extract::<i64>().is_ok()) {
        return Ok(Prompt::Tokens(list.extract()?));
    }
    let mut messages = Vec::new();
    for m in list.iter() {
        let d =
            m.cast::<PyDict>().map_err(|_| PyValueError::new_err("messages must be dicts with role and content"))?;
        let get = |k: &str| -> PyResult<String> {
            d.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("a message has no {k:?}")))?.extract()
        };
        messages.push(ChatMessage::new(get("role")?, get("content")?));
    }
    Ok(Prompt::Chat(messages))
}

#[pymethods]
impl Model {
    #[new]
    #[pyo3(signature = (model, *, draft_model = None))]
    fn new(py: Python<'_>, model: &str, draft_model: Option<&str>) -> PyResult<Self> {
        let loaded = py.detach(|| {
            let r = ModelRef::parse(model)?;
            let (path, _) = locate(&r, &models_dir(), &Pip::default(), &mut |_| {})?;
            Ok::<_, RuntimeError>((LlamaCppModel::load(&path)?, r.descriptor_id(model)))
        });
        let (loaded, id) = loaded.map_err(runtime_error)?;
        let draft = match draft_model {
            Some(spec) => Some(Arc::new(
                py.detach(|| LlamaCppModel::load_draft_for(&loaded, spec, &Pip::default())).map_err(draft_error)?,
            )),
            None => None,
        };
        Ok(Model { model: Arc::new(loaded), draft, id, trie: Mutex::new(None) })
    }

    /// Whether the model was given a draft model (`draft_model=`).
    #[getter]
    fn has_draft_model(&self) -> bool {
        self.draft.is_some()
    }

    /// The `modelId` a token-trie descriptor must carry for this model: the catalog name, or
    /// the GGUF file's name without `.gguf` (as for `nucleus generate --token-trie`).
    #[getter]
    fn model_id(&self) -> &str {
        &self.id
    }

    /// Constrains the following generations (until `clear_token_trie`) to the leaves of
    /// `trie`: its path and mode, from the start of the path, token ids checked against this
    /// model's vocabulary and `modelId` against `model_id`. Forced tokens are taken without a
    /// sampling step; a generation ends when it has spelled a leaf nothing longer continues.
    fn set_token_trie(&self, trie: &TokenTrie) -> PyResult<()> {
        let t = trie.for_model(&self.id, self.model.n_vocab())?;
        *self.trie.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        Ok(())
    }

    /// Removes the token trie set by `set_token_trie`: generations are unconstrained again.
    fn clear_token_trie(&self) {
        *self.trie.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Vocabulary size.
    #[getter]
    fn n_vocab(&self) -> usize {
        self.model.n_vocab()
    }

    /// Token ids of `text` (`add_special`: BOS as the model wants it; `parse_special`: control
    /// tokens written as text become tokens).
    #[pyo3(signature = (text, add_special = true, parse_special = true))]
    fn tokenize(&self, text: &str, add_special: bool, parse_special: bool) -> PyResult<Vec<i32>> {
        self.model.tokenizer().encode(text, add_special, parse_special).map_err(runtime_error)
    }

    /// The text of `tokens` (control tokens rendered only with `special=True`).
    #[pyo3(signature = (tokens, special = false))]
    fn detokenize(&self, tokens: Vec<i32>, special: bool) -> PyResult<String> {
        let n = self.model.n_vocab();
        if let Some(bad) = tokens.iter().find(|&&t| t < 0 || t as usize >= n) {
            return Err(PyValueError::new_err(format!("token {bad} is outside the vocabulary [0, {n})")));
        }
        let tok = self.model.tokenizer();
        let mut bytes = Vec::new();
        for &t in &tokens {
            tok.append_piece(t, special, &mut bytes);
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Generates from `prompt` (text continued as is, token ids, or chat messages rendered
    /// with the model's template) and yields `(token, text)` as tokens are made; `text` holds
    /// complete characters only and never stop-string text. Sampling keywords are
    /// `Sampler`'s; also `max_tokens`, `stop` (strings), `threads` (default 1), `n_ctx`, and
    /// `token_trie` (a `TokenTrie` constraining this generation only, in place of the one set
    /// with `set_token_trie`) and `speculative` (a dict as the server's `speculative` object:
    /// `type` `"draft"` (the draft model's proposals; the default when the model has one),
    /// `"ngram"` (the default otherwise) or `"none"`, `draft_max`, `draft_min`,
    /// `ngram_size_n`): speculative decoding, verified by the same sampler so the tokens do not
    /// change; the generation's `speculative` property reports it once finished.
    #[pyo3(signature = (prompt, *, max_tokens = None, stop = Vec::new(), threads = 1, n_ctx = None, token_trie = None, speculative = None, **params))]
    #[allow(clippy::too_many_arguments)]
    fn generate(
        &self,
        prompt: &Bound<'_, PyAny>,
        max_tokens: Option<usize>,
        stop: Vec<String>,
        threads: usize,
        n_ctx: Option<usize>,
        token_trie: Option<PyRef<'_, TokenTrie>>,
        speculative: Option<&Bound<'_, PyAny>>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Generation> {
        let prompt = prompt_of(prompt)?;
        let spec = match speculative {
            Some(v) if !v.is_none() && !v.is_instance_of::<PyDict>() => {
                return Err(PyTypeError::new_err(
                    "speculative must be a dict (the server's `speculative` object) or None",
                ))
            }
            Some(v) => spec_binding_option(
                Some(&to_value("speculative", v)?),
                self.model.batch_invariant(),
                self.draft.is_some(),
            )
            .map_err(|e| PyValueError::new_err(e.to_string()))?,
            None => None,
        };
        let map = match params {
            Some(d) => dict_to_map(d)?,
            None => Default::default(),
        };
        let sampling = SamplingParams::from_map(&map, Vocabulary::Model(self.model.n_vocab()))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let opts = SequenceOptions { max_tokens, stop, ..Default::default() };
        let trie = match token_trie {
            Some(t) => Some(t.for_model(&self.id, self.model.n_vocab())?),
            None => self.trie.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        };
        let ctx_opts = ContextOptions { n_ctx, threads: Some(threads.max(1)), ..Default::default() };
        let model = self.model.clone();
        // `resolve` allows `draft` only when there is a draft model.
        let draft = match spec {
            Some((SpecType::Draft, _)) => self.draft.clone(),
            _ => None,
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = sync_channel::<Result<(i32, String), String>>(64);
        let stop_flag = cancel.clone();
        let reason = Arc::new(Mutex::new(None));
        let reason_out = reason.clone();
        let spec_stats = Arc::new(Mutex::new(None));
        let spec_out = spec_stats.clone();
        std::thread::spawn(move || {
            let run = || -> Result<String, String> {
                let tokens = prompt_tokens(model.as_ref(), &prompt).map_err(|e| e.to_string())?;
                let mut ctx = model.new_context(&ctx_opts).map_err(|e| e.to_string())?;
                let seq =
                    Sequence::new(model.as_ref(), &sampling, opts).map_err(|e| e.to_string())?.with_token_trie(trie);
                let mut on_token = |ev: &nucleus_runtime::TokenEvent<'_>| {
                    match tx.send(Ok((ev.token, ev.text.to_string()))) {
                        Ok(()) => ControlFlow::Continue(()),
                        Err(_) => ControlFlow::Break(()), // the iterator was dropped
                    }
                };
                let draft = draft.as_deref().map(|d| (d as &dyn nucleus_runtime::Model, &ctx_opts));
                let stats =
                    generate_speculating(ctx.as_mut(), &tokens, seq, spec, draft, Some(&stop_flag), &mut on_token)
                        .map_err(|e| e.to_string())?;
                *spec_out.lock().unwrap_or_else(|e| e.into_inner()) = stats.spec;
                Ok(stats.stop.as_str().to_string())
            };
            match run() {
                Ok(r) => *reason_out.lock().unwrap_or_else(|e| e.into_inner()) = Some(r),
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
        Ok(Generation { rx: Mutex::new(rx), cancel, reason, spec: spec_stats })
    }
}

/// The stream of one generation: iterate for `(token, text)`; `stop_reason` once finished
/// (`eog`, `stop`, `limit`, `context`, `cancelled`) and `speculative` (what speculative
/// decoding did); `close()` stops it early.
#[pyclass(module = "nucleus._nucleus")]
pub(crate) struct Generation {
    rx: Mutex<Receiver<Result<(i32, String), String>>>,
    cancel: Arc<AtomicBool>,
    reason: Arc<Mutex<Option<String>>>,
    /// Set with `reason` when a speculating generation finishes.
    spec: Arc<Mutex<Option<SpecStats>>>,
}

#[pymethods]
impl Generation {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<(i32, String)>> {
        let next = py.detach(|| self.rx.lock().unwrap_or_else(|e| e.into_inner()).recv());
        match next {
            Ok(Ok(ev)) => Ok(Some(ev)),
            Ok(Err(e)) => Err(runtime_error(e)),
            Err(_) => Ok(None), // the generation thread finished
        }
    }

    /// Why the generation ended, once it has.
    #[getter]
    fn stop_reason(&self) -> Option<String> {
        self.reason.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What speculative decoding did, once the generation has finished (`None` before, or when
    /// it did not speculate): `drafted`, `accepted`, `acceptance_rate`, `passes_saved`,
    /// `verify_passes` (the server's `usage.speculative`).
    #[getter]
    fn speculative<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(s) = *self.spec.lock().unwrap_or_else(|e| e.into_inner()) else { return Ok(None) };
        let d = PyDict::new(py);
        d.set_item("drafted", s.drafted)?;
        d.set_item("accepted", s.accepted)?;
        d.set_item("acceptance_rate", s.acceptance_rate())?;
        d.set_item("passes_saved", s.accepted)?;
        d.set_item("verify_passes", s.verify_passes)?;
        Ok(Some(d))
    }

    /// Stops the generation after the current token.
    fn close(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

impl Drop for Generation {
    /// Stops the generation and waits for its thread (one forward pass at most): an
    /// interpreter that exits while llama.cpp is still decoding can crash.
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        let rx = self.rx.get_mut().unwrap_or_else(|e| e.into_inner());
        while rx.recv().is_ok() {}
    }
}
