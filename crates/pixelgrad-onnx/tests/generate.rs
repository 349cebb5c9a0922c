//! Generation with an imported decoder (issue 42 item 4, issue 41 item 4): the key/value cache
//! kept on the device gives the same tokens as recomputing the whole sequence every step.
//!
//! The decoders are built here with the crate's own protobuf messages, in Hugging Face's layout
//! with dynamic shapes as exporters write them (`input_ids [batch, sequence]`, `attention_mask
//! [batch, total]`, `past_key_values.N.key/value [batch, heads, past, head]`, `logits`,
//! `present.N.key/value`; positions and the causal mask computed from the shapes): a GPT-like
//! decoder without a cache, the same with one (fed `position_ids`), Optimum's merged decoder (an
//! `If` on `use_cache_branch`, positions from the shapes) and the decoder with every matrix
//! product in onnxruntime's 4-bit `MatMulNBits`, and a grouped-heads decoder on opset 23 whose
//! attention is one `Attention` node reading `past_key` / `past_value` and writing
//! `present_key` / `present_value`. Weights are drawn from their names, so every
//! variant has the same ones. (The fixture script's decoders have static shapes, one past
//! length: they cannot generate.)

mod graphs;

use std::collections::BTreeMap;

use graphs::{f32s, graph_attr, i64s, int, ints, node};
use pixelgrad_core::Device;
use pixelgrad_onnx::proto::{
    data_type as dt, DimValue, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto,
    TypeProtoTensor, ValueInfoProto,
};
use pixelgrad_onnx::{GenerateOptions, Model, OnnxError, Session, StopReason};

const HID: usize = 32;
const HEADS: usize = 4;
const HEAD: usize = HID / HEADS;
const LAYERS: usize = 2;
const VOCAB: usize = 48;
const MAXPOS: usize = 64;
const BLOCK: usize = 16;
/// Key/value heads of the grouped decoder (two query heads share each).
const KV_HEADS: usize = 2;

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

/// A size in a declared shape: fixed or named.
enum D {
    N(i64),
    P(&'static str),
}

fn vinfo(name: &str, elem_type: i32, dims: &[D]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                D::N(n) => DimValue::DimValue(*n),
                D::P(p) => DimValue::DimParam(p.to_string()),
            }),
            ..Default::default()
        })
        .collect();
    let tensor = TypeProtoTensor { elem_type, shape: Some(TensorShapeProto { dim }) };
    ValueInfoProto { name: name.into(), r#type: Some(TypeProto { tensor_type: Some(tensor), ..Default::default() }), ..Default::default() }
}

/// Values drawn from `name` (SplitMix64 on its FNV hash), uniform in [-scale, scale].
fn drawn(name: &str, n: usize, scale: f32) -> Vec<f32> {
    let mut s = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn u8s(name: &str, dims: &[i64], v: Vec<u8>) -> TensorProto {
    TensorProto { name: name.into(), dims: dims.to_vec(), data_type: dt::UINT8, raw_data: v, ..Default::default() }
}

/// Which decoder.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// No past inputs: every step recomputes.
    Plain,
    /// Past inputs, `position_ids` fed.
    Past,
    /// The merged decoder: `If` on `use_cache_branch`, positions from the shapes.
    Merged,
    /// `Past` with its matrix products in 4-bit `MatMulNBits`.
    Nbits4,
    /// `Past` with grouped key/value heads ([`KV_HEADS`] in the cache, each read by
    /// `HEADS / KV_HEADS` query heads).
    Grouped,
    /// `Grouped` on opset 23, each layer's attention one `Attention` node that takes the past
    /// (`past_key` / `past_value` inputs) and writes `present.N.*` as its `present_key` /
    /// `present_value` outputs, with the causal and padding mask as its float `attn_mask`.
    Attention23,
}

impl Kind {
    fn kv_heads(self) -> usize {
        if matches!(self, Kind::Grouped | Kind::Attention23) {
            KV_HEADS
        } else {
            HEADS
        }
    }
}

/// Nodes and initializers of one decoder body.
struct Body {
    prefix: String,
    nodes: Vec<NodeProto>,
    inits: BTreeMap<String, TensorProto>,
    next: usize,
    nbits: bool,
    /// Key/value heads.
    kv: usize,
    /// Attention as one opset-23 `Attention` node (else matrix products and a softmax).
    attention23: bool,
}

