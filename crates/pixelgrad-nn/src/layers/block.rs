use pixelgrad_core::{Device, Param, Result, Tensor};

use super::{bad_input, bad_option, rows, AttentionOptions, Dropout, LayerNorm, Linear, MultiHeadAttention, RmsNorm};
use crate::init::{Init, WeightInit};
use crate::{Mode, Module};

/// The position-wise network of a [`TransformerBlock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mlp {
    /// `W₂ · gelu(W₁ x + b₁) + b₂` (the tanh form of GELU).
    Gelu,
    /// `W₂ · (silu(W_gate x) ⊙ W_up x)` without biases (LLaMA-style), `silu(z) = z · sigmoid(z)`.
    SwiGlu,
}

/// The normalisation a [`TransformerBlock`] puts before each branch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Normalization {
    /// [`LayerNorm`] with this epsilon.
    Layer(f32),
    /// [`RmsNorm`] with this epsilon.
    Rms(f32),
}

/// The options of a [`TransformerBlock`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockOptions {
    /// The attention (width, heads, grouped key/value heads, causal mask, rotary positions).
    pub attention: AttentionOptions,
    /// Hidden size of the position-wise network (keras-hub `intermediate_dim`).
    pub mlp_dim: usize,
    pub mlp: Mlp,
    pub norm: Normalization,
    /// Dropout rate on the outputs of both branches before they join the residual stream (the
    /// attention weights have their own rate, `attention.dropout`; keras-hub uses one rate
    /// for all three, as the `transformerBlock` description does).
    pub dropout: f32,
}

impl BlockOptions {
    /// A GELU block with layer norms (epsilon 1e-5), no dropout, over `heads` heads.
    pub fn new(width: usize, heads: usize, mlp_dim: usize) -> Self {
        BlockOptions {
            attention: AttentionOptions::new(width, heads),
            mlp_dim,
            mlp: Mlp::Gelu,
            norm: Normalization::Layer(1e-5),
            dropout: 0.0,
        }
    }
}

enum Norm {
    Layer(LayerNorm),
    Rms(RmsNorm),
}

impl Norm {
    fn new(dev: &Device, width: usize, n: Normalization) -> Result<Norm> {
        Ok(match n {
            Normalization::Layer(eps) => Norm::Layer(LayerNorm::new(dev, width, eps)?),
            Normalization::Rms(eps) => Norm::Rms(RmsNorm::new(dev, width, eps)?),
        })
    }
    fn module(&self) -> &dyn Module {
        match self {
            Norm::Layer(n) => n,
            Norm::Rms(n) => n,
        }
    }
}

/// A pre-norm transformer block (GPT-2/LLaMA style; keras-hub's `TransformerDecoder` without
/// cross-attention, `normalize_first=True`):
///
/// ```text
/// h = x + dropout(attention(norm₁(x)))
/// y = h + dropout(mlp(norm₂(h)))
/// ```
///
/// Input `[batch, seq, width]`, output the same shape. Draws its weights in the order
/// attention (query, key, value, output), then the MLP (`W₁`/`W_gate`, `W_up`, `W₂`).
pub struct TransformerBlock {
    pub attention: MultiHeadAttention,
    norm1: Norm,
    norm2: Norm,
    /// `W₁` (GELU) or `W_gate` (SwiGLU).
    pub fc1: Linear,
    /// `W_up` (SwiGLU only).
    pub up: Option<Linear>,
    pub fc2: Linear,
    drop1: Dropout,
    drop2: Dropout,
    opts: BlockOptions,
}

