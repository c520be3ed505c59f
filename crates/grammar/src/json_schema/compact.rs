//! Strict mode's grammar text, made small: rules with the same body (after their references
//! are made the same) are merged, and long rule names (llama.cpp's construction names every
//! rule after its whole property path) are replaced by short ones. The language is
//! unchanged; the text the grammar parser reads is about a third as long for the largest
//! schemas, and it has fewer rules to build.

use std::collections::HashSet;

use crate::fast_hash::FastMap;

/// A rule body as pieces: text (an interned id with [`TEXT`] set) or a rule reference (its
/// index).
type Body = Vec<u32>;

/// Marks a piece of text in a [`Body`].
const TEXT: u32 = 1 << 31;

/// Names at most this long are kept (the built-in rules: `space`, `char`, `value`, ...).
const KEEP: usize = 12;

/// Splits a GBNF rule body into text and rule references (words outside literals, character
/// classes, repetition counts and token items); `None` names an unknown rule.
fn split<'a>(body: &'a str, index: &FastMap<&str, u32>, texts: &mut FastMap<&'a str, u32>) -> Option<Body> {
    let b = body.as_bytes();
    // About one piece per 8 bytes of body (names and the text between them): sized once
    // instead of grown piece by piece.
    let mut out = Vec::with_capacity(b.len() / 8 + 2);
    let mut text = |t: &'a str, out: &mut Body| {
        let n = texts.len() as u32;
        out.push(TEXT | *texts.entry(t).or_insert(n));
    };
    let mut text_start = 0;
    let mut i = 0;
    let skip_to = |mut i: usize, close: u8| {
        while i < b.len() && b[i] != close {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        i + 1
    };
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_to(i + 1, b'"'),
            b'[' => i = skip_to(i + 1, b']'),
            b'{' => i = skip_to(i + 1, b'}'),
            b'<' => i = skip_to(i + 1, b'>'),
            c if c.is_ascii_alphanumeric() || c == b'-' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'-') {
                    i += 1;
                }
                if text_start < start {
                    text(&body[text_start..start], &mut out);
                }
                out.push(*index.get(&body[start..i])?);
                text_start = i;
            }
            _ => i += 1,
        }
    }
    if text_start < b.len() {
        text(&body[text_start..], &mut out);
    }
    Some(out)
}

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

/// The grammar text of `rules` (sorted by name; start rule `root`), compacted; `None` when a body cannot be
/// read (the caller then writes the rules as they are).
pub(super) fn compact(rules: &[(&str, &str)]) -> Option<String> {
    let names: Vec<&str> = rules.iter().map(|r| r.0).collect();
    let index: FastMap<&str, u32> = names.iter().enumerate().map(|(i, n)| (*n, i as u32)).collect();
    let mut texts: FastMap<&str, u32> = FastMap::default();
    let mut bodies: Vec<Body> = Vec::with_capacity(names.len());
    for (_, b) in rules {
        bodies.push(split(b, &index, &mut texts)?);
    }
    let root = *index.get("root")?;
    let rep = merge_equal(&bodies, root);
    // New names: short ones for long names, avoiding every kept name.
    let mut new_name: Vec<String> = vec![String::new(); names.len()];
    let kept: HashSet<&str> =
        (0..names.len()).filter(|&i| rep[i] == i as u32 && names[i].len() <= KEEP).map(|i| names[i]).collect();
    let mut n = 0;
    for i in 0..names.len() {
        if rep[i] != i as u32 {
            continue;
        }
        new_name[i] = if names[i].len() <= KEEP {
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
    }
    let mut text_of: Vec<&str> = vec![""; texts.len()];
    for (t, id) in texts {
        text_of[id as usize] = t;
    }
    let mut out = String::with_capacity(rules.iter().map(|r| r.1.len()).sum::<usize>() / 2);
    for (i, body) in bodies.iter().enumerate() {
        if rep[i] != i as u32 {
            continue;
        }
        out.push_str(&new_name[i]);
        out.push_str(" ::= ");
        for &p in body {
            if p & TEXT != 0 {
                out.push_str(text_of[(p & !TEXT) as usize]);
            } else {
                out.push_str(&new_name[rep[p as usize] as usize]);
            }
        }
        out.push('\n');
    }
    Some(out)
}

/// For each rule, the rule it is merged into (itself when kept). Rules are finished after
/// the rules they reference (depth first, without recursion: grammars can be deep), and a
/// finished rule whose body, with references replaced by their representatives, equals an
/// earlier one's is merged into it: equal bodies over equal rules are the same language. A
/// reference back into an unfinished rule (recursion) stays as it is, so rules on a cycle
/// merge only when literally equal. The start rule is never merged away.
fn merge_equal(bodies: &[Body], root: u32) -> Vec<u32> {
    let n = bodies.len();
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
            let body = &bodies[r as usize];
            if let Some(off) = body[next..].iter().position(|&p| p & TEXT == 0 && state[p as usize] == 0) {
                let p = body[next + off];
                if let Some(top) = stack.last_mut() {
                    top.1 = next + off + 1;
                }
                state[p as usize] = 1;
                stack.push((p, 0));
                continue;
            }
            stack.pop();
            state[r as usize] = 2;
            let key: Body = body.iter().map(|&p| if p & TEXT != 0 { p } else { rep[p as usize] }).collect();
            if r == root {
                continue;
            }
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
    fn rules<'a>(list: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut v = list.to_vec();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
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
