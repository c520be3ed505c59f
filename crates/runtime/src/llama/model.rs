//! [`LlamaCppModel`]: a GGUF file loaded by llama.cpp, checked before llama.cpp sees it.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use nucleus_grammar::VocabIndex;
use nucleus_sampler::Vocab;

use super::backend::{backend, clear_recent, clear_repacked, repacked, take_recent, tiled_matmul_off};
use super::context::LlamaCppContext;
use super::tokenizer::LlamaTokenizer;
use crate::error::{Result, RuntimeError};
use crate::model::{Context, ContextOptions, Model, Tokenizer};

/// A loaded GGUF model (weights memory-mapped, CPU only).
pub struct LlamaCppModel {
    model: Arc<LlamaModel>,
    tokenizer: Arc<LlamaTokenizer>,
    architecture: String,
    chat_template: Option<String>,
    path: PathBuf,
    /// Built on the first constrained request, then shared by all.
    grammar_vocab: OnceLock<Arc<VocabIndex>>,
    /// Grammars compiled for earlier requests (warm automata for repeated schemas).
    grammar_cache: crate::constraint::GrammarCache,
    /// No weights were repacked (see [`Model::batch_invariant`]).
    batch_invariant: bool,
}

impl std::fmt::Debug for LlamaCppModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaCppModel").field("path", &self.path).field("architecture", &self.architecture).finish()
    }
}

impl LlamaCppModel {
    /// Loads `path`. A missing file, a file that is not GGUF, and a file llama.cpp rejects
    /// (truncated, corrupt, unsupported architecture) are errors that say which.
    pub fn load(path: &Path) -> Result<Self> {
        check_gguf(path)?;
        let backend = backend()?;
        clear_recent();
        clear_repacked();
        let params = LlamaModelParams::default();
        let model = LlamaModel::load_from_file(backend, path, &params)
            .map_err(|e| RuntimeError::LoadFailed { path: path.to_path_buf(), detail: detail_or(take_recent(), e) })?;
        let batch_invariant = !repacked() && tiled_matmul_off();
        let model = Arc::new(model);
        let tokenizer = Arc::new(LlamaTokenizer::new(model.clone()));
        let architecture = model.meta_val_str("general.architecture").unwrap_or_default();
        let chat_template = model.chat_template(None).ok().and_then(|t| t.to_string().ok());
        Ok(LlamaCppModel {
            model,
            tokenizer,
            architecture,
            chat_template,
            path: path.to_path_buf(),
            grammar_vocab: OnceLock::new(),
            grammar_cache: Default::default(),
            batch_invariant,
        })
    }

    /// The file this model was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// llama-cpp-2's model handle, for reference implementations in tests (llama.cpp's own
    /// samplers as an oracle). Generation never samples through it.
    pub fn raw(&self) -> &LlamaModel {
        &self.model
    }

    /// Opens `spec` (a catalog name, pulled on first use with `fetcher`, or a GGUF path, as
    /// `--model-draft` takes it) as a draft model for `target`: found, loaded, and its
    /// vocabulary checked against the target's ([`crate::check_vocabulary`], the check the
    /// command line and the server make too). The bindings' way to give a model its draft
    /// model; wrap the result in a [`crate::DraftModel`] with a context of its own.
    pub fn load_draft_for(target: &dyn Model, spec: &str, fetcher: &dyn crate::pull::Fetch) -> Result<Self> {
        let r = crate::resolve::ModelRef::parse(spec)?;
        let (path, _) = crate::resolve::locate(&r, &crate::pull::models_dir(), fetcher, &mut |_| {})?;
        let draft = LlamaCppModel::load(&path)?;
        crate::draft_model::check_vocabulary(target, &draft)?;
        Ok(draft)
    }

    /// A new llama.cpp context (the concrete type; [`Model::new_context`] boxes it).
    pub fn new_llama_context(&self, opts: &ContextOptions) -> Result<LlamaCppContext> {
        LlamaCppContext::new(self.model.clone(), self.n_ctx_train(), opts)
    }
}

impl Model for LlamaCppModel {
    fn tokenizer(&self) -> Arc<dyn Tokenizer> {
        self.tokenizer.clone()
    }

    fn vocab(&self) -> Arc<dyn Vocab> {
        self.tokenizer.clone()
    }

    fn n_vocab(&self) -> usize {
        self.tokenizer.n_vocab()
    }

    fn n_ctx_train(&self) -> usize {
        self.model.n_ctx_train() as usize
    }

    fn architecture(&self) -> &str {
        &self.architecture
    }

    fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    fn new_context(&self, opts: &ContextOptions) -> Result<Box<dyn Context>> {
        Ok(Box::new(self.new_llama_context(opts)?))
    }

    fn grammar_vocab(&self) -> Arc<VocabIndex> {
        self.grammar_vocab
            .get_or_init(|| Arc::new(crate::constraint::build_vocab_index(self.tokenizer.as_ref())))
            .clone()
    }

    fn grammar_cache(&self) -> Option<&crate::constraint::GrammarCache> {
        Some(&self.grammar_cache)
    }

    /// True unless llama.cpp repacked some weights at load or its tiled K-quant matmul is on.
    /// Repacked weights (Q4_0, Q4_K, Q6_K, ... interleaved for kernels that multiply four rows
    /// at once, other kernels for the rows left over) and the tiled matmul (batches of eight
    /// rows or more) both give a token decoded alone other bits than inside a batch (Gemma 3
    /// 270M Q4_K_M: logits off by up to 3.7). This repository builds llama.cpp with
    /// `GGML_CPU_REPACK=OFF` (.cargo/config.toml) and the backend turns the tiled matmul off,
    /// so every model is invariant unless the user sets `GGML_CPU_TILED_MM=1`.
    fn batch_invariant(&self) -> bool {
        self.batch_invariant
    }
}

/// The file exists, is a regular file and starts with the GGUF magic.
fn check_gguf(path: &Path) -> Result<()> {
    let mut f = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RuntimeError::ModelNotFound { path: path.to_path_buf() },
        _ => RuntimeError::io(format!("opening {}", path.display()), e),
    })?;
    if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(RuntimeError::NotGguf { path: path.to_path_buf() });
    }
    let mut magic = [0u8; 4];
    match f.read_exact(&mut magic) {
        Ok(()) if &magic == b"GGUF" => Ok(()),
        _ => Err(RuntimeError::NotGguf { path: path.to_path_buf() }),
    }
}

fn detail_or(recent: String, e: impl std::fmt::Display) -> String {
    if recent.is_empty() {
        e.to_string()
    } else {
        recent
    }
}
