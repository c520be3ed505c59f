//! `Model`: a GGUF model run by nucleus-runtime, with `generate()` returning an async iterator
//! of `{token, text}`. The generation runs on its own thread and hands tokens over a channel,
//! so the JavaScript event loop keeps running while the model decodes.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncGenerator, ClassInstance, Object, Unknown};
use napi::{Error, Result, Status};
use napi_derive::napi;
use nucleus_runtime::{
    generate_speculating, locate, models_dir, prompt_tokens, spec_binding_option, ChatMessage, ContextOptions,
    LlamaCppModel, Model as _, ModelRef, Pip, Prompt, RuntimeError, Sequence, SequenceOptions, SpecType, TrieSetting,
};
use nucleus_sampler::params_map::Vocabulary;
use nucleus_sampler::SamplingParams;
use serde_json::Value;
use tokio::sync::{mpsc, Mutex};

use crate::convert::{params_map, snake_case, to_value};
use crate::grammar::TokenTrie;

fn invalid(msg: String) -> Error {
    Error::new(Status::InvalidArg, msg)
}

fn failure(e: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, e.to_string())
}

/// One generated token.
#[napi(object)]
pub struct GeneratedToken {
    /// Token id.
    pub token: i32,
    /// Text released by this token: complete characters only, never stop-string text.
    pub text: String,
}

/// The `speculative` option of `generate`, for TypeScript (the server's `speculative` object;
/// keys also in snake_case). Read at run time by name, never through this struct.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // only generates the TypeScript interface
pub struct SpecOptions {
    /// `'draft'` (the draft model's proposals: `new Model(path, { draftModel })`; the default
    /// when the model has one), `'ngram'` (the default otherwise: drafts from n-gram matches
    /// over the prompt and the output) or `'none'`.
    #[napi(ts_type = "'draft' | 'ngram' | 'none'")]
    pub r#type: Option<String>,
    /// Most tokens drafted per forward pass (1..=256, default 16).
    pub draft_max: Option<u32>,
    /// Drafts shorter than this are not used (0..=256, at most `draftMax`; default 1).
    pub draft_min: Option<u32>,
    /// Shortest match of the last tokens that may propose a draft (1..=64, default 3).
    pub ngram_size_n: Option<u32>,
}

/// What speculative decoding did in one generation (the server's `usage.speculative`).
#[napi(object)]
#[derive(Clone, Copy)]
pub struct SpecStats {
    /// Draft tokens decoded.
    pub drafted: u32,
    /// Draft tokens the sampler confirmed.
    pub accepted: u32,
    /// `accepted / drafted` (0 without drafts).
    pub acceptance_rate: f64,
    /// Forward passes plain decoding would have needed and speculation did not (= `accepted`).
    pub passes_saved: u32,
    /// Forward passes that carried a draft.
    pub verify_passes: u32,
}

impl From<nucleus_runtime::SpecStats> for SpecStats {
    fn from(s: nucleus_runtime::SpecStats) -> Self {
        let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        SpecStats {
            drafted: n(s.drafted),
            accepted: n(s.accepted),
            acceptance_rate: s.acceptance_rate(),
            passes_saved: n(s.accepted),
            verify_passes: n(s.verify_passes),
        }
    }
}

/// The `speculative` option (its keys camelCase or snake_case) as the runtime's kind and options.
fn speculation(
    map: &mut serde_json::Map<String, Value>,
    batch_invariant: bool,
    draft_model: bool,
) -> Result<Option<(SpecType, nucleus_runtime::SpecOptions)>> {
    let v = match map.remove("speculative") {
        Some(Value::Object(o)) => Some(Value::Object(o.into_iter().map(|(k, v)| (snake_case(&k), v)).collect())),
        other => other,
    };
    spec_binding_option(v.as_ref(), batch_invariant, draft_model).map_err(|e| invalid(e.to_string()))
}

/// The options of `new Model`, for TypeScript (keys also in snake_case). Read at run time by
/// name, never through this struct.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // only generates the TypeScript interface
pub struct ModelOptions {
    /// A draft model for `speculative: { type: 'draft' }`: a catalog name (pulled on first
    /// use) or a GGUF path, sharing the model's vocabulary (checked at load).
    pub draft_model: Option<String>,
}

