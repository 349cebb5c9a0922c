//! Model quality is tracked like speed: the newest `web/bench/results/quality-*.json` (written by
//! `cargo xtask bench-quality`, shown in docs/benchmarks.md) documents the test accuracy each
//! seeded workload reaches on each backend. This test replays the recorded command lines of the
//! digits rows and requires the same accuracy within two test images: every CPU row, and on
//! each GPU backend its quickest row (the short-curve tests in `backends.rs` tie the rest of each
//! GPU backend to the CPU). A change that moves a result (as one moved the MNIST MLP from 0.9733
//! to 0.9662 unnoticed) fails here until `bench-quality` is re-run and the new numbers are
//! committed and explained.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Two of the digits set's 360 held-out images.
const TOLERANCE: f64 = 2.0 / 360.0;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// The newest quality result (file names carry the UTC date, so they sort by time).
fn newest_result() -> (PathBuf, serde_json::Value) {
    let dir = repo_root().join("web").join("bench").join("results");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("quality-") && n.ends_with(".json")))
        .collect();
    files.sort();
    let newest = files.pop().expect("no quality-*.json in web/bench/results (run cargo xtask bench-quality)");
    let json = serde_json::from_slice(&std::fs::read(&newest).unwrap()).unwrap();
    (newest, json)
}

struct Row {
    workload: String,
    backend: String,
    args: Vec<String>,
    accuracy: f64,
    seconds: f64,
}

/// The digits rows that trained (MNIST rows need files outside the repository).
fn digits_rows(json: &serde_json::Value, file: &Path) -> Vec<Row> {
    let rows = json["rows"].as_array().unwrap_or_else(|| panic!("{}: no rows", file.display()));
    rows.iter()
        .filter(|r| r["error"].is_null())
        .map(|r| {
            let args: Vec<String> = r["args"]
                .as_array()
                .unwrap_or_else(|| panic!("{}: row {r} has no recorded args (re-run cargo xtask bench-quality)", file.display()))
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            Row {
                workload: r["workload"].as_str().unwrap().to_string(),
                backend: r["backend"].as_str().unwrap().to_string(),
                args,
                accuracy: r["testAccuracy"].as_f64().unwrap(),
                seconds: r["seconds"].as_f64().unwrap_or(f64::MAX),
            }
        })
        .filter(|r| r.args.windows(2).any(|w| w[0] == "--dataset" && w[1] == "digits"))
        .collect()
}

fn replay(row: &Row) -> f64 {
    let out_dir = std::env::temp_dir().join(format!("pixelgrad-quality-{}-{}-{}", std::process::id(), row.workload, row.backend));
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad")).args(&row.args).arg("--out").arg(&out_dir).output().unwrap();
    std::fs::remove_dir_all(&out_dir).ok();
    assert!(out.status.success(), "{} on {}: {}", row.workload, row.backend, String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let j: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    j["test_accuracy"].as_f64().unwrap()
}

fn check(backend: &str, all: bool) {
    let (file, json) = newest_result();
    let mut rows: Vec<Row> = digits_rows(&json, &file).into_iter().filter(|r| r.backend == backend).collect();
    assert!(!rows.is_empty(), "{}: no digits rows for {backend}", file.display());
    if !all {
        rows.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
        rows.truncate(1);
    }
    for row in &rows {
        let got = replay(row);
        assert!(
            (got - row.accuracy).abs() <= TOLERANCE,
            "{} on {backend}: test accuracy {got:.4}, documented {:.4} in {} (re-run cargo xtask bench-quality if the change is meant)",
            row.workload,
            row.accuracy,
            file.display()
        );
    }
}

#[test]
fn cpu_reaches_the_documented_accuracy_on_every_digits_workload() {
    check("cpu", true);
}

#[test]
fn webgpu_reaches_the_documented_accuracy() {
    check("webgpu", false);
}

#[test]
fn webgl_reaches_the_documented_accuracy() {
    check("webgl", false);
}
