//! Fixtures made by `scripts/onnx-fixtures.sh` (onnxruntime's outputs for per-operator models
//! and whole models), and the comparison every backend's test runs.
#![allow(dead_code)]

pub mod export_round_trip;
pub mod replays;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pixelgrad_core::Device;
use pixelgrad_onnx::{npy, HostTensor, Input, Model, Session};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("repository root").to_path_buf()
}

/// The fixture folder, generated on first use (a Python venv with pinned onnx/onnxruntime).
pub fn fixtures() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = repo_root();
        let status =
            std::process::Command::new("bash").arg(root.join("scripts/onnx-fixtures.sh")).current_dir(&root).status().expect("run bash");
        assert!(status.success(), "scripts/onnx-fixtures.sh failed (needs python3 with venv and access to PyPI)");
        root.join("target/onnx-fixtures")
    })
}

#[derive(Debug, Clone)]
pub struct Case {
    pub kind: String,
    pub name: String,
    pub dir: PathBuf,
    pub inputs: Vec<(String, PathBuf)>,
    pub outputs: Vec<(String, PathBuf)>,
    pub tol: f64,
    /// Quantised cases: the largest absolute difference allowed (one quantisation step, or 0
    /// for exact integer results), checked instead of `tol`.
    pub atol: Option<f64>,
    pub tags: Vec<String>,
}

pub fn cases(kind: &str) -> Vec<Case> {
    cases_in(fixtures(), kind)
}

/// The cases of `kind` listed in `dir/manifest.json` (a fixture folder's layout).
pub fn cases_in(dir: &Path, kind: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json");
    let j: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    let list = |c: &serde_json::Value, key: &str, d: &Path| -> Vec<(String, PathBuf)> {
        c[key].as_array().unwrap().iter().map(|e| (e["name"].as_str().unwrap().to_string(), d.join(e["file"].as_str().unwrap()))).collect()
    };
    j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == kind)
        .map(|c| {
            let d = dir.join(c["dir"].as_str().unwrap());
            Case {
                kind: kind.to_string(),
                name: c["name"].as_str().unwrap().to_string(),
                inputs: list(c, "inputs", &d),
                outputs: list(c, "outputs", &d),
                tol: c["tol"].as_f64().unwrap(),
                atol: c.get("atol").and_then(|a| a.as_f64()),
                tags: c["tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect(),
                dir: d,
            }
        })
        .collect()
}

/// Largest absolute difference over the largest magnitude of the expected output.
pub fn rel_err(got: &[f32], want: &[f32]) -> f64 {
    let scale = want.iter().fold(0f64, |m, &v| m.max((v as f64).abs())).max(1e-6);
    let diff = got.iter().zip(want).fold(0f64, |m, (&a, &b)| m.max((a as f64 - b as f64).abs()));
    if got.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    diff / scale
}

/// Largest absolute difference (infinite if `got` has a non-finite value `want` does not).
pub fn abs_err(got: &[f32], want: &[f32]) -> f64 {
    got.iter().zip(want).fold(0f64, |m, (&a, &b)| if a.is_finite() { m.max((a as f64 - b as f64).abs()) } else { f64::INFINITY })
}

/// Index of the largest value of each row of length `n`.
pub fn argmax_rows(v: &[f32], n: usize) -> Vec<usize> {
    v.chunks(n.max(1)).map(|r| r.iter().enumerate().fold(0, |b, (i, &x)| if x > r[b] { i } else { b })).collect()
}

/// Runs a case and returns, per output, the error against onnxruntime over the case's
/// tolerance (≤ 1 passes): the relative error over `tol`, or for quantised cases the absolute
/// error over `atol` (exact cases: any difference fails). A quantised model must also pick the
/// same class as onnxruntime for every row of its output.
pub fn run_case(dev: &Device, case: &Case) -> Result<Vec<f64>, String> {
    run_case_times(dev, case, 1)
}

