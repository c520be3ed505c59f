//! The schema visitor: one GBNF rule per schema node, named from its property path, in
//! llama.cpp's construction order and naming; strict-mode checks refuse what a branch would
//! silently drop.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

use super::any_of::absorbing;
use super::enum_filter::{format_accepts, satisfies};
use super::frag::Frag;
use super::int_range::min_max_int;
use super::keywords::{applies_to, ENFORCED_FORMATS, STANDARD_FORMATS, SUPPORTED, UNSUPPORTED};
use super::model::{AllOf, Form, Keywords};
use super::objects::ObjectExtras;
use super::one_of::make_exclusive;
use super::pattern_llama::{pattern_to_rule, RuleSink};
use super::pattern_strict::pattern_items;
use super::primitives::{is_reserved, primitive, SPACE_RULE};
use super::relayout::MemberOrders;
use super::shape::{is_annotation_only, json_type_matches};
use super::SchemaOptions;
use crate::error::SchemaError;
use crate::rules::{self, Body, Expr, RuleSet};

/// A rule body a construction returns: built as IR, or (compat mode's copies of llama.cpp's
/// regex rewrite and key trie, see [`Converter::add_text_rule`]) written as GBNF text.
pub(super) enum Built {
    Ir(Body),
    Text(String),
}

/// A rule body as the converter holds it: the rule IR, or text the GBNF parser refuses.
/// Compat mode copies llama.cpp, whose output is such text for some schemas (counts past
/// the GBNF limit, some patterns and key names); the grammar is then built from the printed
/// text, to report why.
#[derive(Debug, PartialEq)]
enum Stored {
    Ir(Body),
    Text(String),
}

/// Converter state: the rules emitted so far.
pub struct Converter<'a> {
    pub(super) root: &'a Value,
    /// Rule bodies by name (written out sorted by name).
    rules: HashMap<String, Stored>,
    /// The names the bodies' references are interned in (a set with no definitions).
    names: RuleSet,
    /// The rule each built-in was added as, by the name it was asked for (with its body).
    primitives: HashMap<String, (&'static str, String)>,
    resolving: HashSet<String>,
    /// Rule names of the references being resolved (their rules must be written under
    /// exactly these names: recursive references name them before they exist).
    ref_names: HashSet<String>,
    /// Short names given out for long path-derived ones (strict mode, see [`Self::visit`]).
    aliases: usize,
    pub(super) opts: SchemaOptions,
    /// Keywords that were ignored (`keyword at pointer`).
    pub ignored: Vec<String>,
    /// The schema declares draft 7 or older (`$ref` siblings are ignored there).
    pub(super) draft7_or_older: bool,
    /// Bodies of numeric range rules already built, by their keywords (`numeric_range`).
    pub(super) numeric_rules: HashMap<String, Body>,
    /// Nesting of `visit` calls (merges inline `$ref` targets, so recursion through them is
    /// not caught by `resolving`).
    depth: usize,
    /// The member order of every object rule written (see [`MemberOrders`]).
    pub(super) member_orders: MemberOrders,
}

/// Longest path-derived rule name kept as it is in strict mode.
const MAX_NAME: usize = 24;

/// Deepest schema nesting visited.
const MAX_DEPTH: usize = 100;

/// Every JSON type, as `check_honored` names the types a branch produces.
const ALL_TYPES: [&str; 6] = ["object", "array", "string", "number", "boolean", "null"];

pub(super) fn err(keyword: &str, ptr: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError {
        keyword: keyword.into(),
        pointer: if ptr.is_empty() { "#".into() } else { format!("#{ptr}") },
        reason: reason.into(),
    }
}

pub(super) fn esc_ptr(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

pub(super) fn rule_name_chars(name: &str) -> String {
    if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return name.to_string();
    }
    // Never longer than the name: sized once.
    let mut out = String::with_capacity(name.len());
    let mut in_bad = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c);
            in_bad = false;
        } else if !in_bad {
            out.push('-');
            in_bad = true;
        }
    }
    out
}

/// Why a standard format is not enforced.
fn unenforced_format(f: &str) -> String {
    match f {
        // RFC 1123 names are regular, but their 253-character total over labels of up to 63
        // takes an automaton of some 24,000 states, and JSON Schema's hostname admits a label
        // with `--` in its third and fourth characters only as a valid Punycode A-label.
        "hostname" => "format \"hostname\" cannot be enforced: a grammar cannot hold the 253-character limit \
                       on names without some 24,000 states, nor check that a label with -- in its third and \
                       fourth characters is a valid Punycode A-label"
            .to_string(),
        _ => format!("format {f:?} cannot be enforced"),
    }
}

/// llama.cpp's literal formatting: the text in quotes, escaping CR, LF, quote and backslash.
pub(super) fn format_literal(s: &str) -> String {
    let mut out = String::from("\"");
    push_literal(s, &mut out);
    out.push('"');
    out
}

/// `s` between quotes as llama.cpp spells it (CR, LF, quote and backslash escaped).
fn push_literal(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
}

/// The literal `s`, spelled as [`format_literal`] writes it.
pub(super) fn lit(s: &str) -> Expr {
    let mut spelling = String::with_capacity(s.len() + 2);
    push_literal(s, &mut spelling);
    Expr::lit_spelled(s, &spelling)
}

pub(super) fn constant(v: &Value) -> String {
    format_literal(&serde_json::to_string(v).unwrap_or_default())
}

/// [`constant`] as a literal item.
pub(super) fn constant_lit(v: &Value) -> Expr {
    lit(&serde_json::to_string(v).unwrap_or_default())
}

/// [`canonical_constant`] as a literal item.
pub(super) fn canonical_constant_lit(v: &Value) -> Expr {
    lit(&canonical_text(v))
}

/// Strict mode's literal for a value: its canonical JSON text (strings written as
/// `relayout::json_string` writes them: DEL escaped too, which `serde_json` leaves raw).
pub(super) fn canonical_constant(v: &Value) -> String {
    format_literal(&canonical_text(v))
}

/// The canonical JSON text of `v` (see [`canonical_constant`]).
fn canonical_text(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => out.push_str(&super::relayout::json_string(s)),
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push('{');
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&super::relayout::json_string(k));
                    out.push(':');
                    write(x, out);
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

