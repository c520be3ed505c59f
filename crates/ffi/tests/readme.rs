//! The README's "Use from C" example is a complete program: it compiles against the header,
//! links with libnucleus, runs, and ends with a leaf of its token trie.

mod common;

use std::path::Path;

#[test]
fn readme_c_example_compiles_and_runs() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let section = readme.split("## Use from C").nth(1).expect("README has a \"Use from C\" section");
    let code = section.split("```c\n").nth(1).and_then(|s| s.split("```").next()).expect("a ```c block");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nucleus-ffi-c");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("readme_example.c");
    std::fs::write(&src, code).unwrap();
    let exe = common::compile_source("readme_example", &src, &[], &[]);
    let out = common::run(&exe, &[]);
    assert_eq!(out.lines().filter(|l| l.starts_with("token ")).count(), 4, "{out}");
    let answer = out.lines().last().unwrap();
    assert!(answer == "answer YES" || answer == "answer NO", "{out}");
}
