//! Memory under shape churn: an imported convolutional network (built with pixelgrad's layers,
//! exported to ONNX, its input's height and width made symbolic) runs over 300 distinct input
//! sizes on the WebGPU backend (lavapipe) and the WebGL backend (llvmpipe; WebGL2 and the
//! webgl1 mode). The GPU pools keep their byte budget, so device bytes (pool + live) after every
//! run stay under a stated bound however many sizes go through, and `Device::trim` then leaves
//! the pool empty.
//!
//! Before the budgets the pools were never trimmed: over these 300 sizes the WebGL pool grew
//! to 12.9 MB (282 textures, one more for nearly every new size: textures were keyed by exact
//! size) and the WebGPU pool to 0.9 MB, both past [`DEVICE_BOUND`]. With WebGL textures
//! sized on a grid, the same run with the default budget makes 110 textures (3.9 MB); the
//! WebGL test checks that sharing too.

use pixelgrad_core::Device;
use pixelgrad_nn::layers::{Activation, Conv2d, MaxPool2d};
use pixelgrad_nn::{Init, Sequential};
use pixelgrad_onnx::proto::{DimValue, ModelProto};
use pixelgrad_onnx::{export, HostTensor, Input, Model, Session};
use prost::Message;

/// Distinct input sizes run.
const SIZES: usize = 300;
/// Sides of the inputs: 8 to 40 pixels.
const MIN_SIDE: usize = 8;
const SIDES: usize = 33;
/// The pool budget the backends are given for the test: a quarter of what one 40x40 run
/// allocates, so the pools must give memory back as sizes change.
const BUDGET: u64 = 256 << 10;
/// What live tensors may hold between runs: the weights (1392 floats) and the constants of
/// the session's recorded traces (at most 8 runs'; 10 KiB measured).
const LIVE_BOUND: u64 = 64 << 10;
/// The bound on device bytes (pool + live) after every run.
const DEVICE_BOUND: u64 = BUDGET + LIVE_BOUND;

/// A small CNN as ONNX with input `[N, 3, H, W]`, `H` and `W` symbolic.
fn cnn_onnx() -> Vec<u8> {
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    let mut init = Init::new(38);
    let net = Sequential::new()
        .push(Conv2d::new(&cpu, 3, 8, 3, 1, 1, &mut init).unwrap())
        .push(Activation::Relu)
        .push(MaxPool2d { kernel: 2, stride: 2, padding: 0 })
        .push(Conv2d::new(&cpu, 8, 16, 3, 1, 1, &mut init).unwrap())
        .push(Activation::Relu);
    let bytes = export::to_onnx(&net, &[3, 16, 16]).unwrap();
    let mut m = ModelProto::decode(&bytes[..]).unwrap();
    let graph = m.graph.as_mut().unwrap();
    let input = graph.input.iter_mut().find(|i| i.name == "input").unwrap();
    let shape = input.r#type.as_mut().unwrap().tensor_type.as_mut().unwrap().shape.as_mut().unwrap();
    shape.dim[2].value = Some(DimValue::DimParam("H".into()));
    shape.dim[3].value = Some(DimValue::DimParam("W".into()));
    m.encode_to_vec()
}

/// The i-th input size: 300 distinct (height, width) pairs in a scrambled order.
fn size(i: usize) -> (usize, usize) {
    // 379 is prime to 33 * 33, so i -> 379 i mod 1089 visits distinct cells.
    let cell = (i * 379) % (SIDES * SIDES);
    (MIN_SIDE + cell / SIDES, MIN_SIDE + cell % SIDES)
}

fn image(h: usize, w: usize, seed: usize) -> HostTensor {
    let v = (0..3 * h * w).map(|j| (((j * 7 + seed * 13) % 17) as f32 - 8.0) / 8.0).collect();
    HostTensor::f32(vec![1, 3, h, w], v)
}

fn run(session: &Session, x: HostTensor) -> Vec<f32> {
    let out = session.run(&[("input", Input::Host(x))]).unwrap();
    out[0].1.to_host().unwrap().to_f32()
}

/// What a churn did.
struct Churned {
    allocations: u64,
}

