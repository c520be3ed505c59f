//! Objects: `properties`/`required`/`additionalProperties` rules in llama.cpp's shape
//! (required first, then optional chains, then extra keys), the "none of these names" key
//! rule, and `allOf` merging.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::{Map, Value};

use super::converter::{
    canonical_constant, canonical_constant_lit, constant, constant_lit, err, esc_ptr, is_unsatisfiable, lit, Built,
    Converter,
};
use super::key_space::KeyClass;
use super::keywords::{ANNOTATIONS, SUPPORTED, UNSUPPORTED};
use super::primitives::{KEY_ESCAPE, KEY_RAW};
use crate::error::SchemaError;
use crate::grammar::CharClass;
use crate::rules::{self, Body, Expr, Seq};

/// One member slot of an object rule: a named property, or the (repeatable) extra keys. Kept
/// apart by type, so a property that happens to be named `*` is a property like any other.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Slot {
    /// The property of this name.
    Named(String),
    /// Keys no property names (`additionalProperties` or the key classes).
    Extra,
}

impl std::fmt::Display for Slot {
    /// The name rules derived from the slot carry (`*` for the extra keys, as llama.cpp names them).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Slot::Named(k) => f.write_str(k),
            Slot::Extra => f.write_str("*"),
        }
    }
}

/// What an object schema adds to the named/additional split: key classes (from
/// `patternProperties`/`propertyNames`, replacing `additionalProperties`) and bounds on the
/// number of members (`minProperties`/`maxProperties`).
#[derive(Default)]
pub(super) struct ObjectExtras {
    /// The non-named keys by class (`None` = every other name takes `additionalProperties`).
    pub classes: Option<Vec<KeyClass>>,
    /// Bounds on the member count.
    pub count: Option<(usize, Option<usize>)>,
}

