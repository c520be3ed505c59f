//! Node-API link set-up (napi-build).
fn main() {
    napi_build::setup();
}