impl Body {
    fn new(prefix: &str, nbits: bool, kv: usize) -> Body {
        Body { prefix: prefix.into(), nodes: Vec::new(), inits: BTreeMap::new(), next: 0, nbits, kv, attention23: false }
    }
    fn op(&mut self, op: &str, ins: &[&str], attrs: Vec<pixelgrad_onnx::proto::AttributeProto>) -> String {
        self.next += 1;
        let out = format!("{}t{}", self.prefix, self.next);
        self.op_to(op, ins, &out, attrs);
        out
    }
    fn op_to(&mut self, op: &str, ins: &[&str], out: &str, attrs: Vec<pixelgrad_onnx::proto::AttributeProto>) {
        self.op_outs(op, ins, &[out], attrs);
    }
    fn op_outs(&mut self, op: &str, ins: &[&str], outs: &[&str], attrs: Vec<pixelgrad_onnx::proto::AttributeProto>) {
        let mut n = node(op, ins, outs, attrs);
        n.name = format!("{}n{}", self.prefix, self.nodes.len());
        if op == "MatMulNBits" {
            n.domain = "com.microsoft".into();
        }
        self.nodes.push(n);
    }
    /// An initializer shared by every variant (not prefixed).
    fn init(&mut self, t: TensorProto) -> String {
        let name = t.name.clone();
        self.inits.insert(name.clone(), t);
        name
    }
    fn weight(&mut self, name: &str, dims: &[usize], scale: f32) -> String {
        let n = dims.iter().product();
        let d: Vec<i64> = dims.iter().map(|&x| x as i64).collect();
        self.init(f32s(name, &d, &drawn(name, n, scale)))
    }
    fn consti(&mut self, name: &str, dims: &[i64], v: &[i64]) -> String {
        self.init(i64s(name, dims, v))
    }
    fn constf(&mut self, name: &str, v: f32) -> String {
        self.init(f32s(name, &[], &[v]))
    }
    /// `x · W + b` with `W [fin, fout]`, in f32 or as 4-bit blocks along `fin`.
    fn linear(&mut self, x: &str, name: &str, fin: usize, fout: usize, bias: bool) -> String {
        let scale = 1.5 / (fin as f32).sqrt();
        let y = if self.nbits {
            let w = drawn(name, fin * fout, scale);
            let kb = fin.div_ceil(BLOCK);
            let (mut packed, mut scales, mut zps) = (Vec::new(), Vec::new(), Vec::new());
            for n in 0..fout {
                let mut zrow = Vec::new();
                for b in 0..kb {
                    let col: Vec<f32> = (b * BLOCK..(b + 1) * BLOCK).map(|k| w[k * fout + n]).collect();
                    let lo = col.iter().fold(0f32, |a, &v| a.min(v));
                    let hi = col.iter().fold(0f32, |a, &v| a.max(v));
                    let s = if hi > lo { (hi - lo) / 15.0 } else { 1.0 };
                    let zp = (-lo / s).round().clamp(0.0, 15.0);
                    let q: Vec<u8> = col.iter().map(|&v| ((v / s).round() + zp).clamp(0.0, 15.0) as u8).collect();
                    packed.extend(q.chunks(2).map(|p| p[0] | (p[1] << 4)));
                    scales.push(s);
                    zrow.push(zp as u8);
                }
                zps.extend(zrow.chunks(2).map(|p| p[0] | (p.get(1).copied().unwrap_or(0) << 4)));
            }
            let b = self.init(u8s(&format!("{name}.q4"), &[fout as i64, kb as i64, (BLOCK / 2) as i64], packed));
            let s = self.init(f32s(&format!("{name}.scales"), &[(fout * kb) as i64], &scales));
            let z = self.init(u8s(&format!("{name}.zp"), &[(fout * kb.div_ceil(2)) as i64], zps));
            let attrs = vec![int("K", fin as i64), int("N", fout as i64), int("bits", 4), int("block_size", BLOCK as i64)];
            self.op("MatMulNBits", &[x, &b, &s, &z], attrs)
        } else {
            let w = self.weight(name, &[fin, fout], scale);
            self.op("MatMul", &[x, &w], vec![])
        };
        if !bias {
            return y;
        }
        let b = self.weight(&format!("{name}.bias"), &[fout], 0.1);
        self.op("Add", &[&y, &b], vec![])
    }
    fn layer_norm(&mut self, x: &str, name: &str) -> String {
        let g = self.init(f32s(&format!("{name}.g"), &[HID as i64], &drawn(name, HID, 0.2).iter().map(|v| 1.0 + v).collect::<Vec<_>>()));
        let b = self.weight(&format!("{name}.b"), &[HID], 0.1);
        self.op("LayerNormalization", &[x, &g, &b], vec![int("axis", -1)])
    }
    fn heads(&mut self, x: &str, n: usize) -> String {
        let shape = self.consti(&format!("heads_shape{n}"), &[4], &[0, 0, n as i64, HEAD as i64]);
        let r = self.op("Reshape", &[x, &shape], vec![]);
        self.op("Transpose", &[&r], vec![ints("perm", &[0, 2, 1, 3])])
    }

