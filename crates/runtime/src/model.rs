//! The backend boundary: what the generation loop needs from a model, and nothing more.
//!
//! [`Model`] is the loaded weights and vocabulary (shared, read-only); [`Context`] is the mutable
//! inference state (KV cache) for one or more sequences. llama.cpp is the only backend today
//! ([`crate::llama`]); another can be added by implementing these traits, without touching the
//! sampler, the generation loop or the server.

use std::sync::Arc;

use nucleus_grammar::VocabIndex;
use nucleus_sampler::{Token, Vocab};

use crate::error::Result;

/// Index of a sequence inside a [`Context`] (`0..n_seq_max`).
pub type SeqId = usize;

/// The special tokens a generation loop cares about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpecialTokens {
    /// Beginning of sequence, if the model has one.
    pub bos: Option<Token>,
    /// End of sequence, if the model has one.
    pub eos: Option<Token>,
    /// End of turn, if the model has one.
    pub eot: Option<Token>,
    /// Whether tokenizing a prompt adds BOS in front.
    pub add_bos: bool,
    /// The text of BOS (for chat templates), empty if none.
    pub bos_text: String,
    /// The text of EOS (for chat templates), empty if none.
    pub eos_text: String,
}

/// A model's tokenizer and detokenizer. Extends the sampler's [`Vocab`] (DRY breakers,
/// ignore-eos) with what prompts and streaming output need.
pub trait Tokenizer: Vocab {
    /// Tokenizes `text`. With `add_special` the model's automatic tokens are added (BOS, for
    /// models that want it); with `parse_special` special-token text (`<|im_start|>`) becomes
    /// the special token instead of plain text.
    fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Result<Vec<Token>>;

    /// Appends the bytes of `token` to `out` (not cleared). Control tokens render as their text
    /// only if `render_special`; otherwise as nothing. A token may be part of a UTF-8 character.
    fn append_piece(&self, token: Token, render_special: bool, out: &mut Vec<u8>);

    /// The special tokens.
    fn special(&self) -> &SpecialTokens;
}

/// Options for a new [`Context`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextOptions {
    /// Context size in tokens, shared by all sequences; `None`: the smaller of 4096 and the
    /// model's training context.
    pub n_ctx: Option<usize>,
    /// Most tokens decoded in one call (prompt chunk size).
    pub n_batch: usize,
    /// Number of sequences decoded side by side.
    pub n_seq_max: usize,
    /// CPU threads; `None`: [`crate::threads::default_threads`].
    pub threads: Option<usize>,
    /// One KV cache shared by all sequences (`true`), or one stream of `n_ctx / n_seq_max`
    /// cells per sequence (`false`, llama-server's slots): then a sequence's logits never
    /// depend on the other sequences, however they come and go.
    pub kv_unified: bool,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions { n_ctx: None, n_batch: 512, n_seq_max: 1, threads: None, kv_unified: true }
    }
}

/// Default context size when none is asked for (llama.cpp's default).
pub const DEFAULT_N_CTX: usize = 4096;

/// Loaded weights and vocabulary. Shared between contexts and threads.
pub trait Model: Send + Sync {
    /// The tokenizer.
    fn tokenizer(&self) -> Arc<dyn Tokenizer>;

    /// The same tokenizer as the sampler's [`Vocab`] (for `SamplingParams::build`).
    fn vocab(&self) -> Arc<dyn Vocab>;

    /// Vocabulary size (length of a logits row).
    fn n_vocab(&self) -> usize;

    /// The context length the model was trained with.
    fn n_ctx_train(&self) -> usize;

    /// Architecture name from the file (`llama`, `gemma3`, ...).
    fn architecture(&self) -> &str;

    /// The model's own Jinja chat template, if the file has one.
    fn chat_template(&self) -> Option<&str>;

    /// A new inference context.
    fn new_context(&self, opts: &ContextOptions) -> Result<Box<dyn Context>>;

    /// The vocabulary index grammar constraints walk. Building it reads every token, so a
    /// backend should build it once and share it (the default builds a fresh one each call).
    fn grammar_vocab(&self) -> Arc<VocabIndex> {
        Arc::new(crate::constraint::build_vocab_index(self.tokenizer().as_ref()))
    }

    /// The model's cache of compiled grammars, if it keeps one (the default keeps none).
    fn grammar_cache(&self) -> Option<&crate::constraint::GrammarCache> {
        None
    }

    /// Whether a token's logits and KV are the same bits however the tokens were batched (in
    /// one prefill, in any chunks, one per decode call, next to other sequences). Only then may
    /// a cached prefix — prompt or generated tokens — stand in for a fresh prefill without
    /// changing an answer. The default promises nothing.
    fn batch_invariant(&self) -> bool {
        false
    }
}

