//! The rule IR: grammar rules as data. The JSON Schema converter's rules and parsed GBNF text
//! both become a [`RuleSet`]; a [`Grammar`](crate::Grammar) is built from it directly
//! ([`lower`]), and GBNF text is printed from it only for people ([`print`]).
//!
//! A rule set is a list of definitions in order (the order decides llama.cpp's rule
//! numbering, so a set lowers to exactly the grammar its printed text parses to) over
//! interned rule names ([`RuleId`]). Literals, classes and sequences keep the spelling and
//! spaces they were written with, when there was one, so printing a parsed or converted set
//! gives back its text (the converter's text stays byte for byte what llama.cpp writes).

mod lower;
mod print;

use std::collections::HashMap;

use crate::grammar::CharClass;

pub(crate) use lower::lower;
pub(crate) use print::body_text;

/// A rule's name, interned in a [`RuleSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub u32);

/// How a repetition is written (its counts are in [`Expr::Repeat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RepeatForm {
    /// `*`
    Star,
    /// `+`
    Plus,
    /// `?`
    Optional,
    /// `{m}`
    Exact,
    /// `{m,}`
    AtLeast,
    /// `{m,n}`
    Range,
}

impl RepeatForm {
    /// The usual spelling of `{min,max}`.
    pub fn of(min: u32, max: Option<u32>) -> RepeatForm {
        match (min, max) {
            (0, None) => RepeatForm::Star,
            (1, None) => RepeatForm::Plus,
            (0, Some(1)) => RepeatForm::Optional,
            (_, None) => RepeatForm::AtLeast,
            (_, Some(_)) => RepeatForm::Range,
        }
    }
}

/// One item of a sequence.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    /// These code points in order. `spelling`: the text between the quotes as written.
    Lit { chars: Vec<u32>, spelling: Option<Box<str>> },
    /// One code point of a class (`.` is the empty negated class). `spelling`: as written,
    /// brackets included.
    Class { class: CharClass, spelling: Option<Box<str>> },
    /// Another rule.
    Ref(RuleId),
    /// One whole token with this id.
    Token(u32),
    /// One whole token with any other id.
    NotToken(u32),
    /// A parenthesized alternation of sequences.
    Group(Vec<Seq>),
    /// `item` between `min` and `max` (unbounded: `None`) times. `gap`: spaces written between
    /// the item and the operator.
    Repeat { item: Box<Expr>, min: u32, max: Option<u32>, form: RepeatForm, gap: u8 },
}

/// A sequence of items (one alternative), with the spaces it was written with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Seq {
    /// The items in order.
    pub items: Vec<Expr>,
    /// Spaces before each item and after the last (`items.len() + 1` counts), as written;
    /// `None`: the usual layout (one space between items).
    pub layout: Option<Box<[u8]>>,
}

impl Seq {
    /// A sequence in the usual layout.
    pub fn new(items: Vec<Expr>) -> Seq {
        Seq { items, layout: None }
    }

    /// A sequence written with these spaces before each item and after the last
    /// (`items.len() + 1` counts): only for text that departs from the usual layout.
    pub fn spaced(items: Vec<Expr>, spaces: Vec<u8>) -> Seq {
        debug_assert_eq!(spaces.len(), items.len() + 1);
        Seq { items, layout: Some(spaces.into()) }
    }

    /// Drops spellings and layouts the printer would write anyway (`top`, `i`, `n`: whether
    /// the sequence is a rule's, its index among its `n` alternatives), here and in every
    /// nested group, so two sequences are equal exactly when they print the same text.
    fn canonicalize(&mut self, top: bool, i: usize, n: usize) {
        for e in &mut self.items {
            e.canonicalize();
        }
        if let Some(ws) = &self.layout {
            let (lead, tail) = (u8::from(top || i > 0), u8::from(i + 1 < n));
            let k = ws.len();
            let usual =
                !self.items.is_empty() && ws[0] == lead && ws[k - 1] == tail && ws[1..k - 1].iter().all(|&w| w == 1);
            if usual {
                self.layout = None;
            }
        }
    }

