//! The speculative-decoding flags `generate` and `serve` share, with llama.cpp's names
//! (`--spec-type`, `--draft-max`, `--draft-min`, `--spec-ngram-size-n`).

use clap::Args;
use nucleus_runtime::{SpecOptions, SpecType};

/// Speculative decoding flags.
#[derive(Args, Debug, Clone)]
pub struct SpecArgs {
    /// Speculative decoding: `ngram` drafts from the prompt and the output so far, `draft` from
    /// --model-draft, verified exactly (the answer does not change; docs/speculative.md), or
    /// `none` (default: none, or draft when --model-draft is given)
    #[arg(long = "spec-type", value_name = "TYPE", value_parser = ["none", "ngram", "draft"])]
    pub spec_type: Option<String>,
    /// A draft model of the same vocabulary (a known name or a GGUF path) whose greedy
    /// proposals the model verifies
    #[arg(long = "model-draft", visible_alias = "md", value_name = "MODEL")]
    pub model_draft: Option<String>,
    /// Most tokens drafted per forward pass
    #[arg(long = "draft-max", visible_alias = "draft", value_name = "N", default_value_t = SpecOptions::default().draft_max)]
    pub draft_max: usize,
    /// Drafts shorter than this are not used
    #[arg(long = "draft-min", value_name = "N", default_value_t = SpecOptions::default().draft_min)]
    pub draft_min: usize,
    /// Shortest match of the last tokens that may propose an n-gram draft
    #[arg(long = "spec-ngram-size-n", value_name = "N", default_value_t = SpecOptions::default().min_match)]
    pub spec_ngram_size_n: usize,
}

impl SpecArgs {
    /// The kind and the checked options (an error names the flag).
    pub fn to_options(&self) -> Result<(SpecType, SpecOptions), String> {
        let kind: SpecType = match (&self.spec_type, &self.model_draft) {
            (None, None) => SpecType::None,
            (None, Some(_)) => SpecType::Draft,
            (Some(t), _) => t.parse().map_err(|e| format!("--spec-type: {e}"))?,
        };
        match (kind, &self.model_draft) {
            (SpecType::Draft, None) => return Err("--spec-type draft needs --model-draft MODEL".into()),
            (SpecType::Ngram | SpecType::None, Some(_)) => {
                return Err(format!("--model-draft is for --spec-type draft, not --spec-type {kind}"))
            }
            _ => {}
        }
        let opts =
            SpecOptions { draft_max: self.draft_max, draft_min: self.draft_min, min_match: self.spec_ngram_size_n };
        opts.validate().map_err(|e| format!("--{e}"))?;
        Ok((kind, opts))
    }
}
