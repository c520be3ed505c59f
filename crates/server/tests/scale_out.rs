//! Scale-out behind a standard proxy: two server replicas (separate processes: this test
//! binary re-run as a replica) behind nginx from Debian's package, on loopback, with the
//! configuration docs/scaling-out.md shows. The test checks that
//! (d) a replica still loading answers `/health` with 503 and nginx sends its requests to the
//! ready one; (a) load spreads over both once both are ready; (b) a seeded request gets the
//! same answer whichever replica serves it; (c) when a replica is killed (SIGKILL), requests
//! in flight on it end cleanly (a cut stream or a retried answer, never a hang), requests on
//! the other replica are untouched, and every later request is served.
//!
//! nginx must be installed (`apt-get install -y nginx`); the test fails, saying so, if not.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nucleus_server::Server;

/// Set in a replica process: the gate file to wait for before loading the model ("-": none).
const REPLICA_ENV: &str = "NUCLEUS_SCALE_OUT_REPLICA";
/// How long nginx sets a failed replica aside before trying it again.
const FAIL_TIMEOUT_S: u64 = 1;

/// Not a test of its own: the body of a replica process started by
/// `two_replicas_behind_nginx` (ignored, and a no-op unless that test set the variable).
#[test]
#[ignore = "a replica process of two_replicas_behind_nginx, started by it"]
fn replica_process() {
    let Ok(gate) = std::env::var(REPLICA_ENV) else { return };
    let inner = common::loader();
    let server = Server::start(
        common::config(2, 16),
        Box::new(move || {
            // The model loads only once the gate file exists: /health answers 503 until then.
            while gate != "-" && !Path::new(&gate).exists() {
                std::thread::sleep(Duration::from_millis(10));
            }
            inner()
        }),
    )
    .expect("replica starts");
    println!("replica-port {}", server.addr().port());
    std::io::stdout().flush().unwrap();
    server.wait().unwrap();
}

/// Child processes (replicas, nginx) stopped when the test ends, passed or not.
struct Procs {
    replicas: Vec<Child>,
    nginx: Option<Child>,
}

impl Drop for Procs {
    fn drop(&mut self) {
        if let Some(mut n) = self.nginx.take() {
            // SIGTERM: nginx's master stops its workers (SIGKILL would orphan them).
            let _ = Command::new("kill").arg("-TERM").arg(n.id().to_string()).status();
            let _ = n.wait();
        }
        for c in &mut self.replicas {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts a replica; returns it and its port.
fn start_replica(gate: &str) -> (Child, u16) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["replica_process", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(REPLICA_ENV, gate)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a replica process");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("the replica reports its port").expect("replica stdout");
        // The test harness may have printed "test replica_process ... " before it.
        if let Some(at) = line.find("replica-port ") {
            break line[at + "replica-port ".len()..].trim().parse().unwrap();
        }
    };
    // Keep draining its stdout so the replica never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, port)
}

/// The nginx executable, or a failure naming the package to install.
fn nginx_binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("nginx is not installed; this test needs Debian's package: sudo apt-get install -y nginx")
        })
}

/// The configuration of docs/scaling-out.md, with this test's ports and a private prefix for nginx's files.
fn nginx_conf(dir: &Path, listen: u16, replicas: &[u16]) -> String {
    let d = dir.display();
    let servers: String = replicas
        .iter()
        .map(|p| format!("        server 127.0.0.1:{p} max_fails=1 fail_timeout={FAIL_TIMEOUT_S}s;\n"))
        .collect();
    format!(
        "worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    upstream nucleus {{
{servers}        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{listen};
        client_max_body_size 8m;
        location / {{
            proxy_pass http://nucleus;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_buffering off;
            proxy_read_timeout 300s;
            proxy_next_upstream error timeout http_503 non_idempotent;
            proxy_next_upstream_tries 2;
            add_header X-Nucleus-Upstream $upstream_addr always;
        }}
    }}
}}
"
    )
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An HTTP answer: status, the replica that served it (last address nginx tried), the body
/// (chunked encoding undone) and whether the body arrived whole.
#[derive(Debug)]
struct Answer {
    status: u16,
    upstream: Option<u16>,
    body: String,
    whole: bool,
}