    /// One opset-23 `Attention` node over the heads `q` `[B, HEADS, S, HEAD]` and this layer's
    /// keys and values `[B, kv, S, HEAD]` (read from `h`); with `past`, it concatenates
    /// `past_key_values.{i}.*` itself and writes `{out}present.{i}.*`.
    fn attention23(&mut self, i: usize, h: &str, q: &str, mask: &str, past: bool, out: &str) -> String {
        let mut kv = Vec::new();
        for w in ["k", "v"] {
            let y = self.linear(h, &format!("h{i}.{w}"), HID, self.kv * HEAD, true);
            kv.push(self.heads(&y, self.kv));
        }
        self.next += 1;
        let y = format!("{}t{}", self.prefix, self.next);
        let (pk, pv) = (format!("past_key_values.{i}.key"), format!("past_key_values.{i}.value"));
        let (ok, ov) = (format!("{out}present.{i}.key"), format!("{out}present.{i}.value"));
        let ins: Vec<&str> = if past { vec![q, &kv[0], &kv[1], mask, &pk, &pv] } else { vec![q, &kv[0], &kv[1], mask] };
        if past {
            self.op_outs("Attention", &ins, &[&y, &ok, &ov], vec![]);
        } else {
            self.op_outs("Attention", &ins, &[&y], vec![]);
            self.op_to("Identity", &[&kv[0]], &ok, vec![]);
            self.op_to("Identity", &[&kv[1]], &ov, vec![]);
        }
        y
    }

    /// The rest of layer `i` after its attention `o` `[B, HEADS, S, HEAD]`: heads merged, the
    /// output projection and the MLP, each with its residual.
    fn block_tail(&mut self, i: usize, x: &str, o: &str) -> String {
        let merge_shape = self.consti("merge_shape", &[3], &[0, 0, HID as i64]);
        let o = self.op("Transpose", &[o], vec![ints("perm", &[0, 2, 1, 3])]);
        let o = self.op("Reshape", &[&o, &merge_shape], vec![]);
        let o = self.linear(&o, &format!("h{i}.o"), HID, HID, true);
        let x = self.op("Add", &[x, &o], vec![]);
        let h = self.layer_norm(&x, &format!("h{i}.ln2"));
        let f = self.linear(&h, &format!("h{i}.fc"), HID, 4 * HID, true);
        let f = self.op("Relu", &[&f], vec![]);
        let f = self.linear(&f, &format!("h{i}.proj"), 4 * HID, HID, true);
        self.op("Add", &[&x, &f], vec![])
    }

