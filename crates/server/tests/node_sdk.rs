//! The official Node SDKs against a real server: `@anthropic-ai/sdk` (Messages: plain,
//! streamed, tools with a tool_result turn, count_tokens, typed errors) and `openai`
//! (Responses: `responses.create` / `responses.stream`, function tools with a
//! `function_call_output` turn, `text.format` json_schema, `previous_response_id`), pinned in
//! `tests/node_sdk/package-lock.json`, installed with `npm ci` and run with `node --test`.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::{config, TestServer};

#[test]
fn node_sdks_speak_messages_and_responses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node_sdk");
    let npm = Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir).status();
    assert!(npm.is_ok_and(|s| s.success()), "npm ci in {} failed", dir.display());

    let mut c = config(2, 8);
    c.api_key = Some("sk-node-test".into());
    let s = TestServer::start(c);
    let t0 = Instant::now();
    let out = Command::new("node")
        .args(["--test", "--test-reporter=spec", "sdk.test.mjs"])
        .current_dir(&dir)
        .env("NUCLEUS_ADDR", format!("http://{}", s.server.addr()))
        .env("NUCLEUS_MODEL_ID", "smollm2")
        .env("NUCLEUS_API_KEY_FOR_TEST", "sk-node-test")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run node --test");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("node --test: {:.1} s\n{text}", t0.elapsed().as_secs_f64());
    assert!(out.status.success(), "node --test failed ({}):\n{text}", out.status);
}
