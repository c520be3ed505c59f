//! Shared helpers for the command-line contract tests: run the built binary, write inputs.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `nucleus` with `args`: exit code (-1 if killed), stdout, stderr.
pub fn nucleus(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nucleus")).args(args).output().expect("run nucleus");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A temp file with a unique name (tests run in parallel, several runs may share the machine).
pub fn write(name: &str, bytes: &[u8]) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("nucleus-cli-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{}-{name}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&p, bytes).unwrap();
    p
}
