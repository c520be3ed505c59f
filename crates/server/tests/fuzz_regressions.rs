//! Replays the server fuzz targets' inputs in the stable suite: every crash the fuzzer found
//! (`fuzz/regressions/<target>/`) and the seed inputs (`fuzz/seeds/<target>/`) of the
//! `messages` and `responses` targets go through the same checks the targets run
//! (`fuzz/checks/`): the request parser returns the checked request or a typed 4xx, never
//! panics, in bounded time. No model is loaded (the checks bring a synthetic vocabulary).

#[path = "../../../fuzz/checks/messages.rs"]
mod messages;
#[path = "../../../fuzz/checks/responses.rs"]
mod responses;
#[path = "../../../fuzz/checks/server_model.rs"]
mod server_model;

use std::path::Path;
use std::time::{Duration, Instant};

/// The most one input may take here.
const PER_INPUT: Duration = Duration::from_secs(5);

/// Runs `check` on every file of `fuzz/<dir>` (a missing folder has no files); their number.
fn replay(dir: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz").join(dir);
    let mut files: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => return 0,
    };
    files.sort();
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let t0 = Instant::now();
        let r = std::panic::catch_unwind(|| check(&data));
        assert!(r.is_ok(), "{} fails the fuzz check", f.display());
        assert!(t0.elapsed() < PER_INPUT, "{} took {:?}", f.display(), t0.elapsed());
    }
    files.len()
}

#[test]
fn messages_fuzz_inputs() {
    replay("regressions/messages", messages::check);
    assert!(replay("seeds/messages", messages::check) >= 1);
}

#[test]
fn responses_fuzz_inputs() {
    replay("regressions/responses", responses::check);
    assert!(replay("seeds/responses", responses::check) >= 1);
}

/// The seeds reach the parser: a seed the parsers accept is accepted, and the error seeds are
/// refused with a 400 (so the targets start from inputs past the JSON reader).
#[test]
fn seeds_are_accepted_or_refused_as_meant() {
    let read = |p: &str| -> serde_json::Map<String, serde_json::Value> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(p);
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    };
    let d = server_model::defaults();
    let m = server_model::model();
    for s in ["plain", "tools", "thinking"] {
        let r = nucleus_server::anthropic::convert::parse(&read(&format!("messages/{s}")), &d, m);
        assert!(r.is_ok(), "messages/{s}: {:?}", r.err());
    }
    let e = nucleus_server::anthropic::convert::parse(&read("messages/errors"), &d, m).unwrap_err();
    assert_eq!(e.status, 400);
    for s in ["plain", "tools", "format"] {
        let map = read(&format!("responses/{s}"));
        let b = nucleus_server::body::decode(&map).unwrap();
        let t = nucleus_server::responses::convert::convert(&map, b, Vec::new()).unwrap();
        let r = nucleus_server::request::parse(nucleus_server::request::Endpoint::Chat, &t.chat, &d, m);
        assert!(r.is_ok(), "responses/{s}: {:?}", r.err());
    }
}
