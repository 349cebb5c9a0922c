//! Weights stored in f16 (`WeightStorage::F16`, `pixelgrad run --precision f16`): the models
//! stay within 1e-2 of onnxruntime's f32 outputs, pick the same class, and hold about half the
//! weight bytes on the device; on CPU and WebGPU (both store f16). 8-bit weights of quantised
//! models stay 8-bit on the device.

mod common;

use std::rc::Rc;

use pixelgrad_core::Device;
use pixelgrad_onnx::{Model, Session, WeightStorage};

fn devices() -> Vec<Device> {
    let mut v = vec![Device::new(pixelgrad_cpu::CpuBackend::new())];
    v.push(Device::new(pixelgrad_wgpu::WgpuBackend::new(pixelgrad_wgpu::WgpuOptions::default()).expect("a WebGPU adapter (lavapipe)")));
    // The tiled matmuls, where f16 weights are read directly (on CPU adapters the default
    // register kernels widen them first).
    let tiled = pixelgrad_wgpu::WgpuOptions { matmul: pixelgrad_wgpu::MatmulKernel::Tiled, ..Default::default() };
    v.push(Device::new(pixelgrad_wgpu::WgpuBackend::new(tiled).unwrap()));
    v
}

#[test]
fn f16_weights_stay_within_1e_2_with_half_the_bytes() {
    let names = ["ppocr_cls", "squeezenet", "resnet50"];
    for dev in devices() {
        let _g = pixelgrad_core::no_grad();
        for case in common::cases("models").iter().filter(|c| names.contains(&c.name.as_str()) && c.atol.is_none()) {
            let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
            let full = Session::with_storage(model.clone(), &dev, WeightStorage::F32).unwrap();
            let half = Session::with_storage(model, &dev, WeightStorage::F16).unwrap();
            assert_eq!(half.weight_storage(), "f16", "{} on {}", case.name, dev.name());
            assert!(half.params().is_empty(), "f16 weights are not trainable parameters");
            // relative error over the largest output magnitude, against onnxruntime's f32 run
            let mut strict = case.clone();
            strict.tol = 1e-2;
            let errs = common::compare(&strict, &half).unwrap_or_else(|e| panic!("{} on {}: {e}", case.name, dev.name()));
            assert!(errs.iter().all(|&e| e <= 1.0), "{} on {}: error {errs:?} of 1e-2", case.name, dev.name());
            common::compare(case, &full).unwrap();
            let (h, f) = (half.device_weight_bytes() as f64, full.device_weight_bytes() as f64);
            println!("{:12} on {}: rel err / 1e-2 {errs:?}, device weight bytes f16 {h} / f32 {f} = {:.3}", case.name, dev.name(), h / f);
            assert!(h <= 0.55 * f && h >= 0.45 * f, "{}: f16 weights take {h} bytes, f32 {f}", case.name);
            // the same class as onnxruntime
            let want = pixelgrad_onnx::npy::load(&case.outputs[0].1).unwrap();
            let (name, path) = &case.inputs[0];
            let x = pixelgrad_onnx::npy::load(path).unwrap();
            let got = half.run(&[(name.as_str(), x.into())]).unwrap()[0].1.to_host().unwrap().to_f32();
            let n = *want.shape.last().unwrap();
            assert_eq!(common::argmax_rows(&got, n), common::argmax_rows(&want.to_f32(), n), "{}", case.name);
        }
    }
}

