//! The published API contract (`GET /openapi.json`) against a running server:
//!
//! * the document is OpenAPI 3.1 in structure (version, info, operations with responses, every
//!   `$ref` resolving into `components.schemas`), describes every route the router serves and
//!   only routes that answer;
//! * every documented request field is read by the parser: sent with a value of a type the
//!   document does not allow, it is a 400 naming that field;
//! * the document validates against the official OpenAPI 3.1 schema, and each of its schemas
//!   against the JSON Schema 2020-12 meta-schema (`tests/contract/validate_document.py`);
//! * schemathesis (PyPI, pinned, installed with pip if missing) generates requests from the
//!   document — valid and invalid, a bounded number per operation, generation kept to a few
//!   tokens by `tests/contract/hooks.py` — and checks that no answer is a 5xx, every answer
//!   conforms to the document (status, content type, headers, body schema; each chunk of a
//!   stream by the hooks' `stream_chunks_conform`), bodies the document calls invalid are
//!   refused, and that the server still answers `/health` afterwards with every slot free.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{config, pip_install, python, TestServer};
use serde_json::{json, Value};

/// The schemathesis release the contract run is written against.
const SCHEMATHESIS_VERSION: &str = "4.32.5";

/// Examples per operation and phase in the schemathesis run (`NUCLEUS_CONTRACT_EXAMPLES`).
const EXAMPLES: &str = "25";

fn server() -> &'static TestServer {
    static S: OnceLock<TestServer> = OnceLock::new();
    S.get_or_init(|| TestServer::start(config(2, 16)))
}

/// One HTTP/1.1 exchange: (status, content type, body).
fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{payload}",
        payload.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let ctype = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type:").map(|v| v.trim().to_string()))
        .unwrap_or_default();
    // Bodies here are small; a chunked one (streams) is not read by these tests.
    (status, ctype, rest.to_string())
}

fn document() -> Value {
    let (status, ctype, body) = http(server().server.addr(), "GET", "/openapi.json", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(ctype, "application/json");
    serde_json::from_str(&body).expect("the document is JSON")
}

/// Every `$ref` in `v`.
fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn openapi_json_is_an_openapi_3_1_document_of_every_route() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string(), "info: {}", doc["info"]);
    let schemas = doc["components"]["schemas"].as_object().expect("components.schemas");
    let paths = doc["paths"].as_object().expect("paths");

    let mut ids = Vec::new();
    for (path, item) in paths {
        assert!(path.starts_with('/'), "{path}");
        for (method, op) in item.as_object().expect("a path item") {
            assert!(["get", "post", "delete"].contains(&method.as_str()), "{method} {path}");
            ids.push(op["operationId"].as_str().expect("operationId").to_string());
            let responses = op["responses"].as_object().expect("responses");
            assert!(responses.contains_key("200"), "{method} {path} documents no 200");
            for (status, r) in responses {
                assert!(status.len() == 3 && status.parse::<u16>().is_ok(), "{method} {path}: status {status}");
                assert!(r["description"].is_string(), "{method} {path} {status}: no description");
                for (media, m) in r["content"].as_object().into_iter().flatten() {
                    assert!(m["schema"].is_object(), "{method} {path} {status} {media}: no schema");
                }
            }
            if method == "post" {
                assert!(op["requestBody"]["content"]["application/json"]["schema"]["$ref"].is_string());
            }
        }
    }
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "operation ids are unique");

    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r} is not a component"));
        assert!(schemas.contains_key(name), "{r} does not resolve");
    }

    // Every route the router serves is described, and every described route answers (no
    // unknown_url, no 405).
    for (path, method) in nucleus_server::routes::served() {
        let m = method.as_str().to_ascii_lowercase();
        assert!(doc["paths"][path][&m].is_object(), "{method} {path} is served but not described");
    }
    let addr = server().server.addr();
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            let body = (method == "post").then(|| json!({}));
            let (status, _, text) = http(addr, &method.to_ascii_uppercase(), path, body.as_ref());
            // A path with a parameter (`/v1/responses/{id}`) answers a 404 for an id it does
            // not know, which is not the router's unknown_url.
            let unknown_id = path.contains('{') && status == 404 && !text.contains("unknown_url");
            assert!(unknown_id || (status != 404 && status != 405 && status < 500), "{method} {path}: {status} {text}");
        }
    }
    let (status, _, _) = http(addr, "GET", "/no/such/route", None);
    assert_eq!(status, 404);
}

