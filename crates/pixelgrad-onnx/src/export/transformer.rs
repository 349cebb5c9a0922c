//! The sequence layers as ONNX: token embeddings (`Cast` of the f32 ids to int64, `Gather`),
//! learned positions (`Add` of the table's first rows as a constant), layer and RMS norms
//! (decomposed: `ReduceMean`, `Sub`, `Mul`, `Pow`), multi-head attention (`MatMul`, `Reshape`,
//! `Transpose`, `Softmax`; the causal mask a constant additive tensor, grouped key/value heads
//! repeated with `Expand`, rotary positions from constant cos/sin tables), the pre-norm
//! transformer block (its parts, GELU in pixelgrad's tanh form or SwiGLU) and dense layers at
//! every position (`MatMul` and `Add` on `[N, seq, width]`). Every operator is of opset 13.
//!
//! The norms are decomposed rather than written as opset 17's `LayerNormalization` so a model
//! stays at opset 13 (the export's default, which the imported graphs it may hold share) and
//! computes in the order pixelgrad does (`(x - mean) · (var + eps)^-½`).

use std::any::Any;

use pixelgrad_core::{AttentionOpts, Tensor};
use pixelgrad_nn::layers::{
    Embedding, LayerNorm, LearnedPositions, Linear, Mlp, MultiHeadAttention, RmsNorm, Rotary, TimeDistributed, TransformerBlock,
};
use pixelgrad_nn::Module;

use super::{host_of, int, ints, Writer};
use crate::host::HostTensor;
use crate::{OnnxError, Result};

/// ONNX's `TensorProto.DataType` of int64 (the `to` of a `Cast`).
const INT64: i64 = 7;

impl Writer {
    /// Writes `any` if it is one of this file's layers (`Ok(false)` when it is none of them).
    pub(super) fn sequence_layer(&mut self, any: &dyn Any, prefix: &str) -> Result<bool> {
        let x = self.current.clone().unwrap_or_else(|| "input".into());
        let y = if let Some(e) = any.downcast_ref::<Embedding>() {
            let ids = self.push("Cast", prefix, vec![x], vec![int("to", INT64)]);
            let table = self.param(&format!("{prefix}embeddings"), &e.table)?;
            self.shape = self.shape.take().map(|mut d| {
                d.push(e.dim());
                d
            });
            self.push("Gather", prefix, vec![table, ids], vec![int("axis", 0)])
        } else if let Some(p) = any.downcast_ref::<LearnedPositions>() {
            let (s, w) = self.sequence("PositionEmbedding")?;
            let t = p.table.tensor();
            if s > p.max_len() || t.dims()[1] != w {
                return Err(OnnxError::Export(format!("{} cannot take a sequence [{s}, {w}]", p.describe())));
            }
            let rows = t.to_vec()?[..s * w].to_vec();
            let rows = self.init(&format!("{prefix}positions"), &HostTensor::f32(vec![s, w], rows));
            self.binary("Add", prefix, x, rows)
        } else if let Some(n) = any.downcast_ref::<LayerNorm>() {
            self.layer_norm(prefix, x, n)?
        } else if let Some(n) = any.downcast_ref::<RmsNorm>() {
            self.rms_norm(prefix, x, n)?
        } else if let Some(a) = any.downcast_ref::<MultiHeadAttention>() {
            self.attention(prefix, x, a)?
        } else if let Some(b) = any.downcast_ref::<TransformerBlock>() {
            self.block(prefix, x, b)?
        } else if let Some(t) = any.downcast_ref::<TimeDistributed>() {
            let Some(l) = t.inner.as_any().and_then(|a| a.downcast_ref::<Linear>()) else {
                return Err(OnnxError::Export(format!("layer {} has no ONNX form (only a dense layer at every position)", t.describe())));
            };
            let out = l.weight.tensor().dims()[1];
            let y = self.dense(prefix, x, l)?;
            if let Some(d) = self.shape.as_mut().and_then(|d| d.last_mut()) {
                *d = out;
            }
            y
        } else {
            return Ok(false);
        };
        self.current = Some(y);
        Ok(true)
    }

    /// The current sample shape as a sequence `[seq, width]`, or an error naming `what`.
    fn sequence(&self, what: &str) -> Result<(usize, usize)> {
        match self.shape.as_deref() {
            Some(&[s, w]) => Ok((s, w)),
            other => Err(OnnxError::Export(format!(
                "{what} needs a sequence [seq, width] of known length before it, got {}",
                other.map_or("a shape the export does not follow (after a convolution, pool or imported graph)".into(), |d| format!(
                    "{d:?}"
                ))
            ))),
        }
    }

    fn ints_init(&mut self, name: &str, v: &[i64]) -> String {
        self.init(name, &HostTensor::i64(vec![v.len()], v.to_vec()))
    }

    fn tensor_init(&mut self, name: &str, t: &Tensor) -> Result<String> {
        let h = host_of(t)?;
        Ok(self.init(name, &h))
    }