/// Runs every size on `dev`, checking after each run that the pool keeps within `budget` and
/// (when given) device bytes within `bound`, a few outputs against the CPU backend, and that
/// `trim` empties the pool; prints what the pool did.
fn churn(name: &str, dev: &Device, budget: u64, bound: Option<u64>) -> Churned {
    let bytes = cnn_onnx();
    let session = Session::new(Model::from_bytes(&bytes).unwrap(), dev).unwrap();
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    let reference = Session::new(Model::from_bytes(&bytes).unwrap(), &cpu).unwrap();
    let start = dev.counters();
    let (mut peak, mut peak_pooled, mut peak_live) = (0u64, 0u64, 0u64);
    for i in 0..SIZES {
        let (h, w) = size(i);
        let got = run(&session, image(h, w, i));
        assert_eq!(got.len(), 16 * (h / 2) * (w / 2), "{name}: output of {h}x{w}");
        if i % 50 == 0 {
            let want = run(&reference, image(h, w, i));
            let err = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(err <= 1e-4, "{name}: {h}x{w} differs from the CPU backend by {err}");
        }
        let c = dev.counters();
        peak = peak.max(c.bytes_in_use);
        peak_pooled = peak_pooled.max(c.pooled_bytes);
        peak_live = peak_live.max(c.bytes_in_use - c.pooled_bytes);
        assert!(
            c.pooled_bytes <= budget,
            "{name}: after {h}x{w} (size {i}) the pool holds {} bytes, over its budget {budget}",
            c.pooled_bytes
        );
        if let Some(bound) = bound {
            assert!(
                c.bytes_in_use <= bound,
                "{name}: after {h}x{w} (size {i}) the device holds {} bytes (pooled {}), over {bound}",
                c.bytes_in_use,
                c.pooled_bytes
            );
        }
    }
    let end = dev.counters();
    let allocations = end.allocations - start.allocations;
    println!(
        "{name}: {SIZES} sizes, budget {budget}: {allocations} allocations, peak device bytes {peak} (pooled {peak_pooled}, live {peak_live}); after: {} in use, {} pooled",
        end.bytes_in_use, end.pooled_bytes
    );
    assert!(peak_live <= LIVE_BOUND, "{name}: {peak_live} live bytes between runs");
    dev.trim().unwrap();
    let c = dev.counters();
    assert_eq!(c.pooled_bytes, 0, "{name}: trim left pooled memory");
    assert_eq!(c.bytes_in_use, end.bytes_in_use - end.pooled_bytes, "{name}: trim freed memory a tensor or plan holds");
    // What is left is what the session holds (weights, recorded traces); it still runs.
    let (h, w) = size(0);
    assert_eq!(run(&session, image(h, w, 0)).len(), 16 * (h / 2) * (w / 2));
    Churned { allocations }
}

#[test]
fn sizes_are_distinct() {
    let all: std::collections::HashSet<(usize, usize)> = (0..SIZES).map(size).collect();
    assert_eq!(all.len(), SIZES);
}

#[test]
fn webgpu_device_bytes_stay_bounded_over_300_input_sizes() {
    use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
    let b = WgpuBackend::new(WgpuOptions { pool_budget: BUDGET, ..WgpuOptions::default() })
        .expect("a WebGPU adapter (Debian: mesa-vulkan-drivers gives lavapipe)");
    churn("webgpu", &Device::new(b), BUDGET, Some(DEVICE_BOUND));
}

#[test]
fn webgl_device_bytes_stay_bounded_over_300_input_sizes() {
    use pixelgrad_webgl::{WebGlBackend, WebGlOptions, DEFAULT_POOL_BUDGET};
    let opts = WebGlOptions { pool_budget: BUDGET, self_test: false, ..WebGlOptions::default() };
    let b = WebGlBackend::new_headless(opts.clone()).expect("a headless OpenGL ES 3 context (Debian: libegl-mesa0 gives llvmpipe)");
    churn("webgl", &Device::new(b), BUDGET, Some(DEVICE_BOUND));
    // With the default budget nothing is evicted, and the size grid has nearby sizes share
    // textures: well under one new texture per size (textures keyed by exact size took 282).
    let b = WebGlBackend::new_headless(WebGlOptions { pool_budget: DEFAULT_POOL_BUDGET, ..opts }).unwrap();
    let shared = churn("webgl", &Device::new(b), DEFAULT_POOL_BUDGET, None);
    assert!(shared.allocations < SIZES as u64 / 2, "{} textures made for {SIZES} sizes", shared.allocations);
    // The webgl1 mode (GLSL ES 1.00 programs reading texture sizes from uniforms) likewise.
    let b = WebGlBackend::new_headless(WebGlOptions { webgl1: true, ..opts }).unwrap();
    churn("webgl1", &Device::new(b), BUDGET, Some(DEVICE_BOUND));
}
