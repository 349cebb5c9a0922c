//! The kernels of the programs with loops (`pixelgrad_core::kernel::programs`: the window
//! family, gathers and scatters), each rendered from its one definition once per process.

use std::borrow::Cow;
use std::sync::OnceLock;

use pixelgrad_core::kernel::programs::KernelProgram;

use crate::pipelines::Kernel;

/// The kernel of `which`: its inputs bound from 1, the output after them, and the status word
/// after that when the program can report bad data.
pub(crate) fn program_kernel(which: KernelProgram) -> &'static Kernel {
    static KERNELS: [OnceLock<Kernel>; KernelProgram::ALL.len()] = [const { OnceLock::new() }; KernelProgram::ALL.len()];
    KERNELS[which.index()].get_or_init(|| {
        let p = which.program();
        Kernel {
            name: Cow::Borrowed(which.name()),
            source: Cow::Owned(crate::wgsl::program_source(&p)),
            inputs: p.inputs.len(),
            outputs: 1,
            overrides: &[],
            status: p.faults(),
        }
    })
}
