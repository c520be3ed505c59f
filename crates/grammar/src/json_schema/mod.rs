//! JSON Schema to GBNF.
//!
//! * Compat mode ([`SchemaOptions::llama_cpp`]) reproduces llama.cpp's converter output text
//!   exactly, including what it silently ignores.
//! * Strict mode (the default) uses the same construction but refuses any keyword it cannot
//!   enforce (naming the keyword and its JSON pointer), follows JSON Schema where llama.cpp
//!   deviates (`additionalProperties` defaults to allowed, `{}` is any value), and compiles
//!   `pattern`, dates and string escapes exactly, so every output validates. Beyond llama.cpp
//!   it enforces: `oneOf` by proving alternatives exclusive or narrowing them until they are
//!   (`one_of`; one narrowing may drop rare valid instances, never admit invalid ones),
//!   absorbing `anyOf` alternatives (`any_of`), `patternProperties` and
//!   `propertyNames` through string automata (`key_space`, `automaton`), `not` and
//!   `pattern` with lengths on strings (`strings`), `dependencies`/`dependentRequired`/
//!   `dependentSchemas` as presence cases (`dependencies`), `minProperties`/`maxProperties`
//!   by counting (`counting`), decimal `multipleOf` (`multiple_of`), `enum` next to other
//!   assertions by checking each value (`enum_filter`), `allOf` by merging, the `ipv6`
//!   and `duration` formats, and enforced formats beside `pattern`/lengths/`not` as automata (`formats`); numeric bounds of any sign and scale and `multipleOf` steps as digit automata
//!   (`numeric_range`); open-ended tuples and `uniqueItems` over small finite item sets
//!   (`arrays`). Keywords constrain only their own type: a schema without `type` admits every
//!   other type (the typed view in `ir` sorts each keyword into its type's group). Object keys
//!   and string constants are written in canonical JSON text (one spelling per key, escapes
//!   included), and the output is compacted (`compact`: equal rules merged, short names).
//! * Each schema object is read once into typed keywords (`model::Keywords`) and converted by
//!   the one construction its keywords select (`model::Form`).

mod any_of;
mod arrays;
mod automaton;
mod bounds;
mod compact;
mod converter;
mod counting;
mod dependencies;
mod enum_filter;
mod formats;
mod frag;
mod int_range;
mod ir;
mod key_space;
mod keywords;
mod model;
mod multiple_of;
mod numeric_range;
mod objects;
mod one_of;
mod pattern_llama;
mod pattern_strict;
mod primitives;
pub mod relayout;
mod shape;
mod strings;
#[cfg(test)]
mod test_util;

use std::sync::Arc;

use serde_json::Value;

pub use converter::Converter;

use crate::error::SchemaError;
use crate::grammar::Grammar;
use crate::rules::{Expr, RuleSet, Seq};
use frag::Frag;

/// How to convert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaOptions {
    /// Refuse what cannot be enforced and follow JSON Schema semantics (true), or reproduce
    /// llama.cpp's converter byte for byte (false).
    pub strict: bool,
    /// In strict mode, whether objects without `additionalProperties` are closed
    /// (llama.cpp's behaviour, and OpenAI's structured outputs) instead of open (JSON Schema).
    pub closed_objects: bool,
    /// In strict mode, ignore unsupported keywords instead of failing; each is reported in
    /// [`CompiledSchema::ignored`].
    pub lenient: bool,
}

impl Default for SchemaOptions {
    fn default() -> Self {
        SchemaOptions { strict: true, closed_objects: false, lenient: false }
    }
}

impl SchemaOptions {
    /// llama.cpp's converter, output for output.
    pub fn llama_cpp() -> Self {
        SchemaOptions { strict: false, closed_objects: true, lenient: false }
    }
}

/// A converted schema.
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    /// The GBNF text (start rule `root`; compat mode: llama.cpp's rules sorted by name),
    /// printed from [`CompiledSchema::rules`] for people.
    pub gbnf: String,
    /// Keywords ignored (compat mode, or strict lenient mode), as `keyword at pointer`.
    pub ignored: Vec<String>,
    /// The order each object rule writes its named members in: documents are laid out in it
    /// to check them against the grammar (`relayout::feed_json_in`).
    pub member_orders: relayout::MemberOrders,
    /// The rules the grammar is built from (`None` only if the converter wrote a rule body
    /// the GBNF parser refuses: the grammar is then built from the text, to report why).
    pub rules: Option<RuleSet>,
}

impl CompiledSchema {
    /// Builds the grammar (from the rules, without the text).
    pub fn grammar(&self) -> Result<Arc<Grammar>, SchemaError> {
        let built = match &self.rules {
            Some(set) => Grammar::from_rules(set, "root"),
            None => Grammar::parse(&self.gbnf, "root"),
        };
        built.map_err(|e| SchemaError {
            keyword: "(grammar)".into(),
            pointer: "#".into(),
            reason: format!("generated grammar does not build: {e}"),
        })
    }
}

