//! Where a decoder's inputs and outputs are, found by their names in Hugging Face's ONNX layout
//! (what `optimum-cli export onnx` writes for causal language models):
//!
//! - inputs `input_ids` `[batch, sequence]`, optionally `attention_mask` `[batch, past +
//!   sequence]` and `position_ids` `[batch, sequence]`; with a cache,
//!   `past_key_values.N.key` / `.value` `[batch, kv heads, past, head size]` for layers
//!   `0..N`, and for a merged decoder (`decoder_model_merged.onnx`) the boolean
//!   `use_cache_branch` `[1]`;
//! - outputs `logits` `[batch, sequence, vocabulary]` and, with a cache, `present.N.key` /
//!   `.value` `[batch, kv heads, past + sequence, head size]`.
//!
//! The key/value heads and head size come from the past inputs' declared shapes (grouped
//! key/value heads are simply fewer heads there). A model that lacks one of these, or has an
//! input a decoder is not fed, is refused with an error naming it.

use crate::graph::{Dim, ValueInfo};
use crate::host::DType;
use crate::{Model, OnnxError, Result};

/// One layer's cache: the past inputs and the present outputs that feed them next step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheLayer {
    pub past_key: String,
    pub past_value: String,
    pub present_key: String,
    pub present_value: String,
}

/// A decoder's inputs and outputs, as [`DecoderLayout::discover`] found them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecoderLayout {
    /// `input_ids` and its element type (int64 or int32).
    pub input_ids: (String, DType),
    pub attention_mask: Option<(String, DType)>,
    pub position_ids: Option<(String, DType)>,
    /// A merged decoder's `use_cache_branch`.
    pub use_cache_branch: Option<String>,
    pub logits: String,
    /// Per layer, in order (empty: no cache, every step recomputes the whole sequence).
    pub layers: Vec<CacheLayer>,
    /// Key/value heads and head size of the cache (from the past inputs' shapes; 0 without).
    pub kv_heads: usize,
    pub head_size: usize,
    /// The vocabulary size when the logits' last dimension is declared.
    pub vocab: Option<usize>,
}

/// A declared size, if fixed.
fn fixed(d: &Dim) -> Option<usize> {
    match d {
        Dim::Fixed(n) => Some(*n),
        _ => None,
    }
}

/// The error for a model that is not a decoder generation can run.
fn not_decoder(msg: String) -> OnnxError {
    OnnxError::UnsupportedModel(format!("not a decoder generate can run: {msg}"))
}

fn int_input<'m>(model: &'m Model, name: &str) -> Result<Option<&'m ValueInfo>> {
    let Some(i) = model.inputs.iter().find(|i| i.name == name) else {
        return Ok(None);
    };
    if !matches!(i.dtype, DType::I64 | DType::I32) {
        return Err(not_decoder(format!("input '{name}' has element type {}; a decoder takes int64 or int32 there", i.dtype)));
    }
    // batch 1, any sequence length
    if let Some(d) = &i.shape {
        let fixed_seq = d.len() == 2 && matches!(d[1], Dim::Fixed(_));
        if d.len() != 2 || !i.accepts(&[1, fixed(&d[1]).unwrap_or(1)]) || fixed_seq {
            return Err(not_decoder(format!(
                "input '{name}' is declared {}; generation feeds [1, n] for every n (a batch of 1, a dynamic sequence length)",
                i.shape_text()
            )));
        }
    }
    Ok(Some(i))
}

