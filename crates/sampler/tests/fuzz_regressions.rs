//! Replays the sampler fuzz target's inputs in the stable suite: every crash the fuzzer found
//! (`fuzz/regressions/sampler/`, each fixed) and the seed inputs (`fuzz/seeds/sampler/`) go
//! through the same check the fuzz target runs (`fuzz/checks/sampler.rs`): building a chain
//! from hostile parameters and sampling hostile logits answers without panicking.

#[path = "../../../fuzz/checks/sampler.rs"]
mod sampler;

use std::path::Path;

fn replay(dir: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz").join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("fuzz input folder").map(|e| e.unwrap().path()).collect();
    files.sort();
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let r = std::panic::catch_unwind(|| sampler::check(&data));
        assert!(r.is_ok(), "{} fails the fuzz check", f.display());
    }
    files.len()
}

#[test]
fn fuzz_crashes_stay_fixed() {
    assert!(replay("regressions/sampler") >= 1);
}

#[test]
fn fuzz_seeds_pass() {
    assert!(replay("seeds/sampler") >= 1);
}
