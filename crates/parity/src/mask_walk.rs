//! Grammar masks walked side by side: nucleus-grammar's [`GrammarSampler`] and llama.cpp's
//! grammar sampler ([`LlamaGrammar`]) along the same token sequence, every mask compared bit
//! for bit. Shared by `nucleus bench --grammar` (which also times both sides) and
//! `tests/grammar_masks.rs` (which requires zero differences in CI).
//!
//! The two sides run in separate passes ([`nucleus_masks`], then [`compare_with_llama`]) so
//! that, when timed, neither evicts the other's caches between steps.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleus_grammar::json_schema::relayout::{feed_json_in, parse_json};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::{GrammarSampler, Matcher, TokenMask, VocabIndex};
use nucleus_runtime::Tokenizer;
use nucleus_sampler::Token;
use serde_json::Value;

use crate::reference_grammar::LlamaGrammar;

/// A grammar and a token sequence it accepts.
#[derive(Clone, Debug)]
pub struct WalkCase {
    /// GBNF text, start rule `root`.
    pub gbnf: String,
    /// The tokens walked.
    pub tokens: Vec<Token>,
}

/// Compiles a JSONSchemaBench-style document's schema (`{"schema": ..., "tests": [...]}`,
/// nucleus's strict converter) and tokenizes its first valid instance as the grammar lays it
/// out (no special tokens).
pub fn schema_case(doc: &Value, tok: &dyn Tokenizer) -> Result<WalkCase, String> {
    let g = schema_to_gbnf(&doc["schema"], &SchemaOptions::default()).map_err(|e| format!("refused: {e}"))?;
    let m = Matcher::from_gbnf(&g.gbnf).map_err(|e| e.to_string())?;
    let inst =
        doc["tests"].as_array().and_then(|t| t.iter().find(|t| t["valid"] == true)).ok_or("no valid instance")?;
    let parsed = parse_json(&inst["data"].to_string())?;
    let verdict = feed_json_in(&m, &parsed, &g.member_orders);
    if !verdict.accepted {
        return Err("the first valid instance is not accepted".into());
    }
    let tokens = tok.encode(&verdict.text, false, false).map_err(|e| e.to_string())?;
    Ok(WalkCase { gbnf: g.gbnf, tokens })
}

/// Every `*.json` file in `dir`, parsed, sorted by file name; (file name, document).
pub fn read_schema_dir(dir: &Path) -> Result<Vec<(String, Value)>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("reading the schema folder {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> =
        rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("reading {}: {e}", f.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        out.push((f.file_name().unwrap_or_default().to_string_lossy().into_owned(), v));
    }
    if out.is_empty() {
        return Err(format!("no .json schema files in {}", dir.display()));
    }
    Ok(out)
}

/// nucleus's masks along a walk, each with the time of its `mask()` call.
#[derive(Debug, Default)]
pub struct NucleusWalk {
    /// The mask before token `i` (and, with `end`, one more after the last token).
    pub masks: Vec<Arc<TokenMask>>,
    /// The time of each `mask()` call.
    pub times: Vec<Duration>,
    /// The step whose token nucleus's own mask refused (the walk stops there), if any.
    pub refused_at: Option<usize>,
}

/// Pass 1: nucleus's mask before each of the first `positions` tokens of `tokens`, advancing
/// `ours` by each token; with `end` (and the whole sequence walked) also the mask after the
/// last token, where the grammar may end. Stops after a mask that refuses its token.
pub fn nucleus_masks(
    ours: &mut GrammarSampler,
    tokens: &[Token],
    positions: usize,
    end: bool,
) -> Result<NucleusWalk, String> {
    let mut walk = NucleusWalk::default();
    for (i, &t) in tokens.iter().take(positions).enumerate() {
        let s = Instant::now();
        let m = ours.mask();
        walk.times.push(s.elapsed());
        let ok = m.contains(t);
        walk.masks.push(m);
        if !ok {
            walk.refused_at = Some(i);
            return Ok(walk);
        }
        ours.try_accept(t).map_err(|e| format!("step {i}: nucleus refused token {t} its mask allowed: {e}"))?;
    }
    if end && positions > tokens.len() {
        let s = Instant::now();
        let m = ours.mask();
        walk.times.push(s.elapsed());
        walk.masks.push(m);
    }
    Ok(walk)
}

/// One mask that differs between the two sides.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The walk's name and step.
    pub at: String,
    /// The step (index of the mask in the walk).
    pub step: usize,
    /// The bytes of the tokens accepted before this step.
    pub text: Vec<u8>,
    /// Tokens only nucleus allows.
    pub only_nucleus: Vec<u32>,
    /// Tokens only llama.cpp allows.
    pub only_llama: Vec<u32>,
    /// One line naming a few tokens of each side.
    pub description: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.description)
    }
}

/// The outcome of comparing one walk with llama.cpp.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Masks compared.
    pub steps: usize,
    /// Masks that differ.
    pub mismatches: Vec<Mismatch>,
    /// The time of each llama.cpp grammar call.
    pub times: Vec<Duration>,
    /// A token llama.cpp refused to advance by although it was in both masks (never expected).
    pub stuck: Option<String>,
}

/// Pass 2: llama.cpp's grammar sampler along the same tokens; before token `i` its mask must
/// equal `masks[i]` (a mask past the last token is compared without advancing). Stops where
/// nucleus's walk stopped (a token its mask refused).
pub fn compare_with_llama(
    reference: &mut LlamaGrammar,
    tokens: &[Token],
    masks: &[Arc<TokenMask>],
    vocab: &VocabIndex,
    name: &str,
) -> Comparison {
    let mut out = Comparison::default();
    let mut fed = Vec::new();
    for (i, m) in masks.iter().enumerate() {
        out.times.push(reference.apply());
        out.steps += 1;
        if **m != *reference.allowed() {
            let theirs = reference.allowed();
            let at =
                format!("{name} step {i} after {:?}", String::from_utf8_lossy(&fed[fed.len().saturating_sub(60)..]));
            out.mismatches.push(Mismatch {
                description: describe_mismatch(&at, m, theirs, vocab),
                at,
                step: i,
                text: fed.clone(),
                only_nucleus: m.ids().into_iter().filter(|&t| !theirs.contains(t as i32)).collect(),
                only_llama: theirs.ids().into_iter().filter(|&t| !m.contains(t as i32)).collect(),
            });
        }
        let Some(&t) = tokens.get(i) else { break };
        if !m.contains(t) {
            break;
        }
        if let Err(e) = reference.accept(t) {
            out.stuck = Some(format!("{name} step {i}: {e}"));
            break;
        }
        fed.extend_from_slice(vocab.piece(t));
    }
    out
}

/// One line naming up to three tokens only nucleus allows and three only llama.cpp allows.
pub fn describe_mismatch(at: &str, ours: &TokenMask, theirs: &TokenMask, v: &VocabIndex) -> String {
    let show = |id: u32| format!("{id} {:?}", String::from_utf8_lossy(v.piece(id as Token)));
    let only_ours: Vec<String> =
        ours.ids().into_iter().filter(|&i| !theirs.contains(i as i32)).take(3).map(show).collect();
    let only_theirs: Vec<String> =
        theirs.ids().into_iter().filter(|&i| !ours.contains(i as i32)).take(3).map(show).collect();
    format!("{at}: only nucleus {only_ours:?}, only llama.cpp {only_theirs:?}")
}
