"""Small transformer exports for pixelgrad-onnx (issue 42), and the variants real tools make of them.

Usage (scripts/onnx-fixtures.sh runs it after scripts/onnx_fixtures.py):
    target/onnx-venv/bin/python scripts/onnx_transformer_fixtures.py OUT_DIR
Appends its cases (kind `models`, tag `transformer` plus the variant's tag) to OUT_DIR/manifest.json
and writes OUT_DIR/models/<arch>_<variant>/ (model.onnx, input_N.npy, expected_N.npy).

Architectures, built with onnx.helper and random weights, in the patterns the PyTorch exporter
writes (hidden 32, 4 heads, 2 layers, vocabulary 96):
  bert      encoder: word/position/token-type embeddings + LayerNormalization, post-LN layers with
            attention as MatMul/Div/Add(mask)/Softmax/MatMul and an erf GELU feed-forward
  gpt       decoder without a cache (pre-LN, tanh GELU, causal mask, logits and present.N.key/value)
  gpt_past  the same decoder with Hugging Face's cache layout: past_key_values.N.key/value inputs
            [batch, heads, past, head size], present.N.key/value outputs
  gpt_merged_{cache,no_cache}  Optimum's merged decoder: an If on use_cache_branch whose branches
            are the two decoders above (one model, fed both ways)
  vit       image encoder: Conv patch embedding, CLS token, positions, pre-LN layers
  whisper   audio encoder: two Conv1d + GELU, positions, pre-LN layers
Variants (tag):
  fp32      the export itself (onnxruntime's output; relative 1e-4)
  ortopt    onnxruntime.transformers.optimizer.optimize_model(opt_level=0): the fused com.microsoft
            operators it emits (the manifest's `fused` lists them per model)
  nbits4    onnxruntime's MatMul4BitsQuantizer (RTN, blocks of 32, asymmetric): MatMulNBits
  dynint8   onnxruntime.quantization.quantize_dynamic (int8 weights, u8 activations)
  external  the fp32 export saved with onnx's save_as_external_data (model.onnx_data beside it)
  opset23   a Llama-like rewrite on opset 23 Attention/RMSNormalization/RotaryEmbedding, made by
            running this file in target/onnx23-venv (onnx 1.19.1): the reference evaluator is the
            oracle, since the pinned onnxruntime does not know those operators
onnxruntime 1.20.1's MatMul4BitsQuantizer quantises to 4 bits only (its default RTN algorithm has
no `bits`; HQQ has one but needs torch), so there is no 8-bit variant from the tool here; the
8-bit MatMulNBits layout is covered by the per-operator cases of scripts/onnx_fixtures.py.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[-1]
F = TensorProto.FLOAT
I64 = TensorProto.INT64
HID, HEADS, LAYERS, VOCAB = 32, 4, 2, 96
HEAD = HID // HEADS
BATCH, SEQ, PAST, NEW = 2, 12, 8, 3


class Weights:
    """Named random weights, drawn once: models of one family share them (the merged decoder's
    branches, the decoder with and without a cache)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.arrays = {}

    def get(self, name, shape, kind="dense"):
        if name not in self.arrays:
            if kind == "dense":
                # fan-in: the rows of a [in, out] matrix, the rest of a convolution's [out, in, k...]
                fan_in = shape[0] if len(shape) == 2 else int(np.prod(shape[1:]))
                a = self.rng.normal(0.0, 1.0 / np.sqrt(fan_in), size=shape)
            elif kind == "bias":
                a = self.rng.normal(0.0, 0.1, size=shape)
            elif kind == "gamma":
                a = 1.0 + self.rng.normal(0.0, 0.1, size=shape)
            elif kind == "embed":
                a = self.rng.normal(0.0, 1.0, size=shape)
            else:
                raise ValueError(kind)
            self.arrays[name] = a.astype(np.float32)
        return self.arrays[name]