impl Converter<'_> {
    pub(super) fn all_of(
        &mut self,
        obj: &Map<String, Value>,
        name: &str,
        rule_name: &str,
        ptr: &str,
    ) -> Result<String, SchemaError> {
        let strict = self.opts.strict;
        let comps = obj["allOf"].as_array().ok_or_else(|| err("allOf", ptr, "must be an array"))?.clone();
        if strict {
            // A single component plus a compatible `type`: the component itself.
            let others: Vec<&String> =
                obj.keys().filter(|k| SUPPORTED.contains(&k.as_str()) && *k != "allOf" && *k != "type").collect();
            if let Some(k) = others.first() {
                let k = (*k).clone();
                self.refuse(&k, ptr, "cannot be enforced next to allOf")?;
            }
            if comps.len() == 1 {
                let c = &comps[0];
                let ty_ok = match (obj.get("type"), super::shape::declared_types(self.root, c)) {
                    (None, _) => true,
                    (Some(Value::String(t)), Some(ts)) => {
                        ts.iter().all(|x| x == t || (t == "number" && x == "integer"))
                    }
                    (Some(t @ Value::String(_)), None) => {
                        // Give the component the sibling type and compile that.
                        let mut c = c.clone();
                        if let Some(r) = c.get("$ref").and_then(Value::as_str) {
                            c = self.resolve_pointer(r, ptr)?.clone();
                        }
                        if let Value::Object(m) = &mut c {
                            if !m.contains_key("type") && !m.contains_key("$ref") {
                                m.insert("type".into(), t.clone());
                                let r = self.visit(&c, name, &format!("{ptr}/allOf/0"))?;
                                return Ok(if r == rule_name { r } else { self.alias_rule(rule_name, &r) });
                            }
                        }
                        false
                    }
                    _ => false,
                };
                if ty_ok {
                    let r = self.visit(
                        c,
                        &if name.is_empty() { String::new() } else { name.to_string() },
                        &format!("{ptr}/allOf/0"),
                    )?;
                    if r == rule_name {
                        return Ok(r);
                    }
                    return Ok(self.alias_rule(rule_name, &r));
                }
                self.refuse("allOf", ptr, "allOf component's type differs from the sibling type")?;
            }
        }
        let mut required = BTreeSet::new();
        let mut props: Vec<(String, Value)> = Vec::new();
        let mut enum_sets: Vec<Vec<Value>> = Vec::new();
        let mut open = true;
        for (i, t) in comps.iter().enumerate() {
            let cptr = format!("{ptr}/allOf/{i}");
            let alts: Vec<(Value, bool)> = match t.get("anyOf").and_then(Value::as_array) {
                Some(a) => {
                    if strict {
                        self.refuse("anyOf", &cptr, "anyOf inside allOf is not supported")?;
                    }
                    a.iter().map(|x| (x.clone(), false)).collect()
                }
                None => vec![(t.clone(), true)],
            };
            for (mut comp, is_req) in alts {
                if let Some(r) = comp.get("$ref").and_then(Value::as_str) {
                    // Since draft 2019-09 the keywords beside `$ref` apply too; the component
                    // is replaced by the target below, so they would be lost.
                    let beside = comp.as_object().and_then(|m| {
                        m.keys().find(|k| {
                            *k != "$ref" && (SUPPORTED.contains(&k.as_str()) || UNSUPPORTED.contains(&k.as_str()))
                        })
                    });
                    if let (true, false, Some(k)) = (strict, self.draft7_or_older, beside) {
                        let k = k.clone();
                        self.refuse(&k, &cptr, "cannot be enforced next to $ref in an allOf component")?;
                    }
                    comp = self.resolve_pointer(r, &cptr)?.clone();
                }
                if strict {
                    let Some(m) = comp.as_object() else {
                        return Err(err("allOf", &cptr, "component must be an object"));
                    };
                    for k in m.keys() {
                        let ok = ANNOTATIONS.contains(&k.as_str())
                            || !SUPPORTED.contains(&k.as_str()) && !UNSUPPORTED.contains(&k.as_str())
                            || matches!(k.as_str(), "properties" | "required" | "enum")
                            || (k == "type" && m[k] == "object")
                            || (k == "additionalProperties" && m[k] == Value::Bool(true));
                        if !ok {
                            self.refuse(
                                k,
                                &cptr,
                                "only plain object components (properties/required) can be merged in allOf",
                            )?;
                        }
                    }
                    if m.contains_key("enum") && m.contains_key("properties") {
                        self.refuse("enum", &cptr, "enum and properties in one allOf component")?;
                    }
                    if let Some(Value::Array(r)) = m.get("required") {
                        required.extend(r.iter().filter_map(|v| v.as_str().map(String::from)));
                    }
                    if m.contains_key("additionalProperties") && m["additionalProperties"] != Value::Bool(true) {
                        open = false;
                    }
                }
                if let Some(Value::Object(p)) = comp.get("properties") {
                    for (k, v) in p {
                        if strict {
                            if let Some((_, prev)) = props.iter().find(|(pk, _)| pk == k) {
                                if prev != v {
                                    self.refuse(
                                        "allOf",
                                        &cptr,
                                        &format!("property {k:?} is defined differently in two components"),
                                    )?;
                                }
                                continue;
                            }
                        }
                        props.push((k.clone(), v.clone()));
                        if is_req && !strict {
                            required.insert(k.clone());
                        }
                    }
                }
                if let Some(Value::Array(e)) = comp.get("enum") {
                    enum_sets.push(e.clone());
                }
            }
        }
        if !enum_sets.is_empty() {
            let mut inter: Vec<Value> = enum_sets[0].clone();
            for s in &enum_sets[1..] {
                inter.retain(|v| s.contains(v));
            }
            if strict && enum_sets.len() != comps.len() {
                self.refuse("allOf", ptr, "enum intersected with non-enum components")?;
            }
            if !inter.is_empty() {
                let (text, item) = if strict {
                    (canonical_constant as fn(&Value) -> String, canonical_constant_lit as fn(&Value) -> Expr)
                } else {
                    (constant as fn(&Value) -> String, constant_lit as fn(&Value) -> Expr)
                };
                inter.iter().for_each(|v| self.member_orders.record_constant(v));
                // Sorted and deduplicated by their text, as llama.cpp writes them.
                let mut lits: Vec<(String, Expr)> = inter.iter().map(|v| (text(v), item(v))).collect();
                lits.sort_by(|a, b| a.0.cmp(&b.0));
                lits.dedup_by(|a, b| a.0 == b.0);
                let group = Expr::Group(rules::alts(lits.into_iter().map(|(_, e)| e)));
                let space = self.r("space");
                return Ok(self.add_rule_ir(rule_name, rules::seq(vec![group, space])));
            }
            if strict {
                return Err(err("allOf", ptr, "the enums have no value in common"));
            }
        }
        let addl = if strict && open && !self.opts.closed_objects { Some(Value::Bool(true)) } else { None };
        if strict {
            for r in &required {
                if props.iter().any(|(k, _)| k == r) {
                    continue;
                }
                if addl.is_some() {
                    // Other names are allowed with any value: the name is required with any value.
                    props.push((r.clone(), Value::Bool(true)));
                } else {
                    self.refuse("required", ptr, &format!("required property {r:?} is not listed in properties"))?;
                }
            }
        }
        let props: Vec<(String, Cow<Value>)> = props.into_iter().map(|(k, v)| (k, Cow::Owned(v))).collect();
        let body = self.object_rule(&props, &required, name, addl.as_ref(), ptr, &ObjectExtras::default())?;
        Ok(self.add_body(rule_name, body))
    }

    pub(super) fn object_rule(
        &mut self,
        props: &[(String, Cow<Value>)],
        required: &BTreeSet<String>,
        name: &str,
        addl: Option<&Value>,
        ptr: &str,
        extras: &ObjectExtras,
    ) -> Result<Built, SchemaError> {
        let strict = self.opts.strict;
        let dash = if name.is_empty() { "" } else { "-" };
        let mut kv: BTreeMap<Slot, String> = BTreeMap::new();
        let mut present: Vec<&String> = Vec::new();
        for (pn, ps) in props {
            let r = match self.visit(ps, &format!("{name}{dash}{pn}"), &format!("{ptr}/properties/{}", esc_ptr(pn))) {
                Ok(r) => r,
                // An optional property no value satisfies can simply never appear.
                Err(e) if strict && is_unsatisfiable(&e) && !required.contains(pn) => continue,
                Err(e) => return Err(e),
            };
            present.push(pn);
            let key = if strict {
                lit(&super::relayout::json_string(pn))
            } else {
                lit(&serde_json::to_string(&Value::String(pn.clone())).unwrap_or_default())
            };
            let (space, r) = (self.r("space"), self.r(&r));
            let body = rules::seq(vec![key, space.clone(), Expr::lit(":"), space, r]);
            let k = self.add_rule_ir(&format!("{name}{dash}{pn}-kv"), body);
            kv.insert(Slot::Named(pn.clone()), k);
        }
        let names: Vec<&String> = props.iter().map(|(k, _)| k).collect();
        let req: Vec<String> = present.iter().filter(|k| required.contains(**k)).map(|k| (*k).clone()).collect();
        let mut opt: Vec<Slot> =
            present.iter().filter(|k| !required.contains(**k)).map(|k| Slot::Named((*k).clone())).collect();
        let sub = format!("{name}{dash}additional");
        if let Some(classes) = &extras.classes {
            let mut alts = Vec::new();
            for (i, c) in classes.iter().enumerate() {
                let cptr = format!("{ptr}/{}", c.source);
                let value_rule = match self.value_rule(&c.schema, &format!("{sub}-{i}-value"), &cptr) {
                    Ok(r) => r,
                    Err(e) if is_unsatisfiable(&e) => continue,
                    Err(e) => return Err(e),
                };
                let key = self.dfa_rule(&c.names, &format!("{sub}-{i}-k"));
                let quote = Expr::lit_spelled("\"", "\\\"");
                let (space, value) = (self.r("space"), self.r(&value_rule));
                alts.push(Seq::new(vec![quote.clone(), key, quote, space.clone(), Expr::lit(":"), space, value]));
            }
            if !alts.is_empty() {
                let k = self.add_rule_ir(&format!("{sub}-kv"), alts);
                kv.insert(Slot::Extra, k);
                opt.push(Slot::Extra);
            }
        } else if let Some(a) = addl.filter(|a| **a != Value::Bool(false)) {
            let value_rule = match a {
                Value::Object(_) | Value::Bool(true) => {
                    match self.value_rule(a, &format!("{sub}-value"), &format!("{ptr}/additionalProperties")) {
                        Ok(r) => Some(r),
                        // No value satisfies the schema of the other names: none can appear,
                        // and the object is still satisfiable without them.
                        Err(e) if strict && is_unsatisfiable(&e) => None,
                        Err(e) => return Err(e),
                    }
                }
                _ => return Err(err("additionalProperties", ptr, "must be a boolean or a schema")),
            };
            if let Some(value_rule) = value_rule {
                let key_rule = if names.is_empty() {
                    self.add_primitive("string", "string")?
                } else {
                    let body = self.not_strings(&names.iter().map(|s| s.as_str()).collect::<Vec<_>>())?;
                    self.add_body(&format!("{sub}-k"), body)
                };
                let (space, key, value) = (self.r("space"), self.r(&key_rule), self.r(&value_rule));
                let k = self.add_rule_ir(&format!("{sub}-kv"), rules::seq(vec![key, Expr::lit(":"), space, value]));
                kv.insert(Slot::Extra, k);
                opt.push(Slot::Extra);
            }
        }
        // The order this rule writes its named members in, for laying documents out.
        let optional_names = opt.iter().filter_map(|k| match k {
            Slot::Named(n) => Some(n.clone()),
            Slot::Extra => None,
        });
        let named = req.iter().cloned().chain(optional_names).collect();
        self.member_orders.record(named, req.len(), !kv.contains_key(&Slot::Extra));
        if let Some((min, max)) = extras.count {
            return self.counted_members(&req, &opt, &kv, min, max, name, ptr).map(Built::Ir);
        }
        // `"{" space a "," space b ( "," space ( x | y ) )? "}" space`, and without
        // required members `"{" space  (x | y )? "}" space` (llama.cpp's spaces).
        let space = self.r("space");
        let comma = [Expr::lit(","), space.clone()];
        let mut items = vec![Expr::lit("{"), space.clone()];
        for (i, k) in req.iter().enumerate() {
            if i > 0 {
                items.extend(comma.iter().cloned());
            }
            items.push(self.r(&kv[&Slot::Named(k.clone())]));
        }
        // Spaces before each item: one, except after `"{" space` with no required member.
        let mut ws = vec![1u8; items.len()];
        if !opt.is_empty() {
            let alts = self.optional_chains(&opt, name, &kv);
            let n = alts.len();
            let group = if req.is_empty() {
                let alts = alts
                    .into_iter()
                    .enumerate()
                    .map(|(i, a)| {
                        let mut w = vec![1u8; a.len() + 1];
                        w[0] = u8::from(i > 0);
                        let _ = n;
                        Seq::spaced(a, w)
                    })
                    .collect();
                Expr::Group(alts)
            } else {
                let inner = Expr::spaced_group(alts.into_iter().map(Seq::new).collect());
                let mut unit = comma.to_vec();
                unit.push(inner);
                Expr::spaced_group(vec![Seq::new(unit)])
            };
            ws.push(if req.is_empty() { 2 } else { 1 });
            items.push(Expr::repeat(group, 0, Some(1)));
        }
        ws.push(if req.is_empty() && opt.is_empty() { 2 } else { 1 });
        items.push(Expr::lit("}"));
        ws.push(1);
        items.push(space);
        ws.push(0);
        ws[0] = 1;
        Ok(Built::Ir(vec![Seq::spaced(items, ws)]))
    }

    /// The rule for the values of extra keys (schema at `ptr`): any value for `true` or an
    /// annotation-only schema (strict mode), else the schema's own rule.
    fn value_rule(&mut self, a: &Value, name: &str, ptr: &str) -> Result<String, SchemaError> {
        let strict = self.opts.strict;
        match a {
            Value::Object(m)
                if strict
                    && m.keys().all(|k| {
                        ANNOTATIONS.contains(&k.as_str())
                            || !SUPPORTED.contains(&k.as_str()) && !UNSUPPORTED.contains(&k.as_str())
                    }) =>
            {
                self.add_primitive("value", "value")
            }
            Value::Bool(true) => self.add_primitive("value", "value"),
            _ => self.visit(a, name, ptr),
        }
    }

    /// llama.cpp's optional members: one alternative per member `i` that comes first, then
    /// a chain of `-rest` rules through the later members (each optional, `*` repeated).
    /// llama.cpp builds the chain again for every `i` (quadratic in the member count); the
    /// chains share their tails, so each `-rest` rule is built once here, last first (the
    /// same rules, names and text).
    fn optional_chains(&mut self, opt: &[Slot], name: &str, kv: &BTreeMap<Slot, String>) -> Vec<Vec<Expr>> {
        let dash = if name.is_empty() { "" } else { "-" };
        let space = self.r("space");
        let kv: BTreeMap<&Slot, Expr> = kv.iter().map(|(k, r)| (k, self.r(r))).collect();
        // `( "," space kv )` followed by `*`, `?` or nothing.
        let item = |k: &Slot, first_optional: bool| -> Vec<Expr> {
            let kvr = kv[k].clone();
            let comma = Expr::spaced_group(vec![Seq::new(vec![Expr::lit(","), space.clone(), kvr.clone()])]);
            if first_optional {
                let max = if *k == Slot::Extra { None } else { Some(1) };
                vec![Expr::repeat(comma, 0, max)]
            } else if *k == Slot::Extra {
                vec![kvr, Expr::repeat(comma, 0, None)]
            } else {
                vec![kvr]
            }
        };
        let n = opt.len();
        // rest[j]: the rule for the members after member j.
        let mut rest: Vec<Option<Expr>> = vec![None; n];
        for j in (0..n.saturating_sub(1)).rev() {
            let mut body = item(&opt[j + 1], true);
            body.extend(rest[j + 1].clone());
            let r = self.add_rule_ir(&format!("{name}{dash}{}-rest", opt[j]), rules::seq(body));
            rest[j] = Some(self.r(&r));
        }
        (0..n)
            .map(|i| {
                let mut alt = item(&opt[i], false);
                alt.extend(rest[i].clone());
                alt
            })
            .collect()
    }

    /// A JSON string that is none of `strings`: llama.cpp's trie construction (compat mode,
    /// with its holes: no escapes, prefixes of excluded names); strict mode writes the exact
    /// language ([`Self::not_strings_strict`]).
    pub(super) fn not_strings(&mut self, strings: &[&str]) -> Result<Built, SchemaError> {
        if self.opts.strict {
            return Ok(Built::Ir(self.not_strings_strict(strings)));
        }
        type Node = NameTrie<char>;
        let trie = Node::of(strings, |c| c);
        let ch = self.add_primitive("char", "char")?;
        fn visit(n: &Node, ch: &str, out: &mut String) {
            let mut rejects = String::new();
            for (i, (c, child)) in n.children.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                rejects.push(*c);
                out.push_str(&format!("[{c}]"));
                if !child.children.is_empty() {
                    out.push_str(" (");
                    visit(child, ch, out);
                    out.push(')');
                } else if child.end {
                    out.push_str(&format!(" {ch}+"));
                }
            }
            if !n.children.is_empty() {
                out.push_str(&format!(" | [^\"{rejects}] {ch}*"));
            }
        }
        let mut out = String::from("[\"] ( ");
        visit(&trie, &ch, &mut out);
        out.push_str(&format!(" ){} [\"] space", if trie.end { "" } else { "?" }));
        Ok(Built::Text(out))
    }

    /// Strict mode: the JSON text (quotes included) of a key that is none of `strings`, in
    /// canonical form (`"`, `\`, control characters and DEL escaped, each one way: the short
    /// escape where JSON has one, else `\u00xx` in lower case; nothing else escaped), so each
    /// key has exactly one spelling and the excluded names are excluded exactly. Built on a
    /// trie of the names' canonical text units (a character or one escape), as rule IR
    /// spelled the way the text of earlier versions was.
    fn not_strings_strict(&mut self, strings: &[&str]) -> Body {
        type Node = NameTrie<String>;
        let trie = Node::of(strings, canonical_unit);
        // Repetitions and optional groups as rules written once (each `x*` or `(...)?` in a
        // body is one more rule for the grammar to generate).
        let esc = self.fixed(KEY_ESCAPE);
        let esc = self.add_rule_ir("key-escape", esc);
        let mut unit = self.fixed(KEY_RAW);
        unit.push(Seq::new(vec![self.r(&esc)]));
        let ch = self.add_rule_ir("key-unit", unit);
        let rest = self.r(&ch);
        let rest = self.add_rule_ir("key-rest", rules::seq(vec![Expr::repeat(rest, 0, None)]));
        let refs = KeyRefs { ch: self.r(&ch), esc: self.r(&esc), rest: self.r(&rest) };
        /// The alternatives below trie node `n`.
        fn visit(n: &Node, k: &KeyRefs, alts: &mut Vec<Seq>) {
            let mut raw_rejects = String::new();
            let mut rejected: Vec<(u32, u32)> = Vec::new();
            let mut esc_rejects: Vec<&str> = Vec::new();
            for (unit, child) in &n.children {
                let mut items = Vec::new();
                if unit.starts_with('\\') {
                    esc_rejects.push(unit);
                    items.push(lit(unit));
                } else {
                    let c = unit.chars().next().unwrap_or(' ');
                    // A class's own syntax characters as hex escapes (the grammar parser
                    // knows `\]` but not `\-` or `\^`).
                    let start = raw_rejects.len();
                    match c {
                        ']' | '-' | '^' => {
                            let _ = write!(raw_rejects, "\\x{:02X}", c as u32);
                        }
                        c => raw_rejects.push(c),
                    }
                    rejected.push((c as u32, c as u32));
                    let class = CharClass { ranges: vec![(c as u32, c as u32)], negated: false };
                    let spelling = format!("[{}]", &raw_rejects[start..]);
                    items.push(Expr::Class { class, spelling: Some(spelling.into()) });
                }
                if !child.children.is_empty() {
                    let mut sub = Vec::new();
                    visit(child, k, &mut sub);
                    if !child.end {
                        // Ending right after this prefix is fine: it is not an excluded name
                        // (an empty alternative, written `|)`).
                        sub.push(Seq::spaced(Vec::new(), vec![0]));
                    }
                    items.push(Expr::Group(sub));
                } else if child.end {
                    items.extend([k.ch.clone(), k.rest.clone()]);
                }
                alts.push(Seq::new(items));
            }
            if n.children.is_empty() {
                return;
            }
            // Any other unescaped character.
            let mut ranges = vec![(0x22, 0x22), (0x5C, 0x5C), (0x7F, 0x7F), (0x00, 0x1F)];
            ranges.extend(rejected);
            let spelling = format!("{}{raw_rejects}]", KEY_RAW.trim_end_matches(']'));
            let other = Expr::Class { class: CharClass { ranges, negated: true }, spelling: Some(spelling.into()) };
            alts.push(Seq::new(vec![other, k.rest.clone()]));
            // Any other escape.
            if esc_rejects.is_empty() {
                alts.push(Seq::new(vec![k.esc.clone(), k.rest.clone()]));
            } else {
                let others = canonical_escapes().filter(|e| !esc_rejects.contains(&e.as_str())).map(|e| lit(&e));
                alts.push(Seq::new(vec![Expr::Group(rules::alts(others)), k.rest.clone()]));
            }
        }
        let mut alts = Vec::new();
        visit(&trie, &refs, &mut alts);
        // `["] ( a | b ) ["] space`: a space inside each parenthesis (two, when no name has a
        // character: `(  )`).
        let mut alts: Vec<Seq> = alts
            .into_iter()
            .map(|s| {
                let k = s.items.len();
                Seq::spaced(s.items, vec![1; k + 1])
            })
            .collect();
        if alts.is_empty() {
            alts.push(Seq::spaced(Vec::new(), vec![2]));
        }
        if !trie.end {
            alts.push(Seq::spaced(Vec::new(), vec![1]));
        }
        let quote = Expr::Class {
            class: CharClass { ranges: vec![(0x22, 0x22)], negated: false },
            spelling: Some("[\"]".into()),
        };
        let space = self.r("space");
        rules::seq(vec![quote.clone(), Expr::Group(alts), quote, space])
    }
}

