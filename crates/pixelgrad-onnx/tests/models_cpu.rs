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

/// An MLP whose MatMuls onnxruntime's `MatMul4BitsQuantizer` rewrote into `MatMulNBits`
/// (4-bit blocks of 32 with zero points) matches onnxruntime, run twice (the second replays).
/// Its weights stay packed on the device: the device holds the packed 4-bit bytes as stored,
/// one f32 scale and one f32 zero point per block (and the f32 biases), not the `[K, N]` f32
/// matrices, which are 8 times the packed bytes.
#[test]
fn matmulnbits_mlp_matches_onnxruntime_and_keeps_weights_packed() {
    let dev = cpu();
    common::check_all_times(&dev, "models", |c| c.tags.iter().any(|t| t == "nbits"), 2);
    let dir = common::fixtures().join("models/mlp_matmulnbits_4bit");
    let model = pixelgrad_onnx::Model::load(dir.join("model.onnx")).unwrap();
    let file_bytes = model.weight_bytes();
    let s = pixelgrad_onnx::Session::new(model, &dev).unwrap();
    let x = pixelgrad_onnx::npy::load(&dir.join("input_0.npy")).unwrap();
    s.run(&[("x", x.into())]).unwrap();
    // K = 48 of the second layer is padded to two whole blocks of 32 in the packed form
    let (dense, packed_4bit, biases) = ((64 * 48 + 48 * 10) * 4, (64 * 48 + 64 * 10) / 2, (48 + 10) * 4);
    // one f32 scale and one f32 zero point per block: 48 rows x 2 blocks, 10 rows x 2 blocks
    let block_params = (48 * 2 + 10 * 2) * 4 * 2;
    assert_eq!(s.device_weight_bytes(), packed_4bit + block_params + biases, "device bytes: packed weights, block parameters, biases");
    assert!(s.device_weight_bytes() * 3 < dense, "packed {} vs f32 {dense}", s.device_weight_bytes());
    // the file: packed blocks, f32 scales (one per block of 32), one byte of two zero points per row, biases
    assert_eq!(file_bytes, packed_4bit + (48 * 2 + 10 * 2) * 4 + (48 + 10) + biases);
    // and inspect says so on the operator's line, with both sizes, before anything runs
    let report = pixelgrad_onnx::inspect::inspect_file(dir.join("model.onnx")).unwrap();
    let op = report.operators.iter().find(|o| o.op_type == "MatMulNBits").unwrap();
    assert!(op.supported && op.note.is_some_and(|n| n.contains("kept packed on cpu, webgpu and webgl2")), "{op:?}");
    let pw = &report.to_json()["packedWeights"];
    assert_eq!(pw["nodes"], 2, "{pw}");
    assert_eq!(pw["packedBytes"], packed_4bit + block_params, "{pw}");
    assert_eq!(pw["f32Bytes"], dense, "{pw}");
    println!(
        "MatMulNBits MLP: file {file_bytes} weight bytes, device {} bytes (packed), {} as f32 weights",
        s.device_weight_bytes(),
        dense + biases
    );
}
