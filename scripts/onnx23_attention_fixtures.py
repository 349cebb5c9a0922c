"""Opset 23 `Attention` fixtures for pixelgrad-onnx. The pinned onnxruntime (1.20.1) and onnx
(1.17.0) do not know opset 23; the oracle is the reference evaluator
(onnx.reference.ReferenceEvaluator) of the newer pinned onnx (1.19.1, with numpy 1.26.4) in
target/onnx23-venv, which scripts/onnx_fixtures.py's attention_cases() makes if it is missing.

Usage (attention_cases() runs it): python scripts/onnx23_attention_fixtures.py OUT_DIR
Writes OUT_DIR/ops/<name>/ (model.onnx, input_*.npy, expected_*.npy) for each case and prints
their manifest entries, as JSON, on stdout.
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

OUT = sys.argv[1]
RNG = np.random.default_rng(2323)
F = TensorProto.FLOAT
ENTRIES = []


def r(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def case(name, ins, outs, feeds, **attrs):
    """One opset 23 Attention node on graph inputs `feeds` (name -> array); every named output
    compared (tag `attention`)."""
    nd = helper.make_node("Attention", ins, outs, name="attention23", **attrs)
    vi_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a in feeds.items()]
    named = [o for o in outs if o]
    g = helper.make_graph([nd], name, vi_in, [helper.make_tensor_value_info(o, F, None) for o in named])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], producer_name="pixelgrad-fixtures")
    m.ir_version = 10
    got = ReferenceEvaluator(m).run(None, feeds)
    d = os.path.join(OUT, "ops", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    entry_ins, entry_outs = [], []
    for i, (k, v) in enumerate(feeds.items()):
        np.save(os.path.join(d, f"input_{i}.npy"), v)
        entry_ins.append({"name": k, "file": f"input_{i}.npy"})
    for i, (k, v) in enumerate(zip(named, got)):
        v = np.asarray(v, dtype=np.float32)
        assert np.isfinite(v).all(), f"{name}: the reference gave non-finite {k}"
        np.save(os.path.join(d, f"expected_{i}.npy"), v)
        entry_outs.append({"name": k, "file": f"expected_{i}.npy"})
    ENTRIES.append({"kind": "ops", "name": name, "dir": f"ops/{name}", "inputs": entry_ins, "outputs": entry_outs, "tol": 1e-4,
                    "tags": ["attention", "opset23"]})


def main():
    assert onnx.__version__ == "1.19.1", onnx.__version__
    B, S, N, H = 2, 3, 4, 4
    # in heads: [B, N, S, H]
    q, k, v = r(B, N, S, H), r(B, N, S, H), r(B, N, S, H)
    case("attention23_heads", ["q", "k", "v"], ["y"], dict(q=q, k=k, v=v))
    case("attention23_heads_causal_scale", ["q", "k", "v"], ["y"], dict(q=q, k=k, v=v), is_causal=1, scale=0.4)
    case("attention23_grouped_kv", ["q", "k", "v"], ["y"], dict(q=q, k=r(B, 2, 5, H), v=r(B, 2, 5, 6)))
    case("attention23_bool_mask", ["q", "k", "v", "m"], ["y"], dict(q=q, k=k, v=v, m=np.array([[True, False, True], [True, True, False], [False, True, True]])))
    case("attention23_float_mask_4d", ["q", "k", "v", "m"], ["y"], dict(q=q, k=k, v=v, m=r(B, 1, S, S)))
    # a mask shorter than the keys: the keys past it are masked
    case("attention23_short_mask_past", ["q", "k", "v", "m", "pk", "pv"], ["y", "present_key", "present_value"],
         dict(q=q, k=k, v=v, m=r(S, 4), pk=r(B, N, 2, H), pv=r(B, N, 2, H)))
    # (with is_causal the reference turns a boolean mask into NaN where it is true, and takes
    # the query length from the mask's rows: a float mask with a row per query here)
    case("attention23_past_causal_float_mask", ["q", "k", "v", "m", "pk", "pv"], ["y", "present_key", "present_value"],
         dict(q=q, k=k, v=v, m=r(S, 5), pk=r(B, N, 2, H), pv=r(B, N, 2, H)), is_causal=1)
    # causal with more keys than queries and no past: upper-left aligned
    case("attention23_causal_cross", ["q", "k", "v"], ["y"], dict(q=q, k=r(B, N, 5, H), v=r(B, N, 5, H)), is_causal=1)
    for mode in range(4):
        case(f"attention23_softcap_qk_output_mode{mode}", ["q", "k", "v", "m"], ["y", "", "", "qk"], dict(q=q, k=k, v=v, m=r(1, N, S, S)),
             softcap=1.5, qk_matmul_output_mode=mode)
    case("attention23_softmax_precision", ["q", "k", "v"], ["y"], dict(q=q, k=k, v=v), softmax_precision=1)
    # [B, S, hidden] with q_num_heads and kv_num_heads
    case("attention23_3d", ["q", "k", "v"], ["y"], dict(q=r(B, S, 16), k=r(B, 5, 16), v=r(B, 5, 12)), q_num_heads=4, kv_num_heads=4)
    case("attention23_3d_grouped_causal_past", ["q", "k", "v", "", "pk", "pv"], ["y", "present_key", "present_value"],
         dict(q=r(B, S, 16), k=r(B, S, 8), v=r(B, S, 8), pk=r(B, 2, 2, H), pv=r(B, 2, 2, H)), q_num_heads=4, kv_num_heads=2, is_causal=1)
    json.dump(ENTRIES, sys.stdout)


if __name__ == "__main__":
    main()
