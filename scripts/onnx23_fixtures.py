"""Opset 23 per-operator fixtures for pixelgrad-onnx: RMSNormalization and RotaryEmbedding,
which the pinned onnxruntime (1.20.1) and onnx (1.17.0) do not know. The oracle is the
reference evaluator (onnx.reference.ReferenceEvaluator) of the newer onnx that
scripts/onnx-fixtures.sh installs in target/onnx23-venv.

Usage (scripts/onnx_fixtures.py runs it): python scripts/onnx23_fixtures.py OUT_DIR
Writes OUT_DIR/ops/<name>/ (model.onnx, input_*.npy, expected_*.npy) for each case and prints
their manifest entries, as JSON, on stdout.
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OUT = sys.argv[1]
RNG = np.random.default_rng(2324)
F = TensorProto.FLOAT
ENTRIES = []


def r(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def case(name, nd, inputs, inits):
    """One model (opset 23): `inputs` (name, array) are fed; `inits` (name, array) are
    initializers; one output `y`, of the first input's shape."""
    vi_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a in inputs]
    g = helper.make_graph(nd, name, vi_in, [helper.make_tensor_value_info("y", F, list(inputs[0][1].shape))], [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], producer_name="pixelgrad-fixtures")
    onnx.checker.check_model(m)
    feeds = {n: a for n, a in inputs}
    (want,) = ReferenceEvaluator(m).run(None, feeds)
    d = os.path.join(OUT, "ops", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    ins = []
    for i, (n, a) in enumerate(inputs):
        np.save(os.path.join(d, f"input_{i}.npy"), a)
        ins.append({"name": n, "file": f"input_{i}.npy"})
    np.save(os.path.join(d, "expected_0.npy"), np.asarray(want, np.float32))
    ENTRIES.append({"kind": "ops", "name": name, "dir": f"ops/{name}", "inputs": ins, "outputs": [{"name": "y", "file": "expected_0.npy"}],
                    "tol": 1e-4, "tags": ["opset23"]})


def rms_cases():
    x = r(2, 3, 4)
    rms = lambda **a: [helper.make_node("RMSNormalization", ["x", "s"], ["y"], name="rmsnorm", **a)]
    case("rmsnorm23", rms(), [("x", x)], [("s", r(4))])
    case("rmsnorm23_axis1_eps", rms(axis=1, epsilon=0.1), [("x", x)], [("s", r(3, 4))])
    case("rmsnorm23_axis0_stash", rms(axis=0, stash_type=1), [("x", x)], [("s", r(2, 3, 4))])
    case("rmsnorm23_axis_neg2_broadcast_scale", rms(axis=-2), [("x", x)], [("s", r(1, 4))])
    case("rmsnorm23_4d_scale_1", rms(axis=-1, epsilon=1e-3), [("x", r(2, 2, 3, 4))], [("s", r(1))])


def rotary_cases():
    b, s, n, h, m = 2, 3, 2, 8, 8
    x3, x4 = r(b, s, n * h), r(b, n, s, h)
    pos = RNG.integers(0, m, size=(b, s)).astype(np.int64)

    def rope(name, x, rd=0, with_pos=True, **attrs):
        half = (rd or h) // 2
        if rd:
            attrs["rotary_embedding_dim"] = rd
        if with_pos:
            ins, feeds, cache = ["x", "c", "s", "p"], [("x", x), ("p", pos)], (m, half)
        else:
            ins, feeds, cache = ["x", "c", "s"], [("x", x)], (b, s, half)
        nd = [helper.make_node("RotaryEmbedding", ins, ["y"], name="rope", **attrs)]
        case(name, nd, feeds, [("c", r(*cache)), ("s", r(*cache))])

    rope("rotary23_4d", x4)
    rope("rotary23_4d_interleaved", x4, interleaved=1)
    rope("rotary23_4d_partial", x4, rd=4)
    rope("rotary23_4d_partial_interleaved_num_heads", x4, rd=6, interleaved=1, num_heads=n)
    rope("rotary23_4d_no_positions", x4, with_pos=False)
    rope("rotary23_3d", x3, num_heads=n)
    rope("rotary23_3d_interleaved", x3, num_heads=n, interleaved=1)
    rope("rotary23_3d_partial", x3, rd=4, num_heads=n)
    rope("rotary23_3d_no_positions_partial_interleaved", x3, with_pos=False, rd=4, num_heads=n, interleaved=1)


rms_cases()
rotary_cases()
json.dump(ENTRIES, sys.stdout)
