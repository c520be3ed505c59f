//! `nucleus generate --token-trie`: the output is one of the descriptor's leaves, in greedy and
//! sampled mode; a bad descriptor or path is an error, not a panic.

use std::process::Command;

use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{LlamaCppModel, Model};
use serde_json::json;

fn model() -> LlamaCppModel {
    let m = catalog::find(catalog::DEFAULT_MODEL).unwrap();
    let (path, _) = pull::ensure(m, &pull::models_dir(), &Pip { quiet: true, ..Pip::default() }, &mut |_| {})
        .expect("pull the default model");
    LlamaCppModel::load(&path).expect("load")
}

fn nucleus(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nucleus")).args(args).output().expect("run nucleus");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn generate_follows_the_token_trie() {
    let m = model();
    let tok = m.tokenizer();
    let leaves = [" Paris", " London Bridge is falling down", " Lisbon"];
    let desc = json!({"modelId": catalog::DEFAULT_MODEL, "descriptors": [{"path": "city", "leaves": leaves.iter().map(|l| {
        json!({"name": l.trim(), "tokens": tok.encode(l, false, false).unwrap()})
    }).collect::<Vec<_>>()}]});
    let dir = std::env::temp_dir().join(format!("nucleus-cli-trie-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("trie.json");
    std::fs::write(&file, desc.to_string()).unwrap();
    let f = file.to_str().unwrap();
    let base = ["generate", "-p", "My favourite city is", "-t", "1", "-c", "256", "--token-trie", f];
    for extra in [
        &["--token-trie-path", "city"][..],
        &["--token-trie-path", "city", "--token-trie-mode", "sampled", "--seed", "4", "--temp", "1.5"],
    ] {
        let (code, out, err) = nucleus(&[&base[..], extra].concat());
        assert_eq!(code, 0, "{err}");
        assert!(leaves.contains(&out.as_str()), "{out:?} is not a leaf");
    }
    let (code, _, err) = nucleus(&[&base[..], &["--token-trie-path", "country"]].concat());
    assert_ne!(code, 0);
    assert!(err.contains("country"), "{err}");
    std::fs::write(&file, json!({"modelId": "other", "descriptors": []}).to_string()).unwrap();
    let (code, _, err) = nucleus(&[&base[..], &["--token-trie-path", "city"]].concat());
    assert_ne!(code, 0);
    assert!(err.contains("--token-trie"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