class Graph:
    """Nodes and the initializers they use; `prefix` keeps subgraph value names unique."""

    def __init__(self, weights, prefix=""):
        self.w = weights
        self.prefix = prefix
        self.nodes = []
        self.inits = {}
        self.n = 0

    def name(self, base):
        self.n += 1
        return f"{self.prefix}{base}_{self.n}"

    def weight(self, name, shape, kind="dense"):
        self.inits[name] = numpy_helper.from_array(self.w.get(name, shape, kind), name)
        return name

    def const(self, arr):
        n = self.name("const")
        self.inits[n] = numpy_helper.from_array(np.asarray(arr), n)
        return n

    def op(self, op, ins, outs=1, out_names=None, domain=None, **attrs):
        names = out_names or [self.name(op.lower()) for _ in range(outs)]
        self.nodes.append(helper.make_node(op, ins, names, name=self.name(f"/{op}"), domain=domain, **attrs))
        return names[0] if len(names) == 1 else names


def linear(g, x, name, fin, fout, bias=True):
    y = g.op("MatMul", [x, g.weight(f"{name}.weight", (fin, fout))])
    if bias:
        # the exporter writes Add(bias, MatMul(...))
        y = g.op("Add", [g.weight(f"{name}.bias", (fout,), "bias"), y])
    return y


def layer_norm(g, x, name):
    return g.op("LayerNormalization", [x, g.weight(f"{name}.weight", (HID,), "gamma"), g.weight(f"{name}.bias", (HID,), "bias")],
                axis=-1, epsilon=1e-5)


def gelu_erf(g, x):
    d = g.op("Div", [x, g.const(np.float32(np.sqrt(2.0)))])
    e = g.op("Erf", [d])
    a = g.op("Add", [e, g.const(np.float32(1.0))])
    m = g.op("Mul", [x, a])
    return g.op("Mul", [m, g.const(np.float32(0.5))])


def gelu_tanh(g, x):
    p = g.op("Pow", [x, g.const(np.float32(3.0))])
    m = g.op("Mul", [g.const(np.float32(0.044715)), p])
    a = g.op("Add", [x, m])
    t = g.op("Mul", [g.const(np.float32(np.sqrt(2.0 / np.pi))), a])
    th = g.op("Tanh", [t])
    a1 = g.op("Add", [g.const(np.float32(1.0)), th])
    h = g.op("Mul", [g.const(np.float32(0.5)), x])
    return g.op("Mul", [h, a1])


def heads(g, x, perm):
    r = g.op("Reshape", [x, g.const(np.array([0, 0, HEADS, HEAD], np.int64))])
    return g.op("Transpose", [r], perm=perm)


def attention(g, x, name, mask=None, past=None, present=None):
    """Self-attention as the exporter writes it. `mask` is added to the scores; `past` (key,
    value names, [B, heads, P, head]) are concatenated in front of this step's keys and values,
    which go out as `present` (names) when given."""
    q = heads(g, linear(g, x, f"{name}.q", HID, HID), [0, 2, 1, 3])
    k = heads(g, linear(g, x, f"{name}.k", HID, HID), [0, 2, 1, 3])
    v = heads(g, linear(g, x, f"{name}.v", HID, HID), [0, 2, 1, 3])
    if past is not None:
        k = g.op("Concat", [past[0], k], axis=2, out_names=[present[0]] if present else None)
        v = g.op("Concat", [past[1], v], axis=2, out_names=[present[1]] if present else None)
    elif present is not None:
        k = g.op("Identity", [k], out_names=[present[0]])
        v = g.op("Identity", [v], out_names=[present[1]])
    kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])
    s = g.op("MatMul", [q, kt])
    s = g.op("Div", [s, g.const(np.float32(np.sqrt(HEAD)))])
    if mask is not None:
        s = g.op("Add", [s, mask])
    p = g.op("Softmax", [s], axis=-1)
    o = g.op("MatMul", [p, v])
    o = g.op("Transpose", [o], perm=[0, 2, 1, 3])
    o = g.op("Reshape", [o, g.const(np.array([0, 0, HID], np.int64))])
    return linear(g, o, f"{name}.o", HID, HID)


def encoder_layer(g, x, name, mask=None, pre_ln=True, ffn=4 * HID):
    if pre_ln:
        h = attention(g, layer_norm(g, x, f"{name}.ln1"), f"{name}.attn", mask)
        x = g.op("Add", [x, h])
        f = linear(g, gelu_erf(g, linear(g, layer_norm(g, x, f"{name}.ln2"), f"{name}.fc1", HID, ffn)), f"{name}.fc2", ffn, HID)
        return g.op("Add", [x, f])
    h = attention(g, x, f"{name}.attn", mask)
    x = layer_norm(g, g.op("Add", [h, x]), f"{name}.ln1")
    f = linear(g, gelu_erf(g, linear(g, x, f"{name}.fc1", HID, ffn)), f"{name}.fc2", ffn, HID)
    return layer_norm(g, g.op("Add", [f, x]), f"{name}.ln2")


