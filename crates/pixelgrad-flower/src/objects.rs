//! Flower's message/object format: a message travels as a tree of content-addressed objects.
//!
//! Every object is `head \0 body` with `head = "<Type> <child ids joined by ','> <body length>"`
//! and its ID is the SHA-256 (hex) of those bytes. The types and bodies, as flwr 1.42 deflates
//! them:
//!
//! | type | body | children |
//! | --- | --- | --- |
//! | `Message` | protobuf `Message { metadata (message_id = ""), error }` | the `RecordDict`, if content |
//! | `RecordDict` | JSON `{"name": "<record id>", ...}` | its records, unique, first-seen order |
//! | `ArrayRecord` | JSON `{"name": "<array id>", ...}` | its arrays, unique |
//! | `Array` | JSON `{"dtype", "shape", "stype", "arraychunk_ids": [indices into children]}` | its chunks, unique |
//! | `ArrayChunk` | up to 5 MiB of the array's `np.save` bytes | none |
//! | `MetricRecord` / `ConfigRecord` | protobuf `MetricRecord` / `ConfigRecord` | none |
//!
//! JSON is written as Python's `json.dumps` writes it (`", "` and `": "` separators, ASCII with
//! `\uXXXX` escapes), so the same content gives the same object IDs as flwr (tested against it).
//! A message's `message_id` is the ID of its `Message` object. [`Deflated`] is a message ready
//! to push (objects in post-order, the tree); [`inflate_message`] rebuilds a pulled one and
//! checks every ID, head, length and reference.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use prost::Message as _;
use serde::de::{Deserializer, MapAccess, Visitor};
use sha2::{Digest, Sha256};

use crate::limits::{MessageLimits, MAX_TREE_DEPTH};
use crate::npy::{self, NdArray, STYPE_NUMPY};
use crate::proto::{self, ObjectTree};
use crate::records::{self, ArrayRecord, Record, RecordDict};
use crate::{FlowerError, Result};

pub use crate::limits::MAX_ARRAY_CHUNK;

/// SHA-256 of `content`, lower-case hex: an object's ID.
pub fn object_id(content: &[u8]) -> String {
    let d = Sha256::digest(content);
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn with_head(kind: &str, children: &[String], body: &[u8]) -> Vec<u8> {
    let head = format!("{kind} {} {}", children.join(","), body.len());
    let mut out = Vec::with_capacity(head.len() + 1 + body.len());
    out.extend_from_slice(head.as_bytes());
    out.push(0);
    out.extend_from_slice(body);
    out
}

/// A JSON string literal as Python's `json.dumps` (with `ensure_ascii=True`) writes it.
pub fn py_json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn py_json_refs(refs: &[(String, String)]) -> String {
    let items: Vec<String> = refs
        .iter()
        .map(|(k, v)| format!("{}: {}", py_json_str(k), py_json_str(v)))
        .collect();
    format!("{{{}}}", items.join(", "))
}

fn unique(ids: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.iter()
        .filter(|i| seen.insert(i.as_str()))
        .cloned()
        .collect()
}

/// A message deflated into objects, ready to push.
#[derive(Clone, Debug)]
pub struct Deflated {
    /// The `Message` object's ID (= the message ID).
    pub message_id: String,
    /// The object tree, rooted at the message.
    pub tree: ObjectTree,
    /// Every object, each once, children before parents (Flower's post-order).
    pub objects: Vec<(String, Vec<u8>)>,
}

impl Deflated {
    /// Content of object `id`.
    pub fn get(&self, id: &str) -> Option<&[u8]> {
        self.objects
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, c)| c.as_slice())
    }
    /// Total bytes of all objects.
    pub fn bytes(&self) -> usize {
        self.objects.iter().map(|(_, c)| c.len()).sum()
    }
}

#[derive(Default)]
struct Builder {
    objects: Vec<(String, Vec<u8>)>,
    seen: HashSet<String>,
}

impl Builder {
    fn put(&mut self, content: Vec<u8>, children: Vec<ObjectTree>) -> ObjectTree {
        let id = object_id(&content);
        if self.seen.insert(id.clone()) {
            self.objects.push((id.clone(), content));
        }
        ObjectTree {
            object_id: id,
            children,
        }
    }