    /// The decoder: `past` reads `past_key_values.N.*`; `positions_input` reads
    /// `position_ids` (else positions come from the shapes); writes `{out}logits` and
    /// `{out}present.N.*`.
    fn decoder(&mut self, past: bool, positions_input: bool, out: &str) {
        let one = self.consti("one", &[], &[1]);
        let zero = self.consti("zero", &[], &[0]);
        let (i0, i1) = (self.consti("axis0", &[1], &[0]), self.consti("axis1", &[1], &[1]));
        let ids_shape = self.op("Shape", &["input_ids"], vec![]);
        let s = self.op("Gather", &[&ids_shape, &one], vec![]);
        let am_shape = self.op("Shape", &["attention_mask"], vec![]);
        let t = self.op("Gather", &[&am_shape, &one], vec![]);
        let p = self.op("Sub", &[&t, &s], vec![]);
        let qpos = self.op("Range", &[&p, &t, &one], vec![]);
        let pos = if positions_input { "position_ids".to_string() } else { self.op("Unsqueeze", &[&qpos, &i0], vec![]) };
        // causal: query at absolute position q sees keys 0..=q; padding from the mask
        let kpos = self.op("Range", &[&zero, &t, &one], vec![]);
        let qcol = self.op("Unsqueeze", &[&qpos, &i1], vec![]);
        let allowed = self.op("LessOrEqual", &[&kpos, &qcol], vec![]);
        let (f0, f1, neg) = (self.constf("f0", 0.0), self.constf("f1", 1.0), self.constf("neg", -10000.0));
        let causal = self.op("Where", &[&allowed, &f0, &neg], vec![]);
        let amf = self.op("Cast", &["attention_mask"], vec![int("to", dt::FLOAT as i64)]);
        let inv = self.op("Sub", &[&f1, &amf], vec![]);
        let pad = self.op("Mul", &[&inv, &neg], vec![]);
        let axes12 = self.consti("axes12", &[2], &[1, 2]);
        let pad = self.op("Unsqueeze", &[&pad, &axes12], vec![]);
        let mask = self.op("Add", &[&causal, &pad], vec![]);

        let wte = self.weight("wte", &[VOCAB, HID], 1.0);
        let wpe = self.weight("wpe", &[MAXPOS, HID], 0.5);
        let e = self.op("Gather", &[&wte, "input_ids"], vec![]);
        let pe = self.op("Gather", &[&wpe, &pos], vec![]);
        let mut x = self.op("Add", &[&e, &pe], vec![]);
        let scale = self.constf("scale", 1.0 / (HEAD as f32).sqrt());
        for i in 0..LAYERS {
            let h = self.layer_norm(&x, &format!("h{i}.ln1"));
            let q = self.linear(&h, &format!("h{i}.q"), HID, HID, true);
            let q = self.heads(&q, HEADS);
            if self.attention23 {
                let o = self.attention23(i, &h, &q, &mask, past, out);
                x = self.block_tail(i, &x, &o);
                continue;
            }
            let mut kv = Vec::new();
            for (w, which) in [("k", "key"), ("v", "value")] {
                let y = self.linear(&h, &format!("h{i}.{w}"), HID, self.kv * HEAD, true);
                let y = self.heads(&y, self.kv);
                let present = format!("{out}present.{i}.{which}");
                if past {
                    self.op_to("Concat", &[&format!("past_key_values.{i}.{which}"), &y], &present, vec![int("axis", 2)]);
                } else {
                    self.op_to("Identity", &[&y], &present, vec![]);
                }
                if self.kv == HEADS {
                    kv.push(present);
                    continue;
                }
                // each key/value head serves HEADS / kv query heads: [B, kv, T, D] repeated
                // to [B, HEADS, T, D] as exporters write it (Unsqueeze, Expand, Reshape)
                let axis2 = self.consti("axis2", &[1], &[2]);
                let u = self.op("Unsqueeze", &[&present, &axis2], vec![]);
                let rep = self.consti("repeat_groups", &[5], &[1, 1, (HEADS / self.kv) as i64, 1, 1]);
                let e = self.op("Expand", &[&u, &rep], vec![]);
                let all = self.consti("all_heads", &[4], &[0, HEADS as i64, -1, HEAD as i64]);
                kv.push(self.op("Reshape", &[&e, &all], vec![]));
            }
            let kt = self.op("Transpose", &[&kv[0]], vec![ints("perm", &[0, 1, 3, 2])]);
            let sc = self.op("MatMul", &[&q, &kt], vec![]);
            let sc = self.op("Mul", &[&sc, &scale], vec![]);
            let sc = self.op("Add", &[&sc, &mask], vec![]);
            let pr = self.op("Softmax", &[&sc], vec![int("axis", -1)]);
            let o = self.op("MatMul", &[&pr, &kv[1]], vec![]);
            x = self.block_tail(i, &x, &o);
        }
        let x = self.layer_norm(&x, "ln_f");
        let logits = self.linear(&x, "lm_head", HID, VOCAB, false);
        self.op_to("Identity", &[&logits], &format!("{out}logits"), vec![]);
    }
}

