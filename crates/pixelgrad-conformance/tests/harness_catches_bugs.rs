//! The suite must fail on a wrong backend, and say where. A wrapper around the fast CPU
//! backend injects one bug at a time; each family that covers it must report the family, the
//! case and the bad index.

use pixelgrad_conformance::families;
use pixelgrad_core::{Backend, BackendKind, Device, Op, ReduceOp, Result, Shape, Storage, UnaryOp};
use pixelgrad_cpu::CpuBackend;

#[derive(Clone, Copy)]
enum Bug {
    /// exp is off by 1e-3 relative.
    ExpOff,
    /// trans_b is ignored by matmul.
    MatmulIgnoresTransB,
    /// col2im drops the first element (only reached from im2col's backward).
    Col2ImDropsFirst,
    /// log-sum-exp is off by 1e-2 (absolute).
    LogSumExpOff,
    /// round_even rounds ties away from zero (`f32::round`), like a `round()` built-in that
    /// ignores the spec.
    RoundHalfAway,
}

struct Faulty {
    inner: CpuBackend,
    bug: Bug,
}

impl Faulty {
    fn patch(&self, s: Storage, n: usize, f: impl Fn(&mut Vec<f32>)) -> Result<Storage> {
        let mut v = self.inner.read(&s, n)?;
        f(&mut v);
        self.inner.upload(&v)
    }
}

impl Backend for Faulty {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }
    fn name(&self) -> String {
        "faulty-cpu".into()
    }
    fn upload(&self, data: &[f32]) -> Result<Storage> {
        self.inner.upload(data)
    }
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        self.inner.read(storage, len)
    }
    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        match (self.bug, op) {
            (Bug::ExpOff, Op::Unary(UnaryOp::Exp)) => {
                let s = self.inner.execute(op, inputs, shapes, out)?;
                self.patch(s, out.numel(), |v| v.iter_mut().for_each(|x| *x *= 1.001))
            }
            (Bug::MatmulIgnoresTransB, Op::MatMul { trans_a, trans_b: true }) => {
                if shapes[1].dims()[shapes[1].rank() - 1] == shapes[1].dims()[shapes[1].rank() - 2] {
                    self.inner.execute(&Op::MatMul { trans_a: *trans_a, trans_b: false }, inputs, shapes, out)
                } else {
                    self.inner.execute(op, inputs, shapes, out)
                }
            }
            (Bug::LogSumExpOff, Op::Reduce { op: ReduceOp::LogSumExp, .. }) => {
                let s = self.inner.execute(op, inputs, shapes, out)?;
                self.patch(s, out.numel(), |v| v.iter_mut().for_each(|x| *x += 0.01))
            }
            (Bug::RoundHalfAway, Op::Unary(UnaryOp::RoundEven)) => {
                let x = self.inner.read(inputs[0], out.numel())?;
                self.inner.upload(&x.iter().map(|v| v.round()).collect::<Vec<f32>>())
            }
            (Bug::Col2ImDropsFirst, Op::Col2Im { .. }) => {
                let s = self.inner.execute(op, inputs, shapes, out)?;
                self.patch(s, out.numel(), |v| v[0] = 0.0)
            }
            _ => self.inner.execute(op, inputs, shapes, out),
        }
    }
}

fn faulty(bug: Bug) -> Device {
    Device::new(Faulty { inner: CpuBackend::new(), bug })
}

#[test]
fn wrong_exp_is_reported_with_case_and_index() {
    let err = families::unary(&faulty(Bug::ExpOff)).unwrap_err();
    assert!(err.contains("unary/exp:") && err.contains("output[0] got"), "{err}");
    // exp feeds softmax too.
    assert!(families::composites(&faulty(Bug::ExpOff)).is_err());
    // ...but not families that never use it.
    families::matmul(&faulty(Bug::ExpOff)).unwrap();
}

#[test]
fn round_half_away_is_reported() {
    let err = families::unary(&faulty(Bug::RoundHalfAway)).unwrap_err();
    assert!(err.contains("unary/round_even_halves:") && err.contains("output[0] got"), "{err}");
    // The matmul family rounds only where it quantises (QTensor::quantize): just that fails.
    let err = families::matmul(&faulty(Bug::RoundHalfAway)).unwrap_err();
    assert!(err.lines().all(|l| l.starts_with("quant ")), "{err}");
}

#[test]
fn wrong_log_sum_exp_is_reported_and_spoils_training() {
    let err = families::reduce(&faulty(Bug::LogSumExpOff)).unwrap_err();
    assert!(err.contains("reduce/logsumexp"), "{err}");
    // The cross-entropy loss is log-softmax, x - logsumexp(x): the training run sees it.
    assert!(families::training_curve(&faulty(Bug::LogSumExpOff)).is_err());
    families::matmul(&faulty(Bug::LogSumExpOff)).unwrap();
}

#[test]
fn wrong_transpose_is_reported() {
    // Square b only, so shapes still agree and only values can tell.
    let err = families::matmul(&faulty(Bug::MatmulIgnoresTransB)).unwrap_err();
    assert!(err.contains("matmul/[6, 6]x[6, 6]^T: output[") && err.contains("^T:"), "{err}");
}

#[test]
fn wrong_gradient_kernel_is_reported() {
    let err = families::im2col(&faulty(Bug::Col2ImDropsFirst)).unwrap_err();
    assert!(err.contains("im2col/") && err.contains("grad of input 0[0]"), "{err}");
    // The forward of col2im itself is checked by its own family.
    let err = families::col2im(&faulty(Bug::Col2ImDropsFirst)).unwrap_err();
    assert!(err.contains("col2im/") && err.contains("output[0]"), "{err}");
}
