//! Replays the grammar fuzz targets' inputs in the stable suite: every crash or hang the fuzzer
//! found (`fuzz/regressions/<target>/`) and the seed inputs (`fuzz/seeds/<target>/`) go
//! through the same checks the fuzz targets run (`fuzz/checks/`): no panic, bounded time, and
//! for grammars the token mask equals the token-by-token check.

#[path = "../../../fuzz/checks/common.rs"]
mod common;
#[path = "../../../fuzz/checks/gbnf.rs"]
mod gbnf;
#[path = "../../../fuzz/checks/grammar_check.rs"]
mod grammar_check;
#[path = "../../../fuzz/checks/json_schema.rs"]
mod json_schema;
#[path = "../../../fuzz/checks/token_trie.rs"]
mod token_trie;

use std::path::Path;
use std::time::{Duration, Instant};

/// The most one input may take here (release build, no sanitizer, a loaded 2-core machine).
const PER_INPUT: Duration = Duration::from_secs(5);

/// Runs `check` on every file of `fuzz/<dir>` (a missing folder has no files); their number.
fn replay(dir: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz").join(dir);
    let mut files: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => return 0,
    };
    files.sort();
    let mut slowest = (Duration::ZERO, String::new());
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let t0 = Instant::now();
        let r = std::panic::catch_unwind(|| check(&data));
        assert!(r.is_ok(), "{} fails the fuzz check", f.display());
        let took = t0.elapsed();
        assert!(took < PER_INPUT, "{} took {took:?}", f.display());
        if took > slowest.0 {
            slowest = (took, f.display().to_string());
        }
    }
    eprintln!("{}: {} inputs, slowest {:?} ({})", dir.display(), files.len(), slowest.0, slowest.1);
    files.len()
}

#[test]
fn gbnf_fuzz_inputs() {
    replay("regressions/gbnf", gbnf::check);
    assert!(replay("seeds/gbnf", gbnf::check) >= 1);
}

#[test]
fn json_schema_fuzz_inputs() {
    replay("regressions/json_schema", json_schema::check);
    assert!(replay("seeds/json_schema", json_schema::check) >= 1);
}

#[test]
fn grammar_check_fuzz_inputs() {
    replay("regressions/grammar_check", grammar_check::check);
    assert!(replay("seeds/grammar_check", grammar_check::check) >= 1);
}

#[test]
fn token_trie_fuzz_inputs() {
    replay("regressions/token_trie", token_trie::check);
    assert!(replay("seeds/token_trie", token_trie::check) >= 1);
}