impl RuleSink for Converter<'_> {
    fn add_rule(&mut self, name: &str, body: &str) -> String {
        self.add_text_rule(name, body)
    }
}

/// The IR of the fixed body `text` with its references named in `names` (see
/// [`primitives::fixed_body`](super::primitives::fixed_body)).
fn fixed_body(text: &'static str, names: &mut RuleSet) -> Option<Body> {
    let (set, body) = super::primitives::fixed_body(text)?;
    Some(body.iter().map(|s| s.map_refs(&mut |r| names.id(set.name(r)))).collect())
}

/// Whether the GBNF parser refuses the text `body` prints as: a repetition count past its
/// limit, a maximum below the minimum, or a repetition of an item that produces nothing.
fn refused_by_parser(body: &Body) -> bool {
    fn expr(e: &Expr) -> bool {
        match e {
            Expr::Group(alts) => alts.iter().any(|s| s.items.iter().any(expr)),
            Expr::Repeat { item, min, max, .. } => {
                let limit = crate::parse::MAX_REPETITIONS;
                let nothing = match &**item {
                    Expr::Lit { chars, .. } => chars.is_empty(),
                    Expr::Repeat { max, .. } => *max == Some(0),
                    _ => false,
                };
                u64::from(*min) > limit
                    || max.is_some_and(|m| u64::from(m) > limit || m < *min)
                    || nothing
                    || expr(item)
            }
            _ => false,
        }
    }
    body.iter().any(|s| s.items.iter().any(expr))
}