    /// Trees of `children` deduplicated by ID, first-seen order (as Flower's `children` dicts).
    fn unique_trees(trees: Vec<ObjectTree>) -> Vec<ObjectTree> {
        let mut seen = HashSet::new();
        trees
            .into_iter()
            .filter(|t| seen.insert(t.object_id.clone()))
            .collect()
    }

    fn array(&mut self, a: &NdArray) -> ObjectTree {
        let data = npy::encode_f32(&a.shape, &a.data);
        let chunks: Vec<ObjectTree> = data
            .chunks(MAX_ARRAY_CHUNK)
            .map(|c| self.put(with_head("ArrayChunk", &[], c), Vec::new()))
            .collect();
        let ids: Vec<String> = chunks.iter().map(|t| t.object_id.clone()).collect();
        let uniq = unique(&ids);
        let idx: Vec<String> = ids
            .iter()
            .map(|id| uniq.iter().position(|u| u == id).unwrap_or(0).to_string())
            .collect();
        let shape: Vec<String> = a.shape.iter().map(|d| d.to_string()).collect();
        let body = format!(
            "{{\"dtype\": \"float32\", \"shape\": [{}], \"stype\": {}, \"arraychunk_ids\": [{}]}}",
            shape.join(", "),
            py_json_str(STYPE_NUMPY),
            idx.join(", ")
        );
        let children = Self::unique_trees(chunks);
        self.put(with_head("Array", &uniq, body.as_bytes()), children)
    }

    fn array_record(&mut self, r: &ArrayRecord) -> ObjectTree {
        let trees: Vec<ObjectTree> = r.0.iter().map(|(_, a)| self.array(a)).collect();
        let refs: Vec<(String, String)> =
            r.0.iter()
                .zip(&trees)
                .map(|((k, _), t)| (k.clone(), t.object_id.clone()))
                .collect();
        let children = Self::unique_trees(trees);
        let ids: Vec<String> = children.iter().map(|t| t.object_id.clone()).collect();
        self.put(
            with_head("ArrayRecord", &ids, py_json_refs(&refs).as_bytes()),
            children,
        )
    }

    fn record(&mut self, r: &Record) -> ObjectTree {
        match r {
            Record::Arrays(a) => self.array_record(a),
            Record::Metrics(m) => self.put(
                with_head(
                    "MetricRecord",
                    &[],
                    &records::metric_to_proto(m).encode_to_vec(),
                ),
                Vec::new(),
            ),
            Record::Config(c) => self.put(
                with_head(
                    "ConfigRecord",
                    &[],
                    &records::config_to_proto(c).encode_to_vec(),
                ),
                Vec::new(),
            ),
        }
    }

    fn record_dict(&mut self, d: &RecordDict) -> ObjectTree {
        let trees: Vec<ObjectTree> = d.0.iter().map(|(_, r)| self.record(r)).collect();
        let refs: Vec<(String, String)> =
            d.0.iter()
                .zip(&trees)
                .map(|((k, _), t)| (k.clone(), t.object_id.clone()))
                .collect();
        let children = Self::unique_trees(trees);
        let ids: Vec<String> = children.iter().map(|t| t.object_id.clone()).collect();
        self.put(
            with_head("RecordDict", &ids, py_json_refs(&refs).as_bytes()),
            children,
        )
    }
}

/// Deflates a message with `metadata` (its `message_id` is ignored) and either `content` or
/// `error`, as Flower's `Message.deflate` and its records do.
pub fn deflate_message(
    metadata: &proto::Metadata,
    content: Option<&RecordDict>,
    error: Option<&proto::Error>,
) -> Deflated {
    let mut b = Builder::default();
    let children: Vec<ObjectTree> = content.map(|c| vec![b.record_dict(c)]).unwrap_or_default();
    let ids: Vec<String> = children.iter().map(|t| t.object_id.clone()).collect();
    let body = message_body(metadata, error);
    let tree = b.put(with_head("Message", &ids, &body), children);
    Deflated {
        message_id: tree.object_id.clone(),
        tree,
        objects: b.objects,
    }
}

/// The protobuf body of a `Message` object: metadata without its ID, the error if any.
pub fn message_body(metadata: &proto::Metadata, error: Option<&proto::Error>) -> Vec<u8> {
    let mut md = metadata.clone();
    md.message_id.clear();
    proto::Message {
        metadata: Some(md),
        content: None,
        error: error.cloned(),
    }
    .encode_to_vec()
}

