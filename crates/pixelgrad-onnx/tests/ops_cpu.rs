//! Every per-operator fixture on the CPU backend against onnxruntime.

mod common;

use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;
use pixelgrad_onnx::{npy, HostTensor, Input, Model, Session};

#[test]
fn every_operator_case_matches_onnxruntime_on_cpu() {
    let dev = pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new());
    common::check_all(&dev, "ops", |_| true);
}

/// A run that replays the kernels of an earlier run with inputs of the same shapes computes,
/// from new input values, exactly what walking the graph computes; and weights set between
/// runs are read, not the recorded ones.
#[test]
fn replayed_runs_equal_graph_walks_on_new_inputs_and_weights() {
    common::replays::check_replays(&Device::new(CpuBackend::new()), "ops");
    assert_eq!(walked_replays_never(), 0);
}

/// Outputs held through later replays keep their values.
#[test]
fn held_outputs_survive_replays_on_cpu() {
    common::replays::held_outputs_survive_replays(&Device::new(CpuBackend::new()), "ppocr_cls");
}

/// A session with replay turned off never replays.
fn walked_replays_never() -> u64 {
    let dev = Device::new(CpuBackend::new());
    let case = &common::cases("ops")[0];
    let s = Session::new(Model::load(case.dir.join("model.onnx")).unwrap(), &dev).unwrap();
    s.set_kernel_replay(false);
    let ins: Vec<(String, HostTensor)> = case.inputs.iter().map(|(n, p)| (n.clone(), npy::load(p).unwrap())).collect();
    let feeds: Vec<(&str, Input)> = ins.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect();
    s.run(&feeds).unwrap();
    s.run(&feeds).unwrap();
    s.kernel_replays()
}
