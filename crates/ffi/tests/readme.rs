//! The C page's examples (docs/c-abi.md) are complete programs: the first compiles against the
//! header, links statically with libnucleus, runs, and ends with a leaf of its token trie; the
//! second (the streaming handle) is built with the flags of `nucleus.pc.in` (through pkg-config
//! when installed) against `libnucleus.so` and generates on SmolLM2, ending with one of its
//! trie's leaves.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use nucleus_runtime::catalog;
use nucleus_runtime::pull::{self, Pip};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `n`-th (1-based) ```c block of docs/c-abi.md, written to a file.
fn example(n: usize, name: &str) -> PathBuf {
    let page = std::fs::read_to_string(crate_dir().join("../../docs/c-abi.md")).unwrap();
    let code = page.split("```c\n").nth(n).and_then(|s| s.split("```").next()).expect("a ```c block");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nucleus-ffi-c");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, code).unwrap();
    src
}

#[test]
fn readme_c_example_compiles_and_runs() {
    let src = example(1, "readme_example");
    let exe = common::compile_source("readme_example", &src, &[], &[]);
    let out = common::run(&exe, &[]);
    assert_eq!(out.lines().filter(|l| l.starts_with("token ")).count(), 4, "{out}");
    let answer = out.lines().last().unwrap();
    assert!(answer == "answer YES" || answer == "answer NO", "{out}");
}

/// `Cflags` and `Libs` of `nucleus.pc.in` filled in for this build: from pkg-config when it is
/// installed, else by expanding the file's variables here.
fn pkg_config_flags(libdir: &Path) -> Vec<String> {
    let include = crate_dir().join("include");
    let text = std::fs::read_to_string(crate_dir().join("nucleus.pc.in"))
        .unwrap()
        .replace("@LIBDIR@", libdir.to_str().unwrap())
        .replace("@INCLUDEDIR@", include.to_str().unwrap());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nucleus-ffi-pc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("nucleus.pc"), &text).unwrap();
    let tool = Command::new("pkg-config").env("PKG_CONFIG_PATH", &dir).args(["--cflags", "--libs", "nucleus"]).output();
    if let Some(out) = tool.ok().filter(|o| o.status.success()) {
        return String::from_utf8(out.stdout).unwrap().split_whitespace().map(String::from).collect();
    }
    eprintln!("pkg-config not installed: reading nucleus.pc here");
    let vars = [("${libdir}", libdir.to_str().unwrap()), ("${includedir}", include.to_str().unwrap())];
    text.lines()
        .filter_map(|l| l.strip_prefix("Cflags:").or_else(|| l.strip_prefix("Libs:")))
        .flat_map(|l| l.split_whitespace())
        .map(|w| vars.iter().fold(w.to_string(), |w, (k, v)| w.replace(k, v)))
        .collect()
}

#[test]
fn readme_streaming_example_builds_with_pkg_config_and_runs() {
    let model = catalog::find("smollm2").expect("catalog name");
    let pip = Pip { quiet: true, ..Pip::default() };
    let path = pull::ensure(model, &pull::models_dir(), &pip, &mut |_| {}).expect("pull smollm2").0;
    let libdir = common::static_lib().parent().unwrap().to_path_buf();
    assert!(libdir.join("libnucleus.so").exists(), "libnucleus.so beside libnucleus.a");
    let src = example(2, "readme_llm_example");
    let flags = pkg_config_flags(&libdir);
    assert!(flags.iter().any(|f| f == "-lnucleus"), "{flags:?}");

    let target = env!("NUCLEUS_FFI_TARGET");
    let compiler = cc::Build::new().cargo_metadata(false).target(target).host(target).opt_level(1).get_compiler();
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nucleus-ffi-c/readme_llm_example");
    let out = compiler
        .to_command()
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"])
        .arg(&src)
        .args(&flags)
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "compiling docs/c-abi.md's streaming example failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = common::run(&exe, &[path.to_str().unwrap()]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() >= 2 && !lines[0].trim().is_empty(), "{stdout}");
    let answer = *lines.last().unwrap();
    assert!(answer == "Yes" || answer == "No", "the constrained answer is a leaf: {stdout}");
}