fn open(port: u16, method: &str, path: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s
}

/// Reads the status line and headers.
fn head(r: &mut BufReader<TcpStream>) -> (u16, Option<u16>, bool) {
    let mut line = String::new();
    r.read_line(&mut line).expect("status line");
    let status = line.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (mut upstream, mut chunked) = (None, false);
    loop {
        line.clear();
        if r.read_line(&mut line).expect("header") == 0 || line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("x-nucleus-upstream:") {
            // "a:1, b:2" when nginx moved on: the last one answered.
            upstream = v.rsplit(',').next().and_then(|a| a.trim().rsplit(':').next()?.parse().ok());
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    (status, upstream, chunked)
}

/// Reads the body to the end of the connection; `whole` is false when a chunked body was cut.
/// `raw` holds what was already read of the body.
fn body(r: &mut BufReader<TcpStream>, chunked: bool, mut raw: Vec<u8>) -> (String, bool) {
    let cut = r.read_to_end(&mut raw).is_err();
    if !chunked {
        return (String::from_utf8_lossy(&raw).into_owned(), !cut);
    }
    let (mut out, mut i) = (Vec::new(), 0);
    while let Some(eol) = raw[i..].windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[i..i + eol]).ok().and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let Some(size) = size else { break };
        i += eol + 2;
        if size == 0 {
            return (String::from_utf8_lossy(&out).into_owned(), !cut);
        }
        if i + size > raw.len() {
            out.extend_from_slice(&raw[i..]);
            break;
        }
        out.extend_from_slice(&raw[i..i + size]);
        i += size + 2;
    }
    (String::from_utf8_lossy(&out).into_owned(), false)
}

fn call(port: u16, method: &str, path: &str, body_text: &str) -> Answer {
    let mut r = BufReader::new(open(port, method, path, body_text));
    let (status, upstream, chunked) = head(&mut r);
    let (body, whole) = body(&mut r, chunked, Vec::new());
    Answer { status, upstream, body, whole }
}

fn health(port: u16) -> u16 {
    call(port, "GET", "/health", "").status
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const SEEDED: &str = r#"{"prompt": "Once upon a time", "max_tokens": 12, "seed": 7, "temperature": 0.9}"#;

/// The generated text of a non-streamed completion.
fn text_of(a: &Answer) -> String {
    let v: serde_json::Value = serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("{e}: {}", a.body));
    v["choices"][0]["text"].as_str().expect("choices[0].text").to_string()
}

