//! External data: tensors whose bytes a model keeps in files beside it
//! (`data_location = EXTERNAL`, with `location`, `offset` and `length` entries), as ONNX
//! requires above 2 GB and exporters often do below.
//!
//! Before a model is decoded, every external tensor (the main graph's and every subgraph's
//! initializers, tensor attributes) gets its bytes from an [`External`] source: the model's
//! folder ([`crate::Model::load`]) or bytes the caller passes by location
//! ([`crate::Model::from_bytes_with_external`]: in a browser, the wasm binding). A file
//! bears hostile input like the model: `location` must be a plain relative path inside the
//! model's folder (no absolute path, no `..`, no symbolic link leading out of it); `offset +
//! length` must lie inside the file; the bytes must be those of the tensor's shape; all the
//! external bytes of one model are at most [`MAX_EXTERNAL_BYTES`]. A missing file is an
//! error naming it. (A wasm32 instance has at most 4 GiB of memory for the model, its
//! external data and the run together.)

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use crate::proto::{attribute_type as at, GraphProto, ModelProto, TensorProto};
use crate::{OnnxError, Result};

/// Most bytes of external data one model may read, in all (16 GiB).
pub const MAX_EXTERNAL_BYTES: u64 = 1 << 34;

/// `TensorProto.DataLocation.EXTERNAL`.
const EXTERNAL: i32 = 1;

/// Where the bytes of external tensors come from.
pub enum External<'a> {
    /// Nowhere: an external tensor is an error naming its file.
    None,
    /// Files in this folder (the model's).
    Folder(&'a Path),
    /// The contents of each file, by its `location` as the model names it.
    Bytes(&'a HashMap<String, Vec<u8>>),
}

/// Reads every external tensor of `m` from `source` into the tensor (as `raw_data`), so
/// decoding sees ordinary tensors.
pub(crate) fn resolve(m: &mut ModelProto, source: &External) -> Result<()> {
    let mut r = Resolver { source, files: HashMap::new(), total: 0 };
    if let Some(g) = m.graph.as_mut() {
        r.graph(g)?;
    }
    Ok(())
}

struct Resolver<'a> {
    source: &'a External<'a>,
    /// Open files of [`External::Folder`] and their lengths, by location.
    files: HashMap<String, (std::fs::File, u64)>,
    total: u64,
}

impl Resolver<'_> {
    fn graph(&mut self, g: &mut GraphProto) -> Result<()> {
        for t in &mut g.initializer {
            let what = format!("initializer '{}'", t.name);
            self.tensor(t, &what)?;
        }
        for n in &mut g.node {
            for a in &mut n.attribute {
                if a.r#type == at::TENSOR || a.t.is_some() {
                    if let Some(t) = a.t.as_mut() {
                        self.tensor(t, &format!("attribute '{}' of node '{}'", a.name, n.name))?;
                    }
                }
                if let Some(sub) = a.g.as_mut() {
                    self.graph(sub)?;
                }
                for sub in &mut a.graphs {
                    self.graph(sub)?;
                }
            }
        }
        Ok(())
    }

    fn tensor(&mut self, t: &mut TensorProto, what: &str) -> Result<()> {
        if t.data_location != EXTERNAL {
            if !t.external_data.is_empty() {
                return Err(OnnxError::Parse(format!("tensor {what} has external_data entries but its data_location is not EXTERNAL")));
            }
            return Ok(());
        }
        let entry = |key: &str| t.external_data.iter().find(|e| e.key == key).map(|e| e.value.clone());
        let location = entry("location").ok_or_else(|| OnnxError::Parse(format!("tensor {what} is external but names no location")))?;
        let number = |key: &str| -> Result<Option<u64>> {
            entry(key)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| OnnxError::Parse(format!("tensor {what}: external data {key} '{v}' is not a number")))
                })
                .transpose()
        };
        let (offset, length) = (number("offset")?.unwrap_or(0), number("length")?);
        let bytes = match self.source {
            External::None => {
                return Err(OnnxError::UnsupportedModel(format!(
                    "tensor {what} keeps its data in the external file '{location}': load the model from its file (beside that file), or pass the file's bytes (Model::from_bytes_with_external; in JS, loadOnnx(url, {{ externalData }}))"
                )))
            }
            External::Bytes(files) => {
                check_location(&location, what)?;
                let file = files.get(&location).ok_or_else(|| OnnxError::Io {
                    path: location.clone(),
                    msg: format!("external data file of tensor {what} was not given (given: {})", given(files)),
                })?;
                let (start, end) = span(offset, length, file.len() as u64, &location, what)?;
                self.count(end - start, what)?;
                file[start as usize..end as usize].to_vec()
            }
            External::Folder(dir) => {
                check_location(&location, what)?;
                if !self.files.contains_key(&location) {
                    let f = open_inside(dir, &location, what)?;
                    self.files.insert(location.clone(), f);
                }
                let len = self.files.get(&location).map_or(0, |f| f.1);
                let (start, end) = span(offset, length, len, &location, what)?;
                self.count(end - start, what)?;
                let (file, _) = self.files.get_mut(&location).ok_or_else(|| OnnxError::Parse(location.clone()))?;
                let path = dir.join(&location);
                let n = usize::try_from(end - start)
                    .map_err(|_| OnnxError::UnsupportedModel(format!("tensor {what}: {} bytes do not fit this machine's memory", end - start)))?;
                let mut buf = vec![0u8; n];
                file.seek(SeekFrom::Start(start)).map_err(|e| OnnxError::io(&path, e))?;
                file.read_exact(&mut buf).map_err(|e| OnnxError::io(&path, e))?;
                buf
            }
        };
        t.raw_data = bytes;
        t.data_location = 0;
        t.external_data.clear();
        Ok(())
    }

    fn count(&mut self, n: u64, what: &str) -> Result<()> {
        self.total = self.total.saturating_add(n);
        if self.total > MAX_EXTERNAL_BYTES {
            return Err(OnnxError::UnsupportedModel(format!(
                "tensor {what}: the model's external data passes {MAX_EXTERNAL_BYTES} bytes, the most pixelgrad reads"
            )));
        }
        Ok(())
    }
}

