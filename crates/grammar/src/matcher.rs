//! [`Matcher`]: one sequence's position in a grammar. Accepts tokens (by id and text) or raw
//! text, carries partial UTF-8 across tokens, and says whether the grammar can end here.
//! Clones share the grammar's automaton, so cloning is cheap.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::dfa::{Dfa, Partial, DEAD};
use crate::error::AcceptError;
use crate::grammar::Grammar;

/// A grammar position. Cheap to clone; clones share the lazily built automaton.
#[derive(Debug, Clone)]
pub struct Matcher {
    dfa: Arc<Mutex<Dfa>>,
    state: u32,
}

impl Matcher {
    /// A matcher at the start of `grammar`.
    pub fn new(grammar: Arc<Grammar>) -> Self {
        let dfa = Dfa::new(grammar);
        let state = dfa.initial();
        Matcher { dfa: Arc::new(Mutex::new(dfa)), state }
    }

    /// Parses GBNF `text` with start rule `root` and starts a matcher on it.
    pub fn from_gbnf(text: &str) -> Result<Self, crate::error::BuildError> {
        Ok(Self::new(Grammar::parse(text, "root")?))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Dfa> {
        self.dfa.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current automaton state id (for caches keyed by state).
    pub fn state_id(&self) -> u32 {
        self.state
    }

    /// Back to the start of the grammar.
    pub fn reset(&mut self) {
        let s = self.lock().initial();
        self.state = s;
    }

    /// Whether the input so far is a complete sentence (end of generation is allowed).
    pub fn can_end(&self) -> bool {
        self.lock().is_complete(self.state)
    }

    /// Whether an end-of-generation token is allowed now: [`Matcher::can_end`], or llama.cpp's
    /// wider rule inside a pending multi-byte character (the grammar could end before it).
    /// False once the automaton is out of work budget.
    pub fn eog_allowed(&self) -> bool {
        let d = self.lock();
        d.eog_ok(self.state) && !d.exhausted()
    }

    /// Number of live parse stacks (a measure of ambiguity).
    pub fn n_stacks(&self) -> usize {
        self.lock().n_stacks(self.state)
    }

    /// Accepts text that is not a token (llama.cpp's `accept_str`): token items never match it.
    /// On rejection the state is unchanged and the error gives the byte offset. Once the
    /// automaton is out of work budget (a grammar too ambiguous to follow), this and every
    /// other accept fail with [`AcceptError::TooAmbiguous`] and nothing is allowed any more.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<(), AcceptError> {
        let start = self.state;
        let mut d = self.lock();
        let r = d.run_until_dead(start, bytes);
        let r = if d.exhausted() { Err(AcceptError::TooAmbiguous) } else { r.map_err(AcceptError::AtByte) };
        drop(d);
        self.state = r?;
        Ok(())
    }

    /// Whether `bytes` is a viable continuation as text (a prefix of some sentence). False once
    /// the automaton is out of work budget.
    pub fn allows_bytes(&self, bytes: &[u8]) -> bool {
        let mut d = self.lock();
        let s = d.run(self.state, bytes);
        s != DEAD && d.end_ok(s) && !d.exhausted()
    }

    /// Whether a token item on top of some stack (`<[id]>`, `!<[id]>`) takes token `token` by
    /// its id (the other way a token can be allowed besides [`Matcher::allows_bytes`] of its
    /// text). False once the automaton is out of work budget.
    pub fn allows_token_item(&self, token: i32) -> bool {
        let mut d = self.lock();
        token >= 0
            && d.has_token_items(self.state)
            && d.step_token(self.state, token as u32).is_some()
            && !d.exhausted()
    }

    /// Accepts one sampled token with id `token` and text `piece`: token items judge it by
    /// id, character items consume its text. On rejection the state is unchanged.
    pub fn accept_token(&mut self, token: i32, piece: &[u8]) -> Result<(), AcceptError> {
        let mut d = self.lock();
        let s = self.state;
        let by_text = if piece.is_empty() {
            Some(s)
        } else {
            match d.run(s, piece) {
                DEAD => None,
                t => Some(t),
            }
        };
        let by_id = if d.has_token_items(s) && token >= 0 { d.step_token(s, token as u32) } else { None };
        let next = match (by_text, by_id) {
            _ if d.exhausted() => return Err(AcceptError::TooAmbiguous),
            (None, None) => None,
            (Some(t), None) => Some(t),
            (t, Some(extra)) => {
                let partial = t.map(|t| d.partial(t)).unwrap_or(Partial::default());
                Some(d.merge(t, extra, partial))
            }
        };
        drop(d);
        match next {
            Some(n) => {
                self.state = n;
                Ok(())
            }
            None => Err(AcceptError::Rejected { token, text: String::from_utf8_lossy(piece).into_owned() }),
        }
    }

    /// Accepts an end-of-generation token: allowed only where [`Matcher::eog_allowed`].
    pub fn accept_eog(&mut self, token: i32) -> Result<(), AcceptError> {
        if self.lock().exhausted() {
            Err(AcceptError::TooAmbiguous)
        } else if self.eog_allowed() {
            Ok(())
        } else {
            Err(AcceptError::Incomplete(token))
        }
    }
}