/// The schema `v` with `$ref`s followed.
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v["$ref"].as_str() {
        Some(r) => resolve(doc, &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")]),
        None => v,
    }
}

/// The JSON types a schema allows.
fn types(doc: &Value, v: &Value, out: &mut Vec<String>) {
    let v = resolve(doc, v);
    match &v["type"] {
        Value::String(t) => out.push(t.clone()),
        Value::Array(ts) => out.extend(ts.iter().filter_map(|t| t.as_str().map(str::to_string))),
        _ => {}
    }
    if let Some(c) = v.get("const") {
        out.push(match c {
            Value::Bool(_) => "boolean".into(),
            Value::String(_) => "string".into(),
            _ => "number".into(),
        });
    }
    if v["enum"].is_array() {
        out.push("string".into());
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        for s in v[k].as_array().into_iter().flatten() {
            types(doc, s, out);
        }
    }
}

/// A value of a JSON type `allowed` does not include.
fn wrong_value(allowed: &[String]) -> Value {
    let has = |t: &str| allowed.iter().any(|a| a == t || (t == "integer" && a == "number"));
    if !has("boolean") {
        json!(true)
    } else if !has("string") {
        json!("zz")
    } else if !has("object") {
        json!({"zz": 1})
    } else if !has("array") {
        json!([1])
    } else {
        json!(1.5)
    }
}

/// Every documented request field is one the parser reads: a value of a type the document does
/// not allow is a 400 naming the field.
#[test]
fn every_documented_request_field_is_read_by_the_parser() {
    let doc = document();
    let addr = server().server.addr();
    let routes = [
        (
            "/v1/chat/completions",
            "CreateChatCompletionRequest",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            "max_tokens",
            50,
        ),
        ("/v1/completions", "CreateCompletionRequest", json!({"prompt": "hi"}), "max_tokens", 50),
        // The Responses body documents its own fields (its sampling extensions are chat's).
        ("/v1/responses", "CreateResponseRequest", json!({"input": "hi"}), "max_output_tokens", 20),
        // Anthropic's Messages bodies (their sampling extensions are chat's).
        (
            "/v1/messages",
            "CreateMessageRequest",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            "max_tokens",
            10,
        ),
        (
            "/v1/messages/count_tokens",
            "CountMessageTokensRequest",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            "max_tokens",
            4,
        ),
        // llama-server's utility routes (no generation): /apply-template reads the chat body.
        ("/tokenize", "TokenizeRequest", json!({"content": "hi"}), "", 3),
        ("/detokenize", "DetokenizeRequest", json!({"tokens": [1]}), "", 0),
        (
            "/apply-template",
            "CreateChatCompletionRequest",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            "max_tokens",
            50,
        ),
    ];
    let mut checked = 0;
    for (path, schema, base, length, fields) in routes {
        let props = doc["components"]["schemas"][schema]["properties"].as_object().expect("properties");
        assert!(props.len() > fields, "{schema} documents only {} fields", props.len());
        for (name, s) in props {
            let mut allowed = Vec::new();
            types(&doc, s, &mut allowed);
            assert!(!allowed.is_empty(), "{schema}.{name}: no type");
            let mut body = base.as_object().unwrap().clone();
            if !length.is_empty() {
                body.insert(length.into(), json!(1));
            }
            let bad = wrong_value(&allowed);
            body.insert(name.clone(), bad.clone());
            let (status, _, text) = http(addr, "POST", path, Some(&Value::Object(body)));
            let err: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path} {name}={bad}: {text}"));
            let named = match err["error"]["param"].as_str() {
                Some(param) => {
                    param == name || param.starts_with(&format!("{name}.")) || param.starts_with(&format!("{name}["))
                }
                // Anthropic's error shape has no `param`: the message names the field.
                None => {
                    err["type"] == "error"
                        && err["error"]["message"].as_str().is_some_and(|m| m.contains(name.as_str()))
                }
            };
            assert!(status == 400 && named, "{path}: '{name}' = {bad} (allowed {allowed:?}) gave {status} {text}");
            checked += 1;
        }
    }
    eprintln!("{checked} documented fields checked");
}

