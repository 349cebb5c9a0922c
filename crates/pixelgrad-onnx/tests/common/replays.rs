//! The replay check every backend's operator test runs: a session's second run with inputs of
//! the same shapes replays the kernels its first run recorded, and computes bit for bit what
//! walking the graph computes, on new input values and after new weights.

use std::rc::Rc;

use pixelgrad_core::Device;
use pixelgrad_onnx::{npy, Data, HostTensor, Input, Model, Session, Value};

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

/// The outputs of one run of `s`, held (not read yet).
fn run(s: &Session, inputs: &[(String, HostTensor)]) -> Vec<(String, Value)> {
    let feeds: Vec<(&str, Input)> = inputs.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect();
    s.run(&feeds).expect("run")
}

/// Each output's bits, with every NaN alike: the two paths must agree exactly.
fn bits(outs: &[(String, Value)]) -> Vec<Vec<u32>> {
    outs.iter()
        .map(|(_, v)| v.to_host().unwrap().to_f32().iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect())
        .collect()
}

fn outputs(s: &Session, inputs: &[(String, HostTensor)]) -> Vec<Vec<u32>> {
    bits(&run(s, inputs))
}

/// Runs every per-operator case of `kind` on `dev` through a replaying and a walking session:
/// first run, then reversed inputs (the replaying session replays), then with every weight
/// halved in both. Asserts bit-identical outputs and that at least a third of the second runs
/// replayed; returns (cases, replayed second runs).
pub fn check_replays(dev: &Device, kind: &str) -> (usize, u64) {
    let (mut n, mut replayed, mut with_weights) = (0, 0, 0);
    for case in super::cases(kind) {
        let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
        let first: Vec<(String, HostTensor)> = case.inputs.iter().map(|(n, p)| (n.clone(), npy::load(p).unwrap())).collect();
        let second = reversed(&first);
        let traced = Session::from_rc(model.clone(), dev).unwrap();
        let walked = Session::from_rc(model, dev).unwrap();
        walked.set_kernel_replay(false);
        // A case this backend refuses (an operator it lacks) is the operator test's business.
        if traced.run(&first.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect::<Vec<_>>()).is_err() {
            continue;
        }
        let before = traced.kernel_replays();
        assert_eq!(outputs(&traced, &second), outputs(&walked, &second), "{}: replayed run differs", case.name);
        replayed += traced.kernel_replays() - before;
        // Outputs of a replay, held through the next replay, keep their values.
        let held = run(&traced, &second);
        let next = run(&traced, &first);
        assert_eq!(bits(&held), outputs(&walked, &second), "{}: a held output changed", case.name);
        assert_eq!(bits(&next), outputs(&walked, &first), "{}: replay after a held run differs", case.name);
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
    assert!(replayed as usize * 3 >= n, "only {replayed} of {n} second runs were replays");
    assert!(with_weights > 0);
    (n, replayed)
}

/// The outputs of a session's first run, held while later runs replay with other inputs,
/// keep the first run's values (a replay writes fresh memory where a caller holds the last
/// run's), on the model fixture `case_name`.
pub fn held_outputs_survive_replays(dev: &Device, case_name: &str) {
    let case = super::cases("models").into_iter().find(|c| c.name == case_name).expect("the case");
    let model = Rc::new(Model::load(case.dir.join("model.onnx")).unwrap());
    let (s, walked) = (Session::from_rc(model.clone(), dev).unwrap(), Session::from_rc(model, dev).unwrap());
    walked.set_kernel_replay(false);
    let first: Vec<(String, HostTensor)> = case.inputs.iter().map(|(n, p)| (n.clone(), npy::load(p).unwrap())).collect();
    let second = reversed(&first);
    let a = run(&s, &first);
    let b = run(&s, &second);
    let c = run(&s, &second);
    assert_eq!(s.kernel_replays(), 2, "{case_name}: runs 2 and 3 replay");
    let want = (outputs(&walked, &first), outputs(&walked, &second));
    assert_ne!(want.0, want.1);
    assert_eq!(bits(&a), want.0, "{case_name}: run 1's held outputs changed");
    assert_eq!(bits(&b), want.1, "{case_name}: run 2's held outputs changed");
    assert_eq!(bits(&c), want.1, "{case_name}: run 3");
}
