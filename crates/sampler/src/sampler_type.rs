//! The sampler names and one-letter codes of llama.cpp's `--samplers` / `--sampling-seq`.

use crate::error::ParamError;

/// A sampler that can appear in the configurable part of the common chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SamplerType {
    /// `dry` / `d`
    Dry,
    /// `top_k` / `k`
    TopK,
    /// `typ_p` / `y`
    TypicalP,
    /// `top_p` / `p`
    TopP,
    /// `top_n_sigma` / `s`
    TopNSigma,
    /// `min_p` / `m`
    MinP,
    /// `temperature` / `t`
    Temperature,
    /// `xtc` / `x`
    Xtc,
    /// `infill` / `i`
    Infill,
    /// `penalties` / `e`
    Penalties,
    /// `adaptive_p` / `a`
    AdaptiveP,
}

/// (type, canonical name, char, aliases)
const TABLE: &[(SamplerType, &str, char, &[&str])] = &[
    (SamplerType::Dry, "dry", 'd', &[]),
    (SamplerType::TopK, "top_k", 'k', &["top-k", "topk"]),
    (SamplerType::TypicalP, "typ_p", 'y', &["typ-p", "typp", "typ"]),
    (SamplerType::TopP, "top_p", 'p', &["top-p", "topp", "nucleus"]),
    (SamplerType::TopNSigma, "top_n_sigma", 's', &["top-n-sigma", "topnsigma"]),
    (SamplerType::MinP, "min_p", 'm', &["min-p", "minp"]),
    (SamplerType::Temperature, "temperature", 't', &["temp"]),
    (SamplerType::Xtc, "xtc", 'x', &[]),
    (SamplerType::Infill, "infill", 'i', &[]),
    (SamplerType::Penalties, "penalties", 'e', &[]),
    (SamplerType::AdaptiveP, "adaptive_p", 'a', &["adaptive-p", "adaptivep"]),
];

/// llama.cpp's default order: `penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature`
/// (the first nine of [`SamplerType::ALL`]).
pub const DEFAULT_SAMPLERS: &[SamplerType] = SamplerType::ALL.split_at(9).0;

/// Every sampler type: llama.cpp's default order, then infill and adaptive-p (the order error
/// messages list them in).
impl SamplerType {
    /// Every sampler type, in that order.
    pub const ALL: &'static [SamplerType] = &[
        SamplerType::Penalties,
        SamplerType::Dry,
        SamplerType::TopNSigma,
        SamplerType::TopK,
        SamplerType::TypicalP,
        SamplerType::TopP,
        SamplerType::MinP,
        SamplerType::Xtc,
        SamplerType::Temperature,
        SamplerType::Infill,
        SamplerType::AdaptiveP,
    ];
}

impl SamplerType {
    /// Canonical name (`top_k`).
    pub fn name(self) -> &'static str {
        TABLE.iter().find(|e| e.0 == self).map(|e| e.1).unwrap_or("?")
    }

    /// One-letter code (`k`).
    pub fn code(self) -> char {
        TABLE.iter().find(|e| e.0 == self).map(|e| e.2).unwrap_or('?')
    }

    /// Looks up a name or alias, case-insensitively.
    pub fn from_name(name: &str) -> Option<SamplerType> {
        let n = name.trim().to_ascii_lowercase();
        TABLE.iter().find(|e| e.1 == n || e.3.contains(&n.as_str())).map(|e| e.0)
    }

    /// Looks up a one-letter code.
    pub fn from_code(c: char) -> Option<SamplerType> {
        TABLE.iter().find(|e| e.2 == c).map(|e| e.0)
    }

    /// Parses a `;`-separated list of names (`--samplers`). Empty items are skipped; an
    /// unknown name is an error (llama.cpp only warns; silently dropping it hides typos).
    pub fn parse_names(list: &str) -> Result<Vec<SamplerType>, ParamError> {
        list.split(';')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                SamplerType::from_name(s).ok_or_else(|| {
                    ParamError::new("samplers", s, "known names: dry, top_k, typ_p, top_p, top_n_sigma, min_p, temperature, xtc, infill, penalties, adaptive_p (and aliases)")
                })
            })
            .collect()
    }

    /// Parses a string of one-letter codes (`--sampling-seq`, e.g. `edskypmxt`).
    pub fn parse_codes(seq: &str) -> Result<Vec<SamplerType>, ParamError> {
        seq.chars()
            .map(|c| {
                SamplerType::from_code(c)
                    .ok_or_else(|| ParamError::new("sampling_seq", c, "known codes: d k y p s m t x i e a"))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_codes_aliases() {
        let seq: String = DEFAULT_SAMPLERS.iter().map(|s| s.code()).collect();
        assert_eq!(seq, "edskypmxt");
        assert_eq!(SamplerType::from_name("Nucleus"), Some(SamplerType::TopP));
        assert_eq!(SamplerType::from_name("temp"), Some(SamplerType::Temperature));
        assert_eq!(SamplerType::parse_names("top_k;min-p").unwrap(), vec![SamplerType::TopK, SamplerType::MinP]);
        assert!(SamplerType::parse_names("top_k;bogus").is_err());
        assert_eq!(SamplerType::parse_codes("kt").unwrap(), vec![SamplerType::TopK, SamplerType::Temperature]);
        assert!(SamplerType::parse_codes("kz").is_err());
        assert_eq!(SamplerType::ALL.len(), TABLE.len());
        assert!(TABLE.iter().all(|e| SamplerType::ALL.contains(&e.0)));
        assert_eq!(SamplerType::ALL[..DEFAULT_SAMPLERS.len()], *DEFAULT_SAMPLERS);
    }
}
