//! pixelgrad-cpu: the CPU backend, in two modes sharing one set of kernels.
//!
//! - [`CpuBackend::new`]: the fast path. `f32` storage, matmul through `matrixmultiply`
//!   natively (SIMD, cache-blocked) and through pixelgrad's own wasm SIMD GEMM in the browser
//!   (`sgemm`: packed 4x8 tiles on `v128` lanes), depthwise convolution on 4-lane vectors
//!   (`depthwise`), large elementwise / window / reduction kernels split across rayon threads
//!   natively; single-threaded on `wasm32`.
//! - [`CpuBackend::reference`]: the numerical reference. `f64` storage, plain loops, no
//!   threads; [`Backend::upload_f64`] and [`Backend::read_f64`] are exact. Conformance tests
//!   compare every backend with it and check gradients by finite differences on it.
//!
//! Kernels are written once, generic over [`Element`] (`f32` / `f64`), one file per op family:
//! `elementwise`, `reduce`, `matmul`, `window` (im2col / col2im), `index` (gather /
//! scatter-add), `movement` (permute / expand / slice / pad / concat), `random`.
//!
//! ```
//! use pixelgrad_core::{Device, Tensor};
//! use pixelgrad_cpu::CpuBackend;
//!
//! # fn main() -> pixelgrad_core::Result<()> {
//! let dev = Device::new(CpuBackend::new());
//! let a = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0], [2, 2])?;
//! let b = Tensor::from_vec(&dev, &[1.0, 0.0, 0.0, 1.0], [2, 2])?;
//! assert_eq!(a.matmul(&b)?.to_vec()?, vec![1.0, 2.0, 3.0, 4.0]);
//!
//! // The f64 reference keeps double precision end to end.
//! let r = Device::new(CpuBackend::reference());
//! let x = Tensor::from_f64(&r, &[0.1, 0.2], [2])?;
//! assert_eq!(x.sum_all()?.to_vec_f64()?, vec![0.1 + 0.2]);
//! # Ok(())
//! # }
//! ```

use std::cell::Cell;
use std::rc::Rc;

use pixelgrad_core::{Backend, BackendKind, Counters, Error, Op, Result, Shape, Storage};

mod depthwise;
pub mod element;
mod elementwise;
mod index;
pub mod kernels;
mod matmul;
mod movement;
mod par;
mod random;
mod reduce;
// Natively only its tests call it (the backend uses matrixmultiply there).
#[cfg_attr(not(all(target_arch = "wasm32", target_feature = "simd128")), allow(dead_code))]
mod sgemm;
mod simd;
mod window;

pub use element::Element;

