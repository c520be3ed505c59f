//! A bounded soak: about 2,000 mixed requests against one server (two slots, a queue of
//! eight): non-streamed and streamed completions and chats, streams the client abandons after
//! the first token, malformed and ill-typed bodies, bodies over the size limit, unknown routes
//! and wrong methods, operational endpoints, and bursts over the queue limit. It checks that
//! no answer is a 5xx, every answer has the status its kind calls for, every accepted
//! generation is either finished or cancelled by its client (the server's own counters), no
//! slot or queue entry is left behind, and the resident memory stops growing after warm-up.
//! Small `max_tokens` keep it to about a minute on two cores.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{config, TestServer};

/// Rounds of mixed requests; each is followed by a burst over the queue limit.
const ROUNDS: usize = 8;
/// Mixed requests per round.
const PER_ROUND: usize = 240;
/// Concurrent clients for the mixed requests.
const CLIENTS: usize = 4;
/// Simultaneous requests in a burst: more than the slots plus the queue.
const BURST: usize = 16;
/// The server's body limit; oversized requests send a little more.
const MAX_BODY: usize = 64 << 10;

/// One request kind of the mix, with the statuses it may get.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Completion,
    StreamedCompletion,
    StreamedChat,
    Cancelled,
    Chat,
    Malformed,
    BadField,
    Oversized,
    NoRoute,
    WrongMethod,
    Health,
    Metrics,
    Burst,
}

impl Kind {
    /// The mix: about a third of the requests generate (short prompts, a few tokens; chat,
    /// with its longer templated prompt, one in sixteen), the rest are refused or cheap.
    fn of(i: usize) -> Kind {
        let chat = if (i / 16).is_multiple_of(2) { Kind::StreamedChat } else { Kind::Chat };
        [
            Kind::Completion,
            Kind::Malformed,
            Kind::StreamedCompletion,
            Kind::BadField,
            Kind::Oversized,
            Kind::Cancelled,
            Kind::NoRoute,
            Kind::Completion,
            Kind::Malformed,
            Kind::WrongMethod,
            chat,
            Kind::Health,
            Kind::BadField,
            Kind::Oversized,
            Kind::Metrics,
            Kind::StreamedCompletion,
        ][i % 16]
    }

    fn expected(self) -> &'static [u16] {
        match self {
            Kind::Completion | Kind::StreamedCompletion | Kind::StreamedChat | Kind::Chat => &[200],
            Kind::Health | Kind::Metrics => &[200],
            // The status line arrives before the first token, so it is always seen.
            Kind::Cancelled => &[200],
            Kind::Malformed | Kind::BadField => &[400],
            Kind::Oversized => &[413],
            Kind::NoRoute => &[404],
            Kind::WrongMethod => &[405],
            Kind::Burst => &[200, 429],
        }
    }
}

/// What one request saw.
struct Seen {
    status: u16,
    /// For accepted generations: whether the client read it to its end (false: abandoned).
    completed: bool,
    problem: Option<String>,
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s
}

fn send(s: &mut TcpStream, method: &str, path: &str, body: &[u8]) {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("send head");
    s.write_all(body).expect("send body");
}

/// (status, headers and body) read to the end of the connection.
fn read_all(s: TcpStream) -> (u16, String) {
    let mut r = BufReader::new(s);
    let mut text = Vec::new();
    r.read_to_end(&mut text).expect("read response");
    let text = String::from_utf8_lossy(&text).into_owned();
    (status_of(&text), text)
}

