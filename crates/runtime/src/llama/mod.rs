//! The llama.cpp backend (through the `llama-cpp-2` crate): forward passes, tokenizer and chat
//! template. llama.cpp computes logits only; every token is chosen by nucleus-sampler.

mod backend;
mod context;
mod model;
mod tokenizer;

pub use backend::{backend, set_verbose};
pub use context::LlamaCppContext;
pub use model::LlamaCppModel;
pub use tokenizer::LlamaTokenizer;
