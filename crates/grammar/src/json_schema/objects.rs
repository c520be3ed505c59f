//! Objects: `properties`/`required`/`additionalProperties` rules in llama.cpp's shape
//! (required first, then optional chains, then extra keys), the "none of these names" key
//! rule, and `allOf` merging.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::{Map, Value};

use super::converter::{canonical_constant, constant, err, esc_ptr, format_literal, is_unsatisfiable, Converter};
use super::key_space::KeyClass;
use super::keywords::{ANNOTATIONS, SUPPORTED, UNSUPPORTED};
use crate::error::SchemaError;

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
                                return Ok(if r == rule_name { r } else { self.add_rule(rule_name, &r) });
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
                    return Ok(self.add_rule(rule_name, &r));
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
                let lit = if strict { canonical_constant } else { constant };
                inter.iter().for_each(|v| self.member_orders.record_constant(v));
                let mut lits: Vec<String> = inter.iter().map(lit).collect();
                lits.sort();
                lits.dedup();
                return Ok(self.add_rule(rule_name, &format!("({}) space", lits.join(" | "))));
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
        Ok(self.add_rule(rule_name, &body))
    }

    pub(super) fn object_rule(
        &mut self,
        props: &[(String, Cow<Value>)],
        required: &BTreeSet<String>,
        name: &str,
        addl: Option<&Value>,
        ptr: &str,
        extras: &ObjectExtras,
    ) -> Result<String, SchemaError> {
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
            let lit = if strict {
                format_literal(&super::relayout::json_string(pn))
            } else {
                format_literal(&serde_json::to_string(&Value::String(pn.clone())).unwrap_or_default())
            };
            let k = self.add_rule(&format!("{name}{dash}{pn}-kv"), &format!("{lit} space \":\" space {r}"));
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
                alts.push(format!("\"\\\"\" {key} \"\\\"\" space \":\" space {value_rule}"));
            }
            if !alts.is_empty() {
                let k = self.add_rule(&format!("{sub}-kv"), &alts.join(" | "));
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
                    self.add_rule(&format!("{sub}-k"), &body)
                };
                let k = self.add_rule(&format!("{sub}-kv"), &format!("{key_rule} \":\" space {value_rule}"));
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
            return self.counted_members(&req, &opt, &kv, min, max, name, ptr);
        }
        let mut rule = String::from("\"{\" space ");
        rule.push_str(
            &req.iter().map(|k| kv[&Slot::Named(k.clone())].clone()).collect::<Vec<_>>().join(" \",\" space "),
        );
        if !opt.is_empty() {
            rule.push_str(" (");
            if !req.is_empty() {
                rule.push_str(" \",\" space ( ");
            }
            let alts = self.optional_chains(&opt, name, &kv);
            rule.push_str(&alts.join(" | "));
            if !req.is_empty() {
                rule.push_str(" )");
            }
            rule.push_str(" )?");
        }
        rule.push_str(" \"}\" space");
        Ok(rule)
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
    fn optional_chains(&mut self, opt: &[Slot], name: &str, kv: &BTreeMap<Slot, String>) -> Vec<String> {
        let dash = if name.is_empty() { "" } else { "-" };
        let item = |k: &Slot, first_optional: bool| {
            let kvr = &kv[k];
            let comma = format!("( \",\" space {kvr} )");
            if first_optional {
                format!("{comma}{}", if *k == Slot::Extra { "*" } else { "?" })
            } else if *k == Slot::Extra {
                format!("{kvr} {comma}*")
            } else {
                kvr.clone()
            }
        };
        let n = opt.len();
        // rest[j]: the rule for the members after member j.
        let mut rest: Vec<Option<String>> = vec![None; n];
        for j in (0..n.saturating_sub(1)).rev() {
            let mut body = item(&opt[j + 1], true);
            if let Some(r) = &rest[j + 1] {
                body.push(' ');
                body.push_str(r);
            }
            rest[j] = Some(self.add_rule(&format!("{name}{dash}{}-rest", opt[j]), &body));
        }
        (0..n)
            .map(|i| {
                let mut alt = item(&opt[i], false);
                if let Some(r) = &rest[i] {
                    alt.push(' ');
                    alt.push_str(r);
                }
                alt
            })
            .collect()
    }

    /// A JSON string that is none of `strings`: llama.cpp's trie construction (compat mode,
    /// with its holes: no escapes, prefixes of excluded names); strict mode writes the exact
    /// language ([`Self::not_strings_strict`]).
    pub(super) fn not_strings(&mut self, strings: &[&str]) -> Result<String, SchemaError> {
        if self.opts.strict {
            return Ok(self.not_strings_strict(strings));
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
        Ok(out)
    }

    /// Strict mode: the JSON text (quotes included) of a key that is none of `strings`, in
    /// canonical form (`"`, `\`, control characters and DEL escaped, each one way: the short
    /// escape where JSON has one, else `\u00xx` in lower case; nothing else escaped), so each
    /// key has exactly one spelling and the excluded names are excluded exactly. Built on a
    /// trie of the names' canonical text units (a character or one escape).
    fn not_strings_strict(&mut self, strings: &[&str]) -> String {
        type Node = NameTrie<String>;
        let trie = Node::of(strings, canonical_unit);
        // Repetitions and optional groups as rules written once (each `x*` or `(...)?` in a
        // body is one more rule for the grammar parser to generate).
        let esc = self.add_rule("key-escape", KEY_ESCAPE);
        let ch = self.add_rule("key-unit", &format!("{KEY_RAW} | {esc}"));
        let rest = self.add_rule("key-rest", &format!("{ch}*"));
        fn visit(n: &Node, ch: &str, esc: &str, rest: &str, out: &mut String) {
            let mut raw_rejects = String::new();
            let mut esc_rejects: Vec<&str> = Vec::new();
            for (i, (unit, child)) in n.children.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                if unit.starts_with('\\') {
                    esc_rejects.push(unit);
                    out.push_str(&format_literal(unit));
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
                    out.push('[');
                    out.push_str(&raw_rejects[start..]);
                    out.push(']');
                }
                if !child.children.is_empty() {
                    out.push_str(" (");
                    visit(child, ch, esc, rest, out);
                    if !child.end {
                        // Ending right after this prefix is fine: it is not an excluded name.
                        out.push_str(" |");
                    }
                    out.push(')');
                } else if child.end {
                    let _ = write!(out, " {ch} {rest}");
                }
            }
            if n.children.is_empty() {
                return;
            }
            let raw = KEY_RAW.trim_end_matches(']');
            let _ = write!(out, " | {raw}{raw_rejects}] {rest}");
            if esc_rejects.is_empty() {
                let _ = write!(out, " | {esc} {rest}");
            } else {
                let others: Vec<String> = canonical_escapes()
                    .filter(|e| !esc_rejects.contains(&e.as_str()))
                    .map(|e| format_literal(&e))
                    .collect();
                let _ = write!(out, " | ({}) {rest}", others.join(" | "));
            }
        }
        let mut out = String::from("[\"] ( ");
        visit(&trie, &ch, &esc, &rest, &mut out);
        let _ = write!(out, "{} ) [\"] space", if trie.end { "" } else { " |" });
        out
    }
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

/// An unescaped character of a canonical JSON string.
const KEY_RAW: &str = "[^\"\\\\\\x7F\\x00-\\x1F]";

/// The canonical escapes (see [`canonical_unit`]) as GBNF.
const KEY_ESCAPE: &str = "[\\\\] ([\"\\\\bfnrt] | \"u00\" (\"0\" [0-7bef] | \"1\" [0-9a-f] | \"7f\"))";

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
