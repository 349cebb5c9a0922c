//! The fusion layer against a small host device that counts what it runs: values are
//! computed once, chains stop at generations, a settle runs matmuls last with their
//! epilogue, and a failed run leaves the value pending.

use std::cell::{Cell, RefCell};

use super::defer::{defer_map, defer_matmul};
use super::device::{Epilogue, FusionDevice, Limits, ReduceAt, ReduceInput};
use super::realise::realise;
use super::settle::settle;
use super::state::FusionState;
use super::storage::{MatmulWork, ReduceWork, Storage};
use crate::kernel::eval::eval_one;
use crate::kernel::fuse::{elementwise, Pending};
use crate::op::{BinaryOp, Op, ReduceOp, UnaryOp};
use crate::shape::Shape;
use crate::{Error, Result};

/// Host memory.
struct Mem(Vec<f32>);

#[derive(Default)]
struct Host {
    /// What ran, in order: `map <label>`, `matmul`, `matmul+<label>`.
    log: RefCell<Vec<String>>,
    /// Fail the next run.
    fail: Cell<bool>,
}

/// `p` at element `i` (leaves of its shape or one element).
fn eval(p: &Pending<Storage>, leaves: &[&[f32]], i: usize) -> f32 {
    let xs: Vec<f32> = leaves.iter().map(|l| if l.len() == 1 { l[0] } else { l[i] }).collect();
    eval_one(&p.launch.kernel, &xs, &p.launch.params).unwrap()
}

impl FusionDevice for Host {
    type Memory = Mem;
    fn backend_name(&self) -> String {
        "host".into()
    }
    fn memory<'a>(&self, op: &'static str, s: &'a Storage) -> Result<&'a Mem> {
        s.downcast::<Mem>().ok_or_else(|| Error::invalid(op, "not host memory"))
    }
    fn len(&self, m: &Mem) -> usize {
        m.0.len()
    }
    fn check_size(&self, _: &'static str, _: &Shape) -> Result<()> {
        Ok(())
    }
    fn limits(&self) -> Limits {
        Limits {
            epilogue_nodes: 16,
            epilogue_inputs: 3,
            epilogue_params: 8,
            group: false,
            defer_summed_matmul: false,
            prologue_yields_to_epilogue: false,
            leaves_in_memory: false,
        }
    }
    fn fits_map(&self, p: &Pending<Storage>) -> bool {
        p.nodes() <= 64
    }
    fn fits_prologue(&self, _: &Pending<Storage>) -> bool {
        false
    }
    fn takes_epilogue(&self, _: &MatmulWork, _: &Shape, _: &Pending<Storage>, _: usize) -> bool {
        true
    }
    fn defers_matmul(&self, _: &Shape) -> bool {
        true
    }
    fn defers_reduce(&self, _: ReduceOp, _: bool) -> bool {
        false
    }
    fn reduce_takes_epilogue(&self, _: &ReduceWork) -> bool {
        false
    }
    fn group_key(&self, _: &Pending<Storage>) -> Result<Option<(u32, u32)>> {
        Ok(None)
    }
    fn group_fits(&self, _: &[&Pending<Storage>], _: &Pending<Storage>) -> bool {
        false
    }
    fn run_map(&self, p: &Pending<Storage>, leaves: &[&Mem]) -> Result<Storage> {
        if self.fail.replace(false) {
            return Err(Error::invalid("fused", "failed on purpose"));
        }
        self.log.borrow_mut().push(format!("map {}", p.label()));
        let ls: Vec<&[f32]> = leaves.iter().map(|m| m.0.as_slice()).collect();
        Ok(Storage::new(Mem((0..p.shape.numel()).map(|i| eval(p, &ls, i)).collect())))
    }
    fn run_matmul(&self, mm: &MatmulWork, a: &Mem, b: &Mem, out: &Shape, epi: Option<&Epilogue<'_, Mem>>) -> Result<(Mem, Option<Mem>)> {
        // [m, k] x [k, n], no transposes.
        let (m, k, n) = (mm.shapes[0].dims()[0], mm.shapes[0].dims()[1], mm.shapes[1].dims()[1]);
        let c: Vec<f32> = (0..m * n).map(|i| (0..k).map(|j| a.0[i / n * k + j] * b.0[j * n + i % n]).sum()).collect();
        assert_eq!(c.len(), out.numel());
        let Some(e) = epi else {
            self.log.borrow_mut().push("matmul".into());
            return Ok((Mem(c), None));
        };
        self.log.borrow_mut().push(format!("matmul+{}", e.p.label()));
        let mut ls: Vec<&[f32]> = e.leaves.iter().map(|m| m.0.as_slice()).collect();
        ls.insert(e.given, &c);
        let r = (0..c.len()).map(|i| eval(e.p, &ls, i)).collect();
        Ok((Mem(c), Some(Mem(r))))
    }
    fn run_reduce(
        &self,
        _: ReduceOp,
        _: ReduceInput<'_, Mem>,
        _: ReduceAt<'_>,
        _: &Shape,
        _: Option<&Epilogue<'_, Mem>>,
    ) -> Result<(Mem, Option<Mem>)> {
        Err(Error::invalid("reduce", "not deferred here"))
    }
    fn run_group(&self, _: &[&Pending<Storage>]) -> Result<Vec<Mem>> {
        Err(Error::invalid("fused", "not grouped here"))
    }
}

