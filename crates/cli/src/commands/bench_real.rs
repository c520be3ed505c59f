//! Real logits for `nucleus bench --real`: rows recorded from a model while it generates
//! ordinary text at bench time (a chat answer and a prose continuation), so the sampler chains
//! are measured on the distributions users actually have. Nothing is stored on disk.

use std::path::Path;

use nucleus_runtime::{
    chat_prompt_tokens, locate, models_dir, prompt_tokens, ChatMessage, ChatTemplate, Context, ContextOptions,
    LlamaCppModel, Model, ModelRef, Pip, Prompt,
};
use nucleus_sampler::{SamplingParams, TokenSampler};

/// The chat question whose answer is recorded.
const CHAT: &str =
    "Explain in a few paragraphs how a bicycle stays upright while moving, and why it falls over when it stops.";

/// The prose whose continuation is recorded.
const PROSE: &str =
    "The lighthouse keeper had lived alone on the island for eleven years. Every evening he climbed the \
                     ninety-two steps to the lamp room, wiped the salt from the glass, and";

/// Logits rows of one model: `positions` rows of the chat answer, then `positions` of the prose.
pub struct Recorded {
    /// What was loaded (the catalog name or path given).
    pub model: String,
    /// The model's vocabulary size (every row's length).
    pub n_vocab: usize,
    /// The rows, in generation order.
    pub rows: Vec<Vec<f32>>,
}

/// Loads `spec` (catalog name or .gguf path, pulled like `nucleus pull` would find it) and
/// records `positions` logits rows of a chat answer and of a prose continuation, sampling with
/// the default chain (seed 1) on one thread.
pub fn record(spec: &str, positions: usize) -> Result<Recorded, String> {
    let model_ref = ModelRef::parse(spec).map_err(|e| e.to_string())?;
    let (path, _) = locate(&model_ref, &models_dir(), &Pip::default(), &mut |_| {}).map_err(|e| e.to_string())?;
    let model = LlamaCppModel::load(Path::new(&path)).map_err(|e| format!("{spec}: {e}"))?;
    let chat = chat_prompt_tokens(&model, &ChatTemplate::for_model(&model), &[ChatMessage::user(CHAT)], None)
        .map_err(|e| format!("{spec}: chat prompt: {e}"))?;
    let prose = prompt_tokens(&model, &Prompt::Text(PROSE.into())).map_err(|e| format!("{spec}: prose prompt: {e}"))?;
    let opts = ContextOptions { n_ctx: Some(1024), threads: Some(1), ..Default::default() };
    let mut ctx = model.new_context(&opts).map_err(|e| format!("{spec}: {e}"))?;
    let mut rows = Vec::with_capacity(2 * positions);
    for prompt in [&chat, &prose] {
        generate_rows(&model, ctx.as_mut(), prompt, positions, &mut rows).map_err(|e| format!("{spec}: {e}"))?;
    }
    if let Ok(dir) = std::env::var("NUCLEUS_BENCH_DUMP_ROWS") {
        // Diagnostics: the rows as raw little-endian f32, for profiling outside the bench.
        let bytes: Vec<u8> = rows.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
        let file = Path::new(&dir).join(format!("{}.f32", model.n_vocab()));
        std::fs::write(&file, bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(Recorded { model: spec.to_string(), n_vocab: model.n_vocab(), rows })
}

/// Prefills `prompt` in sequence 0 and generates `positions` tokens, pushing each step's logits.
/// End-of-generation tokens are not fed back (the answer would end); the next-best token is, so
/// every position is ordinary text.
fn generate_rows(
    model: &LlamaCppModel,
    ctx: &mut dyn Context,
    prompt: &[i32],
    positions: usize,
    rows: &mut Vec<Vec<f32>>,
) -> Result<(), String> {
    let params = SamplingParams { seed: 1, ..Default::default() };
    let mut sampler = TokenSampler::new(params.build(model.n_vocab(), None).map_err(|e| e.to_string())?);
    ctx.clear(0);
    for chunk in prompt.chunks(ctx.n_batch().max(1)) {
        ctx.prefill(0, chunk).map_err(|e| e.to_string())?;
    }
    let eog: Vec<i32> = {
        let s = model.tokenizer().special().clone();
        [s.eos, s.eot].into_iter().flatten().collect()
    };
    for _ in 0..positions {
        let logits = ctx.logits(0).map_err(|e| e.to_string())?.to_vec();
        let mut tok = sampler.apply(logits.as_slice()).map_err(|e| e.to_string())?;
        if eog.contains(&tok) {
            tok = best_other(&logits, &eog);
        }
        sampler.accept(tok);
        rows.push(logits);
        ctx.decode(&[(0, tok)]).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The highest-logit token that is not in `skip`.
fn best_other(logits: &[f32], skip: &[i32]) -> i32 {
    let mut best = (f32::NEG_INFINITY, 0i32);
    for (i, &l) in logits.iter().enumerate() {
        if l > best.0 && !skip.contains(&(i as i32)) {
            best = (l, i as i32);
        }
    }
    best.1
}
