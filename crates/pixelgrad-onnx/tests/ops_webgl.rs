//! Every per-operator fixture on the WebGL2 backend (headless EGL; Mesa llvmpipe without a GPU),
//! and the pretrained PP-OCR text direction classifier.

mod common;

use std::sync::{Mutex, MutexGuard};

use pixelgrad_core::Device;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn webgl() -> Device {
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context (Debian: libegl-mesa0 libgles2)"))
}

/// One test's GL context at a time: a CI run of this binary once ended in a SIGSEGV inside the
/// driver while two of its tests drew in parallel contexts (llvmpipe, Mesa 22.3); it has not
/// reproduced in isolation, and the binary takes ~16 s run one test at a time.
static ONE_CONTEXT: Mutex<()> = Mutex::new(());

fn one_context() -> MutexGuard<'static, ()> {
    ONE_CONTEXT.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn every_operator_case_matches_onnxruntime_on_webgl() {
    let _one = one_context();
    common::check_all(&webgl(), "ops", |_| true);
}

#[test]
fn pretrained_classifier_matches_onnxruntime_on_webgl() {
    let _one = one_context();
    common::check_all(&webgl(), "models", |c| c.name == "ppocr_cls");
}

/// The small quantised models (MLP, CNN and the PP-OCR classifier, QDQ and QOperator): within
/// one output quantisation step of onnxruntime's int8 result, same argmax.
#[test]
fn quantized_models_match_onnxruntime_on_webgl() {
    let _one = one_context();
    common::check_all(&webgl(), "models", |c| c.tags.iter().any(|t| t == "int8") && !c.name.starts_with("squeezenet"));
}

/// WebGL2 stores 8-bit weights in integer textures, so a quantised model's weights stay 8-bit
/// on the device and its convolutions and matrix products run on `matmul_i8`; the result
/// stays within one quantisation step of onnxruntime.
#[test]
fn int8_weights_stay_8_bit_on_webgl() {
    let _one = one_context();
    use std::rc::Rc;
    let dev = webgl();
    assert!(dev.backend().caps().int8);
    let case = common::cases("models").into_iter().find(|c| c.name == "ppocr_cls_qdq_u8").unwrap();
    let model = Rc::new(pixelgrad_onnx::Model::load(case.dir.join("model.onnx")).unwrap());
    let s = pixelgrad_onnx::Session::with_storage(model.clone(), &dev, pixelgrad_onnx::WeightStorage::F32).unwrap();
    let errs = common::compare(&case, &s).unwrap();
    assert!(errs.iter().all(|&e| e <= 1.0), "{errs:?}");
    let int8: usize = model.constants.values().filter(|t| t.dtype.size() == 1 && !t.shape.is_empty()).map(|t| t.numel()).sum();
    let float: usize = model.constants.values().filter(|t| t.dtype.size() != 1 || t.shape.is_empty()).map(|t| t.numel() * 4).sum();
    let bytes = s.device_weight_bytes();
    assert!(bytes <= int8 + float, "{bytes} > {int8} 8-bit + {float} other bytes");
    assert!(s.int8_path().unwrap().starts_with("i8 weights stored 8-bit"), "{:?}", s.int8_path());
}

/// WebGL2 stores f16 weights (RGBA16UI bit patterns, widened exactly where read): the
/// pretrained classifier holds about half the weight bytes and stays within 1e-2 of
/// onnxruntime's f32 outputs.
#[test]
fn f16_weights_take_half_the_bytes_on_webgl() {
    let _one = one_context();
    use std::rc::Rc;
    let dev = webgl();
    assert!(dev.backend().caps().f16_storage);
    let _g = pixelgrad_core::no_grad();
    let case = common::cases("models").into_iter().find(|c| c.name == "ppocr_cls" && c.atol.is_none()).unwrap();
    let model = Rc::new(pixelgrad_onnx::Model::load(case.dir.join("model.onnx")).unwrap());
    let full = pixelgrad_onnx::Session::with_storage(model.clone(), &dev, pixelgrad_onnx::WeightStorage::F32).unwrap();
    let half = pixelgrad_onnx::Session::with_storage(model, &dev, pixelgrad_onnx::WeightStorage::F16).unwrap();
    assert_eq!(half.weight_storage(), "f16");
    let mut strict = case.clone();
    strict.tol = 1e-2;
    let errs = common::compare(&strict, &half).unwrap();
    assert!(errs.iter().all(|&e| e <= 1.0), "error {errs:?} of 1e-2");
    common::compare(&case, &full).unwrap();
    let (h, f) = (half.device_weight_bytes() as f64, full.device_weight_bytes() as f64);
    assert!(h <= 0.55 * f && h >= 0.45 * f, "f16 weights take {h} bytes, f32 {f}");
}

/// The MLP whose MatMuls onnxruntime's `MatMul4BitsQuantizer` made `MatMulNBits` (weights
/// kept packed on WebGL2, dequantised in `shaders/matmul_nbits.glsl`; see `ops/nbits.rs`).
#[test]
fn matmulnbits_mlp_matches_onnxruntime_on_webgl() {
    let _one = one_context();
    common::check_all(&webgl(), "models", |c| c.tags.iter().any(|t| t == "nbits"));
}

/// WebGL2 keeps `MatMulNBits` weights packed: the device holds the file's 4-bit bytes (in an
/// `RGBA8UI` texture) and an f32 scale and zero point per block, as the CPU does, not the
/// `[K, N]` f32 matrices (8 times the packed bytes), and the result matches onnxruntime.
#[test]
fn matmulnbits_weights_stay_packed_on_webgl2() {
    let _one = one_context();
    let dev = webgl();
    assert!(dev.backend().caps().int8);
    let case = common::cases("models").into_iter().find(|c| c.name == "mlp_matmulnbits_4bit").unwrap();
    let model = pixelgrad_onnx::Model::load(case.dir.join("model.onnx")).unwrap();
    let s = pixelgrad_onnx::Session::new(model, &dev).unwrap();
    common::compare(&case, &s).unwrap();
    // 64 -> 48 -> 10, blocks of 32 (K = 48 padded to two blocks): see models_cpu.rs
    let (dense, packed_4bit, biases) = ((64 * 48 + 48 * 10) * 4, (64 * 48 + 64 * 10) / 2, (48 + 10) * 4);
    let block_params = (48 * 2 + 10 * 2) * 4 * 2;
    assert_eq!(s.device_weight_bytes(), packed_4bit + block_params + biases, "device bytes: packed weights, block parameters, biases");
    assert!(s.device_weight_bytes() * 3 < dense + biases);
}

/// A second run with inputs of the same shapes replays the first run's WebGL draws (the
/// recorded programs and uniforms, with the new inputs sampled) and computes bit for bit what
/// walking the graph computes, on new inputs and after new weights.
#[test]
fn replayed_runs_equal_graph_walks_on_webgl() {
    let _one = one_context();
    common::replays::check_replays(&webgl(), "ops");
}

/// Outputs held through later replays keep their values on WebGL.
#[test]
fn held_outputs_survive_replays_on_webgl() {
    let _one = one_context();
    common::replays::held_outputs_survive_replays(&webgl(), "ppocr_cls");
}
