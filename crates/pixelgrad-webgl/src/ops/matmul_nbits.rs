//! [`pixelgrad_core::Op::MatMulNBits`] on WebGL2: the product with block-quantised weights
//! read from the packed bytes as uploaded, dequantised in the shader
//! (`shaders/matmul_nbits.glsl`), one fragment pass for both forms (`trans` false: `a [M, k]`
//! -> `[M, N]`; `trans`: `a [M, N]` -> `[M, k]`, the gradient).
//!
//! The packed weight is the backend's existing u8 storage (`Tensor::from_u8`): one byte per
//! element in an `RGBA8UI` texture, 4 per texel like every tensor, read with integer fetches
//! (`usampler2D`). So the device holds exactly the file's bytes (a quarter of an f32 copy
//! for 8-bit, an eighth for 4-bit), each byte exact, with no new texture format, upload
//! path or readback to add: `widen` already reads this storage back. Bytes carried in float
//! texels would also serve WebGL1, but the `webgl1` mode's shaders index with floats under
//! constant loop bounds and read its byte textures through normalised samplers; that is a
//! second kernel, not this source, so the `webgl1` mode refuses the op with a typed error
//! (the ONNX importer dequantises once there: `caps.int8` is false).

use std::rc::Rc;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Error, Op, Result, Shape};

use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// Config bits of `shaders/matmul_nbits.glsl` (its 8 configs are counted in `dialect.rs`):
/// 4-bit values (else 8-bit), the transposed form, and the aligned fast path of the plain
/// form (K a multiple of 4 and blocks of a multiple of 8 values, as every ONNX block size:
/// blocks start on texels, read a texel at a time). On llvmpipe it took a 4-bit 1x1024x1024
/// product from 40.6 ms to 8.3 ms (f32 matmul of the dequantised weight: 4.9 ms) and a
/// 16x1024x1024 one from 381 ms to 60 ms (f32: 11 ms); `tests/matmul_nbits.rs` `timing`.
const FOUR_BIT: u32 = 1;
const TRANS: u32 = 2;
const ALIGNED: u32 = 4;

/// `a` (f32) times the packed weight `q` (u8) with `scales` and `zeros` (f32), shapes passed
/// the shared check.
pub(crate) fn matmul_nbits(sh: &Rc<Shared>, op: &Op, ts: &[&GlTensor], shapes: &[&Shape], out: &Shape) -> Result<GlTensor> {
    let name = "matmul_nbits";
    let &Op::MatMulNBits { bits, block, k, trans } = op else {
        return Err(sh.err(name, "internal: not matmul_nbits"));
    };
    if !sh.features.integer_textures {
        return Err(sh.err(
            name,
            "packed block-quantised weights need integer textures (RGBA8UI, usampler2D), which WebGL1 does not have \
             (caps.int8 is false); dequantise them and use matmul",
        ));
    }
    let [a, q, s, z] = ts else {
        return Err(sh.err(name, format!("expects 4 inputs, got {}", ts.len())));
    };
    let want = [DType::F32, DType::U8, DType::F32, DType::F32];
    if let Some(i) = (0..4).find(|&i| ts[i].dtype != want[i]) {
        return Err(Error::Shape {
            op: name,
            shapes: shapes.iter().map(|s| s.0.clone()).collect(),
            backend: sh.name.clone(),
            msg: format!("input {i} has {} storage; it must be {}", ts[i].dtype, want[i]),
        });
    }
    let n = shapes[1].dims()[0];
    let row = shapes[1].dims()[1];
    let k_blocks = k.div_ceil(block.max(1));
    // Element indices are ints in the shader.
    let biggest = [a.len, q.len, s.len, out.numel()].into_iter().max().unwrap_or(0);
    if biggest > i32::MAX as usize {
        return Err(Error::Limit {
            op: name,
            backend: sh.name.clone(),
            limit_name: "elements per tensor (32-bit int indices)",
            limit: i32::MAX as u64,
            requested: biggest as u64,
        });
    }
    let aligned = !trans && k % 4 == 0 && block % 8 == 0;
    let config = if bits == 4 { FOUR_BIT } else { 0 } | if trans { TRANS } else { 0 } | if aligned { ALIGNED } else { 0 };
    let pass = Pass::new(name, "matmul_nbits", config)
        .input("u_a", a)
        .input("u_q", q)
        .input("u_s", s)
        .input("u_z", z)
        .int("u_n", n)
        .int("u_k", k)
        .int("u_block", block)
        .int("u_kb", k_blocks)
        .int("u_row", row);
    sh.run(pass, out.numel())
}
