//! The ops on narrow storage (WebGL2 only): [`widen`] (8-bit or f16 to f32), [`matmul_i8`]
//! (the exact integer matmul of 8-bit weights), [`narrow_f16`] (f32 to f16) and [`narrow8`]
//! (f32 to i8 or u8), the last two drawn into integer textures, each one fragment pass
//! (`texture.rs` documents the formats).

use std::rc::Rc;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Error, Result, Shape};

use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;
use crate::TexelFormat;

/// A typed error for an input whose storage type the op does not take.
fn type_err(sh: &Shared, op: &'static str, shapes: &[&Shape], i: usize, d: DType, want: &str) -> Error {
    Error::Shape {
        op,
        shapes: shapes.iter().map(|s| s.0.clone()).collect(),
        backend: sh.name.clone(),
        msg: format!("input {i} has {d} storage; it must be {want}"),
    }
}

/// The `webgl1` mode stores only 8-bit tensors (in byte textures) and only widens them, so
/// every other op here cannot run there.
fn check_mode(sh: &Shared, op: &'static str, dtype: DType) -> Result<()> {
    let widens_bytes = op == "widen" && matches!(dtype, DType::I8 | DType::U8);
    if !(sh.features.integer_textures || widens_bytes) {
        return Err(crate::legacy::no_narrow(op, &sh.name, dtype));
    }
    Ok(())
}

/// The first `len` elements of narrow `x` as a new f32 tensor: one elementwise pass, integer
/// fetches, exact (f16 decoded from its bits); in the `webgl1` mode 8-bit values from byte
/// textures (the `PG_ES100` section of `shaders/widen.glsl`).
pub(crate) fn widen(sh: &Rc<Shared>, x: &GlTensor, len: usize) -> Result<GlTensor> {
    if len > x.len {
        return Err(sh.err("widen", format!("asked for {len} elements of a tensor of {}", x.len)));
    }
    let config = match x.dtype {
        DType::I8 => 0,
        DType::U8 => 1,
        DType::F16 => 2,
        other => return Err(sh.err("widen", format!("internal: widen of {other} storage"))),
    };
    check_mode(sh, "widen", x.dtype)?;
    sh.run(Pass::new("widen", "widen", config).input("u_x", x), len)
}

/// [`pixelgrad_core::Op::Widen`] after the shared shape check.
pub(crate) fn widen_op(sh: &Rc<Shared>, x: &GlTensor, shapes: &[&Shape], out: &Shape) -> Result<GlTensor> {
    if x.dtype == DType::F32 {
        return Err(type_err(sh, "widen", shapes, 0, x.dtype, "i8, u8 or f16"));
    }
    widen(sh, x, out.numel())
}

/// `a` (8-bit, `[M, K]` or `[G, M, K]`) times `b` (f32 whole numbers, `[K, N]`, `[G, K, N]`
/// or `[B, K, N]`) into a new f32 tensor; shapes passed the shared check.
pub(crate) fn matmul_i8(sh: &Rc<Shared>, a: &GlTensor, b: &GlTensor, shapes: &[&Shape], out: &Shape) -> Result<GlTensor> {
    let op = "matmul_i8";
    let signed = match a.dtype {
        DType::I8 => true,
        DType::U8 => false,
        other => return Err(type_err(sh, op, shapes, 0, other, "8-bit (i8 or u8)")),
    };
    if b.dtype != DType::F32 {
        return Err(type_err(sh, op, shapes, 1, b.dtype, "f32"));
    }
    check_mode(sh, op, a.dtype)?;
    let (sa, sb, od) = (shapes[0].dims(), shapes[1].dims(), out.dims());
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let n = od[od.len() - 1];
    let batch = if od.len() == 3 { od[0] } else { 1 };
    // The shader takes N a multiple of 4 (each fragment's 4 outputs in one row): otherwise b's
    // columns are padded with zeros (which add nothing) and the extra output columns dropped.
    let n4 = n.div_ceil(4) * 4;
    let padded_b;
    let b = if n4 == n {
        b
    } else {
        let mut dims = sb.to_vec();
        *dims.last_mut().unwrap_or(&mut 0) = n4;
        let before = vec![0; sb.len()];
        padded_b = super::layout::pad(sh, b, shapes[1], &before, &Shape(dims))?;
        &padded_b
    };
    let a_stride = if sa.len() == 3 && sa[0] > 1 { m * k } else { 0 };
    let b_stride = if sb.len() == 3 && sb[0] > 1 { k * n4 } else { 0 };
    // Element indices are ints in the shader.
    let biggest = [a.len, b.len, batch * m * n4].into_iter().max().unwrap_or(0);
    if biggest > i32::MAX as usize {
        return Err(Error::Limit {
            op,
            backend: sh.name.clone(),
            limit_name: "elements per tensor (32-bit int indices)",
            limit: i32::MAX as u64,
            requested: biggest as u64,
        });
    }
    let config = u32::from(!signed) | (u32::from(k % 4 == 0) << 1);
    let pass = Pass::new(op, "matmul_i8", config)
        .input("u_a", a)
        .input("u_b", b)
        .int("u_m", m.max(1))
        .int("u_n", n4.max(4))
        .int("u_k", k)
        .int("u_a_stride", a_stride)
        .int("u_b_stride", b_stride);
    let res = sh.run(pass, batch * m * n4)?;
    if n4 == n {
        return Ok(res);
    }
    let mut wide = od.to_vec();
    *wide.last_mut().unwrap_or(&mut 0) = n4;
    super::layout::slice(sh, &res, &Shape(wide), &vec![0; od.len()], out)
}