#[test]
fn two_replicas_behind_nginx() {
    let nginx = nginx_binary();
    common::model_path(); // pulled once here, not by both replicas at once
    let dir = std::env::temp_dir().join(format!("nucleus-scale-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let gate = dir.join("load-b");

    let mut procs = Procs { replicas: Vec::new(), nginx: None };
    let (a, port_a) = start_replica("-");
    procs.replicas.push(a);
    let (b, port_b) = start_replica(gate.to_str().unwrap());
    procs.replicas.push(b);
    let port = free_port();
    std::fs::write(dir.join("nginx.conf"), nginx_conf(&dir, port, &[port_a, port_b])).unwrap();
    let proxy = Command::new(&nginx)
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-e")
        .arg(dir.join("error.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nginx");
    procs.nginx = Some(proxy);
    eprintln!("scale-out: started replicas A :{port_a}, B :{port_b} and nginx :{port}");
    wait_until("nginx listens", Duration::from_secs(10), || TcpStream::connect(("127.0.0.1", port)).is_ok());
    wait_until("replica A is ready", Duration::from_secs(120), || health(port_a) == 200);

    eprintln!("scale-out: A ready");
    // (d) Readiness: B is up but loading; its /health is 503 and nginx sends its share to A.
    assert_eq!(health(port_b), 503, "a loading replica is not ready");
    for _ in 0..4 {
        let r = call(port, "POST", "/v1/completions", SEEDED);
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.upstream, Some(port_a), "served by the ready replica: {r:?}");
    }
    std::fs::write(&gate, b"").unwrap();
    wait_until("replica B is ready", Duration::from_secs(120), || health(port_b) == 200);
    eprintln!("scale-out: B ready");
    // nginx set B aside for FAIL_TIMEOUT_S after its 503s.
    std::thread::sleep(Duration::from_millis(FAIL_TIMEOUT_S * 1000 + 200));

    // (a) Load spreads over both, and (b) the seeded answer is the same on either.
    let mut served = [0usize; 2];
    let mut texts = Vec::new();
    for _ in 0..8 {
        let r = call(port, "POST", "/v1/completions", SEEDED);
        assert_eq!(r.status, 200, "{r:?}");
        let which = if r.upstream == Some(port_a) { 0 } else { 1 };
        assert!(r.upstream == Some(port_a) || r.upstream == Some(port_b), "{r:?}");
        served[which] += 1;
        texts.push((which, text_of(&r)));
    }
    assert!(served[0] > 0 && served[1] > 0, "load not spread: {served:?}");
    assert!(texts.iter().all(|(_, t)| *t == texts[0].1), "seeded answers differ between replicas: {texts:#?}");
    assert!(!texts[0].1.is_empty());

    eprintln!("scale-out: spread {served:?}, seeded answers equal");
    // (c) Kill A with streams in flight on both replicas.
    let stream_body =
        r#"{"prompt": "Tell a long story:", "max_tokens": 400, "ignore_eos": true, "stream": true, "seed": 3}"#;
    let mut streams = Vec::new();
    for _ in 0..4 {
        let mut r = BufReader::new(open(port, "POST", "/v1/completions", stream_body));
        let (status, upstream, chunked) = head(&mut r);
        assert_eq!(status, 200);
        assert!(chunked, "streams pass through nginx unbuffered, chunked");
        streams.push((upstream, r));
    }
    assert!(streams.iter().any(|s| s.0 == Some(port_a)) && streams.iter().any(|s| s.0 == Some(port_b)));
    // Every stream has started generating before the kill.
    let mut started = Vec::new();
    for (_, r) in &mut streams {
        let mut raw = Vec::new();
        while !raw.windows(7).any(|w| w == b"data: {") {
            assert!(r.read_until(b'\n', &mut raw).unwrap() > 0, "stream ended before its first event");
        }
        started.push(raw);
    }
    eprintln!("scale-out: 4 streams started");
    let mut a = procs.replicas.remove(0);
    a.kill().unwrap();
    a.wait().unwrap();
    let t0 = Instant::now();
    for ((upstream, mut r), raw) in streams.into_iter().zip(started) {
        let (rest, whole) = body(&mut r, true, raw);
        if upstream == Some(port_b) {
            assert!(whole && rest.contains("data: [DONE]"), "a stream on the surviving replica was lost: {rest}");
        } else {
            // Cut cleanly: the client sees the connection end without [DONE], not a hang.
            assert!(!rest.contains("data: [DONE]"), "a stream on the killed replica cannot have finished");
        }
    }
    assert!(t0.elapsed() < Duration::from_secs(60));
    eprintln!("scale-out: streams after the kill checked");
    // Every later request is served (nginx retries the dead replica's connection failures on B).
    for i in 0..8 {
        let r = call(port, "POST", "/v1/completions", SEEDED);
        assert!(r.status == 200 && r.whole, "request {i} after the kill: {r:?}");
        assert_eq!(r.upstream, Some(port_b), "{r:?}");
        assert_eq!(text_of(&r), texts[0].1, "the survivor gives the same seeded answer");
    }
    assert_eq!(health(port), 200, "/health through nginx");
    drop(procs);
    let _ = std::fs::remove_dir_all(&dir);
}
