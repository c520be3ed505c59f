//! The Anthropic Messages API through the official `anthropic` Python SDK (pinned), on the
//! real model: plain, streamed, tools with a tool_result turn, count_tokens, typed errors,
//! `x-api-key`, the same tokens as the chat endpoint, and the stream/whole invariant.

mod common;

use common::{config, ensure_anthropic, TestServer};

#[test]
fn messages_through_the_anthropic_sdk() {
    ensure_anthropic();
    TestServer::start(config(2, 8)).python("anthropic_messages.py", &[]);
}

#[test]
fn messages_with_an_api_key() {
    ensure_anthropic();
    let mut c = config(1, 4);
    c.api_key = Some("sk-test-anthropic".into());
    TestServer::start(c).python("anthropic_messages.py", &[("ANTHROPIC_CASE", "auth")]);
}

#[test]
fn a_streamed_message_assembles_to_the_whole_one() {
    ensure_anthropic();
    TestServer::start(config(2, 8)).python("anthropic_equivalence.py", &[]);
}
