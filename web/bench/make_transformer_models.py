"""The transformer models of the browser inference benchmark (issue 42), at a bench size.

Called by make_models.py (`cargo xtask bench --inference`); alone:
    target/onnx-venv/bin/python web/bench/make_transformer_models.py OUT_DIR
writes the files below into OUT_DIR and prints their models.json entries as JSON.

Built with the fixture script's own builders (scripts/onnx_transformer_fixtures.py: its
Graph, Weights, attention, layer_norm, GELU and linear helpers and its `bert()`), with its size
constants set to a bench size first, and random weights; nothing comes from a model hub:
  bert_h256_l4_s128.onnx      the BERT-like encoder, hidden 256, 4 heads, 4 layers, sequence 128,
                              batch 1 (input_ids, token_type_ids, attention_mask: int64)
  gpt_h256_l4_nbits4.onnx     a GPT-like decoder (hidden 256, 4 heads, 4 layers, vocabulary 512)
                              with Hugging Face's cache layout (past_key_values.N.key/value in,
                              present.N.key/value out, the past length dynamic), its MatMuls
                              quantised by onnxruntime's MatMul4BitsQuantizer (blocks of 32):
                              one generated token per run
  gpt_h256_l4_prefill_nbits4.onnx  the same decoder without a cache, for the prompt (16 tokens):
                              it writes the first present.* (as Optimum's decoder_model.onnx)
  gpt_h256_l4_merged.onnx     Optimum's merged layout of the two (f32): an If on
                              use_cache_branch, the prompt through the no-cache branch, each
                              new token through the cache branch
The fixture script's decoder bakes its positions and causal mask for one past length; the
decoders here read the past length from the cache's shape (Shape, Gather), so one file serves
every step of a generation loop.
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import onnx_transformer_fixtures as tf  # noqa: E402

HID, HEADS, LAYERS = 256, 4, 4
SEQ = 128  # the encoder's sequence
VOCAB_DEC, PROMPT, NEW_TOKENS = 512, 16, 16
MAX_POS = 256
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def bench_size(vocab):
    """The fixture builders read these module constants when called."""
    tf.HID, tf.HEADS, tf.LAYERS, tf.VOCAB = HID, HEADS, LAYERS, vocab
    tf.HEAD = HID // HEADS
    tf.BATCH, tf.SEQ = 2, SEQ


class BenchWeights(tf.Weights):
    """The fixture weights, but position tables long enough for the bench's sequences (the
    fixtures' hold 64 rows)."""

    def get(self, name, shape, kind="dense"):
        if name in ("embeddings.position", "wpe"):
            shape = (MAX_POS, shape[1])
        return super().get(name, shape, kind)


def encoder():
    bench_size(1000)
    original = tf.Weights
    tf.Weights = BenchWeights
    try:
        model, feeds = tf.bert()
    finally:
        tf.Weights = original
    # batch 1: the builder's feeds need two rows (its second has a padded tail), and nothing in
    # the graph but its inputs and output names the batch
    for v in list(model.graph.input) + list(model.graph.output):
        v.type.tensor_type.shape.dim[0].dim_value = 1
    onnx.checker.check_model(model)
    return model, {k: v[:1] for k, v in feeds.items()}


def decoder_body(g, with_past, seq):
    """The GPT-like decoder of the fixture script (pre-LN, tanh GELU), on `input_ids` [1, seq];
    with the cache: one new token whose position is the past's length (no mask: it sees every
    key); without: the prompt under a causal mask."""
    e = g.op("Gather", [g.weight("wte", (tf.VOCAB, HID), "embed"), "input_ids"])
    if with_past:
        shape = g.op("Shape", ["past_key_values.0.key"])
        past_len = g.op("Gather", [shape, g.const(np.array([2], np.int64))])
        pos = g.op("Reshape", [past_len, g.const(np.array([1, 1], np.int64))])
        mask = None
    else:
        pos = g.const(np.arange(seq, dtype=np.int64)[None, :])
        causal = np.where(np.arange(seq)[None, :] <= np.arange(seq)[:, None], 0.0, -10000.0).astype(np.float32)
        mask = g.const(causal)
    x = g.op("Add", [e, g.op("Gather", [g.weight("wpe", (MAX_POS, HID), "embed"), pos])])
    for i in range(LAYERS):
        past = (f"past_key_values.{i}.key", f"past_key_values.{i}.value") if with_past else None
        pres = (f"{g.prefix}present.{i}.key", f"{g.prefix}present.{i}.value")
        h = tf.attention(g, tf.layer_norm(g, x, f"h.{i}.ln1"), f"h.{i}.attn", mask, past, pres)
        x = g.op("Add", [x, h])
        f = tf.linear(g, tf.gelu_tanh(g, tf.linear(g, tf.layer_norm(g, x, f"h.{i}.ln2"), f"h.{i}.fc", HID, 4 * HID)), f"h.{i}.proj", 4 * HID, HID)
        x = g.op("Add", [x, f])
    x = tf.layer_norm(g, x, "ln_f")
    return g.op("MatMul", [x, g.weight("lm_head", (HID, tf.VOCAB))], out_names=[f"{g.prefix}logits"])


