//! The layout table of a model: where each of its live tensors (parameters, buffers, optimizer
//! state) sits in device memory — shape, texture or buffer size, texels or elements used,
//! layout and bytes — as the WebGL article says to keep. Rows come from
//! [`pixelgrad_core::Backend::describe_storage`]; `pixelgrad backends --layouts` and
//! `model.layouts()` in JS print them.

use pixelgrad_core::{StorageLayout, Tensor};
use serde_json::{json, Value};

use crate::{Module, Optimizer};

/// One live tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutRow {
    /// `0.weight`, `m/0.weight` (optimizer state)...
    pub name: String,
    pub shape: Vec<usize>,
    pub elements: usize,
    /// `None` where the backend does not describe its storage.
    pub storage: Option<StorageLayout>,
}

/// Every parameter and buffer of `model`, then the tensors of `opt`'s state.
pub fn layout_table(model: &dyn Module, opt: Option<&dyn Optimizer>) -> Vec<LayoutRow> {
    let mut tensors = crate::io::named_tensors(model);
    if let Some(o) = opt {
        tensors.extend(o.state().tensors);
    }
    tensors.iter().map(|(n, t)| row(n, t)).collect()
}

/// The row of one tensor.
pub fn row(name: &str, t: &Tensor) -> LayoutRow {
    LayoutRow {
        name: name.to_string(),
        shape: t.dims().to_vec(),
        elements: t.numel(),
        storage: t.device().backend().describe_storage(t.storage(), t.numel()),
    }
}

/// The rows as an aligned text table, with a total of bytes.
pub fn format_table(rows: &[LayoutRow]) -> String {
    let mut s = format!(
        "{:<16} {:<12} {:>8} {:<8} {:>11} {:<8} {:>15} {:>9}  {}\n",
        "tensor", "shape", "elements", "memory", "size", "format", "used/allocated", "bytes", "layout"
    );
    let mut total = 0;
    for r in rows {
        let shape = format!("{:?}", r.shape);
        match &r.storage {
            Some(l) => {
                total += l.bytes;
                let size = if l.container == "texture" { format!("{}x{}", l.width, l.height) } else { format!("{}", l.width) };
                let unit = if l.container == "texture" { "texels" } else { "elems" };
                s += &format!(
                    "{:<16} {:<12} {:>8} {:<8} {:>11} {:<8} {:>15} {:>9}  {}\n",
                    r.name,
                    shape,
                    r.elements,
                    l.container,
                    size,
                    l.format,
                    format!("{}/{} {unit}", l.used, l.allocated),
                    l.bytes,
                    l.layout
                );
            }
            None => s += &format!("{:<16} {:<12} {:>8} (the backend does not describe its storage)\n", r.name, shape, r.elements),
        }
    }
    s += &format!("{} tensors, {total} bytes\n", rows.len());
    s
}

/// The rows as JSON objects: `{ name, shape, elements, memory, width, height, format, used,
/// allocated, layout, bytes }` (the storage keys absent where the backend does not say).
pub fn to_json(rows: &[LayoutRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                let mut o = json!({ "name": r.name, "shape": r.shape, "elements": r.elements });
                if let (Some(l), Some(m)) = (&r.storage, o.as_object_mut()) {
                    m.insert("memory".into(), json!(l.container));
                    m.insert("width".into(), json!(l.width));
                    m.insert("height".into(), json!(l.height));
                    m.insert("format".into(), json!(l.format));
                    m.insert("used".into(), json!(l.used));
                    m.insert("allocated".into(), json!(l.allocated));
                    m.insert("layout".into(), json!(l.layout));
                    m.insert("bytes".into(), json!(l.bytes));
                }
                o
            })
            .collect(),
    )
}
