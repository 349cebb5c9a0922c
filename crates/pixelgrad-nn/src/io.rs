//! Save and load with safetensors. Parameters and buffers are stored under their visitor names
//! (`0.weight`, `2.running_mean`...) as little-endian f32; free-form metadata (e.g. the model
//! architecture) rides in the header. Loading validates names, dtypes and shapes.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use pixelgrad_core::{Error, Result, Tensor};
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

use crate::Module;

/// Every parameter and buffer of `model`, by name, in visiting order.
pub fn named_tensors(model: &dyn Module) -> Vec<(String, Tensor)> {
    let mut out = Vec::new();
    model.visit_params(&mut |n, p| out.push((n.to_string(), p.tensor())));
    model.visit_buffers(&mut |n, b| out.push((n.to_string(), b.get())));
    out
}

/// Serialises `model` to safetensors bytes with `metadata` in the header.
pub fn to_bytes(model: &dyn Module, metadata: &HashMap<String, String>) -> Result<Vec<u8>> {
    let mut data: BTreeMap<String, (Vec<usize>, Vec<u8>)> = BTreeMap::new();
    for (name, t) in named_tensors(model) {
        let bytes: Vec<u8> = t.to_vec()?.iter().flat_map(|v| v.to_le_bytes()).collect();
        data.insert(name, (t.dims().to_vec(), bytes));
    }
    let mut views = Vec::with_capacity(data.len());
    for (name, (shape, bytes)) in &data {
        let v = TensorView::new(Dtype::F32, shape.clone(), bytes)
            .map_err(|e| Error::invalid(format!("safetensors tensor {name}"), e.to_string()))?;
        views.push((name.clone(), v));
    }
    let meta = if metadata.is_empty() { None } else { Some(metadata.clone()) };
    let bytes = safetensors::tensor::serialize(views, meta).map_err(|e| Error::invalid("safetensors", e.to_string()))?;
    canonical_header(bytes)
}

/// The same safetensors bytes with the header's keys (tensor names, metadata keys) in sorted
/// order. The safetensors crate writes the metadata in a `HashMap`'s order, which changes from
/// one process to the next: sorted, the same model gives the same file, byte for byte (what
/// `pixelgrad train --resume` is tested by). Tensor offsets are explicit, so the order of the
/// header's entries carries no meaning.
pub(crate) fn canonical_header(bytes: Vec<u8>) -> Result<Vec<u8>> {
    use serde_json::Value;
    let bad = |m: String| Error::invalid("safetensors", m);
    let len = bytes.get(..8).map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as usize);
    let Some(end) = len.and_then(|n| n.checked_add(8)).filter(|&e| e <= bytes.len()) else {
        return Err(bad("header length out of range".into()));
    };
    let header: BTreeMap<String, Value> = serde_json::from_slice(&bytes[8..end]).map_err(|e| bad(e.to_string()))?;
    let sorted: BTreeMap<String, Value> = header
        .into_iter()
        .map(|(k, v)| match v {
            Value::Object(m) => (k, serde_json::to_value(m.into_iter().collect::<BTreeMap<_, _>>()).unwrap_or(Value::Null)),
            other => (k, other),
        })
        .collect();
    let mut text = serde_json::to_vec(&sorted).map_err(|e| bad(e.to_string()))?;
    // the format pads the header with spaces to a multiple of 8 bytes
    text.resize(text.len().next_multiple_of(8), b' ');
    let mut out = Vec::with_capacity(8 + text.len() + bytes.len() - end);
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(&text);
    out.extend_from_slice(&bytes[end..]);
    Ok(out)
}

/// Writes `model` to `path` (safetensors) durably: through a temporary file in the same
/// folder, fsynced and renamed over `path` (`pixelgrad_durable`), so a crash leaves the old
/// file or the new one, never a torn one.
pub fn save(model: &dyn Module, path: &Path, metadata: &HashMap<String, String>) -> Result<()> {
    let bytes = to_bytes(model, metadata)?;
    pixelgrad_durable::write(path, bytes).map_err(|e| Error::io(path, e))
}

/// Reads only the metadata of a safetensors file (e.g. to rebuild the architecture first).
pub fn read_metadata(bytes: &[u8]) -> Result<HashMap<String, String>> {
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| Error::invalid("model file", format!("not a safetensors file: {e}")))?;
    Ok(meta.metadata().clone().unwrap_or_default())
}

/// Loads tensors from safetensors `bytes` into `model`. Every parameter and buffer must be
/// present with dtype F32 and the same shape; tensors the model does not have are an error too.
pub fn load_bytes(model: &dyn Module, bytes: &[u8]) -> Result<()> {
    let st = SafeTensors::deserialize(bytes).map_err(|e| Error::invalid("model file", format!("not a safetensors file: {e}")))?;
    let wanted = named_tensors(model);
    let known: std::collections::HashSet<&str> = wanted.iter().map(|(n, _)| n.as_str()).collect();
    for name in st.names() {
        if !known.contains(name) {
            return Err(Error::invalid("model file", format!("tensor '{name}' does not exist in this architecture")));
        }
    }
    let mut values: HashMap<String, Tensor> = HashMap::new();
    for (name, cur) in &wanted {
        let view = st
            .tensor(name)
            .map_err(|_| Error::invalid("model file", format!("tensor '{name}' is missing (model expects shape {:?})", cur.dims())))?;
        if view.dtype() != Dtype::F32 {
            return Err(Error::invalid("model file", format!("tensor '{name}' has dtype {:?}, expected F32", view.dtype())));
        }
        if view.shape() != cur.dims() {
            return Err(Error::invalid(
                "model file",
                format!("tensor '{name}' has shape {:?} in the file but {:?} in the model", view.shape(), cur.dims()),
            ));
        }
        let vals: Vec<f32> = view.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        values.insert(name.clone(), Tensor::from_vec(cur.device(), &vals, cur.shape().clone())?);
    }
    let mut result = Ok(());
    model.visit_params(&mut |n, p| {
        if let (Ok(()), Some(v)) = (&result, values.get(n)) {
            result = p.set(v);
        }
    });
    result?;
    model.visit_buffers(&mut |n, b| {
        if let Some(v) = values.get(n) {
            b.set(v);
        }
    });
    Ok(())
}

/// Loads `path` into `model`; see [`load_bytes`].
pub fn load(model: &dyn Module, path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    load_bytes(model, &bytes).map_err(|e| match e {
        Error::Invalid { what, msg } => Error::Invalid { what: format!("{}: {what}", path.display()), msg },
        other => other,
    })
}
