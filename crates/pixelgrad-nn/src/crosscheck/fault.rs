//! The test-only fault hook of the cross-check: a [`Backend`] wrapper that adds a constant to
//! the result of chosen primitives, as a wrong kernel would, so tests (and anyone doubting the
//! check) can see the check fail and name the tensor the bad kernel produced.

use std::cell::Cell;

use pixelgrad_core::{
    Backend, BackendKind, Caps, Counters, Device, Error, LocalFuture, Op, Result, Shape, Storage, StorageLayout, UnaryOp,
};

/// Which results to corrupt: every result of the primitive called `op` (or only its `nth`
/// result, counted from 0 over the wrapped device's life), shifted by `offset`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    /// A primitive's name ([`Op::name`], e.g. `matmul`, `reduce`) or, for elementwise ops, the
    /// function's (`sigmoid`, `tanh`, `add`, `mul`...).
    pub op: String,
    pub nth: Option<usize>,
    pub offset: f32,
}

impl Fault {
    /// Parses `OP`, `OP@N` or `OP@N+OFFSET` / `OP+OFFSET` (default offset 0.01), e.g.
    /// `sigmoid`, `matmul@3`, `add+0.5`.
    pub fn parse(spec: &str) -> Result<Fault> {
        let bad = |msg: String| Error::invalid("inject fault", msg);
        let (head, offset) = match spec.split_once('+') {
            Some((h, o)) => (h, o.trim().parse::<f32>().map_err(|_| bad(format!("offset '{o}' in '{spec}' is not a number")))?),
            None => (spec, 0.01),
        };
        let (op, nth) = match head.split_once('@') {
            Some((op, n)) => {
                (op, Some(n.trim().parse::<usize>().map_err(|_| bad(format!("'{n}' in '{spec}' is not an occurrence number")))?))
            }
            None => (head, None),
        };
        let op = op.trim().to_ascii_lowercase();
        if op.is_empty() || !offset.is_finite() {
            return Err(bad(format!("'{spec}': expected OP, OP@N or OP@N+OFFSET (e.g. sigmoid, matmul@3+0.5)")));
        }
        Ok(Fault { op, nth, offset })
    }
}

/// The name a [`Fault`] matches: the function of an elementwise op, else the primitive's.
pub fn op_label(op: &Op) -> String {
    let variant = |d: String| d.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or("").to_ascii_lowercase();
    match op {
        Op::Unary(u) => variant(format!("{u:?}")),
        Op::Binary(b) => variant(format!("{b:?}")),
        other => other.name().to_string(),
    }
}

/// A device whose backend is `inner`'s, except that the results chosen by `fault` come out
/// shifted (see the module docs). Storage is `inner`'s own, so tensors move freely between the
/// two devices' backends.
pub struct FaultyBackend {
    inner: Device,
    /// `inner`'s storage and convolution capabilities, taken when the wrapper is made.
    caps: Caps,
    fault: Fault,
    seen: Cell<usize>,
    fired: Cell<usize>,
}

impl FaultyBackend {
    pub fn new(inner: &Device, fault: Fault) -> Self {
        // Forwards what decides how tensors are stored and convolutions are run (so results
        // match `inner`'s), nothing that turns on other paths (f16 products, narrowing, the
        // precision check): the wrapped device runs the same kernels as the plain one.
        let c = inner.backend().caps();
        let caps = Caps { conv: c.conv, int8: c.int8, int8_storage: c.int8_storage, f16_storage: c.f16_storage, ..Caps::F32_ONLY };
        FaultyBackend { inner: inner.clone(), caps, fault, seen: Cell::new(0), fired: Cell::new(0) }
    }
    /// Results corrupted so far.
    pub fn fired(&self) -> usize {
        self.fired.get()
    }
}

/// `inner` with `fault` injected, as a [`Device`].
pub fn with_fault(inner: &Device, fault: Fault) -> Device {
    Device::new(FaultyBackend::new(inner, fault))
}

impl Backend for FaultyBackend {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn name(&self) -> String {
        self.inner.name()
    }
    fn upload(&self, data: &[f32]) -> Result<Storage> {
        self.inner.backend().upload(data)
    }
    fn upload_f64(&self, data: &[f64]) -> Result<Storage> {
        self.inner.backend().upload_f64(data)
    }
    fn caps(&self) -> &Caps {
        &self.caps
    }
    fn upload_int8(&self, data: &[u8], dtype: pixelgrad_core::kernel::DType) -> Result<Storage> {
        self.inner.backend().upload_int8(data, dtype)
    }
    fn upload_f16(&self, bits: &[u16]) -> Result<Storage> {
        self.inner.backend().upload_f16(bits)
    }
    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        let b = self.inner.backend();
        let result = b.execute(op, inputs, shapes, out)?;
        if op_label(op) != self.fault.op {
            return Ok(result);
        }
        let k = self.seen.get();
        self.seen.set(k + 1);
        if self.fault.nth.is_some_and(|n| n != k) {
            return Ok(result);
        }
        self.fired.set(self.fired.get() + 1);
        b.execute(&Op::Unary(UnaryOp::Affine { mul: 1.0, add: self.fault.offset }), &[&result], &[out], out)
    }
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        self.inner.backend().read(storage, len)
    }
    fn read_async<'a>(&'a self, storage: &'a Storage, len: usize) -> LocalFuture<'a, Result<Vec<f32>>> {
        self.inner.backend().read_async(storage, len)
    }
    fn read_f64(&self, storage: &Storage, len: usize) -> Result<Vec<f64>> {
        self.inner.backend().read_f64(storage, len)
    }
    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }
    fn counters(&self) -> Counters {
        self.inner.counters()
    }
    fn begin_step(&self, key: u64) -> Result<()> {
        self.inner.backend().begin_step(key)
    }
    fn end_step(&self) -> Result<()> {
        self.inner.backend().end_step()
    }
    fn drop_plans(&self) {
        self.inner.drop_plans()
    }
    fn describe_storage(&self, storage: &Storage, len: usize) -> Option<StorageLayout> {
        self.inner.backend().describe_storage(storage, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert_eq!(Fault::parse("sigmoid").unwrap(), Fault { op: "sigmoid".into(), nth: None, offset: 0.01 });
        assert_eq!(Fault::parse("MatMul@3+0.5").unwrap(), Fault { op: "matmul".into(), nth: Some(3), offset: 0.5 });
        assert!(Fault::parse("matmul@x").unwrap_err().to_string().contains("occurrence"));
        assert!(Fault::parse("+1").is_err());
    }

    #[test]
    fn labels_name_the_function() {
        assert_eq!(op_label(&Op::Unary(UnaryOp::Sigmoid)), "sigmoid");
        assert_eq!(op_label(&Op::Unary(UnaryOp::Affine { mul: 1.0, add: 0.0 })), "affine");
        assert_eq!(op_label(&Op::MatMul { trans_a: false, trans_b: true }), "matmul");
    }
}