/// `offset..offset + length` (to the end of the file without a length), inside a file of
/// `len` bytes.
fn span(offset: u64, length: Option<u64>, len: u64, location: &str, what: &str) -> Result<(u64, u64)> {
    let end = match length {
        Some(l) => offset.checked_add(l),
        None => Some(len),
    };
    match end {
        Some(end) if offset <= end && end <= len => Ok((offset, end)),
        _ => Err(OnnxError::Parse(format!(
            "tensor {what}: external data at offset {offset}{} lies outside '{location}' ({len} bytes)",
            length.map(|l| format!(", length {l}")).unwrap_or_default()
        ))),
    }
}

/// A `location` must be a plain relative path that stays in the model's folder.
fn check_location(location: &str, what: &str) -> Result<()> {
    let refuse = |why: &str| Err(OnnxError::UnsupportedModel(format!("tensor {what}: external data location '{location}' {why}")));
    let p = Path::new(location);
    if location.is_empty() {
        return refuse("is empty");
    }
    // `\` and drive letters too: a location written on Windows is read the same everywhere
    if p.is_absolute() || location.starts_with(['/', '\\']) || location.as_bytes().get(1) == Some(&b':') {
        return refuse("is an absolute path (it must be relative to the model's folder)");
    }
    if location.split(['/', '\\']).any(|c| c == "..") || p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return refuse("leaves the model's folder");
    }
    Ok(())
}

/// Opens `location` in `dir`, refusing a path that resolves outside it (a symbolic link).
fn open_inside(dir: &Path, location: &str, what: &str) -> Result<(std::fs::File, u64)> {
    let path: PathBuf = dir.join(location);
    let missing =
        |e: std::io::Error| OnnxError::Io { path: path.display().to_string(), msg: format!("external data file of tensor {what}: {e}") };
    let real = path.canonicalize().map_err(missing)?;
    let base = dir.canonicalize().map_err(|e| OnnxError::io(dir, e))?;
    if !real.starts_with(&base) {
        return Err(OnnxError::UnsupportedModel(format!(
            "tensor {what}: external data location '{location}' resolves outside the model's folder"
        )));
    }
    let f = std::fs::File::open(&real).map_err(missing)?;
    let len = f.metadata().map_err(|e| OnnxError::io(&real, e))?.len();
    Ok((f, len))
}

/// The given file names, for an error.
fn given(files: &HashMap<String, Vec<u8>>) -> String {
    if files.is_empty() {
        return "none".into();
    }
    let mut names: Vec<&str> = files.keys().map(|k| k.as_str()).collect();
    names.sort();
    names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
}
