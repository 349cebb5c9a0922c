//! Scaled dot-product attention: [`Tensor::attention`] runs the one op
//! ([`crate::Op::Attention`], which never materialises the `S × T` scores) where the backend
//! runs it, and otherwise [`Tensor::attention_composed`], the same computation written with
//! batched products and a softmax. The composition's pieces ([`Tensor::attention_scores`],
//! [`Tensor::attention_spread`]) are public: the gradient recomputes the scores with them, and
//! the ONNX importer hands back a stage of the scores.

use crate::op::{AttentionOpts, Op};
use crate::tensor::{Device, Tensor};
use crate::Result;

/// The `[B, N, S, T]` scores of [`Tensor::attention_scores`] at each stage of
/// [`AttentionOpts`]' definition.
#[derive(Clone, Debug)]
pub struct AttentionScores {
    /// `scale · Q Kᵀ`.
    pub scaled: Tensor,
    /// After the softcap when it comes before the masks, plus the mask and the exclusions.
    pub masked: Tensor,
    /// After the softcap (the same as `masked` without one).
    pub capped: Tensor,
    /// The softmax (or smooth softmax) of `capped`.
    pub weights: Tensor,
}

impl Tensor {
    /// `softmax(scale · Q Kᵀ + mask) V` per head, with the options of [`AttentionOpts`]
    /// (causal exclusion, softcap, smooth softmax): `self` the queries `[B, N, S, H]`, `k`
    /// `[B, Nkv, T, H]`, `v` `[B, Nkv, T, Hv]` with `N` a multiple of `Nkv` (query head `n`
    /// reads key/value head `n / (N / Nkv)`), `mask` additive and broadcastable (rank 4) to
    /// `[B, N, S, T]`. Returns `[B, N, S, Hv]`. The fused op where
    /// [`crate::Backend::fused_attention`] says the backend runs it for these head sizes and
    /// options, the composition elsewhere; both have the same gradient. Bad shapes or options
    /// are an [`crate::Error::Shape`] naming `attention` either way.
    pub fn attention(&self, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, opts: AttentionOpts) -> Result<Tensor> {
        self.check_attention(k, v, mask, opts)?;
        let (h, hv) = (self.dims()[3], v.dims()[3]);
        if self.device().backend().fused_attention(h, hv, &opts) {
            self.attention_fused(k, v, mask, opts)
        } else {
            self.attention_composed(k, v, mask, opts)
        }
    }

    /// [`Tensor::attention`] written with the primitives: the `[B, N, S, T]` scores of every
    /// head are materialised ([`Tensor::attention_scores`]), then multiplied by the values.
    /// What backends without the fused op run, and what the conformance suite compares the
    /// fused op to.
    pub fn attention_composed(&self, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, opts: AttentionOpts) -> Result<Tensor> {
        Ok(self.attention_composed_scores(k, v, mask, opts)?.0)
    }

    /// [`Tensor::attention_composed`] and the scores at every stage ([`AttentionScores`]).
    pub fn attention_composed_scores(
        &self,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        opts: AttentionOpts,
    ) -> Result<(Tensor, AttentionScores)> {
        self.check_attention(k, v, mask, opts)?;
        let scores = self.attention_scores(k, mask, opts)?;
        let d = self.dims();
        let (b, n, s, t, hv) = (d[0], d[1], d[2], k.dims()[2], v.dims()[3]);
        let y = scores.weights.reshape([b * n, s, t])?.matmul(&v.attention_spread(n)?)?.reshape([b, n, s, hv])?;
        Ok((y, scores))
    }