    /// Replaces every rule reference `r` in place by `f(r)`, outermost first, left to right.
    pub fn remap_refs(&mut self, f: &mut impl FnMut(RuleId) -> RuleId) {
        self.items.iter_mut().for_each(|e| e.remap_refs(f));
    }

    /// This sequence with every rule reference replaced by `f` of it.
    pub fn map_refs(&self, f: &mut impl FnMut(RuleId) -> RuleId) -> Seq {
        Seq { items: self.items.iter().map(|e| e.map_refs(f)).collect(), layout: self.layout.clone() }
    }
}

/// A rule body: its alternatives.
pub type Body = Vec<Seq>;

/// `body` (a rule's alternatives) in canonical form: spellings and layouts kept only where
/// the printer would not write them anyway, so bodies are equal exactly when their printed
/// texts are (the converter deduplicates and compacts rules by equality). Builders leave
/// layouts as given (a sequence's usual layout depends on where it ends up); this settles
/// them once the body is whole.
pub(crate) fn canonicalize(body: &mut Body) {
    let n = body.len();
    for (i, s) in body.iter_mut().enumerate() {
        s.canonicalize(true, i, n);
    }
}

/// A rule body of one alternative.
pub fn seq(items: Vec<Expr>) -> Body {
    vec![Seq::new(items)]
}

/// A rule body of one-item alternatives (`a | b | c`).
pub fn alts(items: impl IntoIterator<Item = Expr>) -> Body {
    items.into_iter().map(|e| Seq::new(vec![e])).collect()
}

impl Expr {
    /// A literal string.
    pub fn lit(s: &str) -> Expr {
        Expr::Lit { chars: s.chars().map(u32::from).collect(), spelling: None }
    }

    /// A literal written with `spelling` between its quotes (kept only when the printer
    /// would escape differently).
    pub fn lit_spelled(s: &str, spelling: &str) -> Expr {
        let mut e = Expr::Lit { chars: s.chars().map(u32::from).collect(), spelling: Some(spelling.into()) };
        e.canonicalize();
        e
    }

    /// A group written with a space on both sides of every alternative: `( a | b )`.
    pub fn spaced_group(alts: Vec<Seq>) -> Expr {
        Expr::Group(
            alts.into_iter()
                .map(|s| {
                    let k = s.items.len();
                    Seq::spaced(s.items, vec![1; k + 1])
                })
                .collect(),
        )
    }

    /// Drops the spelling the printer would write anyway (and so in nested groups).
    fn canonicalize(&mut self) {
        match self {
            Expr::Lit { chars, spelling } if spelling.as_deref().is_some_and(|s| print::lit_default(chars) == s) => {
                *spelling = None;
            }
            Expr::Class { class, spelling }
                if spelling.as_deref().is_some_and(|s| print::class_default(class) == s) =>
            {
                *spelling = None;
            }
            Expr::Group(alts) => {
                let n = alts.len();
                for (i, s) in alts.iter_mut().enumerate() {
                    s.canonicalize(false, i, n);
                }
            }
            Expr::Repeat { item, .. } => item.canonicalize(),
            _ => {}
        }
    }

    /// One code point from `ranges` (inclusive), printed the usual way.
    pub fn class(ranges: Vec<(u32, u32)>) -> Expr {
        Expr::Class { class: CharClass { ranges, negated: false }, spelling: None }
    }

    /// `item{min,max}` written in `form` (`{0,1}` rather than `?`, say).
    pub fn repeat_as(item: Expr, min: u32, max: Option<u32>, form: RepeatForm) -> Expr {
        Expr::Repeat { item: Box::new(item), min, max, form, gap: 0 }
    }

    /// `item{min,max}`, spelled the usual way.
    pub fn repeat(item: Expr, min: u32, max: Option<u32>) -> Expr {
        Expr::Repeat { item: Box::new(item), min, max, form: RepeatForm::of(min, max), gap: 0 }
    }