// ---- inflating ----

/// Longest `np.save` header accepted in front of an array's data (NumPy writes 128 bytes or
/// less for the dtypes read here).
pub const MAX_NPY_HEADER: u64 = 4096;

/// Whether `id` is an object ID as Flower makes them: 64 lower-case hex characters (SHA-256).
pub fn is_object_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `id` for a message: its first 12 characters if it is an object ID, else an escaped prefix.
fn show_id(id: &str) -> String {
    if is_object_id(id) {
        id[..12].to_string()
    } else {
        let head: String = id.chars().take(16).collect();
        format!("{head:?} (not an object ID)")
    }
}

fn bad(id: &str, msg: impl Into<String>) -> FlowerError {
    FlowerError::Protocol(format!("object {}: {}", show_id(id), msg.into()))
}

/// Refuses anything but 64 lower-case hex characters; `what` says where the ID was found.
pub fn check_object_id(id: &str, what: &str) -> Result<()> {
    if is_object_id(id) {
        Ok(())
    } else {
        Err(FlowerError::Protocol(format!(
            "{what}: {} is not an object ID (64 lower-case hex characters)",
            show_id(id)
        )))
    }
}

/// Splits and checks an object: `id` is an object ID, the content hashes to it, the head is
/// `type children len` with distinct child IDs, and the body has that length. Returns (type,
/// children, body).
pub fn parse_object<'a>(id: &str, content: &'a [u8]) -> Result<(&'a str, Vec<String>, &'a [u8])> {
    check_object_id(id, "pulled object")?;
    if object_id(content) != id {
        return Err(bad(id, "content does not hash to its ID"));
    }
    let split = content
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| bad(id, "no head/body divider"))?;
    let head = std::str::from_utf8(&content[..split]).map_err(|_| bad(id, "head is not UTF-8"))?;
    let body = &content[split + 1..];
    let parts: Vec<&str> = head.split(' ').collect();
    let [kind, children, len] = parts[..] else {
        return Err(bad(
            id,
            format!("head {:?} is not 'type children length'", show_head(head)),
        ));
    };
    if len.parse::<usize>().ok() != Some(body.len()) {
        return Err(bad(
            id,
            format!(
                "head says {:?} body bytes, found {}",
                show_head(len),
                body.len()
            ),
        ));
    }
    let children: Vec<String> = if children.is_empty() {
        Vec::new()
    } else {
        children.split(',').map(str::to_string).collect()
    };
    let mut seen = HashSet::with_capacity(children.len());
    for c in &children {
        check_object_id(c, &format!("a child of object {}", show_id(id)))?;
        if !seen.insert(c.as_str()) {
            return Err(bad(id, format!("child {} is listed twice", show_id(c))));
        }
    }
    Ok((kind, children, body))
}

/// At most 80 characters of a head, for messages.
fn show_head(h: &str) -> String {
    h.chars().take(80).collect()
}

/// A JSON object's entries in document order (serde_json's own map would sort them).
struct Ordered<V>(Vec<(String, V)>);

impl<'de, V: serde::Deserialize<'de>> serde::Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V2<V>(std::marker::PhantomData<V>);
        impl<'de, V: serde::Deserialize<'de>> Visitor<'de> for V2<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V2(std::marker::PhantomData))
    }
}

#[derive(serde::Deserialize)]
struct ArrayMeta {
    dtype: String,
    shape: Vec<u64>,
    stype: String,
    arraychunk_ids: Vec<usize>,
}

/// A pulled message: metadata plus content or error.
#[derive(Clone, Debug)]
pub struct InflatedMessage {
    pub metadata: proto::Metadata,
    pub content: Option<RecordDict>,
    pub error: Option<proto::Error>,
}

/// A checked object: type, children, body.
struct Parsed<'a> {
    kind: &'a str,
    children: Vec<String>,
    body: &'a [u8],
}

struct Inflater<'a> {
    parsed: HashMap<&'a str, Parsed<'a>>,
    limits: MessageLimits,
    /// Array elements inflated so far, every reference counted.
    elements: Cell<u64>,
}