impl<'a> Converter<'a> {
    /// A converter for the document `root` (targets of `$ref`s are looked up in it).
    pub fn new(root: &'a Value, opts: SchemaOptions) -> Self {
        let mut names = RuleSet::new();
        let mut rules = HashMap::new();
        if let Some(b) = fixed_body(SPACE_RULE, &mut names) {
            rules.insert("space".to_string(), Stored::Ir(b));
        }
        let draft7_or_older = root
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|s| ["draft-03", "draft-04", "draft-06", "draft-07"].iter().any(|d| s.contains(d)));
        Converter {
            root,
            rules,
            names,
            primitives: HashMap::new(),
            resolving: HashSet::new(),
            ref_names: HashSet::new(),
            aliases: 0,
            opts,
            ignored: Vec::new(),
            draft7_or_older,
            numeric_rules: HashMap::new(),
            depth: 0,
            member_orders: MemberOrders::complete(),
        }
    }

    /// The grammar text: one rule per line, sorted by name (printed from the rules; only
    /// used when a compat body is text the parser refuses, see [`Stored`]).
    pub fn format_grammar(&self) -> String {
        let mut s = String::new();
        for (k, v) in self.sorted() {
            s.push_str(k);
            s.push_str(" ::=");
            match v {
                Stored::Ir(body) => s.push_str(&rules::body_text(&self.names, body)),
                Stored::Text(t) => {
                    s.push(' ');
                    s.push_str(t);
                }
            }
            s.push('\n');
        }
        s
    }

    /// The rules emitted so far, sorted by name.
    fn sorted(&self) -> Vec<(&str, &Stored)> {
        let mut v: Vec<(&str, &Stored)> = self.rules.iter().map(|(k, b)| (k.as_str(), b)).collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// The rules as a rule set, sorted by name, names interned in the order the printed
    /// text mentions them (the bodies are moved out, the store is left empty); `None`, with
    /// the store untouched, when a body is text the parser refuses.
    pub(super) fn take_rule_set(&mut self) -> Option<RuleSet> {
        if self.rules.values().any(|v| matches!(v, Stored::Text(_))) {
            return None;
        }
        let mut v: Vec<(String, Stored)> = self.rules.drain().collect();
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut set = RuleSet::new();
        // The set's id of each store id, once looked up (u32::MAX: not yet).
        let mut ids = vec![u32::MAX; self.names.n_names()];
        for (name, body) in v {
            let Stored::Ir(mut body) = body else { continue };
            let id = set.id(&name);
            let mut to_set = |r: rules::RuleId| {
                let m = &mut ids[r.0 as usize];
                if *m == u32::MAX {
                    *m = set.id(self.names.name(r)).0;
                }
                rules::RuleId(*m)
            };
            body.iter_mut().for_each(|s| s.remap_refs(&mut to_set));
            set.define(id, body);
        }
        Some(set)
    }

    /// Adds rule `name` with a body written as GBNF text, parsed here, and returns its name.
    /// Only compat mode's copies of llama.cpp's text constructions use it: its regex
    /// rewrite (`pattern_llama`) and its key trie (`objects::not_strings`) write characters
    /// raw into classes and literals, and reproducing which of those texts the GBNF parser
    /// refuses (they must still be reported as refused) would mean re-deriving the parser's
    /// escape rules in them; text it refuses is kept as text ([`Stored::Text`]).
    pub(super) fn add_text_rule(&mut self, name: &str, body: &str) -> String {
        let stored = match crate::parse::parse_body(body, &mut self.names) {
            Ok(mut b) => {
                rules::canonicalize(&mut b);
                Stored::Ir(b)
            }
            Err(_) => Stored::Text(body.to_string()),
        };
        self.insert(name, stored)
    }

    /// Adds rule `name` (made a valid rule name; a number appended when a different rule
    /// has that name) with `body`, and returns its name. A body whose text the GBNF parser
    /// would refuse (a count past its limit, a maximum below the minimum: compat mode copies
    /// llama.cpp, which writes such counts) is kept as that text, so building the grammar
    /// reports it as it did when the converter wrote text.
    pub(super) fn add_rule_ir(&mut self, name: &str, mut body: Body) -> String {
        rules::canonicalize(&mut body);
        if refused_by_parser(&body) {
            let text = rules::body_text(&self.names, &body);
            let text = text.strip_prefix(' ').unwrap_or(&text).to_string();
            return self.insert(name, Stored::Text(text));
        }
        self.insert(name, Stored::Ir(body))
    }

    /// The fixed body `text` (a built-in's, see [`fixed_body`]) with its references named here.
    pub(super) fn fixed(&mut self, text: &'static str) -> Body {
        if let Some(body) = fixed_body(text, &mut self.names) {
            return body;
        }
        // A built-in text missing from the process-wide table (`primitives::NAMES` lists the
        // names it is built from): parsed here instead, so the rule is never left empty.
        match crate::parse::parse_body(text, &mut self.names) {
            Ok(mut body) => {
                rules::canonicalize(&mut body);
                body
            }
            Err(_) => Vec::new(),
        }
    }

    fn insert(&mut self, name: &str, body: Stored) -> String {
        let esc = rule_name_chars(name);
        let key = match self.rules.get(&esc) {
            None => esc,
            Some(b) if *b == body => return esc,
            Some(_) => {
                let mut i = 0;
                loop {
                    let k = format!("{esc}{i}");
                    match self.rules.get(&k) {
                        Some(b) if *b == body => return k,
                        Some(_) => i += 1,
                        None => break k,
                    }
                }
            }
        };
        self.rules.insert(key.clone(), body);
        key
    }

    /// A reference to rule `name`.
    pub(super) fn r(&mut self, name: &str) -> Expr {
        Expr::Ref(self.names.id(name))
    }

    /// Rule `rule_name` standing for rule `target`.
    pub(super) fn alias_rule(&mut self, rule_name: &str, target: &str) -> String {
        let e = self.r(target);
        self.add_rule_ir(rule_name, rules::seq(vec![e]))
    }

    /// Rule `rule_name` with a body built as IR or (compat copies of llama.cpp's text
    /// constructions) as text.
    pub(super) fn add_body(&mut self, rule_name: &str, body: Built) -> String {
        match body {
            Built::Ir(b) => self.add_rule_ir(rule_name, b),
            Built::Text(t) => self.add_text_rule(rule_name, &t),
        }
    }

    /// Rule `rule_name`: one of the rules `alts`.
    pub(super) fn union_rule(&mut self, rule_name: &str, alts: &[String]) -> String {
        if alts.is_empty() {
            // Compat `anyOf: []`: llama.cpp writes an empty body.
            return self.add_rule_ir(rule_name, Frag::new().into_body());
        }
        let body = alts.iter().map(|a| self.r(a)).collect::<Vec<_>>();
        self.add_rule_ir(rule_name, rules::alts(body))
    }

    /// Whether a rule of this exact name exists.
    pub(super) fn has_rule(&self, name: &str) -> bool {
        self.rules.contains_key(name)
    }

    pub(super) fn add_primitive(&mut self, name: &str, prim: &str) -> Result<String, SchemaError> {
        let strict = self.opts.strict;
        let b = primitive(prim, strict).ok_or_else(|| err("type", "", format!("unknown primitive {prim}")))?;
        // Adding the same built-in under the same name again finds the same rule (rules are
        // never replaced): answered without comparing bodies.
        if let Some((body, n)) = self.primitives.get(name) {
            if std::ptr::eq(*body, b.body) {
                return Ok(n.clone());
            }
        }
        let body = self.fixed(b.body);
        let n = self.add_rule_ir(name, body);
        for dep in b.deps {
            if !self.rules.contains_key(*dep) {
                self.add_primitive(dep, dep)?;
            }
        }
        self.primitives.insert(name.to_string(), (b.body, n.clone()));
        Ok(n)
    }

    fn ignore(&mut self, keyword: &str, ptr: &str) {
        self.ignored.push(format!("{keyword} at #{ptr}"));
    }

    /// Strict mode: refuse (or, lenient, record) `keyword` at `ptr`.
    pub(super) fn refuse(&mut self, keyword: &str, ptr: &str, reason: &str) -> Result<(), SchemaError> {
        if self.opts.lenient {
            self.ignore(keyword, ptr);
            Ok(())
        } else {
            Err(err(keyword, ptr, reason))
        }
    }

    pub(super) fn resolve_pointer(&self, reference: &str, ptr: &str) -> Result<&'a Value, SchemaError> {
        let Some(frag) = reference.strip_prefix('#') else {
            return Err(err("$ref", ptr, format!("unsupported reference {reference:?} (only local #/... references)")));
        };
        if frag.is_empty() {
            return Ok(self.root);
        }
        let Some(path) = frag.strip_prefix('/') else {
            return Err(err("$ref", ptr, format!("unsupported reference {reference:?}")));
        };
        let mut cur = self.root;
        for tok in path.split('/') {
            let tok = tok.replace("~1", "/").replace("~0", "~");
            let tok = percent_decode(&tok);
            cur = match cur {
                Value::Object(m) => m.get(&tok),
                Value::Array(a) => tok.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            }
            .ok_or_else(|| err("$ref", ptr, format!("cannot resolve {reference:?}")))?;
        }
        Ok(cur)
    }

    fn resolve_ref(&mut self, reference: &str, ptr: &str) -> Result<String, SchemaError> {
        let frag = reference.rsplit('#').next().unwrap_or(reference);
        let mut ref_name = format!("ref{}", rule_name_chars(frag));
        if !self.rules.contains_key(&ref_name) && !self.resolving.contains(reference) {
            let target = self.resolve_pointer(reference, ptr)?;
            self.resolving.insert(reference.to_string());
            self.ref_names.insert(ref_name.clone());
            let target_ptr = reference.trim_start_matches('#').to_string();
            let visited = self.visit(target, &ref_name, &target_ptr);
            // Done resolving whether or not it failed: a target no value satisfies stays "in
            // progress" otherwise, and the next reference to it would name a rule never written.
            self.resolving.remove(reference);
            self.ref_names.remove(&ref_name);
            ref_name = visited?;
        }
        Ok(ref_name)
    }

    /// The rules of a compat union's alternatives.
    fn union(&mut self, name: &str, alts: &[Value], ptr: &str, kw: &str) -> Result<Vec<String>, SchemaError> {
        let mut rules = Vec::new();
        for (i, a) in alts.iter().enumerate() {
            let sub = if name.is_empty() { format!("alternative-{i}") } else { format!("{name}-{i}") };
            rules.push(self.visit(a, &sub, &format!("{ptr}/{kw}/{i}"))?);
        }
        Ok(rules)
    }

    /// Strict mode: the keywords of `obj` that constrain instances of the type this branch
    /// produces but are not in `honored`.
    pub(super) fn check_honored(
        &mut self,
        obj: &Map<String, Value>,
        ptr: &str,
        produces: &[&str],
        honored: &[&str],
    ) -> Result<(), SchemaError> {
        if !self.opts.strict {
            return Ok(());
        }
        for k in obj.keys() {
            if !SUPPORTED.contains(&k.as_str()) || honored.contains(&k.as_str()) {
                continue;
            }
            let relevant = match applies_to(k) {
                None => true,
                Some("number") => produces.contains(&"number") || produces.contains(&"integer"),
                Some(t) => produces.contains(&t),
            };
            if k == "uniqueItems" && obj[k] != Value::Bool(true) {
                continue;
            }
            if k == "additionalItems" {
                continue; // tuples are fixed-length: never more items than listed
            }
            if k == "additionalProperties" && obj[k] == Value::Bool(true) {
                continue; // allows what is allowed anyway
            }
            if relevant {
                self.refuse(k, ptr, "cannot be enforced together with the other keywords of this schema")?;
            }
        }
        Ok(())
    }

    /// Strict mode: keywords we never enforce, and formats we cannot check.
    fn check_keywords(&mut self, kw: &Keywords, ptr: &str) -> Result<(), SchemaError> {
        let obj = kw.map;
        for k in obj.keys() {
            if UNSUPPORTED.contains(&k.as_str()) {
                self.refuse(k, ptr, "keyword not supported")?;
            }
            // Vacuous for at most one item; checked value by value next to enum/const.
            let decidable = || {
                kw.enumeration.is_some()
                    || kw.constant.is_some()
                    || super::arrays::unique_items_supported(self.root, obj)
            };
            if k == "uniqueItems" && obj[k] == Value::Bool(true) && !decidable() {
                self.refuse(k, ptr, "uniqueItems cannot be enforced by a grammar")?;
            }
        }
        if let Some(f) = kw.format {
            if kw.ty.allows_strings()
                && STANDARD_FORMATS.contains(&f)
                && !ENFORCED_FORMATS.contains(&f)
                && !f.starts_with("uuid")
            {
                self.refuse("format", ptr, &unenforced_format(f))?;
            }
        }
        Ok(())
    }

    /// Strict mode, a schema without `type`: the JSON types it admits, when it has keywords
    /// that constrain only some types (`items` constrains arrays and admits every non-array).
    /// `None` when it has none, or lists values (`enum`/`const` are checked value by value).
    /// Types an `allOf` component rules out are left out (a smaller grammar, same language).
    fn implied_types(&self, kw: &Keywords) -> Option<Vec<&'static str>> {
        if kw.enumeration.is_some() || kw.constant.is_some() {
            return None;
        }
        if super::ir::Node::of_map(kw.map).constrained_types().is_empty() {
            return None;
        }
        let mut types = vec!["object", "array", "string", "number", "boolean", "null"];
        for c in kw.all_of.and_then(Value::as_array).into_iter().flatten() {
            if let Some(ts) = super::shape::declared_types(self.root, c) {
                types.retain(|t| super::shape::overlaps(t, &ts));
            }
        }
        Some(types)
    }

    /// Strict `allOf` as one schema, when it can be written exactly: a lone titled reference
    /// (its target's own rule, written once however often it is used; merging would copy the
    /// target in and convert it again at every use), or the components merged.
    fn exact_all_of<'v>(&self, kw: &Keywords<'v>, ptr: &str) -> Option<AllOf<'v>> {
        if let Some((r, rptr)) = lone_ref_in_all_of(kw.map, ptr) {
            return Some(AllOf::Reference(r, rptr));
        }
        super::shape::merge_all_of(self.root, kw.map).map(AllOf::Merged)
    }

    /// Converts `schema` (at JSON pointer `ptr`) into a rule; returns the rule name.
    pub fn visit(&mut self, schema: &Value, name: &str, ptr: &str) -> Result<String, SchemaError> {
        if self.depth >= MAX_DEPTH {
            return Err(err("$ref", ptr, format!("schema nesting deeper than {MAX_DEPTH} (a recursive reference?)")));
        }
        // Strict mode: a long path-derived name (llama.cpp names each rule after its whole
        // property path) is replaced by a short one, and so are the names of the rules below
        // it, which are derived from it. Names only link rules (`add_rule` never lets two
        // different bodies share one), and the compacted output renames rules anyway; long
        // names made the converter's text several times longer than its output.
        let alias;
        let name = if self.opts.strict && name.len() > MAX_NAME && !self.ref_names.contains(name) {
            alias = format!("n{}", self.aliases);
            self.aliases += 1;
            alias.as_str()
        } else {
            name
        };
        self.depth += 1;
        let r = self.visit_node(schema, name, ptr);
        self.depth -= 1;
        r
    }

    fn visit_node(&mut self, schema: &Value, name: &str, ptr: &str) -> Result<String, SchemaError> {
        let rule_name = if is_reserved(name) {
            format!("{name}-")
        } else if name.is_empty() {
            "root".to_string()
        } else {
            name.to_string()
        };
        let strict = self.opts.strict;
        let obj = match schema {
            Value::Object(m) => m,
            Value::Bool(true) if strict => {
                let v = self.add_primitive("value", "value")?;
                return Ok(self.alias_rule(&rule_name, &v));
            }
            Value::Bool(false) if strict => return Err(err("(schema)", ptr, format!("{UNSAT} (the schema is false)"))),
            _ => return Err(err("(schema)", ptr, "a schema must be an object")),
        };
        let kw = Keywords::parse(obj);
        if strict {
            self.check_keywords(&kw, ptr)?;
            if kw.not.is_some_and(is_annotation_only) {
                return Err(err("not", ptr, format!("{UNSAT} (not of a schema every value satisfies)")));
            }
        }
        let form = kw.form(strict, |k| self.implied_types(k), |k| self.exact_all_of(k, ptr));
        let ty_str = kw.ty.name();
        match form {
            Form::Ref(r) => {
                let r = r.as_str().ok_or_else(|| err("$ref", ptr, "must be a string"))?;
                if strict && !self.draft7_or_older {
                    self.check_honored(obj, ptr, &ALL_TYPES, &["$ref"])?;
                }
                let target = self.resolve_ref(r, ptr)?;
                Ok(self.alias_rule(&rule_name, &target))
            }
            Form::Union { kw: which, alts } => {
                let alts = alts.as_array().ok_or_else(|| err(which, ptr, "must be an array"))?;
                if strict {
                    return self.strict_union(obj, which, alts, name, &rule_name, ptr);
                }
                let rules = self.union(name, alts, ptr, which)?;
                Ok(self.union_rule(&rule_name, &rules))
            }
            Form::ImpliedTypes(types) => {
                // Keywords constrain only instances of their own type: a schema without
                // `type` accepts every other type unconstrained. Written as a type union, each
                // branch then honours only the keywords of its type.
                let mut m = obj.clone();
                m.insert("type".into(), Value::Array(types.into_iter().map(Value::from).collect()));
                self.visit_as(&Value::Object(m), name, &rule_name, ptr)
            }
            Form::TypeList(types) => self.type_union(obj, types, name, &rule_name, ptr),
            Form::BadType(ty) => Err(err("type", ptr, format!("unrecognized type {ty}"))),
            Form::AllOfExact(AllOf::Reference(r, rptr)) => {
                let target = self.resolve_ref(r, &rptr)?;
                Ok(self.alias_rule(&rule_name, &target))
            }
            Form::AllOfExact(AllOf::Merged(merged)) => self.visit_as(&merged, name, &rule_name, ptr),
            Form::Const(c) => {
                if strict {
                    self.check_enum_siblings(obj, std::slice::from_ref(c), ptr, "const")?;
                }
                let lit = if strict { canonical_constant_lit(c) } else { constant_lit(c) };
                self.member_orders.record_constant(c);
                let space = self.r("space");
                Ok(self.add_rule_ir(&rule_name, rules::seq(vec![lit, space])))
            }
            Form::Enum(e) => {
                let vals = e.as_array().ok_or_else(|| err("enum", ptr, "must be an array"))?;
                let vals = if strict { self.check_enum_siblings(obj, vals, ptr, "enum")? } else { vals.clone() };
                if vals.is_empty() {
                    // Compat `enum: []`: `() space`, an empty group as llama.cpp writes it.
                    let space = self.r("space");
                    return Ok(self.add_rule_ir(&rule_name, rules::seq(vec![Frag::group(vec![Frag::new()]), space])));
                }
                let lit = if strict { canonical_constant_lit } else { constant_lit };
                let group = Expr::Group(rules::alts(vals.iter().map(lit)));
                vals.iter().for_each(|v| self.member_orders.record_constant(v));
                let space = self.r("space");
                Ok(self.add_rule_ir(&rule_name, rules::seq(vec![group, space])))
            }
            Form::Dependencies => {
                let expanded = self.expand_dependencies(obj, ptr)?;
                self.visit_as(&expanded, name, &rule_name, ptr)
            }
            Form::Object => self.object(&kw, name, &rule_name, ptr),
            Form::AllOf => self.all_of(obj, name, &rule_name, ptr),
            Form::StrictArray => self.strict_array(obj, name, &rule_name, ptr),
            Form::Array => self.array(&kw, name, &rule_name, ptr),
            Form::StringAutomaton => self.string_automaton(schema, &rule_name, ptr),
            Form::Pattern(pat) => {
                let pat = pat.as_str().ok_or_else(|| err("pattern", ptr, "must be a string"))?;
                if !strict {
                    return match pattern_to_rule(pat, &rule_name, self) {
                        Ok(body) => Ok(self.add_text_rule(&rule_name, &body)),
                        Err(e) => Err(err("pattern", ptr, e)),
                    };
                }
                self.check_honored(obj, ptr, &["string"], &["type", "pattern"])?;
                let ch = self.add_primitive("char", "char")?;
                let ch = self.r(&ch);
                let body = pattern_items(pat, &ch).map_err(|e| err("pattern", ptr, e))?;
                let quote = Expr::lit_spelled("\"", "\\\"");
                let mut items = vec![quote.clone()];
                items.extend(body);
                items.extend([quote, self.r("space")]);
                Ok(self.add_rule_ir(&rule_name, rules::seq(items)))
            }
            Form::Uuid => {
                if strict {
                    self.check_honored(obj, ptr, &["string"], &["type", "format"])?;
                }
                let n = if rule_name == "root" { "root".to_string() } else { kw.format_name().to_string() };
                self.add_primitive(&n, "uuid")
            }
            Form::FormatPrimitive => {
                if strict {
                    self.check_honored(obj, ptr, &["string"], &["type", "format"])?;
                }
                let fmt_rule = format!("{}-string", kw.format_name());
                let p = self.add_primitive(&fmt_rule, &fmt_rule)?;
                Ok(self.alias_rule(&rule_name, &p))
            }
            Form::StringLength => self.string_length(&kw, &rule_name, ptr),
            Form::MultipleOf => {
                if super::numeric_range::multiple_supported(obj) {
                    let honored = ["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];
                    self.check_honored(obj, ptr, &[ty_str.unwrap_or("number")], &honored)?;
                    let body = self.numeric_range(obj, ty_str == Some("integer"), &rule_name, ptr)?;
                    return Ok(self.add_rule_ir(&rule_name, body));
                }
                match self.multiple_of(obj, ty_str == Some("integer"), &rule_name, ptr)? {
                    Ok(rule) => Ok(rule),
                    Err(rest) => self.visit(&rest, name, ptr),
                }
            }
            Form::NumericRange => {
                let honored = ["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
                self.check_honored(obj, ptr, &[ty_str.unwrap_or("number")], &honored)?;
                let body = self.numeric_range(obj, ty_str == Some("integer"), &rule_name, ptr)?;
                Ok(self.add_rule_ir(&rule_name, body))
            }
            Form::IntegerBounds => {
                if strict {
                    let honored = ["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
                    self.check_honored(obj, ptr, &["integer"], &honored)?;
                }
                let (lo, hi) = self.int_bounds(obj, ptr)?;
                if let (Some(l), Some(h)) = (lo, hi) {
                    if l > h {
                        return Err(err("minimum", ptr, "minimum is above maximum: no integer is valid"));
                    }
                }
                let digits = Frag::group(min_max_int(lo, hi));
                let space = self.r("space");
                Ok(self.add_rule_ir(&rule_name, rules::seq(vec![digits, space])))
            }
            Form::AnyValue => {
                // No type: any value, minus what the assertions exclude; we only allow it when no
                // assertion keyword is present.
                self.check_honored(obj, ptr, &ALL_TYPES, &[])?;
                let v = self.add_primitive("value", "value")?;
                Ok(self.alias_rule(&rule_name, &v))
            }
            Form::AnyObject => {
                if strict {
                    self.check_honored(obj, ptr, &["object"], &["type", "additionalProperties"])?;
                }
                let o = self.add_primitive("object", "object")?;
                Ok(self.alias_rule(&rule_name, &o))
            }
            Form::Primitive(t) => {
                if !matches!(t, "boolean" | "number" | "integer" | "string" | "null" | "array") {
                    return Err(err("type", ptr, format!("unrecognized schema type {t:?}")));
                }
                if strict {
                    self.check_honored(obj, ptr, &[t], &["type", "format"])?;
                }
                let n = if rule_name == "root" { "root".to_string() } else { t.to_string() };
                self.add_primitive(&n, t)
            }
        }
    }

    /// `schema`, a rewriting of the node being converted, converted under its name: its rule,
    /// or a rule of the node's name pointing at it.
    fn visit_as(&mut self, schema: &Value, name: &str, rule_name: &str, ptr: &str) -> Result<String, SchemaError> {
        let r = self.visit(schema, name, ptr)?;
        Ok(if r == rule_name { r } else { self.alias_rule(rule_name, &r) })
    }

    /// Strict `anyOf`/`oneOf` (`which`): the sibling keywords merged into each alternative,
    /// an absorbing `anyOf` alternative alone, `oneOf` alternatives made exclusive;
    /// alternatives no value satisfies are left out.
    fn strict_union(
        &mut self,
        obj: &Map<String, Value>,
        which: &'static str,
        alts: &[Value],
        name: &str,
        rule_name: &str,
        ptr: &str,
    ) -> Result<String, SchemaError> {
        let kw = which;
        // Next to `oneOf`, an `anyOf` is one more sibling assertion merged into each
        // alternative (exclusivity is then proved on the conjoined alternatives).
        // Sibling assertions apply to every alternative: merge them into each one.
        let mut sib = Map::new();
        for (k, v) in obj {
            if k != kw && (SUPPORTED.contains(&k.as_str())) {
                sib.insert(k.clone(), v.clone());
            }
        }
        let mut merged = Vec::with_capacity(alts.len());
        for (i, a) in alts.iter().enumerate() {
            if sib.is_empty() {
                merged.push(a.clone());
                continue;
            }
            let mut a = a.clone();
            if let Some(r) = a.get("$ref").and_then(Value::as_str).filter(|_| self.draft7_or_older) {
                // Up to draft 7 a `$ref`'s siblings are ignored; later drafts apply them,
                // and the merge refuses a `$ref` with sibling assertions.
                a = self.resolve_pointer(r, ptr)?.clone();
            }
            match super::shape::merge_schemas(self.root, &Value::Object(sib.clone()), &a) {
                Ok(m) => merged.push(m),
                Err(reason) => {
                    self.refuse(
                        kw,
                        &format!("{ptr}/{kw}/{i}"),
                        &format!("cannot combine with the sibling keywords: {reason}"),
                    )?;
                    merged.push(a);
                }
            }
        }
        if kw == "anyOf" {
            if let Some(i) = absorbing(self.root, &merged) {
                let sub = if name.is_empty() { format!("alternative-{i}") } else { format!("{name}-{i}") };
                let r = self.visit(&merged[i], &sub, &format!("{ptr}/{kw}/{i}"))?;
                return Ok(self.alias_rule(rule_name, &r));
            }
        }
        if kw == "oneOf" {
            match make_exclusive(self.root, &merged) {
                Ok(narrowed) => merged = narrowed,
                Err(reason) => self.refuse("oneOf", &format!("{ptr}/oneOf"), &reason)?,
            }
            if merged.iter().all(|a| *a == Value::Bool(false)) {
                let why = "no alternative can match alone (identical or unsatisfiable alternatives)";
                return Err(err("oneOf", &format!("{ptr}/oneOf"), format!("{UNSAT}: {why}")));
            }
        }
        let mut rules = Vec::new();
        let mut last_err = None;
        for (i, a) in merged.iter().enumerate() {
            let sub = if name.is_empty() { format!("alternative-{i}") } else { format!("{name}-{i}") };
            match self.visit(a, &sub, &format!("{ptr}/{kw}/{i}")) {
                Ok(r) => rules.push(r),
                Err(e) if is_unsatisfiable(&e) => last_err = Some(e),
                Err(e) => return Err(e),
            }
        }
        if rules.is_empty() {
            return Err(last_err.unwrap_or_else(|| err(kw, ptr, UNSAT)));
        }
        Ok(self.union_rule(rule_name, &rules))
    }

    /// `type` listing several types: one branch per type (strict: each carrying only its own
    /// type's keywords and those of every type, so no other type's keyword can steer it);
    /// strict branches no value satisfies are left out.
    fn type_union(
        &mut self,
        obj: &Map<String, Value>,
        types: &[Value],
        name: &str,
        rule_name: &str,
        ptr: &str,
    ) -> Result<String, SchemaError> {
        let strict = self.opts.strict;
        let alts: Vec<Value> = types
            .iter()
            .map(|t| match (strict, t.as_str()) {
                (true, Some(name)) => Value::Object(super::ir::project(obj, name)),
                _ => {
                    let mut m = obj.clone();
                    m.insert("type".into(), t.clone());
                    Value::Object(m)
                }
            })
            .collect();
        let mut rules = Vec::new();
        let mut last_err = None;
        for (i, a) in alts.iter().enumerate() {
            let sub = if name.is_empty() { format!("alternative-{i}") } else { format!("{name}-{i}") };
            match self.visit(a, &sub, ptr) {
                Ok(r) => rules.push(r),
                Err(e) if strict && is_unsatisfiable(&e) => last_err = Some(e),
                Err(e) => return Err(e),
            }
        }
        if rules.is_empty() {
            return Err(last_err.unwrap_or_else(|| err("type", ptr, UNSAT)));
        }
        Ok(self.union_rule(rule_name, &rules))
    }

    /// An object rule: named members (required, optional), extra keys, key spaces from
    /// `patternProperties`/`propertyNames`, member counts.
    fn object(&mut self, kw: &Keywords, name: &str, rule_name: &str, ptr: &str) -> Result<String, SchemaError> {
        let strict = self.opts.strict;
        let obj = kw.map;
        if strict {
            let honored: &[&str] = &[
                "type",
                "properties",
                "required",
                "additionalProperties",
                "patternProperties",
                "propertyNames",
                "minProperties",
                "maxProperties",
            ];
            self.check_honored(obj, ptr, &["object"], honored)?;
            if kw.all_of.is_some() {
                self.refuse("allOf", ptr, "allOf next to properties is not supported")?;
            }
        }
        let required: BTreeSet<String> = kw
            .required
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default();
        // Borrowed from the schema (a deep copy per nesting level added up on big schemas).
        let mut props: Vec<(String, Cow<Value>)> = match kw.properties {
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), Cow::Borrowed(v))).collect(),
            Some(_) => return Err(err("properties", ptr, "must be an object")),
            None => vec![],
        };
        let addl = kw.additional_properties;
        let addl: Option<Cow<Value>> = if strict {
            match addl {
                None if self.opts.closed_objects => Some(Cow::Owned(Value::Bool(false))),
                None => Some(Cow::Owned(Value::Bool(true))),
                other => other.map(Cow::Borrowed),
            }
        } else {
            addl.map(Cow::Borrowed)
        };
        let mut extras = ObjectExtras::default();
        if strict {
            for r in &required {
                if props.iter().any(|(k, _)| k == r) {
                    continue;
                }
                // Its value takes the schemas of the patterns its name matches (`key_space`
                // conjoins them with the value schema named here), or `additionalProperties`
                // when it matches none, as any unlisted name's does.
                let value = match self.matches_pattern_property(obj, r, ptr)? {
                    true => Cow::Owned(Value::Bool(true)),
                    false => addl.clone().unwrap_or(Cow::Owned(Value::Bool(true))),
                };
                props.push((r.clone(), value));
            }
            if let Some(space) = self.key_space(obj, &props, addl.as_deref(), ptr)? {
                props = space.props.into_iter().map(|(k, v)| (k, Cow::Owned(v))).collect();
                extras.classes = Some(space.classes);
            }
            let min = kw.min_properties.unwrap_or(0);
            let max = kw.max_properties;
            if min > 0 || max.is_some() {
                extras.count = Some((min, max));
            }
        }
        let body = self.object_rule(&props, &required, name, addl.as_deref(), ptr, &extras)?;
        Ok(self.add_body(rule_name, body))
    }

    /// `items`/`prefixItems` outside strict `type: array`: a tuple, or items with counts.
    fn array(&mut self, kw: &Keywords, name: &str, rule_name: &str, ptr: &str) -> Result<String, SchemaError> {
        let strict = self.opts.strict;
        if strict {
            self.check_honored(
                kw.map,
                ptr,
                &["array"],
                &["type", "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "additionalItems"],
            )?;
            if kw.items.is_some() && kw.prefix_items.is_some() {
                self.refuse("prefixItems", ptr, "prefixItems together with items is not supported")?;
            }
        }
        let (items, key) = match kw.items.filter(|v| !v.is_null()) {
            Some(i) => (i.clone(), "items"),
            None => (kw.prefix_items.cloned().unwrap_or(Value::Null), "prefixItems"),
        };
        if let Value::Array(list) = &items {
            if strict && (kw.min_items.is_some() || kw.max_items.is_some()) {
                self.refuse("minItems", ptr, "minItems/maxItems with a tuple are not supported")?;
            }
            let mut parts = Vec::new();
            for (i, it) in list.iter().enumerate() {
                let sub = format!("{name}{}tuple-{i}", if name.is_empty() { "" } else { "-" });
                parts.push(self.visit(it, &sub, &format!("{ptr}/{key}/{i}"))?);
            }
            if parts.is_empty() {
                // Written `"[" space  "]" space` (two spaces, as llama.cpp does).
                let space = self.r("space");
                let mut f = Frag::of(vec![Expr::lit("["), space.clone()]);
                f.space();
                let f = f.then(Frag::of(vec![Expr::lit("]"), space]));
                return Ok(self.add_rule_ir(rule_name, f.into_body()));
            }
            let (open, close, comma, space) = (Expr::lit("["), Expr::lit("]"), Expr::lit(","), self.r("space"));
            let mut items = vec![open, space.clone()];
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    items.extend([comma.clone(), space.clone()]);
                }
                items.push(self.r(p));
            }
            items.extend([close, space]);
            return Ok(self.add_rule_ir(rule_name, rules::seq(items)));
        }
        let sub = format!("{name}{}item", if name.is_empty() { "" } else { "-" });
        let item = self.visit(&items, &sub, &format!("{ptr}/{key}"))?;
        let min = kw.min_items.unwrap_or(0);
        let max = kw.max_items;
        if strict
            && (min > crate::parse::MAX_REPETITIONS as usize
                || max.is_some_and(|m| m > crate::parse::MAX_REPETITIONS as usize))
        {
            self.refuse("maxItems", ptr, "item counts above 2000 are not supported")?;
        }
        if max.is_some_and(|m| m < min) {
            return Err(err("maxItems", ptr, "maxItems is below minItems: no array is valid"));
        }
        let space = self.r("space");
        let sep = [Expr::lit(","), space.clone()];
        let item_ref = self.r(&item);
        // Stray spaces (at most one item) printed as llama.cpp writes them.
        let rep = super::repetition_frag(item_ref, min, max, Some(&sep));
        let f = Frag::of(vec![Expr::lit("["), space.clone()]).then(rep).then(Frag::of(vec![Expr::lit("]"), space]));
        Ok(self.add_rule_ir(rule_name, f.into_body()))
    }

    /// `minLength`/`maxLength` on a `type: string` (long ones through counted helper rules).
    fn string_length(&mut self, kw: &Keywords, rule_name: &str, ptr: &str) -> Result<String, SchemaError> {
        let strict = self.opts.strict;
        if strict {
            self.check_honored(kw.map, ptr, &["string"], &["type", "minLength", "maxLength", "format"])?;
        }
        let ch = self.add_primitive("char", "char")?;
        let min = kw.min_length.unwrap_or(0);
        let max = kw.max_length;
        if max.is_some_and(|m| m < min) {
            return Err(err("maxLength", ptr, "maxLength is below minLength: no string is valid"));
        }
        if strict
            && (min > crate::parse::MAX_REPETITIONS as usize
                || max.is_some_and(|m| m > crate::parse::MAX_REPETITIONS as usize))
        {
            if min > 2_000_000 || max.is_some_and(|m| m > 2_000_000) {
                self.refuse("maxLength", ptr, "lengths above 2,000,000 are not supported")?;
            }
            let ch = self.r(&ch);
            let rep = self.big_repetition(&ch, min, max, rule_name);
            let quote = Expr::lit_spelled("\"", "\\\"");
            let f = Frag::from(quote.clone()).then(rep).then(Frag::of(vec![quote, self.r("space")]));
            return Ok(self.add_rule_ir(rule_name, f.into_body()));
        }
        let quote = Expr::lit_spelled("\"", "\\\"");
        // No characters (`maxLength: 0`) leaves two spaces, as llama.cpp writes it.
        let rep = super::repetition_frag(self.r(&ch), min, max, None);
        let f = Frag::from(quote.clone()).then(rep).then(Frag::of(vec![quote, self.r("space")]));
        Ok(self.add_rule_ir(rule_name, f.into_body()))
    }

    /// Strict mode: keeps the enum values that satisfy the sibling assertions we can check.
    fn check_enum_siblings(
        &mut self,
        obj: &Map<String, Value>,
        vals: &[Value],
        ptr: &str,
        kw: &str,
    ) -> Result<Vec<Value>, SchemaError> {
        let mut kept: Vec<Value> = match obj.get("type") {
            Some(Value::String(t)) => vals.iter().filter(|v| json_type_matches(v, t)).cloned().collect(),
            _ => vals.to_vec(),
        };
        // `const` next to `enum`: the values in both.
        if let (Some(c), Some(Value::Array(e))) = (obj.get("const"), obj.get("enum")) {
            kept.retain(|v| v == c && e.contains(v));
        }
        for k in obj.keys() {
            if !(SUPPORTED.contains(&k.as_str()) || UNSUPPORTED.contains(&k.as_str()))
                || matches!(k.as_str(), "type" | "enum" | "const")
            {
                continue;
            }
            let enforced_format = obj[k].as_str().filter(|f| k == "format" && ENFORCED_FORMATS.contains(f));
            let verdicts: Option<Vec<bool>> = match enforced_format {
                Some(f) => Some(format_accepts(f, &kept).map_err(|e| err("format", ptr, e))?),
                None => kept.iter().map(|v| satisfies(obj, k, v)).collect(),
            };
            match verdicts {
                Some(ok) => {
                    let mut it = ok.into_iter();
                    kept.retain(|_| it.next().unwrap_or(false));
                }
                None => self.refuse(k, ptr, &format!("cannot be enforced next to {kw}"))?,
            }
        }
        if kept.is_empty() {
            return Err(err(kw, ptr, UNSAT));
        }
        Ok(kept)
    }
}