/// [`run_case`] run `runs` times on one session (later runs replay the first one's kernels on
/// backends that record them), each compared; the worst errors.
pub fn run_case_times(dev: &Device, case: &Case, runs: usize) -> Result<Vec<f64>, String> {
    let model = Model::load(case.dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let session = Session::new(model, dev).map_err(|e| e.to_string())?;
    let mut worst = compare(case, &session)?;
    for _ in 1..runs {
        for (w, e) in worst.iter_mut().zip(compare(case, &session)?) {
            *w = w.max(e);
        }
    }
    Ok(worst)
}

/// Runs `case` on `session` and compares as [`run_case`] does.
pub fn compare(case: &Case, session: &Session) -> Result<Vec<f64>, String> {
    let inputs: Vec<(String, HostTensor)> = case.inputs.iter().map(|(n, p)| (n.clone(), npy::load(p).unwrap())).collect();
    let feeds: Vec<(&str, Input)> = inputs.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect();
    let _g = pixelgrad_core::no_grad();
    let outs = session.run(&feeds).map_err(|e| e.to_string())?;
    let mut errs = Vec::new();
    for ((name, want_path), (got_name, got)) in case.outputs.iter().zip(&outs) {
        assert_eq!(name, got_name, "{}: output order", case.name);
        let want = npy::load(want_path).unwrap();
        let got = got.to_host().map_err(|e| e.to_string())?;
        if got.shape != want.shape {
            return Err(format!("output {name}: shape {:?}, onnxruntime {:?}", got.shape, want.shape));
        }
        let (g, w) = (got.to_f32(), want.to_f32());
        let e = match case.atol {
            Some(a) => {
                let d = abs_err(&g, &w);
                if a == 0.0 {
                    if d == 0.0 {
                        0.0
                    } else {
                        f64::INFINITY
                    }
                } else {
                    d / a
                }
            }
            None => rel_err(&g, &w) / case.tol.max(1e-30),
        };
        if case.kind == "models" && case.atol.is_some() {
            let n = *want.shape.last().unwrap_or(&1);
            if argmax_rows(&g, n) != argmax_rows(&w, n) {
                return Err(format!(
                    "output {name}: argmax differs from onnxruntime's ({:?} vs {:?})",
                    argmax_rows(&g, n),
                    argmax_rows(&w, n)
                ));
            }
        }
        errs.push(e);
    }
    Ok(errs)
}

/// Runs every case of `kind` on `dev` (those `filter` keeps), prints one line each and fails
/// listing every case over its tolerance or failing to run.
pub fn check_all(dev: &Device, kind: &str, filter: impl Fn(&Case) -> bool) {
    check_all_times(dev, kind, filter, 1)
}

/// [`check_all`] with each case run `runs` times on one session ([`run_case_times`]).
pub fn check_all_times(dev: &Device, kind: &str, filter: impl Fn(&Case) -> bool, runs: usize) {
    let list: Vec<Case> = cases(kind).into_iter().filter(|c| filter(c)).collect();
    check_cases(dev, kind, &list, runs)
}

/// Runs each of `list` `runs` times on `dev`, prints one line each and fails listing every case
/// over its tolerance or failing to run.
pub fn check_cases(dev: &Device, kind: &str, list: &[Case], runs: usize) {
    let mut bad = Vec::new();
    let mut worst: f64 = 0.0;
    let mut n = 0;
    for case in list {
        n += 1;
        match run_case_times(dev, case, runs) {
            Ok(errs) => {
                let e = errs.iter().cloned().fold(0.0, f64::max);
                worst = worst.max(e);
                let what = if case.atol.is_some() { "abs err / atol" } else { "rel err / tol" };
                println!("{:48} {what} {e:.2e}", case.name);
                if e > 1.0 {
                    bad.push(format!("{}: error {e:.2e} of the tolerance (tol {:.0e}, atol {:?})", case.name, case.tol, case.atol));
                }
            }
            Err(msg) => bad.push(format!("{}: {msg}", case.name)),
        }
    }
    println!("{n} {kind} cases on {}, worst error {worst:.2e} of the tolerance", dev.name());
    assert!(n > 0, "no {kind} cases selected");
    assert!(bad.is_empty(), "{} of {n} cases failed on {}:\n{}", bad.len(), dev.name(), bad.join("\n"));
}
