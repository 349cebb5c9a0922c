//! Every per-operator fixture on the WebGPU backend (Mesa lavapipe without a GPU), and the
//! pretrained PP-OCR models plus three light architectures (the native GPU run of whole models).

mod common;

use pixelgrad_core::Device;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

fn wgpu() -> Device {
    Device::new(WgpuBackend::new(WgpuOptions::default()).expect("a WebGPU adapter (Debian: mesa-vulkan-drivers gives lavapipe)"))
}

#[test]
fn every_operator_case_matches_onnxruntime_on_wgpu() {
    common::check_all(&wgpu(), "ops", |_| true);
}

#[test]
fn models_match_onnxruntime_on_wgpu() {
    let keep = ["ppocr_cls", "ppocr_det", "squeezenet", "shufflenet", "resnet50"];
    common::check_all(&wgpu(), "models", |c| keep.contains(&c.name.as_str()));
}

/// The models quantised by onnxruntime's `quantize_static` (QDQ and QOperator): within one
/// output quantisation step of onnxruntime's int8 result, same argmax.
#[test]
fn quantized_models_match_onnxruntime_on_wgpu() {
    common::check_all(&wgpu(), "models", |c| c.tags.iter().any(|t| t == "int8"));
}

/// The quantised products run on `dot4I8Packed` where the adapter's WGSL has it (lavapipe's
/// does), and on the unpacked-i32 kernels when that is forced off: the session reports which,
/// the launches show it, and every output is bit-identical between the two.
#[test]
fn quantized_products_take_the_packed_path_and_match_the_unpacked_one() {
    use pixelgrad_onnx::{npy, Input, Model, Session};
    let names = [
        "qlinearconv_per_tensor_bias",
        "qlinearconv_per_channel_stride2",
        "qlinearmatmul_u8_i8",
        "matmulinteger_u8_i8_zero_points",
        "convinteger_u8_u8",
        "squeezenet_qdq_u8",
        "ppocr_cls_qdq_u8",
    ];
    let cases: Vec<_> =
        common::cases("ops").into_iter().chain(common::cases("models")).filter(|c| names.contains(&c.name.as_str())).collect();
    assert!(cases.len() >= 5, "{:?}", cases.iter().map(|c| &c.name).collect::<Vec<_>>());
    let on = std::rc::Rc::new(WgpuBackend::new(WgpuOptions::default()).unwrap());
    let packed = on.wgsl_packed_4x8_integer_dot_product();
    let off = std::rc::Rc::new(WgpuBackend::new(WgpuOptions { int8_dot4: false, ..WgpuOptions::default() }).unwrap());
    on.set_launch_log(true);
    off.set_launch_log(true);
    let (don, doff) = (Device::from_rc(on.clone()), Device::from_rc(off.clone()));
    let _g = pixelgrad_core::no_grad();
    for case in &cases {
        let inputs: Vec<(String, pixelgrad_onnx::HostTensor)> =
            case.inputs.iter().map(|(n, p)| (n.clone(), npy::load(p).unwrap())).collect();
        let feeds: Vec<(&str, Input)> = inputs.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect();
        let mut results = Vec::new();
        for (dev, be, want_path) in [(&don, &on, if packed { "dot4I8Packed" } else { "unpacked-i32" }), (&doff, &off, "unpacked-i32")] {
            let model = Model::load(case.dir.join("model.onnx")).unwrap();
            let s = Session::new(model, dev).unwrap();
            let path = s.int8_path().unwrap();
            assert!(path.contains(&format!("({want_path},")), "{}: {path}", case.name);
            let outs: Vec<Vec<u32>> =
                s.run(&feeds).unwrap().iter().map(|(_, v)| v.to_host().unwrap().to_f32().iter().map(|x| x.to_bits()).collect()).collect();
            let log = be.take_launch_log();
            let dot4 = log.iter().filter(|l| l.contains("matmul_i8_dot4")).count();
            let unpacked =
                log.iter().filter(|l| l.split_whitespace().nth(1).is_some_and(|k| k == "matmul_i8" || k == "matmul_i8_vec4")).count();
            println!("{}: {want_path}: {dot4} dot4 launches, {unpacked} unpacked", case.name);
            if want_path == "dot4I8Packed" {
                assert!(dot4 > 0, "{}: no dot4 launch in {log:?}", case.name);
            } else {
                assert_eq!(dot4, 0, "{}", case.name);
            }
            results.push(outs);
        }
        assert_eq!(results[0], results[1], "{}: packed and unpacked outputs differ", case.name);
    }
}

/// The MLP whose MatMuls onnxruntime's `MatMul4BitsQuantizer` made `MatMulNBits` (weights
/// kept packed on the device, `matmul_nbits.wgsl`; see `ops/nbits.rs`).
#[test]
fn matmulnbits_mlp_matches_onnxruntime_on_wgpu() {
    common::check_all(&wgpu(), "models", |c| c.tags.iter().any(|t| t == "nbits"));
}

/// A second run with inputs of the same shapes replays the first run's WebGPU launches (the
/// recorded pipelines and bind groups, with the new inputs bound) and computes bit for bit
/// what walking the graph computes, on new inputs and after new weights.
#[test]
fn replayed_runs_equal_graph_walks_on_wgpu() {
    common::replays::check_replays(&wgpu(), "ops");
}

/// Outputs held through later replays keep their values on WebGPU.
#[test]
fn held_outputs_survive_replays_on_wgpu() {
    common::replays::held_outputs_survive_replays(&wgpu(), "ppocr_cls");
}
