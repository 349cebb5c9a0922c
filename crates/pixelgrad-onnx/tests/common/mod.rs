//! Fixtures made by `scripts/onnx-fixtures.sh` (onnxruntime's outputs for per-operator models
//! and whole models), and the comparison every backend's test runs.
#![allow(dead_code)]

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
    pub tags: Vec<String>,
}

pub fn cases(kind: &str) -> Vec<Case> {
    let dir = fixtures();
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

/// Runs a case and returns, per output, the relative error against onnxruntime (or the error).
pub fn run_case(dev: &Device, case: &Case) -> Result<Vec<f64>, String> {
    let model = Model::load(case.dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let session = Session::new(model, dev).map_err(|e| e.to_string())?;
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
        errs.push(rel_err(&got.to_f32(), &want.to_f32()));
    }
    Ok(errs)
}

/// Runs every case of `kind` on `dev` (those `filter` keeps), prints one line each and fails
/// listing every case over its tolerance or failing to run.
pub fn check_all(dev: &Device, kind: &str, filter: impl Fn(&Case) -> bool) {
    let mut bad = Vec::new();
    let mut worst: f64 = 0.0;
    let mut n = 0;
    for case in cases(kind).iter().filter(|c| filter(c)) {
        n += 1;
        match run_case(dev, case) {
            Ok(errs) => {
                let e = errs.iter().cloned().fold(0.0, f64::max);
                worst = worst.max(e);
                println!("{:48} max rel err {e:.2e}", case.name);
                if e > case.tol {
                    bad.push(format!("{}: error {e:.2e} > {:.0e}", case.name, case.tol));
                }
            }
            Err(msg) => bad.push(format!("{}: {msg}", case.name)),
        }
    }
    println!("{n} {kind} cases on {}, worst relative error {worst:.2e}", dev.name());
    assert!(n > 0, "no {kind} cases selected");
    assert!(bad.is_empty(), "{} of {n} cases failed on {}:\n{}", bad.len(), dev.name(), bad.join("\n"));
}
