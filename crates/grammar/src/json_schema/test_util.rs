//! Test helpers: compile a schema strictly and judge instances by feeding them through the
//! grammar in the layout the grammar writes (as the JSONSchemaBench test does).

use std::ops::Deref;

use serde_json::Value;

use super::relayout::{feed_json_in, parse_json, MemberOrders};
use super::{schema_to_gbnf, SchemaOptions};
use crate::Matcher;

/// A compiled schema's matcher with the member orders its documents are laid out in.
pub struct Compiled {
    pub m: Matcher,
    pub orders: MemberOrders,
}

impl Deref for Compiled {
    type Target = Matcher;
    fn deref(&self) -> &Matcher {
        &self.m
    }
}

/// The strict compile of `schema`, or the refusal text.
pub fn compile(schema: &Value) -> Result<Compiled, String> {
    let g = schema_to_gbnf(schema, &SchemaOptions::default()).map_err(|e| e.to_string())?;
    let m = Matcher::from_gbnf(&g.gbnf).map_err(|e| format!("{e}\n{}", g.gbnf))?;
    Ok(Compiled { m, orders: g.member_orders })
}

/// Whether the compiled grammar accepts `instance` (JSON text); an undecided check fails.
pub fn accepts(c: &Compiled, instance: &str) -> bool {
    let v = feed_json_in(&c.m, &parse_json(instance).expect("test instance is JSON"), &c.orders);
    assert!(!v.gave_up, "undecided: {instance}");
    v.accepted
}

/// Asserts that `schema` compiles, accepts every `good` and rejects every `bad` instance.
pub fn check(schema: Value, good: &[&str], bad: &[&str]) {
    let m = compile(&schema).unwrap_or_else(|e| panic!("{schema}: refused: {e}"));
    for g in good {
        assert!(accepts(&m, g), "{schema}: should accept {g}");
    }
    for b in bad {
        assert!(!accepts(&m, b), "{schema}: should reject {b}");
    }
}

/// Asserts that `schema` is refused with an error naming `keyword`.
pub fn refused(schema: Value, keyword: &str) {
    match schema_to_gbnf(&schema, &SchemaOptions::default()) {
        Ok(g) => panic!("{schema}: compiled, expected a refusal naming {keyword}:\n{}", g.gbnf),
        Err(e) => assert_eq!(e.keyword, keyword, "{schema}: {e}"),
    }
}

/// Debug aid (ignored): prints the strict grammar of the schema in `$SCHEMA_FILE`.
#[test]
#[ignore]
fn print_grammar() {
    let path = std::env::var("SCHEMA_FILE").expect("SCHEMA_FILE");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let s = if v.get("schema").is_some() && v.get("tests").is_some() { v["schema"].clone() } else { v };
    match schema_to_gbnf(&s, &SchemaOptions::default()) {
        Ok(g) => println!("{}", g.gbnf),
        Err(e) => println!("ERR {e}"),
    }
}

/// Debug aid (ignored): writes random outputs of the strict grammar of every schema file in
/// `$FUZZ_DIR` to `$FUZZ_OUT` (one JSON line per output: file name and text), for checking
/// against an independent validator.
#[test]
#[ignore]
fn fuzz_outputs() {
    use std::io::Write;
    let dir = std::env::var("FUZZ_DIR").expect("FUZZ_DIR");
    let n: usize = std::env::var("FUZZ_N").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let mut out = std::fs::File::create(std::env::var("FUZZ_OUT").expect("FUZZ_OUT")).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut alphabet: Vec<String> = (0x20u8..0x7F).map(|b| (b as char).to_string()).collect();
    alphabet.extend(["é", "\u{2028}", "😀"].map(String::from));
    // Short names and small numbers more often, so named properties get hit.
    for _ in 0..6 {
        alphabet.extend("abcdjpqrsuvxy01\"".chars().map(String::from));
    }
    for f in files {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let s = if v.get("schema").is_some() && v.get("tests").is_some() { v["schema"].clone() } else { v };
        let Ok(m) = compile(&s) else { continue };
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        for _ in 0..n {
            let mut cur = m.clone();
            let mut text = String::new();
            let mut ok = false;
            for _ in 0..4000 {
                if cur.can_end() && (rnd() % 4 == 0 || text.len() > 1500) {
                    ok = true;
                    break;
                }
                let mut order: Vec<usize> = (0..alphabet.len()).collect();
                for i in (1..order.len()).rev() {
                    order.swap(i, (rnd() % (i as u64 + 1)) as usize);
                }
                if text.len() > 300 || rnd() % 3 == 0 {
                    // Prefer closing characters so outputs end.
                    order.sort_by_key(|&i| !matches!(alphabet[i].as_str(), "\"" | "}" | "]" | "0" | "1"));
                }
                let Some(&i) = order.iter().find(|&&i| cur.allows_bytes(alphabet[i].as_bytes())) else { break };
                cur.accept_bytes(alphabet[i].as_bytes()).unwrap();
                text.push_str(&alphabet[i]);
            }
            if ok {
                writeln!(out, "{}", serde_json::json!({"file": name, "text": text})).unwrap();
            }
        }
    }
}

/// Profiling aid (ignored): for every dev schema, the strict GBNF's size and rule count and
/// the time to convert and to build it, largest first.
#[test]
#[ignore]
fn compile_sizes() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/jsonschemabench-dev");
    let only = std::env::var("SCHEMA_NAME").unwrap_or_default();
    let repeat: usize = std::env::var("REPEAT").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let mut rows = Vec::new();
    let files = std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok());
    let files: Vec<_> = files
        .filter(|e| e.path().extension().is_some_and(|x| x == "json") && e.path().to_string_lossy().contains(&only))
        .collect();
    for e in files.iter().cycle().take(files.len() * repeat) {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
        let t0 = std::time::Instant::now();
        let Ok(g) = schema_to_gbnf(&v["schema"], &SchemaOptions::default()) else { continue };
        let t1 = std::time::Instant::now();
        let _m = Matcher::from_gbnf(&g.gbnf).unwrap();
        let t2 = std::time::Instant::now();
        let name = e.file_name().to_string_lossy().to_string();
        rows.push((g.gbnf.len(), g.gbnf.lines().count(), t1 - t0, t2 - t1, name));
    }
    // Per schema, the fastest of the repeats (the least disturbed by other work), summed.
    let mut best: std::collections::BTreeMap<&str, (std::time::Duration, std::time::Duration)> = Default::default();
    for (_, _, conv, build, name) in &rows {
        let b = best.entry(name.as_str()).or_insert((*conv, *build));
        *b = (b.0.min(*conv), b.1.min(*build));
    }
    let zero = std::time::Duration::ZERO;
    let (conv, build) = best.values().fold((zero, zero), |(c, b), x| (c + x.0, b + x.1));
    println!("{} schemas: convert {conv:.2?}, build {build:.2?} (sums of each schema's fastest run)", best.len());
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let total: usize = rows.iter().map(|r| r.0).sum();
    println!("{} grammars, {total} bytes of GBNF", rows.len());
    for (len, lines, conv, build, name) in rows.iter().take(12) {
        println!("{len:>9} bytes {lines:>6} rules  convert {conv:>10.2?}  build {build:>10.2?}  {name}");
    }
}
