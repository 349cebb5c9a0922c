//! The export round trip the export tests share: a pixelgrad model written as ONNX, run by
//! onnxruntime (scripts/ort_run.py in the fixtures' venv) and imported back by pixelgrad, both
//! compared with pixelgrad's own output.

use std::path::{Path, PathBuf};

use pixelgrad_core::Tensor;
use pixelgrad_nn::{Mode, Module};
use pixelgrad_onnx::{export, npy, HostTensor, Input, Model, Session};

/// A scratch folder for test `name` of this process.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pixelgrad-export-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// onnxruntime's output for `x`.
pub fn onnxruntime(model: &Path, x: &HostTensor, dir: &Path) -> Vec<f32> {
    let _ = super::fixtures(); // makes sure the venv exists
    let root = super::repo_root();
    let xin = dir.join("x.npy");
    std::fs::write(&xin, npy::write(x).unwrap()).unwrap();
    let out = std::process::Command::new(root.join("target/onnx-venv/bin/python"))
        .arg(root.join("scripts/ort_run.py"))
        .arg(model)
        .arg(dir)
        .arg(format!("input={}", xin.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "onnxruntime refused the exported model: {}", String::from_utf8_lossy(&out.stderr));
    npy::load(&dir.join("output_0.npy")).unwrap().to_f32()
}

/// Exports `model` for samples of `x`'s shape: onnxruntime must give pixelgrad's output within
/// 1e-4 of its largest value, the re-imported model within `back_tol`.
pub fn round_trip(name: &str, model: &dyn Module, x: &Tensor, back_tol: f32) {
    let dev = x.device().clone();
    let want = {
        let _g = pixelgrad_core::no_grad();
        model.forward(x, Mode::Eval).unwrap().to_vec().unwrap()
    };
    let dir = tmp(name);
    let path = dir.join("model.onnx");
    export::save(model, &x.dims()[1..], &path).unwrap();
    let host = HostTensor::f32(x.dims().to_vec(), x.to_vec().unwrap());
    let ort = onnxruntime(&path, &host, &dir);
    let scale = want.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    let err = |got: &[f32]| got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max) / scale;
    assert_eq!(ort.len(), want.len(), "{name}: onnxruntime's output size differs");
    let e_ort = err(&ort);
    let back = Session::new(Model::load(&path).unwrap(), &dev).unwrap();
    let _g = pixelgrad_core::no_grad();
    let again = back.run(&[("input", Input::Tensor(x.clone()))]).unwrap()[0].1.to_host().unwrap().to_f32();
    assert_eq!(again.len(), want.len(), "{name}: the re-imported output size differs");
    let e_back = err(&again);
    println!("{name}: onnxruntime max rel error {e_ort:.2e}, re-imported {e_back:.2e}");
    assert!(e_ort < 1e-4, "{name}: onnxruntime differs by {e_ort}");
    assert!(e_back < back_tol, "{name}: the re-imported model differs by {e_back}");
    std::fs::remove_dir_all(&dir).ok();
}
