//! Reasoning models through the official `openai` SDK (`tests/py/reasoning.py`): SmolLM2 under
//! a template in the style of Qwen3's and DeepSeek-R1's whose generation prompt opens a
//! `<think>` block (`testdata/templates/think-chatml.jinja`).

mod common;

use std::path::Path;

use common::{config, TestServer};

/// The thinking template.
pub fn think_template() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/templates/think-chatml.jinja");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn reasoning_blocks_budgets_and_constraints() {
    let mut c = config(2, 8);
    c.chat_template = Some(think_template());
    TestServer::start(c).python("reasoning.py", &[]);
}