/// A headless WebGL device: WebGL2, or the `webgl1` mode.
fn webgl(webgl1: bool) -> Device {
    let opts = pixelgrad_webgl::WebGlOptions { self_test: false, webgl1, ..Default::default() };
    Device::new(pixelgrad_webgl::WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context"))
}

/// A quantised model's 8-bit weights are held in 8 bits: a quarter of the bytes of the same
/// weights uploaded as f32 (the f32 path's depthwise weights included, widened where read).
/// Also in the WebGL1 mode, which stores them in byte textures and computes every quantised
/// op on the f32 path.
#[test]
fn int8_weights_stay_8_bit_on_the_device() {
    let mut devs = devices();
    devs.push(webgl(false));
    devs.push(webgl(true));
    for dev in devs {
        let case = common::cases("models").into_iter().find(|c| c.name == "ppocr_cls_qdq_u8").unwrap();
        let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
        let s = Session::with_storage(model.clone(), &dev, WeightStorage::F32).unwrap();
        let errs = common::compare(&case, &s).unwrap();
        assert!(errs.iter().all(|&e| e <= 1.0), "{errs:?}");
        let int8: usize = model.constants.values().filter(|t| t.dtype.size() == 1 && !t.shape.is_empty()).map(|t| t.numel()).sum();
        let float: usize = model.constants.values().filter(|t| t.dtype.size() != 1 || t.shape.is_empty()).map(|t| t.numel() * 4).sum();
        // QLinearAdd / QLinearMul (the QDQ Add and Mul fuse into them) look their results up
        // in one 256 x 256 table per set of scales and zero points (256 entries with a
        // constant operand): reported apart from the weights, 8-bit here. The CPU computes
        // them by formula wherever that is exact (`ops::qbinary`), so it holds fewer.
        let nodes = model.nodes.iter().filter(|n| n.op_type == "QLinearAdd" || n.op_type == "QLinearMul").count();
        let bytes = s.device_weight_bytes();
        let tables = s.device_table_bytes();
        println!(
            "{} on {}: {bytes} device weight bytes; {int8} 8-bit weights, at most {float} other bytes; {tables} table bytes",
            case.name,
            dev.name()
        );
        assert!(bytes <= int8 + float, "{bytes} > {int8} 8-bit + {float} other bytes");
        assert!(tables <= nodes * 65536 && tables.is_multiple_of(256), "{tables} table bytes for {nodes} nodes");
        if dev.kind() == pixelgrad_core::BackendKind::Cpu {
            assert!(tables < nodes * 65536, "{tables} table bytes for {nodes} nodes on the CPU");
        } else {
            assert!(tables > 0, "no tables on {}", dev.name());
        }
        assert!(s.int8_path().unwrap().starts_with("i8 weights stored 8-bit"), "{:?}", s.int8_path());
    }
}

/// On WebGPU's tiled matmuls the f16 weights of convolutions and matrix products go straight into
/// `matmul_f16` (no widen launch for them), and the report says so: every `matmul_f16`
/// launch replaces one widen of the path that widens first (`WgpuOptions::f16_matmul` off),
/// with the same outputs to f32 rounding.
#[test]
fn f16_weights_are_read_directly_by_webgpu_products() {
    use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
    let _g = pixelgrad_core::no_grad();
    let case = common::cases("models").into_iter().find(|c| c.name == "squeezenet").expect("the squeezenet fixture");
    let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
    let (name, path) = &case.inputs[0];
    let mut runs = vec![];
    for direct in [true, false] {
        let opts = WgpuOptions { f16_matmul: direct, matmul: pixelgrad_wgpu::MatmulKernel::Tiled, ..WgpuOptions::default() };
        let b = Rc::new(WgpuBackend::new(opts).unwrap());
        let dev = Device::from_rc(b.clone());
        let s = Session::with_storage(model.clone(), &dev, WeightStorage::F16).unwrap();
        let want = if direct { "f32 (f16 weights read directly)" } else { "f32 (widened)" };
        assert_eq!(s.arithmetic(), want);
        // The first run uploads; the second is the steady state.
        let x = pixelgrad_onnx::npy::load(path).unwrap();
        s.run(&[(name.as_str(), x.clone().into())]).unwrap();
        b.set_launch_log(true);
        let y = s.run(&[(name.as_str(), x.into())]).unwrap()[0].1.to_host().unwrap().to_f32();
        let log = b.take_launch_log();
        let count = |k: &str| log.iter().filter(|l| l.contains(k)).count();
        runs.push((y, count("widen"), count("matmul_f16")));
    }
    let ((yd, widen_d, mm_d), (yw, widen_w, mm_w)) = (&runs[0], &runs[1]);
    println!("squeezenet f16 on WebGPU: widen launches {widen_d} direct / {widen_w} widened, matmul_f16 launches {mm_d}");
    assert_eq!(*mm_w, 0);
    assert!(*mm_d > 0, "no matmul_f16 launch");
    assert_eq!(widen_d + mm_d, *widen_w, "each matmul_f16 should replace one widen");
    let top = yw.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = yd.iter().zip(yw).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(worst <= 1e-4 * top.max(1.0), "direct and widened differ by {worst} (largest output {top})");
}

/// Opt-in f16 products (`WgpuOptions::f16_arithmetic`, where the adapter has shader-f16):
/// the PP-OCR classifier stays within 1e-2 of onnxruntime. Not the default: the activations
/// are rounded to f16 too, and squeezenet's and resnet50's exceed 65504 in these fixtures
/// (constant weights), so their outputs become inf on this path.
#[test]
fn opt_in_f16_products_stay_within_1e_2_on_ppocr_cls() {
    use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
    let _g = pixelgrad_core::no_grad();
    let opts = WgpuOptions { f16_arithmetic: true, matmul: pixelgrad_wgpu::MatmulKernel::Tiled, ..WgpuOptions::default() };
    let b = Rc::new(WgpuBackend::new(opts).unwrap());
    if b.shader_f16_offered() != Some(true) {
        println!("the adapter has no shader-f16: f16 products not tested");
        return;
    }
    let dev = Device::from_rc(b);
    for case in common::cases("models").iter().filter(|c| c.name == "ppocr_cls") {
        let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
        let s = Session::with_storage(model, &dev, WeightStorage::F16).unwrap();
        assert_eq!(s.arithmetic(), "f16 products (shader-f16)");
        let mut strict = case.clone();
        strict.tol = 1e-2;
        let errs = common::compare(&strict, &s).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        println!("{:12} f16 products: rel err / 1e-2 {errs:?}", case.name);
        assert!(errs.iter().all(|&e| e <= 1.0), "{}: error {errs:?} of 1e-2", case.name);
    }
}

/// A float16 model (every weight and the input float16) keeps f16 storage by default
/// (`WeightStorage::Auto`), also for the convolution weights the loader folds a batch norm
/// into: they are folded in f64 and rounded to f16 once, so the weights take half the bytes
/// of an f32 session and the output stays within 1e-2 of onnxruntime's f32 run.
#[test]
fn float16_models_keep_f16_storage_through_folded_batch_norms() {
    let case = common::cases("models").into_iter().find(|c| c.name == "conv_bn_f16").expect("the conv_bn_f16 fixture");
    let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
    assert_eq!(model.stats.folded_batch_norms, 1);
    for dev in devices() {
        let _g = pixelgrad_core::no_grad();
        let half = Session::with_storage(model.clone(), &dev, WeightStorage::Auto).unwrap();
        assert_eq!(half.weight_storage(), "f16", "on {}", dev.name());
        let errs = common::compare(&case, &half).unwrap_or_else(|e| panic!("on {}: {e}", dev.name()));
        assert!(errs.iter().all(|&e| e <= 1.0), "on {}: error {errs:?} of 1e-2", dev.name());
        let full = Session::with_storage(model.clone(), &dev, WeightStorage::F32).unwrap();
        let (h, f) = (half.device_weight_bytes() as f64, full.device_weight_bytes() as f64);
        assert!(h <= 0.55 * f && h >= 0.45 * f, "on {}: f16 weights take {h} bytes, f32 {f}", dev.name());
    }
}

/// Quantised activations that outlive the next node are kept in 8-bit storage
/// (`Session::set_int8_activations`, on by default): on CPU, WebGPU and WebGL2 a quantised value
/// asked for as an output comes back as an 8-bit tensor, the outputs are bit for bit those of the
/// f32 setting (narrowing whole numbers is exact), and the values passed between nodes take no
/// more memory than in f32. WebGL1 has no 8-bit storage: it says so and keeps f32.
#[test]
fn int8_activations_are_stored_8_bit_with_the_same_outputs() {
    use pixelgrad_core::kernel::DType;
    let _g = pixelgrad_core::no_grad();
    let mut devs = devices();
    devs.truncate(2);
    devs.push(webgl(false));
    devs.push(webgl(true));
    for name in ["squeezenet_qop_u8_per_channel", "squeezenet_qdq_i8_per_channel", "cnn_qdq_u8"] {
        let case = common::cases("models").into_iter().find(|c| c.name == name).unwrap();
        let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
        // Every quantised result of the integer products, with the model's output.
        let quantised: Vec<String> = model
            .nodes
            .iter()
            .filter(|n| matches!(n.op_type.as_str(), "QLinearConv" | "QuantizeLinear"))
            .map(|n| n.outputs[0].clone())
            .take(6)
            .collect();
        assert!(!quantised.is_empty(), "{name} has no quantised results");
        let mut names: Vec<&str> = vec![model.outputs[0].name.as_str()];
        names.extend(quantised.iter().map(|s| s.as_str()));
        let (input, path) = &case.inputs[0];
        let x = pixelgrad_onnx::npy::load(path).unwrap();
        for dev in &devs {
            let narrow = Session::with_storage(model.clone(), dev, WeightStorage::F32).unwrap();
            let wide = Session::with_storage(model.clone(), dev, WeightStorage::F32).unwrap();
            wide.set_int8_activations(false);
            let int8 = dev.backend().caps().int8;
            assert_eq!(narrow.activation_storage(), if int8 { "8-bit" } else { "f32" }, "{name} on {}", dev.name());
            assert_eq!(wide.activation_storage(), "f32");
            let a = narrow.run_to(&[(input.as_str(), x.clone().into())], &names).unwrap();
            let b = wide.run_to(&[(input.as_str(), x.clone().into())], &names).unwrap();
            for (k, (va, vb)) in a.iter().zip(&b).enumerate() {
                let (ha, hb) = (va.to_host().unwrap().to_f32(), vb.to_host().unwrap().to_f32());
                assert_eq!(ha, hb, "{name} on {}: output {} differs between 8-bit and f32 activations", dev.name(), names[k]);
                if k == 0 {
                    continue;
                }
                // A quantised value asked for is held: 8-bit where the backend stores it.
                if let pixelgrad_onnx::Value::Device { tensor, dtype } = va {
                    let want = if int8 {
                        if *dtype == pixelgrad_onnx::DType::I8 {
                            DType::I8
                        } else {
                            DType::U8
                        }
                    } else {
                        DType::F32
                    };
                    assert_eq!(tensor.storage_dtype(), want, "{name} on {}: {}", dev.name(), names[k]);
                    // and an f32 tensor for ordinary ops
                    assert_eq!(va.tensor(dev).unwrap().storage_dtype(), DType::F32);
                }
            }
            let (na, nb) = (narrow.activation_bytes(), wide.activation_bytes());
            println!("{name} on {}: activation bytes 8-bit {na} / f32 {nb}", dev.name());
            assert!(na > 0 && na <= nb, "{name} on {}: {na} > {nb}", dev.name());
            if !int8 {
                assert_eq!(na, nb);
            }
        }
    }
}
