//! llama.cpp's regex-to-GBNF translation for `pattern` (compat mode): a near 1:1 rewrite of
//! an anchored regex into GBNF syntax, merging literals and naming `{m,n}` sub-items.

use std::collections::HashMap;

use super::repetition;

const NON_LITERAL: &[u8] = b"|.()[]{}*+?^$";
const ESCAPED_NOT_IN_LITERALS: &[u8] = b"^$.[]()|{}*+?";

/// Callbacks into the converter: rule registration.
pub trait RuleSink {
    /// Adds a rule (renaming on conflict) and returns its name.
    fn add_rule(&mut self, name: &str, body: &str) -> String;
}

struct Tr<'a, S: RuleSink> {
    p: Vec<char>,
    i: usize,
    name: &'a str,
    sink: &'a mut S,
    sub_rule_ids: HashMap<String, String>,
    dot_rule: &'a str,
}

/// Translates `pattern` (which must be `^...$`) into the body of a JSON-string rule.
pub fn pattern_to_rule<S: RuleSink>(pattern: &str, name: &str, sink: &mut S) -> Result<String, String> {
    if !(pattern.starts_with('^') && pattern.ends_with('$') && pattern.len() >= 2) {
        return Err("pattern must start with \"^\" and end with \"$\"".into());
    }
    let inner: Vec<char> = pattern[1..pattern.len() - 1].chars().collect();
    let mut t = Tr { p: inner, i: 0, name, sink, sub_rule_ids: HashMap::new(), dot_rule: "[^\\x0A\\x0D]" };
    let (s, lit) = t.transform(0)?;
    Ok(format!("\"\\\"\" ({}) \"\\\"\" space", to_rule(&s, lit)))
}

fn to_rule(s: &str, lit: bool) -> String {
    if lit {
        format!("\"{s}\"")
    } else {
        s.to_string()
    }
}

impl<S: RuleSink> Tr<'_, S> {
    fn transform(&mut self, depth: usize) -> Result<(String, bool), String> {
        let start = self.i;
        let len = self.p.len();
        let mut seq: Vec<(String, bool)> = Vec::new();
        while self.i < len {
            let c = self.p[self.i];
            match c {
                '.' => {
                    let r = self.sink.add_rule("dot", self.dot_rule);
                    seq.push((r, false));
                    self.i += 1;
                }
                '(' => {
                    self.i += 1;
                    if self.i < len && self.p[self.i] == '?' {
                        return Err(format!("unsupported pattern syntax \"?\" at index {}", self.i));
                    }
                    let (s, lit) = self.transform(depth + 1)?;
                    seq.push((format!("({})", to_rule(&s, lit)), false));
                }
                ')' => {
                    self.i += 1;
                    if !(start > 0 && self.p[start - 1] == '(') {
                        return Err("unbalanced parentheses".into());
                    }
                    return Ok(join_seq(seq));
                }
                '[' => {
                    let mut sq = String::from("[");
                    self.i += 1;
                    while self.i < len && self.p[self.i] != ']' {
                        if self.p[self.i] == '\\' {
                            sq.push('\\');
                            if self.i + 1 < len {
                                sq.push(self.p[self.i + 1]);
                            }
                            self.i += 2;
                        } else {
                            sq.push(self.p[self.i]);
                            self.i += 1;
                        }
                    }
                    if self.i >= len {
                        return Err("unbalanced square brackets".into());
                    }
                    sq.push(']');
                    self.i += 1;
                    seq.push((sq, false));
                }
                '|' => {
                    seq.push(("|".into(), false));
                    self.i += 1;
                }
                '*' | '+' | '?' => {
                    let last = seq.pop().ok_or("nothing to repeat")?;
                    seq.push((format!("{}{c}", to_rule(&last.0, last.1)), false));
                    self.i += 1;
                }
                '{' => {
                    let mut body = String::new();
                    self.i += 1;
                    while self.i < len && self.p[self.i] != '}' {
                        body.push(self.p[self.i]);
                        self.i += 1;
                    }
                    if self.i >= len {
                        return Err("unbalanced curly brackets".into());
                    }
                    self.i += 1;
                    let nums: Vec<&str> = body.split(',').map(|s| s.trim()).collect();
                    let parse = |s: &str| s.parse::<usize>().map_err(|_| format!("invalid quantifier {{{body}}}"));
                    let (min, max) = match nums.len() {
                        1 => {
                            let v = parse(nums[0])?;
                            (v, Some(v))
                        }
                        2 => (
                            if nums[0].is_empty() { 0 } else { parse(nums[0])? },
                            if nums[1].is_empty() { None } else { Some(parse(nums[1])?) },
                        ),
                        _ => return Err(format!("invalid quantifier {{{body}}}")),
                    };
                    let (sub, lit) = seq.pop().ok_or("nothing to repeat")?;
                    let item = if lit {
                        format!("\"{sub}\"")
                    } else {
                        match self.sub_rule_ids.get(&sub) {
                            Some(id) => id.clone(),
                            None => {
                                let id =
                                    self.sink.add_rule(&format!("{}-{}", self.name, self.sub_rule_ids.len() + 1), &sub);
                                self.sub_rule_ids.insert(sub.clone(), id.clone());
                                id
                            }
                        }
                    };
                    seq.push((repetition(&item, min, max, None), false));
                }
                _ => {
                    let mut lit = String::new();
                    while self.i < len {
                        let ch = self.p[self.i];
                        if ch == '\\' && self.i + 1 < len {
                            let next = self.p[self.i + 1];
                            if next.is_ascii() && ESCAPED_NOT_IN_LITERALS.contains(&(next as u8)) {
                                lit.push(next);
                            } else {
                                lit.push('\\');
                                lit.push(next);
                            }
                            self.i += 2;
                        } else if ch == '"' {
                            lit.push_str("\\\"");
                            self.i += 1;
                        } else if !is_non_literal(ch)
                            && (self.i == len - 1
                                || lit.is_empty()
                                || self.p[self.i + 1] == '.'
                                || !is_non_literal(self.p[self.i + 1]))
                        {
                            lit.push(ch);
                            self.i += 1;
                        } else {
                            break;
                        }
                    }
                    if lit.is_empty() {
                        return Err(format!("unsupported character {c:?} in pattern"));
                    }
                    seq.push((lit, true));
                }
            }
        }
        if depth > 0 {
            return Err("unbalanced parentheses".into());
        }
        Ok(join_seq(seq))
    }
}

fn is_non_literal(c: char) -> bool {
    c.is_ascii() && NON_LITERAL.contains(&(c as u8))
}

fn join_seq(seq: Vec<(String, bool)>) -> (String, bool) {
    let mut ret: Vec<(String, bool)> = Vec::new();
    for (s, lit) in seq {
        match ret.last_mut() {
            Some((prev, true)) if lit => prev.push_str(&s),
            _ => ret.push((s, lit)),
        }
    }
    if ret.len() == 1 {
        return ret.pop().unwrap();
    }
    (ret.iter().map(|(s, l)| to_rule(s, *l)).collect::<Vec<_>>().join(" "), false)
}
