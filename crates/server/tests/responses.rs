//! The OpenAI Responses API (`/v1/responses`) through the official SDKs, on the real model:
//! the `openai` Python package (create, stream, tools, text formats, chaining, retrieve, 404s
//! and 400s), the stream/whole equivalence as a property, and the OpenAI Agents SDK running an
//! agent with a function tool to completion.

mod common;

use std::process::Command;
use std::sync::OnceLock;

use common::{config, pip_install, python, TestServer};

/// The `openai-agents` release the Agents SDK test is written against.
const AGENTS_VERSION: &str = "0.24.0";

/// Installs the pinned `openai-agents` with pip when that release is not importable.
fn ensure_agents() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let check = format!(
            "import importlib.metadata as m, sys; sys.exit(0 if m.version('openai-agents') == '{AGENTS_VERSION}' else 1)"
        );
        if Command::new(python()).args(["-c", &check]).status().is_ok_and(|s| s.success()) {
            return;
        }
        pip_install(&format!("openai-agents=={AGENTS_VERSION}"));
    });
}

#[test]
fn responses_through_the_openai_sdk() {
    TestServer::start(config(2, 8)).python("responses.py", &[]);
}

#[test]
fn an_agents_sdk_agent_runs_a_tool_to_completion() {
    ensure_agents();
    TestServer::start(config(1, 8)).python("agents_sdk.py", &[]);
}

#[test]
fn streamed_responses_assemble_to_the_whole_ones() {
    TestServer::start(config(2, 8)).python("responses_equivalence.py", &[]);
}

/// The same under a thinking template with a budget: reasoning items, whole or cut, streamed
/// and unstreamed equal.
#[test]
fn streamed_responses_with_reasoning_assemble_to_the_whole_ones() {
    let mut c = config(2, 8);
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/templates/think-chatml.jinja");
    c.chat_template = Some(std::fs::read_to_string(&p).expect("think-chatml.jinja"));
    c.reasoning.budget = Some(10);
    TestServer::start(c).python("responses_equivalence.py", &[("THINK", "1")]);
}
