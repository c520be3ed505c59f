//! The stream/whole invariant, as a property over random request shapes and seeds
//! (`tests/py/stream_equivalence.py`, through the official `openai` SDK's own stream
//! assembly): on SmolLM2's own template (tool calls in the generic JSON format) and on a
//! Hermes-style template (`<tool_call>` blocks), and on a reasoning template whose prompt opens a
//! `<think>` block (with a thinking budget, so the forced end is part of the stream). `EQUIV_SEED` replays a run, `EQUIV_CASES`
//! draws more cases; every new endpoint's answers join this test.

mod common;

use std::path::Path;

use common::{config, TestServer};

fn cases() -> String {
    std::env::var("EQUIV_CASES").unwrap_or_else(|_| "30".into())
}

fn seed() -> String {
    std::env::var("EQUIV_SEED").unwrap_or_default()
}

#[test]
fn streamed_equals_whole_generic_format() {
    let (cases, seed) = (cases(), seed());
    TestServer::start(config(2, 8)).python("stream_equivalence.py", &[("EQUIV_CASES", &cases), ("EQUIV_SEED", &seed)]);
}

#[test]
fn streamed_equals_whole_hermes_template() {
    let mut c = config(2, 8);
    c.chat_template = Some(template("hermes-chatml.jinja"));
    let (cases, seed) = (cases(), seed());
    TestServer::start(c).python("stream_equivalence.py", &[("EQUIV_CASES", &cases), ("EQUIV_SEED", &seed)]);
}

#[test]
fn streamed_equals_whole_reasoning_template() {
    let mut c = config(2, 8);
    c.chat_template = Some(template("think-chatml.jinja"));
    c.reasoning.budget = Some(10);
    let (cases, seed) = (cases(), seed());
    TestServer::start(c).python("stream_equivalence.py", &[("EQUIV_CASES", &cases), ("EQUIV_SEED", &seed)]);
}

fn template(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/templates").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}
