"""Sweeps onnxruntime's quantiser over models the fixtures do not hold and compares `pixelgrad
run` with onnxruntime's int8 outputs: a check by hand, not a test (CI does not run it).

For each model (the `onnx` package's light architectures with He-initialised weights and
batch-norm statistics of positive variance, or the fixtures' small MLP and CNN), every
quantisation form asked for is made with `quantize_static` (MinMax calibration on the input
plus two noisy copies), run by onnxruntime and by the release `pixelgrad` binary on each backend,
and one line is printed: the largest difference in steps of the output's last
DequantizeLinear scale and whether the argmax agrees. A line ends in MISMATCH when the
difference is above one step or the argmax differs.

    bash scripts/onnx-fixtures.sh && cargo build --release -p pixelgrad-cli
    target/onnx-venv/bin/python scripts/quant_sweep.py --models resnet50,shufflenet,cnn \\
        --backends cpu,webgpu,webgl [--forms qdq_u8,qop_i8] [--options] [--out DIR]

Forms: qdq_u8 (QDQ, u8 activations, per-tensor), qdq_i8_pc (QDQ, i8, per-channel),
qop_u8_pc (QOperator, u8, per-channel), qop_i8 (QOperator, i8, per-tensor); a `pre_` prefix
runs `quant_pre_process` first. --options adds, per form, WeightSymmetric=False,
ActivationSymmetric=True and reduce_range.
"""
import argparse
import logging
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMS = {
    "qdq_u8": (QuantFormat.QDQ, False, QuantType.QUInt8),
    "qdq_i8_pc": (QuantFormat.QDQ, True, QuantType.QInt8),
    "qop_u8_pc": (QuantFormat.QOperator, True, QuantType.QUInt8),
    "qop_i8": (QuantFormat.QOperator, False, QuantType.QInt8),
}


class Reader(CalibrationDataReader):
    def __init__(self, name, xs):
        self.it = iter([{name: x} for x in xs])

    def get_next(self):
        return next(self.it, None)


def load(name, rng):
    """(model, input) for a light architecture or the fixtures' `mlp` / `cnn`."""
    small = {n: (m, x) for n, m, x in F.small_mlp_cnn()}
    if name in small:
        return small[name]
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    m = F.he_weights(onnx.load(os.path.join(light, f"light_{name}.onnx")), rng)
    inits = {t.name: t for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "BatchNormalization":
            for i, (lo, hi) in zip(n.input[1:], [(0.5, 1.5), (-0.1, 0.1), (-0.1, 0.1), (0.5, 1.5)]):
                a = numpy_helper.to_array(inits[i])
                inits[i].CopyFrom(numpy_helper.from_array(rng.uniform(lo, hi, a.shape).astype(np.float32), i))
    inp = [i for i in m.graph.input if i.name not in inits][0]
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    return m, rng.uniform(-1, 1, shape).astype(np.float32)


def output_step(q):
    """The scale of the last DequantizeLinear before the first output."""
    inits = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
    producer = {o: n for n in q.graph.node for o in n.output}
    todo = [q.graph.output[0].name]
    while todo:
        n = producer.get(todo.pop(0))
        if n is None:
            continue
        if n.op_type == "DequantizeLinear":
            return float(inits[n.input[1]].max())
        todo += list(n.input)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="squeezenet,mlp,cnn")
    ap.add_argument("--backends", default="cpu")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--options", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "quant-sweep"))
    a = ap.parse_args()
    # onnx_fixtures reads its output folder from argv when imported; it writes nothing here.
    global F
    sys.argv = [sys.argv[0], a.out]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_fixtures as F
    logging.disable(logging.WARNING)
    os.makedirs(a.out, exist_ok=True)
    binary = os.path.join(ROOT, "target", "release", "pixelgrad")
    rng = np.random.default_rng(11)
    variants = [({}, False)] + ([({"WeightSymmetric": False}, False), ({"ActivationSymmetric": True}, False), ({}, True)] if a.options else [])
    mismatches = 0
    for name in a.models.split(","):
        m, x = load(name, rng)
        fp = os.path.join(a.out, f"{name}.onnx")
        onnx.save(m, fp)
        inp = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}][0]
        xp = os.path.join(a.out, f"{name}_x.npy")
        np.save(xp, x)
        calib = [x] + [(x + rng.normal(0, 0.05, x.shape)).astype(np.float32) for _ in range(2)]
        for form in a.forms.split(","):
            fmt, per_channel, act = FORMS[form.removeprefix("pre_")]
            src = fp
            if form.startswith("pre_"):
                from onnxruntime.quantization.shape_inference import quant_pre_process
                src = os.path.join(a.out, f"{name}_pre.onnx")
                try:
                    quant_pre_process(fp, src, skip_symbolic_shape=True)
                except Exception as e:  # onnxruntime's tool refusing the model
                    print(f"{name:12} {form:40} skipped: {str(e)[:120]}")
                    continue
            for extra, reduce_range in variants:
                label = form + "".join(f"_{k}" for k in extra) + ("_reduce_range" if reduce_range else "")
                qp = os.path.join(a.out, f"{name}_{label}.onnx")
                try:
                    quantize_static(src, qp, Reader(inp, calib), quant_format=fmt, per_channel=per_channel, activation_type=act,
                                    weight_type=QuantType.QInt8, reduce_range=reduce_range, extra_options=dict(extra))
                    q = onnx.load(qp)
                    want = F.run_ort(q.SerializeToString(), {inp: x})[0][1].astype(np.float64)
                except Exception as e:  # the quantiser or onnxruntime refusing is not pixelgrad's
                    print(f"{name:12} {label:40} skipped: {str(e)[:120]}")
                    continue
                step = output_step(q)
                for be in a.backends.split(","):
                    d = os.path.join(a.out, f"{name}_{label}_{be}")
                    r = subprocess.run([binary, "run", qp, "--input", f"{inp}={xp}", "--backend", be, "--out", d], capture_output=True, text=True)
                    if r.returncode != 0:
                        mismatches += 1
                        print(f"{name:12} {label:40} {be:6} FAILED {r.stderr.strip()[-300:]}  MISMATCH")
                        continue
                    got = np.load(os.path.join(d, "output_0.npy")).astype(np.float64)
                    steps = float(np.abs(got - want).max()) / step if step else float("nan")
                    n = got.shape[0]
                    same = bool((got.reshape(n, -1).argmax(1) == want.reshape(n, -1).argmax(1)).all())
                    bad = not (steps <= 1.001 and same)
                    mismatches += bad
                    print(f"{name:12} {label:40} {be:6} steps={steps:.2f} argmax_same={same}{'  MISMATCH' if bad else ''}", flush=True)
    print(f"{mismatches} mismatches")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