/// Converts `schema` to GBNF.
pub fn schema_to_gbnf(schema: &Value, opts: &SchemaOptions) -> Result<CompiledSchema, SchemaError> {
    let mut c = Converter::new(schema, opts.clone());
    c.visit(schema, "", "")?;
    let rules = c.take_rule_set();
    // Strict mode's rules are compacted (same language, shorter rule names, equal rules
    // merged); compat mode keeps llama.cpp's rules.
    let rules = match (opts.strict, rules) {
        (true, Some(set)) => Some(compact::compact(&set).unwrap_or(set)),
        (_, rules) => rules,
    };
    let gbnf = match &rules {
        Some(set) => set.to_gbnf(),
        None => c.format_grammar(),
    };
    Ok(CompiledSchema { gbnf, ignored: c.ignored, member_orders: c.member_orders, rules })
}

/// Converts and builds in one step.
pub fn schema_to_grammar(schema: &Value, opts: &SchemaOptions) -> Result<Arc<Grammar>, SchemaError> {
    schema_to_gbnf(schema, opts)?.grammar()
}

/// `item{min,max}` with an optional separator between items, written as llama.cpp writes it.
pub(crate) fn repetition(item: &str, min: usize, max: Option<usize>, sep: Option<&str>) -> String {
    if max == Some(0) {
        return String::new();
    }
    if min == 0 && max == Some(1) {
        return format!("{item}?");
    }
    let Some(sep) = sep else {
        return match (min, max) {
            (1, None) => format!("{item}+"),
            (0, None) => format!("{item}*"),
            (m, None) => format!("{item}{{{m},}}"),
            (m, Some(n)) => format!("{item}{{{m},{n}}}"),
        };
    };
    let result =
        format!("{item} {}", repetition(&format!("({sep} {item})"), min.saturating_sub(1), max.map(|m| m - 1), None));
    if min == 0 {
        format!("({result})?")
    } else {
        result
    }
}

/// [`repetition`] built as rule IR (`item` and `sep` as items), printing as that text prints,
/// stray spaces included (at most one item with a separator leaves one). Counts past the
/// GBNF limit are kept as they are: the converter stores a body the parser would refuse as
/// text, to report it (`Converter::add_rule_ir`).
fn repetition_frag(item: Expr, min: usize, max: Option<usize>, sep: Option<&[Expr]>) -> Frag {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    if max == Some(0) {
        return Frag::new();
    }
    if min == 0 && max == Some(1) {
        return Frag::from(Expr::repeat(item, 0, Some(1)));
    }
    let Some(sep) = sep else {
        return Frag::from(Expr::repeat(item, count(min), max.map(count)));
    };
    let mut unit = sep.to_vec();
    unit.push(item.clone());
    let rest = repetition_frag(Expr::Group(vec![Seq::new(unit)]), min.saturating_sub(1), max.map(|m| m - 1), None);
    let result = Frag::from(item).then(rest);
    if min == 0 {
        Frag::from(Expr::repeat(Frag::group(vec![result]), 0, Some(1)))
    } else {
        result
    }
}

/// Whether `schema` can produce a JSON string (llama.cpp's helper for tool-call arguments):
/// some `anyOf`/`oneOf` branch can, every `allOf` part can, `$ref`s are followed.
pub fn resolves_to_string(schema: &Value) -> bool {
    fn go(root: &Value, s: &Value, depth: usize) -> bool {
        if depth > 32 {
            return false;
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let mut cur = root;
            for tok in r.trim_start_matches('#').split('/').skip(1) {
                match cur.get(tok.replace("~1", "/").replace("~0", "~")) {
                    Some(n) => cur = n,
                    None => return false,
                }
            }
            return go(root, cur, depth + 1);
        }
        if let Some(Value::Array(a)) = s.get("anyOf").or_else(|| s.get("oneOf")) {
            return a.iter().any(|x| go(root, x, depth + 1));
        }
        if let Some(Value::Array(a)) = s.get("allOf") {
            return a.iter().all(|x| go(root, x, depth + 1));
        }
        if let Some(c) = s.get("const") {
            return c.is_string();
        }
        if let Some(Value::Array(e)) = s.get("enum") {
            return e.iter().any(Value::is_string);
        }
        match s.get("type") {
            Some(Value::String(t)) => t == "string",
            Some(Value::Array(a)) => a.iter().any(|t| t == "string"),
            _ => ["minLength", "maxLength", "pattern", "format"].iter().any(|k| s.get(*k).is_some()),
        }
    }
    go(schema, schema, 0)
}