fn s(d: &[usize]) -> Shape {
    Shape::from(d)
}

fn op(d: &Host, st: &FusionState, op: Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Storage {
    let (launch, name) = elementwise(&op).unwrap().unwrap();
    defer_map(d, st, &op, &launch, name, inputs, shapes, out).unwrap()
}

fn values(d: &Host, x: &Storage) -> Vec<f32> {
    realise(d, "read", x).unwrap().0.clone()
}

#[test]
fn a_chain_runs_once_as_one_map_and_a_failure_leaves_it_pending() {
    let (d, st) = (Host::default(), FusionState::new());
    let x = Storage::new(Mem(vec![-1.0, 2.0]));
    let sh = s(&[2]);
    let y = op(&d, &st, Op::Binary(BinaryOp::Add), &[&x, &x], &[&sh, &sh], &sh);
    let z = op(&d, &st, Op::Unary(UnaryOp::MaxScalar(0.0)), &[&y], &[&sh], &sh);
    assert!(y.as_pending().is_some() && z.downcast::<Mem>().is_none(), "pending values are not memory");
    d.fail.set(true);
    assert!(realise(&d, "read", &z).is_err());
    assert!(z.as_pending().unwrap().map_pending().is_some(), "still pending after a failure");
    assert_eq!(values(&d, &z), vec![0.0, 4.0]);
    assert_eq!(values(&d, &z), vec![0.0, 4.0]);
    assert_eq!(*d.log.borrow(), vec!["map add+max_scalar"], "one launch, run once");
    assert!(z.as_pending().unwrap().map_pending().is_none(), "the computation (and its leaves) dropped once run");
}

#[test]
fn chains_stop_at_a_new_generation() {
    let (d, st) = (Host::default(), FusionState::new());
    let x = Storage::new(Mem(vec![1.0, 2.0]));
    let sh = s(&[2]);
    let y = op(&d, &st, Op::Unary(UnaryOp::Neg), &[&x], &[&sh], &sh);
    st.new_generation();
    let z = op(&d, &st, Op::Unary(UnaryOp::Neg), &[&y], &[&sh], &sh);
    assert_eq!(values(&d, &z), vec![1.0, 2.0]);
    assert_eq!(*d.log.borrow(), vec!["map neg", "map neg"], "the older result is read as an input");
}

#[test]
fn a_settle_runs_matmuls_last_with_their_epilogue() {
    let (d, st) = (Host::default(), FusionState::new());
    let a = Storage::new(Mem(vec![1.0, 2.0, 3.0, 4.0]));
    let b = Storage::new(Mem(vec![1.0, -1.0, 0.5, 2.0]));
    let sh = s(&[2, 2]);
    let mm = Op::MatMul { trans_a: false, trans_b: false };
    let c = defer_matmul(&d, &st, &mm, &[&a, &b], &[&sh, &sh], &sh).unwrap().unwrap();
    let one = s(&[1]);
    let bias = Storage::new(Mem(vec![-3.0]));
    let y = op(&d, &st, Op::Binary(BinaryOp::Add), &[&c, &bias], &[&sh, &one], &sh);
    let z = op(&d, &st, Op::Unary(UnaryOp::MaxScalar(0.0)), &[&y], &[&sh], &sh);
    drop(y);
    settle(&d, &st).unwrap();
    assert_eq!(*d.log.borrow(), vec!["matmul+add+max_scalar"], "the matmul and its epilogue are one launch");
    assert_eq!(values(&d, &c), vec![2.0, 3.0, 5.0, 5.0]);
    assert_eq!(values(&d, &z), vec![0.0, 0.0, 2.0, 2.0]);
    assert_eq!(d.log.borrow().len(), 1, "reading settled values runs nothing");
}
