//! Shared set-up for the server tests: the model (pulled with the runtime's own `pull` if
//! missing), servers started in-process on free loopback ports (one thread each for llama.cpp),
//! and the official `openai` and `anthropic` Python packages (installed with pip, pinned, if not
//! importable).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{catalog, LlamaCppModel, Model};
use nucleus_server::{ModelLoader, Server, ServerConfig};

/// The `openai` release the tests are written against.
pub const OPENAI_VERSION: &str = "3.51.0";

/// The default model's path, pulled quietly if missing.
pub fn model_path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let m = catalog::find("smollm2").expect("catalog");
        let pip = Pip { quiet: true, ..Pip::default() };
        pull::ensure(m, &pull::models_dir(), &pip, &mut |_| {}).expect("pull smollm2 for the tests").0
    })
}

/// A loader for the default model.
pub fn loader() -> ModelLoader {
    loader_of(model_path().clone())
}

/// The catalog model `name`'s path, pulled quietly if missing.
pub fn pulled(name: &str) -> PathBuf {
    let m = catalog::find(name).expect("catalog");
    let pip = Pip { quiet: true, ..Pip::default() };
    pull::ensure(m, &pull::models_dir(), &pip, &mut |_| {}).unwrap_or_else(|e| panic!("pull {name}: {e}")).0
}

/// A loader for the model file at `path`.
pub fn loader_of(path: PathBuf) -> ModelLoader {
    Box::new(move || {
        let m = LlamaCppModel::load(&path).map_err(|e| e.to_string())?;
        Ok(Arc::new(m) as Arc<dyn Model>)
    })
}

/// Test settings: a free port, one thread, small contexts.
pub fn config(parallel: usize, queue: usize) -> ServerConfig {
    ServerConfig {
        port: 0,
        parallel,
        queue,
        ctx_size: Some(1024 * parallel),
        threads: Some(1),
        max_body: 1 << 20,
        model_id: "smollm2".into(),
        model_aliases: vec!["SmolLM2-135M-Instruct.Q4_1".into()],
        ..Default::default()
    }
}

/// A running server and how to reach it.
pub struct TestServer {
    pub server: Server,
    pub api_key: Option<String>,
}

impl TestServer {
    pub fn start(config: ServerConfig) -> TestServer {
        Self::start_with(config, loader())
    }

    /// A server of the model `load` loads.
    pub fn start_with(config: ServerConfig, load: ModelLoader) -> TestServer {
        let api_key = config.api_key.clone();
        let server = Server::start(config, load).expect("start server");
        server.wait_ready().expect("model loads");
        TestServer { server, api_key }
    }

    /// A server of the default model with `draft` as its draft model (`--model-draft`).
    pub fn start_with_draft(config: ServerConfig, draft: ModelLoader) -> TestServer {
        let api_key = config.api_key.clone();
        let server = Server::start_with_draft(config, loader(), Some(draft)).expect("start server");
        server.wait_ready().expect("model and draft model load");
        TestServer { server, api_key }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr())
    }

    /// Runs `tests/py/<script>` against this server; panics with its output if it fails.
    pub fn python(&self, script: &str, env: &[(&str, &str)]) -> String {
        ensure_openai();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py");
        let t0 = Instant::now();
        let mut cmd = Command::new(python());
        cmd.arg(dir.join(script))
            .current_dir(&dir)
            .env("NUCLEUS_BASE_URL", self.base_url())
            .env("PYTHONDONTWRITEBYTECODE", "1");
        if let Some(k) = &self.api_key {
            cmd.env("NUCLEUS_API_KEY_FOR_TEST", k);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run python3");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{script} failed ({}):\n{stdout}\n{stderr}", out.status);
        eprintln!("{script}: {:.1} s", t0.elapsed().as_secs_f64());
        stdout
    }
}

/// The Python interpreter (`NUCLEUS_PYTHON`, default `python3`).
pub fn python() -> String {
    std::env::var("NUCLEUS_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Installs the pinned `openai` package with pip when no 3.x release is importable.
pub fn ensure_openai() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| ensure_package("openai", "3.", OPENAI_VERSION));
}

/// The `anthropic` release the Messages tests are written against.
pub const ANTHROPIC_VERSION: &str = "2.16.0";

/// Installs the pinned `anthropic` package with pip when that release is not importable.
pub fn ensure_anthropic() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| ensure_package("anthropic", ANTHROPIC_VERSION, ANTHROPIC_VERSION));
}

/// Installs `module==version` with pip unless a release whose version starts with `accept` is
/// importable.
fn ensure_package(module: &str, accept: &str, version: &str) {
    let check = format!("import {module}, sys; sys.exit(0 if {module}.__version__.startswith('{accept}') else 1)");
    if !Command::new(python()).args(["-c", &check]).status().is_ok_and(|s| s.success()) {
        pip_install(&format!("{module}=={version}"));
    }
}

/// `python -m pip install spec`; panics (saying the command) when it fails. A distribution's own
/// Python may refuse plain installs (PEP 668): then it is tried with `--break-system-packages`.
pub fn pip_install(spec: &str) {
    let installed = [&[][..], &["--break-system-packages"][..]].iter().any(|extra| {
        Command::new(python())
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(*extra)
            .arg(spec)
            .status()
            .is_ok_and(|s| s.success())
    });
    assert!(installed, "`{} -m pip install {spec}` failed", python());
}

/// An agent CLI's run: its output once it exits, or a panic after `limit` (the child killed),
/// naming `cli`.
pub fn wait_with_limit(mut child: std::process::Child, limit: std::time::Duration, cli: &str) -> std::process::Output {
    let t0 = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{cli} did not finish in {limit:?}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.wait_with_output().expect("output")
}

/// Checks an agent CLI's run (`cli`): it exited 0, every request the server counted was
/// answered with a 2xx, and at least one of them on `route` with a 200.
pub fn check_cli_run(out: &std::process::Output, server: &Server, cli: &str, route: &str) {
    let metrics = server.state().metrics.render();
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cli} failed ({}):\n{text}\n{metrics}", out.status);
    let requests: Vec<&str> = metrics.lines().filter(|l| l.starts_with("nucleus_requests_total{")).collect();
    let bad: Vec<&&str> = requests.iter().filter(|l| !l.contains("status=\"2")).collect();
    assert!(bad.is_empty(), "the server answered errors: {bad:?}\n{text}");
    let answered = format!("nucleus_requests_total{{route=\"{route}\",status=\"200\"}}");
    assert!(requests.iter().any(|l| l.starts_with(&answered)), "no {route} request was answered: {requests:?}\n{text}");
    eprintln!("requests: {requests:?}\n{cli} said: {}", String::from_utf8_lossy(&out.stdout).trim());
}