    /// Calls `f` on every rule reference, outermost first, left to right.
    pub fn for_each_ref(&self, f: &mut impl FnMut(RuleId)) {
        match self {
            Expr::Ref(r) => f(*r),
            Expr::Group(alts) => alts.iter().flat_map(|s| &s.items).for_each(|e| e.for_each_ref(f)),
            Expr::Repeat { item, .. } => item.for_each_ref(f),
            _ => {}
        }
    }

    /// Replaces every rule reference `r` in place by `f(r)`, outermost first, left to right.
    pub fn remap_refs(&mut self, f: &mut impl FnMut(RuleId) -> RuleId) {
        match self {
            Expr::Ref(r) => *r = f(*r),
            Expr::Group(alts) => alts.iter_mut().for_each(|s| s.remap_refs(f)),
            Expr::Repeat { item, .. } => item.remap_refs(f),
            _ => {}
        }
    }

    /// This item with every rule reference replaced by `f` of it.
    pub fn map_refs(&self, f: &mut impl FnMut(RuleId) -> RuleId) -> Expr {
        match self {
            Expr::Ref(r) => Expr::Ref(f(*r)),
            Expr::Group(alts) => Expr::Group(alts.iter().map(|s| s.map_refs(f)).collect()),
            Expr::Repeat { item, min, max, form, gap } => {
                Expr::Repeat { item: Box::new(item.map_refs(f)), min: *min, max: *max, form: *form, gap: *gap }
            }
            e => e.clone(),
        }
    }
}

/// Rule names and definitions, in definition order. Two sets are equal when they intern the
/// same names in the same order and hold the same definitions (equal sets build the same
/// grammar: what a cache of compiled grammars keys on).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    names: Vec<String>,
    index: HashMap<String, RuleId>,
    defs: Vec<(RuleId, Body)>,
}

impl RuleSet {
    /// An empty set.
    pub fn new() -> RuleSet {
        RuleSet::default()
    }

    /// The id of rule `name` (a new id the first time it is named).
    pub fn id(&mut self, name: &str) -> RuleId {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = RuleId(self.names.len() as u32);
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), id);
        id
    }

    /// The id of `name`, if it was ever named.
    pub fn get(&self, name: &str) -> Option<RuleId> {
        self.index.get(name).copied()
    }

    /// The name of `id`.
    pub fn name(&self, id: RuleId) -> &str {
        &self.names[id.0 as usize]
    }

    /// How many names are interned.
    pub fn n_names(&self) -> usize {
        self.names.len()
    }

    /// Appends a definition of `id` (a later definition of the same rule replaces an earlier
    /// one, as in GBNF text).
    pub fn define(&mut self, id: RuleId, body: Body) {
        self.defs.push((id, body));
    }

    /// The definitions in order.
    pub fn defs(&self) -> &[(RuleId, Body)] {
        &self.defs
    }

    /// Whether every referenced rule has a definition.
    pub fn is_closed(&self) -> bool {
        let mut defined = vec![false; self.names.len()];
        for (id, _) in &self.defs {
            defined[id.0 as usize] = true;
        }
        let mut ok = true;
        for (_, body) in &self.defs {
            body.iter().flat_map(|s| &s.items).for_each(|e| e.for_each_ref(&mut |r| ok &= defined[r.0 as usize]));
        }
        ok
    }

    /// Appends every definition of `other` under `prefix` (each of its rule names written
    /// `{prefix}{name}`), so several rule sets compose into one without name clashes. Names
    /// are shared by spelling: a layout set imported without a prefix that references
    /// `t0-root` refers to the `root` of the set imported under `t0-`.
    pub fn import(&mut self, other: &RuleSet, prefix: &str) {
        let ids: Vec<RuleId> = other.names.iter().map(|n| self.id(&format!("{prefix}{n}"))).collect();
        for (id, body) in &other.defs {
            let body = body.iter().map(|s| s.map_refs(&mut |r| ids[r.0 as usize])).collect();
            self.defs.push((ids[id.0 as usize], body));
        }
    }

    /// GBNF text, one rule per line in definition order.
    pub fn to_gbnf(&self) -> String {
        print::print(self)
    }
}

#[cfg(test)]
mod tests;
