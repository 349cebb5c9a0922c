//! Every per-operator fixture on the CPU backend against onnxruntime.

mod common;

use std::rc::Rc;

use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;
use pixelgrad_onnx::{npy, Data, HostTensor, Input, Model, Session};

#[test]
fn every_operator_case_matches_onnxruntime_on_cpu() {
    let dev = pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new());
    common::check_all(&dev, "ops", |_| true);
}

/// Every float input of `inputs` with its values in reverse order: other values of the same
/// range (integer inputs, indices and shapes, are kept).
fn reversed(inputs: &[(String, HostTensor)]) -> Vec<(String, HostTensor)> {
    inputs
        .iter()
        .map(|(n, t)| {
            let mut t = t.clone();
            if let Data::F32(v) = &mut t.data {
                v.reverse();
            }
            (n.clone(), t)
        })
        .collect()
}

fn outputs(s: &Session, inputs: &[(String, HostTensor)]) -> Vec<Vec<u32>> {
    let feeds: Vec<(&str, Input)> = inputs.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect();
    let outs = s.run(&feeds).expect("run");
    // Bits, with every NaN alike: the two paths must agree exactly.
    outs.iter()
        .map(|(_, v)| v.to_host().unwrap().to_f32().iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect())
        .collect()
}

/// A run that replays the kernels of an earlier run with inputs of the same shapes computes,
/// from new input values, exactly what walking the graph computes; and weights set between
/// runs are read, not the recorded ones.
#[test]
fn replayed_runs_equal_graph_walks_on_new_inputs_and_weights() {
    let dev = Device::new(CpuBackend::new());
    let (mut n, mut replayed, mut with_weights) = (0, 0, 0);
    for case in common::cases("ops") {
        let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
        let first: Vec<(String, HostTensor)> = case.inputs.iter().map(|(n, p)| (n.clone(), npy::load(p).unwrap())).collect();
        let second = reversed(&first);
        let traced = Session::from_rc(model.clone(), &dev).unwrap();
        let walked = Session::from_rc(model, &dev).unwrap();
        walked.set_kernel_replay(false);
        outputs(&traced, &first);
        let before = traced.kernel_replays();
        assert_eq!(outputs(&traced, &second), outputs(&walked, &second), "{}: replayed run differs", case.name);
        replayed += traced.kernel_replays() - before;
        // New weights: every parameter halved, in both sessions.
        if !traced.params().is_empty() {
            for s in [&traced, &walked] {
                for (_, p) in s.params() {
                    p.set(&p.tensor().mul_scalar(0.5).unwrap()).unwrap();
                }
            }
            assert_eq!(outputs(&traced, &second), outputs(&walked, &second), "{}: replay after new weights differs", case.name);
            with_weights += 1;
        }
        n += 1;
    }
    println!("{n} cases, {replayed} second runs replayed, {with_weights} with new weights");
    assert!(replayed * 3 >= n, "only {replayed} of {n} second runs were replays");
    assert!(with_weights > 0);
    assert_eq!(walked_replays_never(), 0);
}

/// A session with replay turned off never replays.
fn walked_replays_never() -> u64 {
    let dev = Device::new(CpuBackend::new());
    let case = &common::cases("ops")[0];
    let s = Session::new(Model::load(case.dir.join("model.onnx")).unwrap(), &dev).unwrap();
    s.set_kernel_replay(false);
    let ins: Vec<(String, HostTensor)> = case.inputs.iter().map(|(n, p)| (n.clone(), npy::load(p).unwrap())).collect();
    outputs(&s, &ins);
    outputs(&s, &ins);
    s.kernel_replays()
}
