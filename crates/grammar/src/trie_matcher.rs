//! [`TrieMatcher`]: one path of a token-trie descriptor as the Python and Node packages expose
//! it (`TokenTrie`): the path chosen (or the only one), the vocabulary bound implied when none
//! is given, all-or-nothing advances and the packed bitmask. It keeps the descriptor, path and
//! mode so a model can build its own constraint from them.

use std::sync::Arc;

use nucleus_sampler::Token;
use serde_json::Value;

use crate::bitmask;
use crate::continuations::{ContinuationSet, Mode, TrieConstraint};
use crate::error::{BitmaskSizeError, DescriptorError};

/// A position in one path's trie, with what it was built from.
#[derive(Debug, Clone)]
pub struct TrieMatcher {
    n_vocab: usize,
    constraint: TrieConstraint,
    descriptor: Arc<Value>,
    path: String,
    mode: Mode,
}

/// One past the largest token id `descriptor` lists (1 if it lists none): the vocabulary size a
/// trie assumes when none is given. Malformed parts are skipped here and reported by the
/// descriptor parser.
fn implied_n_vocab(descriptor: &Value) -> usize {
    let ids = descriptor["descriptors"].as_array().into_iter().flatten().flat_map(|d| {
        d["leaves"].as_array().into_iter().flatten().flat_map(|l| l["tokens"].as_array().into_iter().flatten())
    });
    let max = ids.filter_map(Value::as_u64).filter(|&t| t <= i32::MAX as u64).max();
    max.map_or(1, |m| m as usize + 1)
}

impl Mode {
    /// `"greedy"` or `"sampled"`, the names the bindings take.
    pub fn from_name(name: &str) -> Result<Mode, String> {
        match name {
            "sampled" => Ok(Mode::Sampled),
            "greedy" => Ok(Mode::Greedy),
            other => Err(format!("mode must be \"greedy\" or \"sampled\", not {other:?}")),
        }
    }

    /// The name [`Mode::from_name`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Greedy => "greedy",
            Mode::Sampled => "sampled",
        }
    }
}

impl TrieMatcher {
    /// Parses `descriptor` and positions a constraint at the start of `path` (default: the
    /// descriptor's only path; with several, an error lists them). Token ids must be below
    /// `n_vocab` (default: one past the largest id the descriptor lists). The descriptor's
    /// `modelId` must be `model_id` when one is given.
    pub fn new(
        descriptor: &Value,
        path: Option<&str>,
        mode: Mode,
        n_vocab: Option<usize>,
        model_id: Option<&str>,
    ) -> Result<Self, DescriptorError> {
        let id = match model_id {
            Some(m) => m,
            None => descriptor.get("modelId").and_then(Value::as_str).unwrap_or_default(),
        };
        let n_vocab = n_vocab.unwrap_or_else(|| implied_n_vocab(descriptor));
        let set = ContinuationSet::from_descriptor(descriptor, id, n_vocab)?;
        let path = match path {
            Some(p) => p.to_string(),
            None => {
                let mut paths = set.paths();
                paths.sort_unstable();
                match paths.as_slice() {
                    [only] => only.to_string(),
                    many => {
                        return Err(DescriptorError(format!(
                            "the descriptor has {} paths ({}): say which one with `path`",
                            many.len(),
                            many.join(", ")
                        )))
                    }
                }
            }
        };
        let constraint = set.constraint(&path, mode)?;
        Ok(TrieMatcher { n_vocab, constraint, descriptor: Arc::new(descriptor.clone()), path, mode })
    }

    /// The descriptor it was built from.
    pub fn descriptor(&self) -> &Value {
        &self.descriptor
    }

    /// The descriptor path this trie walks.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How a generation picks among the allowed tokens.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Vocabulary size.
    pub fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// Tokens allowed next (empty once nothing can follow).
    pub fn allowed(&self) -> Vec<Token> {
        self.constraint.allowed().collect()
    }

    /// Tokens forced from here (one continuation and no leaf on the way); does not advance.
    pub fn forced(&self) -> Vec<Token> {
        self.constraint.forced()
    }

    /// Advances by `tokens`, or says which one continues no leaf (then nothing changed).
    pub fn advance(&mut self, tokens: &[Token]) -> Result<(), DescriptorError> {
        let mut next = self.constraint.clone();
        next.advance_all(tokens)?;
        self.constraint = next;
        Ok(())
    }

    /// The leaf name if the tokens so far spell a complete leaf.
    pub fn complete(&self) -> Option<&str> {
        self.constraint.complete()
    }

    /// Whether nothing more can follow.
    pub fn is_finished(&self) -> bool {
        self.constraint.is_finished()
    }

    /// Back to the start of the path.
    pub fn reset(&mut self) {
        nucleus_sampler::Sampler::reset(&mut self.constraint);
    }

    /// The allowed tokens as one packed bitmask row ([`crate::bitmask`]; every token once the
    /// path is finished: the constrained span is over).
    pub fn fill_bitmask(&self, out: &mut [u32]) -> Result<(), BitmaskSizeError> {
        if self.constraint.is_finished() {
            return bitmask::fill_all(self.n_vocab, out);
        }
        bitmask::fill_ids(self.n_vocab, self.constraint.allowed(), out)
    }
}
