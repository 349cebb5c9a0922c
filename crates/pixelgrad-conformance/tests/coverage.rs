//! Every primitive is exercised by the suite: the families run on a backend that records the
//! ops it executes, and every name in `Op::NAMES` must appear. A new primitive without a
//! conformance case fails here, by name.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use pixelgrad_conformance::{block_on_ready, families::awaitable, Read};
use pixelgrad_core::{Backend, BackendKind, Caps, Device, Op, Result, Shape, Storage};
use pixelgrad_cpu::CpuBackend;

/// The f32 CPU backend, noting the name of every op it runs.
struct Recording {
    inner: CpuBackend,
    seen: Rc<RefCell<BTreeSet<&'static str>>>,
}

impl Backend for Recording {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn name(&self) -> String {
        self.inner.name()
    }
    fn upload(&self, data: &[f32]) -> Result<Storage> {
        self.inner.upload(data)
    }
    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        self.seen.borrow_mut().insert(op.name());
        self.inner.execute(op, inputs, shapes, out)
    }
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        self.inner.read(storage, len)
    }
    fn caps(&self) -> &Caps {
        self.inner.caps()
    }
    fn upload_int8(&self, data: &[u8], dtype: pixelgrad_core::kernel::DType) -> Result<Storage> {
        self.inner.upload_int8(data, dtype)
    }
    fn upload_f16(&self, bits: &[u16]) -> Result<Storage> {
        self.inner.upload_f16(bits)
    }
}

macro_rules! run_all {
    (; $($family:ident),* $(,)?) => {{
        let seen = Rc::new(RefCell::new(BTreeSet::new()));
        $(
            let dev = Device::new(Recording { inner: CpuBackend::new(), seen: seen.clone() });
            match block_on_ready(awaitable::$family(&dev, Read::Blocking)) {
                Some(Ok(())) => {}
                Some(Err(e)) => panic!("{}: {e}", stringify!($family)),
                None => panic!("{} did not complete", stringify!($family)),
            }
        )*
        seen
    }};
}

#[test]
fn every_primitive_has_conformance_cases() {
    let seen = pixelgrad_conformance::__with_family_list!([run_all]);
    let seen = seen.borrow();
    // Reshape never reaches a backend: core shares the storage (no data moves).
    let missing: Vec<&str> = Op::NAMES.iter().copied().filter(|n| *n != "reshape" && !seen.contains(n)).collect();
    assert!(missing.is_empty(), "primitives no conformance family runs: {missing:?} (add cases in pixelgrad-conformance/src/families)");
}
