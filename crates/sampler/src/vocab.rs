//! What samplers need to know about a model's vocabulary (DRY string breakers, infill).
//!
//! The sampler crate has no tokenizer of its own; the runtime implements this trait with the
//! model's tokenizer, and tests implement it with a toy vocabulary.

use crate::candidates::Token;

/// A model vocabulary as seen by samplers.
pub trait Vocab: Send + Sync {
    /// Number of token ids.
    fn n_vocab(&self) -> usize;

    /// Writes the text of `token` detokenized alone (special tokens rendered) into `out`
    /// (cleared first).
    fn token_piece(&self, token: Token, out: &mut Vec<u8>);

    /// Tokenizes `text` with no BOS and no special-token parsing.
    fn tokenize(&self, text: &[u8]) -> Vec<Token>;

    /// True for end-of-generation tokens (EOS, EOT, ...).
    fn is_eog(&self, token: Token) -> bool;

    /// The end-of-text token, if the model has one.
    fn eot(&self) -> Option<Token>;

    /// The end-of-sequence token, if the model has one.
    fn eos(&self) -> Option<Token>;

    /// True for control tokens (rendered as empty text when special tokens are hidden, as
    /// infill reads them). Defaults to false.
    fn is_control(&self, _token: Token) -> bool {
        false
    }
}