fn present_names() -> Vec<String> {
    (0..LAYERS).flat_map(|i| ["key", "value"].map(|w| format!("present.{i}.{w}"))).collect()
}

fn untyped(name: &str) -> ValueInfoProto {
    ValueInfoProto { name: name.into(), ..Default::default() }
}

/// The decoder of `kind` as an .onnx file.
fn decoder_bytes(kind: Kind) -> Vec<u8> {
    let past = kind != Kind::Plain;
    let mut inputs = vec![
        vinfo("input_ids", dt::INT64, &[D::P("batch"), D::P("sequence")]),
        vinfo("attention_mask", dt::INT64, &[D::P("batch"), D::P("total")]),
    ];
    if kind != Kind::Merged {
        inputs.push(vinfo("position_ids", dt::INT64, &[D::P("batch"), D::P("sequence")]));
    }
    if past {
        for i in 0..LAYERS {
            for w in ["key", "value"] {
                inputs.push(vinfo(
                    &format!("past_key_values.{i}.{w}"),
                    dt::FLOAT,
                    &[D::P("batch"), D::N(kind.kv_heads() as i64), D::P("past"), D::N(HEAD as i64)],
                ));
            }
        }
    }
    let mut outputs = vec![vinfo("logits", dt::FLOAT, &[D::P("batch"), D::P("sequence"), D::N(VOCAB as i64)])];
    for n in present_names() {
        outputs.push(vinfo(&n, dt::FLOAT, &[D::P("batch"), D::N(kind.kv_heads() as i64), D::P("total"), D::N(HEAD as i64)]));
    }
    let (nodes, inits) = if kind == Kind::Merged {
        inputs.push(vinfo("use_cache_branch", dt::BOOL, &[D::N(1)]));
        let mut branches = Vec::new();
        let mut inits = BTreeMap::new();
        for (tag, with_past) in [("cache/", true), ("no_cache/", false)] {
            let mut b = Body::new(tag, false, HEADS);
            b.decoder(with_past, false, tag);
            let outs = std::iter::once(format!("{tag}logits")).chain(present_names().into_iter().map(|n| format!("{tag}{n}")));
            let g = GraphProto {
                node: b.nodes,
                name: tag.trim_end_matches('/').into(),
                output: outs.map(|n| untyped(&n)).collect(),
                ..Default::default()
            };
            inits.extend(b.inits);
            branches.push(g);
        }
        let else_branch = branches.pop().unwrap();
        let then_branch = branches.pop().unwrap();
        let outs: Vec<String> = std::iter::once("logits".to_string()).chain(present_names()).collect();
        let outs: Vec<&str> = outs.iter().map(String::as_str).collect();
        let mut n =
            node("If", &["use_cache_branch"], &outs, vec![graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)]);
        n.name = "/optimum/If".into();
        (vec![n], inits)
    } else {
        let mut b = Body::new("", kind == Kind::Nbits4, kind.kv_heads());
        b.attention23 = kind == Kind::Attention23;
        b.decoder(past, true, "");
        (b.nodes, b.inits)
    };
    let graph = GraphProto {
        node: nodes,
        name: "decoder".into(),
        initializer: inits.into_values().collect(),
        input: inputs,
        output: outputs,
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![
            OperatorSetIdProto { domain: String::new(), version: if kind == Kind::Attention23 { 23 } else { 17 } },
            OperatorSetIdProto { domain: "com.microsoft".into(), version: 1 },
        ],
        graph: Some(graph),
        ..Default::default()
    };
    pixelgrad_onnx::proto::encode_model(&m)
}

fn session(kind: Kind, dev: &Device) -> Session {
    Session::new(Model::from_bytes(&decoder_bytes(kind)).unwrap(), dev).unwrap()
}

const PROMPT: [u32; 5] = [3, 17, 41, 8, 29];

