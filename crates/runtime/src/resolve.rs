//! `-m NAME|PATH` to a local GGUF path: catalog names resolve to the models directory (the
//! default model is pulled on first use), anything else must be an existing file.

use std::path::{Path, PathBuf};

use crate::catalog::{self, CatalogModel};
use crate::error::{Result, RuntimeError};
use crate::pull::{self, Fetch, PullEvent};

/// A model as the user named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelRef {
    /// A catalog model.
    Catalog(&'static CatalogModel),
    /// A GGUF file.
    File(PathBuf),
}

impl ModelRef {
    /// A catalog name (case-insensitive), or a path: anything with a path separator, a `.gguf`
    /// ending, or naming an existing file. Other words are unknown model names.
    pub fn parse(s: &str) -> Result<Self> {
        if let Some(m) = catalog::find(s) {
            return Ok(ModelRef::Catalog(m));
        }
        let p = Path::new(s);
        let looks_like_path =
            s.contains(std::path::MAIN_SEPARATOR) || s.contains('/') || s.to_ascii_lowercase().ends_with(".gguf");
        if looks_like_path || p.exists() {
            return Ok(ModelRef::File(p.to_path_buf()));
        }
        Err(RuntimeError::UnknownModel { name: s.to_string(), known: catalog::known_names() })
    }

    /// The `modelId` a token-trie descriptor names this model by (`spec` is what the user
    /// typed): the catalog name, or the GGUF file's name without `.gguf` (what `nucleus
    /// generate --token-trie` expects).
    pub fn descriptor_id(&self, spec: &str) -> String {
        match self {
            ModelRef::Catalog(m) => m.name.to_string(),
            ModelRef::File(p) => p.file_stem().map_or_else(|| spec.to_string(), |s| s.to_string_lossy().into_owned()),
        }
    }
}

/// The local path of `model`. A catalog model that is missing (or the wrong size) is pulled
/// into `dir` when its entry allows it; `progress` hears about it. The flag says whether a pull
/// happened.
pub fn locate(
    model: &ModelRef,
    dir: &Path,
    fetcher: &dyn Fetch,
    progress: &mut dyn FnMut(PullEvent<'_>),
) -> Result<(PathBuf, bool)> {
    match model {
        ModelRef::File(p) => {
            if p.is_file() {
                Ok((p.clone(), false))
            } else {
                Err(RuntimeError::ModelNotFound { path: p.clone() })
            }
        }
        ModelRef::Catalog(m) => match pull::installed(m, dir) {
            Ok(p) => Ok((p, false)),
            Err(_) if m.auto_pull => pull::pull(m, dir, fetcher, progress).map(|p| (p, true)),
            Err(_) => Err(RuntimeError::NotPulled {
                name: m.name.to_string(),
                note: format!(" (its weights are under the {})", m.license),
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert!(matches!(ModelRef::parse("smollm2"), Ok(ModelRef::Catalog(m)) if m.name == "smollm2"));
        assert!(matches!(ModelRef::parse("Gemma3"), Ok(ModelRef::Catalog(m)) if m.name == "gemma3"));
        assert_eq!(ModelRef::parse("x/y.bin").unwrap(), ModelRef::File("x/y.bin".into()));
        assert_eq!(ModelRef::parse("model.GGUF").unwrap(), ModelRef::File("model.GGUF".into()));
        let e = ModelRef::parse("llama-70b").unwrap_err().to_string();
        assert!(e.contains("unknown model `llama-70b`") && e.contains("smollm2"), "{e}");
    }
}
