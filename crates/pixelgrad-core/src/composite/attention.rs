//! Scaled dot-product attention: [`Tensor::attention`] runs the one op
//! ([`crate::Op::Attention`], which never materialises the `S × T` scores) where the backend
//! runs it, and otherwise [`Tensor::attention_composed`], the same computation written with
//! batched products and a softmax.

use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

impl Tensor {
    /// `softmax(scale · Q Kᵀ + mask) V` per head: `self` the queries `[B, N, S, H]`, `k`
    /// `[B, Nkv, T, H]`, `v` `[B, Nkv, T, Hv]` with `N` a multiple of `Nkv` (query head `n`
    /// reads key/value head `n / (N / Nkv)`), `mask` additive and broadcastable (rank 4) to
    /// `[B, N, S, T]`. Returns `[B, N, S, Hv]`. The fused op where
    /// [`crate::Backend::fused_attention`] says the backend runs it for these head sizes, the
    /// composition elsewhere; both have the same gradient. Bad shapes are an
    /// [`crate::Error::Shape`] naming `attention` either way.
    pub fn attention(&self, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, scale: f32) -> Result<Tensor> {
        let op = Op::Attention { scale, masked: mask.is_some() };
        let mut shapes = vec![self.shape(), k.shape(), v.shape()];
        shapes.extend(mask.map(|m| m.shape()));
        op.infer_shape(&shapes).map_err(|e| e.with_backend(&self.device().name()))?;
        let (h, hv) = (self.dims()[3], v.dims()[3]);
        if self.device().backend().fused_attention(h, hv) {
            self.attention_fused(k, v, mask, scale)
        } else {
            self.attention_composed(k, v, mask, scale)
        }
    }

    /// [`Tensor::attention`] written with the primitives: the `[B, N, S, T]` scores of every
    /// head are materialised (`scale · Q Kᵀ` as a batched product, plus the mask, a softmax
    /// along the keys, a product with the values). What backends without the fused op run,
    /// and what the conformance suite compares the fused op to.
    pub fn attention_composed(&self, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, scale: f32) -> Result<Tensor> {
        let op = Op::Attention { scale, masked: mask.is_some() };
        let mut shapes = vec![self.shape(), k.shape(), v.shape()];
        shapes.extend(mask.map(|m| m.shape()));
        op.infer_shape(&shapes).map_err(|e| e.with_backend(&self.device().name()))?;
        let (qd, kd, vd) = (self.dims().to_vec(), k.dims().to_vec(), v.dims().to_vec());
        let (b, n, s, h) = (qd[0], qd[1], qd[2], qd[3]);
        let (nkv, t, hv) = (kd[1], kd[2], vd[3]);
        let group = n / nkv;
        let spread = |x: &Tensor, d: usize| -> Result<Tensor> {
            if group == 1 {
                return x.reshape([b * n, t, d]);
            }
            x.reshape([b, nkv, 1, t, d])?.broadcast_to([b, nkv, group, t, d])?.reshape([b * n, t, d])
        };
        let mut scores = self.reshape([b * n, s, h])?.matmul_t(&spread(k, h)?, false, true)?.mul_scalar(scale)?.reshape([b, n, s, t])?;
        if let Some(m) = mask {
            scores = scores.add(m)?;
        }
        scores.softmax(-1)?.reshape([b * n, s, t])?.matmul(&spread(v, hv)?)?.reshape([b, n, s, hv])
    }
}