    /// `x · W + b` on the last axis of `x` (any rank).
    fn dense(&mut self, prefix: &str, x: String, l: &Linear) -> Result<String> {
        let w = self.param(&format!("{prefix}weight"), &l.weight)?;
        let y = self.binary("MatMul", prefix, x, w);
        Ok(match &l.bias {
            Some(b) => {
                let b = self.param(&format!("{prefix}bias"), b)?;
                self.binary("Add", prefix, y, b)
            }
            None => y,
        })
    }

    /// The mean over the last axis, kept (`ReduceMean` with `axes` as an attribute: opset 13).
    fn mean_last(&mut self, prefix: &str, x: String) -> Result<String> {
        if let Some(o) = self.opset.filter(|&o| o >= 18) {
            return Err(OnnxError::Export(format!(
                "the normalisations are written with opset 13's ReduceMean and cannot join an imported graph of opset {o}"
            )));
        }
        self.reduce_attrs = true;
        Ok(self.push("ReduceMean", prefix, vec![x], vec![ints("axes", &[-1]), int("keepdims", 1)]))
    }

    /// `x · (mean(x²) + eps)^-½`, pixelgrad's order of operations for both norms.
    fn scale_by_rms(&mut self, prefix: &str, x: String, eps: f32) -> Result<String> {
        let sq = self.binary("Mul", prefix, x.clone(), x.clone());
        let ms = self.mean_last(prefix, sq)?;
        let eps = self.scalar(&format!("{prefix}epsilon"), eps);
        let ms = self.binary("Add", prefix, ms, eps);
        let p = self.scalar(&format!("{prefix}minus_half"), -0.5);
        let inv = self.binary("Pow", prefix, ms, p);
        Ok(self.binary("Mul", prefix, x, inv))
    }

    fn layer_norm(&mut self, prefix: &str, x: String, n: &LayerNorm) -> Result<String> {
        let mean = self.mean_last(prefix, x.clone())?;
        let centred = self.binary("Sub", prefix, x, mean);
        let y = self.scale_by_rms(prefix, centred, n.eps())?;
        let g = self.param(&format!("{prefix}gamma"), &n.gamma)?;
        let y = self.binary("Mul", prefix, y, g);
        let b = self.param(&format!("{prefix}beta"), &n.beta)?;
        Ok(self.binary("Add", prefix, y, b))
    }

    fn rms_norm(&mut self, prefix: &str, x: String, n: &RmsNorm) -> Result<String> {
        let y = self.scale_by_rms(prefix, x, n.eps())?;
        let g = self.param(&format!("{prefix}gamma"), &n.gamma)?;
        Ok(self.binary("Mul", prefix, y, g))
    }

    /// `x [N, s, width]` projected by `p` and split into heads: `[N, heads, s, head_dim]`.
    fn heads(&mut self, prefix: &str, x: String, p: &Linear, heads: usize, head_dim: usize) -> Result<String> {
        let y = self.dense(prefix, x, p)?;
        let shape = self.ints_init(&format!("{prefix}heads_shape"), &[0, 0, heads as i64, head_dim as i64]);
        let y = self.binary("Reshape", prefix, y, shape);
        Ok(self.push("Transpose", prefix, vec![y], vec![ints("perm", &[0, 2, 1, 3])]))
    }

    /// Rotary positions `0..s` on `x [N, heads, s, head_dim]`: `x · cos + rotate_half(x) · sin`.
    fn rotary(&mut self, prefix: &str, x: String, r: &Rotary, s: usize, like: &Tensor) -> Result<String> {
        let (cos, sin) = r.tables(like.device(), 0, s)?;
        let (cos, sin) = (self.tensor_init(&format!("{prefix}cos"), &cos)?, self.tensor_init(&format!("{prefix}sin"), &sin)?);
        let (h, half) = (r.head_dim() as i64, r.head_dim() as i64 / 2);
        let axes = self.ints_init(&format!("{prefix}last_axis"), &[-1]);
        let (zero, mid, end) = (
            self.ints_init(&format!("{prefix}start"), &[0]),
            self.ints_init(&format!("{prefix}half"), &[half]),
            self.ints_init(&format!("{prefix}end"), &[h]),
        );
        let x1 = self.push("Slice", prefix, vec![x.clone(), zero, mid.clone(), axes.clone()], vec![]);
        let x2 = self.push("Slice", prefix, vec![x.clone(), mid, end, axes], vec![]);
        let neg = self.push("Neg", prefix, vec![x2], vec![]);
        let rotated = self.push("Concat", prefix, vec![neg, x1], vec![int("axis", -1)]);
        let a = self.binary("Mul", prefix, x, cos);
        let b = self.binary("Mul", prefix, rotated, sin);
        Ok(self.binary("Add", prefix, a, b))
    }

