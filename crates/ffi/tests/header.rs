//! `include/nucleus.h` is what cbindgen generates from the sources today: a stale header fails
//! here. `NUCLEUS_BLESS=1` rewrites it instead.

use std::path::Path;

#[test]
fn header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = dir.join("include/nucleus.h");
    if std::env::var_os("NUCLEUS_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/nucleus.h is stale: regenerate it with NUCLEUS_BLESS=1 cargo test --release -p nucleus-ffi --test header"
    );
}
