//! Rule IR built the way llama.cpp's converter writes its text: a [`Frag`] is a run of items
//! with the spaces written before each and after the last, so constructions that join pieces
//! with spaces and `|` (and sometimes leave a stray space, which llama.cpp's output keeps)
//! build rule bodies as data that print exactly as that text would, without writing or
//! parsing any text.

use crate::rules::{Body, Expr, Seq};

/// A run of items and the spaces around them (as text: `ws[0]` spaces, item, `ws[1]`
/// spaces, ..., item, `ws[n]` spaces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Frag {
    items: Vec<Expr>,
    /// `items.len() + 1` counts.
    ws: Vec<u8>,
}

impl Default for Frag {
    fn default() -> Frag {
        Frag { items: Vec::new(), ws: vec![0] }
    }
}

impl Frag {
    /// The empty text.
    pub(super) fn new() -> Frag {
        Frag::default()
    }

    /// `items` with one space between each two (no space before or after).
    pub(super) fn of(items: Vec<Expr>) -> Frag {
        let mut ws = vec![1; items.len() + 1];
        ws[0] = 0;
        if let Some(last) = ws.last_mut() {
            *last = 0;
        }
        Frag { items, ws }
    }

    /// Whether this is the empty text (no items, no spaces).
    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty() && self.ws[0] == 0
    }

    /// Appends `e` right after the text so far (no space between).
    pub(super) fn push(&mut self, e: Expr) {
        self.items.push(e);
        self.ws.push(0);
    }

    /// Appends a space.
    pub(super) fn space(&mut self) {
        if let Some(w) = self.ws.last_mut() {
            *w = w.saturating_add(1);
        }
    }

    /// Appends `other`'s text right after this one's.
    pub(super) fn append(&mut self, other: Frag) {
        let Frag { items, ws } = other;
        if let Some(w) = self.ws.last_mut() {
            *w = w.saturating_add(ws[0]);
        }
        self.items.extend(items);
        self.ws.extend_from_slice(&ws[1..]);
    }

    /// This text without the spaces at its end.
    pub(super) fn trim_end(mut self) -> Frag {
        if let Some(w) = self.ws.last_mut() {
            *w = 0;
        }
        self
    }

    /// This text, a space, then `other`'s (`a b` from `a` and `b`).
    pub(super) fn then(mut self, other: Frag) -> Frag {
        self.space();
        self.append(other);
        self
    }

    /// `alts` joined by ` | ` as the sequences of a group (`top`: of a rule body, written
    /// after `::= `).
    fn seqs(alts: Vec<Frag>, top: bool) -> Vec<Seq> {
        let n = alts.len();
        alts.into_iter()
            .enumerate()
            .map(|(i, Frag { items, mut ws })| {
                let extra = u8::from(i > 0 || top);
                ws[0] = ws[0].saturating_add(extra);
                if i + 1 < n {
                    if let Some(w) = ws.last_mut() {
                        *w = w.saturating_add(1);
                    }
                }
                Seq::spaced(items, ws)
            })
            .collect()
    }

    /// `(a | b | ...)`: the group of `alts` joined by ` | `.
    pub(super) fn group(alts: Vec<Frag>) -> Expr {
        Expr::Group(Frag::seqs(alts, false))
    }

    /// The rule body `a | b | ...` (`alts` joined by ` | `, after `::= `).
    pub(super) fn body(alts: Vec<Frag>) -> Body {
        Frag::seqs(alts, true)
    }

    /// The rule body of this one alternative.
    pub(super) fn into_body(self) -> Body {
        Frag::body(vec![self])
    }
}

impl From<Expr> for Frag {
    fn from(e: Expr) -> Frag {
        Frag { items: vec![e], ws: vec![0, 0] }
    }
}