impl<'a> Inflater<'a> {
    fn get(&self, id: &str, want: &str) -> Result<&Parsed<'a>> {
        let p = self
            .parsed
            .get(id)
            .ok_or_else(|| bad(id, format!("{want} object was not pulled")))?;
        if p.kind != want {
            return Err(bad(
                id,
                format!("expected a {want}, found a {:?}", show_head(p.kind)),
            ));
        }
        Ok(p)
    }

    fn refs(&self, id: &str, p: &Parsed) -> Result<Vec<(String, String)>> {
        let Ordered(refs) = serde_json::from_slice::<Ordered<String>>(p.body)
            .map_err(|e| bad(id, format!("bad reference JSON: {e}")))?;
        if refs.len() > self.limits.max_objects {
            return Err(FlowerError::limit(
                format!("the number of references in object {}", show_id(id)),
                refs.len() as u64,
                self.limits.max_objects as u64,
            ));
        }
        for (_, v) in &refs {
            check_object_id(v, &format!("a reference in object {}", show_id(id)))?;
        }
        let referenced: HashSet<&str> = refs.iter().map(|(_, v)| v.as_str()).collect();
        let listed: HashSet<&str> = p.children.iter().map(String::as_str).collect();
        if referenced != listed {
            return Err(bad(
                id,
                "references in the body do not match the children in the head",
            ));
        }
        Ok(refs)
    }

    /// Counts `numel` more elements against the message's limit (before any is decoded: an
    /// array referenced twice counts twice).
    fn count_elements(&self, numel: u64) -> Result<()> {
        let total = self.elements.get().saturating_add(numel);
        if total > self.limits.max_elements {
            return Err(FlowerError::limit(
                "the array elements of the server's message (the local model has fewer parameters)",
                total,
                self.limits.max_elements,
            ));
        }
        self.elements.set(total);
        Ok(())
    }

    fn array(&self, id: &str) -> Result<NdArray> {
        let p = self.get(id, "Array")?;
        let meta: ArrayMeta = serde_json::from_slice(p.body)
            .map_err(|e| bad(id, format!("bad Array metadata: {e}")))?;
        if meta.stype != STYPE_NUMPY {
            return Err(bad(
                id,
                format!(
                    "array serialisation {:?} is not supported ({STYPE_NUMPY})",
                    show_head(&meta.stype)
                ),
            ));
        }
        // Flower's legacy strategies (and so SecAgg+) send arrays whose metadata has no dtype
        // or shape: only the `np.save` bytes say what they are.
        let legacy = meta.dtype.is_empty() && meta.shape.is_empty();
        let width: u64 = match meta.dtype.as_str() {
            "float32" => 4,
            "float64" | "" if legacy => 8,
            "float64" => 8,
            other => {
                return Err(bad(
                    id,
                    format!(
                        "dtype {:?} is not supported (float32 or float64)",
                        show_head(other)
                    ),
                ))
            }
        };
        // Elements counted before anything is joined (a legacy array's header is read first).
        let declared = if legacy {
            None
        } else {
            let numel = meta
                .shape
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .ok_or_else(|| bad(id, format!("shape {:?} overflows", meta.shape)))?;
            self.count_elements(numel)?;
            Some(numel)
        };
        if meta.arraychunk_ids.len() > self.limits.max_objects {
            return Err(FlowerError::limit(
                format!("the chunk references of array {}", show_id(id)),
                meta.arraychunk_ids.len() as u64,
                self.limits.max_objects as u64,
            ));
        }
        // The chunks' total length, repeats included, before they are joined: no more than the
        // shape's values and an npy header (for a legacy array, than the elements the message
        // may still hold, as float64).
        let mut chunks = Vec::with_capacity(meta.arraychunk_ids.len());
        let mut expanded = 0u64;
        for &i in &meta.arraychunk_ids {
            let cid = p
                .children
                .get(i)
                .ok_or_else(|| bad(id, format!("chunk index {i} out of range")))?;
            let c = self.get(cid, "ArrayChunk")?;
            if !c.children.is_empty() {
                return Err(bad(cid, "an ArrayChunk has no children"));
            }
            expanded = expanded.saturating_add(c.body.len() as u64);
            chunks.push(c.body);
        }
        match declared {
            Some(numel) => {
                let need = numel.saturating_mul(width).saturating_add(MAX_NPY_HEADER);
                if expanded > need {
                    return Err(bad(id, format!("its chunks expand to {expanded} bytes, more than {numel} {} values need", meta.dtype)));
                }
            }
            None => {
                let left = self.limits.max_elements.saturating_sub(self.elements.get());
                let most = left.saturating_mul(width).saturating_add(MAX_NPY_HEADER);
                if expanded > most {
                    return Err(FlowerError::limit(
                        "the array bytes of the server's message (the local model has fewer parameters)",
                        expanded,
                        most,
                    ));
                }
            }
        }
        let mut data = Vec::with_capacity(expanded as usize);
        for c in chunks {
            data.extend_from_slice(c);
        }
        if declared.is_none() {
            self.count_elements(npy::declared_elements(&data)?)?;
        }
        let a = npy::decode(&data)?;
        if !legacy {
            let shape: Vec<u64> = a.shape.iter().map(|&d| d as u64).collect();
            if shape != meta.shape || a.dtype != meta.dtype {
                return Err(bad(
                    id,
                    format!(
                        "metadata says {} {:?}, data holds {} {:?}",
                        meta.dtype, meta.shape, a.dtype, a.shape
                    ),
                ));
            }
        }
        Ok(a)
    }

    fn record(&self, id: &str) -> Result<Record> {
        let p = self
            .parsed
            .get(id)
            .ok_or_else(|| bad(id, "record object was not pulled"))?;
        match p.kind {
            "ArrayRecord" => {
                let refs = self.refs(id, p)?;
                let mut items = Vec::with_capacity(refs.len());
                for (k, aid) in refs {
                    items.push((k, self.array(&aid)?));
                }
                Ok(Record::Arrays(ArrayRecord(items)))
            }
            "MetricRecord" => Ok(Record::Metrics(records::metric_from_proto(proto::decode(
                "MetricRecord",
                p.body,
            )?)?)),
            "ConfigRecord" => Ok(Record::Config(records::config_from_proto(proto::decode(
                "ConfigRecord",
                p.body,
            )?)?)),
            other => Err(bad(
                id,
                format!("{:?} is not a record type", show_head(other)),
            )),
        }
    }
}

