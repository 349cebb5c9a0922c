//! `pixelgrad train --out DIR`: when an existing folder may be written into.
//!
//! The default folder (`runs/last`) is the scratch space of the last run: it is overwritten,
//! and the output says so. Any other folder that exists with files in it holds something the
//! user chose to keep: it is written into only with `--force` (or `--resume`, which continues
//! the run saved there). A fresh run removes the previous run's `checkpoint.safetensors`
//! first, so a crash before its own first checkpoint cannot leave the old run to be resumed.
//! Every run (fresh or resumed) first removes the temporary files a killed write left.

use std::path::Path;

use crate::CliResult;

/// `--out`'s default.
pub const DEFAULT_OUT: &str = "runs/last";

/// The checkpoint file a run keeps in its folder.
pub const CHECKPOINT_FILE: &str = "checkpoint.safetensors";

/// The files a run writes into its folder.
pub const RUN_FILES: [&str; 4] = [CHECKPOINT_FILE, "model.safetensors", "metrics.csv", "loss.png"];

/// Removes what writes of a run's files killed mid-way left (their `.NAME.*.tmp` files; the
/// files themselves are always whole). Returns how many.
pub fn remove_stale_temporaries(out: &Path) -> CliResult<usize> {
    let mut n = 0;
    for f in RUN_FILES {
        n += pixelgrad_durable::remove_stale_temporaries(out.join(f)).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(n)
}

/// What was in the folder before this run.
#[derive(Debug, PartialEq)]
pub enum Prior {
    /// Nothing (absent or empty).
    Empty,
    /// Files of an earlier run, overwritten: the default folder, or `--force`.
    Overwritten,
}

/// Checks that a fresh run may write into `out`, and clears the previous run's checkpoint.
pub fn prepare_fresh(out: &Path, force: bool) -> CliResult<Prior> {
    let entries = match std::fs::read_dir(out) {
        Ok(e) => e.count(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Prior::Empty),
        Err(e) if out.exists() && !out.is_dir() => return Err(format!("{}: --out must be a folder ({e})", out.display())),
        Err(e) => return Err(format!("{}: {e}", out.display())),
    };
    if entries == 0 {
        return Ok(Prior::Empty);
    }
    if !force && out != Path::new(DEFAULT_OUT) {
        return Err(format!(
            "{} already exists and is not empty: pass --force to overwrite its files, --resume to continue the run saved there, or another --out",
            out.display()
        ));
    }
    let stale = out.join(CHECKPOINT_FILE);
    match std::fs::remove_file(&stale) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("{}: {e}", stale.display())),
        _ => Ok(Prior::Overwritten),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_empty_or_forced_folders_are_written() {
        let d = std::env::temp_dir().join(format!("pixelgrad-outdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(prepare_fresh(&d, false).unwrap(), Prior::Empty);
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(prepare_fresh(&d, false).unwrap(), Prior::Empty);
        std::fs::write(d.join("model.safetensors"), b"m").unwrap();
        std::fs::write(d.join(CHECKPOINT_FILE), b"c").unwrap();
        let e = prepare_fresh(&d, false).unwrap_err();
        assert!(e.contains("--force") && e.contains("not empty"), "{e}");
        assert!(d.join(CHECKPOINT_FILE).exists(), "nothing removed without --force");
        assert_eq!(prepare_fresh(&d, true).unwrap(), Prior::Overwritten);
        assert!(!d.join(CHECKPOINT_FILE).exists() && d.join("model.safetensors").exists());
        std::fs::remove_dir_all(&d).unwrap();
        let f = std::env::temp_dir().join(format!("pixelgrad-outdir-file-{}", std::process::id()));
        std::fs::write(&f, b"x").unwrap();
        assert!(prepare_fresh(&f, true).unwrap_err().contains("must be a folder"));
        std::fs::remove_file(&f).unwrap();
    }
}
