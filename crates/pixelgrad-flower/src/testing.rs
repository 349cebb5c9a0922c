//! A fake Fleet API server for tests (feature `fake-server`, native only): it answers the calls
//! a node makes as a SuperLink would, and sends the one hostile thing a test asks for — a
//! crafted message (non-ASCII object IDs, repeated references, too many objects), an answer
//! body that never ends, or no answer at all. Used by `tests/hostile.rs`, the CLI's tests and
//! (through `examples/fake_fleet.rs`) the browser tests.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prost::Message as _;

use crate::npy;
use crate::objects::{self, MAX_ARRAY_CHUNK};
use crate::proto::{self, ObjectTree};

/// What the fake server does.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // a handful per test
pub enum Scenario {
    /// Serves one message (its metadata and tree as `PullMessages` returns them, and the
    /// objects `PullObject` hands out, found or not), then nothing more; the run is then
    /// reported finished.
    Message {
        metadata: proto::Metadata,
        tree: ObjectTree,
        objects: HashMap<String, Vec<u8>>,
    },
    /// Every answer is a `200 application/protobuf` whose chunked body never ends.
    EndlessBody,
    /// Every request is read and never answered; the connection stays open.
    Stall,
}

/// Counters of what the server saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub requests: AtomicU64,
    pub pull_object: AtomicU64,
    pub push_messages: AtomicU64,
    /// The `reason` of the last error reply pushed.
    pub error_reply: std::sync::Mutex<Option<String>>,
}

/// A running fake server on 127.0.0.1; stops when dropped.
pub struct FakeFleet {
    pub url: String,
    pub seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
}

impl Drop for FakeFleet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // wake the accept loop
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

impl FakeFleet {
    /// Starts serving `scenario` on a free port.
    pub fn start(scenario: Scenario) -> std::io::Result<FakeFleet> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", l.local_addr()?);
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let scenario = Arc::new(scenario);
        let served = Arc::new(AtomicBool::new(false));
        std::thread::spawn(move || {
            for s in l.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(s) = s else { continue };
                let (sc, seen, stop, served) = (
                    scenario.clone(),
                    seen2.clone(),
                    stop2.clone(),
                    served.clone(),
                );
                std::thread::spawn(move || connection(s, &sc, &seen, &stop, &served));
            }
        });
        Ok(FakeFleet { url, seen, stop })
    }
}

