//! From a rule set to the flat rules [`crate::compile::build`] checks and lays out, numbered
//! exactly as llama.cpp numbers the rules of the set's printed text: names by first mention
//! (a definition, then its body left to right), a helper rule per group when the group
//! opens and per repetition after its item (`{base}_{id}`), repetitions expanded as llama.cpp
//! expands them. So a set lowers to the grammar its text parses to, without the text.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{Body, Expr, RuleId, RuleSet};
use crate::grammar::CharClass;
use crate::parse::{Item, ParsedGrammar, MAX_REPETITIONS};

struct Lower<'s> {
    set: &'s RuleSet,
    out: ParsedGrammar,
    class_ids: HashMap<CharClass, u32>,
    /// Class ids of single ASCII characters (`u32::MAX`: not yet interned).
    ascii_class: [u32; 128],
    /// Symbol id of each rule name (`u32::MAX`: not mentioned yet).
    sym: Vec<u32>,
    /// Names mentioned, in order of their symbol ids' assignment: (symbol id, rule id).
    named: Vec<(u32, RuleId)>,
    /// Generated helper rules: (id, symbol id of the rule they were generated in).
    generated: Vec<(u32, u32)>,
    n_symbols: u32,
}

/// Lowers `set`; the error names what does not build (an undefined rule, a repetition past
/// llama.cpp's bound, a repetition of nothing).
pub(crate) fn lower(set: &RuleSet) -> Result<ParsedGrammar, String> {
    let mut l = Lower {
        set,
        out: ParsedGrammar::default(),
        class_ids: HashMap::new(),
        ascii_class: [u32::MAX; 128],
        sym: vec![u32::MAX; set.n_names()],
        named: Vec::new(),
        generated: Vec::new(),
        n_symbols: 0,
    };
    let mut buf = Vec::new();
    for (id, body) in set.defs() {
        let s = l.symbol(*id);
        l.alternates(body, s, s, &mut buf)?;
    }
    l.name_symbols();
    for (id, rule) in l.out.rules.iter().enumerate() {
        if rule.is_none() {
            let name = l.out.symbol_ids.iter().find(|(_, &v)| v as usize == id).map(|(k, _)| k.clone());
            return Err(format!("undefined rule identifier '{}'", name.unwrap_or_default()));
        }
    }
    let n = l.out.rules.len();
    if let Some((name, _)) = l.out.symbol_ids.iter().find(|(_, &id)| id as usize >= n) {
        return Err(format!("undefined rule identifier '{name}'"));
    }
    Ok(l.out)
}

