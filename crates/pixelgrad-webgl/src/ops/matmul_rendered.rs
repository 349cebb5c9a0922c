//! [`pixelgrad_core::Op::MatMul`] as the program rendered from its one definition
//! (`pixelgrad_core::kernel::products`): one output per fragment, in both modes, its k loop
//! reading both operands where they lie, through their strides (no repacking pass, no
//! 4-target kernel). Where it is launched instead of the hand-written kernels
//! ([`crate::MatMulKernel`]) is [`chosen`].

use std::rc::Rc;

use pixelgrad_core::kernel::products::ProductProgram;
use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::Result;

use super::matmul_io::{with_strides, View};
use crate::context::Shared;
use crate::launch::Pass;
use crate::options::MatMulKernel;
use crate::texture::GlTensor;

/// Whether a matmul is drawn by the rendered program: always in the `webgl1` mode (the
/// hand-written kernels compute a texel per fragment, which GLSL ES 1.00 programs do not; its
/// former ES 1.00 kernel was this program written by hand, and measured the same), and on
/// WebGL2 when [`crate::WebGlOptions::matmul`] forces it: there the hand-written kernels
/// measured 6x to 56x faster on llvmpipe at every shape the benches use
/// (`bench/notes/2026-12-07-webgl-matmul-from-one-definition.md`).
pub(super) fn chosen(sh: &Shared) -> bool {
    !sh.features.texel_programs || sh.matmul == MatMulKernel::Rendered
}

/// `batch` products `[M, K] x [K, N]` of the views `va` and `vb` (a batch of 1 broadcast:
/// stride 0) into a new `[batch, M, N]` tensor of `len` elements. In the `webgl1` mode K is
/// checked against the loop's constant bound first.
pub(super) fn product(sh: &Rc<Shared>, a: &GlTensor, b: &GlTensor, va: View, vb: View, len: usize) -> Result<GlTensor> {
    let which = ProductProgram::MatMul;
    let (m, k, n) = (va.rows, va.cols, vb.cols);
    super::gl1::loop_bound(sh, "matmul", "webgl1 matmul K (a GLSL ES 1.00 constant loop bound)", k, crate::gl1::MAX_LOOP)?;
    let name = KernelProgram::Product(which).name();
    // The pass is the op's (its errors and pass-log entries name `matmul`).
    let pass = Pass::new("matmul", name, 0).input("u_a", a).input("u_b", b).int("u_m", m).int("u_n", n).int("u_k", k);
    sh.run(with_strides(pass, &va, &vb), len)
}