/// The key rules' references (see [`Converter::not_strings_strict`]).
struct KeyRefs {
    ch: Expr,
    esc: Expr,
    rest: Expr,
}

/// A trie of names, one edge per text unit (a character, or its canonical JSON text): the
/// "none of these names" key rules are written by walking it.
struct NameTrie<K> {
    children: BTreeMap<K, NameTrie<K>>,
    /// A name ends here.
    end: bool,
}

impl<K: Ord> NameTrie<K> {
    /// The trie of `names`, each split into units by `unit`.
    fn of(names: &[&str], unit: impl Fn(char) -> K) -> Self {
        let mut trie = NameTrie { children: BTreeMap::new(), end: false };
        for name in names {
            let mut n = &mut trie;
            for c in name.chars() {
                n = n.children.entry(unit(c)).or_insert_with(|| NameTrie { children: BTreeMap::new(), end: false });
            }
            n.end = true;
        }
        trie
    }
}

/// The canonical JSON text of one character inside a string (as `relayout::json_string`
/// writes it).
pub(super) fn canonical_unit(c: char) -> String {
    let s = super::relayout::json_string(&c.to_string());
    s[1..s.len() - 1].to_string()
}

/// Every canonical escape: `\"`, `\\`, and one per control character and DEL.
fn canonical_escapes() -> impl Iterator<Item = String> {
    ['"', '\\'].into_iter().chain((0u8..0x20).chain([0x7F]).map(char::from)).map(canonical_unit)
}