fn greedy(max_tokens: usize, use_cache: bool) -> GenerateOptions {
    GenerateOptions { max_tokens, use_cache, ..GenerateOptions::default() }
}

/// Generates with `options`, checking that the callback saw the result's tokens in order.
fn gen(s: &Session, options: &GenerateOptions) -> pixelgrad_onnx::Generation {
    let mut streamed = Vec::new();
    let g = s.generate(&PROMPT, options, &mut |t| {
        streamed.push(t);
        true
    });
    let g = g.unwrap_or_else(|e| panic!("generate: {e}"));
    assert_eq!(streamed, g.tokens, "the callback streams the tokens");
    g
}

/// Greedy tokens with the cache on the device equal those of feeding the whole sequence every
/// step, for the decoder with past inputs, the merged decoder and the 4-bit decoder, on `dev`;
/// the decoder without past inputs (same weights) gives them too.
fn cache_equals_recomputation(dev: &Device, kinds: &[Kind]) -> Vec<u32> {
    let n = 12;
    let plain = gen(&session(Kind::Plain, dev), &greedy(n, true));
    assert!(!plain.cached && plain.steps == n);
    let distinct: std::collections::BTreeSet<_> = plain.tokens.iter().collect();
    assert!(distinct.len() > 2, "a decoder whose greedy tokens vary: {:?}", plain.tokens);
    for &kind in kinds {
        let s = session(kind, dev);
        assert_eq!(pixelgrad_onnx::Generator::new(&s).unwrap().layout().kv_heads, kind.kv_heads());
        let before = dev.backend().counters().readbacks;
        let cached = gen(&s, &greedy(n, true));
        // one read per token, the last logits row: the cache never comes back (WebGL adds one
        // 1-float read, its gather index-validity flag, folded into the prefill's read)
        let flags = u64::from(dev.kind() == pixelgrad_core::BackendKind::WebGl);
        assert_eq!(dev.backend().counters().readbacks - before, n as u64 + flags, "{}: readbacks of {n} cached steps", dev.name());
        let full = gen(&s, &greedy(n, false));
        assert!(cached.cached && !full.cached);
        assert_eq!((cached.steps, cached.stopped), (n, StopReason::MaxTokens));
        assert_eq!(cached.tokens, full.tokens, "{}: with the cache vs recomputing", dev.name());
        assert!(cached.tokens_per_second > 0.0 && cached.prefill_ms >= 0.0);
        if !matches!(kind, Kind::Nbits4 | Kind::Grouped | Kind::Attention23) {
            assert_eq!(cached.tokens, plain.tokens, "{}: the same weights without past inputs", dev.name());
        }
    }
    plain.tokens
}

#[test]
fn cache_equals_full_recomputation_cpu() {
    cache_equals_recomputation(&cpu(), &[Kind::Past, Kind::Merged, Kind::Nbits4, Kind::Grouped, Kind::Attention23]);
}

#[test]
fn cache_equals_full_recomputation_wgpu() {
    use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
    let dev = Device::new(WgpuBackend::new(WgpuOptions::default()).expect("a WebGPU adapter (Debian: mesa-vulkan-drivers gives lavapipe)"));
    cache_equals_recomputation(&dev, &[Kind::Past, Kind::Merged, Kind::Attention23]);
}