impl Lower<'_> {
    fn symbol(&mut self, r: RuleId) -> u32 {
        let s = &mut self.sym[r.0 as usize];
        if *s == u32::MAX {
            *s = self.n_symbols;
            self.n_symbols += 1;
            self.named.push((*s, r));
        }
        *s
    }

    fn generate(&mut self, base: u32) -> u32 {
        let id = self.n_symbols;
        self.n_symbols += 1;
        self.generated.push((id, base));
        id
    }

    fn add_rule(&mut self, id: u32, alts: Vec<Vec<Item>>) {
        let id = id as usize;
        if self.out.rules.len() <= id {
            self.out.rules.resize(id + 1, None);
        }
        self.out.rules[id] = Some(alts);
    }

    fn class(&mut self, c: &CharClass) -> u32 {
        if let Some(&id) = self.class_ids.get(c) {
            return id;
        }
        let id = self.out.classes.len() as u32;
        self.out.classes.push(c.clone());
        self.class_ids.insert(c.clone(), id);
        id
    }

    fn char_class(&mut self, ch: u32) -> u32 {
        match self.ascii_class.get(ch as usize) {
            Some(&cached) if cached != u32::MAX => cached,
            Some(_) => {
                let id = self.class(&CharClass { ranges: vec![(ch, ch)], negated: false });
                self.ascii_class[ch as usize] = id;
                id
            }
            None => self.class(&CharClass { ranges: vec![(ch, ch)], negated: false }),
        }
    }

    /// Lowers `body` as rule `rule_id`'s alternatives (`base`: the defined rule helpers are
    /// named after). `buf` is scratch space for one alternative.
    fn alternates(&mut self, body: &Body, base: u32, rule_id: u32, buf: &mut Vec<Item>) -> Result<(), String> {
        let mut alts = Vec::with_capacity(body.len());
        for seq in body {
            let start = buf.len();
            for e in &seq.items {
                self.expr(e, base, buf)?;
            }
            alts.push(buf[start..].to_vec());
            buf.truncate(start);
        }
        self.add_rule(rule_id, alts);
        Ok(())
    }

    fn expr(&mut self, e: &Expr, base: u32, seq: &mut Vec<Item>) -> Result<(), String> {
        match e {
            Expr::Lit { chars, .. } => {
                for &c in chars {
                    let id = self.char_class(c);
                    seq.push(Item::Char(id));
                }
            }
            Expr::Class { class, .. } => {
                let id = self.class(class);
                seq.push(Item::Char(id));
            }
            Expr::Ref(r) => {
                let s = self.symbol(*r);
                seq.push(Item::Ref(s));
            }
            Expr::Token(t) => seq.push(Item::Token(*t)),
            Expr::NotToken(t) => seq.push(Item::NotToken(*t)),
            Expr::Group(body) => {
                let sub = self.generate(base);
                // The group's alternatives are built after the current sequence's items.
                let mut inner = Vec::new();
                self.alternates(body, base, sub, &mut inner)?;
                seq.push(Item::Ref(sub));
            }
            Expr::Repeat { item, min, max, .. } => {
                let start = seq.len();
                self.expr(item, base, seq)?;
                if u64::from(*min) > MAX_REPETITIONS || max.is_some_and(|m| u64::from(m) > MAX_REPETITIONS) {
                    return Err(format!("number of repetitions exceeds sane defaults ({MAX_REPETITIONS})"));
                }
                if max.is_some_and(|m| m < *min) {
                    return Err(format!("repetition maximum is below the minimum {min}"));
                }
                self.repeat(seq, start, base, *min, *max)?;
            }
        }
        Ok(())
    }

    /// llama.cpp's expansion of the items since `start`: `S{m,n}` = m copies of S, then a
    /// chain of nested optional helper rules; `S{m,}` = m copies, then `S' ::= S S' |`.
    fn repeat(
        &mut self,
        seq: &mut Vec<Item>,
        start: usize,
        base: u32,
        min: u32,
        max: Option<u32>,
    ) -> Result<(), String> {
        if start == seq.len() {
            return Err("a repetition of nothing".into());
        }
        let prev: Vec<Item> = seq[start..].to_vec();
        if min == 0 {
            seq.truncate(start);
        } else {
            for _ in 1..min {
                seq.extend_from_slice(&prev);
            }
        }
        let n_opt = match max {
            None => 1,
            Some(m) => m - min,
        };
        let mut last_rec = 0u32;
        for i in 0..n_opt {
            let id = self.generate(base);
            let mut alt = prev.clone();
            if i > 0 || max.is_none() {
                alt.push(Item::Ref(if max.is_none() { id } else { last_rec }));
            }
            self.add_rule(id, vec![alt, vec![]]);
            last_rec = id;
        }
        if n_opt > 0 {
            seq.push(Item::Ref(last_rec));
        }
        Ok(())
    }

    /// Fills the symbol table: every mentioned name, and `{base}_{id}` per helper rule
    /// (built in one go, sorted once).
    fn name_symbols(&mut self) {
        let mut by_id = vec![""; self.n_symbols as usize];
        let mut all: Vec<(String, u32)> = Vec::with_capacity(self.named.len() + self.generated.len());
        for &(s, r) in &self.named {
            let name = self.set.name(r);
            by_id[s as usize] = name;
            all.push((name.to_string(), s));
        }
        for &(id, base) in &self.generated {
            let base = by_id[base as usize];
            let mut name = String::with_capacity(base.len() + 8);
            name.push_str(base);
            name.push('_');
            let _ = write!(name, "{id}");
            all.push((name, id));
        }
        self.out.symbol_ids = all.into_iter().collect();
    }
}
