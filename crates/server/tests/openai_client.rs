//! The server as real clients see it: `nucleus-server` started on a free loopback port and
//! driven by the official `openai` Python package (strict response validation, no retries).

mod common;

use std::sync::OnceLock;

use common::{config, TestServer};

/// Four slots, 1024 tokens each, 1 MiB bodies.
fn main_server() -> &'static TestServer {
    static S: OnceLock<TestServer> = OnceLock::new();
    S.get_or_init(|| TestServer::start(config(4, 64)))
}

/// Four slots for the concurrency and load runs (nothing else uses it: the load run compares the
/// server's counters before and after).
fn batch_server() -> &'static TestServer {
    static S: OnceLock<TestServer> = OnceLock::new();
    S.get_or_init(|| TestServer::start(config(4, 64)))
}

#[test]
fn chat_completions() {
    main_server().python("chat.py", &[]);
}

#[test]
fn legacy_completions() {
    main_server().python("completions.py", &[]);
}

#[test]
fn llama_cpp_and_vllm_sampling_fields() {
    main_server().python("extras.py", &[]);
}

#[test]
fn errors_are_openai_shaped_4xx() {
    main_server().python("errors.py", &[]);
}

#[test]
fn constrained_decoding() {
    main_server().python("constrained.py", &[]);
}

#[test]
fn health_models_metrics() {
    main_server().python("ops.py", &[]);
}

#[test]
fn api_key_queue_limit_and_departing_client() {
    let mut c = config(1, 1);
    c.api_key = Some("test-key-123".into());
    TestServer::start(c).python("auth_queue.py", &[]);
}

/// Seeded answers are the same alone and in a crowd; then 16 requests over 8 connections all end
/// well, the server's counters agree with what the clients saw, and every slot is free after.
/// (Throughput is a benchmark: `crates/server/benches/load.py`.)
#[test]
fn concurrent_requests_equal_alone_and_a_bounded_load_run() {
    let s = batch_server();
    s.python("concurrency.py", &[]);
    let out = s.python("load.py", &[("LOAD_REQUESTS", "16"), ("LOAD_CONNECTIONS", "8")]);
    let summary: serde_json::Value = out
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("load.py printed no summary: {out}"));
    assert_eq!(summary["errors"], 0, "{out}");
    assert_eq!(summary["slots_busy_after"], 0.0, "{out}");
    assert_eq!(summary["requests"], 16, "{out}");
}
