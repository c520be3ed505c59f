//! Deterministic finite automata over Unicode scalar values, for the string languages a
//! schema combines: regex `pattern`s (the strict subset), finite name sets and length bounds,
//! closed under intersection and difference. They make combinations exact that a
//! single regex translation cannot express: a key matching several `patternProperties`, a
//! key matching none of them (complement), a `pattern` together with `maxLength`, a string
//! that is not one of an `enum`'s values.
//!
//! Automata are partial (a missing transition leads to rejection), trimmed (every state is
//! reachable and can reach acceptance) and minimal; state 0 is the start state.

use std::collections::{BTreeMap, HashMap};

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::converter::{rule_name_chars, Converter};
use super::pattern_strict::{class_to_gbnf, class_to_item, to_rust_syntax};
use crate::fast_hash::FastMap;
use crate::rules::{self, Seq};

/// The code points a JSON string can hold: every Unicode scalar value.
const UNIVERSE: [(u32, u32); 2] = [(0, 0xD7FF), (0xE000, 0x10FFFF)];

/// One transition: the code points `lo..=hi` lead to `target`.
type Transition = (u32, u32, usize);

/// Transitions of one state: sorted, disjoint `(lo, hi, target)`.
type Row = Vec<Transition>;

/// States allowed in an automaton (and NFA states while building one).
pub const MAX_STATES: usize = 4000;

/// A DFA: per state, sorted disjoint `(lo, hi, target)` transitions, and acceptance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dfa {
    trans: Vec<Vec<(u32, u32, usize)>>,
    accept: Vec<bool>,
}

impl Dfa {
    /// Every string.
    pub fn any_string() -> Dfa {
        Dfa { trans: vec![UNIVERSE.iter().map(|&(lo, hi)| (lo, hi, 0)).collect()], accept: vec![true] }
    }

    /// No string.
    pub fn empty() -> Dfa {
        Dfa { trans: vec![vec![]], accept: vec![false] }
    }

    /// Exactly the strings in `words`.
    pub fn literals<S: AsRef<str>>(words: &[S]) -> Dfa {
        let mut d = Dfa::empty();
        for w in words {
            let mut s = 0;
            for c in w.as_ref().chars() {
                let c = c as u32;
                s = match d.trans[s].iter().find(|t| t.0 == c) {
                    Some(t) => t.2,
                    None => {
                        d.trans.push(vec![]);
                        d.accept.push(false);
                        let n = d.trans.len() - 1;
                        d.trans[s].push((c, c, n));
                        d.trans[s].sort_unstable();
                        n
                    }
                };
            }
            d.accept[s] = true;
        }
        d.minimized()
    }

    /// Strings of `min..=max` characters (code points), `max` `None` = unbounded.
    pub fn length(min: usize, max: Option<usize>) -> Result<Dfa, String> {
        let n = max.unwrap_or(min);
        if n >= MAX_STATES {
            return Err(format!("string lengths above {} are not supported here", MAX_STATES - 1));
        }
        if max.is_some_and(|m| m < min) {
            return Ok(Dfa::empty());
        }
        let mut trans = Vec::new();
        let mut accept = Vec::new();
        for i in 0..=n {
            let next = if i < n {
                Some(i + 1)
            } else if max.is_none() {
                Some(i)
            } else {
                None
            };
            trans.push(next.map(|t| UNIVERSE.iter().map(|&(lo, hi)| (lo, hi, t)).collect()).unwrap_or_default());
            accept.push(i >= min);
        }
        Ok(Dfa { trans, accept })
    }