def vi(name, et, shape):
    return helper.make_tensor_value_info(name, et, shape)


def finish(g, name, inputs, outputs, opset=17):
    graph = helper.make_graph(g.nodes, name, inputs, outputs, list(g.inits.values()))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="pixelgrad-fixtures")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def bert():
    w = Weights(4201)
    g = Graph(w)
    ids, tt, am = "input_ids", "token_type_ids", "attention_mask"
    e = g.op("Gather", [g.weight("embeddings.word", (VOCAB, HID), "embed"), ids])
    pos = g.const(np.arange(SEQ, dtype=np.int64)[None, :])
    e = g.op("Add", [e, g.op("Gather", [g.weight("embeddings.position", (64, HID), "embed"), pos])])
    e = g.op("Add", [e, g.op("Gather", [g.weight("embeddings.token_type", (2, HID), "embed"), tt])])
    x = layer_norm(g, e, "embeddings.ln")
    # the extended mask: (1 - mask[:, None, None, :]) * -10000
    m = g.op("Unsqueeze", [am, g.const(np.array([1], np.int64))])
    m = g.op("Unsqueeze", [m, g.const(np.array([2], np.int64))])
    m = g.op("Cast", [m], to=F)
    m = g.op("Sub", [g.const(np.float32(1.0)), m])
    m = g.op("Mul", [m, g.const(np.float32(-10000.0))])
    for i in range(LAYERS):
        x = encoder_layer(g, x, f"layer.{i}", m, pre_ln=False)
    g.op("Identity", [x], out_names=["last_hidden_state"])
    model = finish(g, "bert", [vi(ids, I64, [BATCH, SEQ]), vi(tt, I64, [BATCH, SEQ]), vi(am, I64, [BATCH, SEQ])],
                   [vi("last_hidden_state", F, [BATCH, SEQ, HID])])
    rng = np.random.default_rng(1)
    mask = np.ones((BATCH, SEQ), np.int64)
    mask[1, SEQ - 4:] = 0
    feeds = {ids: rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64), tt: (np.arange(SEQ)[None, :] >= SEQ // 2).repeat(BATCH, 0).astype(np.int64),
             am: mask}
    return model, feeds


def decoder_body(g, past_len, seq, with_past, present_names, logits_name):
    """The GPT-like decoder on `input_ids` (and past_key_values.N.* when `with_past`)."""
    e = g.op("Gather", [g.weight("wte", (VOCAB, HID), "embed"), "input_ids"])
    pos = g.const(np.arange(past_len, past_len + seq, dtype=np.int64)[None, :])
    x = g.op("Add", [e, g.op("Gather", [g.weight("wpe", (64, HID), "embed"), pos])])
    # causal: query i (absolute past_len + i) sees keys 0..past_len + i
    keys = past_len + seq
    causal = np.where(np.arange(keys)[None, :] <= (past_len + np.arange(seq))[:, None], 0.0, -10000.0).astype(np.float32)
    mask = g.const(causal)
    for i in range(LAYERS):
        past = (f"past_key_values.{i}.key", f"past_key_values.{i}.value") if with_past else None
        h = attention(g, layer_norm(g, x, f"h.{i}.ln1"), f"h.{i}.attn", mask, past, present_names[i])
        x = g.op("Add", [x, h])
        f = linear(g, gelu_tanh(g, linear(g, layer_norm(g, x, f"h.{i}.ln2"), f"h.{i}.fc", HID, 4 * HID)), f"h.{i}.proj", 4 * HID, HID)
        x = g.op("Add", [x, f])
    x = layer_norm(g, x, "ln_f")
    return g.op("MatMul", [x, g.weight("lm_head", (HID, VOCAB))], out_names=[logits_name])


