//! The repository stands on its own: no source file, script or manifest refers to a data folder
//! outside it (the project's reference material sits in a `shared` folder beside the checkout on
//! developers' machines, and a clone must never need it). Test data lives in `testdata/`.

use std::path::{Path, PathBuf};

/// The repository root (two levels above this crate).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

/// Files worth scanning: everything under the root except build output, VCS data and the
/// vendored test data itself (which quotes upstream paths in its provenance notes).
fn scanned_files(root: &Path) -> Vec<PathBuf> {
    const SKIP_DIRS: &[&str] = &["target", ".git", "node_modules", "testdata"];
    const EXTS: &[&str] = &["rs", "toml", "py", "js", "mjs", "ts", "sh", "c", "h", "json", "yml", "yaml"];
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable directory").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !SKIP_DIRS.contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if name == "run" || path.extension().is_some_and(|e| EXTS.iter().any(|x| e == *x)) {
                out.push(path);
            }
        }
    }
    out
}

/// The patterns that point outside the repository at the reference folder. Built at run time so
/// this file does not match itself.
fn forbidden() -> Vec<String> {
    let name = ["sha", "red"].concat();
    vec![format!("../{name}/"), format!("{name}/vectors"), format!("{name}/data"), format!("{name}/spec")]
}

#[test]
fn no_file_reads_a_folder_outside_the_repository() {
    let root = repo_root();
    let patterns = forbidden();
    let mut hits = Vec::new();
    for file in scanned_files(&root) {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for (i, line) in text.lines().enumerate() {
            if let Some(p) = patterns.iter().find(|p| line.contains(p.as_str())) {
                hits.push(format!("{}:{}: contains {p:?}", file.strip_prefix(&root).unwrap().display(), i + 1));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "files refer to data outside the repository (move it into testdata/):\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_scan_sees_the_sources_and_the_check_catches_a_reference() {
    // The scan must cover the crates' sources and the CI script, or the test above proves nothing.
    let root = repo_root();
    let files = scanned_files(&root);
    assert!(files.iter().any(|f| f.ends_with("crates/sampler/tests/common/vectors.rs")));
    assert!(files.iter().any(|f| f.ends_with(".ci/run")));
    assert!(files.len() > 100, "only {} files scanned", files.len());
    let bad = format!("let p = \"{}llama-grammar.json\";", forbidden()[0]);
    assert!(forbidden().iter().any(|p| bad.contains(p.as_str())));
}

#[test]
fn the_vendored_data_is_present() {
    let root = repo_root().join("testdata");
    for f in ["vectors/llama-test-sampling.json", "vectors/llama-grammar.json", "jsonschemabench-dev/README.md"] {
        assert!(root.join(f).is_file(), "testdata/{f} is missing");
    }
    let schemas = std::fs::read_dir(root.join("jsonschemabench-dev"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(schemas, 100, "the 100 JSONSchemaBench dev schemas");
}