fn status_of(text: &str) -> u16 {
    text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn generation_body(i: usize, chat: bool, stream: bool, max_tokens: usize) -> String {
    let extra = if max_tokens > 8 { r#", "ignore_eos": true"# } else { "" };
    if chat {
        format!(
            r#"{{"messages": [{{"role": "user", "content": "Tell me about the number {n}."}}], "max_tokens": {max_tokens}, "seed": {i}, "stream": {stream}{extra}}}"#,
            n = i % 50
        )
    } else {
        format!(
            r#"{{"prompt": "Item {n}: the", "max_tokens": {max_tokens}, "seed": {i}, "stream": {stream}{extra}}}"#,
            n = i % 50
        )
    }
}

/// Sends request `i` of kind `kind` and reports what it saw.
fn one(addr: SocketAddr, i: usize, kind: Kind) -> Seen {
    let mut s = connect(addr);
    let seen = |status: u16, completed: bool, problem: Option<String>| Seen { status, completed, problem };
    match kind {
        Kind::Completion | Kind::Chat => {
            let chat = kind == Kind::Chat;
            let path = if chat { "/v1/chat/completions" } else { "/v1/completions" };
            send(&mut s, "POST", path, generation_body(i, chat, false, 2).as_bytes());
            let (status, text) = read_all(s);
            let ok = status != 200 || text.contains("\"finish_reason\":");
            seen(status, status == 200, (!ok).then(|| format!("no finish_reason: {text}")))
        }
        Kind::StreamedCompletion | Kind::StreamedChat | Kind::Burst => {
            let (chat, tokens) = (kind == Kind::StreamedChat, if kind == Kind::Burst { 4 } else { 3 });
            let path = if chat { "/v1/chat/completions" } else { "/v1/completions" };
            send(&mut s, "POST", path, generation_body(i, chat, true, tokens).as_bytes());
            let (status, text) = read_all(s);
            let ok = status != 200 || (text.contains("data: [DONE]") && text.contains("\"finish_reason\":\""));
            seen(status, status == 200, (!ok).then(|| format!("stream did not end well: {text}")))
        }
        Kind::Cancelled => {
            send(&mut s, "POST", "/v1/completions", generation_body(i, false, true, 48).as_bytes());
            let mut r = BufReader::new(s);
            let mut line = String::new();
            r.read_line(&mut line).expect("status line");
            let status = status_of(&line);
            if status != 200 {
                let mut rest = String::new();
                let _ = r.read_to_string(&mut rest);
                return seen(status, false, Some(format!("{line}{rest}")));
            }
            // Leave after the first token event: the connection is dropped mid-stream.
            loop {
                line.clear();
                if r.read_line(&mut line).expect("stream line") == 0 {
                    return seen(status, true, Some("the stream ended before its first token".into()));
                }
                if line.starts_with("data: {") {
                    break;
                }
            }
            seen(status, false, None)
        }
        Kind::Malformed => {
            let bodies: [&[u8]; 5] = [b"{\"prompt\": ", b"not json", b"", b"[1, 2", b"{\"prompt\": \"\xff\xfe\"}"];
            send(&mut s, "POST", "/v1/completions", bodies[i % bodies.len()]);
            let (status, _) = read_all(s);
            seen(status, false, None)
        }
        Kind::BadField => {
            let bodies = [
                r#"{"prompt": "hi", "max_tokens": -3}"#,
                r#"{"prompt": "hi", "temperature": "hot"}"#,
                r#"{"messages": "hello"}"#,
                r#"{"prompt": "hi", "top_p": 7}"#,
                r#"{"messages": [{"role": "user", "content": "hi"}], "n": 0}"#,
                r#"{"prompt": "hi", "seed": "abc"}"#,
            ];
            let b = bodies[i % bodies.len()];
            let path = if b.contains("messages") { "/v1/chat/completions" } else { "/v1/completions" };
            send(&mut s, "POST", path, b.as_bytes());
            let (status, _) = read_all(s);
            seen(status, false, None)
        }
        Kind::Oversized => {
            let mut body = br#"{"prompt": ""#.to_vec();
            body.resize(MAX_BODY + 1 + (i % 7) * 1000, b'a');
            body.extend_from_slice(b"\"}");
            send(&mut s, "POST", "/v1/completions", &body);
            let (status, _) = read_all(s);
            seen(status, false, None)
        }
        Kind::NoRoute => {
            send(&mut s, "POST", "/v1/embeddings", b"{}");
            seen(read_all(s).0, false, None)
        }
        Kind::WrongMethod => {
            send(&mut s, "GET", "/v1/completions", b"");
            seen(read_all(s).0, false, None)
        }
        Kind::Health => {
            send(&mut s, "GET", "/health", b"");
            seen(read_all(s).0, false, None)
        }
        Kind::Metrics => {
            send(&mut s, "GET", "/metrics", b"");
            seen(read_all(s).0, false, None)
        }
    }
}

/// A metric's value from `/metrics` as a client reads it.
fn metrics(addr: SocketAddr) -> BTreeMap<String, f64> {
    let mut s = connect(addr);
    send(&mut s, "GET", "/metrics", b"");
    let (status, text) = read_all(s);
    assert_eq!(status, 200, "{text}");
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
        .collect()
}

/// Resident set size of this process (the server runs in it), in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("statm resident");
    pages * 4096
}

/// Tallies by kind and status, and the problems seen.
#[derive(Default)]
struct Tally {
    by: BTreeMap<(Kind, u16), usize>,
    problems: Vec<String>,
    completed: usize,
    abandoned: usize,
}

impl Tally {
    fn add(&mut self, i: usize, kind: Kind, seen: Seen) {
        *self.by.entry((kind, seen.status)).or_default() += 1;
        if !kind.expected().contains(&seen.status) {
            self.problems.push(format!("request {i} ({kind:?}): status {}", seen.status));
        }
        if let Some(p) = seen.problem {
            self.problems.push(format!("request {i} ({kind:?}): {p}"));
        }
        let generation = matches!(
            kind,
            Kind::Completion
                | Kind::Chat
                | Kind::StreamedCompletion
                | Kind::StreamedChat
                | Kind::Cancelled
                | Kind::Burst
        );
        if generation && seen.status == 200 {
            if seen.completed {
                self.completed += 1;
            } else {
                self.abandoned += 1;
            }
        }
    }
}

/// Waits until no slot is busy and nothing queues; the counters then.
fn settled(addr: SocketAddr) -> BTreeMap<String, f64> {
    let t0 = Instant::now();
    loop {
        let m = metrics(addr);
        if m["nucleus_slots_busy"] == 0.0 && m["nucleus_queue_depth"] == 0.0 {
            return m;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "slots or queue still busy 30 s after the last request: {m:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn soak_of_mixed_requests_leaves_no_5xx_no_busy_slot_and_flat_memory() {
    let mut cfg = config(2, 8);
    cfg.max_body = MAX_BODY;
    // The prompt cache's memory keeps a KV copy of each slot's prompt and answer before the slot
    // goes to another prompt, up to `--cache-ram`: by design it grows to its budget. A small
    // budget fills during warm-up, so any growth after it is a leak.
    cfg.cache_ram = 8 << 20;
    let ts = TestServer::start(cfg);
    let addr = ts.server.addr();
    let tally = Mutex::new(Tally::default());
    let t0 = Instant::now();
    let mut rss_after_warmup = 0;
    let mut rss_samples = Vec::new();
    let mut next_id = 0usize;
    for round in 0..ROUNDS {
        let base = next_id;
        let counter = AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for _ in 0..CLIENTS {
                sc.spawn(|| loop {
                    let k = counter.fetch_add(1, Ordering::Relaxed);
                    if k >= PER_ROUND {
                        break;
                    }
                    let i = base + k;
                    let kind = Kind::of(i);
                    let seen = one(addr, i, kind);
                    tally.lock().unwrap().add(i, kind, seen);
                });
            }
        });
        next_id += PER_ROUND;
        // A burst: more simultaneous streams than slots plus queue places.
        let base = next_id;
        std::thread::scope(|sc| {
            for k in 0..BURST {
                let tally = &tally;
                sc.spawn(move || {
                    let seen = one(addr, base + k, Kind::Burst);
                    tally.lock().unwrap().add(base + k, Kind::Burst, seen);
                });
            }
        });
        next_id += BURST;
        settled(addr);
        eprintln!("soak: round {round} done after {:.1} s", t0.elapsed().as_secs_f64());
        let now = rss();
        rss_samples.push(now >> 20);
        if round == 1 {
            rss_after_warmup = now;
        }
    }
    let elapsed = t0.elapsed();
    let m = settled(addr);
    let t = tally.into_inner().unwrap();
    let total: usize = t.by.values().sum();
    eprintln!("soak: {total} requests in {:.1} s; RSS by round (MiB): {rss_samples:?}", elapsed.as_secs_f64());
    for ((kind, status), n) in &t.by {
        eprintln!("  {kind:?} {status}: {n}");
    }
    let shown: Vec<_> = t.problems.iter().take(10).collect();
    assert!(t.problems.is_empty(), "{} problems, first: {shown:#?}", t.problems.len());
    assert_eq!(total, ROUNDS * (PER_ROUND + BURST));

    let server_5xx: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("nucleus_requests_total") && k.contains("status=\"5"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(server_5xx, 0.0, "the server counted 5xx answers: {m:?}");
    let bursts_refused = t.by.get(&(Kind::Burst, 429)).copied().unwrap_or(0);
    assert!(bursts_refused > 0, "no burst ever went over the queue limit");
    let cancelled_sent = t.by.get(&(Kind::Cancelled, 200)).copied().unwrap_or(0);
    assert!(cancelled_sent > 0);

    // Every accepted generation finished or was cancelled, by the server's own count: the
    // finished ones are those read to the end plus abandoned streams that ended before the
    // server noticed the departure.
    let finished = m["nucleus_sequences_total"];
    let cancelled = m["nucleus_sequences_cancelled_total"];
    assert_eq!(
        finished + cancelled,
        (t.completed + t.abandoned) as f64,
        "accepted generations: {} read to the end, {} abandoned; the server finished {finished} and cancelled \
         {cancelled}",
        t.completed,
        t.abandoned
    );
    assert!(finished >= t.completed as f64);
    assert!(cancelled > 0.0, "no abandoned stream was cancelled by the server");

    // Memory: after warm-up (two rounds) the resident set grows by less than 48 MiB over
    // six more rounds (about 1,500 requests); a per-request leak of 32 KiB would exceed it.
    let end = rss();
    let growth = end.saturating_sub(rss_after_warmup);
    assert!(growth < 48 << 20, "RSS grew by {} MiB after warm-up (by round, MiB: {rss_samples:?})", growth >> 20);

    // And the server still answers.
    let mut s = connect(addr);
    send(&mut s, "GET", "/health", b"");
    assert_eq!(read_all(s).0, 200);
    ts.server.shutdown();
    ts.server.wait().unwrap();
}
