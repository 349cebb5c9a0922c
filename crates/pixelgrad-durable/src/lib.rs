//! # pixelgrad-durable
//!
//! Every file pixelgrad writes (models, checkpoints, metrics, plots, exports, downloaded data)
//! goes through [`write_with`] (or [`write()`] for bytes already in memory):
//!
//! 1. the content is written to a new temporary file in the destination's folder
//!    (`.NAME.XXXXXX.tmp`, created exclusively, so two writers never share one);
//! 2. the temporary file is flushed and `fsync`ed;
//! 3. it is renamed over the destination (atomic on POSIX file systems and NTFS: a reader sees
//!    the old file or the new one, never a mix);
//! 4. the folder is `fsync`ed where the platform allows (Unix), so the rename itself survives
//!    a power loss.
//!
//! If anything fails before the rename (the content callback returns an error or panics, the
//! disk fills up, the rename is refused), the temporary file is removed and the destination is
//! untouched. A crash (kill, power loss) at any moment leaves the destination whole, old or
//! new; at worst a `.NAME.*.tmp` file of the interrupted write remains beside it.
//!
//! A new file gets the permissions `std::fs::write` would give it (0666 less the umask on
//! Unix); an existing file keeps its permissions. A symbolic link at the destination is
//! followed: the file it points to is replaced, the link stays.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` durably (see the crate docs).
pub fn write(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    write_with(path, |w| w.write_all(bytes.as_ref()))
}

/// Writes what `fill` writes to `path` durably (see the crate docs). `fill` gets a buffered
/// writer into the temporary file; an error from it (or a panic) leaves `path` as it was.
pub fn write_with<F>(path: impl AsRef<Path>, fill: F) -> io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let path = destination(path.as_ref())?;
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no file", path.display())))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut builder = tempfile::Builder::new();
    let prefix = format!(".{}.", name.to_string_lossy());
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Like `File::create`: 0666, less the umask.
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    // Dropped on any early return (or unwinding): the temporary file is removed.
    let mut tmp = builder.tempfile_in(&dir)?;
    if let Ok(old) = fs::metadata(&path) {
        tmp.as_file().set_permissions(old.permissions())?;
    }
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        fill(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(&path).map_err(|e| e.error)?;
    sync_dir(&dir)
}

/// Removes the temporary files that interrupted writes of `path` left beside it
/// (`.NAME.*.tmp`, which only [`write_with`] creates), returning how many. For a program
/// that starts again where a killed one wrote; not while another process may be writing
/// `path`.
pub fn remove_stale_temporaries(path: impl AsRef<Path>) -> io::Result<usize> {
    let path = path.as_ref();
    let Some(name) = path.file_name() else { return Ok(0) };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for e in entries {
        let e = e?;
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&prefix) && n.ends_with(".tmp") && e.file_type()?.is_file() {
            fs::remove_file(e.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// `path`, or the file it points to when it is a symbolic link.
fn destination(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match fs::canonicalize(path) {
            Ok(target) => Ok(target),
            // a dangling link: write where it points
            Err(_) => {
                let to = fs::read_link(path)?;
                Ok(match path.parent() {
                    Some(p) if to.is_relative() => p.join(to),
                    _ => to,
                })
            }
        },
        _ => Ok(path.to_path_buf()),
    }
}

/// Makes the rename durable: fsync of the folder on Unix. File systems that cannot sync a
/// folder say so with EINVAL, which is not an error here; elsewhere there is nothing to do.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        match fs::File::open(dir).and_then(|d| d.sync_all()) {
            Err(e) if matches!(e.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported) => Ok(()),
            other => other,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pixelgrad-durable-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn listing(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn writes_and_replaces_whole_files() {
        let d = dir("replace");
        let f = d.join("model.safetensors");
        write(&f, b"first").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"first");
        write(&f, b"second, longer").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"second, longer");
        write(&f, b"3").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"3", "a shorter file leaves no tail of the old one");
        assert_eq!(listing(&d), ["model.safetensors"]);
        fs::remove_dir_all(&d).unwrap();
    }

    /// The failure this crate exists for: a write that fails midway (here the content callback
    /// errors after writing half) leaves the old file byte for byte and no temporary file.
    #[test]
    fn a_write_failing_midway_leaves_the_old_file_and_no_temporary() {
        let d = dir("midway");
        let f = d.join("checkpoint.safetensors");
        write(&f, b"the old, complete checkpoint").unwrap();
        let e = write_with(&f, |w| {
            w.write_all(&[7u8; 100_000])?;
            Err(io::Error::other("disk full (injected)"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("injected"), "{e}");
        assert_eq!(fs::read(&f).unwrap(), b"the old, complete checkpoint");
        assert_eq!(listing(&d), ["checkpoint.safetensors"]);
        // a panic in the callback too
        let p = std::panic::catch_unwind(|| {
            let _ = write_with(&f, |w| {
                w.write_all(b"partial")?;
                panic!("writer crashed (injected)")
            });
        });
        assert!(p.is_err());
        assert_eq!(fs::read(&f).unwrap(), b"the old, complete checkpoint");
        assert_eq!(listing(&d), ["checkpoint.safetensors"]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn temporaries_of_a_killed_write_are_found_and_removed() {
        let d = dir("stale");
        let f = d.join("checkpoint.safetensors");
        write(&f, b"whole").unwrap();
        // what a write killed before its rename leaves, plus files that are not its
        fs::write(d.join(".checkpoint.safetensors.Ab12Cd.tmp"), b"half").unwrap();
        fs::write(d.join(".model.safetensors.Zz99Yy.tmp"), b"other file's").unwrap();
        fs::write(d.join("checkpoint.safetensors.tmp"), b"not ours").unwrap();
        assert_eq!(remove_stale_temporaries(&f).unwrap(), 1);
        assert_eq!(listing(&d), [".model.safetensors.Zz99Yy.tmp", "checkpoint.safetensors", "checkpoint.safetensors.tmp"]);
        assert_eq!(fs::read(&f).unwrap(), b"whole");
        assert_eq!(remove_stale_temporaries(d.join("missing").join("x")).unwrap(), 0);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_refused_rename_leaves_no_temporary() {
        let d = dir("refused");
        // a folder where the file should go: the rename fails after the content was written
        fs::create_dir(d.join("out.bin")).unwrap();
        fs::write(d.join("out.bin").join("keep"), b"k").unwrap();
        assert!(write(d.join("out.bin"), b"data").is_err());
        assert_eq!(listing(&d), ["out.bin"]);
        assert_eq!(fs::read(d.join("out.bin").join("keep")).unwrap(), b"k");
        // a folder that does not exist: an error, nothing created
        assert!(write(d.join("missing").join("f"), b"x").is_err());
        assert_eq!(listing(&d), ["out.bin"]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn permissions_are_kept_and_links_followed() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("perm");
        let f = d.join("metrics.csv");
        write(&f, b"a").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        write(&f, b"b").unwrap();
        assert_eq!(fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o640);
        // a new file is readable by others unless the umask says otherwise, like File::create
        let g = d.join("new.csv");
        write(&g, b"x").unwrap();
        let reference = d.join("reference.csv");
        fs::write(&reference, b"x").unwrap();
        assert_eq!(fs::metadata(&g).unwrap().permissions().mode() & 0o777, fs::metadata(&reference).unwrap().permissions().mode() & 0o777);
        // a link is followed: the target changes, the link stays a link
        let link = d.join("link.csv");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        write(&link, b"through the link").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&f).unwrap(), b"through the link");
        fs::remove_dir_all(&d).unwrap();
    }
}