/// Mutable inference state: a KV cache holding up to [`Context::n_seq_max`] sequences.
///
/// Logits are those of the last [`Context::prefill`] or [`Context::decode`] call, one row per
/// sequence that call advanced.
pub trait Context: Send {
    /// Context size in tokens (all sequences together).
    fn n_ctx(&self) -> usize;

    /// Number of sequences.
    fn n_seq_max(&self) -> usize;

    /// Most tokens one sequence can hold: [`Context::n_ctx`] with a unified cache, its share
    /// of it with one stream per sequence.
    fn n_ctx_seq(&self) -> usize {
        self.n_ctx()
    }

    /// Most tokens one prefill call decodes at once; longer prompts are split.
    fn n_batch(&self) -> usize;

    /// Tokens held for `seq`.
    fn seq_len(&self, seq: SeqId) -> usize;

    /// Forgets `seq`'s tokens.
    fn clear(&mut self, seq: SeqId);

    /// Keeps `seq`'s first `len` tokens and forgets the rest (prompt caching: a new prompt
    /// sharing that prefix continues from there). The default can only forget everything.
    fn truncate(&mut self, seq: SeqId, len: usize) -> Result<()> {
        if len == 0 {
            self.clear(seq);
            Ok(())
        } else {
            Err(crate::error::RuntimeError::BadSequence { seq, problem: "this backend cannot keep part of a sequence" })
        }
    }

    /// Appends `tokens` to `seq` (in chunks of [`Context::n_batch`]) and computes the logits of
    /// the last one.
    fn prefill(&mut self, seq: SeqId, tokens: &[Token]) -> Result<()>;

    /// Appends one token to each of several distinct sequences in a single forward pass and
    /// computes each one's next-token logits.
    fn decode(&mut self, steps: &[(SeqId, Token)]) -> Result<()>;

    /// Appends several tokens to each of several distinct sequences in a single forward pass,
    /// computing the logits after every one of them ([`Context::logits_at`]); a run of one token
    /// is a [`Context::decode`] step. All the runs together must fit in [`Context::n_batch`].
    /// Used to decode a constraint's forced tokens at once: for a batch-invariant model each
    /// row is the same bits as decoding the tokens one per call. The default takes only runs of
    /// one token.
    fn decode_runs(&mut self, runs: &[(SeqId, &[Token])]) -> Result<()> {
        let mut steps = Vec::with_capacity(runs.len());
        for &(seq, run) in runs {
            match run {
                [t] => steps.push((seq, *t)),
                _ => {
                    return Err(crate::error::RuntimeError::BadSequence {
                        seq,
                        problem: "this backend decodes one token per sequence and call",
                    })
                }
            }
        }
        self.decode(&steps)
    }

    /// `seq`'s next-token logits from the last call, if that call advanced `seq`.
    fn logits(&self, seq: SeqId) -> Result<&[f32]>;

    /// The logits after the `i`-th token the last call appended to `seq` (a run of
    /// [`Context::decode_runs`]; `i` = 0 for a one-token step). The default knows only the last.
    fn logits_at(&self, seq: SeqId, i: usize) -> Result<&[f32]> {
        if i == 0 {
            self.logits(seq)
        } else {
            Err(crate::error::RuntimeError::BadSequence { seq, problem: "has no logits for that token" })
        }
    }

    /// A copy of what the KV cache holds for `seq` (its first [`Context::seq_len`] positions),
    /// to be put back later with [`Context::restore`], into any sequence of a context made
    /// with the same options. The copy is the very bits of the cache, so a restored sequence
    /// continues exactly as the original would. The default cannot copy.
    fn save(&self, seq: SeqId) -> Result<SavedSequence> {
        Err(crate::error::RuntimeError::BadSequence { seq, problem: "this backend cannot copy a sequence" })
    }

    /// Replaces whatever `seq` holds with a copy made by [`Context::save`]. On error `seq` is
    /// left empty. The default cannot restore.
    fn restore(&mut self, seq: SeqId, saved: &SavedSequence) -> Result<()> {
        let _ = saved;
        self.clear(seq);
        Err(crate::error::RuntimeError::BadSequence { seq, problem: "this backend cannot restore a sequence" })
    }
}

/// A sequence's KV cache copied out of a context ([`Context::save`]): opaque bytes that only
/// the backend that made them reads back.
pub struct SavedSequence {
    /// Positions held.
    pub(crate) len: usize,
    /// Size of the copy in bytes.
    pub(crate) bytes: usize,
    /// The backend's own state object (read only by a backend: none without `llama`).
    #[cfg_attr(not(feature = "llama"), allow(dead_code))]
    pub(crate) state: Box<dyn std::any::Any + Send + Sync>,
}

impl SavedSequence {
    /// Tokens (positions) the copy holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the copy holds no tokens.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Memory the copy takes, in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl std::fmt::Debug for SavedSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedSequence").field("len", &self.len).field("bytes", &self.bytes).finish()
    }
}
