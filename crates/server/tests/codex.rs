//! End to end: the Codex CLI (`@openai/codex`, pinned in `tests/codex/`, installed with
//! `npm ci`; the npm package carries its native binary) runs one non-interactive turn,
//! `codex exec`, against a real server (SmolLM2, one thread), through a provider defined in a
//! scratch `CODEX_HOME/config.toml` (`wire_api = "responses"`). The CLI must exit 0 and the
//! server must have answered every request it made with a 2xx. With a 135M model the answer is
//! nonsense; the protocol is what is tested.
//!
//! The config is the one docs/openai-responses.md gives, with Codex's own options keeping the
//! prompt small enough for SmolLM2's context and a quick prefill: a one-line
//! `model_instructions_file` instead of Codex's ~17 KB of instructions, no skills list, no
//! sub-agent or goal tools. Codex still sends its function tools (`exec_command`,
//! `write_stdin`, `request_user_input`, `view_image`), `reasoning`, `store: false`,
//! `include: ["reasoning.encrypted_content"]`, `prompt_cache_key` and `client_metadata`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nucleus_sampler::SamplingParams;
use nucleus_server::ServerConfig;

/// Installs the pinned Codex (once per test binary); its directory.
fn codex_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/codex");
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let npm = Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir).status();
        assert!(npm.is_ok_and(|s| s.success()), "npm ci in {} failed", dir.display());
    });
    dir
}

/// The provider and the options that keep Codex's prompt small; `extra` is appended.
fn config_toml(base_url: &str, instructions: &Path, extra: &str) -> String {
    format!(
        r#"model = "smollm2"
model_provider = "nucleus"
model_instructions_file = "{}"
web_search = "disabled"
include_environment_context = false
{extra}
[agents]
enabled = false

[features]
goals = false

[skills]
include_instructions = false

[model_providers.nucleus]
name = "Nucleus"
base_url = "{base_url}"
wire_api = "responses"
env_key = "NUCLEUS_API_KEY"
"#,
        instructions.display()
    )
}

/// A server answering greedily (Codex sends no temperature), so the run is the same each time.
fn server() -> common::TestServer {
    let defaults = SamplingParams { temp: 0.0, ..SamplingParams::default() };
    common::TestServer::start(ServerConfig { ctx_size: Some(4096), defaults, ..common::config(1, 4) })
}

/// Runs `codex exec` with the config (plus `extra`) against `server`; killed after `limit`.
fn run_codex(server: &common::TestServer, extra: &str, limit: Duration) -> Output {
    let scratch = std::env::temp_dir().join(format!("nucleus-codex-{}-{}", std::process::id(), extra.len()));
    let (home, work) = (scratch.join("home"), scratch.join("work"));
    std::fs::create_dir_all(&home).expect("scratch CODEX_HOME");
    std::fs::create_dir_all(&work).expect("scratch workdir");
    let instructions = home.join("instructions.md");
    std::fs::write(&instructions, "You are a helpful assistant. Answer in one short sentence.\n")
        .expect("instructions");
    std::fs::write(home.join("config.toml"), config_toml(&server.base_url(), &instructions, extra)).expect("config");
    let child = Command::new(codex_dir().join("node_modules/.bin/codex"))
        .args(["exec", "--strict-config", "--skip-git-repo-check", "--ephemeral", "--color", "never"])
        .arg("-C")
        .arg(&work)
        .arg("What is 2 + 2? Answer with a number.")
        .env("CODEX_HOME", &home)
        .env("HOME", &home)
        .env("NUCLEUS_API_KEY", "anything")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run codex");
    let out = common::wait_with_limit(child, limit, "codex exec");
    let _ = std::fs::remove_dir_all(&scratch);
    out
}

#[test]
fn codex_exec_runs_one_turn() {
    let t0 = Instant::now();
    let server = server();
    let out = run_codex(&server, "", Duration::from_secs(240));
    common::check_cli_run(&out, &server.server, "codex exec", "/v1/responses");
    eprintln!("codex_exec_runs_one_turn: {:.1} s", t0.elapsed().as_secs_f64());
}
