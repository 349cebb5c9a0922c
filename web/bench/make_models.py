"""Writes the models of the browser inference benchmark (`cargo xtask bench --inference`).

Usage: python web/bench/make_models.py OUT_DIR PPOCR_MODELS_DIR FIXTURES_DIR

- mobilenet_v1_050_128.onnx: MobileNetV1 with width multiplier 0.5 at 128x128 (13 depthwise-
  separable blocks, BatchNormalization after every convolution, ReLU6 as Clip, global average
  pooling, a 1000-way Gemm), random weights from a fixed seed, built with onnx.helper.
- ppocr_cls.onnx, ppocr_det.onnx: the pretrained PaddleOCR text direction classifier and text
  detector (Apache-2.0) from the rapidocr-onnxruntime wheel that scripts/onnx-fixtures.sh fetches.
- *_fp16.onnx and *_int8.onnx of MobileNet and the classifier, for the precision rows (issue 14):
  fp16 by onnxruntime's own converter (`onnxruntime.transformers.float16`, inputs and outputs kept
  float32) for ONNX Runtime Web, while pixelgrad loads the float file with `{ precision: 'f16' }`;
  int8 through onnxruntime's recommended flow (`quant_pre_process`, then `quantize_static`, QDQ,
  u8 activations, per-channel i8 weights, calibrated on the benchmark input and two noisy copies),
  the same file for both libraries.
- bert_h256_l4_s128.onnx, gpt_h256_l4_*.onnx: the transformer models of issue 42, written by
  make_transformer_models.py (see there), with the fixture script's builders at a bench size.
models.json lists each file with its input name and batch-1 shape, and for the PP-OCR models an
input file (raw little-endian f32): the first rendered text image of their test fixtures
(FIXTURES_DIR, written by scripts/onnx-fixtures.sh), since on noise the detector's output is
all but zero and says nothing about agreement. MobileNet gets the page's deterministic input.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT, PPOCR, FIXTURES = sys.argv[1], sys.argv[2], sys.argv[3]
RNG = np.random.default_rng(7)


def mobilenet_v1(alpha=0.5, size=128, classes=1000):
    nodes, inits = [], []
    n = [0]

    def name(p):
        n[0] += 1
        return f"{p}{n[0]}"

    def const(arr, p):
        t = name(p)
        inits.append(numpy_helper.from_array(arr.astype(np.float32), t))
        return t

    def conv_bn_relu6(x, cin, cout, k, stride, group):
        fan_in = (cin // group) * k * k
        w = const(RNG.normal(0, np.sqrt(2.0 / fan_in), (cout, cin // group, k, k)), "w")
        y = name("conv")
        nodes.append(helper.make_node("Conv", [x, w], [y], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group))
        scale = const(RNG.uniform(0.8, 1.2, cout), "gamma")
        bias = const(RNG.uniform(-0.1, 0.1, cout), "beta")
        mean = const(RNG.uniform(-0.1, 0.1, cout), "mean")
        var = const(RNG.uniform(0.5, 1.5, cout), "var")
        z = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [y, scale, bias, mean, var], [z], epsilon=1e-5))
        lo, hi = const(np.array(0.0), "lo"), const(np.array(6.0), "hi")
        r = name("relu6")
        nodes.append(helper.make_node("Clip", [z, lo, hi], [r]))
        return r

    c = lambda ch: max(8, int(ch * alpha))  # noqa: E731
    x = conv_bn_relu6("input", 3, c(32), 3, 2, 1)
    cin = c(32)
    for cout, stride in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]:
        x = conv_bn_relu6(x, cin, cin, 3, stride, cin)  # depthwise
        x = conv_bn_relu6(x, cin, c(cout), 1, 1, 1)  # pointwise
        cin = c(cout)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"]))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["flat"], axis=1))
    fc_w = const(RNG.normal(0, np.sqrt(1.0 / cin), (classes, cin)), "fc_w")
    fc_b = const(np.zeros(classes), "fc_b")
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["logits"], transB=1))
    graph = helper.make_graph(
        nodes,
        "mobilenet_v1_050_128",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="pixelgrad-bench")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def bench_input(m):
    """The input a model entry runs on: its input file, or the page's deterministic values."""
    n = int(np.prod(m["shape"]))
    if m.get("inputFile"):
        return np.fromfile(os.path.join(OUT, m["inputFile"]), dtype="<f4").reshape(m["shape"])
    i = np.arange(n, dtype=np.float64)
    v = np.sin(i * 12.9898) * 43758.5453
    return (v - np.floor(v)).astype(np.float32).reshape(m["shape"])