/// Whether [`narrow_f16`] runs on this context: WebGL2 (the `webgl1` mode has no integer
/// textures) with true f32 tensors. In the `RGBA16F` fallback every f32 tensor already holds
/// half-precision values in 8 bytes a texel, as many as an f16 copy's `RGBA16UI`: narrowing
/// would save nothing and mixed-precision training there keeps its f32 path.
pub(crate) fn narrow_f16_available(sh: &Shared) -> bool {
    sh.features.integer_textures && sh.format == TexelFormat::Rgba32F
}

/// [`pixelgrad_core::Op::NarrowF16`] after the shared shape check: `x` (f32) rounded to half
/// precision into a new f16 tensor (`RGBA16UI` bit patterns), one pass, integer operations on
/// the f32 bits only (bit for bit the host's f32 -> f16: nearest even, ±inf past 65504, f16
/// subnormals, NaN stays NaN). Fails with a typed error where [`narrow_f16_available`] is
/// false.
pub(crate) fn narrow_f16(sh: &Rc<Shared>, x: &GlTensor, shapes: &[&Shape], out: &Shape) -> Result<GlTensor> {
    let op = "narrow_f16";
    if x.dtype != DType::F32 {
        return Err(type_err(sh, op, shapes, 0, x.dtype, "f32"));
    }
    check_mode(sh, op, DType::F16)?;
    if !narrow_f16_available(sh) {
        return Err(sh.err(
            op,
            format!(
                "f16 results need true f32 tensors; this context stores them in {} (half precision already), \
                 so narrow_f16 is not offered (caps.narrow_f16 is false)",
                sh.format.as_str()
            ),
        ));
    }
    let n = out.numel();
    sh.run_typed(Pass::new(op, "narrow_f16", 0).input("u_x", x), n, DType::F16)
}

/// [`pixelgrad_core::Op::Narrow8`] after the shared shape check: `x` (f32) rounded (ties to
/// even) and saturated into a new 8-bit tensor (`RGBA8I` when `signed`, `RGBA8UI`
/// otherwise), one pass (`shaders/narrow8.glsl`). In the `RGBA16F` fallback `x` holds halves,
/// which keep every whole number of the 8-bit ranges exactly.
pub(crate) fn narrow8(sh: &Rc<Shared>, signed: bool, x: &GlTensor, shapes: &[&Shape], out: &Shape) -> Result<GlTensor> {
    let op = "narrow8";
    if x.dtype != DType::F32 {
        return Err(type_err(sh, op, shapes, 0, x.dtype, "f32"));
    }
    let dtype = if signed { DType::I8 } else { DType::U8 };
    check_mode(sh, op, dtype)?;
    sh.run_typed(Pass::new(op, "narrow8", if signed { 0 } else { 1 }).input("u_x", x), out.numel(), dtype)
}