    /// The scores of `self` (queries `[B, N, S, H]`) against `k` (`[B, Nkv, T, H]`) at every
    /// stage of [`AttentionOpts`]' definition, each `[B, N, S, T]`. Errors as
    /// [`Tensor::attention`] (the values' shape is not checked here).
    pub fn attention_scores(&self, k: &Tensor, mask: Option<&Tensor>, opts: AttentionOpts) -> Result<AttentionScores> {
        // the op's checks, with the keys standing in for the values
        self.check_attention(k, k, mask, opts)?;
        let d = self.dims();
        let (b, n, s, h) = (d[0], d[1], d[2], d[3]);
        let t = k.dims()[2];
        let scaled =
            self.reshape([b * n, s, h])?.matmul_t(&k.attention_spread(n)?, false, true)?.mul_scalar(opts.scale)?.reshape([b, n, s, t])?;
        let cap = |x: &Tensor| -> Result<Tensor> {
            match opts.softcap {
                Some(c) => x.mul_scalar(1.0 / c)?.tanh()?.mul_scalar(c),
                None => Ok(x.clone()),
            }
        };
        let mut masked = if opts.softcap_after_masks { scaled.clone() } else { cap(&scaled)? };
        if let Some(m) = mask {
            masked = masked.add(m)?;
        }
        if let Some(x) = attention_exclusions(self.device(), s, t, &opts)? {
            masked = masked.add(&x)?;
        }
        let capped = if opts.softcap_after_masks { cap(&masked)? } else { masked.clone() };
        let weights = if opts.smooth {
            // exp(x - m) / (Σ exp(x - m) + exp(-m)) with m = max(max x, 0): the extra zero logit
            let m = capped.max_axis(-1, true)?.max_scalar(0.0)?.detach();
            let e = capped.sub(&m)?.exp()?;
            e.div(&e.sum_axis(-1, true)?.add(&m.neg()?.exp()?)?)?
        } else {
            capped.softmax(-1)?
        };
        Ok(AttentionScores { scaled, masked, capped, weights })
    }

    /// Key or value heads `self` `[B, Nkv, T, d]` as `[B · n, T, d]`, each repeated for the
    /// `n / Nkv` query heads of its group (query head `i` reads head `i / (n / Nkv)`).
    pub fn attention_spread(&self, n: usize) -> Result<Tensor> {
        let kd = self.dims();
        if kd.len() != 4 || kd[1] == 0 || !n.is_multiple_of(kd[1]) {
            return Err(crate::Error::Shape {
                op: "attention",
                shapes: vec![kd.to_vec()],
                backend: self.device().name(),
                msg: format!("cannot spread key/value heads {} over {n} query heads", self.shape()),
            });
        }
        let (b, nkv, t, d) = (kd[0], kd[1], kd[2], kd[3]);
        let group = n / nkv;
        if group == 1 {
            return self.reshape([b * n, t, d]);
        }
        self.reshape([b, nkv, 1, t, d])?.broadcast_to([b, nkv, group, t, d])?.reshape([b * n, t, d])
    }

    /// The op's shape and option checks, with this device's name.
    fn check_attention(&self, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, opts: AttentionOpts) -> Result<()> {
        let op = Op::Attention { opts, masked: mask.is_some() };
        let mut shapes = vec![self.shape(), k.shape(), v.shape()];
        shapes.extend(mask.map(|m| m.shape()));
        op.infer_shape(&shapes).map_err(|e| e.with_backend(&self.device().name()))?;
        Ok(())
    }
}

/// The causal exclusions of `opts` as an additive `[1, 1, S, T]` term
/// ([`AttentionOpts::EXCLUDED`] where [`AttentionOpts::excludes`]), computed on the device from
/// the positions; `None` without the causal option.
pub fn attention_exclusions(device: &Device, s: usize, t: usize, opts: &AttentionOpts) -> Result<Option<Tensor>> {
    let Some(off) = opts.causal else { return Ok(None) };
    // positions are whole numbers below 2^24 in any tensor a device holds
    let rows = Tensor::arange(device, s)?.affine(1.0, off as f32)?.reshape([s, 1])?;
    let keys = Tensor::arange(device, t)?.reshape([1, t])?;
    let mut out = keys.gt(&rows)?;
    if let Some(w) = opts.window {
        out = out.maximum(&rows.gt(&keys.affine(1.0, w as f32)?)?)?;
    }
    Ok(Some(out.mul_scalar(AttentionOpts::EXCLUDED)?.reshape([1, 1, s, t])?))
}
