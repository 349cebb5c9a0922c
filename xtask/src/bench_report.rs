//! `cargo xtask bench-report [--check] [--include RESULT_FILE]`: regenerates `docs/benchmarks.md`
//! from the committed results in `web/bench/results/`: the files git tracks there, and with
//! `--include` one it does not track yet. The generator is `web/bench/bench-report.mjs`, next to
//! the code that renders each benchmark's tables. `--check` only says whether the committed page
//! is up to date (exit 1 if not); the web/bench node tests check the same.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the generator; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let known = a == "--check" || (a == "--include" && it.next().is_some());
        if !known {
            eprintln!("xtask bench-report: unknown argument '{a}' (usage: cargo xtask bench-report [--check] [--include RESULT_FILE])");
            return 2;
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default();
    let script = root.join("web").join("bench").join("bench-report.mjs");
    match Command::new("node").arg(&script).args(args).current_dir(&root).status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("xtask bench-report: could not run node {}: {e} (install Node.js)", script.display());
            1
        }
    }
}

/// Writes a bench's result file (pretty JSON), says how to keep it, and regenerates the page
/// with it included.
pub fn write_result(task: &str, out: &Path, result: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(result).map_err(|e| e.to_string())? + "\n";
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    println!("xtask {task}: wrote {}", out.display());
    println!("xtask {task}: to keep it, `git add -f` it and commit it with docs/benchmarks.md (results are git-ignored until kept)");
    match main(&["--include".to_string(), out.display().to_string()]) {
        0 => Ok(()),
        code => Err(format!("bench-report exited with {code}")),
    }
}
