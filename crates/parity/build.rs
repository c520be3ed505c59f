//! Compiles the one-function C++ shim that exposes llama.cpp's DRY test constructor
//! (`llama_sampler_init_dry_testing`, C++ linkage) to Rust. The symbol itself is resolved
//! from the libllama that `llama-cpp-sys-2` builds and links.

fn main() {
    println!("cargo:rerun-if-changed=shim/dry_shim.cpp");
    cc::Build::new().cpp(true).std("c++17").file("shim/dry_shim.cpp").compile("nucleus_parity_shim");
}