def decoder_io(with_past, seq):
    ins = [vi("input_ids", I64, [BATCH, seq])]
    if with_past:
        for i in range(LAYERS):
            ins += [vi(f"past_key_values.{i}.{kv}", F, [BATCH, HEADS, PAST, HEAD]) for kv in ("key", "value")]
    keys = seq + (PAST if with_past else 0)
    outs = [vi("logits", F, [BATCH, seq, VOCAB])]
    for i in range(LAYERS):
        outs += [vi(f"present.{i}.{kv}", F, [BATCH, HEADS, keys, HEAD]) for kv in ("key", "value")]
    return ins, outs


def present(prefix=""):
    return [(f"{prefix}present.{i}.key", f"{prefix}present.{i}.value") for i in range(LAYERS)]


def past_feeds(rng):
    return {f"past_key_values.{i}.{kv}": rng.normal(0, 1, (BATCH, HEADS, PAST, HEAD)).astype(np.float32) for i in range(LAYERS) for kv in ("key", "value")}


def gpt(with_past):
    w = Weights(4202)
    g = Graph(w)
    seq = NEW if with_past else SEQ
    decoder_body(g, PAST if with_past else 0, seq, with_past, present(), "logits")
    ins, outs = decoder_io(with_past, seq)
    model = finish(g, "gpt_past" if with_past else "gpt", ins, outs)
    rng = np.random.default_rng(2)
    feeds = {"input_ids": rng.integers(0, VOCAB, (BATCH, seq)).astype(np.int64)}
    if with_past:
        feeds.update(past_feeds(rng))
    return model, feeds


def gpt_merged():
    """Optimum's decoder_model_merged layout: both decoders as If branches on use_cache_branch
    (the weights are outer-scope initializers both branches read). Static shapes: the ids are
    NEW long in both branches, and the no-cache branch ignores the past."""
    w = Weights(4202)
    outer = Graph(w)
    branches = []
    for with_past, tag in ((True, "cache"), (False, "no_cache")):
        b = Graph(w, prefix=f"{tag}/")
        decoder_body(b, PAST if with_past else 0, NEW, with_past, present(f"{tag}/"), f"{tag}/logits")
        keys = NEW + (PAST if with_past else 0)
        outs = [vi(f"{tag}/logits", F, [BATCH, NEW, VOCAB])]
        for k, v in present(f"{tag}/"):
            outs += [vi(k, F, [BATCH, HEADS, keys, HEAD]), vi(v, F, [BATCH, HEADS, keys, HEAD])]
        outer.inits.update(b.inits)
        branches.append(helper.make_graph(b.nodes, f"{tag}_branch", [], outs))
    names = ["logits"] + [n for kv in present() for n in kv]
    outer.nodes.append(helper.make_node("If", ["use_cache_branch"], names, name="/optimum/If", then_branch=branches[0], else_branch=branches[1]))
    ins, _ = decoder_io(True, NEW)
    ins.append(vi("use_cache_branch", TensorProto.BOOL, [1]))
    outs = [vi("logits", F, [BATCH, NEW, VOCAB])] + [vi(n, F, [BATCH, HEADS, "total_sequence_length", HEAD]) for n in names[1:]]
    model = finish(outer, "gpt_merged", ins, outs)
    rng = np.random.default_rng(3)
    feeds = {"input_ids": rng.integers(0, VOCAB, (BATCH, NEW)).astype(np.int64)}
    feeds.update(past_feeds(rng))
    return model, feeds


