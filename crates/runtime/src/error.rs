//! [`RuntimeError`]: everything that can go wrong between a model name and a generated token,
//! worded for the person at the command line. The runtime never panics on user input.

use std::io;
use std::path::PathBuf;

use nucleus_sampler::{ParamError, SampleError, Token};
use thiserror::Error;

/// Why loading, pulling, prompting or generating failed.
#[derive(Debug, Error)]
pub enum RuntimeError {
    /// `-m NAME` is neither a known model nor an existing path.
    #[error("unknown model `{name}`: known models are {known}; or pass the path of a .gguf file")]
    UnknownModel {
        /// What the user typed.
        name: String,
        /// The catalog's names, comma-separated.
        known: String,
    },
    /// A model path that does not exist.
    #[error("model file {} does not exist", path.display())]
    ModelNotFound {
        /// The missing path.
        path: PathBuf,
    },
    /// A catalog model that is not downloaded and is not pulled automatically.
    #[error("model `{name}` is not downloaded yet: run `nucleus pull {name}` first{note}")]
    NotPulled {
        /// Catalog name.
        name: String,
        /// Extra words (licence terms), starting with "; " or empty.
        note: String,
    },
    /// The file does not start with the GGUF magic.
    #[error("{} is not a GGUF model file (it does not start with the bytes \"GGUF\")", path.display())]
    NotGguf {
        /// The file.
        path: PathBuf,
    },
    /// llama.cpp refused the file (truncated, corrupt or unsupported).
    #[error("llama.cpp could not load {} (corrupt, truncated or unsupported GGUF){}", path.display(), detail_suffix(detail))]
    LoadFailed {
        /// The file.
        path: PathBuf,
        /// llama.cpp's own error lines, if it logged any.
        detail: String,
    },
    /// llama.cpp could not create an inference context.
    #[error("llama.cpp could not create a context of {n_ctx} tokens{}", detail_suffix(detail))]
    ContextFailed {
        /// Requested context size.
        n_ctx: usize,
        /// llama.cpp's own error lines, if any.
        detail: String,
    },
    /// The prompt leaves no room in the context for even one generated token.
    #[error("the prompt is {prompt} tokens but the context holds {n_ctx}: shorten the prompt or raise --ctx-size")]
    PromptTooLong {
        /// Prompt length in tokens.
        prompt: usize,
        /// Context size in tokens.
        n_ctx: usize,
    },
    /// A draft model whose vocabulary is not the target model's (its drafts would be other
    /// tokens).
    #[error("the draft model cannot draft for this model: {0}")]
    DraftVocabulary(String),
    /// Speculation with a draft model was asked for where no draft model is loaded.
    #[error("speculative 'draft' needs a draft model, and none is loaded")]
    NoDraftModel,
    /// The prompt tokenized to nothing.
    #[error("the prompt is empty (it tokenized to no tokens)")]
    EmptyPrompt,
    /// A token id outside the vocabulary.
    #[error("token {token} is outside the vocabulary (0..{n_vocab})")]
    BadToken {
        /// The token.
        token: Token,
        /// Vocabulary size.
        n_vocab: usize,
    },
    /// A sequence id outside the context's sequences, or one without fresh logits.
    #[error("sequence {seq}: {problem}")]
    BadSequence {
        /// The sequence.
        seq: usize,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// The context cannot take another token for this sequence.
    #[error("the context is full ({n_ctx} tokens)")]
    ContextFull {
        /// Context size in tokens.
        n_ctx: usize,
    },
    /// llama.cpp's decode failed for another reason.
    #[error("llama.cpp decode failed: {0}")]
    Decode(String),
    /// Bad sampling parameters.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// Sampling failed (bad logits, every candidate banned, ...).
    #[error(transparent)]
    Sample(#[from] SampleError),
    /// The output constraint (grammar, JSON schema) could not be built.
    #[error(transparent)]
    Constraint(#[from] crate::constraint::ConstraintError),
    /// No token both the sampler chain and the grammar allow (e.g. every allowed token banned).
    #[error("constrained generation stuck: {0}")]
    GrammarDeadEnd(String),
    /// The chat template failed to render.
    #[error("chat template: {0}")]
    Template(String),
    /// The download step (pip) failed.
    #[error("could not download model `{name}`: {detail}")]
    Download {
        /// Catalog name.
        name: String,
        /// What went wrong, with pip's last lines.
        detail: String,
    },
    /// The downloaded or assembled file failed verification; it was discarded.
    #[error("model `{name}` failed verification and was discarded: {detail}")]
    Corrupt {
        /// Catalog name.
        name: String,
        /// Which check failed.
        detail: String,
    },
    /// A file-system error, with what was being done.
    #[error("{what}: {source}")]
    Io {
        /// What was being done ("creating /x/y").
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl RuntimeError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        RuntimeError::Io { what: what.into(), source }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;