/// `usage.speculative` (this server's extension) is documented in the `Usage` schema, and a
/// speculating request's answer carries exactly the documented fields (a plain one none).
#[test]
fn usage_speculative_is_documented_and_sent() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    let documented: Vec<String> = schemas["SpeculativeUsage"]["properties"]
        .as_object()
        .expect("SpeculativeUsage is documented")
        .keys()
        .cloned()
        .collect();
    let prop = schemas["Usage"]["properties"]["speculative"].to_string();
    assert!(prop.contains("#/components/schemas/SpeculativeUsage"), "Usage.speculative: {prop}");
    let addr = server().server.addr();
    let prompt = "Repeat: red green blue, red green blue, red green blue, red green blue, red green";
    let body = |spec: Value| {
        json!({"messages": [{"role": "user", "content": prompt}], "max_tokens": 16, "temperature": 0,
               "speculative": spec})
    };
    let (status, _, text) = http(addr, "POST", "/v1/chat/completions", Some(&body(json!({"type": "ngram"}))));
    assert_eq!(status, 200, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    let mut sent: Vec<String> =
        r["usage"]["speculative"].as_object().expect("usage.speculative").keys().cloned().collect();
    let mut want = documented.clone();
    sent.sort();
    want.sort();
    assert_eq!(sent, want, "{text}");
    let (status, _, text) = http(addr, "POST", "/v1/chat/completions", Some(&body(json!({"type": "none"}))));
    assert_eq!(status, 200, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert!(r["usage"].get("speculative").is_none(), "{text}");
}

/// Installs the pinned schemathesis with pip when that release is not importable.
fn ensure_schemathesis() {
    let check =
        format!("import schemathesis, sys; sys.exit(0 if schemathesis.__version__ == '{SCHEMATHESIS_VERSION}' else 1)");
    if !Command::new(python()).args(["-c", &check]).status().is_ok_and(|s| s.success()) {
        pip_install(&format!("schemathesis=={SCHEMATHESIS_VERSION}"));
    }
}

/// Schemathesis over the whole document: no 5xx, every answer as documented, the server
/// healthy after.
#[test]
fn schemathesis_finds_no_server_error_and_every_answer_conforms() {
    ensure_schemathesis();
    let s = TestServer::start(config(2, 16));
    let addr = s.server.addr();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/contract");
    let report = std::env::temp_dir().join(format!("nucleus-contract-{}", std::process::id()));
    let examples = std::env::var("NUCLEUS_CONTRACT_EXAMPLES").unwrap_or_else(|_| EXAMPLES.into());
    // The document against the official OpenAPI 3.1 schema and its schemas against the JSON
    // Schema 2020-12 meta-schema.
    let v = Command::new(python())
        .arg(dir.join("validate_document.py"))
        .arg(format!("http://{addr}/openapi.json"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run validate_document.py");
    let vout = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success(), "/openapi.json is not valid:\n{vout}\n{}", String::from_utf8_lossy(&v.stderr));
    eprintln!("{}", vout.trim());

    std::fs::create_dir_all(&report).expect("scratch directory");
    let t0 = Instant::now();
    let out = Command::new(python())
        .args(["-c", "from schemathesis.cli import schemathesis; schemathesis()", "run"])
        .arg(format!("http://{addr}/openapi.json"))
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,stream_chunks_conform",
            // The aliases (/chat/completions, /models, ...) are the same handlers.
            "--exclude-operation-id-regex",
            "Alias$",
            "--max-examples",
            &examples,
            "--seed",
            "16",
            "--workers",
            "1",
            "--request-timeout",
            "60",
            "--no-color",
            "--generation-database",
            "none",
            "--report",
            "junit",
        ])
        .arg("--report-dir")
        .arg(&report)
        // Run in the scratch directory, so nothing (hypothesis's own folder) lands in the tree.
        .current_dir(&report)
        .env("SCHEMATHESIS_HOOKS", "hooks")
        .env("PYTHONPATH", &dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&report);
    eprintln!("schemathesis: {:.1} s\n{stdout}", t0.elapsed().as_secs_f64());
    assert!(out.status.success(), "schemathesis failed ({}):\n{stdout}\n{stderr}", out.status);
    let summary = stdout.lines().find(|l| l.contains(" generated, ")).unwrap_or_default().to_string();
    assert!(summary.contains("passed") && !summary.contains("failed"), "{summary}");

    let (status, _, body) = http(addr, "GET", "/health", None);
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
    // Nothing is left running: every slot is free again.
    let (_, _, metrics) = http(addr, "GET", "/metrics", None);
    let busy: Vec<&str> = metrics.lines().filter(|l| l.starts_with("nucleus_slots_busy")).collect();
    assert!(busy.iter().all(|l| l.ends_with(" 0")), "{busy:?}");
    s.server.shutdown();
    s.server.wait().expect("clean shutdown");
}
