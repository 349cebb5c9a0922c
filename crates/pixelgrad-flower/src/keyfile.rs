//! A node key kept in a file across runs (`pixelgrad federated --node-key FILE`), so that a
//! SuperLink with node authentication on can know the node: the operator registers the public
//! half once with `flwr supernode register FILE.pub`.
//!
//! `FILE` holds the secret key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, what `openssl
//! genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` writes); `FILE.pub` the public key as
//! one OpenSSH line. A missing `FILE` is created with mode 0600 by writing a temporary file in
//! the same folder and linking it into place, so a crash never leaves half a key and two nodes
//! started at once end up with the same key, not one overwriting the other's. An existing
//! `FILE` that other users can read is refused, as `ssh` refuses such keys.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use p256::ecdsa::SigningKey;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};

use crate::auth::NodeKey;
use crate::{FlowerError, Result};

fn io_err<'a>(path: &'a Path, what: &str) -> impl FnOnce(std::io::Error) -> FlowerError + 'a {
    let what = what.to_string();
    move |e| FlowerError::Invalid(format!("node key {}: {what}: {e}", path.display()))
}

/// The `.pub` file next to `path`.
pub fn public_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

/// What [`load_or_create`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyFile {
    Loaded,
    Created,
}

/// The key in `path`, made (with `path.pub`) if there is none.
pub fn load_or_create(path: &Path) -> Result<(NodeKey, KeyFile)> {
    let (key, how) = match fs::read(path) {
        Ok(bytes) => (load(path, &bytes)?, KeyFile::Loaded),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match create(path)? {
            Some(k) => (k, KeyFile::Created),
            // another process created it first: use theirs
            None => (
                load(path, &fs::read(path).map_err(io_err(path, "reading"))?)?,
                KeyFile::Loaded,
            ),
        },
        Err(e) => return Err(io_err(path, "reading")(e)),
    };
    let line = format!("{}\n", key.openssh_public());
    let pub_path = public_path(path);
    if fs::read(&pub_path).ok().as_deref() != Some(line.as_bytes()) {
        write_new(&pub_path, line.as_bytes(), 0o644, true)?;
    }
    Ok((key, how))
}

fn load(path: &Path, bytes: &[u8]) -> Result<NodeKey> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(path)
            .map_err(io_err(path, "reading its permissions"))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(FlowerError::Invalid(format!(
                "node key {}: other users can read it (mode {:o}); run `chmod 600 {}`",
                path.display(),
                mode & 0o777,
                path.display()
            )));
        }
    }
    let pem = std::str::from_utf8(bytes).map_err(|_| {
        FlowerError::Invalid(format!("node key {}: not a PEM file", path.display()))
    })?;
    let key = SigningKey::from_pkcs8_pem(pem).map_err(|e| {
        FlowerError::Invalid(format!(
            "node key {}: not a PKCS#8 PEM P-256 private key ({e}); convert one with `openssl pkcs8 -topk8 -nocrypt`",
            path.display()
        ))
    })?;
    Ok(NodeKey::from_signing_key(key)?.persistent())
}

/// A fresh key written to `path`; `None` if `path` appeared meanwhile.
fn create(path: &Path) -> Result<Option<NodeKey>> {
    let key = NodeKey::generate()?.persistent();
    let secret = key
        .signing_key()
        .ok_or_else(|| FlowerError::Invalid("a generated key has its secret".into()))?;
    let pem = secret
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| FlowerError::Invalid(format!("cannot encode the node key: {e}")))?;
    if write_new(path, pem.as_bytes(), 0o600, false)? {
        Ok(Some(key))
    } else {
        Ok(None)
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder (mode `mode`, synced).
/// With `replace` the file takes the place of any old one (rename); without, an existing
/// `path` is left alone and `false` returned (hard link, which fails if `path` exists).
fn write_new(path: &Path, bytes: &[u8], mode: u32, replace: bool) -> Result<bool> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| {
        FlowerError::Invalid(format!("node key {}: not a file name", path.display()))
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let _ = fs::remove_file(&tmp);
    let written = (|| {
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(path, "writing")(e));
    }
    let placed = if replace {
        fs::rename(&tmp, path).map(|_| true)
    } else {
        match fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    };
    let _ = fs::remove_file(&tmp);
    let placed = placed.map_err(io_err(path, "writing"))?;
    // the new name is durable once the folder is
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_then_loaded_with_mode_0600() {
        let dir = std::env::temp_dir().join(format!("pixelgrad-keyfile-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("node.key");
        let (a, how) = load_or_create(&path).unwrap();
        assert_eq!(how, KeyFile::Created);
        let (b, how) = load_or_create(&path).unwrap();
        assert_eq!(how, KeyFile::Loaded);
        assert_eq!(a.public_pem(), b.public_pem());
        let pub_line = fs::read_to_string(public_path(&path)).unwrap();
        assert_eq!(pub_line.trim_end(), a.openssh_public());
        assert!(fs::read_to_string(&path)
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----\n"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
            let e = load_or_create(&path).unwrap_err().to_string();
            assert!(e.contains("chmod 600"), "{e}");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        }
        fs::write(&path, "not a key").unwrap();
        let e = load_or_create(&path).unwrap_err().to_string();
        assert!(e.contains("PKCS#8"), "{e}");
        // no temporary file is left behind
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        let _ = fs::remove_dir_all(&dir);
    }
}