def precision_variants(base):
    """The fp16 and int8 entries of a float model entry (see the module docs)."""
    import logging
    import tempfile
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from onnxruntime.transformers.float16 import convert_float_to_float16
    logging.disable(logging.WARNING)
    src = os.path.join(OUT, base["file"])
    stem = base["file"][: -len(".onnx")]
    out = []
    fp16 = convert_float_to_float16(onnx.load(src), keep_io_types=True)
    onnx.save(fp16, os.path.join(OUT, f"{stem}_fp16.onnx"))
    out.append({**base, "name": f"{base['name']} f16", "ortFile": f"{stem}_fp16.onnx", "precision": "f16", "form": "f16", "base": base["name"]})

    x = bench_input(base)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{base["input"]: v} for v in [x] + [(x + RNG.normal(0, 0.05, x.shape)).astype(np.float32) for _ in range(2)]])

        def get_next(self):
            return next(self.it, None)

    tmp = tempfile.mkdtemp()
    m = onnx.load(src)
    # Weights in Constant nodes become initializers: the quantiser only quantises initializers.
    for n in [n for n in m.graph.node if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value"]:
        t = numpy_helper.to_array(n.attribute[0].t)
        if t.dtype == np.float32 and t.size > 1:
            m.graph.initializer.append(numpy_helper.from_array(t, n.output[0]))
            m.graph.node.remove(n)
    if m.opset_import[0].version < 13:
        m = onnx.version_converter.convert_version(m, 13)
    f32 = os.path.join(tmp, "f32.onnx")
    onnx.save(m, f32)
    pre = os.path.join(tmp, "pre.onnx")
    quant_pre_process(f32, pre, skip_symbolic_shape=True)
    quantize_static(pre, os.path.join(OUT, f"{stem}_int8.onnx"), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    shutil.rmtree(tmp)
    out.append({**base, "name": f"{base['name']} int8", "file": f"{stem}_int8.onnx", "form": "int8", "base": base["name"]})
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    models = []
    onnx.save(mobilenet_v1(), os.path.join(OUT, "mobilenet_v1_050_128.onnx"))
    models.append({"name": "mobilenet-v1-0.5-128", "file": "mobilenet_v1_050_128.onnx", "input": "input", "shape": [1, 3, 128, 128]})
    for src, dst, key, fixture in [
        ("ch_ppocr_mobile_v2.0_cls_infer.onnx", "ppocr_cls.onnx", "ppocr-cls", "ppocr_cls"),
        ("ch_PP-OCRv4_det_infer.onnx", "ppocr_det.onnx", "ppocr-det", "ppocr_det"),
    ]:
        shutil.copy(os.path.join(PPOCR, src), os.path.join(OUT, dst))
        m = onnx.load(os.path.join(OUT, dst))
        x = np.load(os.path.join(FIXTURES, "models", fixture, "input_0.npy"))[:1].astype("<f4")
        x.tofile(os.path.join(OUT, f"{fixture}.input.f32"))
        models.append({"name": key, "file": dst, "input": m.graph.input[0].name, "shape": list(x.shape), "inputFile": f"{fixture}.input.f32"})
    for base in [m for m in models if m["name"] in ("mobilenet-v1-0.5-128", "ppocr-cls")]:
        models += precision_variants(base)
    # the transformer exports of issue 42: an encoder, a 4-bit decoder and the merged decoder
    # generating with the cache (make_transformer_models.py, run as a program: it prints its entries)
    tfm = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_transformer_models.py")
    models += json.loads(subprocess.run([sys.executable, tfm, OUT], check=True, capture_output=True, text=True).stdout)
    with open(os.path.join(OUT, "models.json"), "w") as f:
        json.dump(models, f, indent=2)


if __name__ == "__main__":
    main()