    /// The strings an ECMAScript `pattern` matches (searching: unanchored ends match
    /// anything), for the regex subset the strict converter supports.
    pub fn from_pattern(pattern: &str) -> Result<Dfa, String> {
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(&to_rust_syntax(pattern))
            .map_err(|e| format!("unsupported regular expression: {}", e.to_string().lines().last().unwrap_or("")))?;
        let branches: Vec<&Hir> = match hir.kind() {
            HirKind::Alternation(v) => v.iter().collect(),
            _ => vec![&hir],
        };
        let mut nfa = Nfa::default();
        let start = nfa.state()?;
        let end = nfa.state()?;
        for b in branches {
            let mut items: Vec<&Hir> = match b.kind() {
                HirKind::Concat(v) => v.iter().collect(),
                _ => vec![b],
            };
            let anchored_start = matches!(items.first().map(|h| h.kind()), Some(HirKind::Look(Look::Start)));
            if anchored_start {
                items.remove(0);
            }
            let anchored_end = matches!(items.last().map(|h| h.kind()), Some(HirKind::Look(Look::End)));
            if anchored_end {
                items.pop();
            }
            let mut cur = nfa.state()?;
            nfa.eps[start].push(cur);
            if !anchored_start {
                nfa.any_loop(cur);
            }
            for it in items {
                let (s, e) = nfa.build(it)?;
                nfa.eps[cur].push(s);
                cur = e;
            }
            if !anchored_end {
                let l = nfa.state()?;
                nfa.eps[cur].push(l);
                nfa.any_loop(l);
                cur = l;
            }
            nfa.eps[cur].push(end);
        }
        nfa.determinize(start, end)
    }

    /// The automaton with these rows (sorted, disjoint `(lo, hi, target)`) and accepting
    /// states, state 0 the start; trimmed and minimized.
    pub(super) fn from_parts(trans: Vec<Row>, accept: Vec<bool>) -> Dfa {
        Dfa { trans, accept }.minimized()
    }

    /// Strings in both.
    pub fn intersect(&self, other: &Dfa) -> Result<Dfa, String> {
        self.product(other, |a, b| a && b)
    }

    /// Strings in `self` but not in `other`.
    pub fn minus(&self, other: &Dfa) -> Result<Dfa, String> {
        self.product(other, |a, b| a && !b)
    }

    /// Whether no string is accepted.
    pub fn is_empty(&self) -> bool {
        !self.accept[0] && self.trans[0].is_empty()
    }

    /// Whether `s` is accepted.
    pub fn accepts(&self, s: &str) -> bool {
        let mut st = 0;
        for c in s.chars() {
            let c = c as u32;
            match self.trans[st].iter().find(|t| t.0 <= c && c <= t.1) {
                Some(t) => st = t.2,
                None => return false,
            }
        }
        self.accept[st]
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.trans.len()
    }

    /// Whether state `s` accepts.
    pub fn is_accepting(&self, s: usize) -> bool {
        self.accept[s]
    }

    /// The transitions of state `s` grouped by target: `(target, ranges)` in target order.
    pub fn moves(&self, s: usize) -> Vec<(usize, Vec<(u32, u32)>)> {
        let mut by: BTreeMap<usize, Vec<(u32, u32)>> = BTreeMap::new();
        for &(lo, hi, t) in &self.trans[s] {
            by.entry(t).or_default().push((lo, hi));
        }
        by.into_iter().collect()
    }

    /// Product automaton; a side without a transition is in its (rejecting) dead state.
    fn product(&self, other: &Dfa, keep: impl Fn(bool, bool) -> bool) -> Result<Dfa, String> {
        type Pair = (Option<usize>, Option<usize>);
        let mut ids: FastMap<Pair, usize> = FastMap::default();
        let mut pairs: Vec<Pair> = vec![(Some(0), Some(0))];
        ids.insert(pairs[0], 0);
        let mut out = Dfa { trans: vec![], accept: vec![] };
        let mut i = 0;
        while i < pairs.len() {
            let (a, b) = pairs[i];
            let ta: &[(u32, u32, usize)] = a.map(|s| self.trans[s].as_slice()).unwrap_or(&[]);
            let tb: &[(u32, u32, usize)] = b.map(|s| other.trans[s].as_slice()).unwrap_or(&[]);
            let mut row = Vec::new();
            for (lo, hi, na, nb) in overlay(ta, tb) {
                let key = (na, nb);
                let id = match ids.get(&key) {
                    Some(&id) => id,
                    None => {
                        if pairs.len() >= MAX_STATES * 4 {
                            return Err("the combined string language is too large".into());
                        }
                        pairs.push(key);
                        ids.insert(key, pairs.len() - 1);
                        pairs.len() - 1
                    }
                };
                row.push((lo, hi, id));
            }
            out.trans.push(row);
            let acc = |d: &Dfa, s: Option<usize>| s.is_some_and(|s| d.accept[s]);
            out.accept.push(keep(acc(self, a), acc(other, b)));
            i += 1;
        }
        let d = out.minimized();
        if d.len() > MAX_STATES {
            return Err("the combined string language is too large".into());
        }
        Ok(d)
    }

