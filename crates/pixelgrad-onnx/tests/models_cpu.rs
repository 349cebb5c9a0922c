//! Whole models on the CPU backend against onnxruntime: the architectures the `onnx` package
//! ships (constant weights), the pretrained PP-OCR text direction classifier on rendered text
//! (it must also get every orientation right) and the PP-OCR text detector.

mod common;

use pixelgrad_core::Device;

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

#[test]
fn light_architectures_match_onnxruntime() {
    common::check_all(&cpu(), "models", |c| c.tags.iter().any(|t| t == "light"));
}

/// Run twice: the second run replays the kernels the first recorded.
#[test]
fn pretrained_ppocr_models_match_onnxruntime() {
    common::check_all_times(&cpu(), "models", |c| c.tags.iter().any(|t| t == "pretrained"), 2);
}

/// The pretrained classifier reads every rendered text line's orientation right (0 upright,
/// 1 rotated 180 degrees), as onnxruntime does.
#[test]
fn pretrained_classifier_gets_every_orientation_right() {
    let dir = common::fixtures().join("models/ppocr_cls");
    let dev = cpu();
    let s = pixelgrad_onnx::Session::new(pixelgrad_onnx::Model::load(dir.join("model.onnx")).unwrap(), &dev).unwrap();
    let x = pixelgrad_onnx::npy::load(&dir.join("input_0.npy")).unwrap();
    let labels = pixelgrad_onnx::npy::load(&dir.join("labels.npy")).unwrap().to_i64("labels").unwrap();
    let p = s.run(&[("x", x.into())]).unwrap()[0].1.to_host().unwrap().to_f32();
    let got: Vec<i64> = p.chunks(2).map(|r| if r[1] > r[0] { 1 } else { 0 }).collect();
    assert_eq!(got, labels);
    assert!(labels.contains(&0) && labels.contains(&1));
}

/// Models quantised by onnxruntime's `quantize_static` (QDQ per-tensor and per-channel,
/// QOperator with com.microsoft ops; squeezenet, a small MLP and CNN, and the pretrained PP-OCR
/// classifier): within one output quantisation step of onnxruntime's int8 result, same argmax.
#[test]
fn quantized_models_match_onnxruntime() {
    common::check_all_times(&cpu(), "models", |c| c.tags.iter().any(|t| t == "int8"), 2);
}
