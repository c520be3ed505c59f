//! Compiles the C++ shims that expose llama.cpp's C++-only entry points to Rust:
//!
//! - `shim/dry_shim.cpp`: the DRY test constructor (`llama_sampler_init_dry_testing`);
//! - `shim/common_shim.cpp`: the `common` library's sampler (`common_sampler_init`,
//!   `common_sampler_sample`, `common_sampler_accept`), filled from plain C values.
//!
//! The symbols themselves are resolved from the libllama and libllama-common that
//! `llama-cpp-sys-2` builds and links. The common shim includes llama.cpp's own headers
//! (`common.h`, `sampling.h`) from the same source tree that `llama-cpp-sys-2` compiled, so the
//! `common_params_sampling` layout is the one linked.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=shim/dry_shim.cpp");
    println!("cargo:rerun-if-changed=shim/common_shim.cpp");
    let src = llama_cpp_source();
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("shim/dry_shim.cpp")
        .file("shim/common_shim.cpp")
        .include(src.join("common"))
        .include(src.join("include"))
        .include(src.join("ggml/include"))
        .compile("nucleus_parity_shim");
}

/// The llama.cpp source tree `llama-cpp-sys-2` built: read from its CMake cache (found through
/// `DEP_LLAMA_GGML_CMAKE_DIR`, which it exports to direct dependents), else the crate in
/// Cargo's registry. `NUCLEUS_LLAMA_CPP_SRC` overrides both.
fn llama_cpp_source() -> PathBuf {
    println!("cargo:rerun-if-env-changed=NUCLEUS_LLAMA_CPP_SRC");
    if let Some(p) = std::env::var_os("NUCLEUS_LLAMA_CPP_SRC") {
        return PathBuf::from(p);
    }
    if let Some(p) = from_cmake_cache() {
        return p;
    }
    if let Some(p) = from_registry() {
        return p;
    }
    panic!(
        "nucleus-parity: cannot find the llama.cpp sources of llama-cpp-sys-2 (for common/sampling.h); \
         set NUCLEUS_LLAMA_CPP_SRC to its llama.cpp directory"
    );
}

fn has_common_headers(p: &Path) -> bool {
    p.join("common/sampling.h").is_file() && p.join("include/llama.h").is_file()
}

fn from_cmake_cache() -> Option<PathBuf> {
    // DEP_LLAMA_GGML_CMAKE_DIR = <sys OUT_DIR>/lib{,64}/cmake; the CMake build dir is <OUT_DIR>/build.
    let cmake_dir = PathBuf::from(std::env::var_os("DEP_LLAMA_GGML_CMAKE_DIR")?);
    let out_dir = cmake_dir.parent()?.parent()?;
    let cache = std::fs::read_to_string(out_dir.join("build/CMakeCache.txt")).ok()?;
    let line = cache.lines().find(|l| l.starts_with("CMAKE_HOME_DIRECTORY:"))?;
    let p = PathBuf::from(line.split_once('=')?.1.trim());
    has_common_headers(&p).then_some(p)
}

fn from_registry() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let version = sys_version()?;
    for index in std::fs::read_dir(home.join("registry/src")).ok()?.flatten() {
        let p = index.path().join(format!("llama-cpp-sys-2-{version}/llama.cpp"));
        if has_common_headers(&p) {
            return Some(p);
        }
    }
    None
}

/// The pinned `llama-cpp-sys-2` version, from the workspace manifest (`"=0.1.161"`).
fn sys_version() -> Option<String> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let root = PathBuf::from(manifest).join("../../Cargo.toml");
    let text = std::fs::read_to_string(root).ok()?;
    let line = text.lines().find(|l| l.trim_start().starts_with("llama-cpp-sys-2"))?;
    let v = line.split('"').nth(1)?;
    Some(v.trim_start_matches('=').to_string())
}
