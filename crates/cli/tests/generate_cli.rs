//! `nucleus generate` and `nucleus pull` end to end with the real default model (one thread,
//! a few tokens each): output on stdout, timings on stderr, clear errors, automatic pull.

use std::process::Command;
use std::sync::OnceLock;

use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};
use serde_json::Value;

/// The default model in the default models directory, pulled quietly if missing.
fn ensure_model() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let m = catalog::find(catalog::DEFAULT_MODEL).unwrap();
        pull::ensure(m, &pull::models_dir(), &Pip { quiet: true, ..Pip::default() }, &mut |_| {})
            .expect("pull the default model");
    });
}

fn nucleus(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_nucleus")).args(args).envs(env.iter().copied()).output().expect("run nucleus");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const FAST: &[&str] = &["--temp", "0", "-t", "1", "-c", "512"];

#[test]
fn generate_streams_text_and_reports_timings() {
    ensure_model();
    let args = [&["generate", "-p", "The capital of France is", "-n", "8"], FAST].concat();
    let (code, out, err) = nucleus(&args, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(" Paris"), "{out:?}");
    for needle in
        ["stopped by:  token limit", "prompt:      5 tokens", "generated:   8 tokens", "tokens/s", "µs per token"]
    {
        assert!(err.contains(needle), "missing {needle:?} in stderr:\n{err}");
    }
}

#[test]
fn chat_and_stop_strings() {
    ensure_model();
    let args = [&["generate", "--chat", "Name three colors.", "-n", "64"], FAST].concat();
    let (code, out, err) = nucleus(&args, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("end of generation"), "{err}");
    assert!(!out.contains("<|im_end|>") && !out.trim().is_empty(), "{out:?}");

    let args = [&["generate", "-p", "The capital of France is", "-n", "16", "--stop", "."], FAST].concat();
    let (code, out, err) = nucleus(&args, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, " Paris");
    assert!(err.contains("stop string \".\""), "{err}");
}

#[test]
fn json_lines_per_token() {
    ensure_model();
    let args = [&["generate", "-p", "The capital of France is", "-n", "3", "--json", "--n-probs", "2"], FAST].concat();
    let (code, out, err) = nucleus(&args, &[]);
    assert_eq!(code, 0, "{err}");
    let mut lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).expect("a JSON object per line")).collect();
    let done = lines.pop().expect("a summary line");
    assert_eq!(done["done"]["generated_tokens"], 3, "{done}");
    assert_eq!(done["done"]["stop"], "max_tokens", "{done}");
    assert!(done["done"]["speculative"].is_null(), "{done}");
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["text"], " Paris");
    assert!(lines[0]["id"].is_i64() && lines[0]["logprob"].as_f64().unwrap() < 0.0);
    assert_eq!(lines[0]["top"].as_array().unwrap().len(), 2);
    assert_eq!(lines[0]["top"][0]["id"], lines[0]["id"]);
}

/// `--spec-type ngram` gives the plain tokens and logprobs, and `--json`'s summary line says
/// what it drafted.
#[test]
fn speculation_keeps_the_tokens_and_reports_its_drafts() {
    ensure_model();
    let prompt = "one two three four five, one two three four five, one two three four five, one two";
    let base = [&["generate", "-p", prompt, "-n", "24", "--json", "--ignore-eos"], FAST].concat();
    let run = |extra: &[&str]| {
        let (code, out, err) = nucleus(&[&base[..], extra].concat(), &[]);
        assert_eq!(code, 0, "{err}");
        let mut lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let done = lines.pop().unwrap();
        (lines, done["done"]["speculative"].clone(), err)
    };
    let (plain, none, _) = run(&[]);
    let (spec, sp, err) = run(&["--spec-type", "ngram", "--draft-max", "8"]);
    assert!(none.is_null());
    assert_eq!(plain, spec, "speculation changed the tokens");
    assert!(sp["drafted"].as_u64().unwrap() > 0 && sp["accepted"].as_u64().unwrap() > 0, "{sp}");
    assert_eq!(sp["passes_saved"], sp["accepted"]);
    assert!(err.contains("speculative:"), "{err}");
    let (code, _, err) = nucleus(&[&base[..], &["--spec-type", "ngram", "--draft-max", "0"]].concat(), &[]);
    assert_ne!(code, 0);
    assert!(err.contains("draft-max"), "{err}");
}