/// Host memory of one tensor: `f32` on the fast path, `f64` on the reference.
#[derive(Debug)]
pub enum CpuStorage {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl CpuStorage {
    fn bytes(&self) -> u64 {
        match self {
            CpuStorage::F32(v) => (v.len() * 4) as u64,
            CpuStorage::F64(v) => (v.len() * 8) as u64,
        }
    }
}

/// What a CPU [`Storage`] holds: the data plus a handle on the backend's counters, so that
/// dropping the last tensor using it is reflected in `bytes_in_use`.
#[derive(Debug)]
pub struct CpuBuffer {
    data: CpuStorage,
    counters: Rc<Cell<Counters>>,
}

impl CpuBuffer {
    /// The elements.
    pub fn data(&self) -> &CpuStorage {
        &self.data
    }
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        let mut c = self.counters.get();
        c.bytes_in_use = c.bytes_in_use.saturating_sub(self.data.bytes());
        self.counters.set(c);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Fast,
    Reference,
}

/// The CPU backend; see the crate docs for its two modes.
#[derive(Debug)]
pub struct CpuBackend {
    mode: Mode,
    counters: Rc<Cell<Counters>>,
}

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuBackend {
    /// The fast `f32` backend (multi-threaded natively).
    pub fn new() -> Self {
        CpuBackend { mode: Mode::Fast, counters: Rc::new(Cell::new(Counters::default())) }
    }

    /// The `f64` plain-loop reference backend.
    pub fn reference() -> Self {
        CpuBackend { mode: Mode::Reference, counters: Rc::new(Cell::new(Counters::default())) }
    }

    /// True for [`CpuBackend::reference`].
    pub fn is_reference(&self) -> bool {
        self.mode == Mode::Reference
    }

    fn bump(&self, f: impl FnOnce(&mut Counters)) {
        let mut c = self.counters.get();
        f(&mut c);
        self.counters.set(c);
    }

    fn mine<'a>(&self, op: &'static str, s: &'a Storage) -> Result<&'a CpuStorage> {
        s.downcast::<CpuBuffer>().map(|b| &b.data).ok_or_else(|| Error::backend(op, self.name(), "storage belongs to another backend"))
    }

    fn wrap(&self, data: CpuStorage) -> Storage {
        let bytes = data.bytes();
        self.bump(|c| {
            c.allocations += 1;
            c.bytes_in_use += bytes;
        });
        Storage::new(CpuBuffer { data, counters: self.counters.clone() })
    }

    /// Runs `op` on storages of element type `T`, pulled out by `get`.
    fn run_typed<T: Element>(
        &self,
        op: &Op,
        inputs: &[&Storage],
        shapes: &[&Shape],
        out: &Shape,
        get: impl Fn(&CpuStorage) -> Option<&Vec<T>>,
    ) -> Result<Vec<T>> {
        let name = self.name();
        let mut xs = Vec::with_capacity(inputs.len());
        for s in inputs {
            let v = get(self.mine(op.name(), s)?)
                .ok_or_else(|| Error::backend(op.name(), name.clone(), "storage has the other precision (fast vs reference)"))?;
            xs.push(v.as_slice());
        }
        kernels::run::<T>(&name, op, &xs, shapes, out)
    }
}

fn as_f32(s: &CpuStorage) -> Option<&Vec<f32>> {
    match s {
        CpuStorage::F32(v) => Some(v),
        CpuStorage::F64(_) => None,
    }
}

fn as_f64(s: &CpuStorage) -> Option<&Vec<f64>> {
    match s {
        CpuStorage::F64(v) => Some(v),
        CpuStorage::F32(_) => None,
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn name(&self) -> String {
        match self.mode {
            Mode::Fast => "cpu".into(),
            Mode::Reference => "cpu-f64-reference".into(),
        }
    }

    fn upload(&self, data: &[f32]) -> Result<Storage> {
        Ok(match self.mode {
            Mode::Fast => self.wrap(CpuStorage::F32(data.to_vec())),
            Mode::Reference => self.wrap(CpuStorage::F64(data.iter().map(|&v| v as f64).collect())),
        })
    }

    fn upload_f64(&self, data: &[f64]) -> Result<Storage> {
        Ok(match self.mode {
            Mode::Fast => self.wrap(CpuStorage::F32(data.iter().map(|&v| v as f32).collect())),
            Mode::Reference => self.wrap(CpuStorage::F64(data.to_vec())),
        })
    }

    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        if let Op::Reshape(_) = op {
            if let Some(s) = inputs.first() {
                return Ok((*s).clone());
            }
        }
        self.bump(|c| c.launches += 1);
        Ok(match self.mode {
            Mode::Fast => self.wrap(CpuStorage::F32(self.run_typed(op, inputs, shapes, out, as_f32)?)),
            Mode::Reference => self.wrap(CpuStorage::F64(self.run_typed(op, inputs, shapes, out, as_f64)?)),
        })
    }

    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        self.bump(|c| c.readbacks += 1);
        let v: Vec<f32> = match self.mine("read", storage)? {
            CpuStorage::F32(v) => v.iter().take(len).copied().collect(),
            CpuStorage::F64(v) => v.iter().take(len).map(|&x| x as f32).collect(),
        };
        if v.len() != len {
            return Err(Error::backend("read", self.name(), format!("asked for {len} elements, storage holds {}", v.len())));
        }
        Ok(v)
    }

    fn read_f64(&self, storage: &Storage, len: usize) -> Result<Vec<f64>> {
        self.bump(|c| c.readbacks += 1);
        let v: Vec<f64> = match self.mine("read", storage)? {
            CpuStorage::F32(v) => v.iter().take(len).map(|&x| x as f64).collect(),
            CpuStorage::F64(v) => v.iter().take(len).copied().collect(),
        };
        if v.len() != len {
            return Err(Error::backend("read", self.name(), format!("asked for {len} elements, storage holds {}", v.len())));
        }
        Ok(v)
    }

    fn counters(&self) -> Counters {
        self.counters.get()
    }

    fn describe_storage(&self, storage: &Storage, len: usize) -> Option<pixelgrad_core::StorageLayout> {
        let data = self.mine("describe_storage", storage).ok()?;
        let (n, format) = match data {
            CpuStorage::F32(v) => (v.len() as u64, "f32"),
            CpuStorage::F64(v) => (v.len() as u64, "f64"),
        };
        Some(pixelgrad_core::StorageLayout {
            container: "host",
            width: n,
            height: 1,
            format: format.into(),
            used: (len as u64).min(n),
            allocated: n,
            layout: "row-major, contiguous".into(),
            bytes: data.bytes(),
        })
    }
}
