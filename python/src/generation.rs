//! What the `Model` of both packages shares (the Node crate includes this file): the id a
//! token-trie descriptor names the model by, and the sequence one generation runs — sampling
//! parameters, options and an optional token trie — built as `nucleus generate` builds it, so
//! the packages produce the command's tokens.

use nucleus_runtime::{Model, ModelRef, Sequence, SequenceOptions, TrieConstraint};
use nucleus_sampler::SamplingParams;

/// A token-trie constraint for one model and whether it is greedy
/// ([`Sequence::set_token_trie`]).
pub(crate) type TrieSetting = (TrieConstraint, bool);

/// The `modelId` a token-trie descriptor must carry for the model loaded from `spec`: the
/// catalog name, or the GGUF file's name without `.gguf` (what `nucleus generate --token-trie`
/// expects).
pub(crate) fn model_id(spec: &str, r: &ModelRef) -> String {
    match r {
        ModelRef::Catalog(m) => m.name.to_string(),
        ModelRef::File(p) => p.file_stem().map_or_else(|| spec.to_string(), |s| s.to_string_lossy().into_owned()),
    }
}

/// The sequence of one generation: the sampler chain built against the model, constrained by
/// `trie` when there is one.
pub(crate) fn sequence(
    model: &dyn Model,
    sampling: &SamplingParams,
    opts: SequenceOptions,
    trie: Option<TrieSetting>,
) -> Result<Sequence, String> {
    let mut seq = Sequence::new(model, sampling, opts).map_err(|e| e.to_string())?;
    if let Some((t, greedy)) = trie {
        seq.set_token_trie(t, greedy);
    }
    Ok(seq)
}