/// Rebuilds the message `message_id` from pulled `objects` (ID → content) within `limits`:
/// every object is checked once (ID, hash, head, length), then references are followed with
/// every array's size counted before it is allocated. The metadata's `message_id` is set to
/// the ID.
pub fn inflate_message(
    message_id: &str,
    objects: &HashMap<String, Vec<u8>>,
    limits: &MessageLimits,
) -> Result<InflatedMessage> {
    check_object_id(message_id, "message ID")?;
    if objects.len() > limits.max_objects {
        return Err(FlowerError::limit(
            "the number of objects of the server's message",
            objects.len() as u64,
            limits.max_objects as u64,
        ));
    }
    let mut parsed = HashMap::with_capacity(objects.len());
    for (id, content) in objects {
        let (kind, children, body) = parse_object(id, content)?;
        parsed.insert(
            id.as_str(),
            Parsed {
                kind,
                children,
                body,
            },
        );
    }
    let inf = Inflater {
        parsed,
        limits: *limits,
        elements: Cell::new(0),
    };
    let p = inf.get(message_id, "Message")?;
    let m: proto::Message = proto::decode("Message object", p.body)?;
    let mut metadata = m
        .metadata
        .ok_or_else(|| bad(message_id, "message has no metadata"))?;
    metadata.message_id = message_id.to_string();
    let content = match p.children.as_slice() {
        [] => None,
        [rd] => {
            let r = inf.get(rd, "RecordDict")?;
            let refs = inf.refs(rd, r)?;
            let mut items = Vec::with_capacity(refs.len());
            for (k, rid) in refs {
                items.push((k, inf.record(&rid)?));
            }
            Some(RecordDict(items))
        }
        _ => return Err(bad(message_id, "a Message has at most one child")),
    };
    if content.is_some() == m.error.is_some() {
        return Err(bad(
            message_id,
            "a message carries either content or an error",
        ));
    }
    Ok(InflatedMessage {
        metadata,
        content,
        error: m.error,
    })
}

