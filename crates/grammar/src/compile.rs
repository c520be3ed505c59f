//! From parsed rules to a runnable [`Grammar`]: checks the start rule, rejects left recursion
//! (through nullable rules too), and flattens rules into one element array.

use std::sync::Arc;

use crate::error::{BuildError, ParseError};
use crate::grammar::{Elem, Grammar};
use crate::parse::{line_col, parse_gbnf, Item, ParsedGrammar, TokenLookup};
use crate::rules::{self, RuleSet};
use crate::stacks::StackArena;

impl Grammar {
    /// Parses GBNF text and builds it with start rule `start` (llama.cpp uses `root`).
    pub fn parse(text: &str, start: &str) -> Result<Arc<Grammar>, BuildError> {
        Self::parse_with_tokens(text, start, None)
    }

    /// Like [`Grammar::parse`], resolving `<text>` token items through `tokens`.
    pub fn parse_with_tokens(
        text: &str,
        start: &str,
        tokens: Option<&dyn TokenLookup>,
    ) -> Result<Arc<Grammar>, BuildError> {
        Self::checked(parse_gbnf(text, tokens)?, start)
    }

    /// Builds rule set `set` with start rule `start`: the grammar its printed text parses
    /// to, without printing it.
    pub fn from_rules(set: &RuleSet, start: &str) -> Result<Arc<Grammar>, BuildError> {
        let parsed = rules::lower(set).map_err(|reason| {
            // Where the text would have said it: its end.
            let text = set.to_gbnf();
            let (line, column) = line_col(&text, text.len());
            ParseError { line, column, reason }
        })?;
        Self::checked(parsed, start)
    }

    /// Builds `parsed` and checks that its start state can be expanded.
    fn checked(parsed: ParsedGrammar, start: &str) -> Result<Arc<Grammar>, BuildError> {
        let grammar = Arc::new(build(parsed, start)?);
        // The automaton's first state is the start rule expanded: a grammar whose expansion
        // alone spends the work budget could never be followed, so it is refused here.
        let mut arena = StackArena::new(grammar.clone());
        arena.initial(&mut Vec::new());
        if arena.exhausted() {
            return Err(BuildError::TooAmbiguous(start.to_string()));
        }
        Ok(grammar)
    }
}

/// Validates and flattens parsed rules.
pub fn build(parsed: ParsedGrammar, start: &str) -> Result<Grammar, BuildError> {
    let ParsedGrammar { rules, classes, symbol_ids } = parsed;
    let rules: Vec<Vec<Vec<Item>>> = rules
        .into_iter()
        .map(|r| r.ok_or_else(|| ParseError { line: 0, column: 0, reason: "undefined rule".into() }))
        .collect::<Result<_, _>>()?;
    let Some(&start_id) = symbol_ids.get(start) else {
        return Err(BuildError::MissingStart(start.to_string()));
    };
    if start_id as usize >= rules.len() {
        return Err(BuildError::MissingStart(start.to_string()));
    }
    let nullable = nullable_rules(&rules);
    // Both checks follow the same leftmost references: found once.
    let edges = leftmost_edges(&rules, &nullable);
    if let Some(r) = left_recursive_rule(&edges) {
        let name = symbol_ids.iter().find(|(_, &v)| v == r).map(|(k, _)| k.clone()).unwrap_or_default();
        return Err(BuildError::LeftRecursion(name));
    }
    if let Some(r) = too_deep_rule(&edges) {
        let name = symbol_ids.iter().find(|(_, &v)| v == r).map(|(k, _)| k.clone()).unwrap_or_default();
        return Err(BuildError::TooDeep { rule: name, limit: MAX_LEFTMOST_DEPTH });
    }
    // Every item, and an end per alternative.
    let n_elems = rules.iter().flatten().map(|alt| alt.len() + 1).sum();
    let mut elems = Vec::with_capacity(n_elems);
    let mut starts = Vec::with_capacity(rules.len());
    for alts in &rules {
        let mut s = Vec::with_capacity(alts.len());
        for alt in alts {
            s.push(elems.len() as u32);
            for it in alt {
                elems.push(match *it {
                    Item::Char(c) => Elem::Char(c),
                    Item::Ref(r) => Elem::Ref(r),
                    Item::Token(t) => Elem::Token(t),
                    Item::NotToken(t) => Elem::NotToken(t),
                });
            }
            elems.push(Elem::End);
        }
        starts.push(s);
    }
    Ok(Grammar { elems, rules: starts, classes, symbol_ids, start: start_id })
}

