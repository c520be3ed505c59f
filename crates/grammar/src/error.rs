//! Error types: every failure on user input (grammar text, schema, descriptor, rejected token)
//! is one of these, never a panic.

use thiserror::Error;

/// A GBNF text that does not parse, with the 1-based line and column (in characters) where
/// the parser stopped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("grammar parse error at line {line}, column {column}: {reason}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
    /// What was expected or what is wrong.
    pub reason: String,
}

/// A grammar that parses but cannot be instantiated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BuildError {
    /// The text did not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The start symbol (normally `root`) is not defined.
    #[error("grammar does not define the start rule '{0}'")]
    MissingStart(String),
    /// A rule can reach itself in leftmost position; the stack runtime would loop forever.
    #[error("grammar rule '{0}' is left recursive")]
    LeftRecursion(String),
    /// A chain of leftmost rule references too long to expand safely.
    #[error("grammar rule '{rule}' starts a chain of more than {limit} leftmost rule references")]
    TooDeep {
        /// The rule.
        rule: String,
        /// The limit.
        limit: usize,
    },
    /// The start rule alone expands to more parse stacks than the work budget allows
    /// ([`crate::WORK_LIMIT`]): a grammar too ambiguous to follow (see
    /// [`AcceptError::TooAmbiguous`]).
    #[error(
        "grammar rule '{0}' is too ambiguous: expanding it passes the limit of {limit} units of parse-stack work",
        limit = crate::WORK_LIMIT
    )]
    TooAmbiguous(String),
    /// A `<text>` token item needs a vocabulary, or the text is not exactly one token.
    #[error("token item {0}")]
    Token(String),
    /// A trigger pattern of a lazy grammar is not a valid regular expression.
    #[error("invalid trigger pattern {pattern:?}: {reason}")]
    Trigger {
        /// The pattern as given.
        pattern: String,
        /// The regex engine's complaint.
        reason: String,
    },
}

/// A token or text the grammar cannot accept in its current state. The matcher keeps its
/// state when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AcceptError {
    /// The token's text (or id, for token items) matches no live parse stack.
    #[error("token {token} ({text:?}) is not allowed by the grammar here")]
    Rejected {
        /// The token id.
        token: i32,
        /// Its text, lossily decoded.
        text: String,
    },
    /// An end-of-generation token arrived before the grammar could end.
    #[error("end of generation (token {0}) before the grammar is complete")]
    Incomplete(i32),
    /// Bytes fed as plain text were rejected at this byte offset.
    #[error("input rejected at byte {0}")]
    AtByte(usize),
    /// The grammar is too ambiguous to follow this far: its parse stacks multiplied past the
    /// work budget ([`crate::WORK_LIMIT`]), typically through nested repetitions such as
    /// `x+++` or `((a*)*)*`. The grammar state is unchanged; rewriting the nested repetition
    /// as a single one (`x+`, `a*`) describes the same language without the blow-up.
    #[error(
        "the grammar is too ambiguous to follow here: its parse stacks passed the limit of {limit} \
         units of work (nested repetitions such as `x+++` or `((a*)*)*` multiply them; write a \
         single repetition instead)",
        limit = crate::WORK_LIMIT
    )]
    TooAmbiguous,
    /// A token arrived after an end-of-generation token ended the match
    /// ([`crate::GrammarMatcher`] only; roll back to continue).
    #[error("token {0} arrives after end of generation")]
    Terminated(i32),
}

/// A JSON Schema the converter refuses, naming the keyword and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{keyword} at {pointer}: {reason}")]
pub struct SchemaError {
    /// The offending keyword (`oneOf`, `pattern`, `$ref`, ...).
    pub keyword: String,
    /// JSON pointer to the schema object holding the keyword (`""` is the root, shown as `#`).
    pub pointer: String,
    /// Why it cannot be compiled.
    pub reason: String,
}

/// A token-trie descriptor that is malformed or does not fit the loaded model.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("token-trie descriptor: {0}")]
pub struct DescriptorError(pub String);

/// A vocabulary given as token texts and end-of-generation ids that cannot be indexed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VocabError {
    /// No tokens, or more than token ids (`i32`) can name.
    #[error("a vocabulary needs between 1 and 2^31 - 1 tokens, got {0}")]
    Size(usize),
    /// An end-of-generation id names no token.
    #[error("end-of-generation id {id} is outside the vocabulary [0, {n_vocab})")]
    EogOutside {
        /// The id as given.
        id: i64,
        /// The vocabulary size.
        n_vocab: usize,
    },
}

/// A packed bitmask buffer of the wrong length for its vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the bitmask has {got} words but {n_vocab} tokens need ceil({n_vocab} / 32) = {want}")]
pub struct BitmaskSizeError {
    /// Words given.
    pub got: usize,
    /// Words needed.
    pub want: usize,
    /// The vocabulary size.
    pub n_vocab: usize,
}

/// A rollback of more tokens than were accepted (the matcher is unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("cannot roll back {asked} tokens: only {accepted} were accepted")]
pub struct RollbackError {
    /// Tokens asked to undo.
    pub asked: usize,
    /// Tokens that can be undone.
    pub accepted: usize,
}
