//! Strict mode's rules, made small: rules with the same body (after their references are
//! made the same) are merged, and long rule names (llama.cpp's construction names every rule
//! after its whole property path) are replaced by short ones. The language is unchanged; the
//! printed text is about a third as long for the largest schemas, and there are fewer rules
//! to build. Works on the rule IR: a body's references are its [`crate::rules::Expr::Ref`] items.

use std::collections::HashSet;

use crate::fast_hash::FastMap;
use crate::rules::{Body, RuleId, RuleSet};

/// Names at most this long are kept (the built-in rules: `space`, `char`, `value`, ...).
const KEEP: usize = 12;

/// The short name of the `n`-th renamed rule.
fn short_name(mut n: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut s = String::from("r");
    loop {
        s.push(DIGITS[n % 36] as char);
        n /= 36;
        if n == 0 {
            return s;
        }
    }
}

/// `set` (one definition per rule, sorted by name; start rule `root`) compacted; `None` when
/// a rule is referenced but not defined (the caller then keeps the rules as they are).
pub(super) fn compact(set: &RuleSet) -> Option<RuleSet> {
    if !set.is_closed() {
        return None;
    }
    let root = set.get("root")?;
    let defs = set.defs();
    // Definition index of each rule id.
    let mut def_of = vec![u32::MAX; set.n_names()];
    for (i, (id, _)) in defs.iter().enumerate() {
        def_of[id.0 as usize] = i as u32;
    }
    let names: Vec<&str> = defs.iter().map(|(id, _)| set.name(*id)).collect();
    let refs: Vec<Vec<u32>> = defs
        .iter()
        .map(|(_, body)| {
            let mut v = Vec::new();
            body.iter().flat_map(|s| &s.items).for_each(|e| e.for_each_ref(&mut |r| v.push(def_of[r.0 as usize])));
            v
        })
        .collect();
    let rep = merge_equal(defs, &refs, &def_of, def_of[root.0 as usize]);
    // New names: short ones for long names, avoiding every kept name.
    let kept: HashSet<&str> =
        (0..names.len()).filter(|&i| rep[i] == i as u32 && names[i].len() <= KEEP).map(|i| names[i]).collect();
    let mut out = RuleSet::new();
    let mut new_id: Vec<RuleId> = vec![RuleId(u32::MAX); names.len()];
    let mut n = 0;
    for i in 0..names.len() {
        if rep[i] != i as u32 {
            continue;
        }
        let name = if names[i].len() <= KEEP {
            names[i].to_string()
        } else {
            loop {
                let s = short_name(n);
                n += 1;
                if !kept.contains(s.as_str()) {
                    break s;
                }
            }
        };
        new_id[i] = out.id(&name);
    }
    for (i, (_, body)) in defs.iter().enumerate() {
        if rep[i] != i as u32 {
            continue;
        }
        let body = map_body(body, &mut |r| new_id[rep[def_of[r.0 as usize] as usize] as usize]);
        out.define(new_id[i], body);
    }
    Some(out)
}

fn map_body(body: &Body, f: &mut impl FnMut(RuleId) -> RuleId) -> Body {
    body.iter().map(|s| s.map_refs(f)).collect()
}

/// For each definition, the definition it is merged into (itself when kept). Rules are
/// finished after the rules they reference (depth first, without recursion: grammars can be
/// deep), and a finished rule whose body, with references replaced by their
/// representatives, equals an earlier one's is merged into it: equal bodies over equal rules
/// are the same language. A reference back into an unfinished rule (recursion) stays as it
/// is, so rules on a cycle merge only when literally equal. The start rule is never merged
/// away. `refs[i]`: the definitions definition `i` references, in order.
fn merge_equal(defs: &[(RuleId, Body)], refs: &[Vec<u32>], def_of: &[u32], root: u32) -> Vec<u32> {
    let n = defs.len();
    let mut rep: Vec<u32> = (0..n as u32).collect();
    let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 finished
    let mut seen: FastMap<Body, u32> = FastMap::default();
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for start in 0..n as u32 {
        if state[start as usize] != 0 {
            continue;
        }
        state[start as usize] = 1;
        stack.push((start, 0));
        while let Some(&(r, next)) = stack.last() {
            let out = &refs[r as usize];
            if let Some(off) = out[next..].iter().position(|&p| state[p as usize] == 0) {
                let p = out[next + off];
                if let Some(top) = stack.last_mut() {
                    top.1 = next + off + 1;
                }
                state[p as usize] = 1;
                stack.push((p, 0));
                continue;
            }
            stack.pop();
            state[r as usize] = 2;
            if r == root {
                continue;
            }
            // References as representatives' definition indexes, so the key is the same
            // whatever the rules were called.
            let key = map_body(&defs[r as usize].1, &mut |x| RuleId(rep[def_of[x.0 as usize] as usize]));
            match seen.get(&key) {
                Some(&j) => rep[r as usize] = j,
                None => {
                    seen.insert(key, r);
                }
            }
        }
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `list` sorted by name, as the converter hands its rules over.
    fn rules(list: &[(&str, &str)]) -> RuleSet {
        let mut v = list.to_vec();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let text: String = v.iter().map(|(n, b)| format!("{n} ::= {b}\n")).collect();
        crate::parse::parse_rules(&text, None).unwrap()
    }

    fn compact(set: &RuleSet) -> Option<String> {
        super::compact(set).map(|s| s.to_gbnf())
    }

    #[test]
    fn merges_equal_rules_and_shortens_long_names() {
        let r = rules(&[
            ("root", "a-long-rule-name-one | a-long-rule-name-two \"x y\" [a-z]{2,3}"),
            ("a-long-rule-name-one", "leaf-number-one-kv space"),
            ("a-long-rule-name-two", "leaf-number-two-kv space"),
            ("leaf-number-one-kv", "\"\\\"k\\\"\" [^\\]a] "),
            ("leaf-number-two-kv", "\"\\\"k\\\"\" [^\\]a] "),
            ("space", "| \" \""),
        ]);
        let out = compact(&r).unwrap();
        assert_eq!(out.lines().count(), 4, "{out}");
        assert!(out.contains("root ::= r0 | r0 \"x y\" [a-z]{2,3}\n"), "{out}");
        assert!(out.contains("r0 ::= r1 space\n"), "{out}");
        assert!(out.contains("space ::= | \" \"\n"), "{out}");
        crate::Grammar::parse(&out, "root").unwrap();
    }

    #[test]
    fn the_start_rule_keeps_its_name() {
        let r = rules(&[
            ("root", "\"a\" other-rule-with-a-long-name"),
            ("other-rule-with-a-long-name", "\"a\" other-rule-with-a-long-name | \"b\""),
            ("x", "root"),
        ]);
        let out = compact(&r).unwrap();
        assert!(out.contains("root ::= \"a\" r0\n"), "{out}");
        crate::Grammar::parse(&out, "root").unwrap();
        // An unknown reference: left to the caller.
        assert!(compact(&rules(&[("root", "missing")])).is_none());
    }

    #[test]
    fn short_names_skip_kept_ones() {
        let r = rules(&[("root", "r0 | long-name-number-one"), ("r0", "\"a\""), ("long-name-number-one", "\"b\"")]);
        let out = compact(&r).unwrap();
        assert!(out.contains("r1 ::= \"b\""), "{out}");
        crate::Grammar::parse(&out, "root").unwrap();
    }
}
