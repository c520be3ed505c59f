//! Passes the target triple to the tests, which compile C programs against libnucleus with the
//! `cc` crate's compiler detection.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=NUCLEUS_FFI_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
