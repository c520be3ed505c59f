//! A seeded request whose prompt spans several prefill chunks gets the same answer from the
//! server (cold, and warm from its prompt cache) and from the runtime's `generate` (what
//! `nucleus generate` and the Python, Node and C bindings run).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::ControlFlow;
use std::time::Duration;

use common::{config, model_path, TestServer};
use nucleus_runtime::{
    generate, prompt_tokens, ContextOptions, LlamaCppModel, Model, Prompt, SequenceOptions, PREFILL_CHUNK,
};
use nucleus_sampler::SamplingParams;
use serde_json::{json, Value};

const PROMPT: &str = "The lighthouse keeper wrote in his log every evening. He noted the wind, the height of \
the waves, the ships that passed and the birds that rested on the gallery rail. Some nights the fog \
came in so thick that he could not see the lamp from the foot of the tower, and he sounded the horn \
every two minutes until dawn. In spring the supply boat brought flour, oil, letters and newspapers \
that were already a week old. He read them slowly, one page a day, so that they would last until the \
next boat. His daughter, who lived in the town across the bay, sent him seeds for the small garden \
behind the cottage, where he grew beans, onions and a row of stubborn sunflowers that leaned away \
from the sea. One autumn a storm tore the roof from the shed and carried his rowing boat onto the \
rocks, and for three weeks nobody came. When the weather finally cleared, he climbed to the top of \
the tower, looked out over the calm grey water and saw";

const MAX_TOKENS: usize = 24;

#[test]
fn a_long_prompt_gets_the_same_answer_from_the_server_and_generate() {
    let model = LlamaCppModel::load(model_path()).expect("load");
    let tokens = prompt_tokens(&model, &Prompt::Text(PROMPT.into())).expect("tokenize");
    assert!(tokens.len() > 3 * PREFILL_CHUNK, "the prompt spans several chunks: {}", tokens.len());

    // The reference: the runtime's generate in a context shaped like the test server's.
    let params = SamplingParams { seed: 11, temp: 0.9, ..SamplingParams::default() };
    let opts = ContextOptions {
        n_ctx: Some(2 * 1024),
        n_seq_max: 2,
        threads: Some(1),
        kv_unified: false,
        ..Default::default()
    };
    let mut ctx = model.new_context(&opts).expect("context");
    let mut reference = String::new();
    let seq_opts = SequenceOptions { max_tokens: Some(MAX_TOKENS), ..Default::default() };
    generate(&model, ctx.as_mut(), &tokens, &params, &seq_opts, None, &mut |ev| {
        reference.push_str(ev.text);
        ControlFlow::Continue(())
    })
    .expect("generate");

    let server = TestServer::start(config(2, 8));
    let body = json!({"prompt": PROMPT, "max_tokens": MAX_TOKENS, "seed": 11, "temperature": 0.9});
    // Cold, then warm (all of the prompt but its last token comes from the cache): the same answer.
    for round in ["cold", "warm"] {
        let v = complete(&server, &body);
        assert_eq!(v["usage"]["prompt_tokens"], json!(tokens.len()), "{round}: {v}");
        assert_eq!(v["choices"][0]["text"].as_str(), Some(reference.as_str()), "{round}: {v}");
    }
}

fn complete(server: &TestServer, body: &Value) -> Value {
    let body = body.to_string();
    let mut s = TcpStream::connect(server.server.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, json_body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{text}");
    serde_json::from_str(json_body).expect("a JSON body")
}