    /// Trimmed (useless states removed) and minimized (Hopcroft's partition refinement).
    fn minimized(&self) -> Dfa {
        let d = self.trimmed();
        let n = d.len();
        let block = d.equivalence_classes();
        // Renumber blocks so the start state's block is 0, in discovery order.
        let mut order: Vec<usize> = vec![usize::MAX; n + 1];
        let mut reps: Vec<usize> = Vec::new();
        let mut stack = vec![0usize];
        if n > 0 {
            order[block[0]] = 0;
            reps.push(0);
        }
        while let Some(s) = stack.pop() {
            for &(_, _, t) in &d.trans[s] {
                if order[block[t]] == usize::MAX {
                    order[block[t]] = reps.len();
                    reps.push(t);
                    stack.push(t);
                }
            }
        }
        let mut out = Dfa { trans: vec![], accept: vec![] };
        for &r in &reps {
            let mut row: Vec<(u32, u32, usize)> = Vec::new();
            for &(lo, hi, t) in &d.trans[r] {
                let t = order[block[t]];
                match row.last_mut() {
                    Some(l) if l.2 == t && l.1 + 1 == lo => l.1 = hi,
                    _ => row.push((lo, hi, t)),
                }
            }
            out.trans.push(row);
            out.accept.push(d.accept[r]);
        }
        out
    }