fn connection(s: TcpStream, sc: &Scenario, seen: &Seen, stop: &AtomicBool, served: &AtomicBool) {
    let Ok(r) = s.try_clone() else { return };
    let mut r = BufReader::new(r);
    let mut w = s;
    loop {
        let mut path = String::new();
        let mut len = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if path.is_empty() {
                path = line.split(' ').nth(1).unwrap_or("").to_string();
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0u8; len.min(64 * 1024 * 1024)];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        seen.requests.fetch_add(1, Ordering::SeqCst);
        match sc {
            Scenario::Stall => {
                // hold the connection until the client gives up (or the server stops)
                let _ = w.set_read_timeout(Some(Duration::from_millis(200)));
                let mut b = [0u8; 1];
                while !stop.load(Ordering::SeqCst) {
                    match r.get_mut().read(&mut b) {
                        Ok(0) => return,
                        Ok(_) => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) => {}
                        Err(_) => return,
                    }
                }
                return;
            }
            Scenario::EndlessBody => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/protobuf\r\ntransfer-encoding: chunked\r\n\r\n";
                if w.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = vec![0u8; 64 * 1024];
                let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
                frame.extend_from_slice(&chunk);
                frame.extend_from_slice(b"\r\n");
                while !stop.load(Ordering::SeqCst) {
                    if w.write_all(&frame).is_err() {
                        return;
                    }
                }
                return;
            }
            Scenario::Message {
                metadata,
                tree,
                objects,
            } => {
                let answer = fleet_answer(&path, &body, metadata, tree, objects, seen, served);
                let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/protobuf\r\ncontent-length: {}\r\n\r\n", answer.len());
                if w.write_all(head.as_bytes())
                    .and_then(|_| w.write_all(&answer))
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

fn fleet_answer(
    path: &str,
    body: &[u8],
    metadata: &proto::Metadata,
    tree: &ObjectTree,
    objects: &HashMap<String, Vec<u8>>,
    seen: &Seen,
    served: &AtomicBool,
) -> Vec<u8> {
    let route = path.trim_start_matches("/v1/fleet/");
    match route {
        "register-node" => proto::RegisterNodeFleetResponse { node_id: 7 }.encode_to_vec(),
        "activate-node" => proto::ActivateNodeResponse { node_id: 7 }.encode_to_vec(),
        "send-node-heartbeat" => proto::SendNodeHeartbeatResponse { success: true }.encode_to_vec(),
        "pull-messages" => {
            if served.swap(true, Ordering::SeqCst) {
                return proto::PullMessagesResponse::default().encode_to_vec();
            }
            proto::PullMessagesResponse {
                reconnect: None,
                messages_list: vec![proto::Message {
                    metadata: Some(metadata.clone()),
                    content: None,
                    error: None,
                }],
                message_object_trees: vec![tree.clone()],
            }
            .encode_to_vec()
        }
        "pull-object" => {
            seen.pull_object.fetch_add(1, Ordering::SeqCst);
            let id = proto::PullObjectRequest::decode(body)
                .map(|r| r.object_id)
                .unwrap_or_default();
            match objects.get(&id) {
                Some(c) => proto::PullObjectResponse {
                    object_found: true,
                    object_available: true,
                    object_content: c.clone(),
                }
                .encode_to_vec(),
                None => proto::PullObjectResponse::default().encode_to_vec(),
            }
        }
        "push-messages" => {
            seen.push_messages.fetch_add(1, Ordering::SeqCst);
            let req = proto::PushMessagesRequest::decode(body).unwrap_or_default();
            if let Some(e) = req.messages_list.first().and_then(|m| m.error.as_ref()) {
                if let Ok(mut g) = seen.error_reply.lock() {
                    *g = Some(e.reason.clone());
                }
            }
            let mut results = HashMap::new();
            let mut wanted = Vec::new();
            for t in &req.message_object_trees {
                results.insert(t.object_id.clone(), 0);
                wanted.extend(objects::post_order(t));
            }
            proto::PushMessagesResponse {
                reconnect: None,
                results,
                objects_to_push: wanted,
                session_id: "fake".into(),
            }
            .encode_to_vec()
        }
        "push-object" => proto::PushObjectResponse { stored: true }.encode_to_vec(),
        "get-run" => proto::GetRunResponse {
            run: Some(proto::Run {
                run_id: metadata.run_id,
                status: Some(proto::RunStatus {
                    status: "finished".into(),
                    ..Default::default()
                }),
            }),
        }
        .encode_to_vec(),
        _ => Vec::new(),
    }
}

// ---- hostile messages ----

/// `head \0 body` as Flower frames an object.
pub fn framed(kind: &str, children: &[String], body: &[u8]) -> Vec<u8> {
    let mut out = format!("{kind} {} {}", children.join(","), body.len()).into_bytes();
    out.push(0);
    out.extend_from_slice(body);
    out
}

/// A message under construction: objects by ID.
#[derive(Default)]
struct Objects(HashMap<String, Vec<u8>>);

impl Objects {
    fn put(&mut self, content: Vec<u8>) -> String {
        let id = objects::object_id(&content);
        self.0.insert(id.clone(), content);
        id
    }
}

fn leaf(id: &str) -> ObjectTree {
    ObjectTree {
        object_id: id.to_string(),
        children: Vec::new(),
    }
}

fn train_metadata() -> proto::Metadata {
    proto::Metadata {
        run_id: 3,
        src_node_id: 1,
        dst_node_id: 7,
        group_id: "1".into(),
        ttl: 600.0,
        message_type: "train".into(),
        created_at: 1.8e9,
        ..Default::default()
    }
}

/// A train message whose content is one `ArrayRecord` with entries `refs` (name → array ID)
/// over the arrays `arrays` (ID → (content, chunk trees)).
fn train_message(
    mut o: Objects,
    arrays: Vec<(String, Vec<ObjectTree>)>,
    refs: &[(String, String)],
) -> Scenario {
    let ids: Vec<String> = arrays.iter().map(|(id, _)| id.clone()).collect();
    let json = format!(
        "{{{}}}",
        refs.iter()
            .map(|(k, v)| format!("{}: {}", objects::py_json_str(k), objects::py_json_str(v)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let rec = o.put(framed("ArrayRecord", &ids, json.as_bytes()));
    let rd_json = format!("{{\"arrays\": {}}}", objects::py_json_str(&rec));
    let rd = o.put(framed(
        "RecordDict",
        std::slice::from_ref(&rec),
        rd_json.as_bytes(),
    ));
    let md = train_metadata();
    let msg = o.put(framed(
        "Message",
        std::slice::from_ref(&rd),
        &objects::message_body(&md, None),
    ));
    let tree = ObjectTree {
        object_id: msg.clone(),
        children: vec![ObjectTree {
            object_id: rd,
            children: vec![ObjectTree {
                object_id: rec,
                children: arrays
                    .into_iter()
                    .map(|(id, chunks)| ObjectTree {
                        object_id: id,
                        children: chunks,
                    })
                    .collect(),
            }],
        }],
    };
    let mut metadata = md;
    metadata.message_id = msg;
    Scenario::Message {
        metadata,
        tree,
        objects: o.0,
    }
}

/// An `Array` object over `chunks` (distinct chunk IDs) listed as `chunk_ids` (indices).
fn array(o: &mut Objects, shape: &[u64], chunks: &[String], chunk_ids: &[usize]) -> String {
    let shape: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let idx: Vec<String> = chunk_ids.iter().map(|i| i.to_string()).collect();
    let body = format!(
        "{{\"dtype\": \"float32\", \"shape\": [{}], \"stype\": \"numpy.ndarray\", \"arraychunk_ids\": [{}]}}",
        shape.join(", "),
        idx.join(", ")
    );
    o.put(framed("Array", chunks, body.as_bytes()))
}

/// A message whose ID (and tree root) is not ASCII: today's slicing of IDs panicked on it.
pub fn non_ascii_id() -> Scenario {
    let id = format!("a{}", "é".repeat(40));
    let mut metadata = train_metadata();
    metadata.message_id = id.clone();
    let mut objects = HashMap::new();
    objects.insert(id.clone(), b"x".to_vec());
    Scenario::Message {
        metadata,
        tree: leaf(&id),
        objects,
    }
}

/// One array claiming `elements` float32 values, its data made of one small chunk listed
/// over and over: a few KiB on the wire that would expand to `4 * elements` bytes.
pub fn repeated_chunks(elements: u64) -> Scenario {
    let mut o = Objects::default();
    let n = usize::try_from(elements).unwrap_or(usize::MAX);
    let header = npy::encode_f32(&[n], &[]); // the npy header alone
    let piece = vec![0u8; 4000];
    let head_id = o.put(framed("ArrayChunk", &[], &header));
    let piece_id = o.put(framed("ArrayChunk", &[], &piece));
    let repeats = (elements * 4).div_ceil(piece.len() as u64) as usize;
    let mut ids = vec![0usize];
    ids.extend(std::iter::repeat_n(1usize, repeats));
    let chunks = vec![head_id.clone(), piece_id.clone()];
    let a = array(&mut o, &[elements], &chunks, &ids);
    train_message(
        o,
        vec![(a.clone(), vec![leaf(&head_id), leaf(&piece_id)])],
        &[("w".to_string(), a)],
    )
}

/// A valid small array (`shape`, zeros) whose only chunk is listed `times` times: its data
/// would be `times` copies of a complete npy buffer.
pub fn repeated_chunk_of_small_array(shape: &[usize], times: usize) -> Scenario {
    let mut o = Objects::default();
    let n: usize = shape.iter().product();
    let data = npy::encode_f32(shape, &vec![0.0; n]);
    let c = o.put(framed("ArrayChunk", &[], &data));
    let shape64: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let a = array(&mut o, &shape64, std::slice::from_ref(&c), &vec![0; times]);
    train_message(
        o,
        vec![(a.clone(), vec![leaf(&c)])],
        &[("w".to_string(), a)],
    )
}

/// One array of `shape` (zeros) named `times` times in the `ArrayRecord`: each name would be
/// inflated into its own copy.
pub fn repeated_array_refs(shape: &[usize], times: usize) -> Scenario {
    let mut o = Objects::default();
    let n: usize = shape.iter().product();
    let data = npy::encode_f32(shape, &vec![0.0; n]);
    assert!(data.len() <= MAX_ARRAY_CHUNK);
    let c = o.put(framed("ArrayChunk", &[], &data));
    let shape64: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let a = array(&mut o, &shape64, std::slice::from_ref(&c), &[0]);
    let refs: Vec<(String, String)> = (0..times).map(|i| (format!("w{i}"), a.clone())).collect();
    train_message(o, vec![(a, vec![leaf(&c)])], &refs)
}

/// A message whose tree names `n` distinct (made-up) chunk objects.
pub fn too_many_objects(n: usize) -> Scenario {
    let o = Objects::default();
    let chunks: Vec<ObjectTree> = (0..n)
        .map(|i| leaf(&objects::object_id(format!("chunk {i}").as_bytes())))
        .collect();
    let a = objects::object_id(b"array");
    train_message(o, vec![(a.clone(), chunks)], &[("w".to_string(), a)])
}

/// A well-formed train message with zero arrays of `shapes` and `config` (the control case:
/// a node must train on it).
pub fn train(shapes: &[Vec<usize>], config: crate::records::ConfigRecord) -> Scenario {
    use crate::records::{ArrayRecord, Record, RecordDict};
    let arrays = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let n: usize = s.iter().product();
            let a = npy::NdArray::new(s.clone(), vec![0.0; n]).expect("zeros fill their shape");
            (format!("p{i}"), a)
        })
        .collect();
    let content = RecordDict(vec![
        ("arrays".into(), Record::Arrays(ArrayRecord(arrays))),
        ("config".into(), Record::Config(config)),
    ]);
    let md = train_metadata();
    let d = objects::deflate_message(&md, Some(&content), None);
    let mut metadata = md;
    metadata.message_id = d.message_id.clone();
    Scenario::Message {
        metadata,
        tree: d.tree,
        objects: d.objects.into_iter().collect(),
    }
}