def vit():
    w = Weights(4203)
    g = Graph(w)
    img, patch = 32, 8
    n = (img // patch) ** 2
    x = g.op("Conv", ["pixel_values", g.weight("patch.weight", (HID, 3, patch, patch)), g.weight("patch.bias", (HID,), "bias")],
             kernel_shape=[patch, patch], strides=[patch, patch])
    x = g.op("Reshape", [x, g.const(np.array([0, HID, -1], np.int64))])
    x = g.op("Transpose", [x], perm=[0, 2, 1])
    cls = g.op("Expand", [g.weight("cls_token", (1, 1, HID), "embed"), g.const(np.array([BATCH, 1, HID], np.int64))])
    x = g.op("Concat", [cls, x], axis=1)
    x = g.op("Add", [x, g.weight("position_embeddings", (1, n + 1, HID), "embed")])
    for i in range(LAYERS):
        x = encoder_layer(g, x, f"layer.{i}", pre_ln=True)
    x = layer_norm(g, x, "layernorm")
    g.op("Identity", [x], out_names=["last_hidden_state"])
    model = finish(g, "vit", [vi("pixel_values", F, [BATCH, 3, img, img])], [vi("last_hidden_state", F, [BATCH, n + 1, HID])])
    feeds = {"pixel_values": np.random.default_rng(4).uniform(-1, 1, (BATCH, 3, img, img)).astype(np.float32)}
    return model, feeds


def whisper():
    w = Weights(4204)
    g = Graph(w)
    mels, frames = 16, 32
    x = g.op("Conv", ["input_features", g.weight("conv1.weight", (HID, mels, 3)), g.weight("conv1.bias", (HID,), "bias")], kernel_shape=[3], pads=[1, 1])
    x = gelu_erf(g, x)
    x = g.op("Conv", [x, g.weight("conv2.weight", (HID, HID, 3)), g.weight("conv2.bias", (HID,), "bias")], kernel_shape=[3], pads=[1, 1], strides=[2])
    x = gelu_erf(g, x)
    x = g.op("Transpose", [x], perm=[0, 2, 1])
    x = g.op("Add", [x, g.weight("embed_positions", (frames // 2, HID), "embed")])
    for i in range(LAYERS):
        x = encoder_layer(g, x, f"layers.{i}", pre_ln=True)
    x = layer_norm(g, x, "layer_norm")
    g.op("Identity", [x], out_names=["last_hidden_state"])
    model = finish(g, "whisper_encoder", [vi("input_features", F, [BATCH, mels, frames])], [vi("last_hidden_state", F, [BATCH, frames // 2, HID])])
    feeds = {"input_features": np.random.default_rng(5).uniform(-1, 1, (BATCH, mels, frames)).astype(np.float32)}
    return model, feeds


# ---- opset 23 (run in target/onnx23-venv) ----

KV_HEADS = 2


def llama(with_past):
    """A Llama-like decoder on opset 23: RMSNormalization, RotaryEmbedding on [B, S, hidden] with
    num_heads, Attention with grouped key/value heads (causal; with a cache: past_key/past_value
    in, present_key/present_value out, and the causal mask as a float attn_mask), SwiGLU."""
    w = Weights(4205)
    g = Graph(w)
    seq = NEW if with_past else SEQ
    past_len = PAST if with_past else 0
    rot = HEAD // 2
    inv = 1.0 / (10000 ** (np.arange(rot) / rot))
    ang = np.arange(64)[:, None] * inv[None, :]
    cos, sin = g.const(np.cos(ang).astype(np.float32)), g.const(np.sin(ang).astype(np.float32))
    pos = g.const(np.tile(np.arange(past_len, past_len + seq, dtype=np.int64)[None, :], (BATCH, 1)))
    x = g.op("Gather", [g.weight("embed_tokens", (VOCAB, HID), "embed"), "input_ids"])
    mask = None
    if with_past:
        keys = past_len + seq
        mask = g.const(np.where(np.arange(keys)[None, :] <= (past_len + np.arange(seq))[:, None], 0.0, -np.inf).astype(np.float32))

    def rms(x, name):
        return g.op("RMSNormalization", [x, g.weight(name, (HID,), "gamma")], axis=-1, epsilon=1e-5)

    kvh = KV_HEADS * HEAD
    for i in range(LAYERS):
        h = rms(x, f"layers.{i}.input_layernorm")
        q = g.op("MatMul", [h, g.weight(f"layers.{i}.q", (HID, HID))])
        k = g.op("MatMul", [h, g.weight(f"layers.{i}.k", (HID, kvh))])
        v = g.op("MatMul", [h, g.weight(f"layers.{i}.v", (HID, kvh))])
        q = g.op("RotaryEmbedding", [q, cos, sin, pos], num_heads=HEADS)
        k = g.op("RotaryEmbedding", [k, cos, sin, pos], num_heads=KV_HEADS)
        if with_past:
            a = g.op("Attention", [q, k, v, mask, f"past_key_values.{i}.key", f"past_key_values.{i}.value"],
                     out_names=[g.name("attn"), f"present.{i}.key", f"present.{i}.value"], q_num_heads=HEADS, kv_num_heads=KV_HEADS)[0]
        else:
            a = g.op("Attention", [q, k, v], q_num_heads=HEADS, kv_num_heads=KV_HEADS, is_causal=1)
        x = g.op("Add", [x, g.op("MatMul", [a, g.weight(f"layers.{i}.o", (HID, HID))])])
        h = rms(x, f"layers.{i}.post_attention_layernorm")
        gate = g.op("MatMul", [h, g.weight(f"layers.{i}.gate", (HID, 2 * HID))])
        up = g.op("MatMul", [h, g.weight(f"layers.{i}.up", (HID, 2 * HID))])
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        x = g.op("Add", [x, g.op("MatMul", [g.op("Mul", [act, up]), g.weight(f"layers.{i}.down", (2 * HID, HID))])])
    g.op("MatMul", [rms(x, "norm"), g.weight("lm_head", (HID, VOCAB))], out_names=["logits"])
    ins = [vi("input_ids", I64, [BATCH, seq])]
    outs = [vi("logits", F, [BATCH, seq, VOCAB])]
    if with_past:
        for i in range(LAYERS):
            ins += [vi(f"past_key_values.{i}.{kv}", F, [BATCH, KV_HEADS, PAST, HEAD]) for kv in ("key", "value")]
            outs += [vi(f"present.{i}.{kv}", F, [BATCH, KV_HEADS, PAST + seq, HEAD]) for kv in ("key", "value")]
    model = finish(g, "llama_past" if with_past else "llama", ins, outs, opset=23)
    model.ir_version = 10
    rng = np.random.default_rng(6)
    feeds = {"input_ids": rng.integers(0, VOCAB, (BATCH, seq)).astype(np.int64)}
    if with_past:
        for i in range(LAYERS):
            for kv in ("key", "value"):
                feeds[f"past_key_values.{i}.{kv}"] = rng.normal(0, 1, (BATCH, KV_HEADS, PAST, HEAD)).astype(np.float32)
    return model, feeds


# ---- writing cases ----

ENTRIES = []


def write(name, model_bytes, feeds, outputs, tags, tol=1e-4, extra=None):
    d = os.path.join(OUT, "models", name)
    os.makedirs(d, exist_ok=True)
    if model_bytes is not None:
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model_bytes)
    ins, outs = [], []
    for i, (k, v) in enumerate(feeds.items()):
        np.save(os.path.join(d, f"input_{i}.npy"), np.ascontiguousarray(v))
        ins.append({"name": k, "file": f"input_{i}.npy"})
    for i, (k, v) in enumerate(outputs):
        v = np.asarray(v)
        assert np.isfinite(v).all(), f"{name}: non-finite {k}"
        np.save(os.path.join(d, f"expected_{i}.npy"), np.ascontiguousarray(v))
        outs.append({"name": k, "file": f"expected_{i}.npy"})
    entry = {"kind": "models", "name": name, "dir": f"models/{name}", "inputs": ins, "outputs": outs, "tol": tol, "tags": ["transformer"] + tags}
    entry.update(extra or {})
    ENTRIES.append(entry)


def opset23_main():
    from onnx.reference import ReferenceEvaluator
    assert onnx.__version__ == "1.19.1", onnx.__version__
    for with_past in (False, True):
        m, feeds = llama(with_past)
        onnx.checker.check_model(m)
        got = ReferenceEvaluator(m).run(None, feeds)
        names = [o.name for o in m.graph.output]
        write("llama_past_opset23" if with_past else "llama_opset23", m.SerializeToString(), feeds,
              [(n, np.asarray(v, np.float32)) for n, v in zip(names, got)], ["opset23"])
    json.dump(ENTRIES, sys.stdout)


def ort_main():
    import logging

    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_4bits_quantizer import MatMul4BitsQuantizer
    from onnxruntime.transformers.optimizer import optimize_model
    ort.set_default_logger_severity(3)
    logging.disable(logging.WARNING)

    def run(m_or_path, feeds):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        src = m_or_path if isinstance(m_or_path, str) else m_or_path.SerializeToString()
        s = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
        names = [o.name for o in s.get_outputs()]
        return list(zip(names, s.run(names, feeds)))

    def ops(m):
        out = {}
        for gr in [m.graph] + [a.g for n in m.graph.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]:
            for n in gr.node:
                key = f"{n.domain}.{n.op_type}" if n.domain else n.op_type
                out[key] = out.get(key, 0) + 1
        return out

    tmp = tempfile.mkdtemp()
    archs = [("bert", bert(), "bert", {}), ("gpt", gpt(False), "gpt2", {}), ("gpt_past", gpt(True), "gpt2", {}),
             ("gpt_merged", gpt_merged(), None, {}), ("vit", vit(), "vit", {}), ("whisper", whisper(), "bert", {})]
    for arch, (m, feeds), opt_type, _ in archs:
        feed_sets = [("", feeds)]
        if arch == "gpt_merged":
            feed_sets = [("_cache", dict(feeds, use_cache_branch=np.array([True]))), ("_no_cache", dict(feeds, use_cache_branch=np.array([False])))]
        path = os.path.join(tmp, f"{arch}.onnx")
        onnx.save(m, path)
        variants = [("fp32", m, {})]
        # onnxruntime's transformer optimiser, its Python fusions only (opt_level 0). It stops
        # on the merged decoder (its shape helper cannot see into the If branches: "At least
        # one shape is missed for edges to compare"); Optimum optimises the two decoders before
        # merging them, which the gpt and gpt_past variants cover.
        if opt_type is not None:
            om = optimize_model(path, model_type=opt_type, num_heads=HEADS, hidden_size=HID, opt_level=0, use_gpu=False)
            fused = {k: v for k, v in ops(om.model).items() if "." in k}
            print(f"{arch}: ortopt fused {fused or 'nothing'}", file=sys.stderr)
            variants.append(("ortopt", om.model, {"fused": fused}))
        q = MatMul4BitsQuantizer(onnx.load(path), block_size=32, is_symmetric=False)
        q.process()
        qm = q.model.model
        variants.append(("nbits4", qm, {"fused": {k: v for k, v in ops(qm).items() if "." in k}}))
        dq = os.path.join(tmp, f"{arch}_dyn.onnx")
        # the MatMuls (as Optimum's dynamic configurations choose): onnxruntime's CPU provider
        # has no ConvInteger for the int8 weights a Conv would get. reduce_range (7-bit
        # weights), as onnxruntime advises for CPUs without VNNI: there its u8 x s8 kernel adds
        # pairs of products in saturating 16-bit lanes, so without it the oracle itself would
        # depend on the CPU (it was 4x further from pixelgrad's exact sums than from the float
        # model on an AVX2 machine)
        quantize_dynamic(path, dq, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"], reduce_range=True)
        dm = onnx.load(dq)
        variants.append(("dynint8", dm, {"ops": ops(dm)}))
        for label, vm, extra in variants:
            # tolerances: f32 graphs 1e-4 relative; the quantised ones against onnxruntime on the
            # same quantised graph, with the slack measured in scripts' notes (see the tests)
            tol = {"fp32": 1e-4, "ortopt": 1e-4, "nbits4": 1e-4, "dynint8": 1e-4}[label]
            for suffix, fd in feed_sets:
                want = run(vm, fd)
                write(f"{arch}{suffix}_{label}", vm.SerializeToString(), fd, want, [label], tol=tol, extra=extra)
        # external data: the weights (tensors of 1 KiB or more, onnx's default threshold) in
        # model.onnx_data beside model.onnx; onnxruntime refuses small shape constants (axes,
        # shapes) stored outside, as exporters never write them
        for suffix, fd in feed_sets:
            name = f"{arch}{suffix}_external"
            d = os.path.join(OUT, "models", name)
            os.makedirs(d, exist_ok=True)
            em = onnx.load(path)
            onnx.save_model(em, os.path.join(d, "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                            location="model.onnx_data", size_threshold=1024)
            write(name, None, fd, run(os.path.join(d, "model.onnx"), fd), ["external"])
    shutil.rmtree(tmp)

    # the opset 23 rewrite, in the newer onnx's venv
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    py = os.path.join(root, "target", "onnx23-venv", "bin", "python")
    out = subprocess.run([py, os.path.abspath(__file__), "--opset23", OUT], check=True, capture_output=True, text=True).stdout
    ENTRIES.extend(json.loads(out))

    mf = os.path.join(OUT, "manifest.json")
    with open(mf) as f:
        manifest = json.load(f)
    manifest["cases"] = [c for c in manifest["cases"] if "transformer" not in c["tags"]] + ENTRIES
    with open(mf, "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{len(ENTRIES)} transformer cases", file=sys.stderr)


if __name__ == "__main__":
    if "--opset23" in sys.argv:
        opset23_main()
    else:
        ort_main()
