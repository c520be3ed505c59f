//! Lazy-grammar triggers (llama.cpp's tool-call mode): until a trigger token or pattern shows
//! up the grammar constrains nothing; text is buffered with each token's byte span so the
//! triggering text can be replayed into the grammar.

use regex::bytes::Regex;

use crate::error::BuildError;
use nucleus_sampler::Token;

/// What activates a lazy grammar.
#[derive(Debug, Clone, Default)]
pub struct Triggers {
    /// Token ids that activate the grammar (the token itself is fed to it).
    pub tokens: Vec<Token>,
    /// Compiled patterns; `(source, regex, anchored)` where anchored = `^...$` (whole buffer).
    patterns: Vec<(String, Regex)>,
}

impl Triggers {
    /// Builds triggers from words (matched literally, anywhere), tokens, and patterns
    /// (regex, anywhere; a pattern written `^...$` must match the whole buffer).
    pub fn new(words: &[String], tokens: &[Token], patterns: &[String]) -> Result<Self, BuildError> {
        let mut t = Triggers { tokens: tokens.to_vec(), patterns: Vec::new() };
        for w in words {
            t.add_pattern(&regex::escape(w))?;
        }
        for p in patterns {
            t.add_pattern(p)?;
        }
        Ok(t)
    }

    /// Adds one pattern; full-buffer patterns are `^...$` and are compiled as given.
    pub fn add_pattern(&mut self, p: &str) -> Result<(), BuildError> {
        let re = Regex::new(p).map_err(|e| BuildError::Trigger { pattern: p.to_string(), reason: e.to_string() })?;
        self.patterns.push((p.to_string(), re));
        Ok(())
    }

    /// Whether there is nothing to wait for.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty() && self.patterns.is_empty()
    }

    /// Where the constrained text starts if some pattern matches `buffer`: the start of the
    /// first non-empty capture group, else of the whole match.
    pub fn find(&self, buffer: &[u8]) -> Option<usize> {
        for (_, re) in &self.patterns {
            if let Some(caps) = re.captures(buffer) {
                for i in 1..caps.len() {
                    if let Some(m) = caps.get(i) {
                        if !m.is_empty() {
                            return Some(m.start());
                        }
                    }
                }
                return Some(caps.get(0).map(|m| m.start()).unwrap_or(0));
            }
        }
        None
    }
}

/// The buffered text of a lazy grammar still waiting for its trigger.
#[derive(Debug, Clone, Default)]
pub struct TriggerBuffer {
    /// All text accepted so far.
    pub text: Vec<u8>,
    /// Each token with its byte span in `text`.
    pub spans: Vec<(Token, usize, usize)>,
}

impl TriggerBuffer {
    /// Appends one token's text.
    pub fn push(&mut self, token: Token, piece: &[u8]) {
        let start = self.text.len();
        self.text.extend_from_slice(piece);
        self.spans.push((token, start, self.text.len()));
    }

    /// The tokens overlapping `start..`, the first possibly cut: `(token, piece)`.
    pub fn replay_from(&self, start: usize) -> Vec<(Token, Vec<u8>)> {
        self.spans
            .iter()
            .filter(|&&(_, _, e)| e > start)
            .map(|&(t, s, e)| (t, self.text[s.max(start)..e].to_vec()))
            .collect()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.text.clear();
        self.spans.clear();
    }
}
