// ONNX model files: decode, check, fold constants, bind to the CPU backend and, for models
// with small inputs, run once on zeros.
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/onnx.rs` (whose custom mutator is
// `harness/onnx_mutate.rs`) and the stable tests that run the seed corpus, the regressions and
// deterministic mutations (`crates/pixelgrad-web/tests/fuzz_corpora.rs`,
// `crates/pixelgrad-onnx/tests/fuzz_harness.rs`): any panic is a bug.
use pixelgrad_core::{Device, Limits};
use pixelgrad_onnx::{Data, Dim, HostTensor, Input, Model, Session};

pub fn run(data: &[u8]) {
    let Ok(model) = Model::from_bytes(data) else { return };
    let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
    // results and work sized by the model's data stay small: the fuzzer explores structure,
    // not compute (a Resize to 2^28 elements takes minutes under ASan); the caps are the ones
    // every run has, lowered
    dev.set_limits(Limits { max_elements: 1 << 20, max_op_work: 1 << 24 });
    let Ok(session) = Session::new(model, &dev) else { return };
    session.set_max_work(1 << 26);
    let mut feeds = Vec::new();
    for v in session.inputs() {
        let Some(dims) = &v.shape else { return };
        let dims: Vec<usize> = dims.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { 1 }).collect();
        let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if !matches!(n, Some(n) if n <= 4096) {
            return;
        }
        let t = if v.dtype.is_float() {
            HostTensor { dtype: v.dtype, shape: dims, data: Data::F32(vec![0.0; n.unwrap_or(0)]) }
        } else {
            HostTensor::ints(v.dtype, dims, vec![0; n.unwrap_or(0)])
        };
        feeds.push((v.name.clone(), Input::Host(t)));
    }
    let feeds: Vec<(&str, Input)> = feeds.iter().map(|(n, i)| (n.as_str(), i.clone())).collect();
    let _ = session.run(&feeds);
}