/// Object IDs of `tree` in post-order (children first), each once.
pub fn post_order(tree: &ObjectTree) -> Vec<String> {
    fn walk(t: &ObjectTree, out: &mut Vec<String>, seen: &mut HashSet<String>) {
        for c in &t.children {
            walk(c, out, seen);
        }
        if seen.insert(t.object_id.clone()) {
            out.push(t.object_id.clone());
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut out, &mut HashSet::new());
    out
}

/// The object IDs of a pulled message's `tree` in post-order, each once, after checking it
/// within `limits`: every ID is an object ID, the tree is at most [`MAX_TREE_DEPTH`] deep and
/// names at most `max_objects` distinct objects (in at most four times as many nodes).
pub fn checked_tree_ids(tree: &ObjectTree, limits: &MessageLimits) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut nodes = 0usize;
    let max_nodes = limits.max_objects.saturating_mul(4);
    // Iterative post-order: (node, depth, children visited).
    let mut stack: Vec<(&ObjectTree, usize, bool)> = vec![(tree, 1, false)];
    while let Some((t, depth, expanded)) = stack.pop() {
        if expanded {
            if seen.insert(t.object_id.as_str()) {
                if seen.len() > limits.max_objects {
                    return Err(FlowerError::limit(
                        "the number of objects of the server's message",
                        seen.len() as u64,
                        limits.max_objects as u64,
                    ));
                }
                out.push(t.object_id.clone());
            }
            continue;
        }
        nodes += 1;
        if nodes > max_nodes {
            return Err(FlowerError::limit(
                "the nodes of the server's object tree",
                nodes as u64,
                max_nodes as u64,
            ));
        }
        check_object_id(&t.object_id, "the object tree")?;
        if depth > MAX_TREE_DEPTH {
            return Err(FlowerError::Protocol(format!(
                "the object tree is deeper than a Flower message ({MAX_TREE_DEPTH} levels)"
            )));
        }
        stack.push((t, depth, true));
        for c in t.children.iter().rev() {
            stack.push((c, depth + 1, false));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{ConfigRecord, ConfigValue, MetricRecord, MetricValue};

    fn sample() -> RecordDict {
        let w = NdArray::new(vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let z = NdArray::new(vec![3], vec![0.0; 3]).unwrap();
        RecordDict(vec![
            (
                "arrays".into(),
                Record::Arrays(ArrayRecord(vec![
                    ("w".into(), w),
                    ("b1".into(), z.clone()),
                    ("b2".into(), z),
                ])),
            ),
            (
                "metrics".into(),
                Record::Metrics(MetricRecord(vec![(
                    "num-examples".into(),
                    MetricValue::Int(7),
                )])),
            ),
            (
                "config".into(),
                Record::Config(ConfigRecord(vec![("lr".into(), ConfigValue::Float(0.1))])),
            ),
        ])
    }

    #[test]
    fn deflate_inflate_round_trip_dedups_identical_arrays() {
        let md = proto::Metadata {
            run_id: 5,
            message_type: "train".into(),
            created_at: 1.8e9,
            ttl: 60.0,
            ..Default::default()
        };
        let d = deflate_message(&md, Some(&sample()), None);
        // message, record dict, 3 records, 2 distinct arrays, 2 distinct chunks.
        assert_eq!(d.objects.len(), 9);
        assert_eq!(post_order(&d.tree).last(), Some(&d.message_id));
        let map: HashMap<String, Vec<u8>> = d.objects.iter().cloned().collect();
        let m = inflate_message(&d.message_id, &map, &MessageLimits::generous()).unwrap();
        assert_eq!(
            checked_tree_ids(&d.tree, &MessageLimits::generous()).unwrap(),
            post_order(&d.tree)
        );
        assert_eq!(m.content.unwrap(), sample());
        assert_eq!(m.metadata.run_id, 5);
    }

    #[test]
    fn tampering_is_detected() {
        let md = proto::Metadata {
            run_id: 5,
            ..Default::default()
        };
        let d = deflate_message(&md, Some(&sample()), None);
        let mut map: HashMap<String, Vec<u8>> = d.objects.iter().cloned().collect();
        let (id, c) = d.objects[0].clone();
        let mut c2 = c.clone();
        *c2.last_mut().unwrap() ^= 1;
        map.insert(id, c2);
        let e = inflate_message(&d.message_id, &map, &MessageLimits::generous())
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not hash"), "{e}");
    }

    #[test]
    fn python_json_strings() {
        assert_eq!(py_json_str("a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(py_json_str("é😀"), r#""\u00e9\ud83d\ude00""#);
    }
}
