//! The compiled grammar: rules lowered to a flat element array (llama.cpp's layout), where a
//! position is an index, so a parse stack is just a list of `u32`s.

use std::collections::BTreeMap;

/// A set of code points: sorted inclusive ranges, optionally negated. `.` is the empty
/// negated set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CharClass {
    /// Inclusive ranges in the order written (not merged: llama.cpp keeps them as listed).
    pub ranges: Vec<(u32, u32)>,
    /// `[^...]` or `.`: matches code points outside `ranges`.
    pub negated: bool,
}

impl CharClass {
    /// Whether code point `c` is in the class.
    #[inline]
    pub fn matches(&self, c: u32) -> bool {
        let inside = self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        inside != self.negated
    }

    /// Whether some code point in `lo..=hi` is in the class (exact, used while a multi-byte
    /// character is still being read).
    pub fn intersects(&self, lo: u32, hi: u32) -> bool {
        if !self.negated {
            return self.ranges.iter().any(|&(a, b)| a <= hi && lo <= b);
        }
        // Negated: some code point is in the class unless the excluded ranges cover lo..=hi.
        !ranges_cover(&self.ranges, lo, hi)
    }

    /// Whether every code point in `lo..=hi` is in the class.
    pub fn covers(&self, lo: u32, hi: u32) -> bool {
        if self.negated {
            return !self.ranges.iter().any(|&(a, b)| a <= hi && lo <= b);
        }
        ranges_cover(&self.ranges, lo, hi)
    }

    /// llama.cpp's end-of-token check for a partial UTF-8 sequence: a negated class only
    /// passes if no excluded range overlaps the possible code points (conservative).
    pub fn partial_ok_llama(&self, lo: u32, hi: u32) -> bool {
        if !self.negated {
            return self.ranges.iter().any(|&(a, b)| a <= hi && lo <= b);
        }
        !self.ranges.iter().any(|&(a, b)| a <= hi && lo <= b)
    }
}

/// Whether the union of `ranges` (inclusive, in any order) holds every code point of `lo..=hi`.
/// Without allocating: classes have few ranges, and this runs while masks are computed.
fn ranges_cover(ranges: &[(u32, u32)], lo: u32, hi: u32) -> bool {
    let mut next = lo;
    loop {
        // The farthest end among the ranges holding `next`.
        let Some(end) = ranges.iter().filter(|&&(a, b)| a <= next && next <= b).map(|&(_, b)| b).max() else {
            return false;
        };
        if end >= hi {
            return true;
        }
        next = end + 1;
    }
}

/// One element of the flat rule array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Elem {
    /// One code point from class `classes[i]`.
    Char(u32),
    /// A reference to rule `i`.
    Ref(u32),
    /// One whole token with this id.
    Token(u32),
    /// One whole token with any other id.
    NotToken(u32),
    /// End of an alternative.
    End,
}

/// A parsed, validated grammar.
#[derive(Debug, Clone)]
pub struct Grammar {
    /// All alternatives of all rules, each followed by [`Elem::End`].
    pub elems: Vec<Elem>,
    /// For each rule id, the start positions of its alternatives in `elems`.
    pub rules: Vec<Vec<u32>>,
    /// Character classes referenced by [`Elem::Char`].
    pub classes: Vec<CharClass>,
    /// Rule name -> id, including generated helper rules (`name_N`), as llama.cpp numbers them.
    pub symbol_ids: BTreeMap<String, u32>,
    /// The start rule.
    pub start: u32,
}

impl Grammar {
    /// Name of a rule id (for error messages).
    pub fn rule_name(&self, id: u32) -> &str {
        self.symbol_ids.iter().find(|(_, &v)| v == id).map(|(k, _)| k.as_str()).unwrap_or("?")
    }

    /// Whether the grammar contains token items (`<[id]>`, `!<...>`).
    pub fn has_token_items(&self) -> bool {
        self.elems.iter().any(|e| matches!(e, Elem::Token(_) | Elem::NotToken(_)))
    }
}
