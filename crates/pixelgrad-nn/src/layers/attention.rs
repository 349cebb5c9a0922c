use pixelgrad_core::{AttentionOpts, Device, Param, Result, Tensor};

use super::{bad_input, bad_option, rows, Dropout, Linear, Rotary};
use crate::init::{Init, WeightInit};
use crate::{Mode, Module};

/// The options of a [`MultiHeadAttention`] (Keras `MultiHeadAttention` with keras-hub's
/// grouped key/value heads and rotary positions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionOptions {
    /// Model width: the queries' (and the output's) last axis.
    pub width: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention); `heads` must be a multiple. `heads` for plain
    /// multi-head attention, 1 for multi-query attention.
    pub kv_heads: usize,
    /// Size of each head; `None` is `width / heads` (then `heads` must divide `width`).
    pub head_dim: Option<usize>,
    /// Biases on the four projections (Keras `use_bias`, default true).
    pub use_bias: bool,
    /// Query `i` sees only keys `j <= i + (T - S)` (Keras `use_causal_mask`).
    pub causal: bool,
    /// Rotary positions on queries and keys with this `max_wavelength` (usually 10000).
    pub rotary: Option<f64>,
    /// Dropout rate on the attention weights in training (Keras `dropout`, default 0).
    pub dropout: f32,
}

impl AttentionOptions {
    /// Plain multi-head attention: `heads` heads of `width / heads`, biases, no mask, no rotary.
    pub fn new(width: usize, heads: usize) -> Self {
        AttentionOptions { width, heads, kv_heads: heads, head_dim: None, use_bias: true, causal: false, rotary: None, dropout: 0.0 }
    }

    /// The head size these options give, or a typed error for sizes that do not fit.
    pub fn resolved_head_dim(&self) -> Result<usize> {
        let (w, n, g) = (self.width, self.heads, self.kv_heads);
        if w == 0 || n == 0 || g == 0 {
            return Err(bad_option("multi_head_attention", format!("width ({w}), heads ({n}) and kv_heads ({g}) must be at least 1")));
        }
        if !n.is_multiple_of(g) {
            return Err(bad_option("multi_head_attention", format!("{n} query heads are not a multiple of {g} key/value heads")));
        }
        let h = match self.head_dim {
            Some(0) => return Err(bad_option("multi_head_attention", "head_dim must be at least 1".into())),
            Some(h) => h,
            None if w.is_multiple_of(n) => w / n,
            None => return Err(bad_option("multi_head_attention", format!("{n} heads do not divide the width {w}; give head_dim"))),
        };
        if self.rotary.is_some() && !h.is_multiple_of(2) {
            return Err(bad_option("multi_head_attention", format!("rotary positions need an even head_dim, got {h}")));
        }
        Ok(h)
    }
}

/// Multi-head scaled dot-product attention with query/key/value/output projections.
///
/// Self-attention ([`Module::forward`], [`MultiHeadAttention::attend`] without a context):
/// input `[batch, seq, width]`, output the same shape. Cross-attention
/// ([`MultiHeadAttention::attend`] with a context `[batch, seq_k, width]`): keys and values
/// come from the context. An optional padding mask `[batch, seq_k]` holds 1 for keys to attend
/// to and 0 for padding (Keras' boolean `attention_mask` per key). The heads run through
/// [`Tensor::attention`], the fused op where the backend has one and the composition
/// elsewhere, with scale `1 / sqrt(head_dim)`. A query row whose keys are all masked out gives
/// NaN (there is nothing to attend to). With a dropout rate, training runs the composition
/// (the fused op never forms the weights) and drops attention weights as Keras does.
pub struct MultiHeadAttention {
    pub query: Linear,
    pub key: Linear,
    pub value: Linear,
    pub output: Linear,
    opts: AttentionOptions,
    head_dim: usize,
    rotary: Option<Rotary>,
    drop: Dropout,
}

impl MultiHeadAttention {
    /// Glorot-uniform projections (Keras' default), zero biases; drawn in the order query,
    /// key, value, output, then the dropout seed.
    pub fn new(dev: &Device, opts: AttentionOptions, init: &mut Init) -> Result<Self> {
        let h = opts.resolved_head_dim()?;
        let rotary = opts.rotary.map(|w| Rotary::new(h, w)).transpose()?;
        let proj = |init: &mut Init, i, o| Linear::with_init(dev, i, o, WeightInit::Glorot, opts.use_bias, init);
        let (w, q, kv) = (opts.width, opts.heads * h, opts.kv_heads * h);
        let (query, key, value, output) = (proj(init, w, q)?, proj(init, w, kv)?, proj(init, w, kv)?, proj(init, q, w)?);
        let drop = Dropout::new(opts.dropout, init.next_seed()).map_err(|e| bad_option("multi_head_attention", e.to_string()))?;
        Ok(MultiHeadAttention { query, key, value, output, opts, head_dim: h, rotary, drop })
    }