/// Why a draft model could not be given: an unknown name, a file that is not GGUF or a model
/// of another vocabulary is `InvalidArg`, a missing file or a failed download or load
/// `GenericFailure`; the message starts with `draftModel:`.
fn draft_error(e: RuntimeError) -> Error {
    let status = match e {
        RuntimeError::UnknownModel { .. } | RuntimeError::NotGguf { .. } | RuntimeError::DraftVocabulary(_) => {
            Status::InvalidArg
        }
        _ => Status::GenericFailure,
    };
    Error::new(status, format!("draftModel: {e}"))
}

/// `options.draftModel` (or `draft_model`) of `new Model`; any other key is refused.
fn draft_option(options: Option<&Object<'_>>) -> Result<Option<String>> {
    let mut map = params_map(options, &[])?;
    let draft = match map.remove("draft_model") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(invalid("`draftModel` must be a string (a catalog name or a GGUF path)".into())),
    };
    if let Some(k) = map.keys().next() {
        return Err(invalid(format!("unknown option `{k}` of new Model (the options are draftModel)")));
    }
    Ok(draft)
}

/// A model: `new Model('smollm2')` (a catalog name, pulled on first use like `nucleus pull`)
/// or the path of a GGUF file; `new Model(path, { draftModel })` gives it a draft model of the
/// same vocabulary for `speculative: { type: 'draft' }`. Loading blocks; do it once at start-up.
#[napi]
pub struct Model {
    model: Arc<LlamaCppModel>,
    /// The draft model, its vocabulary checked against `model`'s; each drafting generation
    /// gives it a context of its own.
    draft: Option<Arc<LlamaCppModel>>,
    /// The `modelId` token-trie descriptors must carry.
    id: String,
    /// The token trie constraining the next generations ([`Model::set_token_trie`]).
    trie: Option<TrieSetting>,
}

/// A prompt: text, token ids, or chat messages `[{role, content}]`.
fn prompt_of(v: Value) -> Result<Prompt> {
    match v {
        Value::String(s) => Ok(Prompt::Text(s)),
        Value::Array(items) if items.iter().all(|x| x.is_i64()) => {
            Ok(Prompt::Tokens(items.iter().filter_map(|x| x.as_i64()).map(|t| t as i32).collect()))
        }
        Value::Array(items) => items
            .iter()
            .map(|m| {
                let f = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
                match (f("role"), f("content")) {
                    (Some(r), Some(c)) => Ok(ChatMessage::new(r, c)),
                    _ => Err(invalid("messages must be objects with string role and content".into())),
                }
            })
            .collect::<Result<Vec<_>>>()
            .map(Prompt::Chat),
        _ => Err(invalid("prompt must be a string, an array of token ids or an array of messages".into())),
    }
}

#[napi]
impl Model {
    #[napi(catch_unwind, constructor, ts_args_type = "model: string, options?: ModelOptions")]
    pub fn new(model: String, options: Option<Object<'_>>) -> Result<Self> {
        let draft_spec = draft_option(options.as_ref())?;
        let r = ModelRef::parse(&model).map_err(failure)?;
        let (path, _) = locate(&r, &models_dir(), &Pip::default(), &mut |_| {}).map_err(failure)?;
        let loaded = LlamaCppModel::load(&path).map_err(failure)?;
        let draft = match draft_spec {
            Some(spec) => {
                Some(Arc::new(LlamaCppModel::load_draft_for(&loaded, &spec, &Pip::default()).map_err(draft_error)?))
            }
            None => None,
        };
        Ok(Model { model: Arc::new(loaded), draft, id: r.descriptor_id(&model), trie: None })
    }

    /// Whether the model was given a draft model (`draftModel`).
    #[napi(catch_unwind, getter)]
    pub fn has_draft_model(&self) -> bool {
        self.draft.is_some()
    }

    /// The `modelId` a token-trie descriptor must carry for this model: the catalog name, or
    /// the GGUF file's name without `.gguf` (as for `nucleus generate --token-trie`).
    #[napi(catch_unwind, getter)]
    pub fn model_id(&self) -> String {
        self.id.clone()
    }

    /// Constrains the following generations (until `clearTokenTrie`) to the leaves of `trie`:
    /// its path and mode, from the start of the path, token ids checked against this model's
    /// vocabulary and `modelId` against `model.modelId`. Forced tokens are taken without a
    /// sampling step; a generation ends when it has spelled a leaf nothing longer continues.
    #[napi(catch_unwind)]
    pub fn set_token_trie(&mut self, trie: &TokenTrie) -> Result<()> {
        self.trie = Some(trie.for_model(&self.id, self.model.n_vocab())?);
        Ok(())
    }

