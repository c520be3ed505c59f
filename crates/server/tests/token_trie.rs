//! The `token_trie` request extension through the official client: the answer is one of the
//! descriptor path's leaves (greedy and sampled, chat and streamed), and bad descriptors,
//! paths and modes are 400s naming the field.

mod common;

use common::{config, model_path, TestServer};
use nucleus_runtime::{LlamaCppModel, Model};
use serde_json::json;

#[test]
fn answers_follow_the_token_trie() {
    let m = LlamaCppModel::load(model_path()).expect("load");
    let tok = m.tokenizer();
    let leaves = [" Paris", " London Bridge is falling down", " Lisbon"];
    let desc = json!({"modelId": "smollm2", "descriptors": [{"path": "city", "leaves": leaves.iter().map(|l| {
        json!({"name": l.trim(), "tokens": tok.encode(l, false, false).unwrap()})
    }).collect::<Vec<_>>()}]});
    let leaves = serde_json::to_string(&leaves).unwrap();
    TestServer::start(config(2, 8))
        .python("token_trie.py", &[("TRIE_DESCRIPTOR", &desc.to_string()), ("TRIE_LEAVES", &leaves)]);
}