    pub fn options(&self) -> AttentionOptions {
        self.opts
    }
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }

    /// `x [b, s, width]` projected by `p` and split into `heads` heads: `[b, heads, s, head_dim]`.
    fn heads_of(&self, p: &Linear, x: &Tensor, heads: usize) -> Result<Tensor> {
        let d = x.dims();
        p.forward(&rows(x)?, Mode::Eval)?.reshape([d[0], d[1], heads, self.head_dim])?.permute(&[0, 2, 1, 3])
    }

    /// Attention of `query [batch, seq, width]` over itself (`context` `None`) or over
    /// `context [batch, seq_k, width]`, with an optional padding `mask [batch, seq_k]` of 1s
    /// (attend) and 0s (padding). Returns `[batch, seq, width]`. Wrong shapes, a mask with
    /// other values, or a causal mask with more queries than keys are typed errors. Evaluation
    /// mode (no dropout).
    pub fn attend(&self, query: &Tensor, context: Option<&Tensor>, mask: Option<&Tensor>) -> Result<Tensor> {
        self.attend_in(query, context, mask, Mode::Eval)
    }

    /// [`MultiHeadAttention::attend`] in `mode`: training drops attention weights at the
    /// options' dropout rate.
    pub fn attend_in(&self, query: &Tensor, context: Option<&Tensor>, mask: Option<&Tensor>, mode: Mode) -> Result<Tensor> {
        let w = self.opts.width;
        let ctx = context.unwrap_or(query);
        for (name, t) in [("query", query), ("context", ctx)] {
            if t.rank() != 3 || t.dims()[2] != w || t.dims()[0] != query.dims()[0] {
                return Err(bad_input("multi_head_attention", t, format!("the {name} must be [batch, seq, {w}] (the query's batch)")));
            }
        }
        let (b, s, t) = (query.dims()[0], query.dims()[1], ctx.dims()[1]);
        let additive = match mask {
            None => None,
            Some(m) => {
                if m.dims() != [b, t] {
                    return Err(bad_input("multi_head_attention", m, format!("the padding mask must be [{b}, {t}] (batch, keys)")));
                }
                if m.to_vec_f64()?.iter().any(|&v| v != 0.0 && v != 1.0) {
                    return Err(bad_input("multi_head_attention", m, "the padding mask must hold only 0 (padding) and 1 (attend)".into()));
                }
                // 1 -> 0, 0 -> the op's exclusion value
                let x = AttentionOpts::EXCLUDED;
                Some(m.detach().affine(-x, x)?.reshape([b, 1, 1, t])?)
            }
        };
        let mut opts = AttentionOpts::scaled(1.0 / (self.head_dim as f32).sqrt());
        if self.opts.causal {
            if s > t {
                return Err(bad_input(
                    "multi_head_attention",
                    query,
                    format!("a causal mask needs at least as many keys ({t}) as queries ({s})"),
                ));
            }
            opts = opts.causal(t - s);
        }
        let mut q = self.heads_of(&self.query, query, self.opts.heads)?;
        let mut k = self.heads_of(&self.key, ctx, self.opts.kv_heads)?;
        let v = self.heads_of(&self.value, ctx, self.opts.kv_heads)?;
        if let Some(r) = &self.rotary {
            // queries are the last `s` of `t` positions, as with the causal offset
            q = r.apply(&q, t.saturating_sub(s))?;
            k = r.apply(&k, 0)?;
        }
        let y = if mode == Mode::Train && self.opts.dropout > 0.0 {
            // the composition, with the weights dropped before they meet the values
            let weights = self.drop.forward(&q.attention_scores(&k, additive.as_ref(), opts)?.weights, mode)?;
            let n = self.opts.heads;
            weights.reshape([b * n, s, t])?.matmul(&v.attention_spread(n)?)?.reshape([b, n, s, self.head_dim])?
        } else {
            q.attention(&k, &v, additive.as_ref(), opts)?
        };
        let merged = y.permute(&[0, 2, 1, 3])?.reshape([b * s, self.opts.heads * self.head_dim])?;
        self.output.forward(&merged, Mode::Eval)?.reshape([b, s, w])
    }
}

impl Module for MultiHeadAttention {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, mode: Mode) -> Result<Tensor> {
        self.attend_in(x, None, None, mode)
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        for (name, p) in [("query", &self.query), ("key", &self.key), ("value", &self.value), ("output", &self.output)] {
            p.visit_params(&mut |n, t| f(&format!("{name}.{n}"), t));
        }
    }
    fn visit_counters(&self, f: &mut dyn FnMut(&str, &std::cell::Cell<u64>)) {
        self.drop.visit_counters(&mut |n, c| f(&format!("dropout.{n}"), c));
    }
    fn describe(&self) -> String {
        let o = &self.opts;
        format!("MultiHeadAttention(width {}, heads {}/{} of {})", o.width, o.heads, o.kv_heads, self.head_dim)
    }
}
