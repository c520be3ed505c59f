//! Shared by the C tests: compiling a C program from `tests/c/` against the static libnucleus
//! (with the `cc` crate's compiler detection, no other tools) and running it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `libnucleus.a` as Cargo built it for this test run: in `deps/`, beside the test binary (the
/// copy in the profile directory is refreshed only by builds of the library itself, so it can
/// be stale during `cargo test`).
pub fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().join("libnucleus.a");
    assert!(lib.exists(), "{} is missing (built with the library's crate types)", lib.display());
    lib
}

/// Compiles `tests/c/<name>.c` (plus `extra` sources and arguments) into an executable linked
/// with libnucleus, warnings as errors, once per test process (tests sharing a program wait for
/// the first build). Returns its path.
pub fn build_c(name: &str, extra: &[&str]) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, exe)) = built.iter().find(|(n, _)| n == name) {
        return exe.clone();
    }
    let exe = compile_source(name, &crate_dir().join("tests/c").join(format!("{name}.c")), extra, &[]);
    built.push((name.to_string(), exe.clone()));
    exe
}

/// Compiles one C source file into the executable `name` linked with libnucleus, warnings as
/// errors: `extra` goes before the library (include paths), `after` after it (libraries it
/// needs). Returns its path.
pub fn compile_source(name: &str, source: &Path, extra: &[&str], after: &[&str]) -> PathBuf {
    let target = env!("NUCLEUS_FFI_TARGET");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nucleus-ffi-c");
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join(name);
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .target(target)
        .host(target)
        .opt_level(1)
        .debug(true)
        .warnings(false)
        .get_compiler();
    let mut cmd = compiler.to_command();
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(source)
        .args(extra)
        .arg(static_lib())
        .args(after)
        // The test build has the `llama` feature: drop the llama.cpp-facing code the program
        // does not use (and with it its references to llama.cpp).
        .arg("-Wl,--gc-sections")
        // With the `llm` feature libnucleus carries llama.cpp (C++ with OpenMP).
        .args(["-lstdc++", "-lgomp", "-lpthread", "-ldl", "-lm", "-lrt", "-lutil"])
        .arg("-o")
        .arg(&exe);
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run the C compiler {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "compiling {name}.c failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `exe` with `args`; panics with its output unless it exits 0. Returns stdout.
pub fn run(exe: &Path, args: &[&str]) -> String {
    check(exe, Command::new(exe).args(args).output().unwrap())
}

fn check(exe: &Path, out: Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} failed ({}):\n{stdout}{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs `exe` under valgrind's memcheck when valgrind is installed (any invalid read, write or
/// free, or definitely lost memory, fails); plainly otherwise. Returns stdout.
///
/// Uninitialised-value tracking is off: optimised safe Rust (e.g. matching a nested `Option`
/// whose payload was never written) compiles to loads valgrind cannot tell from uses, and it
/// reports those as errors; safe code cannot read uninitialised memory, and the boundary code's
/// accesses are covered by the checks that stay on.
pub fn run_checked(exe: &Path, args: &[&str]) -> String {
    let has_valgrind = Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if !has_valgrind {
        eprintln!("valgrind not installed: running {} without it", exe.display());
        return run(exe, args);
    }
    let out = Command::new("valgrind")
        .args([
            "-q",
            "--error-exitcode=99",
            "--undef-value-errors=no",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(exe)
        .args(args)
        .output()
        .unwrap();
    check(exe, out)
}
