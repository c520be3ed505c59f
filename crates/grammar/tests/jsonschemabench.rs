//! The 100 JSONSchemaBench dev schemas: each compiles (or is refused with a reason); every
//! valid instance is accepted and every invalid one rejected, judged by feeding the instance's
//! text through the grammar byte by byte (keys laid out in the order the grammar accepts).

mod common;

use nucleus_grammar::json_schema::relayout::{feed_json_in, parse_json};
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::Matcher;

/// How many of the 100 dev schemas compile today. Coverage must never shrink silently: when it
/// grows, raise this number in the same commit.
const COMPILED: usize = 98;

#[test]
fn jsonschemabench_dev() {
    let files = common::dev_schema_files();
    let (mut compiled, mut refused, mut ok, mut wrong, mut undecided) = (0, 0, 0, 0, 0);
    let mut wrong_list = Vec::new();
    for f in &files {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let g = match schema_to_gbnf(&v["schema"], &SchemaOptions::default()) {
            Ok(g) => g,
            Err(e) => {
                refused += 1;
                eprintln!("REFUSED {name}: {e}");
                continue;
            }
        };
        let m = match Matcher::from_gbnf(&g.gbnf) {
            Ok(m) => m,
            Err(e) => panic!("{name}: generated grammar does not build: {e}"),
        };
        compiled += 1;
        for t in v["tests"].as_array().unwrap() {
            let valid = t["valid"].as_bool().unwrap();
            let doc = parse_json(&serde_json::to_string(&t["data"]).unwrap()).unwrap();
            let verdict = feed_json_in(&m, &doc, &g.member_orders);
            if verdict.gave_up {
                undecided += 1;
                eprintln!("UNDECIDED {name}: valid={valid}");
            } else if verdict.accepted == valid {
                ok += 1;
            } else {
                wrong += 1;
                wrong_list.push(format!(
                    "{name}: valid={valid} accepted={} at {:?}",
                    verdict.accepted,
                    &verdict.text[verdict.text.len().saturating_sub(80)..]
                ));
            }
        }
    }
    for w in &wrong_list {
        eprintln!("WRONG {w}");
    }
    eprintln!(
        "jsonschemabench-dev: {compiled} compiled, {refused} refused, {ok} instances right, {wrong} wrong, \
         {undecided} undecided"
    );
    assert_eq!(compiled + refused, 100);
    assert_eq!(compiled, COMPILED, "dev schemas compiled changed from {COMPILED}: a regression, or raise COMPILED");
    assert!(ok > 300, "only {ok} instance checks ran");
    assert_eq!(wrong, 0, "{wrong_list:#?}");
    assert_eq!(undecided, 0, "every instance is decided");
}