/// Rules that can derive the empty string: the least fixed point, found with a worklist (an
/// alternative made only of references waits for each of them; a rule found nullable releases
/// the alternatives that mention it), linear in the grammar's size.
fn nullable_rules(rules: &[Vec<Vec<Item>>]) -> Vec<bool> {
    let mut nullable = vec![false; rules.len()];
    // Per alternative made only of references: its rule and how many of them are not yet known
    // nullable (each occurrence counted).
    let mut waiting: Vec<(u32, usize)> = Vec::new();
    // Per rule, the alternatives (indices into `waiting`) that reference it.
    let mut users: Vec<Vec<u32>> = vec![Vec::new(); rules.len()];
    let mut queue = Vec::new();
    for (i, alts) in rules.iter().enumerate() {
        for alt in alts {
            if !alt.iter().all(|it| matches!(it, Item::Ref(_))) {
                continue;
            }
            if alt.is_empty() {
                if !nullable[i] {
                    nullable[i] = true;
                    queue.push(i as u32);
                }
                continue;
            }
            let a = waiting.len() as u32;
            waiting.push((i as u32, alt.len()));
            for it in alt {
                if let Item::Ref(r) = it {
                    if let Some(u) = users.get_mut(*r as usize) {
                        u.push(a);
                    }
                }
            }
        }
    }
    while let Some(r) = queue.pop() {
        for &a in &users[r as usize] {
            let (rule, left) = &mut waiting[a as usize];
            *left -= 1;
            if *left == 0 && !nullable[*rule as usize] {
                nullable[*rule as usize] = true;
                queue.push(*rule);
            }
        }
    }
    nullable
}

/// Longest chain of leftmost rule references accepted. Expanding a stack follows such chains
/// recursively, so a longer one (only machine-made grammars have them) is refused up front.
pub const MAX_LEFTMOST_DEPTH: usize = 2000;

/// Rule -> the rules that can appear leftmost in it (a leftmost reference may be preceded
/// by nullable references).
fn leftmost_edges(rules: &[Vec<Vec<Item>>], nullable: &[bool]) -> Vec<Vec<u32>> {
    rules
        .iter()
        .map(|alts| {
            let mut out = Vec::new();
            for alt in alts {
                for it in alt {
                    match *it {
                        Item::Ref(r) => {
                            out.push(r);
                            if !nullable[r as usize] {
                                break;
                            }
                        }
                        _ => break,
                    }
                }
            }
            out
        })
        .collect()
}

/// A rule starting a leftmost-reference chain longer than [`MAX_LEFTMOST_DEPTH`] (the
/// references form a DAG here: left recursion was refused before).
fn too_deep_rule(edges: &[Vec<u32>]) -> Option<u32> {
    // Longest path from each rule, by an iterative post-order DFS.
    let mut longest: Vec<Option<usize>> = vec![None; edges.len()];
    for root in 0..edges.len() {
        if longest[root].is_some() {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if *next < edges[node].len() {
                let child = edges[node][*next] as usize;
                *next += 1;
                if longest[child].is_none() {
                    stack.push((child, 0));
                }
            } else {
                let l = edges[node].iter().map(|&c| longest[c as usize].unwrap_or(0) + 1).max().unwrap_or(0);
                if l > MAX_LEFTMOST_DEPTH {
                    return Some(node as u32);
                }
                longest[node] = Some(l);
                stack.pop();
            }
        }
    }
    None
}

/// Finds a rule that reaches itself through leftmost positions (a leftmost reference may be
/// preceded by nullable references).
fn left_recursive_rule(edges: &[Vec<u32>]) -> Option<u32> {
    // Iterative DFS cycle detection (0 = new, 1 = on stack, 2 = done).
    let mut state = vec![0u8; edges.len()];
    for root in 0..edges.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if *next < edges[node].len() {
                let child = edges[node][*next] as usize;
                *next += 1;
                match state[child] {
                    0 => {
                        state[child] = 1;
                        stack.push((child, 0));
                    }
                    1 => return Some(child as u32),
                    _ => {}
                }
            } else {
                state[node] = 2;
                stack.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed point computed by repeated passes (the definition).
    fn nullable_by_passes(rules: &[Vec<Vec<Item>>]) -> Vec<bool> {
        let mut nullable = vec![false; rules.len()];
        loop {
            let mut changed = false;
            for (i, alts) in rules.iter().enumerate() {
                if !nullable[i]
                    && alts.iter().any(|alt| alt.iter().all(|it| matches!(it, Item::Ref(r) if nullable[*r as usize])))
                {
                    nullable[i] = true;
                    changed = true;
                }
            }
            if !changed {
                return nullable;
            }
        }
    }

    #[test]
    fn worklist_nullable_equals_the_fixed_point() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..500 {
            let n = 1 + next(12) as usize;
            let rules: Vec<Vec<Vec<Item>>> = (0..n)
                .map(|_| {
                    (0..1 + next(3))
                        .map(|_| {
                            (0..next(4))
                                .map(|_| if next(5) == 0 { Item::Char(0) } else { Item::Ref(next(n as u64) as u32) })
                                .collect()
                        })
                        .collect()
                })
                .collect();
            assert_eq!(nullable_rules(&rules), nullable_by_passes(&rules), "{rules:?}");
        }
    }
}