impl TransformerBlock {
    pub fn new(dev: &Device, opts: BlockOptions, init: &mut Init) -> Result<Self> {
        let w = opts.attention.width;
        if opts.mlp_dim == 0 {
            return Err(bad_option("transformer_block", "the MLP's hidden size must be at least 1".into()));
        }
        let drop =
            |init: &mut Init| Dropout::new(opts.dropout, init.next_seed()).map_err(|e| bad_option("transformer_block", e.to_string()));
        let attention = MultiHeadAttention::new(dev, opts.attention, init)?;
        let bias = opts.mlp == Mlp::Gelu;
        let fc1 = Linear::with_init(dev, w, opts.mlp_dim, WeightInit::Glorot, bias, init)?;
        let up = match opts.mlp {
            Mlp::Gelu => None,
            Mlp::SwiGlu => Some(Linear::with_init(dev, w, opts.mlp_dim, WeightInit::Glorot, false, init)?),
        };
        let fc2 = Linear::with_init(dev, opts.mlp_dim, w, WeightInit::Glorot, bias, init)?;
        Ok(TransformerBlock {
            attention,
            norm1: Norm::new(dev, w, opts.norm)?,
            norm2: Norm::new(dev, w, opts.norm)?,
            fc1,
            up,
            fc2,
            drop1: drop(init)?,
            drop2: drop(init)?,
            opts,
        })
    }

    pub fn options(&self) -> BlockOptions {
        self.opts
    }

    /// The normalisations before the attention and before the MLP (each a [`LayerNorm`] or an
    /// [`RmsNorm`], as [`BlockOptions::norm`] says), for writers such as the ONNX export.
    pub fn norms(&self) -> (&dyn Module, &dyn Module) {
        (self.norm1.module(), self.norm2.module())
    }

    /// The block with a padding mask `[batch, seq]` of 1s (attend) and 0s (padding) on the keys.
    pub fn forward_masked(&self, x: &Tensor, mask: Option<&Tensor>, mode: Mode) -> Result<Tensor> {
        let w = self.opts.attention.width;
        if x.rank() != 3 || x.dims()[2] != w {
            return Err(bad_input("transformer_block", x, format!("expects [batch, seq, {w}]")));
        }
        let a = self.attention.attend_in(&self.norm1.module().forward(x, mode)?, None, mask, mode)?;
        let h = x.add(&self.drop1.forward(&a, mode)?)?;
        let z = rows(&self.norm2.module().forward(&h, mode)?)?;
        let hidden = match &self.up {
            None => self.fc1.forward(&z, mode)?.gelu()?,
            Some(up) => {
                let g = self.fc1.forward(&z, mode)?;
                g.mul(&g.sigmoid()?)?.mul(&up.forward(&z, mode)?)?
            }
        };
        let m = self.fc2.forward(&hidden, mode)?.reshape(x.shape().clone())?;
        h.add(&self.drop2.forward(&m, mode)?)
    }
}

impl Module for TransformerBlock {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, mode: Mode) -> Result<Tensor> {
        self.forward_masked(x, None, mode)
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        self.attention.visit_params(&mut |n, p| f(&format!("attention.{n}"), p));
        self.norm1.module().visit_params(&mut |n, p| f(&format!("norm1.{n}"), p));
        self.norm2.module().visit_params(&mut |n, p| f(&format!("norm2.{n}"), p));
        self.fc1.visit_params(&mut |n, p| f(&format!("fc1.{n}"), p));
        if let Some(up) = &self.up {
            up.visit_params(&mut |n, p| f(&format!("up.{n}"), p));
        }
        self.fc2.visit_params(&mut |n, p| f(&format!("fc2.{n}"), p));
    }
    fn visit_counters(&self, f: &mut dyn FnMut(&str, &std::cell::Cell<u64>)) {
        self.attention.visit_counters(&mut |n, c| f(&format!("attention.{n}"), c));
        self.drop1.visit_counters(&mut |n, c| f(&format!("drop1.{n}"), c));
        self.drop2.visit_counters(&mut |n, c| f(&format!("drop2.{n}"), c));
    }
    fn describe(&self) -> String {
        let o = &self.opts;
        format!(
            "TransformerBlock(width {}, heads {}/{}, {:?} {}, {:?})",
            o.attention.width, o.attention.heads, o.attention.kv_heads, o.mlp, o.mlp_dim, o.norm
        )
    }
}
