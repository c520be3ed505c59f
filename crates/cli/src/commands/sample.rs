//! `nucleus sample`: sample from a logits file with llama.cpp's chain, for scripting and tests.

use std::path::PathBuf;

use clap::Args;
use nucleus_sampler::probs::top_n_post;
use nucleus_sampler::{Candidates, Sampler, Token};
use serde_json::json;

use crate::logits_file::read_logits;
use crate::sampling_args::SamplingArgs;

/// Arguments of `nucleus sample`.
#[derive(Args, Debug)]
pub struct SampleArgs {
    /// Logits file: JSON array, {"logits": [...]}, or raw little-endian .f32
    #[arg(long)]
    pub logits: PathBuf,
    /// Number of draws from the same logits (each accepts its token, like a generation step)
    #[arg(long, default_value_t = 1)]
    pub draws: usize,
    /// Tokens accepted into the chain before the first draw, comma-separated
    #[arg(long, value_delimiter = ',')]
    pub history: Vec<Token>,
    /// Also print the top K post-chain candidates of the last draw
    #[arg(long)]
    pub n_probs: Option<usize>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// Runs the command, printing one JSON object on stdout.
pub fn run(args: &SampleArgs) -> Result<(), String> {
    let logits = read_logits(&args.logits)?;
    let n_vocab = logits.len();
    if n_vocab == 0 {
        return Err("the logits file has no entries (empty vocabulary)".into());
    }
    let params = args.sampling.to_params(false)?;
    let mut chain = params.build(n_vocab, None).map_err(|e| e.to_string())?;
    nucleus_sampler::logits::check_logits(logits.as_slice().into()).map_err(|e| e.to_string())?;
    for &t in &args.history {
        if t < 0 || t as usize >= n_vocab {
            return Err(format!("--history token {t} is outside the vocabulary (0..{n_vocab})"));
        }
        chain.accept(t);
    }
    let mut cands = Candidates::with_capacity(n_vocab);
    let mut tokens = Vec::with_capacity(args.draws);
    for _ in 0..args.draws {
        cands.fill_f32(&logits);
        chain.apply(&mut cands);
        let sel = cands.selected_token().ok_or("the sampler chain selected no token")?;
        if sel.logit == f32::NEG_INFINITY {
            return Err("no candidate left: every logit is -inf after the sampler chain".into());
        }
        chain.accept(sel.id);
        tokens.push(sel.id);
    }
    let mut out = json!({ "tokens": tokens });
    if let Some(k) = args.n_probs {
        let mut top = Vec::new();
        top_n_post(&cands, k, &mut top);
        out["probs"] = top.iter().map(|t| json!({"id": t.id, "p": t.p})).collect();
    }
    println!("{out}");
    Ok(())
}