    /// Self-attention of `x [N, s, width]`, as [`MultiHeadAttention::forward`] computes it in
    /// evaluation mode.
    fn attention(&mut self, prefix: &str, x: String, m: &MultiHeadAttention) -> Result<String> {
        let (s, w) = self.sequence("MultiHeadAttention")?;
        let o = m.options();
        if w != o.width {
            return Err(OnnxError::Export(format!("{} cannot take a sequence [{s}, {w}]", m.describe())));
        }
        let (n, g, d) = (o.heads, o.kv_heads, m.head_dim());
        let mut q = self.heads(&format!("{prefix}query."), x.clone(), &m.query, n, d)?;
        let mut k = self.heads(&format!("{prefix}key."), x.clone(), &m.key, g, d)?;
        let mut v = self.heads(&format!("{prefix}value."), x, &m.value, g, d)?;
        if let Some(wave) = o.rotary {
            let r = Rotary::new(d, wave)?;
            let like = m.query.weight.tensor();
            q = self.rotary(&format!("{prefix}rotary_q."), q, &r, s, &like)?;
            k = self.rotary(&format!("{prefix}rotary_k."), k, &r, s, &like)?;
        }
        if g != n {
            // key/value head j serves query heads j·(n/g) .. (j+1)·(n/g), as `attention_spread`
            let group = (n / g) as i64;
            let split = self.ints_init(&format!("{prefix}kv_split"), &[0, g as i64, 1, s as i64, d as i64]);
            let spread = self.ints_init(&format!("{prefix}kv_spread"), &[1, 1, group, 1, 1]);
            let merged = self.ints_init(&format!("{prefix}kv_merged"), &[0, n as i64, s as i64, d as i64]);
            for t in [&mut k, &mut v] {
                let r = self.binary("Reshape", prefix, t.clone(), split.clone());
                let e = self.binary("Expand", prefix, r, spread.clone());
                *t = self.binary("Reshape", prefix, e, merged.clone());
            }
        }
        let kt = self.push("Transpose", prefix, vec![k], vec![ints("perm", &[0, 1, 3, 2])]);
        let scores = self.binary("MatMul", prefix, q, kt);
        let scale = self.scalar(&format!("{prefix}scale"), 1.0 / (d as f32).sqrt());
        let mut scores = self.binary("Mul", prefix, scores, scale);
        if o.causal {
            // query i sees keys j <= i: the others get the attention op's exclusion value
            let mask: Vec<f32> = (0..s * s).map(|ij| if ij % s > ij / s { AttentionOpts::EXCLUDED } else { 0.0 }).collect();
            let mask = self.init(&format!("{prefix}causal_mask"), &HostTensor::f32(vec![s, s], mask));
            scores = self.binary("Add", prefix, scores, mask);
        }
        let weights = self.push("Softmax", prefix, vec![scores], vec![int("axis", -1)]);
        let y = self.binary("MatMul", prefix, weights, v);
        let y = self.push("Transpose", prefix, vec![y], vec![ints("perm", &[0, 2, 1, 3])]);
        let shape = self.ints_init(&format!("{prefix}merged_shape"), &[0, 0, (n * d) as i64]);
        let y = self.binary("Reshape", prefix, y, shape);
        self.dense(&format!("{prefix}output."), y, &m.output)
    }

    fn norm(&mut self, prefix: &str, x: String, m: &dyn Module) -> Result<String> {
        let any = m.as_any().ok_or_else(|| OnnxError::Export(format!("layer {} does not expose its type", m.describe())))?;
        if let Some(n) = any.downcast_ref::<LayerNorm>() {
            self.layer_norm(prefix, x, n)
        } else if let Some(n) = any.downcast_ref::<RmsNorm>() {
            self.rms_norm(prefix, x, n)
        } else {
            Err(OnnxError::Export(format!("layer {} has no ONNX form", m.describe())))
        }
    }

    /// `h = x + attention(norm₁(x))`, `y = h + mlp(norm₂(h))` (dropout is the identity).
    fn block(&mut self, prefix: &str, x: String, b: &TransformerBlock) -> Result<String> {
        let (n1, n2) = b.norms();
        let z = self.norm(&format!("{prefix}norm1."), x.clone(), n1)?;
        let a = self.attention(&format!("{prefix}attention."), z, &b.attention)?;
        let h = self.binary("Add", prefix, x, a);
        let z = self.norm(&format!("{prefix}norm2."), h.clone(), n2)?;
        let hidden = match (b.options().mlp, &b.up) {
            (Mlp::Gelu, _) => {
                let y = self.dense(&format!("{prefix}fc1."), z, &b.fc1)?;
                self.gelu(&format!("{prefix}gelu."), y)
            }
            (Mlp::SwiGlu, Some(up)) => {
                let gate = self.dense(&format!("{prefix}fc1."), z.clone(), &b.fc1)?;
                let sig = self.push("Sigmoid", prefix, vec![gate.clone()], vec![]);
                let silu = self.binary("Mul", prefix, gate, sig);
                let u = self.dense(&format!("{prefix}up."), z, up)?;
                self.binary("Mul", prefix, silu, u)
            }
            (Mlp::SwiGlu, None) => return Err(OnnxError::Export(format!("{} has a SwiGLU MLP without its up projection", b.describe()))),
        };
        let m = self.dense(&format!("{prefix}fc2."), hidden, &b.fc2)?;
        Ok(self.binary("Add", prefix, h, m))
    }
}