/// The reference of a schema that is `allOf` with one component, that component a `$ref`,
/// and nothing but annotations beside either (with the component's pointer). Such a schema
/// is its reference's target exactly: annotations constrain nothing.
fn lone_ref_in_all_of<'v>(obj: &'v Map<String, Value>, ptr: &str) -> Option<(&'v str, String)> {
    let only_annotations = |m: &Map<String, Value>, own: &str| {
        m.keys().all(|k| k == own || super::keywords::ANNOTATIONS.contains(&k.as_str()))
    };
    let [Value::Object(c)] = obj.get("allOf")?.as_array()?.as_slice() else { return None };
    if !only_annotations(obj, "allOf") || !only_annotations(c, "$ref") {
        return None;
    }
    Some((c.get("$ref")?.as_str()?, format!("{ptr}/allOf/0")))
}

/// The reason given when a schema admits no instance.
pub(super) const UNSAT: &str = "no value satisfies the schema";

pub(super) fn is_unsatisfiable(e: &SchemaError) -> bool {
    e.reason.starts_with(UNSAT)
        || e.reason.contains("no number satisfies")
        || e.reason.contains("is below")
        || e.reason.contains("is above")
}

pub(super) fn as_count(v: Option<&Value>) -> usize {
    v.and_then(Value::as_f64).map(|f| f.max(0.0) as usize).unwrap_or(0)
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::json_schema::test_util::check;

    #[test]
    fn a_titled_reference_in_all_of_is_the_reference() {
        // How generators attach a title to a reference: the target's language, converted
        // once however often it is used, recursion included (merging it in at every use
        // recursed until the nesting limit and refused the schema).
        let s = json!({"definitions": {
            "node": {"type": "object", "additionalProperties": false, "required": ["v"], "properties": {
                "v": {"type": "integer", "minimum": 0},
                "kids": {"type": "array", "items": {"title": "kid", "allOf": [{"$ref": "#/definitions/node"}]}}
            }}},
            "type": "object", "additionalProperties": false, "properties": {
                "a": {"title": "A", "description": "d", "allOf": [{"$ref": "#/definitions/node"}]},
                "b": {"default": {"v": 1}, "allOf": [{"$ref": "#/definitions/node"}]}
            }
        });
        check(
            s,
            &[r#"{}"#, r#"{"a":{"v":1}}"#, r#"{"a":{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]},"b":{"v":0}}"#],
            &[r#"{"a":{"v":-1}}"#, r#"{"a":{"kids":[]}}"#, r#"{"b":{"v":1,"kids":[{"v":"x"}]}}"#, r#"{"c":1}"#],
        );
    }
}
