//! The bindings write the sampling fields' names where a static text needs them (Node's
//! TypeScript interface is generated from a Rust struct; the C ABI documents its JSON keys):
//! each must list exactly the fields of `nucleus_sampler::fields`, which is what their
//! parameters are read by (`SamplingParams::from_map`).

use std::collections::BTreeSet;
use std::path::Path;

use nucleus_sampler::fields::FIELDS;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn table() -> BTreeSet<&'static str> {
    FIELDS.iter().map(|f| f.name).collect()
}

/// Node's `SamplerParams` (the `params` of `new Sampler`, camelCase in TypeScript): its fields
/// are the table's, but for `ignore_eos` (a standalone sampler has no vocabulary to ban) and
/// Node's own `track_perplexity`.
#[test]
fn node_sampler_params_are_the_table() {
    let src = read("node/src/sampler.rs");
    let start = src.find("pub struct SamplerParams {").expect("SamplerParams in node/src/sampler.rs");
    let body = &src[start..start + src[start..].find("\n}").expect("the struct's end")];
    let names: BTreeSet<&str> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub ")?.split_once(':').map(|(n, _)| n.trim()))
        .filter(|n| *n != "track_perplexity")
        .collect();
    let mut want = table();
    want.remove("ignore_eos");
    assert_eq!(names, want);
}

/// The C ABI's `nucleus_sampler_new` documents every field of the table as a `params_json` key.
#[test]
fn c_abi_documents_every_field() {
    let src = read("crates/ffi/src/sampler.rs");
    let start = src.find("`params_json` is a JSON object").expect("the params_json documentation");
    let doc = &src[start..start + src[start..].find("Absent fields").expect("its end")];
    for name in table() {
        assert!(doc.contains(&format!("`{name}`")), "`{name}` is not in nucleus_sampler_new's documentation");
    }
}
