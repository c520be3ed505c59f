//! Reasoning models through the official SDKs (`tests/py/reasoning*.py`): SmolLM2 under
//! templates in the style of Qwen3's and DeepSeek-R1's whose generation prompt opens a
//! `<think>` block (`testdata/templates/think-chatml.jinja`, which drops earlier thinking, and
//! `think-history-chatml.jinja`, which writes the thinking of a turn still calling tools), and
//! under a template in the style of gpt-oss's harmony format whose generation prompt opens the
//! analysis channel (`harmony-chatml.jinja`).

mod common;

use std::path::Path;

use common::{config, ensure_anthropic, loader_of, pulled, TestServer};

/// A template of `testdata/templates`.
pub fn template(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/templates").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The thinking template.
pub fn think_template() -> String {
    template("think-chatml.jinja")
}

#[test]
fn reasoning_blocks_budgets_and_constraints() {
    let mut c = config(2, 8);
    c.chat_template = Some(think_template());
    TestServer::start(c).python("reasoning.py", &[]);
}

/// Harmony: recognised from the template, the analysis channel is reasoning, the final channel
/// the answer (SmolLM2 spells the markers in plain text, split across tokens).
#[test]
fn harmony_channels_budgets_and_constraints() {
    let mut c = config(2, 8);
    c.chat_template = Some(template("harmony-chatml.jinja"));
    TestServer::start(c).python("reasoning_harmony.py", &[]);
}

#[test]
fn responses_reasoning_items() {
    let mut c = config(2, 8);
    c.chat_template = Some(think_template());
    TestServer::start(c).python("reasoning_responses.py", &[]);
}

#[test]
fn earlier_thinking_reaches_a_template_that_writes_it() {
    ensure_anthropic();
    let mut c = config(1, 8);
    c.chat_template = Some(template("think-history-chatml.jinja"));
    TestServer::start(c).python("reasoning_history.py", &[("HISTORY_RENDERS", "1")]);
}

#[test]
fn earlier_thinking_is_dropped_by_a_template_that_drops_it() {
    ensure_anthropic();
    let mut c = config(1, 8);
    c.chat_template = Some(think_template());
    TestServer::start(c).python("reasoning_history.py", &[("HISTORY_RENDERS", "0")]);
}

/// Gemma 3 270M (pulled like SmolLM2 when missing): its vocabulary writes the tags and JSON
/// with other tokens, so the forced end and the grammar after it are checked there too.
#[test]
fn gemma3_thinks_within_the_budget_then_answers_in_json() {
    let mut c = config(1, 4);
    c.chat_template = Some(think_template());
    c.model_id = "gemma3".into();
    c.model_aliases = Vec::new();
    TestServer::start_with(c, loader_of(pulled("gemma3")))
        .python("reasoning_gemma.py", &[("NUCLEUS_MODEL_ID", "gemma3")]);
}
