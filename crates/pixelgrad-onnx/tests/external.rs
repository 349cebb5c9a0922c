//! External data: weights in files beside the model (`scripts/onnx_fixtures.py`'s `external`
//! cases, saved by onnx with `save_as_external_data`) read from the model's folder or from
//! bytes the caller passes, matching onnxruntime; and the hostile cases: a location that leaves
//! the folder, a span outside the file, a missing file.

mod common;
mod graphs;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use graphs::*;
use pixelgrad_onnx::proto::{StringStringEntryProto, TensorProto};
use pixelgrad_onnx::{npy, Input, Model, OnnxError, Session};

fn cpu() -> pixelgrad_core::Device {
    pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new())
}

/// A fresh folder for one test.
fn folder(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pixelgrad-external-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `y = x + w` with `w` (4 floats) external at `location`, `offset`, `length`.
fn add_model(location: &str, offset: Option<u64>, length: Option<u64>) -> Vec<u8> {
    let mut entries = vec![StringStringEntryProto { key: "location".into(), value: location.into() }];
    if let Some(o) = offset {
        entries.push(StringStringEntryProto { key: "offset".into(), value: o.to_string() });
    }
    if let Some(l) = length {
        entries.push(StringStringEntryProto { key: "length".into(), value: l.to_string() });
    }
    let w = TensorProto { name: "w".into(), dims: vec![4], data_type: F32, data_location: 1, external_data: entries, ..Default::default() };
    model(13, vec![node("Add", &["x", "w"], &["y"], vec![])], &[("x", &[4])], &["y"], vec![w])
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn add_result(m: Model) -> Vec<f32> {
    let s = Session::new(m, &cpu()).unwrap();
    let x = pixelgrad_onnx::HostTensor::f32(vec![4], vec![10.0; 4]);
    s.run(&[("x", Input::Host(x))]).unwrap()[0].1.to_host().unwrap().to_f32()
}

fn load_in(dir: &Path, bytes: &[u8]) -> Result<Model, OnnxError> {
    std::fs::write(dir.join("model.onnx"), bytes).unwrap();
    Model::load(dir.join("model.onnx"))
}

/// onnx's external-data files, read from the model's folder, match onnxruntime.
#[test]
fn external_data_cases_match_onnxruntime_on_cpu() {
    let cases = common::cases("external");
    assert_eq!(cases.len(), 2);
    common::check_cases(&cpu(), "external", &cases, 1);
}

/// The same model from its bytes and its data file's bytes (what the browser binding passes)
/// computes the same; without them, the error names the file.
#[test]
fn external_bytes_can_be_passed_explicitly() {
    let case = common::cases("external").into_iter().find(|c| c.name == "external_one_file").unwrap();
    let bytes = std::fs::read(case.dir.join("model.onnx")).unwrap();
    let data = std::fs::read(case.dir.join("model.onnx_data")).unwrap();
    let from_folder = Model::load(case.dir.join("model.onnx")).unwrap();
    let files = HashMap::from([("model.onnx_data".to_string(), data)]);
    let given = Model::from_bytes_with_external(&bytes, &files).unwrap();
    assert_eq!(from_folder.constants, given.constants);
    let x = npy::load(&case.inputs[0].1).unwrap();
    let run = |m: Model| Session::new(m, &cpu()).unwrap().run(&[("x", Input::Host(x.clone()))]).unwrap()[0].1.to_host().unwrap().to_f32();
    assert_eq!(run(from_folder), run(given));

    let e = Model::from_bytes(&bytes).unwrap_err().to_string();
    assert!(e.contains("'model.onnx_data'"), "{e}");
    let e = Model::from_bytes_with_external(&bytes, &HashMap::from([("other.bin".to_string(), vec![0u8; 4])])).unwrap_err().to_string();
    assert!(e.contains("model.onnx_data") && e.contains("not given") && e.contains("'other.bin'"), "{e}");
}

/// Offsets and lengths pick the tensor's bytes out of a shared file.
#[test]
fn offset_and_length_select_the_bytes() {
    let dir = folder("offset");
    let mut data = floats(&[9.0, 9.0]);
    data.extend(floats(&[1.0, 2.0, 3.0, 4.0]));
    data.extend(floats(&[9.0]));
    std::fs::write(dir.join("w.bin"), &data).unwrap();
    let m = load_in(&dir, &add_model("w.bin", Some(8), Some(16))).unwrap();
    assert_eq!(add_result(m), vec![11.0, 12.0, 13.0, 14.0]);
    // no length: to the end of the file
    std::fs::write(dir.join("tail.bin"), floats(&[0.0, 1.0, 2.0, 3.0, 4.0])).unwrap();
    let m = load_in(&dir, &add_model("./tail.bin", Some(4), None)).unwrap();
    assert_eq!(add_result(m), vec![11.0, 12.0, 13.0, 14.0]);
}

/// A model cannot make the importer read outside its folder, past its files' ends, or more
/// than its tensors hold; a missing file is named.
#[test]
fn hostile_locations_and_spans_are_refused() {
    let dir = folder("hostile");
    std::fs::write(dir.join("w.bin"), floats(&[1.0, 2.0, 3.0, 4.0])).unwrap();
    let outside = folder("outside");
    std::fs::write(outside.join("secret.bin"), floats(&[5.0; 4])).unwrap();
    let err = |loc: &str, off: Option<u64>, len: Option<u64>| load_in(&dir, &add_model(loc, off, len)).unwrap_err().to_string();

    let abs = outside.join("secret.bin").display().to_string();
    let e = err(&abs, None, None);
    assert!(e.contains("absolute path"), "{e}");
    let e = err("../outside/secret.bin", None, None);
    assert!(e.contains("leaves the model's folder"), "{e}");
    let e = err("sub/../../x.bin", None, None);
    assert!(e.contains("leaves the model's folder"), "{e}");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.join("secret.bin"), dir.join("link.bin")).unwrap();
        let e = err("link.bin", None, None);
        assert!(e.contains("resolves outside the model's folder"), "{e}");
    }
    // spans outside the file, overflowing ones included
    let e = err("w.bin", Some(8), Some(16));
    assert!(e.contains("lies outside 'w.bin' (16 bytes)"), "{e}");
    let e = err("w.bin", Some(u64::MAX), Some(16));
    assert!(e.contains("lies outside"), "{e}");
    let e = err("w.bin", Some(20), None);
    assert!(e.contains("lies outside"), "{e}");
    // fewer bytes than the tensor's shape needs
    let e = err("w.bin", Some(0), Some(12));
    assert!(e.contains("12 raw bytes for shape [4]"), "{e}");
    // a missing file, named
    let e = load_in(&dir, &add_model("missing.bin", None, None)).unwrap_err();
    assert!(matches!(&e, OnnxError::Io { path, .. } if path.ends_with("missing.bin")), "{e}");
    // the same locations given as bytes are checked alike
    let files = HashMap::from([("../w.bin".to_string(), floats(&[1.0; 4]))]);
    let e = Model::from_bytes_with_external(&add_model("../w.bin", None, None), &files).unwrap_err().to_string();
    assert!(e.contains("leaves the model's folder"), "{e}");
}