#[test]
fn user_errors_are_reported_not_panics() {
    let cases: &[(&[&str], &str)] = &[
        (&["generate", "-m", "tinyllama", "-p", "x"], "unknown model `tinyllama`"),
        (&["generate", "-m", "/nonexistent/model.gguf", "-p", "x"], "does not exist"),
        (&["generate", "--grammar", "/nonexistent/g.gbnf", "-p", "x"], "--grammar: cannot read"),
        (&["generate", "-p", "x", "--top-p", "2"], "top_p"),
        (&["generate", "-p", "x", "-t", "0"], "--threads"),
        (&["generate", "-f", "/nonexistent/prompt.txt"], "prompt file"),
        (&["pull", "tinyllama"], "unknown model"),
    ];
    for (args, needle) in cases {
        let (code, _, err) = nucleus(args, &[]);
        assert_ne!(code, 0, "{args:?} should fail");
        assert!(err.contains(needle), "{args:?}: expected {needle:?} in {err:?}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let (code, _, err) = nucleus(&["generate"], &[]);
    assert_ne!(code, 0);
    assert!(err.contains("--prompt") && err.contains("--chat"), "{err}");
}

#[test]
fn grammar_and_json_schema_constrain_the_output() {
    ensure_model();
    let dir = std::env::temp_dir().join(format!("nucleus-cli-grammar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let yn = file("yn.gbnf", "root ::= (\"yes\" | \"no\")\n");
    let args =
        [&["generate", "--chat", "Is the sky green?", "--grammar", &yn, "--seed", "3", "--temp", "1.5"], &FAST[2..]]
            .concat();
    let (code, out, err) = nucleus(&args, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out == "yes" || out == "no", "{out:?}");

    let schema = file(
        "s.json",
        r#"{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}},
        "required": ["n"], "additionalProperties": false}"#,
    );
    let args = [&["generate", "--chat", "Pick a number as JSON.", "--json-schema", &schema, "-n", "32"], FAST].concat();
    let (code, out, err) = nucleus(&args, &[]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{out:?}: {e}"));
    assert!(v["n"].as_i64().is_some_and(|n| (1..=9).contains(&n)) && v.as_object().unwrap().len() == 1, "{out}");

    let bad_gbnf = file("bad.gbnf", "root ::= \"a\" |\n  \"b\" @\n");
    let bad_schema = file(
        "bad.json",
        r#"{"type": "object", "properties": {"a": {"if": {"type": "string"}, "then": {"minLength": 2}}}}"#,
    );
    let not_json = file("nj.json", "{\"type\":\n  oops}");
    let cases: &[(&str, &str, &[&str])] = &[
        ("--grammar", &bad_gbnf, &["line 2, column 7"]),
        ("--json-schema", &bad_schema, &["if at", "/properties/a"]),
        ("--json-schema", &not_json, &["not valid JSON", "line 2 column 3"]),
    ];
    for (flag, path, needles) in cases {
        let (code, _, err) = nucleus(&["generate", "-p", "x", "-t", "1", "-c", "512", flag, path], &[]);
        assert_ne!(code, 0, "{flag} {path}");
        for n in *needles {
            assert!(err.contains(n) && !err.contains("panicked"), "{flag}: expected {n:?} in {err:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn corrupt_gguf_is_an_error() {
    let dir = std::env::temp_dir().join(format!("nucleus-cli-gguf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("broken.gguf");
    std::fs::write(&p, b"GGUF\x03\x00\x00\x00 and then nothing sensible").unwrap();
    let (code, _, err) = nucleus(&["generate", "-m", p.to_str().unwrap(), "-p", "x"], &[]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_ne!(code, 0);
    assert!(err.contains("could not load") && err.contains("broken.gguf"), "{err}");
}

/// On a machine without the model, `generate` pulls it first and says so (real download).
#[test]
fn generate_pulls_the_default_model_when_missing() {
    let dir = std::env::temp_dir().join(format!("nucleus-cli-models-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let env = [("NUCLEUS_MODELS", dir.to_str().unwrap())];
    let args = [&["generate", "-p", "Hi", "-n", "1"], FAST].concat();
    let (code, _, err) = nucleus(&args, &env);
    let (list_code, list, _) = nucleus(&["pull", "--list"], &env);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("is not in") && err.contains("pulling it first"), "{err}");
    assert!(err.contains("size and SHA-256 verified"), "{err}");
    assert_eq!(list_code, 0);
    assert!(list.lines().next().unwrap().contains("installed at"), "{list}");
}
