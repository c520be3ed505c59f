//! The server's life: `/health` is 503 while the model loads and 200 after; a graceful
//! shutdown lets a running stream finish and refuses new connections.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{config, loader};
use nucleus_server::Server;

/// (status, body) of a plain HTTP/1.1 request.
fn request(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, text)
}

#[test]
fn health_is_503_while_loading_then_200() {
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let inner = loader();
    let server = Server::start(
        config(1, 4),
        Box::new(move || {
            let _ = go_rx.recv();
            inner()
        }),
    )
    .unwrap();
    let (status, text) = request(server.addr(), "GET", "/health", "");
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("\"unavailable_error\"") && text.contains("Loading model"), "{text}");
    let (status, _) = request(server.addr(), "POST", "/v1/completions", r#"{"prompt": "hi"}"#);
    assert_eq!(status, 503);
    go_tx.send(()).unwrap();
    server.wait_ready().unwrap();
    let (status, text) = request(server.addr(), "GET", "/health", "");
    assert_eq!(status, 200, "{text}");
    server.shutdown();
    server.wait().unwrap();
}

#[test]
fn graceful_shutdown_finishes_the_running_stream() {
    let server = Server::start(config(1, 4), loader()).unwrap();
    server.wait_ready().unwrap();
    let addr = server.addr();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    // Long enough (96 tokens on one thread) to outlast the moment connections are refused.
    let body = r#"{"prompt": "Once upon a time", "max_tokens": 96, "stream": true, "ignore_eos": true, "seed": 1}"#;
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    // The stream is running once its first event arrives; then ask the server to stop.
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.starts_with("data: ") {
            break;
        }
    }
    server.shutdown();
    // Poll until a new connection is refused; no fixed sleep.
    let t0 = Instant::now();
    while !refused(addr) {
        assert!(t0.elapsed() < Duration::from_secs(30), "new connections are still served 30 s after shutdown");
        std::thread::sleep(Duration::from_millis(10));
    }
    // ... while the stream still holds its slot: the refusal came first, the stream goes on.
    assert_eq!(
        metric(&server, "nucleus_slots_busy"),
        1.0,
        "the stream was still running when connections were refused"
    );
    let mut rest = String::new();
    let _ = r.read_to_string(&mut rest);
    assert!(rest.contains("\"finish_reason\":\"length\""), "the stream finished: {rest}");
    assert!(rest.contains("data: [DONE]"), "{rest}");
    // Shutdown is complete when the server thread has exited.
    server.wait().unwrap();
}

/// A metric's value as `/metrics` would render it.
fn metric(server: &Server, name: &str) -> f64 {
    let text = server.state().metrics.render();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no metric {name}"))
}

/// A new connection is refused, or accepted by the OS backlog but never served.
fn refused(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else { return true };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut buf = [0u8; 16];
    !matches!(s.read(&mut buf), Ok(n) if n > 0)
}

#[test]
fn a_departing_non_streaming_client_frees_its_slot() {
    let server = Server::start(config(1, 4), loader()).unwrap();
    server.wait_ready().unwrap();
    let body = r#"{"prompt": "Once", "max_tokens": 500, "ignore_eos": true}"#;
    let mut s = TcpStream::connect(server.addr()).unwrap();
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let metric = |name: &str| metric(&server, name);
    let t0 = Instant::now();
    while metric("nucleus_slots_busy") < 1.0 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the request never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(s);
    let t0 = Instant::now();
    while metric("nucleus_sequences_cancelled_total") < 1.0 || metric("nucleus_slots_busy") > 0.0 {
        assert!(t0.elapsed() < Duration::from_secs(10), "the slot was not freed");
        std::thread::sleep(Duration::from_millis(20));
    }
    // 500 tokens were asked for; far fewer were made before the slot was freed.
    let (status, text) = request(server.addr(), "POST", "/v1/completions", r#"{"prompt": "Hi", "max_tokens": 2}"#);
    assert_eq!(status, 200, "{text}");
    server.shutdown();
    server.wait().unwrap();
}
