//! Tool calling through the official `openai` Python SDK, on the real model: SmolLM2's own
//! template (no tool support: the generic JSON format) and a Hermes-style template given as
//! `chat_template` (`--chat-template`), which renders `tools` and `<tool_call>` blocks.

mod common;

use std::path::Path;

use common::{config, TestServer};

fn hermes_template() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/templates/hermes-chatml.jinja");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn tool_calls_generic_json_format() {
    TestServer::start(config(2, 8)).python("tools.py", &[("TOOL_FORMAT", "generic")]);
}

#[test]
fn tool_calls_hermes_template() {
    let mut c = config(2, 8);
    c.chat_template = Some(hermes_template());
    TestServer::start(c).python("tools.py", &[("TOOL_FORMAT", "hermes")]);
}