impl DecoderLayout {
    /// Finds the layout of `model`, or says what is missing.
    pub fn discover(model: &Model) -> Result<DecoderLayout> {
        let inputs: Vec<&str> = model.inputs.iter().map(|i| i.name.as_str()).collect();
        let ids = int_input(model, "input_ids")?.ok_or_else(|| {
            not_decoder(format!(
                "it has no input 'input_ids' (its inputs: {})",
                inputs.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ")
            ))
        })?;
        let logits = model.outputs.iter().find(|o| o.name == "logits").ok_or_else(|| {
            let outs: Vec<String> = model.outputs.iter().map(|o| format!("'{}'", o.name)).collect();
            not_decoder(format!("it has no output 'logits' (its outputs: {})", outs.join(", ")))
        })?;
        let vocab = logits.shape.as_ref().and_then(|d| d.last()).and_then(fixed);
        let mask = int_input(model, "attention_mask")?.map(|i| (i.name.clone(), i.dtype));
        let positions = int_input(model, "position_ids")?.map(|i| (i.name.clone(), i.dtype));
        let branch = model.inputs.iter().find(|i| i.name == "use_cache_branch");
        if let Some(b) = branch {
            if b.dtype != DType::Bool {
                return Err(not_decoder(format!("input 'use_cache_branch' has element type {}; a merged decoder takes bool", b.dtype)));
            }
        }
        // the past inputs, layer by layer
        let mut layers = Vec::new();
        let (mut kv_heads, mut head_size) = (0, 0);
        loop {
            let n = layers.len();
            let (pk, pv) = (format!("past_key_values.{n}.key"), format!("past_key_values.{n}.value"));
            let (k, v) = (model.inputs.iter().find(|i| i.name == pk), model.inputs.iter().find(|i| i.name == pv));
            let (k, v) = match (k, v) {
                (None, None) => break,
                (Some(k), Some(v)) => (k, v),
                (Some(_), None) => return Err(not_decoder(format!("it has input '{pk}' but no '{pv}'"))),
                (None, Some(_)) => return Err(not_decoder(format!("it has input '{pv}' but no '{pk}'"))),
            };
            let (ok, ov) = (format!("present.{n}.key"), format!("present.{n}.value"));
            for (past, present) in [(&pk, &ok), (&pv, &ov)] {
                if !model.outputs.iter().any(|o| &o.name == present) {
                    return Err(not_decoder(format!("it has input '{past}' but no output '{present}' to feed it next step")));
                }
            }
            for i in [k, v] {
                if i.dtype != DType::F32 {
                    return Err(not_decoder(format!("input '{}' has element type {}; the cache is float32", i.name, i.dtype)));
                }
                let dims = i.shape.as_deref().unwrap_or(&[]);
                let (Some(h), Some(d)) = (dims.get(1).and_then(fixed), dims.get(3).and_then(fixed)) else {
                    return Err(not_decoder(format!(
                        "input '{}' is declared {}; the cache needs [batch, heads, past, head size] with fixed heads and head size",
                        i.name,
                        i.shape_text()
                    )));
                };
                if dims.len() != 4 || matches!(dims[2], Dim::Fixed(_)) || !i.accepts(&[1, h, 1, d]) {
                    return Err(not_decoder(format!(
                        "input '{}' is declared {}; generation feeds [1, heads, n, head size] for every n",
                        i.name,
                        i.shape_text()
                    )));
                }
                if (kv_heads, head_size) != (0, 0) && (kv_heads, head_size) != (h, d) {
                    return Err(not_decoder(format!(
                        "input '{}' has {h} heads of size {d}, other past inputs {kv_heads} of size {head_size}",
                        i.name
                    )));
                }
                (kv_heads, head_size) = (h, d);
            }
            layers.push(CacheLayer { past_key: pk, past_value: pv, present_key: ok, present_value: ov });
        }
        if branch.is_some() && layers.is_empty() {
            return Err(not_decoder("it has input 'use_cache_branch' but no 'past_key_values.0.key'".into()));
        }
        // every input must be one generation feeds
        let known = |n: &str| {
            matches!(n, "input_ids" | "attention_mask" | "position_ids" | "use_cache_branch")
                || layers.iter().any(|l| l.past_key == n || l.past_value == n)
        };
        if let Some(other) = model.inputs.iter().find(|i| !known(&i.name)) {
            return Err(not_decoder(format!(
                "input '{}' is not one a decoder is fed (input_ids, attention_mask, position_ids, past_key_values.N.key/value, use_cache_branch)",
                other.name
            )));
        }
        Ok(DecoderLayout {
            input_ids: (ids.name.clone(), ids.dtype),
            attention_mask: mask,
            position_ids: positions,
            use_cache_branch: branch.map(|b| b.name.clone()),
            logits: logits.name.clone(),
            layers,
            kv_heads,
            head_size,
            vocab,
        })
    }

    /// Whether the model has a key/value cache (past inputs and present outputs).
    pub fn has_cache(&self) -> bool {
        !self.layers.is_empty()
    }
}