    /// The class of each state under language equivalence (Hopcroft's algorithm over the
    /// code point ranges the transitions cut the alphabet into, with an explicit dead state
    /// for missing transitions): O(m·n·log n) for n states and m ranges, where refining
    /// round by round (Moore) takes one round per state of a long chain (`{1,255}`).
    fn equivalence_classes(&self) -> Vec<usize> {
        let n = self.len();
        if n == 0 {
            return Vec::new();
        }
        let dead = n;
        let states = n + 1;
        // The alphabet's atoms: maximal ranges no transition boundary cuts.
        let mut cuts: Vec<u32> = self.trans.iter().flatten().flat_map(|&(lo, hi, _)| [lo, hi + 1]).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let atoms = cuts.len().saturating_sub(1);
        // next[s * atoms + a]: the target of state s on atom a (the dead state when none).
        let mut next = vec![dead; states * atoms];
        for (s, row) in self.trans.iter().enumerate() {
            for &(lo, hi, t) in row {
                let first = cuts.partition_point(|&c| c < lo);
                let end = cuts.partition_point(|&c| c <= hi);
                for a in first..end {
                    next[s * atoms + a] = t;
                }
            }
        }
        // Predecessors by atom, as one CSR table: pred_of[a][t] = sources.
        let key = |a: usize, t: usize| a * states + t;
        let mut start = vec![0usize; atoms * states + 1];
        for s in 0..states {
            for a in 0..atoms {
                start[key(a, next[s * atoms + a]) + 1] += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut fill = start.clone();
        let mut preds = vec![0usize; states * atoms];
        for s in 0..states {
            for a in 0..atoms {
                let k = key(a, next[s * atoms + a]);
                preds[fill[k]] = s;
                fill[k] += 1;
            }
        }
        // Blocks: accepting and the rest (the dead state among the rest).
        let mut block_of: Vec<usize> = (0..states).map(|s| usize::from(s < n && self.accept[s])).collect();
        let mut blocks: Vec<Vec<usize>> = vec![Vec::new(), Vec::new()];
        for s in 0..states {
            blocks[block_of[s]].push(s);
        }
        if blocks[1].is_empty() {
            blocks.pop();
        }
        let mut waiting: Vec<(usize, usize)> = Vec::new();
        let mut queued: Vec<bool> = Vec::new(); // block * atoms + atom
        let smallest = if blocks.len() == 2 && blocks[1].len() < blocks[0].len() { 1 } else { 0 };
        queued.resize(blocks.len() * atoms, false);
        for a in 0..atoms {
            waiting.push((smallest, a));
            queued[smallest * atoms + a] = true;
        }
        let mut marked = vec![false; states];
        let mut touched: Vec<usize> = Vec::new();
        let mut hit: Vec<usize> = vec![0; blocks.len()];
        while let Some((b, a)) = waiting.pop() {
            queued[b * atoms + a] = false;
            // States leading into block b on atom a.
            let mut xs: Vec<usize> = Vec::new();
            for &t in &blocks[b] {
                xs.extend_from_slice(&preds[start[key(a, t)]..start[key(a, t) + 1]]);
            }
            for &s in &xs {
                if !marked[s] {
                    marked[s] = true;
                    let y = block_of[s];
                    if hit[y] == 0 {
                        touched.push(y);
                    }
                    hit[y] += 1;
                }
            }
            for &y in &touched {
                if hit[y] < blocks[y].len() {
                    // Split y: the marked members move to a new block.
                    let (inside, outside): (Vec<usize>, Vec<usize>) = blocks[y].iter().partition(|&&s| marked[s]);
                    let z = blocks.len();
                    for &s in &inside {
                        block_of[s] = z;
                    }
                    blocks[y] = outside;
                    blocks.push(inside);
                    hit.push(0);
                    queued.resize(blocks.len() * atoms, false);
                    for c in 0..atoms {
                        let pick = if queued[y * atoms + c] || blocks[z].len() <= blocks[y].len() { z } else { y };
                        if !queued[pick * atoms + c] {
                            queued[pick * atoms + c] = true;
                            waiting.push((pick, c));
                        }
                    }
                }
                hit[y] = 0;
            }
            touched.clear();
            for &s in &xs {
                marked[s] = false;
            }
        }
        block_of.truncate(n);
        block_of
    }

    /// Only states reachable from the start that can reach acceptance (the start kept as 0).
    fn trimmed(&self) -> Dfa {
        let n = self.len();
        let mut reach = vec![false; n];
        let mut stack = vec![0];
        reach[0] = true;
        while let Some(s) = stack.pop() {
            for &(_, _, t) in &self.trans[s] {
                if !reach[t] {
                    reach[t] = true;
                    stack.push(t);
                }
            }
        }
        // Live states: those reaching acceptance, found backwards from the accepting ones.
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for s in 0..n {
            for &(_, _, t) in &self.trans[s] {
                preds[t].push(s);
            }
        }
        let mut live = self.accept.clone();
        let mut stack: Vec<usize> = (0..n).filter(|&s| live[s]).collect();
        while let Some(t) = stack.pop() {
            for &s in &preds[t] {
                if !live[s] {
                    live[s] = true;
                    stack.push(s);
                }
            }
        }
        if !live[0] {
            return Dfa::empty();
        }
        let keep: Vec<usize> = (0..n).filter(|&s| reach[s] && live[s]).collect();
        let mut idx = vec![usize::MAX; n];
        for (i, &s) in keep.iter().enumerate() {
            idx[s] = i;
        }
        Dfa {
            trans: keep
                .iter()
                .map(|&s| {
                    self.trans[s].iter().filter(|t| idx[t.2] != usize::MAX).map(|&(l, h, t)| (l, h, idx[t])).collect()
                })
                .collect(),
            accept: keep.iter().map(|&s| self.accept[s]).collect(),
        }
    }
}

/// The elementary intervals of two transition lists: `(lo, hi, target in a, target in b)`.
fn overlay(a: &[(u32, u32, usize)], b: &[(u32, u32, usize)]) -> Vec<(u32, u32, Option<usize>, Option<usize>)> {
    let mut cuts: Vec<u32> = Vec::new();
    for &(lo, hi, _) in a.iter().chain(b) {
        cuts.push(lo);
        cuts.push(hi + 1);
    }
    cuts.sort_unstable();
    cuts.dedup();
    let find = |l: &[(u32, u32, usize)], c: u32| {
        let i = l.partition_point(|t| t.1 < c);
        l.get(i).filter(|t| t.0 <= c).map(|t| t.2)
    };
    let mut out: Vec<(u32, u32, Option<usize>, Option<usize>)> = Vec::new();
    for w in cuts.windows(2) {
        let (lo, hi) = (w[0], w[1] - 1);
        let (ta, tb) = (find(a, lo), find(b, lo));
        if ta.is_none() && tb.is_none() {
            continue;
        }
        match out.last_mut() {
            Some(l) if l.1 + 1 == lo && l.2 == ta && l.3 == tb => l.1 = hi,
            _ => out.push((lo, hi, ta, tb)),
        }
    }
    out
}

/// A Thompson NFA: epsilon moves and range moves per state.
#[derive(Default)]
struct Nfa {
    eps: Vec<Vec<usize>>,
    moves: Vec<Vec<(u32, u32, usize)>>,
}

impl Nfa {
    fn state(&mut self) -> Result<usize, String> {
        if self.eps.len() >= MAX_STATES * 4 {
            return Err("the pattern is too large to combine with other constraints".into());
        }
        self.eps.push(vec![]);
        self.moves.push(vec![]);
        Ok(self.eps.len() - 1)
    }

    /// `s` loops on every code point.
    fn any_loop(&mut self, s: usize) {
        for &(lo, hi) in &UNIVERSE {
            self.moves[s].push((lo, hi, s));
        }
    }

    /// A fragment for `h`: its entry and exit states.
    fn build(&mut self, h: &Hir) -> Result<(usize, usize), String> {
        match h.kind() {
            HirKind::Empty => {
                let s = self.state()?;
                Ok((s, s))
            }
            HirKind::Literal(lit) => {
                let text = std::str::from_utf8(&lit.0).map_err(|_| "non-UTF-8 literal in pattern".to_string())?;
                let start = self.state()?;
                let mut cur = start;
                for c in text.chars() {
                    let n = self.state()?;
                    self.moves[cur].push((c as u32, c as u32, n));
                    cur = n;
                }
                Ok((start, cur))
            }
            HirKind::Class(Class::Unicode(u)) => {
                let (s, e) = (self.state()?, self.state()?);
                for r in u.ranges() {
                    self.moves[s].push((r.start() as u32, r.end() as u32, e));
                }
                Ok((s, e))
            }
            HirKind::Class(Class::Bytes(_)) => Err("byte classes are not supported in patterns".into()),
            HirKind::Look(_) => Err("anchors or word boundaries inside a pattern are not supported".into()),
            HirKind::Capture(c) => self.build(&c.sub),
            HirKind::Concat(v) => {
                let start = self.state()?;
                let mut cur = start;
                for x in v {
                    let (s, e) = self.build(x)?;
                    self.eps[cur].push(s);
                    cur = e;
                }
                Ok((start, cur))
            }
            HirKind::Alternation(v) => {
                let (start, end) = (self.state()?, self.state()?);
                for x in v {
                    let (s, e) = self.build(x)?;
                    self.eps[start].push(s);
                    self.eps[e].push(end);
                }
                Ok((start, end))
            }
            HirKind::Repetition(r) => {
                let start = self.state()?;
                let mut cur = start;
                for _ in 0..r.min {
                    let (s, e) = self.build(&r.sub)?;
                    self.eps[cur].push(s);
                    cur = e;
                }
                match r.max {
                    None => {
                        let l = self.state()?;
                        self.eps[cur].push(l);
                        let (s, e) = self.build(&r.sub)?;
                        self.eps[l].push(s);
                        self.eps[e].push(l);
                        cur = l;
                    }
                    Some(max) => {
                        let end = self.state()?;
                        for _ in r.min..max {
                            self.eps[cur].push(end);
                            let (s, e) = self.build(&r.sub)?;
                            self.eps[cur].push(s);
                            cur = e;
                        }
                        self.eps[cur].push(end);
                        cur = end;
                    }
                }
                Ok((start, cur))
            }
        }
    }

    fn closure(&self, set: &mut Vec<usize>) {
        let mut i = 0;
        while i < set.len() {
            for &n in &self.eps[set[i]] {
                if !set.contains(&n) {
                    set.push(n);
                }
            }
            i += 1;
        }
        set.sort_unstable();
    }

    /// Subset construction from `start`; `end` is the accepting NFA state.
    fn determinize(&self, start: usize, end: usize) -> Result<Dfa, String> {
        let mut first = vec![start];
        self.closure(&mut first);
        let mut ids: FastMap<Vec<usize>, usize> = FastMap::default();
        ids.insert(first.clone(), 0);
        let mut sets = vec![first];
        let mut d = Dfa { trans: vec![], accept: vec![] };
        let mut i = 0;
        while i < sets.len() {
            let moves: Vec<(u32, u32, usize)> = sets[i].iter().flat_map(|&s| self.moves[s].iter().copied()).collect();
            let mut cuts: Vec<u32> = moves.iter().flat_map(|&(lo, hi, _)| [lo, hi + 1]).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut row: Vec<(u32, u32, usize)> = Vec::new();
            for w in cuts.windows(2) {
                let (lo, hi) = (w[0], w[1] - 1);
                let mut target: Vec<usize> = moves.iter().filter(|m| m.0 <= lo && hi <= m.1).map(|m| m.2).collect();
                if target.is_empty() {
                    continue;
                }
                target.sort_unstable();
                target.dedup();
                self.closure(&mut target);
                let id = match ids.get(&target) {
                    Some(&id) => id,
                    None => {
                        if sets.len() >= MAX_STATES {
                            return Err("the pattern has too many states to combine with other constraints".into());
                        }
                        sets.push(target.clone());
                        ids.insert(target, sets.len() - 1);
                        sets.len() - 1
                    }
                };
                match row.last_mut() {
                    Some(l) if l.2 == id && l.1 + 1 == lo => l.1 = hi,
                    _ => row.push((lo, hi, id)),
                }
            }
            d.trans.push(row);
            d.accept.push(sets[i].contains(&end));
            i += 1;
        }
        Ok(d.minimized())
    }
}

impl Converter<'_> {
    /// Rules for the JSON text of the strings `d` accepts (to go between the quotes), one
    /// rule per state, named after `name`; returns the expression for the start state.
    /// Characters JSON must escape are written in their canonical escaped form.
    pub(super) fn dfa_rule(&mut self, d: &Dfa, name: &str) -> rules::Expr {
        if d.is_empty() {
            return class_to_item(&[]);
        }
        let base = rule_name_chars(name);
        let mut prefix = format!("{base}-s");
        let mut k = 0;
        while (0..d.len()).any(|i| self.has_rule(&format!("{prefix}{i}"))) {
            k += 1;
            prefix = format!("{base}{k}-s");
        }
        let leaf = |s: usize| d.moves(s).is_empty();
        // Classes whose text is long are rules of their own, by text.
        let mut classes: HashMap<String, String> = HashMap::new();
        for s in 0..d.len() {
            if leaf(s) {
                continue;
            }
            let mut alts = Vec::new();
            for (t, ranges) in d.moves(s) {
                let mut cls = class_to_item(&ranges);
                let text = class_to_gbnf(&ranges);
                if text.len() > 80 {
                    let n = classes.len();
                    let name = match classes.get(&text) {
                        Some(name) => name.clone(),
                        None => {
                            let name = self.add_rule_ir(&format!("{prefix}c{n}"), rules::seq(vec![cls]));
                            classes.insert(text, name.clone());
                            name
                        }
                    };
                    cls = self.r(&name);
                }
                let mut items = vec![cls];
                if !leaf(t) {
                    items.push(self.r(&format!("{prefix}{t}")));
                }
                alts.push(Seq::new(items));
            }
            if d.is_accepting(s) {
                alts.push(Seq::new(vec![rules::Expr::lit("")]));
            }
            self.add_rule_ir(&format!("{prefix}{s}"), alts);
        }
        if leaf(0) {
            rules::Expr::lit("")
        } else {
            self.r(&format!("{prefix}0"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_anchors_and_search() {
        let d = Dfa::from_pattern("^[a-z_]+$").unwrap();
        assert!(d.accepts("abc_") && !d.accepts("") && !d.accepts("aB"));
        let d = Dfa::from_pattern("[0-9a-f]+").unwrap();
        assert!(d.accepts("xx0yy") && !d.accepts("xyz") && !d.accepts(""));
        let d = Dfa::from_pattern("^a|b$").unwrap();
        assert!(d.accepts("ax") && d.accepts("xb") && !d.accepts("xa"));
        let d = Dfa::from_pattern("^\\d{2,3}$").unwrap();
        assert!(d.accepts("12") && d.accepts("123") && !d.accepts("1") && !d.accepts("1234"));
        assert!(Dfa::from_pattern("^(?=a)").is_err());
    }

    #[test]
    fn set_operations() {
        let word = Dfa::from_pattern("^[a-z]+$").unwrap();
        let names = Dfa::literals(&["ab", "abc"]);
        let rest = word.minus(&names).unwrap();
        assert!(rest.accepts("a") && rest.accepts("abcd") && !rest.accepts("ab") && !rest.accepts("abc"));
        let not_word = Dfa::any_string().minus(&word).unwrap();
        assert!(not_word.accepts("") && not_word.accepts("A") && !not_word.accepts("zz"));
        let twelve = Dfa::from_pattern("[0-9a-f]+").unwrap().intersect(&Dfa::length(12, Some(12)).unwrap()).unwrap();
        assert!(twelve.accepts("0123456789ab") && twelve.accepts("zzzzzzzzzzz0") && !twelve.accepts("zzzzzzzzzzzz"));
        assert!(!twelve.accepts("0123456789abc"));
        assert!(word.intersect(&Dfa::literals(&["A"])).unwrap().is_empty());
        assert!(Dfa::literals(&["", "a"]).accepts(""));
    }

    /// Moore's refinement, round by round: the number of classes of a trimmed DFA.
    fn moore_classes(d: &Dfa) -> usize {
        let mut block: Vec<usize> = d.accept.iter().map(|&a| usize::from(a)).collect();
        let mut count = 0;
        loop {
            let mut sigs: HashMap<(usize, Row), usize> = HashMap::new();
            let mut next = vec![0; d.len()];
            for s in 0..d.len() {
                let mut row: Vec<(u32, u32, usize)> = Vec::new();
                for &(lo, hi, t) in &d.trans[s] {
                    match row.last_mut() {
                        Some(l) if l.2 == block[t] && l.1 + 1 == lo => l.1 = hi,
                        _ => row.push((lo, hi, block[t])),
                    }
                }
                let k = sigs.len();
                next[s] = *sigs.entry((block[s], row)).or_insert(k);
            }
            block = next;
            if sigs.len() == count {
                return count;
            }
            count = sigs.len();
        }
    }

    #[test]
    fn hopcroft_matches_moore() {
        let pats = [
            "^[a-z_]+$",
            "[0-9a-f]+",
            "^a|b$",
            "^\\d{2,3}$",
            "^[0-9a-zA-Z_-]{1,40}$",
            "^(a|b|ab)*$",
            "ab+c",
            "^(x[0-9]|y[a-f])*z?$",
            "^.{3,7}$",
            "^[^@]+@[^@]+\\.[a-z]{2,}$",
            "é+",
            "^(a*b*)*c$",
            "",
        ];
        let mut dfas: Vec<Dfa> = pats.iter().map(|p| Dfa::from_pattern(p).unwrap()).collect();
        dfas.push(Dfa::literals(&["ab", "abc", "b", "", "ba"]));
        dfas.push(Dfa::length(2, Some(30)).unwrap());
        let n = dfas.len();
        for i in 0..n {
            for j in 0..n {
                for d in [dfas[i].intersect(&dfas[j]), dfas[i].minus(&dfas[j])].into_iter().flatten() {
                    assert_eq!(d.len(), moore_classes(&d.trimmed()).max(1), "{i} {j}");
                    // Already minimal: minimizing again changes nothing.
                    assert_eq!(d.minimized(), d);
                }
            }
        }
    }

    #[test]
    fn minimal() {
        // `[ab]*` needs one state however it is written.
        assert_eq!(Dfa::from_pattern("^(a|b|ab)*$").unwrap().len(), 1);
        assert_eq!(Dfa::any_string().minus(&Dfa::empty()).unwrap().len(), 1);
    }
}