def kv_info(prefix, length):
    """The value infos of a cache: `prefix`.N.key/value, [1, heads, length, head size]."""
    return [tf.vi(f"{prefix}.{i}.{kv}", F, [1, HEADS, length, HID // HEADS]) for i in range(LAYERS) for kv in ("key", "value")]


def decoders():
    """The with-cache decoder, the prompt decoder and the merged one (same weights)."""
    bench_size(VOCAB_DEC)
    w = tf.Weights(4302)
    # with the cache: one token
    g = tf.Graph(w)
    decoder_body(g, True, 1)
    ins = [tf.vi("input_ids", I64, [1, 1])] + kv_info("past_key_values", "past_sequence_length")
    outs = [tf.vi("logits", F, [1, 1, tf.VOCAB])] + kv_info("present", "total_sequence_length")
    with_past = tf.finish(g, "gpt_with_past", ins, outs)
    # the prompt
    g = tf.Graph(w)
    decoder_body(g, False, PROMPT)
    ins = [tf.vi("input_ids", I64, [1, PROMPT])]
    outs = [tf.vi("logits", F, [1, PROMPT, tf.VOCAB])] + kv_info("present", PROMPT)
    prefill = tf.finish(g, "gpt_prefill", ins, outs)
    # merged: If(use_cache_branch) over the two bodies, the weights outer initializers
    outer = tf.Graph(w)
    branches = []
    for cache, tag in ((True, "cache/"), (False, "no_cache/")):
        b = tf.Graph(w, prefix=tag)
        decoder_body(b, cache, 1 if cache else PROMPT)
        seq = "sequence_length"
        bouts = [tf.vi(f"{tag}logits", F, [1, seq, tf.VOCAB])] + kv_info(f"{tag}present", "total_sequence_length")
        outer.inits.update(b.inits)
        branches.append(helper.make_graph(b.nodes, f"{tag[:-1]}_branch", [], bouts))
    names = ["logits"] + [f"present.{i}.{kv}" for i in range(LAYERS) for kv in ("key", "value")]
    outer.nodes.append(helper.make_node("If", ["use_cache_branch"], names, name="/optimum/If", then_branch=branches[0], else_branch=branches[1]))
    ins = [tf.vi("input_ids", I64, [1, "sequence_length"])] + kv_info("past_key_values", "past_sequence_length")
    ins.append(tf.vi("use_cache_branch", TensorProto.BOOL, [1]))
    outs = [tf.vi("logits", F, [1, "sequence_length", tf.VOCAB])] + kv_info("present", "total_sequence_length")
    merged = tf.finish(outer, "gpt_merged", ins, outs)
    return with_past, prefill, merged


def nbits4(model):
    from onnxruntime.quantization.matmul_4bits_quantizer import MatMul4BitsQuantizer
    q = MatMul4BitsQuantizer(model, block_size=32, is_symmetric=False)
    q.process()
    return q.model.model


def main(out):
    import logging
    logging.disable(logging.WARNING)
    os.makedirs(out, exist_ok=True)
    entries = []
    model, feeds = encoder()
    onnx.save(model, os.path.join(out, "bert_h256_l4_s128.onnx"))
    inputs = []
    for name, v in feeds.items():
        v = np.ascontiguousarray(v).astype("<i4")
        v.tofile(os.path.join(out, f"bert_h256.{name}.i32"))
        inputs.append({"name": name, "shape": list(v.shape), "dtype": "int64", "file": f"bert_h256.{name}.i32"})
    entries.append({"name": "bert-h256-l4-s128", "group": "transformer", "file": "bert_h256_l4_s128.onnx", "input": inputs[0]["name"], "shape": inputs[0]["shape"], "inputs": inputs,
                    "output": "last_hidden_state"})
    with_past, prefill, merged = decoders()
    onnx.save(nbits4(with_past), os.path.join(out, "gpt_h256_l4_nbits4.onnx"))
    onnx.save(nbits4(prefill), os.path.join(out, "gpt_h256_l4_prefill_nbits4.onnx"))
    onnx.save(merged, os.path.join(out, "gpt_h256_l4_merged.onnx"))
    prompt = np.random.default_rng(5).integers(0, VOCAB_DEC, (1, PROMPT)).astype("<i4")
    prompt.tofile(os.path.join(out, "gpt_h256.prompt.i32"))
    gen = {"prompt": "gpt_h256.prompt.i32", "promptLength": PROMPT, "newTokens": NEW_TOKENS, "layers": LAYERS, "heads": HEADS, "headSize": HID // HEADS}
    entries.append({"name": "gpt-h256-l4 4-bit generate", "group": "transformer", "file": "gpt_h256_l4_nbits4.onnx", "prefillFile": "gpt_h256_l4_prefill_nbits4.onnx",
                    "input": "input_ids", "shape": [1, 1], "output": "logits", "generate": gen})
    entries.append({"name": "gpt-h256-l4 merged generate", "group": "transformer", "file": "gpt_h256_l4_merged.onnx", "input": "input_ids", "shape": [1, 1],
                    "output": "logits", "generate": {**gen, "merged": True}})
    return entries


if __name__ == "__main__":
    json.dump(main(sys.argv[1]), sys.stdout, indent=2)
