//! # nucleus-runtime
//!
//! Runs real GGUF models on the CPU: llama.cpp (through `llama-cpp-2`) computes the logits,
//! nucleus-sampler chooses every token.
//!
//! ```no_run
//! use nucleus_runtime::{generate, prompt_tokens, LlamaCppModel, Model, Prompt, ContextOptions, SequenceOptions};
//! use nucleus_sampler::SamplingParams;
//!
//! let model = LlamaCppModel::load("model.gguf".as_ref())?;
//! let mut ctx = model.new_context(&ContextOptions { threads: Some(1), ..Default::default() })?;
//! let prompt = prompt_tokens(&model, &Prompt::Text("The capital of France is".into()))?;
//! let opts = SequenceOptions { max_tokens: Some(16), ..Default::default() };
//! let stats = generate(&model, ctx.as_mut(), &prompt, &SamplingParams::default(), &opts, None, &mut |ev| {
//!     print!("{}", ev.text);
//!     std::ops::ControlFlow::Continue(())
//! })?;
//! eprintln!("{:.1} tokens/s", stats.generation_tokens_per_sec());
//! # Ok::<(), nucleus_runtime::RuntimeError>(())
//! ```
//!
//! * [`model`]: the backend traits ([`Model`], [`Context`], [`Tokenizer`]); [`llama`] implements them.
//! * [`sequence`]: per-sequence state (sampler, UTF-8, stop strings, limits).
//! * [`engine`]: slots of a context running sequences (chunked prefill, one decode call for
//!   all slots); [`generate()`] is the engine with one slot, the server's scheduler drives many.
//! * [`constraint`]: grammar / JSON Schema / JSON-object constraints for a sequence.
//! * [`chat`] renders chat templates; [`prompt`] turns prompts into tokens.
//! * [`catalog`], [`pull`] and [`resolve`] find, download and verify models by name.

pub mod catalog;
pub mod chat;
pub mod constraint;
pub mod draft_model;
pub mod engine;
pub mod error;
pub mod generate;
#[cfg(feature = "llama")]
pub mod llama;
pub mod model;
pub mod ngram_cache;
pub mod prompt;
pub mod pull;
pub mod reasoning;
pub mod resolve;
mod score;
pub mod sequence;
pub mod spec_request;
pub mod speculative;
pub mod step_report;
pub mod stop;
pub mod threads;
pub mod utf8;

pub use catalog::{CatalogModel, CATALOG, DEFAULT_MODEL};
pub use chat::{ChatMessage, ChatTemplate, ChatToolCall, TemplateSource};
pub use constraint::{
    grammar_sampler, token_trie, token_trie_for, tool_arguments_rules, ConstraintError, OutputConstraint, TrieSetting,
};
pub use draft_model::{check_vocabulary, DraftModel};
pub use engine::{Engine, SlotJob, SlotSink};
pub use error::RuntimeError;
pub use generate::{
    generate, generate_sequence, generate_sequence_drafted, generate_speculating, GenerationStats, PREFILL_CHUNK,
};
#[cfg(feature = "llama")]
pub use llama::{LlamaCppContext, LlamaCppModel};
pub use model::{Context, ContextOptions, Model, SavedSequence, SeqId, SpecialTokens, Tokenizer};
pub use ngram_cache::NgramCache;
pub use nucleus_grammar::continuations::TrieConstraint;
pub use nucleus_grammar::rules::RuleSet;
pub use nucleus_grammar::DescriptorError;
pub use prompt::{chat_prompt_tokens, prompt_tokens, rendered_chat_tokens, Prompt};
pub use pull::{models_dir, Pip, PullEvent};
pub use reasoning::{BlockStyle, ReasoningFormat, ReasoningOptions, Split, SplitKind, ThinkSplitter};
pub use resolve::{locate, ModelRef};
pub use sequence::{Sequence, SequenceOptions, StopReason, TokenEvent};
pub use spec_request::{
    binding_option as spec_binding_option, Available as SpecAvailable, SpecDefaults, SpecFieldError, SpecParts,
    SpecProblem, SpecRequest,
};
pub use speculative::{SpecOptions, SpecStats, SpecType};
pub use step_report::{StepReport, StepSink};
pub use threads::default_threads;