    /// Removes the token trie set by `setTokenTrie`: generations are unconstrained again.
    #[napi(catch_unwind)]
    pub fn clear_token_trie(&mut self) {
        self.trie = None;
    }

    /// Vocabulary size.
    #[napi(catch_unwind, getter)]
    pub fn n_vocab(&self) -> u32 {
        self.model.n_vocab() as u32
    }

    /// Token ids of `text`.
    #[napi(catch_unwind)]
    pub fn tokenize(&self, text: String, add_special: Option<bool>, parse_special: Option<bool>) -> Result<Vec<i32>> {
        self.model
            .tokenizer()
            .encode(&text, add_special.unwrap_or(true), parse_special.unwrap_or(true))
            .map_err(failure)
    }

    /// The text of `tokens` (control tokens rendered only with `special`).
    #[napi(catch_unwind)]
    pub fn detokenize(&self, tokens: Vec<i32>, special: Option<bool>) -> Result<String> {
        let n = self.model.n_vocab();
        if let Some(bad) = tokens.iter().find(|&&t| t < 0 || t as usize >= n) {
            return Err(invalid(format!("token {bad} is outside the vocabulary [0, {n})")));
        }
        let tok = self.model.tokenizer();
        let mut bytes = Vec::new();
        for &t in &tokens {
            tok.append_piece(t, special.unwrap_or(false), &mut bytes);
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Starts generating from `prompt` (text continued as is, token ids, or chat messages
    /// rendered with the model's template). `options` holds the `Sampler` parameters plus
    /// `maxTokens`, `stop` (strings), `threads` (default 1), `nCtx` and `tokenTrie` (a
    /// `TokenTrie` constraining this generation only, in place of the one set with
    /// `setTokenTrie`) and `speculative` (the server's `speculative` object: `type` `'draft'`
    /// (the draft model's proposals; the default when the model has one), `'ngram'` (the
    /// default otherwise) or `'none'`, `draftMax`, `draftMin`, `ngramSizeN`, camelCase or snake_case):
    /// speculative decoding, verified by the same sampler so the tokens do not change; the
    /// result's `speculative` reports it. Iterate the result with `for await`.
    #[napi(
        catch_unwind,
        ts_args_type = "prompt: string | number[] | Array<{ role: string, content: string }>, options?: SamplerParams & { maxTokens?: number, stop?: string[], threads?: number, nCtx?: number, tokenTrie?: TokenTrie, speculative?: SpecOptions | null }"
    )]
    pub fn generate(&self, prompt: Unknown<'_>, options: Option<Object<'_>>) -> Result<Generation> {
        let prompt = prompt_of(to_value("prompt", &prompt)?)?;
        let mut trie = self.trie.clone();
        if let Some(o) = &options {
            for key in ["tokenTrie", "token_trie"] {
                let given =
                    o.get::<Unknown<'_>>(key)?.filter(|v| !matches!(v.get_type(), Ok(napi::ValueType::Undefined)));
                if let Some(v) = given {
                    // SAFETY: `ClassInstance`'s conversion checks that the object wraps a
                    // `TokenTrie` before reading it, and fails otherwise.
                    let t = unsafe { v.cast::<ClassInstance<'_, TokenTrie>>() }
                        .map_err(|_| invalid(format!("`{key}` must be a TokenTrie")))?;
                    trie = Some(t.for_model(&self.id, self.model.n_vocab())?);
                }
            }
        }
        let mut map = params_map(options.as_ref(), &["token_trie"])?;
        let take_usize = |map: &mut serde_json::Map<String, Value>, k: &str| -> Result<Option<usize>> {
            match map.remove(k) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .map(|x| Some(x as usize))
                    .ok_or_else(|| invalid(format!("`{k}` must be a non-negative integer"))),
            }
        };
        let spec = speculation(&mut map, self.model.batch_invariant(), self.draft.is_some())?;
        // `resolve` allows `draft` only when there is a draft model.
        let draft = match spec {
            Some((SpecType::Draft, _)) => self.draft.clone(),
            _ => None,
        };
        let max_tokens = take_usize(&mut map, "max_tokens")?;
        let threads = take_usize(&mut map, "threads")?.unwrap_or(1).max(1);
        let n_ctx = take_usize(&mut map, "n_ctx")?;
        let stop = match map.remove("stop") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .into_iter()
                .map(|s| s.as_str().map(str::to_string).ok_or_else(|| invalid("`stop` must hold strings".into())))
                .collect::<Result<_>>()?,
            Some(_) => return Err(invalid("`stop` must be an array of strings".into())),
        };
        let sampling = SamplingParams::from_map(&map, Vocabulary::Model(self.model.n_vocab()))
            .map_err(|e| invalid(e.to_string()))?;
        let opts = SequenceOptions { max_tokens, stop, ..Default::default() };
        let ctx_opts = ContextOptions { n_ctx, threads: Some(threads), ..Default::default() };
        let model = self.model.clone();
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let (tx, rx) = mpsc::channel::<std::result::Result<GeneratedToken, String>>(64);
        let spec_stats = Arc::new(std::sync::Mutex::new(None));
        let spec_out = spec_stats.clone();
        std::thread::spawn(move || {
            let run = || -> std::result::Result<(), String> {
                let tokens = prompt_tokens(model.as_ref(), &prompt).map_err(|e| e.to_string())?;
                let mut ctx = model.new_context(&ctx_opts).map_err(|e| e.to_string())?;
                let seq =
                    Sequence::new(model.as_ref(), &sampling, opts).map_err(|e| e.to_string())?.with_token_trie(trie);
                let mut on_token = |ev: &nucleus_runtime::TokenEvent<'_>| {
                    let t = GeneratedToken { token: ev.token, text: ev.text.to_string() };
                    match tx.blocking_send(Ok(t)) {
                        Ok(()) => ControlFlow::Continue(()),
                        Err(_) => ControlFlow::Break(()), // the iterator is gone
                    }
                };
                let draft = draft.as_deref().map(|d| (d as &dyn nucleus_runtime::Model, &ctx_opts));
                let stats = generate_speculating(ctx.as_mut(), &tokens, seq, spec, draft, Some(&flag), &mut on_token)
                    .map_err(|e| e.to_string())?;
                *spec_out.lock().unwrap_or_else(|e| e.into_inner()) = stats.spec.map(SpecStats::from);
                Ok(())
            };
            if let Err(e) = run() {
                let _ = tx.blocking_send(Err(e));
            }
        });
        Ok(Generation { rx: Arc::new(Mutex::new(rx)), cancel, spec: spec_stats })
    }
}

