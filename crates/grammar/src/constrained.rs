//! Sampling under a grammar with llama.cpp's two flows: *check first* (run the chain on the
//! raw logits, keep the token if the grammar allows it, otherwise mask and run the chain again
//! — llama.cpp's default, cheap when the model already follows the grammar) and *grammar
//! first* (mask, then run the chain). Both only ever return allowed tokens.

use nucleus_sampler::{SampleError, Sampler, Token, TokenSampler};

use crate::sampler::GrammarSampler;

/// Which flow [`sample_constrained`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Sample unconstrained, check the token, and only on rejection mask and resample.
    CheckFirst,
    /// Mask every step, then sample.
    GrammarFirst,
}

/// Samples one token allowed by `grammar` and accepts it into both the chain and the grammar.
pub fn sample_constrained(
    chain: &mut TokenSampler,
    grammar: &mut GrammarSampler,
    logits: &[f32],
    flow: Flow,
) -> Result<Token, SampleError> {
    let tok = match flow {
        Flow::CheckFirst => {
            let t = chain.apply(logits)?;
            if grammar.is_allowed(t) {
                t
            } else {
                chain.apply_steered(logits, |c| grammar.apply(c))?
            }
        }
        Flow::GrammarFirst => chain.apply_steered(logits, |c| grammar.apply(c))?,
    };
    chain.accept(tok);
    grammar.accept(tok);
    Ok(tok)
}