#[test]
fn cache_equals_full_recomputation_webgl() {
    use pixelgrad_webgl::{WebGlBackend, WebGlOptions};
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    let dev = Device::new(WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context (Debian: libegl-mesa0 libgles2)"));
    cache_equals_recomputation(&dev, &[Kind::Past, Kind::Attention23]);
}

/// The opset-23 decoder, whose `Attention` nodes take the past and write the present, has the
/// same weights as the grouped decoder written with matrix products and a softmax: both give
/// the same greedy tokens, with the cache and without.
#[test]
fn attention23_decoder_generates_the_grouped_decoders_tokens() {
    let dev = cpu();
    let grouped = gen(&session(Kind::Grouped, &dev), &greedy(12, true));
    let s = session(Kind::Attention23, &dev);
    for use_cache in [true, false] {
        let g = gen(&s, &greedy(12, use_cache));
        assert_eq!(g.cached, use_cache);
        assert_eq!(g.tokens, grouped.tokens, "cache {use_cache}");
    }
}

/// Sampling with a seed gives the same tokens every time, with or without the cache; top-k 1
/// is greedy at any temperature.
#[test]
fn seeded_sampling_is_reproducible_and_top_k_one_is_greedy() {
    let dev = cpu();
    let s = session(Kind::Past, &dev);
    let sampled = GenerateOptions { max_tokens: 10, temperature: 1.2, top_k: 20, top_p: 0.95, seed: 7, ..GenerateOptions::default() };
    let a = gen(&s, &sampled);
    let b = gen(&s, &sampled);
    assert_eq!(a.tokens, b.tokens);
    let full = gen(&s, &GenerateOptions { use_cache: false, ..sampled.clone() });
    assert_eq!(a.tokens, full.tokens, "the cache does not change what a seed samples");
    let greedy_tokens = gen(&s, &greedy(10, true)).tokens;
    assert_ne!(a.tokens, greedy_tokens, "temperature 1.2 sampled differently from greedy");
    let k1 = gen(&s, &GenerateOptions { max_tokens: 10, temperature: 1.5, top_k: 1, seed: 99, ..GenerateOptions::default() });
    assert_eq!(k1.tokens, greedy_tokens);
}

/// A stop token ends the generation (and is left out); a callback returning false stops it.
#[test]
fn stop_tokens_and_the_callback_stop() {
    let dev = cpu();
    let s = session(Kind::Past, &dev);
    let all = gen(&s, &greedy(12, true)).tokens;
    let at = 4;
    let stop = all[at];
    let first = all.iter().position(|&t| t == stop).unwrap();
    let g = gen(&s, &GenerateOptions { stop: vec![stop, 1000], ..greedy(12, true) });
    assert_eq!(g.tokens, all[..first]);
    assert_eq!(g.stopped, StopReason::StopToken(stop));
    let mut seen = 0;
    let g = s
        .generate(&PROMPT, &greedy(12, true), &mut |_| {
            seen += 1;
            seen < 3
        })
        .unwrap();
    assert_eq!((g.tokens.as_slice(), g.stopped), (&all[..3], StopReason::Callback));
}

/// A model that is not a decoder, or one whose cache is incomplete, is refused naming what is
/// missing; so are an empty prompt and tokens outside the vocabulary.
#[test]
fn non_decoders_are_refused_by_name() {
    let dev = cpu();
    let relu = graphs::model(17, vec![node("Relu", &["x"], &["y"], vec![])], &[("x", &[1, 4])], &["y"], vec![]);
    let s = Session::new(Model::from_bytes(&relu).unwrap(), &dev).unwrap();
    let e = s.generate(&PROMPT, &greedy(4, true), &mut |_| true).unwrap_err().to_string();
    assert!(e.contains("not a decoder") && e.contains("'input_ids'") && e.contains("'x'"), "{e}");

    // input_ids but no logits
    let ids = vinfo("input_ids", dt::INT64, &[D::P("b"), D::P("s")]);
    let cast = node("Cast", &["input_ids"], &["y"], vec![int("to", dt::FLOAT as i64)]);
    let g = GraphProto {
        node: vec![cast],
        name: "g".into(),
        input: vec![ids],
        output: vec![vinfo("y", dt::FLOAT, &[D::P("b"), D::P("s")])],
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
        graph: Some(g),
        ..Default::default()
    };
    let s = Session::new(Model::from_bytes(&pixelgrad_onnx::proto::encode_model(&m)).unwrap(), &dev).unwrap();
    let e = s.generate(&PROMPT, &greedy(4, true), &mut |_| true).unwrap_err().to_string();
    assert!(e.contains("no output 'logits'") && e.contains("'y'"), "{e}");

    // a past input without its present output
    let mut m = pixelgrad_onnx::proto::decode_model(&decoder_bytes(Kind::Past)).unwrap();
    m.graph.as_mut().unwrap().output.retain(|o| o.name != "present.1.value");
    let s = Session::new(Model::from_bytes(&pixelgrad_onnx::proto::encode_model(&m)).unwrap(), &dev).unwrap();
    let e = s.generate(&PROMPT, &greedy(4, true), &mut |_| true).unwrap_err().to_string();
    assert!(e.contains("'past_key_values.1.value'") && e.contains("'present.1.value'"), "{e}");

    let s = session(Kind::Past, &dev);
    let e = s.generate(&[], &greedy(4, true), &mut |_| true).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
    let e = s.generate(&[3, VOCAB as u32], &greedy(4, true), &mut |_| true).unwrap_err().to_string();
    assert!(e.contains(&format!("token {VOCAB} is outside the vocabulary of {VOCAB}")), "{e}");
    let e = s.generate(&PROMPT, &GenerateOptions { top_p: 0.0, ..greedy(4, true) }, &mut |_| true).unwrap_err().to_string();
    assert!(e.contains("top_p"), "{e}");
}

/// A max_tokens whose cache would pass the device's element cap is refused before anything
/// runs, as a budget error naming the cache.
#[test]
fn too_long_generations_are_refused_before_running() {
    let dev = cpu();
    dev.set_limits(pixelgrad_core::Limits { max_elements: 4096, ..dev.limits() });
    let s = session(Kind::Past, &dev);
    // 1 × 4 heads × (5 + 200 - 1) × 8 = 6528 elements > 4096
    let mut calls = 0;
    let e = s.generate(&PROMPT, &greedy(200, true), &mut |_| {
        calls += 1;
        true
    });
    let e = e.unwrap_err();
    assert!(matches!(e, OnnxError::Core(pixelgrad_core::Error::Budget { op: "generate", requested: 6528, limit: 4096, .. })), "{e}");
    assert!(e.to_string().contains("key/value cache"), "{e}");
    assert_eq!((calls, s.activation_bytes()), (0, 0), "nothing ran");
    // without a cache the logits of the longest run are what is checked: 1 × 204 × 48 = 9792
    let p = session(Kind::Plain, &dev);
    let e = p.generate(&PROMPT, &greedy(200, true), &mut |_| true).unwrap_err();
    assert!(matches!(e, OnnxError::Core(pixelgrad_core::Error::Budget { requested: 9792, .. })), "{e}");
    // within the cap it runs
    assert_eq!(s.generate(&PROMPT, &greedy(20, true), &mut |_| true).unwrap().tokens.len(), 20);
    let e = s.generate(&PROMPT, &greedy(usize::MAX, true), &mut |_| true).unwrap_err();
    assert!(matches!(e, OnnxError::Core(pixelgrad_core::Error::Budget { .. })), "{e}");
}

/// Writes the decoders and their native CPU tokens for the browser test
/// (`web/tests/generate.test.mjs` runs this test with `PIXELGRAD_GENERATE_OUT` set to its
/// bundle folder; without it they go to the test's temporary folder), checking that the
/// written files generate those tokens.
#[test]
fn writes_decoders_for_the_browser_test() {
    let out = std::env::var_os("PIXELGRAD_GENERATE_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("generate"));
    std::fs::create_dir_all(&out).unwrap();
    let dev = cpu();
    let mut expected = Vec::new();
    for (name, kind) in [("plain", Kind::Plain), ("past", Kind::Past), ("merged", Kind::Merged)] {
        let path = out.join(format!("{name}.onnx"));
        std::fs::write(&path, decoder_bytes(kind)).unwrap();
        let s = Session::new(Model::load(&path).unwrap(), &dev).unwrap();
        let greedy_tokens = gen(&s, &greedy(12, true)).tokens;
        let sampled = GenerateOptions { max_tokens: 8, temperature: 1.2, top_k: 20, top_p: 0.95, seed: 7, ..GenerateOptions::default() };
        let sampled_tokens = gen(&s, &sampled).tokens;
        assert_eq!(greedy_tokens, gen(&session(kind, &dev), &greedy(12, true)).tokens);
        expected.push(format!("\"{name}\": {{\"greedy\": {greedy_tokens:?}, \"sampled\": {sampled_tokens:?}}}"));
    }
    let json = format!("{{\"prompt\": {PROMPT:?}, \"vocab\": {VOCAB}, {}}}", expected.join(", "));
    std::fs::write(out.join("expected.json"), json).unwrap();
}
