//! The `trace_steps` extension and the playground page on the real model: one step per token
//! with both distributions (sorted, summing to at most 1, the token's own probabilities
//! agreeing), the chain's candidate counts following top-k, the same tokens as without the
//! trace, streamed steps equal to whole ones, a grammar's allowed-token count, a 400 naming the
//! field for a bad value, token-trie steps (sampled among the allowed, forced without sampling),
//! and the page's assets served at `/`.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::{config, model_path, TestServer};
use nucleus_runtime::{LlamaCppModel, Model};
use serde_json::{json, Value};

/// (status, headers, body) of a plain HTTP/1.1 request.
fn request(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, mut body) = text.split_once("\r\n\r\n").map(|(h, b)| (h.to_string(), b.to_string())).unwrap_or_default();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    (status, head, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn post(addr: SocketAddr, body: &Value) -> Value {
    let (status, _, text) = request(addr, "POST", "/v1/chat/completions", &body.to_string());
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn sum(v: &Value) -> f64 {
    v.as_array().unwrap().iter().map(|c| c["p"].as_f64().unwrap()).sum()
}

fn sorted_desc(v: &Value) -> bool {
    let ps: Vec<f64> = v.as_array().unwrap().iter().map(|c| c["p"].as_f64().unwrap()).collect();
    ps.windows(2).all(|w| w[0] >= w[1])
}

#[test]
fn steps_describe_each_token() {
    let server = TestServer::start(config(2, 8));
    let addr = server.server.addr();
    let base = json!({"messages": [{"role": "user", "content": "Name three colors."}], "max_tokens": 12, "seed": 42});
    let mut traced = base.clone();
    traced["trace_steps"] = json!(8);
    let plain = post(addr, &base);
    let whole = post(addr, &traced);
    let choice = &whole["choices"][0];
    assert_eq!(choice["message"]["content"], plain["choices"][0]["message"]["content"], "the trace changes no token");
    let steps = choice["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), whole["usage"]["completion_tokens"].as_u64().unwrap() as usize);
    let text: String = steps.iter().map(|s| s["token"].as_str().unwrap()).collect();
    assert_eq!(text, choice["message"]["content"].as_str().unwrap());
    for s in steps {
        let (raw, post_top) = (&s["raw_top"], &s["post_top"]);
        assert_eq!(raw.as_array().unwrap().len(), 8, "{s}");
        assert!(sorted_desc(raw) && sorted_desc(post_top), "{s}");
        assert!(sum(raw) <= 1.0 + 1e-4 && sum(raw) > 0.0, "{s}");
        assert!(sum(post_top) <= 1.0 + 1e-4 && sum(post_top) >= sum(raw) - 1e-4, "the chain only sharpens: {s}");
        let chain = s["chain"].as_array().unwrap();
        let names: Vec<&str> = chain.iter().map(|c| c["sampler"].as_str().unwrap()).collect();
        let k = names.iter().position(|n| *n == "top-k").expect("top-k in the default chain");
        assert_eq!(chain[k]["candidates"], 40, "{s}");
        assert_eq!(s["candidates_in"], 49152);
        let left = chain.last().unwrap()["candidates"].as_u64().unwrap() as usize;
        assert!(post_top.as_array().unwrap().len() == left.min(8), "{s}");
        let id = s["id"].as_i64().unwrap();
        if let Some(c) = post_top.as_array().unwrap().iter().find(|c| c["id"] == id) {
            assert!((c["p"].as_f64().unwrap() - s["post_p"].as_f64().unwrap()).abs() < 1e-6);
        }
        if let Some(c) = raw.as_array().unwrap().iter().find(|c| c["id"] == id) {
            assert!((c["p"].as_f64().unwrap() - s["p"].as_f64().unwrap()).abs() < 1e-6);
        }
        let p = s["p"].as_f64().unwrap();
        assert!((s["surprisal"].as_f64().unwrap() + p.log2()).abs() < 1e-3, "{s}");
        assert!(s["entropy"].as_f64().unwrap() > 0.0 && s["allowed"].is_null() && s["sampled"] == true);
    }

    // Streamed: the same steps, spread over the chunks that carry their text.
    let mut streamed = traced.clone();
    streamed["stream"] = json!(true);
    let (status, _, body) = request(addr, "POST", "/v1/chat/completions", &streamed.to_string());
    assert_eq!(status, 200, "{body}");
    let mut from_stream = Vec::new();
    for line in body.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|l| *l != "[DONE]") {
        let chunk: Value = serde_json::from_str(line).unwrap();
        if let Some(s) = chunk["choices"][0]["steps"].as_array() {
            from_stream.extend(s.iter().cloned());
        }
    }
    assert_eq!(&from_stream, steps);

    // A grammar: every step says how many tokens it allowed.
    let mut constrained = traced.clone();
    constrained["grammar"] = json!("root ::= (\"red\" | \"green\" | \"blue\") \", \" [a-z]+");
    let out = post(addr, &constrained);
    let steps = out["choices"][0]["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    for s in steps {
        let allowed = s["allowed"].as_u64().unwrap_or_else(|| panic!("allowed: {s}"));
        assert!((1..49152).contains(&allowed), "{s}");
    }
    assert!(steps[0]["allowed"].as_u64().unwrap() < 100, "{}", steps[0]);

    // A token trie: the first token is sampled among the leaves' first tokens; a forced
    // continuation is taken without a sampling step.
    let m = LlamaCppModel::load(model_path()).expect("load");
    let tok = m.tokenizer();
    let leaves = [" Paris", " London Bridge is falling down"];
    let desc = json!({"modelId": "smollm2", "descriptors": [{"path": "city", "leaves": leaves.iter().map(|l| {
        json!({"name": l.trim(), "tokens": tok.encode(l, false, false).unwrap()})
    }).collect::<Vec<_>>()}]});
    let mut trie = traced.clone();
    trie["token_trie"] = json!({"descriptor": desc, "path": "city", "mode": "sampled"});
    let out = post(addr, &trie);
    let steps = out["choices"][0]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["allowed"], 2, "{}", steps[0]);
    assert_eq!(steps[0]["sampled"], true);
    let post_ids: Vec<&Value> = steps[0]["post_top"].as_array().unwrap().iter().map(|c| &c["id"]).collect();
    assert!(post_ids.len() <= 2, "only the two allowed tokens survive: {}", steps[0]);
    let mut forced = trie.clone();
    forced["token_trie"]["descriptor"]["descriptors"][0]["leaves"].as_array_mut().unwrap().remove(0);
    let out = post(addr, &forced);
    assert_eq!(out["choices"][0]["message"]["content"], leaves[1]);
    for s in out["choices"][0]["steps"].as_array().unwrap() {
        assert_eq!((&s["sampled"], &s["allowed"], &s["post_p"]), (&json!(false), &json!(1), &json!(1.0)), "{s}");
        assert!(s["chain"].as_array().unwrap().is_empty());
    }

    // Bad values are 400s naming the field.
    for bad in [json!(65), json!(-1), json!("5"), json!(1.5)] {
        let mut b = base.clone();
        b["trace_steps"] = bad.clone();
        let (status, _, text) = request(addr, "POST", "/v1/chat/completions", &b.to_string());
        assert_eq!(status, 400, "{bad}: {text}");
        assert!(text.contains("\"param\":\"trace_steps\""), "{text}");
    }

    // The playground page and its assets.
    let (status, head, html) = request(addr, "GET", "/", "");
    assert_eq!(status, 200);
    assert!(head.to_ascii_lowercase().contains("content-type: text/html"), "{head}");
    assert!(html.contains("playground.js") && html.contains("playground.css"));
    for (path, ty) in [("/playground.js", "javascript"), ("/playground.css", "text/css")] {
        let (status, head, body) = request(addr, "GET", path, "");
        assert_eq!(status, 200, "{path}");
        assert!(head.to_ascii_lowercase().contains(ty), "{head}");
        assert!(!body.contains("http://") && !body.contains("https://"), "{path} loads nothing from outside");
    }
}
