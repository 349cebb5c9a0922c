//! Every program with loops the GPU backends render, as one list: the window family
//! ([`super::windows`]), the column programs ([`super::columns`]), the convolution programs
//! ([`super::convolutions`]), the index programs
//! ([`super::indexing`]), the passes of the reductions ([`super::reductions`]) and the matrix
//! product ([`super::products`]). Backends enumerate
//! [`KernelProgram::ALL`] to register, warm up and validate them, so a new program is checked
//! by every backend's shader tests without being named there.

use super::columns::ColumnProgram;
use super::convolutions::ConvProgram;
use super::indexing::IndexProgram;
use super::products::ProductProgram;
use super::program::Program;
use super::reductions::ReduceProgram;
use super::windows::WindowProgram;

/// One program of the kernel IR with loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelProgram {
    Window(WindowProgram),
    Column(ColumnProgram),
    Conv(ConvProgram),
    Index(IndexProgram),
    Reduce(ReduceProgram),
    Product(ProductProgram),
}

const COUNT: usize = WindowProgram::ALL.len()
    + ColumnProgram::ALL.len()
    + ConvProgram::ALL.len()
    + IndexProgram::ALL.len()
    + ReduceProgram::ALL.len()
    + ProductProgram::ALL.len();

impl KernelProgram {
    pub const ALL: [KernelProgram; COUNT] = {
        let mut all = [KernelProgram::Index(IndexProgram::Gather); COUNT];
        let mut i = 0;
        let mut j = 0;
        while j < WindowProgram::ALL.len() {
            all[i] = KernelProgram::Window(WindowProgram::ALL[j]);
            i += 1;
            j += 1;
        }
        j = 0;
        while j < ColumnProgram::ALL.len() {
            all[i] = KernelProgram::Column(ColumnProgram::ALL[j]);
            i += 1;
            j += 1;
        }
        j = 0;
        while j < ConvProgram::ALL.len() {
            all[i] = KernelProgram::Conv(ConvProgram::ALL[j]);
            i += 1;
            j += 1;
        }
        j = 0;
        while j < IndexProgram::ALL.len() {
            all[i] = KernelProgram::Index(IndexProgram::ALL[j]);
            i += 1;
            j += 1;
        }
        j = 0;
        while j < ReduceProgram::ALL.len() {
            all[i] = KernelProgram::Reduce(ReduceProgram::ALL[j]);
            i += 1;
            j += 1;
        }
        j = 0;
        while j < ProductProgram::ALL.len() {
            all[i] = KernelProgram::Product(ProductProgram::ALL[j]);
            i += 1;
            j += 1;
        }
        all
    };

    /// The program's (and its GPU programs') name, unique among [`KernelProgram::ALL`].
    pub fn name(self) -> &'static str {
        match self {
            KernelProgram::Window(w) => w.name(),
            KernelProgram::Column(c) => c.name(),
            KernelProgram::Conv(c) => c.name(),
            KernelProgram::Index(x) => x.name(),
            KernelProgram::Reduce(r) => r.name(),
            KernelProgram::Product(p) => p.name(),
        }
    }

    /// The program named `name`.
    pub fn by_name(name: &str) -> Option<KernelProgram> {
        KernelProgram::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Its position in [`KernelProgram::ALL`] (for per-program caches).
    pub fn index(self) -> usize {
        KernelProgram::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }

    pub fn program(self) -> Program {
        match self {
            KernelProgram::Window(w) => w.program(),
            KernelProgram::Column(c) => c.program(),
            KernelProgram::Conv(c) => c.program(),
            KernelProgram::Index(x) => x.program(),
            KernelProgram::Reduce(r) => r.program(),
            KernelProgram::Product(p) => p.program(),
        }
    }
}
