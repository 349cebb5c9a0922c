//! `Gemm` and `MatMul` (NumPy batching on top of the rank-2/3 core matmul).

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use crate::shapes::broadcast;
use crate::Result;

/// `Gemm`.
pub(super) fn gemm(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["alpha", "beta", "transA", "transB", "broadcast"])?;
    let (a, b) = (cx.t(ins, 0)?, cx.t_weight(ins, 1)?);
    if a.rank() != 2 || b.rank() != 2 {
        return Err(cx.err(format!("expects rank-2 A and B, got {:?} and {:?}", a.dims(), b.dims())));
    }
    let (ta, tb) = (node.int("transA", 0)? != 0, node.int("transB", 0)? != 0);
    let (alpha, beta) = (node.float("alpha", 1.0)?, node.float("beta", 1.0)?);
    let mut y = a.matmul_t(&b, ta, tb)?;
    if alpha != 1.0 {
        y = y.mul_scalar(alpha)?;
    }
    if cx.opt(ins, 2).is_some() && beta != 0.0 {
        let mut c = cx.t(ins, 2)?;
        if beta != 1.0 {
            c = c.mul_scalar(beta)?;
        }
        y = y.add(&c)?;
    }
    out(y)
}

/// `MatMul`.
pub(super) fn matmul_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    // A 2-D constant B (a weight) may stay f16: the product reads it directly. Other
    // shapes are broadcast first, which needs f32.
    let a = cx.t(ins, 0)?;
    let b = cx.t_weight(ins, 1)?;
    let b = if b.rank() != 2 && b.storage_dtype() == pixelgrad_core::kernel::DType::F16 { b.widen()? } else { b };
    out(matmul(cx, &a, &b)?)
}

/// NumPy `matmul` on the core's rank-2/3 matmul: 1-D operands gain and lose an axis, batch
/// axes broadcast and are flattened into one.
pub fn matmul(cx: &Cx, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (ra, rb) = (a.rank(), b.rank());
    if ra == 0 || rb == 0 {
        return Err(cx.err("MatMul of a scalar"));
    }
    let a2 = if ra == 1 { a.reshape([1, a.dims()[0]])? } else { a.clone() };
    let b2 = if rb == 1 { b.reshape([b.dims()[0], 1])? } else { b.clone() };
    let (ad, bd) = (a2.dims().to_vec(), b2.dims().to_vec());
    let (m, k) = (ad[ad.len() - 2], ad[ad.len() - 1]);
    let (k2, n) = (bd[bd.len() - 2], bd[bd.len() - 1]);
    if k != k2 {
        return Err(cx.err(format!("inner sizes differ: {:?} x {:?}", a.dims(), b.dims())));
    }
    let (ba, bb) = (&ad[..ad.len() - 2], &bd[..bd.len() - 2]);
    let batch = broadcast(cx.node, &[ba, bb])?;
    let nb: usize = batch.iter().product();
    let y = if bb.iter().product::<usize>() == 1 && bd.len() <= 3 || bb.is_empty() {
        // [.., M, K] x [K, N]: one 2-D product over all rows of A.
        let b2d = b2.reshape([k, n])?;
        if ba.iter().product::<usize>() == nb {
            a2.reshape([nb * m, k])?.matmul(&b2d)?
        } else {
            let mut full = batch.clone();
            full.extend([m, k]);
            a2.broadcast_to(full)?.reshape([nb * m, k])?.matmul(&b2d)?
        }
    } else {
        let expand = |t: &Tensor, inner: [usize; 2], own: &[usize]| -> Result<Tensor> {
            let mut full = batch.clone();
            full.extend(inner);
            if own.iter().product::<usize>() == 1 {
                return Ok(t.reshape([1, inner[0], inner[1]])?);
            }
            Ok(t.broadcast_to(full)?.reshape([nb, inner[0], inner[1]])?)
        };
        let a3 = expand(&a2, [m, k], ba)?;
        let b3 = expand(&b2, [k, n], bb)?;
        a3.matmul(&b3)?
    };
    let mut dims = batch;
    if ra > 1 {
        dims.push(m);
    }
    if rb > 1 {
        dims.push(n);
    }
    Ok(y.reshape(dims)?)
}