/// The stream of one generation, an async iterator of `{token, text}`; `return()` (leaving a
/// `for await` loop early) stops the model after the current token and resolves once it has
/// stopped. `speculative` says what speculative decoding did, once the generation has finished.
#[napi(async_iterator)]
pub struct Generation {
    rx: Arc<Mutex<mpsc::Receiver<std::result::Result<GeneratedToken, String>>>>,
    cancel: Arc<AtomicBool>,
    /// Set before the channel closes, when a speculating generation finishes.
    spec: Arc<std::sync::Mutex<Option<SpecStats>>>,
}

#[napi]
impl Generation {
    /// What speculative decoding did, once the generation has finished (`null` before, or
    /// when it did not speculate).
    #[napi(catch_unwind, getter)]
    pub fn speculative(&self) -> Option<SpecStats> {
        *self.spec.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[napi]
impl AsyncGenerator for Generation {
    type Yield = GeneratedToken;
    type Next = ();
    type Return = ();

    fn next(
        &mut self,
        _value: Option<()>,
    ) -> impl std::future::Future<Output = Result<Option<GeneratedToken>>> + Send + 'static {
        let rx = self.rx.clone();
        async move {
            match rx.lock().await.recv().await {
                Some(Ok(t)) => Ok(Some(t)),
                Some(Err(e)) => Err(failure(e)),
                None => Ok(None),
            }
        }
    }

    fn complete(
        &mut self,
        _value: Option<()>,
    ) -> impl std::future::Future<Output = Result<Option<GeneratedToken>>> + Send + 'static {
        self.cancel.store(true, Ordering::Relaxed);
        let rx = self.rx.clone();
        async move {
            // Wait for the generation thread to stop (it checks the flag between forward
            // passes): a process that exits while llama.cpp is still decoding can crash.
            let mut rx = rx.lock().await;
            while rx.recv().await.is_some() {}
            Ok(None)
        }
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}
