//! The grammars llama.cpp ships (`grammars/*.gbnf`), written here from their descriptions:
//! generic JSON, a JSON array, a bulleted list, arithmetic, a C subset, chess moves, English
//! text and Japanese text.

use std::sync::Arc;

use crate::error::BuildError;
use crate::grammar::Grammar;

/// `(name, GBNF text)` of every built-in grammar.
pub const BUILTINS: &[(&str, &str)] = &[
    ("json", include_str!("json.gbnf")),
    ("json_arr", include_str!("json_arr.gbnf")),
    ("list", include_str!("list.gbnf")),
    ("arithmetic", include_str!("arithmetic.gbnf")),
    ("c", include_str!("c.gbnf")),
    ("chess", include_str!("chess.gbnf")),
    ("english", include_str!("english.gbnf")),
    ("japanese", include_str!("japanese.gbnf")),
];

/// The GBNF text of built-in grammar `name`.
pub fn text(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The built-in grammar `name`, built.
pub fn grammar(name: &str) -> Option<Result<Arc<Grammar>, BuildError>> {
    text(name).map(|t| Grammar::parse(t, "root"))
}
