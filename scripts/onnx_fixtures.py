"""Builds ONNX test fixtures for pixelgrad-onnx, with onnxruntime as the oracle.

Usage: python scripts/onnx_fixtures.py OUT_DIR PPOCR_MODELS_DIR

OUT_DIR/manifest.json lists every case: the model file, its inputs and onnxruntime's outputs
(all .npy). Cases:
  ops/<name>/      small per-operator models made with onnx.helper, one per attribute combination
  models/<name>/   the architectures in onnx/backend/test/data/light (constant weights), and the
                   pretrained PP-OCR text direction classifier and text detector shipped in the
                   rapidocr-onnxruntime wheel, run on rendered text images
"""

import json
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ort.set_default_logger_severity(3)
OUT = sys.argv[1]
PPOCR = sys.argv[2] if len(sys.argv) > 2 else None
RNG = np.random.default_rng(1234)
MANIFEST = []
F = TensorProto.FLOAT


def rand(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def save_case(kind, name, model_bytes, feeds, outputs, tol=1e-4, tags=(), atol=None):
    d = os.path.join(OUT, kind, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model_bytes)
    ins = []
    for i, (k, v) in enumerate(feeds.items()):
        fn = f"input_{i}.npy"
        np.save(os.path.join(d, fn), np.asarray(v, order="C"))
        ins.append({"name": k, "file": fn})
    outs = []
    for i, (k, v) in enumerate(outputs):
        fn = f"expected_{i}.npy"
        np.save(os.path.join(d, fn), np.asarray(v, order="C"))
        outs.append({"name": k, "file": fn})
    entry = {"kind": kind, "name": name, "dir": f"{kind}/{name}", "inputs": ins, "outputs": outs, "tol": tol, "tags": list(tags)}
    if atol is not None:
        entry["atol"] = atol
    MANIFEST.append(entry)


def oracle_options(exact=True):
    """onnxruntime's session options for an oracle: one thread, and exact 8-bit products. On x86
    CPUs without VNNI (AVX2 or AVX-512 alone) its u8 x s8 matrix kernels add products in 16-bit
    lanes that saturate, so the same fixture gets other "expected" values on another machine
    (4871 off in one MatMulInteger case); `session.x64quantprecision` makes it take its exact u8 x
    u8 kernels instead, as on VNNI machines. That rewrite has no kernel for 8-bit signed
    activations (`QLinearConv` on int8): `oracle_session` then runs without it."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    if exact:
        so.add_session_config_entry("session.x64quantprecision", "1")
    return so


def expand_dynamic_quantize_matmul(model_bytes):
    """The model with each com.microsoft `DynamicQuantizeMatMul` written as the standard
    operators it stands for (`DynamicQuantizeLinear`, `MatMulInteger`, the scales and the bias),
    for the oracle only: onnxruntime's fused kernel adds u8 x s8 products in saturating 16-bit
    lanes on x86 CPUs without VNNI, and aborts the process under `session.x64quantprecision`,
    while `MatMulInteger` under it is exact. The values are those of its exact (VNNI) kernel."""
    m = onnx.load_from_string(model_bytes)
    if not any(n.op_type == "DynamicQuantizeMatMul" for n in m.graph.node):
        return model_bytes
    nodes = []
    for n in m.graph.node:
        if n.op_type != "DynamicQuantizeMatMul":
            nodes.append(n)
            continue
        a, b, bs = n.input[0], n.input[1], n.input[2]
        bz = n.input[3] if len(n.input) > 3 else ""
        bias = n.input[4] if len(n.input) > 4 else ""
        t = lambda suffix: f"{n.output[0]}__{suffix}"
        if not bz:
            # an explicit zero point of B's type: without one, the exact rewrite is not taken
            types = {i.name: i.data_type for i in m.graph.initializer}
            types.update({v.name: v.type.tensor_type.elem_type for v in list(m.graph.input) + list(m.graph.value_info)})
            bz = t("bz")
            nodes.append(helper.make_node("Constant", [], [bz], value=helper.make_tensor(bz, types.get(b, TensorProto.INT8), [], [0])))
        nodes += [helper.make_node("DynamicQuantizeLinear", [a], [t("aq"), t("as"), t("az")]),
                  helper.make_node("MatMulInteger", [t("aq"), b, t("az"), bz], [t("acc")]),
                  helper.make_node("Cast", [t("acc")], [t("accf")], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [t("as"), bs], [t("scale")])]
        if bias:
            nodes += [helper.make_node("Mul", [t("accf"), t("scale")], [t("y")]), helper.make_node("Add", [t("y"), bias], [n.output[0]])]
        else:
            nodes.append(helper.make_node("Mul", [t("accf"), t("scale")], [n.output[0]]))
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m.SerializeToString()


def oracle_session(model):
    """An onnxruntime session on the CPU for `model` (bytes or a path), with `oracle_options`."""
    if isinstance(model, bytes):
        model = expand_dynamic_quantize_matmul(model)
    try:
        return ort.InferenceSession(model, oracle_options(), providers=["CPUExecutionProvider"])
    except Exception as e:  # the exact rewrite has no kernel for this model's types
        if "Failed to find kernel" not in str(e):
            raise
        return ort.InferenceSession(model, oracle_options(exact=False), providers=["CPUExecutionProvider"])


def run_ort(model_bytes, feeds):
    sess = oracle_session(model_bytes)
    names = [o.name for o in sess.get_outputs()]
    return list(zip(names, sess.run(names, feeds)))


def case(name, nodes, inputs, outputs, initializers=(), opset=13, tol=1e-4, feeds=None, tags=(), atol=None, ms=False):
    """One per-operator model: `inputs` are (name, np.ndarray, declared shape or None)."""
    vi_in = []
    fd = {}
    for n, arr, shape in inputs:
        et = helper.np_dtype_to_tensor_dtype(arr.dtype)
        vi_in.append(helper.make_tensor_value_info(n, et, shape if shape is not None else list(arr.shape)))
        fd[n] = arr
    vi_out = [helper.make_tensor_value_info(n, et, None) for n, et in outputs]
    inits = [numpy_helper.from_array(a, n) for n, a in initializers]
    g = helper.make_graph(nodes, name, vi_in, vi_out, inits)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    m = helper.make_model(g, opset_imports=opsets, producer_name="pixelgrad-fixtures")
    m.ir_version = min(m.ir_version, 8)
    m = onnx.shape_inference.infer_shapes(m)
    b = m.SerializeToString()
    save_case("ops", name, b, fd, run_ort(b, fd), tol=tol, tags=tags, atol=atol)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=f"{op.lower()}_node", **attrs)


def conv_cases():
    x = rand(1, 4, 9, 9)
    w = rand(6, 4, 3, 3)
    b = rand(6)
    case("conv_basic", [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], [("x", x, None)], [("y", F)], [("w", w), ("b", b)])
    case("conv_stride2_asym_pads_nobias", [node("Conv", ["x", "w"], ["y"], strides=[2, 2], pads=[0, 1, 1, 0])], [("x", x, None)], [("y", F)], [("w", w)])
    case("conv_dilation2", [node("Conv", ["x", "w", "b"], ["y"], dilations=[2, 2], pads=[2, 2, 2, 2])], [("x", x, None)], [("y", F)], [("w", w), ("b", b)])
    case("conv_dilation_2x1_stride_1x2", [node("Conv", ["x", "w"], ["y"], dilations=[2, 1], strides=[1, 2])], [("x", x, None)], [("y", F)], [("w", w)])
    case("conv_group2_batch2", [node("Conv", ["x", "w", "b"], ["y"], group=2, pads=[1, 1, 1, 1])], [("x", rand(2, 4, 7, 7), None)], [("y", F)],
         [("w", rand(6, 2, 3, 3)), ("b", b)])
    case("conv_group2_batch1", [node("Conv", ["x", "w"], ["y"], group=2, strides=[2, 2])], [("x", rand(1, 4, 8, 8), None)], [("y", F)], [("w", rand(4, 2, 3, 3))])
    case("conv_depthwise", [node("Conv", ["x", "w", "b"], ["y"], group=4, pads=[1, 1, 1, 1])], [("x", rand(2, 4, 8, 8), None)], [("y", F)],
         [("w", rand(4, 1, 3, 3)), ("b", rand(4))])
    case("conv_depthwise_mult2_stride2", [node("Conv", ["x", "w"], ["y"], group=4, strides=[2, 2], pads=[2, 2, 2, 2])], [("x", rand(1, 4, 9, 9), None)], [("y", F)],
         [("w", rand(8, 1, 5, 5))])
    case("conv_autopad_same_upper", [node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])], [("x", rand(1, 4, 8, 8), None)], [("y", F)], [("w", w)])
    case("conv_autopad_same_lower", [node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", strides=[2, 2])], [("x", rand(1, 4, 8, 8), None)], [("y", F)], [("w", rand(6, 4, 4, 4))])
    case("conv_autopad_valid", [node("Conv", ["x", "w"], ["y"], auto_pad="VALID")], [("x", x, None)], [("y", F)], [("w", w)])
    case("conv_1x3_stride_2x1", [node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[1, 3], strides=[2, 1], pads=[0, 1, 0, 1])], [("x", x, None)], [("y", F)],
         [("w", rand(6, 4, 1, 3)), ("b", b)])
    case("conv_dynamic_batch", [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], [("x", rand(3, 4, 6, 5), ["N", 4, "H", "W"])], [("y", F)],
         [("w", w), ("b", b)], tags=["dynamic"])
    # Large enough for WebGL's block kernel, with output rows that do not fill whole texels
    # (11x11, 7x7): the input is widened and the output cut back (widen_conv_input).
    case("conv_block_rows_11x11", [node("Conv", ["x", "w", "b"], ["y"])], [("x", rand(8, 16, 13, 13), None)], [("y", F)],
         [("w", rand(32, 16, 3, 3)), ("b", rand(32))])
    case("conv_block_rows_stride2_7x7", [node("Conv", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])], [("x", rand(8, 16, 14, 14), None)],
         [("y", F)], [("w", rand(32, 16, 3, 3))])
    case("conv_block_rows_pointwise_7x7", [node("Conv", ["x", "w", "b"], ["y"])], [("x", rand(1, 256, 7, 7), None)], [("y", F)],
         [("w", rand(256, 256, 1, 1)), ("b", rand(256))])
    # Conv + BatchNormalization: folded into one Conv at load
    c = 6
    bn = [("s", rand(c, lo=0.5, hi=1.5)), ("bb", rand(c)), ("m", rand(c)), ("v", rand(c, lo=0.5, hi=2.0))]
    case("conv_bn_folded", [node("Conv", ["x", "w", "b"], ["t"], pads=[1, 1, 1, 1]), helper.make_node("BatchNormalization", ["t", "s", "bb", "m", "v"], ["y"], name="bn", epsilon=1e-3)],
         [("x", x, None)], [("y", F)], [("w", w), ("b", b)] + bn)
    case("batchnorm_standalone", [node("Relu", ["x"], ["t"]), helper.make_node("BatchNormalization", ["t", "s", "bb", "m", "v"], ["y"], name="bn")],
         [("x", rand(2, c, 4, 4), None)], [("y", F)], bn)


def conv_transpose_cases():
    x = rand(1, 4, 5, 5)
    case("convtranspose_k2_s2", [node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [("x", x, None)], [("y", F)],
         [("w", rand(4, 3, 2, 2)), ("b", rand(3))])
    case("convtranspose_k3_s2_pads_outpad", [node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])],
         [("x", rand(2, 4, 4, 4), None)], [("y", F)], [("w", rand(4, 3, 3, 3))])
    case("convtranspose_group2", [node("ConvTranspose", ["x", "w", "b"], ["y"], group=2, strides=[2, 2])], [("x", rand(2, 4, 3, 3), None)], [("y", F)],
         [("w", rand(4, 2, 3, 3)), ("b", rand(4))])
    case("convtranspose_output_shape", [node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_shape=[10, 9])], [("x", x, None)], [("y", F)], [("w", rand(4, 2, 3, 3))])
    case("convtranspose_dilation2", [node("ConvTranspose", ["x", "w"], ["y"], dilations=[2, 2])], [("x", x, None)], [("y", F)], [("w", rand(4, 2, 3, 3))])
    case("convtranspose_same_upper", [node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER")], [("x", x, None)], [("y", F)], [("w", rand(4, 2, 3, 3))])


def conv_transpose_ref(x, w, b, stride, dil, opad, pads):
    """ConvTranspose by definition (float64): every input pixel scatters its kernel."""
    n, c, h, wd = x.shape
    m, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    full = ((h - 1) * stride[0] + (kh - 1) * dil[0] + 1 + opad[0], (wd - 1) * stride[1] + (kw - 1) * dil[1] + 1 + opad[1])
    y = np.zeros((n, m) + full)
    for i in range(h):
        for j in range(wd):
            for a in range(kh):
                for q in range(kw):
                    y[:, :, i * stride[0] + a * dil[0], j * stride[1] + q * dil[1]] += np.einsum("nc,cm->nm", x[:, :, i, j], w[:, :, a, q])
    y = y[:, :, pads[0]:full[0] - pads[2], pads[1]:full[1] - pads[3]]
    return (y + b[None, :, None, None]).astype(np.float32)


def fuzz_found_cases():
    """Found by scripts/onnx_fuzz.py (made last, so the other fixtures' random draws stay)."""
    x = rand(1, 2, 3, 4)
    # output_shape larger than the full output: onnxruntime adds zeros (and the bias) at the end
    case("convtranspose_output_shape_past_full", [node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 3], output_shape=[7, 12])],
         [("x", x, None)], [("y", F)], [("w", rand(2, 3, 2, 1)), ("b", rand(3))])
    # SAME asks for 3 * 4 = 12 columns where the windows reach 10: the output stays at 10
    case("convtranspose_same_past_full", [node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 3], auto_pad="SAME_UPPER")],
         [("x", x, None)], [("y", F)], [("w", rand(2, 3, 2, 1)), ("b", rand(3))])
    # output_padding at or past the stride (allowed below the dilation): onnxruntime 1.20 leaves
    # those columns unwritten, so the expected output is computed by definition here
    xx, w, b = rand(1, 3, 5, 6), rand(3, 2, 2, 2), rand(2)
    attrs = dict(strides=[2, 1], dilations=[1, 2], output_padding=[1, 1], pads=[1, 0, 0, 1])
    m = helper.make_model(helper.make_graph([node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], "ct",
                                            [helper.make_tensor_value_info("x", F, list(xx.shape))], [helper.make_tensor_value_info("y", F, None)],
                                            [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]),
                          opset_imports=[helper.make_opsetid("", 13)], producer_name="pixelgrad-fixtures")
    m.ir_version = min(m.ir_version, 8)
    want = conv_transpose_ref(xx.astype(np.float64), w.astype(np.float64), b, attrs["strides"], attrs["dilations"], attrs["output_padding"],
                              attrs["pads"])
    save_case("ops", "convtranspose_outpad_past_stride", m.SerializeToString(), {"x": xx}, [("y", want)])
    # SAME with the stride past the window: the windows start inside the input (onnxruntime's
    # pooling rounds the negative padding toward zero; found by scripts/onnx_fuzz.py)
    xs = rand(1, 2, 9, 11)
    case("maxpool_same_upper_stride_past_kernel", [node("MaxPool", ["x"], ["y"], kernel_shape=[1, 2], strides=[3, 4], auto_pad="SAME_UPPER")],
         [("x", xs, None)], [("y", F)])
    case("avgpool_same_lower_stride_past_kernel", [node("AveragePool", ["x"], ["y"], kernel_shape=[1, 2], strides=[3, 4], auto_pad="SAME_LOWER")],
         [("x", xs, None)], [("y", F)])
    case("maxpool_indices_same_upper_stride_past_kernel", [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[1, 1], strides=[3, 4], auto_pad="SAME_UPPER")],
         [("x", xs, None)], [("y", F), ("i", TensorProto.INT64)], opset=12)
    # ceil_mode: a dilated window longer than the input still gives one output
    case("maxpool_ceil_window_past_input", [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2], strides=[2, 2], ceil_mode=1)],
         [("x", rand(1, 2, 4, 2), None)], [("y", F)], opset=12)
    # the product on the device: signs, zeros and magnitudes (exp of summed logs)
    xp = (rand(2, 3, 4) * 0.6 + np.sign(rand(2, 3, 4)) * 0.7).astype(np.float32)
    xp[1, 2, 3] = 0.0
    case("reduceprod_axis1", [node("ReduceProd", ["x"], ["y"], axes=[1], keepdims=0)], [("x", xp, None)], [("y", F)])
    case("reduceprod_all_opset18", [node("ReduceProd", ["x"], ["y"])], [("x", xp[0], None)], [("y", F)], opset=18)
    # nearest asymmetric 5 -> 8: 4 / 1.6f is 2.5 in f32 (2.49999996 exactly), round_prefer_ceil picks 3
    case("resize_nearest_f32_tie", [node("Resize", ["x", "", "", "sz"], ["y"], mode="nearest", coordinate_transformation_mode="asymmetric",
                                         nearest_mode="round_prefer_ceil")], [("x", rand(1, 2, 5, 5), None)], [("y", F)],
         [("sz", np.array([1, 2, 7, 8], np.int64))], opset=19)
    # a constant pad whose negative side removes the whole axis: only the value is left
    # (onnxruntime 1.20 leaves that output unwritten; the expected output is the value)
    xq = rand(2, 1, 3)
    pm = helper.make_model(helper.make_graph([node("Pad", ["x", "p", "c"], ["y"], mode="constant")], "pad",
                                             [helper.make_tensor_value_info("x", F, list(xq.shape))], [helper.make_tensor_value_info("y", F, None)],
                                             [numpy_helper.from_array(np.array([0, 2, 1, 1, -1, 0], np.int64), "p"),
                                              numpy_helper.from_array(np.array(-1.5, np.float32), "c")]),
                           opset_imports=[helper.make_opsetid("", 13)], producer_name="pixelgrad-fixtures")
    pm.ir_version = min(pm.ir_version, 8)
    save_case("ops", "pad_negative_removes_axis", pm.SerializeToString(), {"x": xq}, [("y", np.full((3, 2, 4), -1.5, np.float32))])
    # Einsum diagonals: a label repeated within one operand
    case("einsum_diagonal", [node("Einsum", ["x"], ["y"], equation="ii->i")], [("x", rand(4, 4), None)], [("y", F)])
    case("einsum_trace_implicit", [node("Einsum", ["x"], ["y"], equation="ii")], [("x", rand(5, 5), None)], [("y", F)])
    case("einsum_batch_diagonal_product", [node("Einsum", ["x", "w"], ["y"], equation="bii,ij->bj")], [("x", rand(2, 3, 3), None)], [("y", F)],
         [("w", rand(3, 4))])
    # float Mod (fmod = 1): quotients that round across an integer in f32, signs, broadcasting
    fa = np.array([5.9999995, -5.9999995, 1000000.5, 7.0, -7.0, 0.3, -0.3, 100.1, 0.0, 2.5], np.float32)
    fb = np.array([2.0, 2.0, 3.0, -2.5, 2.5, 0.1, 0.1, 0.7, 1.5, -2.5], np.float32)
    case("mod_float_fmod", [helper.make_node("Mod", ["a", "b"], ["y"], name="mod", fmod=1)], [("a", fa, None), ("b", fb, None)], [("y", F)])
    case("mod_float_broadcast", [helper.make_node("Mod", ["a", "b"], ["y"], name="mod", fmod=1)], [("a", rand(3, 4) * 10, None)], [("y", F)],
         [("b", np.array([0.75, -1.5, 2.25, 3.0], np.float32))])
    # Erf near 0, where only relative accuracy counts (erf(0) came out as 1.8e-7)
    case("erf_near_zero", [node("Erf", ["x"], ["y"])], [("x", np.array([0.0, -0.0, 1e-6, -1e-5, 3e-4, -2e-4], np.float32), None)], [("y", F)])
    # no axes with noop_with_empty_axes: ReduceSumSquare still squares (onnxruntime needs one element)
    case("reducesumsquare_noop", [node("ReduceSumSquare", ["x"], ["y"], noop_with_empty_axes=1)], [("x", rand(1, 1), None)], [("y", F)], opset=18)


def one_d_cases():
    """1-D convolutions and pooling ([N, C, L]), which run as 2-D ones of height 1."""
    x = rand(2, 4, 17)
    case("conv1d_pads_stride_bias", [node("Conv", ["x", "w", "b"], ["y"], pads=[2, 1], strides=[2])], [("x", x, None)], [("y", F)], [("w", rand(6, 4, 5)), ("b", rand(6))])
    case("conv1d_dilated", [node("Conv", ["x", "w"], ["y"], dilations=[2], pads=[2, 2])], [("x", x, None)], [("y", F)], [("w", rand(3, 4, 3))])
    case("conv1d_same_upper_stride", [node("Conv", ["x", "w"], ["y"], strides=[2], auto_pad="SAME_UPPER")], [("x", x, None)], [("y", F)], [("w", rand(3, 4, 3))])
    case("conv1d_depthwise_grouped", [node("Conv", ["x", "w"], ["y"], group=4, pads=[1, 1])], [("x", x, None)], [("y", F)], [("w", rand(8, 1, 3))])
    case("conv_transpose1d_stride", [node("ConvTranspose", ["x", "w"], ["y"], strides=[3], output_padding=[1])], [("x", rand(1, 3, 6), None)], [("y", F)], [("w", rand(3, 2, 4))])
    case("maxpool1d_ceil", [node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[2], ceil_mode=1)], [("x", x, None)], [("y", F)])
    case("averagepool1d_pads_include", [node("AveragePool", ["x"], ["y"], kernel_shape=[4], pads=[1, 2], count_include_pad=1)], [("x", x, None)], [("y", F)])


def pool_cases():
    x = rand(2, 3, 9, 9)
    case("maxpool_k3_s2_p1", [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], [("x", x, None)], [("y", F)])
    case("maxpool_k2_s2", [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [("x", x, None)], [("y", F)])
    case("maxpool_ceil", [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)], [("x", rand(1, 2, 8, 8), None)], [("y", F)])
    case("maxpool_asym_pads_3x2", [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[1, 2], pads=[0, 1, 2, 0])], [("x", x, None)], [("y", F)])
    case("maxpool_dilation2", [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])], [("x", x, None)], [("y", F)], opset=12)
    case("maxpool_same_upper", [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")], [("x", rand(1, 2, 8, 8), None)], [("y", F)])
    case("maxpool_indices_pads_stride", [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], [("x", x, None)],
         [("y", F), ("i", TensorProto.INT64)], opset=12)
    case("maxpool_indices_column_major", [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 3], strides=[2, 1], storage_order=1)], [("x", x, None)],
         [("y", F), ("i", TensorProto.INT64)], opset=12)
    case("maxunpool_roundtrip_output_shape", [node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
                                              helper.make_node("MaxUnpool", ["p", "i", "s"], ["y"], name="unpool", kernel_shape=[2, 2], strides=[2, 2])],
         [("x", x, None)], [("y", F)], [("s", np.array([2, 3, 9, 9], np.int64))], opset=12)
    case("avgpool_pad_exclude", [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], [("x", x, None)], [("y", F)])
    case("avgpool_pad_include", [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)], [("x", x, None)], [("y", F)])
    case("avgpool_ceil", [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)], [("x", rand(1, 2, 8, 8), None)], [("y", F)])
    case("avgpool_ceil_include_pad", [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)],
         [("x", rand(1, 2, 8, 8), None)], [("y", F)])
    case("avgpool_3x2_s3x2", [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], strides=[3, 2])], [("x", rand(1, 2, 9, 8), None)], [("y", F)])
    case("global_avgpool", [node("GlobalAveragePool", ["x"], ["y"])], [("x", x, None)], [("y", F)])
    case("global_maxpool", [node("GlobalMaxPool", ["x"], ["y"])], [("x", x, None)], [("y", F)])
    case("lrn", [node("LRN", ["x"], ["y"], size=3, alpha=1e-2, beta=0.75, bias=2.0)], [("x", rand(1, 6, 4, 4), None)], [("y", F)])
    case("lrn_size5", [node("LRN", ["x"], ["y"], size=5)], [("x", rand(1, 6, 3, 3), None)], [("y", F)])


def linalg_cases():
    a, b = rand(4, 5), rand(5, 3)
    case("gemm_basic", [node("Gemm", ["a", "b", "c"], ["y"])], [("a", a, None)], [("y", F)], [("b", b), ("c", rand(3))])
    case("gemm_transA_transB_alpha_beta", [node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0)], [("a", rand(5, 4), None)], [("y", F)],
         [("b", rand(3, 5)), ("c", rand(4, 3))])
    case("gemm_no_c", [node("Gemm", ["a", "b"], ["y"], transB=1)], [("a", a, None)], [("y", F)], [("b", rand(3, 5))])
    case("matmul_2d", [node("MatMul", ["a", "b"], ["y"])], [("a", a, None), ("b", b, None)], [("y", F)])
    case("matmul_3d_2d", [node("MatMul", ["a", "b"], ["y"])], [("a", rand(2, 4, 5), None)], [("y", F)], [("b", b)])
    case("matmul_3d_3d", [node("MatMul", ["a", "b"], ["y"])], [("a", rand(2, 4, 5), None), ("b", rand(2, 5, 3), None)], [("y", F)])
    case("matmul_4d_broadcast", [node("MatMul", ["a", "b"], ["y"])], [("a", rand(2, 3, 4, 5), None), ("b", rand(1, 3, 5, 2), None)], [("y", F)])
    case("matmul_2d_3d", [node("MatMul", ["a", "b"], ["y"])], [("a", a, None), ("b", rand(3, 5, 2), None)], [("y", F)])
    case("matmul_1d_2d", [node("MatMul", ["a", "b"], ["y"])], [("a", rand(5), None)], [("y", F)], [("b", b)])
    case("matmul_2d_1d", [node("MatMul", ["a", "b"], ["y"])], [("a", a, None)], [("y", F)], [("b", rand(5))])
    x = rand(2, 3, 4, 5)
    case("reducemean_23_keep", [node("ReduceMean", ["x"], ["y"], axes=[2, 3])], [("x", x, None)], [("y", F)])
    case("reducemean_last_nokeep", [node("ReduceMean", ["x"], ["y"], axes=[-1], keepdims=0)], [("x", x, None)], [("y", F)])
    case("reducemean_all", [node("ReduceMean", ["x"], ["y"], keepdims=0)], [("x", x, None)], [("y", F)])
    case("reducemean_opset18_axes_input", [node("ReduceMean", ["x", "ax"], ["y"])], [("x", x, None)], [("y", F)], [("ax", np.array([1], np.int64))], opset=18)
    case("reducesum_opset13", [node("ReduceSum", ["x", "ax"], ["y"], keepdims=0)], [("x", x, None)], [("y", F)], [("ax", np.array([0, 2], np.int64))])
    case("reducemax", [node("ReduceMax", ["x"], ["y"], axes=[1])], [("x", x, None)], [("y", F)])
    case("reducelogsumexp", [node("ReduceLogSumExp", ["x"], ["y"], axes=[1])], [("x", x, None)], [("y", F)])
    case("reducelogsumexp_all_large", [node("ReduceLogSumExp", ["x"], ["y"], keepdims=0)], [("x", (x * 200).astype(np.float32), None)], [("y", F)])
    case("reducelogsum_23", [node("ReduceLogSum", ["x"], ["y"], axes=[2, 3])], [("x", np.abs(x) + 0.1, None)], [("y", F)])
    case("reducel1_last", [node("ReduceL1", ["x"], ["y"], axes=[-1], keepdims=0)], [("x", x, None)], [("y", F)])
    case("layernorm", [node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-5)], [("x", x, None)], [("y", F)], [("s", rand(5)), ("b", rand(5))], opset=17)
    case("instancenorm", [node("InstanceNormalization", ["x", "s", "b"], ["y"])], [("x", x, None)], [("y", F)], [("s", rand(3)), ("b", rand(3))])


def elementwise_cases():
    x = rand(2, 3, 4)
    for op in ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Erf", "Softplus", "Softsign"]:
        case(f"unary_{op.lower()}", [node(op, ["x"], ["y"])], [("x", x * 3, None)], [("y", F)])
    # Halves (ties to even), values just below a half, negatives and integers past 2^23.
    r = np.concatenate([np.arange(-3.5, 3.6, 0.5), [0.49999997, -0.49999997, 2.4999998, 8388609.0, -8388609.0, 1e9]]).astype(np.float32)
    r = np.concatenate([r, (rand(9) * 50).astype(np.float32)]).reshape(3, 10)
    case("sign", [node("Sign", ["x"], ["y"])], [("x", np.array([-2.7, -0.5, -0.0, 0.0, 0.3, 2.5, 1e9, -1e-30], np.float32), None)], [("y", F)], tol=0.0)
    # float → integer Cast of a device value truncates toward zero (in-range values)
    tr = np.array([-2.7, -2.5, -0.5, -0.0, 0.3, 2.5, 300.7, 8388609.0], np.float32)
    case("cast_float_to_int32_device", [node("Relu", ["x"], ["r"]), node("Sub", ["x", "r"], ["n"]), node("Add", ["n", "r"], ["t"]),
                                        helper.make_node("Cast", ["t"], ["y"], name="cast", to=TensorProto.INT32)], [("x", tr, None)], [("y", TensorProto.INT32)], tol=0.0)
    # Integer Div (truncates) and Mod (fmod 0: divisor's sign; 1: dividend's) of device tensors
    ia = np.array([-7, -7, 7, 7, -6, 6, 0, 13, -13, 16777215, -100000, 5, -1, 1], np.int32)
    ib = np.array([3, -3, 3, -3, 3, -3, 5, 1, 7, 7, 999, 1, 16777213, -2], np.int32)
    for dt in [np.int32, np.int64]:
        t = TensorProto.INT32 if dt == np.int32 else TensorProto.INT64
        sfx = "int32" if dt == np.int32 else "int64"
        for fm in [0, 1]:
            case(f"mod_{sfx}_fmod{fm}", [helper.make_node("Mod", ["a", "b"], ["y"], name="mod", fmod=fm)],
                 [("a", ia.astype(dt), None), ("b", ib.astype(dt), None)], [("y", t)], tol=0.0)
        case(f"div_{sfx}", [node("Div", ["a", "b"], ["y"])], [("a", ia.astype(dt), None), ("b", ib.astype(dt), None)], [("y", t)], tol=0.0)
    # broadcast against a constant divisor (a scalar initializer)
    case("mod_int64_scalar", [helper.make_node("Mod", ["a", "b"], ["y"], name="mod")], [("a", ia.astype(np.int64).reshape(2, 7), None)],
         [("y", TensorProto.INT64)], [("b", np.array(4, np.int64))], tol=0.0)
    for op in ["Floor", "Ceil", "Round"]:
        case(f"unary_{op.lower()}", [node(op, ["x"], ["y"])], [("x", r, None)], [("y", F)], tol=0.0)
    case("unary_sqrt", [node("Sqrt", ["x"], ["y"])], [("x", rand(2, 3, lo=0.1, hi=4.0), None)], [("y", F)])
    case("unary_log", [node("Log", ["x"], ["y"])], [("x", rand(2, 3, lo=0.1, hi=4.0), None)], [("y", F)])
    case("unary_reciprocal", [node("Reciprocal", ["x"], ["y"])], [("x", rand(2, 3, lo=0.5, hi=4.0), None)], [("y", F)])
    case("leakyrelu_alpha", [node("LeakyRelu", ["x"], ["y"], alpha=0.2)], [("x", x, None)], [("y", F)])
    case("leakyrelu_default", [node("LeakyRelu", ["x"], ["y"])], [("x", x, None)], [("y", F)])
    case("elu", [node("Elu", ["x"], ["y"], alpha=0.7)], [("x", x * 2, None)], [("y", F)])
    case("prelu", [node("PRelu", ["x", "s"], ["y"])], [("x", rand(2, 3, 4, 4), None)], [("y", F)], [("s", rand(3, 1, 1))])
    case("hardsigmoid_default", [node("HardSigmoid", ["x"], ["y"])], [("x", x * 4, None)], [("y", F)])
    case("hardsigmoid_alpha_beta", [node("HardSigmoid", ["x"], ["y"], alpha=1 / 6, beta=0.5)], [("x", x * 5, None)], [("y", F)])
    case("hardswish", [node("HardSwish", ["x"], ["y"])], [("x", x * 5, None)], [("y", F)], opset=14)
    case("clip_inputs", [node("Clip", ["x", "lo", "hi"], ["y"])], [("x", x * 3, None)], [("y", F)], [("lo", np.array(-0.5, np.float32)), ("hi", np.array(0.75, np.float32))])
    case("clip_max_only", [node("Clip", ["x", "", "hi"], ["y"])], [("x", x * 3, None)], [("y", F)], [("hi", np.array(6.0, np.float32))])
    case("clip_opset9_attrs", [node("Clip", ["x"], ["y"], min=0.0, max=6.0)], [("x", x * 8, None)], [("y", F)], opset=9)
    case("gelu_opset20", [node("Gelu", ["x"], ["y"])], [("x", x * 3, None)], [("y", F)], opset=20)
    case("softmax_opset13_last", [node("Softmax", ["x"], ["y"])], [("x", x * 3, None)], [("y", F)])
    case("softmax_opset13_axis1", [node("Softmax", ["x"], ["y"], axis=1)], [("x", x * 3, None)], [("y", F)])
    case("softmax_opset11_coerced_axis1", [node("Softmax", ["x"], ["y"], axis=1)], [("x", x * 3, None)], [("y", F)], opset=11)
    case("logsoftmax", [node("LogSoftmax", ["x"], ["y"], axis=-1)], [("x", x * 3, None)], [("y", F)])
    for op in ["Add", "Sub", "Mul", "Div"]:
        case(f"{op.lower()}_broadcast", [node(op, ["a", "b"], ["y"])], [("a", rand(2, 3, 4), None), ("b", rand(3, 1, lo=0.5, hi=2.0), None)], [("y", F)])
        case(f"{op.lower()}_const_scalar", [node(op, ["a", "c"], ["y"])], [("a", rand(2, 3), None)], [("y", F)], [("c", np.array(1.75, np.float32))])
        case(f"{op.lower()}_scalar_first", [node(op, ["c", "a"], ["y"])], [("a", rand(2, 3, lo=0.5, hi=2.0), None)], [("y", F)], [("c", np.array(3.0, np.float32))])
    case("pow_broadcast", [node("Pow", ["a", "b"], ["y"])], [("a", rand(2, 3, lo=0.5, hi=2.0), None), ("b", rand(3, lo=-2, hi=2), None)], [("y", F)])
    case("pow_const_2", [node("Pow", ["a", "c"], ["y"])], [("a", rand(2, 3), None)], [("y", F)], [("c", np.array(2.0, np.float32))])
    case("pow_const_half", [node("Pow", ["a", "c"], ["y"])], [("a", rand(2, 3, lo=0.1, hi=3), None)], [("y", F)], [("c", np.array(0.5, np.float32))])
    case("sum_variadic", [node("Sum", ["a", "b", "c"], ["y"])], [("a", rand(2, 3), None), ("b", rand(3), None), ("c", rand(2, 1), None)], [("y", F)])
    case("max_min_mean", [node("Max", ["a", "b"], ["t"]), helper.make_node("Min", ["t", "c"], ["u"], name="min"), helper.make_node("Mean", ["u", "a"], ["y"], name="mean")],
         [("a", rand(2, 3), None), ("b", rand(2, 3), None), ("c", rand(3), None)], [("y", F)])
    case("where_greater", [node("Greater", ["a", "b"], ["c"]), helper.make_node("Where", ["c", "a", "b"], ["y"], name="where")],
         [("a", rand(2, 3), None), ("b", rand(2, 3), None)], [("y", F)])


def select_cases():
    """Trigonometric unaries, selection, indexing, normalisations and Einsum."""
    x = rand(2, 3, 4)
    for op in ["Tan", "Atan", "Sinh", "Cosh", "Asinh"]:
        case(f"unary_{op.lower()}", [node(op, ["x"], ["y"])], [("x", x * 3, None)], [("y", F)])
    # small arguments (sinh's series branch), both ends of [-1, 1], large atan arguments
    edge = np.array([-1.0, -0.999, -0.5, -1e-3, 0.0, 2e-4, 0.05, 0.7, 0.9999, 1.0], np.float32)
    for op in ["Asin", "Acos", "Sinh", "Atanh"]:
        e = edge if op != "Atanh" else edge[1:-1]
        case(f"unary_{op.lower()}_edges", [node(op, ["x"], ["y"])], [("x", e, None)], [("y", F)], atol=1e-6)
    case("unary_atan_wide", [node("Atan", ["x"], ["y"])], [("x", np.array([-1e6, -30, -1.0001, 0.4142, 1.0, 2.5, 1e3], np.float32), None)], [("y", F)])
    case("unary_acosh", [node("Acosh", ["x"], ["y"])], [("x", rand(2, 5, lo=1.0, hi=20.0), None)], [("y", F)])
    case("thresholded_relu", [node("ThresholdedRelu", ["x"], ["y"], alpha=0.3)], [("x", x, None)], [("y", F)], opset=10)
    case("shrink", [node("Shrink", ["x"], ["y"], lambd=0.4, bias=0.1)], [("x", x, None)], [("y", F)], opset=9)
    b = lambda *sh: (rand(*sh) > 0)
    case("xor", [node("Xor", ["a", "b"], ["y"])], [("a", b(2, 3), None), ("b", b(3), None)], [("y", TensorProto.BOOL)], tol=0.0)
    xi = np.array([1.0, -np.inf, np.inf, np.nan, 0.0, -2.0], np.float32)
    case("isinf_positive_only", [node("IsInf", ["x"], ["y"], detect_negative=0)], [("x", xi, None)], [("y", TensorProto.BOOL)], tol=0.0)
    # ties: the first index for ArgMax, the last with select_last_index
    t = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [5, 1, 5, 4]], np.float32)
    for last in [0, 1]:
        case(f"argmax_select_last_{last}", [node("ArgMax", ["x"], ["y"], axis=1, keepdims=0, select_last_index=last)], [("x", t, None)], [("y", TensorProto.INT64)], tol=0.0)
        case(f"argmin_select_last_{last}", [node("ArgMin", ["x"], ["y"], axis=0, select_last_index=last)], [("x", t, None)], [("y", TensorProto.INT64)], tol=0.0)
    case("hardmax_axis1", [node("Hardmax", ["x"], ["y"], axis=1)], [("x", np.concatenate([t, t[:1]]).reshape(2, 2, 4), None)], [("y", F)], tol=0.0)
    k = lambda v: [("k", np.array([v], np.int64))]
    case("topk_last_axis", [node("TopK", ["x", "k"], ["v", "i"])], [("x", rand(3, 7), None)], [("v", F), ("i", TensorProto.INT64)], k(3))
    case("topk_axis1_smallest", [node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)], [("x", rand(2, 6, 3), None)], [("v", F), ("i", TensorProto.INT64)], k(2))
    case("topk_ties", [node("TopK", ["x", "k"], ["v", "i"])], [("x", t, None)], [("v", F), ("i", TensorProto.INT64)], k(3))
    ax = lambda v: [("a", np.array(v, np.int64))]
    y5 = rand(3, 5)
    case("cumsum_axis1", [node("CumSum", ["x", "a"], ["y"])], [("x", y5, None)], [("y", F)], ax(1))
    case("cumsum_axis0_exclusive_reverse", [node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=1)], [("x", rand(7, 2), None)], [("y", F)], ax(0))
    case("cumsum_reverse_neg_axis", [node("CumSum", ["x", "a"], ["y"], reverse=1)], [("x", rand(2, 2, 9), None)], [("y", F)], ax(-1))
    case("cumsum_int64_exclusive", [node("CumSum", ["x", "a"], ["y"], exclusive=1)], [("x", np.arange(1, 13, dtype=np.int64).reshape(2, 6), None)], [("y", TensorProto.INT64)], ax(1), tol=0.0)
    case("onehot_axis0_negative", [node("OneHot", ["i", "d", "v"], ["y"], axis=0)], [("i", np.array([[0, -1], [3, 7]], np.int64), None)], [("y", F)],
         [("d", np.array(5, np.int64)), ("v", np.array([-2.0, 3.5], np.float32))], tol=0.0)
    case("onehot_last_axis", [node("OneHot", ["i", "d", "v"], ["y"])], [("i", np.array([2, 0, 1], np.int64), None)], [("y", TensorProto.INT64)],
         [("d", np.array([3], np.int64)), ("v", np.array([0, 1], np.int64))], tol=0.0)
    data = rand(3, 4)
    gi = np.array([[2, 0, 1, -1], [0, 0, 2, 1]], np.int64)
    case("gather_elements_axis0", [node("GatherElements", ["x", "i"], ["y"], axis=0)], [("x", data, None), ("i", gi, None)], [("y", F)], tol=0.0)
    case("gather_elements_axis1_corner", [node("GatherElements", ["x", "i"], ["y"], axis=1)], [("x", data, None)], [("y", F)], [("i", np.array([[3, 0], [-2, 2]], np.int64))], tol=0.0)
    si = np.array([[1, 0, -1], [0, 2, 0]], np.int64)  # no position written twice ("none" leaves that undefined)
    for red in ["none", "add"]:
        case(f"scatter_elements_{red}", [node("ScatterElements", ["x", "i", "u"], ["y"], axis=0, reduction=red)], [("x", rand(3, 4), None), ("u", rand(2, 3), None)], [("y", F)],
             [("i", si)], opset=18)
    case("scatter_elements_add_duplicates_axis1", [node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="add")], [("x", rand(2, 3), None), ("u", rand(2, 4), None)],
         [("y", F)], [("i", np.array([[0, 0, 2, 0], [1, 1, 1, 1]], np.int64))], opset=18)
    d4 = rand(2, 3, 4, 5)
    case("gathernd_slices_negative", [node("GatherND", ["x", "i"], ["y"])], [("x", d4, None)], [("y", F)], [("i", np.array([[[1, -1]], [[0, 0]], [[-2, 2]]], np.int64))], tol=0.0)
    case("gathernd_batch_dims1", [node("GatherND", ["x", "i"], ["y"], batch_dims=1)], [("x", d4, None), ("i", np.array([[[2, 3], [0, 1]], [[1, 0], [2, -1]]], np.int64), None)],
         [("y", F)], tol=0.0)
    case("scatternd_rows", [node("ScatterND", ["x", "i", "u"], ["y"])], [("x", d4, None), ("u", rand(2, 4, 5), None)], [("y", F)], [("i", np.array([[1, 2], [0, -3]], np.int64))],
         tol=0.0)
    case("scatternd_add_duplicates", [node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")], [("x", rand(4, 3), None), ("u", rand(3, 3), None)], [("y", F)],
         [("i", np.array([[1], [3], [1]], np.int64))], opset=16)
    case("compress_axis1_device_condition", [node("Compress", ["x", "c"], ["y"], axis=1)], [("x", d4, None), ("c", np.array([True, False, True]), None)], [("y", F)], tol=0.0,
         tags=["reads_back"])
    case("compress_flat_short_condition", [node("Compress", ["x", "c"], ["y"])], [("x", rand(3, 4), None)], [("y", F)], [("c", np.array([0, 1, 1, 0, 1], bool))], tol=0.0)
    case("reverse_sequence_batch_first", [node("ReverseSequence", ["x", "l"], ["y"], batch_axis=0, time_axis=1)], [("x", rand(3, 5, 2), None)], [("y", F)],
         [("l", np.array([5, 2, 1], np.int64))], tol=0.0, opset=10)
    case("reverse_sequence_time_first", [node("ReverseSequence", ["x", "l"], ["y"])], [("x", rand(4, 3), None), ("l", np.array([3, 4, 1], np.int64), None)], [("y", F)], tol=0.0,
         opset=10)
    case("eyelike_k1", [node("EyeLike", ["x"], ["y"], k=1)], [("x", rand(3, 5), None)], [("y", F)], tol=0.0, opset=9)
    case("lppool_p3_pads_stride", [node("LpPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], p=3)], [("x", rand(1, 2, 6, 5), None)], [("y", F)], opset=18)
    case("lppool1d_p2", [node("LpPool", ["x"], ["y"], kernel_shape=[3])], [("x", rand(2, 3, 9), None)], [("y", F)], opset=11)
    lab = np.array([[2, 0, 4], [1, -1, 3]], np.int64)
    case("softmax_cross_entropy_weights_ignore_log_prob", [node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["y", "lp"], ignore_index=-1)],
         [("x", rand(2, 5, 3) * 3, None), ("t", lab, None)], [("y", F), ("lp", F)], [("w", rand(5, lo=0.2, hi=1.0))], opset=13)
    case("nll_loss_sum_none", [node("NegativeLogLikelihoodLoss", ["x", "t"], ["s"], reduction="sum"), helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"],
         name="nll2", reduction="none")], [("x", rand(3, 4), None), ("t", np.array([3, 0, 1], np.int64), None)], [("s", F), ("y", F)], opset=13)
    for up in [0, 1]:
        case(f"trilu_upper{up}", [node("Trilu", ["x", "k"], ["y"], upper=up)], [("x", rand(2, 4, 5), None)], [("y", F)], [("k", np.array(-1 if up else 1, np.int64))], opset=14)
    case("trilu_default_k", [node("Trilu", ["x"], ["y"])], [("x", rand(5, 3), None)], [("y", F)], opset=14)
    case("layernorm_mean_invstd_outputs", [node("LayerNormalization", ["x", "s", "b"], ["y", "m", "r"], axis=1)], [("x", rand(2, 3, 4), None)],
         [("y", F), ("m", F), ("r", F)], [("s", rand(3, 4)), ("b", rand(3, 4))], opset=17)
    case("group_normalization", [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, epsilon=1e-3)], [("x", rand(2, 6, 3, 3), None)], [("y", F)],
         [("s", rand(6)), ("b", rand(6))], opset=21)
    case("mean_variance_normalization", [node("MeanVarianceNormalization", ["x"], ["y"])], [("x", rand(2, 3, 4, 4) * 4, None)], [("y", F)])
    for p_ in [1, 2]:
        case(f"lp_normalization_p{p_}", [node("LpNormalization", ["x"], ["y"], axis=1, p=p_)], [("x", rand(3, 4, 2), None)], [("y", F)])
    # boxes [B, N, 4] as (y1, x1, y2, x2); scores [B, C, N]
    bx = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1], [0, 100, 1, 101]]], np.float32)
    sc = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.1, 0.2, 0.85, 0.3, 0.4, 0.05]]], np.float32)
    nms_args = [("m", np.array([3], np.int64)), ("iou", np.array([0.5], np.float32)), ("st", np.array([0.15], np.float32))]
    case("nms_two_classes", [node("NonMaxSuppression", ["b", "s", "m", "iou", "st"], ["y"])], [("b", bx, None), ("s", sc, None)], [("y", TensorProto.INT64)], nms_args, tol=0.0, tags=["reads_back"])
    cb = np.array([[[0.5, 0.5, 1, 1], [0.55, 0.5, 1, 1], [5, 5, 2, 2]], [[0, 0, 1, 1], [3, 3, 1, 1], [0.1, 0, 1, 1]]], np.float32)
    case("nms_center_point_two_batches", [node("NonMaxSuppression", ["b", "s", "m", "iou"], ["y"], center_point_box=1)], [("b", cb, None), ("s", rand(2, 1, 3, lo=0, hi=1), None)],
         [("y", TensorProto.INT64)], nms_args[:2], tol=0.0, tags=["reads_back"])
    case("nms_nothing_selected", [node("NonMaxSuppression", ["b", "s", "m", "iou", "st"], ["y"])], [("b", bx, None), ("s", sc, None)], [("y", TensorProto.INT64)],
         nms_args[:2] + [("st", np.array([0.99], np.float32))], tol=0.0, tags=["reads_back"])
    case("nonzero", [node("NonZero", ["x"], ["y"])], [("x", np.array([[0, 1.5, 0], [2, 0, -1]], np.float32), None)], [("y", TensorProto.INT64)], tol=0.0, tags=["reads_back"])
    ein = [
        ("einsum_attention_scores", "bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
        ("einsum_ellipsis_matmul", "...ij,...jk->...ik", [(2, 2, 3, 4), (2, 2, 4, 5)]),
        ("einsum_implicit_output", "ij,jk", [(3, 4), (4, 2)]),
        ("einsum_transpose", "ijk->kji", [(2, 3, 4)]),
        ("einsum_sum_all", "ij->", [(3, 4)]),
        ("einsum_inner_product", "i,i", [(5,), (5,)]),
        ("einsum_outer_product", "i,j->ij", [(3,), (4,)]),
        ("einsum_three_operands", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
        ("einsum_broadcast_batch", "bij,bjk->bik", [(1, 2, 3), (4, 3, 2)]),
        ("einsum_sum_unshared", "ijk,jl->il", [(2, 3, 4), (3, 5)]),
    ]
    for name, eqn, shapes in ein:
        names = [f"x{i}" for i in range(len(shapes))]
        case(name, [node("Einsum", names, ["y"], equation=eqn)], [(n, rand(*sh), None) for n, sh in zip(names, shapes)], [("y", F)], opset=12)


def rnn_cases():
    """LSTM, GRU and RNN: directions, sequence lengths, initial states, biases, peepholes,
    clip, linear_before_reset, batch-first layout and non-default activations."""
    seq, batch, inp, hid = 5, 3, 4, 6
    x = rand(seq, batch, inp)
    lens = np.array([5, 3, 1], np.int32)

    def weights(gates, dirs):
        return [("w", rand(dirs, gates * hid, inp)), ("r", rand(dirs, gates * hid, hid)), ("b", rand(dirs, 2 * gates * hid) * 0.5)]

    st = lambda dirs: rand(dirs, batch, hid)
    case("lstm_bidirectional_seq_lens_initial_states", [node("LSTM", ["x", "w", "r", "b", "sl", "h0", "c0"], ["y", "yh", "yc"], hidden_size=hid, direction="bidirectional")],
         [("x", x, None), ("sl", lens, None)], [("y", F), ("yh", F), ("yc", F)], weights(4, 2) + [("h0", st(2)), ("c0", st(2))])
    case("lstm_peepholes_clip_reverse", [node("LSTM", ["x", "w", "r", "b", "", "", "", "p"], ["y", "yh"], hidden_size=hid, direction="reverse", clip=0.7)],
         [("x", x * 3, None)], [("y", F), ("yh", F)], weights(4, 1) + [("p", rand(1, 3 * hid))])
    # (layout = 1, batch first, is checked by onnx's own node tests: onnxruntime refuses it)
    case("lstm_hardsigmoid_activations", [node("LSTM", ["x", "w", "r"], ["y"], hidden_size=hid, activations=["HardSigmoid", "Tanh", "Tanh"], activation_alpha=[0.3],
                                               activation_beta=[0.4])], [("x", x, None)], [("y", F)], weights(4, 1)[:2])
    for lbr in [0, 1]:
        case(f"gru_bidirectional_lbr{lbr}", [node("GRU", ["x", "w", "r", "b", "", "h0"], ["y", "yh"], hidden_size=hid, direction="bidirectional", linear_before_reset=lbr)],
             [("x", x, None)], [("y", F), ("yh", F)], weights(3, 2) + [("h0", st(2))])
    case("gru_seq_lens_only_last_state", [node("GRU", ["x", "w", "r", "b", "sl"], ["", "yh"], hidden_size=hid)], [("x", x, None), ("sl", lens, None)], [("yh", F)], weights(3, 1))
    case("rnn_relu_reverse_seq_lens", [node("RNN", ["x", "w", "r", "b", "sl"], ["y", "yh"], hidden_size=hid, direction="reverse", activations=["Relu"])],
         [("x", x, None), ("sl", lens, None)], [("y", F), ("yh", F)], weights(1, 1))


def movement_cases():
    x = rand(2, 3, 4, 5)
    case("reshape_zero_minus1", [node("Reshape", ["x", "s"], ["y"])], [("x", x, None)], [("y", F)], [("s", np.array([0, -1, 5], np.int64))])
    case("flatten_axis1", [node("Flatten", ["x"], ["y"])], [("x", x, None)], [("y", F)])
    case("flatten_axis0", [node("Flatten", ["x"], ["y"], axis=0)], [("x", x, None)], [("y", F)])
    case("flatten_axis_neg1", [node("Flatten", ["x"], ["y"], axis=-1)], [("x", x, None)], [("y", F)])
    case("transpose_perm", [node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], [("x", x, None)], [("y", F)])
    case("transpose_default", [node("Transpose", ["x"], ["y"])], [("x", x, None)], [("y", F)])
    case("concat_axis1_three", [node("Concat", ["a", "b", "c"], ["y"], axis=1)], [("a", rand(2, 1, 3), None), ("b", rand(2, 2, 3), None)], [("y", F)], [("c", rand(2, 4, 3))])
    case("concat_axis_neg1", [node("Concat", ["a", "b"], ["y"], axis=-1)], [("a", rand(2, 3), None), ("b", rand(2, 2), None)], [("y", F)])
    case("slice_basic", [node("Slice", ["x", "s", "e"], ["y"])], [("x", x, None)], [("y", F)], [("s", np.array([0, 1], np.int64)), ("e", np.array([1, 3], np.int64))])
    case("slice_axes_steps", [node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [("x", x, None)], [("y", F)],
         [("s", np.array([0, 1], np.int64)), ("e", np.array([5, 100], np.int64)), ("a", np.array([3, 2], np.int64)), ("st", np.array([2, 2], np.int64))])
    case("slice_negative_step", [node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [("x", x, None)], [("y", F)],
         [("s", np.array([-1], np.int64)), ("e", np.array([-1000], np.int64)), ("a", np.array([-1], np.int64)), ("st", np.array([-2], np.int64))])
    case("slice_negative_starts", [node("Slice", ["x", "s", "e", "a"], ["y"])], [("x", x, None)], [("y", F)],
         [("s", np.array([-3], np.int64)), ("e", np.array([-1], np.int64)), ("a", np.array([1], np.int64))])
    case("slice_opset9_attrs", [node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, 2], axes=[2, 3])], [("x", x, None)], [("y", F)], opset=9)
    case("squeeze_unsqueeze_opset13", [node("Unsqueeze", ["x", "a"], ["t"]), helper.make_node("Squeeze", ["t", "b"], ["y"], name="sq")], [("x", rand(3, 4), None)], [("y", F)],
         [("a", np.array([0, 3], np.int64)), ("b", np.array([0], np.int64))])
    case("squeeze_unsqueeze_opset11", [node("Unsqueeze", ["x"], ["t"], axes=[1]), helper.make_node("Squeeze", ["t"], ["y"], name="sq", axes=[1])], [("x", rand(3, 4), None)],
         [("y", F)], opset=11)
    case("squeeze_all", [node("Squeeze", ["x"], ["y"])], [("x", rand(1, 3, 1, 4), None)], [("y", F)])
    case("pad_constant_value", [node("Pad", ["x", "p", "v"], ["y"])], [("x", x, None)], [("y", F)], [("p", np.array([0, 0, 1, 2, 0, 1, 2, 0], np.int64)), ("v", np.array(1.5, np.float32))])
    case("pad_reflect", [node("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", x, None)], [("y", F)], [("p", np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64))])
    case("pad_edge", [node("Pad", ["x", "p"], ["y"], mode="edge")], [("x", x, None)], [("y", F)], [("p", np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64))])
    case("pad_negative", [node("Pad", ["x", "p"], ["y"])], [("x", x, None)], [("y", F)], [("p", np.array([0, 0, -1, 2, 0, 0, 1, -2], np.int64))])
    case("pad_opset2_attrs", [node("Pad", ["x"], ["y"], pads=[0, 0, 1, 1, 0, 0, 1, 1], value=-2.0)], [("x", x, None)], [("y", F)], opset=10)
    case("gather_axis1_host_indices", [node("Gather", ["x", "i"], ["y"], axis=1)], [("x", x, None)], [("y", F)], [("i", np.array([[2, 0], [-1, 1]], np.int64))])
    case("gather_scalar_index", [node("Gather", ["x", "i"], ["y"], axis=3)], [("x", x, None)], [("y", F)], [("i", np.array(3, np.int64))])
    case("gather_device_indices", [node("Gather", ["x", "i"], ["y"], axis=0)], [("x", rand(6, 3), None), ("i", np.array([5, 0, -2], np.int64), None)], [("y", F)])
    case("expand", [node("Expand", ["x", "s"], ["y"])], [("x", rand(3, 1), None)], [("y", F)], [("s", np.array([2, 3, 4], np.int64))])
    case("tile", [node("Tile", ["x", "r"], ["y"])], [("x", rand(2, 3), None)], [("y", F)], [("r", np.array([2, 3], np.int64))])
    case("split_opset13", [node("Split", ["x", "s"], ["y0", "y1"], axis=1)], [("x", rand(2, 5), None)], [("y0", F), ("y1", F)],
         [("s", np.array([2, 3], np.int64))])
    case("depth_to_space_dcr", [node("DepthToSpace", ["x"], ["y"], blocksize=2)], [("x", rand(1, 8, 2, 3), None)], [("y", F)])
    case("depth_to_space_crd", [node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], [("x", rand(1, 8, 2, 3), None)], [("y", F)])
    case("space_to_depth", [node("SpaceToDepth", ["x"], ["y"], blocksize=2)], [("x", rand(1, 2, 4, 6), None)], [("y", F)])
    case("identity_dropout_constant", [node("Identity", ["x"], ["t"]), helper.make_node("Dropout", ["t"], ["u"], name="drop"),
                                       helper.make_node("Constant", [], ["c"], name="const", value=numpy_helper.from_array(rand(5), "cv")),
                                       helper.make_node("Add", ["u", "c"], ["y"], name="add")], [("x", x, None)], [("y", F)])
    # Argument tensors that are graph inputs (integers given at run time), not initializers:
    # they stay on the host like constants, so these run (onnx's own node tests feed them so).
    i64 = lambda *v: np.array(v, np.int64)
    case("slice_args_as_inputs", [node("Slice", ["x", "s", "e", "a", "st"], ["y"])],
         [("x", x, None), ("s", i64(0, 1), None), ("e", i64(5, 100), None), ("a", i64(3, 2), None), ("st", i64(2, 2), None)], [("y", F)])
    case("reshape_shape_as_input", [node("Reshape", ["x", "s"], ["y"])], [("x", x, None), ("s", i64(6, -1), None)], [("y", F)])
    case("unsqueeze_squeeze_axes_as_inputs", [node("Unsqueeze", ["x", "a"], ["t"]), helper.make_node("Squeeze", ["t", "b"], ["y"], name="sq")],
         [("x", rand(3, 4), None), ("a", i64(0, 3), None), ("b", i64(0), None)], [("y", F)])
    case("pad_pads_as_input", [node("Pad", ["x", "p"], ["y"])], [("x", x, None), ("p", i64(0, 0, 1, 2, 0, 1, 2, 0), None)], [("y", F)])
    case("reducemean_axes_as_input", [node("ReduceMean", ["x", "a"], ["y"])], [("x", x, None), ("a", i64(1, 3), None)], [("y", F)], opset=18)
    # Shape arithmetic on a dynamic batch: Shape -> Gather -> Unsqueeze -> Concat -> Reshape
    nodes = [
        node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "zero"], ["n"], name="g", axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="u"),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], name="c", axis=0),
        helper.make_node("Cast", ["target"], ["target32"], name="cast", to=TensorProto.INT32),
        helper.make_node("Cast", ["target32"], ["target64"], name="cast2", to=TensorProto.INT64),
        helper.make_node("Reshape", ["x", "target64"], ["y"], name="r"),
    ]
    case("shape_arithmetic_dynamic_batch", nodes, [("x", rand(3, 2, 4, 4), ["batch", 2, 4, 4])], [("y", F)],
         [("zero", np.array(0, np.int64)), ("ax0", np.array([0], np.int64)), ("minus1", np.array([-1], np.int64))], tags=["dynamic"])


def resize_cases():
    x = rand(1, 2, 4, 5)
    empty = np.array([], np.float32)
    sc = lambda *s: np.array(s, np.float32)
    sz = lambda *s: np.array(s, np.int64)
    R = lambda **a: node("Resize", ["x", "roi", "scales"], ["y"], **a)
    RS = lambda **a: node("Resize", ["x", "roi", "", "sizes"], ["y"], **a)
    case("resize_nearest_asymmetric_floor_x2", [R(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")], [("x", x, None)], [("y", F)],
         [("roi", empty), ("scales", sc(1, 1, 2, 2))])
    case("resize_nearest_half_pixel_sizes", [RS(mode="nearest")], [("x", x, None)], [("y", F)], [("roi", empty), ("sizes", sz(1, 2, 7, 3))])
    case("resize_nearest_round_prefer_ceil", [R(mode="nearest", nearest_mode="round_prefer_ceil")],
         [("x", x, None)], [("y", F)], [("roi", empty), ("scales", sc(1, 1, 1.5, 2.5))], opset=11)
    case("resize_nearest_align_corners_ceil", [RS(mode="nearest", coordinate_transformation_mode="align_corners", nearest_mode="ceil")], [("x", x, None)], [("y", F)],
         [("roi", empty), ("sizes", sz(1, 2, 8, 9))])
    case("resize_linear_half_pixel_x2", [R(mode="linear")], [("x", x, None)], [("y", F)], [("roi", empty), ("scales", sc(1, 1, 2, 2))])
    case("resize_linear_align_corners_sizes", [RS(mode="linear", coordinate_transformation_mode="align_corners")], [("x", x, None)], [("y", F)],
         [("roi", empty), ("sizes", sz(1, 2, 7, 11))])
    case("resize_linear_pytorch_half_pixel_down", [R(mode="linear", coordinate_transformation_mode="pytorch_half_pixel")], [("x", rand(1, 2, 8, 6), None)], [("y", F)],
         [("roi", empty), ("scales", sc(1, 1, 0.5, 0.5))])
    case("resize_linear_asymmetric", [R(mode="linear", coordinate_transformation_mode="asymmetric")], [("x", x, None)], [("y", F)], [("roi", empty), ("scales", sc(1, 1, 3, 1.5))])
    case("resize_cubic_half_pixel_x2", [R(mode="cubic")], [("x", x, None)], [("y", F)], [("roi", empty), ("scales", sc(1, 1, 2, 2))])
    case("resize_cubic_pytorch_a_exclude_outside_down", [R(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1)], [("x", rand(1, 2, 9, 7), None)], [("y", F)],
         [("roi", empty), ("scales", sc(1, 1, 0.6, 0.75))])
    case("resize_cubic_align_corners_sizes", [RS(mode="cubic", coordinate_transformation_mode="align_corners")], [("x", x, None)], [("y", F)],
         [("roi", empty), ("sizes", sz(1, 2, 3, 8))])
    case("resize_cubic_asymmetric", [R(mode="cubic", coordinate_transformation_mode="asymmetric")], [("x", x, None)], [("y", F)], [("roi", empty), ("scales", sc(1, 1, 1.5, 2.5))])
    grid = rand(2, 3, 4, 2, lo=-1.3, hi=1.3)
    case("gridsample_bilinear_zeros", [node("GridSample", ["x", "g"], ["y"])], [("x", rand(2, 3, 5, 6), None), ("g", grid, None)], [("y", F)], opset=16)
    case("gridsample_nearest_border_align_corners", [node("GridSample", ["x", "g"], ["y"], mode="nearest", padding_mode="border", align_corners=1)],
         [("x", rand(2, 3, 5, 6), None), ("g", grid, None)], [("y", F)], opset=16)
    case("gridsample_bilinear_border_opset20", [node("GridSample", ["x", "g"], ["y"], mode="linear", padding_mode="border")], [("x", rand(2, 3, 5, 6), None), ("g", grid, None)],
         [("y", F)], opset=20)
    case("resize_sizes_as_input", [RS(mode="nearest")], [("x", x, None), ("sizes", sz(1, 2, 7, 3), None)], [("y", F)], [("roi", empty)])
    case("resize_opset10", [node("Resize", ["x", "scales"], ["y"], mode="nearest")], [("x", x, None)], [("y", F)], [("scales", sc(1, 1, 2, 3))], opset=10)
    case("upsample_opset9", [node("Upsample", ["x", "scales"], ["y"], mode="nearest")], [("x", x, None)], [("y", F)], [("scales", sc(1, 1, 2, 2))], opset=9)


def write_light_models():
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for fn in sorted(os.listdir(light)):
        if not fn.endswith(".onnx"):
            continue
        name = fn[len("light_"):-len(".onnx")]
        m = onnx.load(os.path.join(light, fn))
        init = {t.name for t in m.graph.initializer}
        inp = [i for i in m.graph.input if i.name not in init][0]
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        x = rand(*shape)
        b = m.SerializeToString()
        out = run_ort(b, {inp.name: x})
        d = os.path.join(OUT, "models", name)
        os.makedirs(d, exist_ok=True)
        save_case("models", name, b, {inp.name: x}, out, tol=1e-4, tags=["light"])


def text_images():
    """Rendered text lines (DejaVu Sans), upright and rotated 180 degrees, as uint8 RGB."""
    from PIL import Image, ImageDraw, ImageFont
    font_path = os.path.join(os.path.dirname(__file__), "..", "crates", "pixelgrad-cli", "assets", "DejaVuSans.ttf")
    lines = ["pixelgrad runs ONNX", "Hello, world 2024", "The quick brown fox", "training as rendering"]
    imgs = []
    for k, text in enumerate(lines):
        font = ImageFont.truetype(font_path, 28 + 2 * k)
        w = int(font.getlength(text)) + 16
        im = Image.new("RGB", (w, 48), (255, 255, 255))
        ImageDraw.Draw(im).text((8, 6), text, font=font, fill=(20, 20, 20))
        imgs.append(np.asarray(im))
    return imgs


def cls_preprocess(img):
    """PaddleOCR's text-direction classifier input: height 48, width <= 192 keeping the aspect
    ratio, (x / 255 - 0.5) / 0.5, padded right with zeros to 192."""
    from PIL import Image
    h, w = img.shape[:2]
    nw = min(192, int(np.ceil(48 * w / h)))
    im = np.asarray(Image.fromarray(img).resize((nw, 48), Image.BILINEAR)).astype(np.float32)
    im = (im / 255.0 - 0.5) / 0.5
    out = np.zeros((3, 48, 192), np.float32)
    out[:, :, :nw] = im.transpose(2, 0, 1)
    return out


def write_ppocr():
    if not PPOCR or not os.path.isdir(PPOCR):
        print("PP-OCR models not found; skipping", file=sys.stderr)
        return
    imgs = text_images()
    cls = open(os.path.join(PPOCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), "rb").read()
    batch, labels = [], []
    for im in imgs:
        batch.append(cls_preprocess(im))
        labels.append(0)
        batch.append(cls_preprocess(np.ascontiguousarray(im[::-1, ::-1])))
        labels.append(1)
    x = np.stack(batch)
    out = run_ort(cls, {"x": x})
    save_case("models", "ppocr_cls", cls, {"x": x}, out, tol=1e-4, tags=["pretrained"])
    np.save(os.path.join(OUT, "models", "ppocr_cls", "labels.npy"), np.array(labels, np.int64))
    # Text detector (DBNet, MobileNetV3 backbone): one 96x320 image, ImageNet normalisation.
    from PIL import Image
    canvas = np.full((96, 320, 3), 255, np.uint8)
    line = imgs[0][:, : min(300, imgs[0].shape[1])]
    canvas[24 : 24 + line.shape[0], 10 : 10 + line.shape[1]] = line
    xd = canvas.astype(np.float32) / 255.0
    xd = (xd - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    xd = xd.transpose(2, 0, 1)[None].astype(np.float32)
    det = open(os.path.join(PPOCR, "ch_PP-OCRv4_det_infer.onnx"), "rb").read()
    out = run_ort(det, {"x": xd})
    save_case("models", "ppocr_det", det, {"x": xd}, out, tol=1e-4, tags=["pretrained"])
    mask = np.zeros((96, 320), np.uint8)
    mask[24 : 24 + line.shape[0], 10 : 10 + line.shape[1]] = 1
    np.save(os.path.join(OUT, "models", "ppocr_det", "text_mask.npy"), mask)
    # The classifier's backbone, for the fine-tuning test: its feature map before the head.
    shutil.copy(os.path.join(PPOCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), os.path.join(OUT, "models", "ppocr_cls_backbone.onnx"))


U8, I8, I32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32


def q8(shape, dtype):
    lo, hi = (0, 256) if dtype == np.uint8 else (-128, 128)
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def quant_cases():
    """Quantisation operators (default domain and com.microsoft's QLinear* ops). Integer outputs
    are compared exactly (atol 0) or within one step (atol 1) where onnxruntime requantises a
    float product whose rounding can land on the other side of a half."""
    s, zu, zi = np.array(0.05, np.float32), np.array(128, np.uint8), np.array(3, np.int8)
    # ties (x / scale = k + 0.5), saturation at both ends, negative values
    x = np.concatenate([np.arange(-2.0, 2.0, 0.025, dtype=np.float32)[:150], [1e3, -1e3, 0.075, 0.125, -0.075, -0.125]]).astype(np.float32).reshape(2, 3, 26)
    tag = ["int8"]
    case("quantizelinear_u8", [node("QuantizeLinear", ["x", "s", "z"], ["y"])], [("x", x, None)], [("y", U8)], [("s", s), ("z", zu)], tol=0.0, tags=tag, atol=0.0)
    case("quantizelinear_i8", [node("QuantizeLinear", ["x", "s", "z"], ["y"])], [("x", x, None)], [("y", I8)], [("s", s), ("z", zi)], tol=0.0, tags=tag, atol=0.0)
    case("quantizelinear_no_zero_point", [node("QuantizeLinear", ["x", "s"], ["y"])], [("x", x, None)], [("y", U8)], [("s", s)], tol=0.0, tags=tag, atol=0.0)
    cs = np.array([0.02, 0.05, 0.1], np.float32)
    case("quantizelinear_per_axis_i8", [node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)], [("x", x, None)], [("y", I8)],
         [("s", cs), ("z", np.array([0, -5, 7], np.int8))], tol=0.0, tags=tag, atol=0.0)
    case("dequantizelinear_u8", [node("DequantizeLinear", ["q", "s", "z"], ["y"])], [("q", q8((2, 3, 5), np.uint8), None)], [("y", F)], [("s", s), ("z", zu)], tags=tag)
    case("dequantizelinear_per_axis_i8", [node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)], [("q", q8((2, 3, 5), np.int8), None)], [("y", F)],
         [("s", cs), ("z", np.array([0, -5, 7], np.int8))], tags=tag)
    case("dequantizelinear_i32_bias", [node("DequantizeLinear", ["q", "s"], ["y"])], [("q", RNG.integers(-50000, 50000, size=(6,)).astype(np.int32), None)], [("y", F)],
         [("s", np.array(1e-4, np.float32))], tags=tag)
    case("dynamicquantizelinear", [node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"])], [("x", rand(2, 3, 4) * 3, None)], [("y", U8), ("ys", F), ("yz", U8)], tol=1e-6, tags=tag, atol=1.0)
    # QLinearConv: u8 activations, i8 weights, per-tensor and per-channel, bias, groups, strides
    xq = q8((1, 4, 7, 7), np.uint8)
    xs, xz, ys, yz = np.array(0.02, np.float32), np.array(120, np.uint8), np.array(0.05, np.float32), np.array(100, np.uint8)
    w = q8((6, 4, 3, 3), np.int8)
    ws, wz = np.array(0.01, np.float32), np.array(0, np.int8)
    b = RNG.integers(-2000, 2000, size=(6,)).astype(np.int32)
    qins = lambda ws_, wz_: [("xs", xs), ("xz", xz), ("w", w), ("ws", ws_), ("wz", wz_), ("ys", ys), ("yz", yz)]
    case("qlinearconv_per_tensor_bias", [node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1, 1, 1, 1])], [("x", xq, None)], [("y", U8)],
         qins(ws, wz) + [("b", b)], tol=1.0, tags=tag, atol=1.0)
    case("qlinearconv_per_channel_stride2", [node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], strides=[2, 2], pads=[0, 1, 1, 0])], [("x", xq, None)], [("y", U8)],
         qins(RNG.uniform(0.005, 0.02, 6).astype(np.float32), np.zeros(6, np.int8)), tol=1.0, tags=tag, atol=1.0)
    case("qlinearconv_depthwise_i8", [node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], group=4, pads=[1, 1, 1, 1])], [("x", q8((2, 4, 6, 6), np.int8), None)],
         [("y", I8)], [("xs", xs), ("xz", np.array(-7, np.int8)), ("w", q8((4, 1, 3, 3), np.int8)), ("ws", ws), ("wz", wz), ("ys", ys), ("yz", np.array(-10, np.int8))], tol=1.0, tags=tag, atol=1.0)
    case("qlinearmatmul_u8_i8", [node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])], [("a", q8((2, 5, 16), np.uint8), None)], [("y", U8)],
         [("as", xs), ("az", xz), ("b", q8((16, 7), np.int8)), ("bs", ws), ("bz", wz), ("ys", ys), ("yz", yz)], tol=1.0, tags=tag, atol=1.0)
    case("matmulinteger_u8_i8_zero_points", [node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])], [("a", q8((3, 20), np.uint8), None)], [("y", I32)],
         [("b", q8((20, 4), np.int8)), ("az", np.array(12, np.uint8)), ("bz", np.array(-3, np.int8))], tol=0.0, tags=tag, atol=0.0)
    case("convinteger_u8_u8", [node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1])], [("x", xq, None)], [("y", I32)],
         [("w", q8((3, 4, 3, 3), np.uint8)), ("xz", xz), ("wz", np.array(128, np.uint8))], tol=0.0, tags=tag, atol=0.0)
    msq = lambda op, extra=(): [("as", xs), ("az", xz), ("b", q8((1, 4, 1, 1), np.uint8)), ("bs", np.array(0.03, np.float32)), ("bz", np.array(90, np.uint8)), ("cs", ys), ("cz", yz)]
    for op in ["QLinearAdd", "QLinearMul"]:
        n = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], name=op.lower(), domain="com.microsoft")
        case(f"{op.lower()}_broadcast", [n], [("a", xq, None)], [("y", U8)], msq(op), tol=1.0, tags=tag, atol=1.0, ms=True)
    n = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], name="qgap", domain="com.microsoft", channels_last=0)
    case("qlinearglobalaveragepool", [n], [("x", xq, None)], [("y", U8)], [("xs", xs), ("xz", xz), ("ys", np.array(0.01, np.float32)), ("yz", np.array(5, np.uint8))],
         tol=1.0, tags=tag, atol=1.0, ms=True)
    n = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], name="qsoftmax", domain="com.microsoft", axis=-1, opset=13)
    case("qlinearsoftmax", [n], [("x", q8((2, 3, 10), np.uint8), None)], [("y", U8)], [("xs", np.array(0.1, np.float32)), ("xz", xz), ("ys", np.array(1 / 256, np.float32)),
         ("yz", np.array(0, np.uint8))], tol=1.0, tags=tag, atol=1.0, ms=True)
    # int8 as the quantiser writes it (output scale 1/256, zero point -128): onnxruntime's kernel
    # casts its int32 result to int8 without saturating, so a probability of at least 511/512
    # wraps to -128. Rows with a margin of 100 (p = 1) wrap; rows of small logits (xs 1, spread
    # under 3) do not. No row lies near the boundary, where float rounding could flip it.
    xi8 = np.array([[[100, 0, -5, 3, -128, 7, 1, 0, 2, -1], [-20, -20, 80, -20, -19, -30, -25, -21, -22, -20], [1, 0, 2, 1, 0, -1, 2, 1, 0, 1]],
                    [[0, 1, 2, 0, 1, 2, 0, 1, 2, 0], [-128, 127, -128, -128, -128, -128, -128, -128, -128, -128], [3, 3, 3, 3, 3, 3, 3, 3, 3, 3]]], np.int8)
    case("qlinearsoftmax_i8_wraps", [n], [("x", xi8, None)], [("y", I8)], [("xs", np.array(1.0, np.float32)), ("xz", np.array(-6, np.int8)),
         ("ys", np.array(1 / 256, np.float32)), ("yz", np.array(-128, np.int8))], tol=1.0, tags=tag, atol=1.0, ms=True)
    # uint8 with a y_scale whose inverse is not whole (onnxruntime multiplies by floor(1 / y_scale)).
    case("qlinearsoftmax_u8_scale", [n], [("x", q8((2, 3, 10), np.uint8), None)], [("y", U8)], [("xs", np.array(0.02, np.float32)), ("xz", xz),
         ("ys", np.array(0.0031, np.float32)), ("yz", np.array(3, np.uint8))], tol=1.0, tags=tag, atol=1.0, ms=True)
    qio = [("xs", xs), ("xz", xz), ("ys", np.array(0.015, np.float32)), ("yz", np.array(40, np.uint8))]
    n = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], name="qavgpool", domain="com.microsoft", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    case("qlinearaveragepool", [n], [("x", xq, None)], [("y", U8)], qio, tol=1.0, tags=tag, atol=1.0, ms=True)
    n = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], name="qavgpool", domain="com.microsoft", kernel_shape=[2, 2], channels_last=1)
    case("qlinearaveragepool_channels_last", [n], [("x", q8((1, 6, 5, 3), np.uint8), None)], [("y", U8)], qio, tol=1.0, tags=tag, atol=1.0, ms=True)
    n = helper.make_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], ["y"], name="qsigmoid", domain="com.microsoft")
    case("qlinearsigmoid", [n], [("x", q8((2, 3, 10), np.uint8), None)], [("y", U8)], [("xs", np.array(0.05, np.float32)), ("xz", xz), ("ys", np.array(1 / 256, np.float32)),
         ("yz", np.array(0, np.uint8))], tol=1.0, tags=tag, atol=1.0, ms=True)
    n = helper.make_node("QLinearLeakyRelu", ["x", "xs", "xz", "ys", "yz"], ["y"], name="qleaky", domain="com.microsoft", alpha=0.1)
    case("qlinearleakyrelu_i8", [n], [("x", q8((2, 3, 10), np.int8), None)], [("y", I8)], [("xs", np.array(0.05, np.float32)), ("xz", np.array(-3, np.int8)),
         ("ys", np.array(0.04, np.float32)), ("yz", np.array(-20, np.int8))], tol=1.0, tags=tag, atol=1.0, ms=True)
    # int32 biases beyond 2^24 (a channel whose weight scale is tiny): rounded to f32
    wsb = np.array([0.01, 1e-7, 0.02, 0.01, 1e-6, 0.015], np.float32)
    bb = (np.array([0.3, -0.7, 0.5, 0.1, 0.9, -0.2], np.float32) / (0.02 * wsb)).round().astype(np.int32)
    case("qlinearconv_large_int32_bias", [node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1, 1, 1, 1])], [("x", xq, None)], [("y", U8)],
         qins(wsb, np.zeros(6, np.int8)) + [("b", bb)], tol=1.0, tags=tag, atol=1.0)
    n = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz"], ["y"], name="qconcat", domain="com.microsoft", axis=1)
    case("qlinearconcat", [n], [("a", xq, None)], [("y", U8)], [("ys", ys), ("yz", yz), ("as", xs), ("az", xz), ("b", q8((1, 2, 7, 7), np.uint8)), ("bs", np.array(0.03, np.float32)),
         ("bz", np.array(90, np.uint8))], tol=1.0, tags=tag, atol=1.0, ms=True)


def qlinear_tie_cases():
    """QLinearAdd / QLinearMul where the scales make many exact sums land on x.5 (the hard-swish
    blocks onnxruntime's quantiser writes: B_scale / C_scale = 0.5 exactly). onnxruntime's
    kernels round their own f32 arithmetic (fused multiply-adds for QLinearAdd; the product
    times scale_a * scale_b / scale_c, plus the zero point, for QLinearMul), which puts some of
    those sums just below or above the tie; dequantising to float and requantising gets them
    wrong. Compared exactly. No random draws (appended last: the other cases keep theirs)."""
    tag = ["int8"]
    b = np.tile(np.arange(256, dtype=np.uint8), (3, 1))
    # a at its zero point (exact sum b / 2), one above it, and every value against every b
    a = np.stack([np.full(256, 109, np.uint8), np.full(256, 110, np.uint8), np.arange(256, dtype=np.uint8)[::-1]])
    hs = [("as", np.array(0.0743037536740303, np.float32)), ("az", np.array(109, np.uint8)), ("b", b), ("bs", np.array(3 / 255, np.float32)),
          ("bz", np.array(0, np.uint8)), ("cs", np.array(6 / 255, np.float32)), ("cz", np.array(0, np.uint8))]
    n = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], name="qlinearadd", domain="com.microsoft")
    case("qlinearadd_ties_u8", [n], [("a", a, None)], [("y", U8)], hs, tol=0.0, tags=tag, atol=0.0, ms=True)
    # A one value per row (broadcast along the last axis): onnxruntime swaps the operands there
    case("qlinearadd_ties_u8_row_broadcast", [n], [("a", np.array([[109], [110], [200]], np.uint8), None)], [("y", U8)], hs, tol=0.0, tags=tag, atol=0.0, ms=True)
    # int8, scale ratio 1/128 exactly: ties of (a - za)(b - zb) / 128 before the odd zero point
    ai = np.tile(np.arange(-128, 128, dtype=np.int8), (2, 1))
    bi = np.stack([np.arange(-128, 128, dtype=np.int8)[::-1], np.full(256, 61, np.int8)])
    n = helper.make_node("QLinearMul", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], name="qlinearmul", domain="com.microsoft")
    case("qlinearmul_ties_i8", [n], [("a", ai, None)], [("y", I8)], [("as", np.array(0.25, np.float32)), ("az", np.array(0, np.int8)), ("b", bi),
         ("bs", np.array(0.125, np.float32)), ("bz", np.array(-3, np.int8)), ("cs", np.array(4.0, np.float32)), ("cz", np.array(5, np.int8))], tol=0.0, tags=tag, atol=0.0, ms=True)


def he_weights(m, rng):
    """The light architectures' constant (ConstantOfShape) weights replaced by He-initialised
    random ones, so that quantisation sees real weight distributions; converted to opset 13
    (per-channel QDQ needs DequantizeLinear's axis)."""
    init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    keep = []
    for n in m.graph.node:
        if n.op_type == "ConstantOfShape" and n.input[0] in init:
            shape = [int(v) for v in init[n.input[0]]]
            fan = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            a = rng.uniform(-0.1, 0.1, shape) if len(shape) == 1 else rng.normal(0, np.sqrt(2.0 / fan), shape)
            m.graph.initializer.append(numpy_helper.from_array(a.astype(np.float32), n.output[0]))
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    names = {i.name for i in m.graph.input}
    for t in m.graph.initializer:
        if t.name not in names:
            m.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return onnx.version_converter.convert_version(m, 13)


def small_mlp_cnn():
    """A digits-sized MLP (Gemm + Relu) and a small CNN (Conv, Relu, MaxPool, Gemm), random
    weights, as pixelgrad's own training examples build them."""
    def gemm_layer(i, fin, fout, x, relu):
        w = numpy_helper.from_array((RNG.normal(0, np.sqrt(2 / fin), (fin, fout))).astype(np.float32), f"w{i}")
        b = numpy_helper.from_array(rand(fout, lo=-0.1, hi=0.1), f"b{i}")
        nodes = [helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [f"g{i}"], name=f"gemm{i}")]
        if relu:
            nodes.append(helper.make_node("Relu", [f"g{i}"], [f"h{i}"], name=f"relu{i}"))
        return nodes, [w, b], f"h{i}" if relu else f"g{i}"
    n1, i1, h = gemm_layer(1, 64, 32, "x", True)
    n2, i2, h = gemm_layer(2, 32, 10, h, False)
    mlp = helper.make_graph(n1 + n2, "mlp", [helper.make_tensor_value_info("x", F, [None, 64])], [helper.make_tensor_value_info(h, F, None)], i1 + i2)
    cw = lambda n, o, c: numpy_helper.from_array(RNG.normal(0, np.sqrt(2 / (c * 9)), (o, c, 3, 3)).astype(np.float32), n)
    nodes = [
        helper.make_node("Conv", ["x", "cw1", "cb1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "cw2", "cb2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc"),
    ]
    inits = [cw("cw1", 8, 1), numpy_helper.from_array(rand(8, lo=-0.1, hi=0.1), "cb1"), cw("cw2", 16, 8), numpy_helper.from_array(rand(16, lo=-0.1, hi=0.1), "cb2"),
             numpy_helper.from_array(RNG.normal(0, np.sqrt(2 / 784), (784, 10)).astype(np.float32), "fw"), numpy_helper.from_array(rand(10, lo=-0.1, hi=0.1), "fb")]
    cnn = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", F, [None, 1, 28, 28])], [helper.make_tensor_value_info("y", F, None)], inits)
    out = []
    for g, x in [(mlp, rand(8, 64, lo=0.0, hi=1.0)), (cnn, rand(4, 1, 28, 28, lo=0.0, hi=1.0))]:
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="pixelgrad-fixtures")
        m.ir_version = 8
        out.append((g.name, m, x))
    return out


def write_quantized_models(ppocr_dir):
    """Models quantised by onnxruntime's own tool (quantize_static, MinMax calibration on the
    model's input plus two noisy copies): QDQ per-tensor with u8 activations, QDQ per-channel
    with i8 activations, and QOperator per-channel (QLinearConv, QLinearMatMul, com.microsoft
    QLinearAdd/Concat/GlobalAveragePool/Softmax, QGemm). The tolerance is one quantisation
    step of the last DequantizeLinear before the output, absolute."""
    import logging
    import tempfile
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    logging.disable(logging.WARNING)

    class Reader(CalibrationDataReader):
        def __init__(self, name, xs):
            self.it = iter([{name: x} for x in xs])

        def get_next(self):
            return next(self.it, None)

    rng = np.random.default_rng(7)
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    models = [("squeezenet", he_weights(onnx.load(os.path.join(light, "light_squeezenet.onnx")), rng), rand(1, 3, 224, 224))]
    models += small_mlp_cnn()
    cls = os.path.join(ppocr_dir or "", "ch_ppocr_mobile_v2.0_cls_infer.onnx")
    if os.path.exists(cls):
        # the float fixture's batch: every text line upright and rotated 180 degrees
        x = np.stack([cls_preprocess(a) for im in text_images() for a in (im, np.ascontiguousarray(im[::-1, ::-1]))])
        # opset 13 for per-channel DequantizeLinear (the file is opset 10)
        models.append(("ppocr_cls", onnx.version_converter.convert_version(onnx.load(cls), 13), x))
    tmp = tempfile.mkdtemp()
    for name, m, x in models:
        # Weights held in Constant nodes (as in the PP-OCR models) become initializers: the
        # quantiser only quantises initializers as weights.
        consts = [n for n in m.graph.node if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value"]
        for n in consts:
            t = numpy_helper.to_array(n.attribute[0].t)
            if t.dtype == np.float32 and t.size > 1:
                m.graph.initializer.append(numpy_helper.from_array(t, n.output[0]))
                m.graph.node.remove(n)
        fp = os.path.join(tmp, f"{name}.onnx")
        onnx.save(m, fp)
        inp = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}][0]
        calib = [x] + [(x + rng.normal(0, 0.05, x.shape)).astype(np.float32) for _ in range(2)]
        forms = [(QuantFormat.QDQ, False, QuantType.QUInt8, "qdq_u8"), (QuantFormat.QDQ, True, QuantType.QInt8, "qdq_i8_per_channel"),
                 (QuantFormat.QOperator, True, QuantType.QUInt8, "qop_u8_per_channel")]
        if name == "ppocr_cls":
            # onnxruntime's recommended flow: quant_pre_process (shape inference and graph
            # optimisation, which folds BatchNormalization into the convolutions) first.
            forms.append((QuantFormat.QDQ, True, QuantType.QUInt8, "pre_qdq_u8_per_channel"))
        for fmt, per_channel, act, label in forms:
            qp = os.path.join(tmp, f"{name}_{label}.onnx")
            src = fp
            if label.startswith("pre_"):
                from onnxruntime.quantization.shape_inference import quant_pre_process
                src = os.path.join(tmp, f"{name}_pre.onnx")
                quant_pre_process(fp, src, skip_symbolic_shape=True)
            quantize_static(src, qp, Reader(inp, calib), quant_format=fmt, per_channel=per_channel, activation_type=act, weight_type=QuantType.QInt8)
            q = onnx.load(qp)
            b = q.SerializeToString()
            # the output's step: the scale of the last DequantizeLinear
            inits = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
            producer = {o: n for n in q.graph.node for o in n.output}
            todo, step = [q.graph.output[0].name], None
            while todo and step is None:
                n = producer.get(todo.pop(0))
                if n is None:
                    continue
                if n.op_type == "DequantizeLinear":
                    step = float(inits[n.input[1]].max())
                todo += list(n.input)
            assert step is not None, f"{name}_{label}: no DequantizeLinear before the output"
            out = run_ort(b, {inp: x})
            save_case("models", f"{name}_{label}", b, {inp: x}, out, tol=1.0, tags=["int8"], atol=1.001 * step)
            np.save(os.path.join(OUT, "models", f"{name}_{label}", "float_reference.npy"), run_ort(m.SerializeToString(), {inp: x})[0][1])
    shutil.rmtree(tmp)


def write_f16_model():
    """A float16 model as converters write it (every weight and the input float16): conv,
    batch norm (folded into the conv at load), ReLU, global average pool, Gemm. Its expected
    output is onnxruntime's f32 run of the same weights, widened."""
    rng = np.random.default_rng(16)
    H = TensorProto.FLOAT16
    w = rng.normal(0, np.sqrt(2 / 27), (16, 3, 3, 3))
    bn = [rng.uniform(0.5, 1.5, 16), rng.uniform(-0.1, 0.1, 16), rng.uniform(-0.1, 0.1, 16), rng.uniform(0.5, 1.5, 16)]
    fw, fb = rng.normal(0, np.sqrt(2 / 16), (10, 16)), rng.uniform(-0.1, 0.1, 10)
    nodes = [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"]),
             node("Relu", ["n"], ["r"]), node("GlobalAveragePool", ["r"], ["p"]), node("Flatten", ["p"], ["f"]),
             node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    x = rng.uniform(-1, 1, (2, 3, 12, 12))
    out = {}
    for dt, np_dt in [(H, np.float16), (F, np.float32)]:
        inits = [numpy_helper.from_array(a.astype(np_dt), n) for n, a in zip(["w", "g", "b", "m", "v", "fw", "fb"], [w, *bn, fw, fb])]
        g = helper.make_graph(nodes, "conv_bn_f16", [helper.make_tensor_value_info("x", dt, [None, 3, 12, 12])], [helper.make_tensor_value_info("y", dt, None)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="pixelgrad-fixtures")
        m.ir_version = 8
        out[np_dt] = (m.SerializeToString(), run_ort(m.SerializeToString(), {"x": x.astype(np_dt)}))
    want = [(k, v.astype(np.float32)) for k, v in out[np.float32][1]]
    save_case("models", "conv_bn_f16", out[np.float16][0], {"x": x.astype(np.float16)}, want, tol=1e-2, tags=["f16"])


def write_bad_models():
    """Models pixelgrad must refuse with a clear error (no expected outputs)."""
    d = os.path.join(OUT, "bad")
    os.makedirs(d, exist_ok=True)
    x = helper.make_tensor_value_info("x", F, [2, 3])
    y = helper.make_tensor_value_info("y", F, None)
    g = helper.make_graph([helper.make_node("Det", ["x"], ["y"], name="my_det")], "bad", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    open(os.path.join(d, "unsupported_op.onnx"), "wb").write(m.SerializeToString())
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="custom_relu", domain="com.example")], "bad", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
    open(os.path.join(d, "custom_domain.onnx"), "wb").write(m.SerializeToString())
    g = helper.make_graph([helper.make_node("Conv", ["x4", "w"], ["y"], name="conv3d_like", pads=[1, 1, 1, 1], foo=3)], "bad",
                          [helper.make_tensor_value_info("x4", F, [1, 1, 4, 4])], [y], [numpy_helper.from_array(rand(1, 1, 3, 3), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    open(os.path.join(d, "unknown_attribute.onnx"), "wb").write(m.SerializeToString())
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "bad", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    open(os.path.join(d, "relu_2x3.onnx"), "wb").write(m.SerializeToString())


def control_flow_cases():
    """If, Loop and Scan: subgraphs reading outer-scope values, conditions on the host and on
    the device, loop-carried values and scan outputs (drawn last: the earlier cases' random
    values stay as they were)."""
    B = TensorProto.BOOL
    I64 = TensorProto.INT64
    vi = helper.make_tensor_value_info
    x = rand(2, 3)
    w = rand(2, 3)

    def branches():
        # then: x * w + t (w: outer initializer, t: the branch's own); else: relu(x) - x
        then_g = helper.make_graph([node("Mul", ["x", "w"], ["tm"]), node("Add", ["tm", "t"], ["ty"])], "then", [], [vi("ty", F, None)],
                                   [numpy_helper.from_array(rand(2, 3), "t")])
        else_g = helper.make_graph([node("Relu", ["x"], ["er"]), node("Sub", ["er", "x"], ["ey"])], "else", [], [vi("ey", F, None)])
        return then_g, else_g

    then_g, else_g = branches()
    # condition from the data: on the device, read back with one small readback
    case("if_data_condition", [node("ReduceSum", ["x"], ["s"], keepdims=0), node("Greater", ["s", "zero"], ["c"]),
                               helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
         [("x", x, None)], [("y", F)], [("w", w), ("zero", np.array(0.0, np.float32))])
    for flag in (True, False):
        then_g, else_g = branches()
        case(f"if_input_condition_{str(flag).lower()}", [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
             [("x", x, None), ("c", np.array(flag), None)], [("y", F)], [("w", w)])
    # condition from a Constant: folded at load, one branch kept
    then_g, else_g = branches()
    case("if_constant_condition", [helper.make_node("Constant", [], ["c"], name="c", value=numpy_helper.from_array(np.array(False), "c")),
                                   helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
         [("x", x, None)], [("y", F)], [("w", w)])

    # Loop with a trip count: counter, accumulation with an outer value, a scan output
    body = helper.make_graph(
        [node("Cast", ["i"], ["fi"], to=F), node("Mul", ["x", "fi"], ["xi"]), node("Add", ["acc", "xi"], ["acc_out"]),
         node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Mul", ["acc_out", "two"], ["scan_out"], name="scan_mul")],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("acc", F, [2, 3])],
        [vi("cond_out", B, []), vi("acc_out", F, [2, 3]), vi("scan_out", F, [2, 3])])
    case("loop_counter_accumulate_scan", [helper.make_node("Loop", ["m", "", "acc0"], ["acc", "scan"], name="loop", body=body)],
         [("x", x, None), ("acc0", rand(2, 3), None)], [("acc", F), ("scan", F)],
         [("m", np.array(5, np.int64)), ("two", np.array(2.0, np.float32))])
    # while loop: the condition is computed on the device each iteration; the iteration
    # number is also a scan output (int64)
    body = helper.make_graph(
        [node("Add", ["acc", "x"], ["acc_out"]), node("ReduceSum", ["acc_out"], ["s"], keepdims=0), node("Less", ["s", "limit"], ["cond_out"]),
         node("Identity", ["i"], ["i_out"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("acc", F, [2, 3])],
        [vi("cond_out", B, []), vi("acc_out", F, [2, 3]), vi("i_out", I64, [])])
    xp = RNG.uniform(0.1, 1.0, size=(2, 3)).astype(np.float32)
    case("loop_while_device_condition", [helper.make_node("Loop", ["m", "go", "acc0"], ["acc", "iters"], name="loop", body=body)],
         [("x", xp, None), ("acc0", np.zeros((2, 3), np.float32), None)], [("acc", F), ("iters", I64)],
         [("m", np.array(50, np.int64)), ("go", np.array(True)), ("limit", np.array(12.0, np.float32))])

    # Scan: cumulative sum over the first axis
    body = helper.make_graph([node("Add", ["s", "xt"], ["s_out"]), node("Identity", ["s_out"], ["y_t"])], "body",
                             [vi("s", F, [3]), vi("xt", F, [3])], [vi("s_out", F, [3]), vi("y_t", F, [3])])
    case("scan_cumulative_sum", [helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], name="scan", num_scan_inputs=1, body=body)],
         [("s0", np.zeros(3, np.float32), None), ("xs", rand(5, 3), None)], [("s", F), ("ys", F)])
    # Scan along axis 1, input reversed, output stacked on axis 1 in reverse
    body = helper.make_graph([node("Add", ["s", "xt"], ["s_out"]), node("Mul", ["s_out", "xt"], ["y_t"])], "body",
                             [vi("s", F, [2]), vi("xt", F, [2])], [vi("s_out", F, [2]), vi("y_t", F, [2])])
    case("scan_axes_directions", [helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], name="scan", num_scan_inputs=1, body=body,
                                                   scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1], scan_output_directions=[1])],
         [("s0", rand(2), None), ("xs", rand(2, 4), None)], [("s", F), ("ys", F)], opset=16)


def external_data_cases():
    """A model whose weights live in `model.onnx_data` beside it (onnx's external-data saving,
    every tensor in one file), and one whose file names a location in a subfolder; kind
    `external`: read from their folder, not from the model's bytes alone."""
    x = rand(2, 4)
    w1, b1, w2 = rand(4, 8), rand(8), rand(8, 3)
    nodes = [node("MatMul", ["x", "w1"], ["h"]), node("Add", ["h", "b1"], ["hb"]), node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="matmul_2")]
    for name, location in (("external_one_file", "model.onnx_data"), ("external_subfolder", "weights/data.bin")):
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", F, [2, 4])], [helper.make_tensor_value_info("y", F, None)],
                              [numpy_helper.from_array(a, n) for n, a in (("w1", w1), ("b1", b1), ("w2", w2))])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="pixelgrad-fixtures")
        m.ir_version = 8
        d = os.path.join(OUT, "external", name)
        os.makedirs(os.path.dirname(os.path.join(d, location)), exist_ok=True)
        onnx.save_model(m, os.path.join(d, "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True, location=location,
                        size_threshold=0)
        sess = oracle_session(os.path.join(d, "model.onnx"))
        want = sess.run(["y"], {"x": x})[0]
        with open(os.path.join(d, "model.onnx"), "rb") as f:
            model_bytes = f.read()
        save_case("external", name, model_bytes, {"x": x}, [("y", want)])


def main():
    os.makedirs(OUT, exist_ok=True)
    conv_cases()
    conv_transpose_cases()
    one_d_cases()
    pool_cases()
    linalg_cases()
    elementwise_cases()
    select_cases()
    rnn_cases()
    movement_cases()
    resize_cases()
    quant_cases()
    write_light_models()
    write_quantized_models(PPOCR)
    write_ppocr()
    write_f16_model()
    write_bad_models()
    fuzz_found_cases()
    qlinear_tie_cases()
    contrib_transformer_cases()
    nbits_cases()
    control_flow_cases()
    external_data_cases()
    rotary_and_embedding_cases()
    attention_cases()
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump({"onnx": onnx.__version__, "onnxruntime": ort.__version__, "cases": MANIFEST}, f, indent=1)
    print(f"{len(MANIFEST)} cases", file=sys.stderr)


def contrib_case(name, nodes, inputs, outputs, initializers=(), opset=17, unset=None):
    """`case` for onnxruntime's transformer contrib operators (com.microsoft imported). `unset`
    maps the outputs onnxruntime's CPU kernels leave unset (SkipLayerNormalization's mean and
    inv_std_var) to their float64 numpy reference, cast to f32."""
    fd = {n: arr for n, arr, _ in inputs}
    vi_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a, _ in inputs]
    vi_out = [helper.make_tensor_value_info(n, F, None) for n in outputs]
    g = helper.make_graph(nodes, name, vi_in, vi_out, [numpy_helper.from_array(a, n) for n, a in initializers])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)], producer_name="pixelgrad-fixtures")
    m.ir_version = min(m.ir_version, 8)
    b = m.SerializeToString()
    got = run_ort(b, fd)
    outs = []
    for n, v in got:
        if v is None:
            v = unset[n].astype(np.float32)
        elif unset and n in unset:
            raise AssertionError(f"{name}: onnxruntime now sets {n}; compare with it")
        outs.append((n, v))
    save_case("ops", name, b, fd, outs, tags=["contrib"])


def contrib_transformer_cases():
    """onnxruntime's transformer contrib operators (docs/ContribOperators.md): the GELUs and the
    (skip, RMS) layer normalisations its optimiser fuses, each attribute and optional input and
    output onnxruntime's schema lists, on f32 inputs."""
    ms = dict(domain="com.microsoft")
    x = rand(2, 3, 8) * 3
    h = rand(8)
    contrib_case("ms_gelu", [helper.make_node("Gelu", ["x"], ["y"], name="gelu_ms", **ms)], [("x", x, None)], ["y"])
    contrib_case("ms_fastgelu", [helper.make_node("FastGelu", ["x"], ["y"], name="fastgelu", **ms)], [("x", x, None)], ["y"])
    contrib_case("ms_fastgelu_bias", [helper.make_node("FastGelu", ["x", "b"], ["y"], name="fastgelu", **ms)], [("x", x, None)], ["y"], [("b", h)])
    contrib_case("ms_fastgelu_bias_2d", [helper.make_node("FastGelu", ["x", "b"], ["y"], name="fastgelu", **ms)], [("x", x[0], None), ("b", h, None)], ["y"])
    contrib_case("ms_biasgelu", [helper.make_node("BiasGelu", ["x", "b"], ["y"], name="biasgelu", **ms)], [("x", x, None)], ["y"], [("b", h)])
    contrib_case("ms_quickgelu", [helper.make_node("QuickGelu", ["x"], ["y"], name="quickgelu", **ms)], [("x", x, None)], ["y"])
    for a, tag in [(1.0, "1"), (-0.5, "neg0_5")]:
        contrib_case(f"ms_quickgelu_alpha_{tag}", [helper.make_node("QuickGelu", ["x"], ["y"], name="quickgelu", alpha=a, **ms)], [("x", x, None)], ["y"])
    # LayerNormalization with its Mean omitted and InvStdDev named (results pair with outputs by
    # position: this one was "not computed" before)
    contrib_case("layernorm_invstd_without_mean", [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "", "r"], name="ln", axis=-1)],
                 [("x", rand(2, 3, 4), None)], ["y", "r"], [("s", rand(4)), ("b", rand(4))])
    # SimplifiedLayerNormalization: default domain (onnxruntime's contrib registration)
    xs = rand(2, 3, 4)
    sln = lambda outs, **a: [helper.make_node("SimplifiedLayerNormalization", ["x", "s"], outs, name="rmsnorm", **a)]
    contrib_case("simplified_layernorm", sln(["y"]), [("x", xs, None)], ["y"], [("s", rand(4))])
    contrib_case("simplified_layernorm_inv_std_var", sln(["y", "r"], axis=-1, epsilon=1e-5, stash_type=1), [("x", xs, None)], ["y", "r"], [("s", rand(4))])
    contrib_case("simplified_layernorm_axis1_eps", sln(["y", "r"], axis=1, epsilon=0.1), [("x", xs, None)], ["y", "r"], [("s", rand(3, 4))])
    contrib_case("simplified_layernorm_axis0_opset13", sln(["y"], axis=0), [("x", xs, None)], ["y"], [("s", rand(2, 3, 4))], opset=13)
    # SkipLayerNormalization / SkipSimplifiedLayerNormalization: input [B, S, H] or [T, H]
    b_, s_, hid = 2, 3, 8
    xi, sk = rand(b_, s_, hid), rand(b_, s_, hid)
    gamma, beta, bias = rand(hid), rand(hid), rand(hid)

    def stats(z, eps, simplified):
        z = z.astype(np.float64)
        mu = z.mean(-1, keepdims=True)
        c = z if simplified else z - mu
        return mu, 1 / np.sqrt((c * c).mean(-1, keepdims=True) + eps)

    def skip(op, name, ins, outs, feeds, inits, eps=None, unset_ref=None):
        attrs = {} if eps is None else {"epsilon": eps}
        contrib_case(name, [helper.make_node(op, ins, outs, name=op.lower(), **ms, **attrs)], feeds, [o for o in outs if o], inits, unset=unset_ref)

    sl = "SkipLayerNormalization"
    base = [("x", xi, None), ("k", sk, None)]
    skip(sl, "skip_layernorm", ["x", "k", "g"], ["y"], base, [("g", gamma)])
    skip(sl, "skip_layernorm_beta", ["x", "k", "g", "be"], ["y"], base, [("g", gamma), ("be", beta)])
    skip(sl, "skip_layernorm_beta_bias_eps", ["x", "k", "g", "be", "bi"], ["y"], base, [("g", gamma), ("be", beta), ("bi", bias)], eps=1e-5)
    skip(sl, "skip_layernorm_bias_no_beta_sum", ["x", "k", "g", "", "bi"], ["y", "", "", "sum"], base, [("g", gamma), ("bi", bias)])
    mu, inv = stats(xi + sk + bias, 1e-12, False)
    skip(sl, "skip_layernorm_all_outputs", ["x", "k", "g", "be", "bi"], ["y", "m", "r", "sum"], base, [("g", gamma), ("be", beta), ("bi", bias)],
         unset_ref={"m": mu, "r": inv})
    for shape, tag in [((1, s_, hid), "1sh"), ((s_, hid), "sh")]:
        skip(sl, f"skip_layernorm_skip_{tag}", ["x", "k", "g", "be"], ["y", "", "", "sum"], [("x", xi, None), ("k", rand(*shape), None)], [("g", gamma), ("be", beta)])
    skip(sl, "skip_layernorm_2d", ["x", "k", "g", "be", "bi"], ["y"], [("x", xi[0], None), ("k", sk[0], None)], [("g", gamma), ("be", beta), ("bi", bias)])
    ssl = "SkipSimplifiedLayerNormalization"
    skip(ssl, "skip_simplified_layernorm", ["x", "k", "g"], ["y"], base, [("g", gamma)])
    skip(ssl, "skip_simplified_layernorm_bias_eps_sum", ["x", "k", "g", "bi"], ["y", "", "", "sum"], base, [("g", gamma), ("bi", bias)], eps=1e-3)
    _, inv = stats(xi + sk + bias, 1e-12, True)
    skip(ssl, "skip_simplified_layernorm_inv_std_var", ["x", "k", "g", "bi"], ["y", "", "r", "sum"], base, [("g", gamma), ("bi", bias)], unset_ref={"r": inv})
    skip(ssl, "skip_simplified_layernorm_skip_sh", ["x", "k", "g"], ["y"], [("x", xi, None), ("k", rand(s_, hid), None)], [("g", gamma)])
    skip(ssl, "skip_simplified_layernorm_2d", ["x", "k", "g", "bi"], ["y", "", "", "sum"], [("x", xi[0], None), ("k", sk[0], None)], [("g", gamma), ("bi", bias)])


def nbits_quantise(w, bits, block, zero_points):
    """A [K, N] f32 weight in MatMulNBits' layout (onnxruntime's ContribOperators.md): B uint8
    [N, k_blocks, block * bits / 8] (4-bit: even k in the low nibble), scales [N * k_blocks],
    and zero points packed uint8 ("u8"), one float per block ("f32") or none (symmetric,
    2^(bits-1)). Returns (B, scales, zero points or None, the dequantised [K, N] weight)."""
    k, n = w.shape
    kb = -(-k // block)
    wp = np.concatenate([w, np.zeros((kb * block - k, n), np.float32)]).T.reshape(n, kb, block)
    top = 2 ** bits - 1
    lo, hi = np.minimum(wp.min(-1), 0), np.maximum(wp.max(-1), 0)
    if zero_points is None:
        sc = np.maximum(hi, -lo) / 2 ** (bits - 1)
        zp = np.full((n, kb), 2 ** (bits - 1))
    else:
        sc = (hi - lo) / top
    sc = np.where(sc == 0, 1, sc).astype(np.float32)
    if zero_points is not None:
        zp = np.clip(np.round(-lo / sc), 0, top).astype(np.int64)
    q = np.clip(np.round(wp / sc[..., None]) + zp[..., None], 0, top).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8) if bits == 4 else q
    deq = ((q.astype(np.float32) - zp[..., None]) * sc[..., None]).reshape(n, kb * block)[:, :k].T
    zpb = None
    if zero_points == "u8" and bits == 4:
        z = zp if kb % 2 == 0 else np.concatenate([zp, np.zeros((n, 1), np.int64)], 1)
        zpb = (z[:, 0::2] | (z[:, 1::2] << 4)).astype(np.uint8).reshape(-1)
    elif zero_points == "u8":
        zpb = zp.astype(np.uint8).reshape(-1)
    elif zero_points == "f32":
        zpb = zp.astype(np.float32).reshape(-1)
    return packed, sc.reshape(-1), zpb, np.ascontiguousarray(deq)


def nbits_cases():
    """onnxruntime's block-quantised operators (com.microsoft): MatMulNBits (4-bit against
    onnxruntime, whose 1.20 CPU kernel has no other width; 8-bit against the float64 numpy
    product of the dequantised weight, tagged "numpy-reference"), DynamicQuantizeMatMul,
    GatherBlockQuantized (int4 / uint4 tables), and an MLP whose MatMuls onnxruntime's own
    MatMul4BitsQuantizer rewrote."""
    from onnxruntime.quantization.matmul_4bits_quantizer import DefaultWeightOnlyQuantConfig, MatMul4BitsQuantizer

    def mnb(name, k, n, bits, block, zero_points, bias=False, a_shape=(2, 3), oracle="ort"):
        w = rand(k, n)
        b, sc, zp, deq = nbits_quantise(w, bits, block, zero_points)
        ins = ["a", "b", "s", "z" if zp is not None else "", "", "bias" if bias else ""]
        while not ins[-1]:
            ins.pop()
        inits = [("b", b), ("s", sc)] + ([("z", zp)] if zp is not None else [])
        bv = rand(n)
        if bias:
            inits.append(("bias", bv))
        a = rand(*a_shape, k)
        nd = helper.make_node("MatMulNBits", ins, ["y"], name="matmulnbits", domain="com.microsoft", K=k, N=n, bits=bits, block_size=block)
        tags = ["nbits"]
        if oracle == "ort":
            case(name, [nd], [("a", a, None)], [("y", F)], inits, opset=17, ms=True, tags=tags)
            return
        # no onnxruntime kernel for this width: the float64 product of the dequantised weight
        g = helper.make_graph([nd], name, [helper.make_tensor_value_info("a", F, list(a.shape))], [helper.make_tensor_value_info("y", F, None)],
                              [numpy_helper.from_array(v, k_) for k_, v in inits])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)], producer_name="pixelgrad-fixtures")
        m.ir_version = 8
        y = (a.astype(np.float64) @ deq.astype(np.float64) + (bv if bias else 0)).astype(np.float32)
        save_case("ops", name, m.SerializeToString(), {"a": a}, [("y", y)], tags=tags + ["numpy-reference"])

    mnb("matmulnbits_4bit_symmetric", 32, 8, 4, 16, None)
    mnb("matmulnbits_4bit_u8_zero_points", 32, 8, 4, 16, "u8")
    # K = 40 is not a multiple of block_size 16: 3 blocks, the last half padding, and an odd
    # count of 4-bit zero points per row (the last byte's high nibble unused)
    mnb("matmulnbits_4bit_odd_k", 40, 5, 4, 16, "u8")
    mnb("matmulnbits_4bit_f32_zero_points", 64, 8, 4, 32, "f32")
    mnb("matmulnbits_4bit_bias_2d_input", 48, 6, 4, 16, "u8", bias=True, a_shape=(5,))
    mnb("matmulnbits_4bit_block128", 200, 4, 4, 128, "u8", a_shape=(1, 2))
    mnb("matmulnbits_8bit_u8_zero_points", 40, 8, 8, 16, "u8", oracle="numpy")
    mnb("matmulnbits_8bit_symmetric_bias", 32, 8, 8, 32, None, bias=True, oracle="numpy")
    # DynamicQuantizeMatMul: A quantised per tensor at run time (uint8), B int8 / uint8
    dq = lambda ins: [helper.make_node("DynamicQuantizeMatMul", ins, ["y"], name="dqmatmul", domain="com.microsoft")]
    a = rand(2, 3, 16) * 2
    case("dynamicquantizematmul_i8", dq(["a", "b", "bs"]), [("a", a, None)], [("y", F)], [("b", q8((16, 8), np.int8)), ("bs", np.array(0.02, np.float32))],
         opset=17, ms=True, tags=["nbits"])
    case("dynamicquantizematmul_u8_zero_point_bias", dq(["a", "b", "bs", "bz", "bias"]), [("a", a, None)], [("y", F)],
         [("b", q8((16, 8), np.uint8)), ("bs", np.array(0.01, np.float32)), ("bz", np.array(131, np.uint8)), ("bias", rand(8))], opset=17, ms=True, tags=["nbits"])
    case("dynamicquantizematmul_i8_per_column", dq(["a", "b", "bs", "bz"]), [("a", rand(4, 16), None)], [("y", F)],
         [("b", q8((16, 8), np.int8)), ("bs", RNG.uniform(0.005, 0.03, 8).astype(np.float32)), ("bz", q8((8,), np.int8))], opset=17, ms=True, tags=["nbits"])
    # GatherBlockQuantized: int4 / uint4 tables, scales (and zero points) per block along
    # quantize_axis, indices int64 / int32 with negative ones
    def gbq(name, signed, zero_points, shape, gather_axis=0, quantize_axis=1, block=16, idx=None):
        lo, hi = (-8, 8) if signed else (0, 16)
        et = TensorProto.INT4 if signed else TensorProto.UINT4
        q = RNG.integers(lo, hi, size=shape)
        sshape = list(shape)
        sshape[quantize_axis] = -(-shape[quantize_axis] // block)
        inits = [helper.make_tensor("d", et, list(shape), q.reshape(-1).tolist()), numpy_helper.from_array(RNG.uniform(0.05, 0.5, sshape).astype(np.float32), "s")]
        ins = ["d", "i", "s"]
        if zero_points:
            inits.append(helper.make_tensor("z", et, sshape, RNG.integers(lo, hi, size=sshape).reshape(-1).tolist()))
            ins.append("z")
        idx = np.array([[1, 0], [shape[gather_axis] - 1, -1]], np.int64) if idx is None else idx
        nd = helper.make_node("GatherBlockQuantized", ins, ["y"], name="gbq", domain="com.microsoft", gather_axis=gather_axis, quantize_axis=quantize_axis, block_size=block)
        g = helper.make_graph([nd], name, [helper.make_tensor_value_info("i", helper.np_dtype_to_tensor_dtype(idx.dtype), list(idx.shape))],
                              [helper.make_tensor_value_info("y", F, None)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)], producer_name="pixelgrad-fixtures")
        m.ir_version = 10
        b = m.SerializeToString()
        save_case("ops", name, b, {"i": idx}, run_ort(b, {"i": idx}), tags=["nbits"])

    gbq("gatherblockquantized_uint4", False, False, (6, 32))
    gbq("gatherblockquantized_uint4_zero_points", False, True, (6, 32))
    gbq("gatherblockquantized_int4_zero_points", True, True, (6, 32))
    # 40 values per row: the last block of 16 half full; odd byte counts of packed values
    gbq("gatherblockquantized_int4_odd_row", True, False, (5, 40), idx=np.array([4, 0, -2], np.int32))
    gbq("gatherblockquantized_gather_axis1_quantize_axis0", False, True, (32, 6), gather_axis=1, quantize_axis=0)
    gbq("gatherblockquantized_3d_block32", False, True, (3, 2, 64), quantize_axis=2, block=32, idx=np.array([2, 0], np.int64))
    # an MLP (MatMul + Add + Relu, twice) whose MatMuls onnxruntime's MatMul4BitsQuantizer
    # rewrites into MatMulNBits (block 32, with zero points)
    w1, b1, w2, b2 = rand(64, 48) * 0.3, rand(48) * 0.1, rand(48, 10) * 0.3, rand(10) * 0.1
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"), helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu1"), helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="mm2"),
             helper.make_node("Add", ["h3", "b2"], ["y"], name="add2")]
    g = helper.make_graph(nodes, "nbits_mlp", [helper.make_tensor_value_info("x", F, [4, 64])], [helper.make_tensor_value_info("y", F, [4, 10])],
                          [numpy_helper.from_array(v, k) for k, v in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="pixelgrad-fixtures")
    m.ir_version = 8
    qz = MatMul4BitsQuantizer(m, algo_config=DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=False))
    qz.process()
    qm = qz.model.model
    assert sum(n.op_type == "MatMulNBits" for n in qm.graph.node) == 2, [n.op_type for n in qm.graph.node]
    b = qm.SerializeToString()
    x = rand(4, 64)
    save_case("models", "mlp_matmulnbits_4bit", b, {"x": x}, run_ort(b, {"x": x}), tol=1e-4, tags=["nbits"])


def rotary_and_embedding_cases():
    """onnxruntime's com.microsoft RotaryEmbedding and EmbedLayerNormalization (onnxruntime as
    the oracle), then opset 23's RMSNormalization and RotaryEmbedding, which onnxruntime 1.20.1
    does not know: those come from scripts/onnx23_fixtures.py, run in target/onnx23-venv (a
    newer onnx whose reference evaluator implements them). Every attribute and optional input
    the schemas list; its own random numbers, so other cases keep their bytes."""
    rng = np.random.default_rng(2323)
    r = lambda *shape: rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    I64, I32 = TensorProto.INT64, TensorProto.INT32

    def ms_case(name, nd, inputs, outputs, inits, opset=17):
        """inputs: (name, array); outputs: (name, element type)."""
        fd = {n: a for n, a in inputs}
        vi_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a in inputs]
        vi_out = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
        g = helper.make_graph(nd, name, vi_in, vi_out, [numpy_helper.from_array(a, n) for n, a in inits])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)], producer_name="pixelgrad-fixtures")
        m.ir_version = 8
        b = m.SerializeToString()
        save_case("ops", name, b, fd, run_ort(b, fd), tags=["contrib"])

    # com.microsoft RotaryEmbedding: input [B, S, N*H] or [B, N, S, H], position_ids a start
    # ([1] or []) or [B, S], caches [max_sequence, rotary_dim / 2]
    b_, s_, n_, h_, m_ = 2, 3, 2, 8, 8
    ms = dict(domain="com.microsoft")

    def rope(name, x, pos, rd=0, **attrs):
        half = (rd or h_) // 2
        inits = [("c", r(m_, half)), ("s", r(m_, half))]
        if rd:
            attrs["rotary_embedding_dim"] = rd
        nd = [helper.make_node("RotaryEmbedding", ["x", "p", "c", "s"], ["y"], name="rope", **ms, **attrs)]
        ms_case(name, nd, [("x", x), ("p", pos)], [("y", F)], inits)

    x3, x4 = r(b_, s_, n_ * h_), r(b_, n_, s_, h_)
    per_token = rng.integers(0, m_, size=(b_, s_)).astype(np.int64)
    rope("ms_rotary_3d_start", x3, np.array([2], np.int64))
    rope("ms_rotary_3d_start_scalar", x3, np.array(0, np.int64))
    rope("ms_rotary_3d_positions", x3, per_token)
    rope("ms_rotary_3d_interleaved", x3, per_token, interleaved=1)
    rope("ms_rotary_3d_num_heads", x3, per_token, num_heads=n_)
    rope("ms_rotary_3d_partial", x3, np.array([1], np.int64), rd=4, num_heads=n_)
    rope("ms_rotary_3d_partial_interleaved", x3, per_token, rd=4, num_heads=n_, interleaved=1)
    rope("ms_rotary_3d_scale", x3, per_token, scale=0.5)
    rope("ms_rotary_3d_not_packed", x3, per_token, is_packed_batching=0)
    rope("ms_rotary_4d_positions", x4, per_token)
    rope("ms_rotary_4d_interleaved_start", x4, np.array([3], np.int64), interleaved=1)
    rope("ms_rotary_4d_partial", x4, per_token, rd=6, num_heads=n_)
    rope("ms_rotary_4d_partial_interleaved", x4, per_token, rd=4, num_heads=n_, interleaved=1)
    # positions computed on the device (Exp and Log have no host evaluation): a start and
    # per-token positions
    for name, pos in [("ms_rotary_device_positions", per_token), ("ms_rotary_device_start", np.array([4.0]))]:
        nd = [helper.make_node("Exp", ["pf"], ["pe"]), helper.make_node("Log", ["pe"], ["pl"]), helper.make_node("Round", ["pl"], ["pr"]),
              helper.make_node("Cast", ["pr"], ["p"], to=I64),
              helper.make_node("RotaryEmbedding", ["x", "p", "c", "s"], ["y"], name="rope", **ms)]
        ms_case(name, nd, [("x", x3), ("pf", pos.astype(np.float32))], [("y", F)], [("c", r(m_, h_ // 2)), ("s", r(m_, h_ // 2))])

    # com.microsoft EmbedLayerNormalization: input_ids, segment_ids, word, position and
    # segment embeddings, gamma, beta, mask, position_ids -> output, mask_index, embedding_sum
    vocab, n_pos, n_seg, hid = 7, 5, 2, 8
    ids = rng.integers(0, vocab, size=(b_, s_)).astype(np.int32)
    seg = rng.integers(0, n_seg, size=(b_, s_)).astype(np.int32)
    mask = np.array([[1, 1, 0], [1, 2, 1]], np.int32)  # onnxruntime counts the ones
    tables = [("w", r(vocab, hid)), ("pe", r(n_pos, hid) * 0.5), ("se", r(n_seg, hid) * 0.5), ("ga", r(hid) + 1.0), ("be", r(hid))]

    def eln(name, ins, outs, feeds, **attrs):
        nd = [helper.make_node("EmbedLayerNormalization", ins, [o for o, _ in outs], name="embed_ln", **ms, **attrs)]
        used = [t for t in tables if t[0] in ins]
        ms_case(name, nd, feeds, [(o, t) for o, t in outs if o], used)

    y, mi, es = ("y", F), ("mi", I32), ("es", F)
    eln("ms_embed_layernorm_all", ["i", "g", "w", "pe", "se", "ga", "be", "m"], [y, mi, es], [("i", ids), ("g", seg), ("m", mask)])
    eln("ms_embed_layernorm_no_segment", ["i", "", "w", "pe", "", "ga", "be"], [y, mi], [("i", ids)], epsilon=1e-5)
    eln("ms_embed_layernorm_no_mask_index", ["i", "g", "w", "pe", "se", "ga", "be"], [y, mi], [("i", ids), ("g", seg)])
    eln("ms_embed_layernorm_mask_no_segment_sum", ["i", "", "w", "pe", "", "ga", "be", "m"], [y, mi, es], [("i", ids), ("m", mask)], epsilon=1e-3)
    eln("ms_embed_layernorm_position_ids_1s", ["i", "g", "w", "pe", "se", "ga", "be", "", "pi"], [y, ("", None), es],
        [("i", ids), ("g", seg), ("pi", np.array([[4, 0, 2]], np.int32))])
    eln("ms_embed_layernorm_position_ids_bs", ["i", "g", "w", "pe", "se", "ga", "be", "m", "pi"], [y, mi],
        [("i", ids), ("g", seg), ("m", mask), ("pi", rng.integers(0, n_pos, size=(b_, s_)).astype(np.int32))], mask_index_type=1)
    # one output: onnxruntime's shape inference then wants mask_index_type 0 (no mask_index)
    eln("ms_embed_layernorm_mask_index_type0", ["i", "g", "w", "pe", "se", "ga", "be"], [y], [("i", ids), ("g", seg)], mask_index_type=0)
    # ids, segments and mask computed on the device (Exp and Log have no host evaluation)
    dev_int = lambda n: [helper.make_node("Exp", [f"{n}f"], [f"{n}e"]), helper.make_node("Log", [f"{n}e"], [f"{n}l"]),
                         helper.make_node("Round", [f"{n}l"], [f"{n}r"]), helper.make_node("Cast", [f"{n}r"], [n], to=I32)]
    nd = dev_int("i") + dev_int("g") + dev_int("m") + [
        helper.make_node("EmbedLayerNormalization", ["i", "g", "w", "pe", "se", "ga", "be", "m"], ["y", "mi", "es"], name="embed_ln", **ms)]
    ms_case("ms_embed_layernorm_device_ids", nd, [("if", ids.astype(np.float32)), ("gf", seg.astype(np.float32)), ("mf", mask.astype(np.float32))],
            [y, mi, es], tables)

    # opset 23, from the newer onnx's reference evaluator (a separate venv: the pinned onnx
    # and onnxruntime stay as they are)
    py23 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "onnx23-venv", "bin", "python")
    gen23 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx23_fixtures.py")
    import subprocess
    out = subprocess.run([py23, gen23, OUT], check=True, capture_output=True, text=True).stdout


def attention_case(name, op, ins, outs, feeds, **attrs):
    """One com.microsoft attention node (`op`) on graph inputs `feeds` (name -> array), every
    output compared (tag `attention`). onnxruntime's CPU kernels must give finite values."""
    nd = helper.make_node(op, ins, outs, name=op.lower(), domain="com.microsoft", **attrs)
    vi_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a in feeds.items()]
    vi_out = [helper.make_tensor_value_info(n, F, None) for n in outs if n]
    g = helper.make_graph([nd], name, vi_in, vi_out)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)], producer_name="pixelgrad-fixtures")
    m.ir_version = min(m.ir_version, 8)
    b = m.SerializeToString()
    got = run_ort(b, feeds)
    for n, v in got:
        assert np.isfinite(v).all(), f"{name}: onnxruntime gave non-finite {n}"
    save_case("ops", name, b, feeds, got, tags=["attention"])


def attention_cases():
    """onnxruntime's attention operators (MultiHeadAttention, GroupQueryAttention, Attention;
    bert_defs.cc), each input form and attribute its CPU kernel runs. Their own random stream,
    so the cases before them keep their bytes. onnxruntime 1.20.1's CPU kernel lays key masks
    out with the query length as the row length, so masked cases keep the key length equal to
    the query length (or the past plus it); it refuses packed QKV / KV in MultiHeadAttention,
    ignores MultiHeadAttention's past when no present is asked for, crashes on Attention without
    a bias, and misreads an attention_bias of shape [B, 1, S, T] (NaN with a past): none of
    those are cases."""
    rng = np.random.default_rng(4242)
    r = lambda *shape: rng.uniform(-1, 1, size=shape).astype(np.float32)
    i32 = lambda v: np.array(v, np.int32)
    # MultiHeadAttention: 2 heads of 4, batch 2, 3 queries
    B, S, N, H = 2, 3, 2, 4
    D = N * H
    mha = lambda name, ins, outs, feeds, **a: attention_case(name, "MultiHeadAttention", ins, outs, feeds, num_heads=N, **a)
    q, k, v, k4, v4 = r(B, S, D), r(B, S, D), r(B, S, D), r(B, 4, D), r(B, 4, D)
    mha("mha_cross_kv4", ["q", "k", "v"], ["y"], dict(q=q, k=k4, v=v4))
    mha("mha_value_width_6", ["q", "k", "v"], ["y"], dict(q=q, k=k4, v=r(B, 4, 6)))
    mha("mha_bias_attention_bias_scale", ["q", "k", "v", "b", "", "ab"], ["y"], dict(q=q, k=k4, v=v4, b=r(3 * D), ab=r(1, N, S, 4)), scale=0.3)
    mha("mha_attention_bias_per_batch_head", ["q", "k", "v", "", "", "ab"], ["y"], dict(q=q, k=k4, v=v4, ab=r(B, N, S, 4)))
    mha("mha_unidirectional", ["q", "k", "v"], ["y"], dict(q=q, k=k, v=v), unidirectional=1)
    mha("mha_key_padding_lengths", ["q", "k", "v", "", "m"], ["y"], dict(q=q, k=k, v=v, m=i32([2, 3])))
    mha("mha_key_padding_2d", ["q", "k", "v", "", "m"], ["y"], dict(q=q, k=k, v=v, m=i32([[1, 0, 1], [0, 1, 1]])))
    m3 = rng.integers(0, 2, (B, S, S)).astype(np.int32)
    m3[:, :, 0] = 1
    mha("mha_key_padding_3d", ["q", "k", "v", "", "m"], ["y"], dict(q=q, k=k, v=v, m=m3))
    mha("mha_key_padding_2d_unidirectional_mask_filter_value", ["q", "k", "v", "b", "m"], ["y"],
        dict(q=q, k=k, v=v, b=r(3 * D), m=i32([[0, 0, 0], [0, 1, 1]])), unidirectional=1, mask_filter_value=-3.0)
    P = 2
    pk, pv = r(B, N, P, H), r(B, N, P, H)
    past = ["q", "k", "v", "b", "m", "ab", "pk", "pv"]
    kv = ["y", "present_key", "present_value"]
    mha("mha_past_unidirectional", past[:3] + ["", "", ""] + past[6:], kv, dict(q=q, k=k, v=v, pk=pk, pv=pv), unidirectional=1)
    mha("mha_past_key_padding_2d_bias", past[:5] + [""] + past[6:], kv,
        dict(q=q, k=k, v=v, b=r(3 * D), m=i32([[0, 1, 1, 1, 1], [1, 1, 0, 1, 1]]), pk=pk, pv=pv))
    mha("mha_past_key_padding_lengths", past[:3] + ["", "m", ""] + past[6:], kv, dict(q=q, k=k, v=v, m=i32([4, 5]), pk=pk, pv=pv))
    mha("mha_past_attention_bias_unidirectional", past[:3] + ["", "", "ab"] + past[6:], kv,
        dict(q=q, k=k, v=v, ab=r(1, N, S, P + S), pk=pk, pv=pv), unidirectional=1)
    mha("mha_present_without_past", ["q", "k", "v"], kv, dict(q=q, k=k4, v=v4))
    mha("mha_kv_in_heads_bias", ["q", "k", "v", "b"], kv, dict(q=q, k=r(B, N, 4, H), v=r(B, N, 4, H), b=r(3 * D)))
    # GroupQueryAttention: 4 query heads over 2 key/value heads of 8 (onnxruntime's CPU wants
    # head sizes that are multiples of 8), batch 2, 3 new tokens
    B, S, N, KVN, H = 2, 3, 4, 2, 8
    D, KD = N * H, KVN * H
    gqa = lambda name, ins, feeds, **a: attention_case(name, "GroupQueryAttention", ins, ["y", "present_key", "present_value"], feeds,
                                                       num_heads=N, kv_num_heads=KVN, **a)
    q, k, v = r(B, S, D), r(B, S, KD), r(B, S, KD)
    prompt = dict(q=q, k=k, v=v, sk=i32([S - 1] * B), t=i32(S))
    gin = ["q", "k", "v", "", "", "sk", "t"]
    gqa("gqa_prompt", gin, prompt)
    gqa("gqa_prompt_packed_qkv", ["q", "", "", "", "", "sk", "t"], dict(q=np.concatenate([q, k, v], -1), sk=prompt["sk"], t=prompt["t"]))
    gqa("gqa_prompt_scale", gin, prompt, scale=0.5)
    gqa("gqa_prompt_softcap", gin, prompt, softcap=2.0)
    gqa("gqa_prompt_local_window", gin, prompt, local_window_size=1)
    gqa("gqa_prompt_smooth_softmax", gin, prompt, smooth_softmax=1)
    attention_case("gqa_kv_heads_equal", "GroupQueryAttention", gin, ["y", "pk", "pv"], dict(q=q, k=r(B, S, D), v=r(B, S, D), sk=prompt["sk"], t=prompt["t"]),
                   num_heads=N, kv_num_heads=N)
    full = ["q", "k", "v", "pk", "pv", "sk", "t"]
    # a past of 3 and 3 new tokens (onnxruntime's CPU takes batch 1 then)
    gqa("gqa_past_three_tokens", full, dict(q=q[:1], k=k[:1], v=v[:1], pk=r(1, KVN, 3, H), pv=r(1, KVN, 3, H), sk=i32([5]), t=i32(6)))
    # one new token per batch after pasts of 2 and 4 tokens in buffers of 4 and of 7
    q1, k1, v1 = r(B, 1, D), r(B, 1, KD), r(B, 1, KD)
    for buf in (4, 7):
        gqa(f"gqa_decode_ragged_buffer_{buf}", full, dict(q=q1, k=k1, v=v1, pk=r(B, KVN, buf, H), pv=r(B, KVN, buf, H), sk=i32([2, 4]), t=i32(5)))
    gqa("gqa_decode_local_window_softcap", full, dict(q=q1, k=k1, v=v1, pk=r(B, KVN, 4, H), pv=r(B, KVN, 4, H), sk=i32([3, 4]), t=i32(5)),
        local_window_size=2, softcap=1.5)
    # Attention: input width 5, 2 heads of 4, batch 2, 3 tokens
    B, S, N, H, IN = 2, 3, 2, 4, 5
    D = N * H
    att = lambda name, ins, outs, feeds, **a: attention_case(name, "Attention", ins, outs, feeds, num_heads=N, **a)
    x, w, bias = r(B, S, IN), r(IN, 3 * D), r(3 * D)
    base = dict(x=x, w=w, b=bias)
    att("attention_bert", ["x", "w", "b"], ["y"], base)
    att("attention_unidirectional", ["x", "w", "b"], ["y"], base, unidirectional=1)
    att("attention_scale", ["x", "w", "b"], ["y"], base, scale=0.7)
    att("attention_mask_lengths", ["x", "w", "b", "m"], ["y"], dict(base, m=i32([2, 3])))
    att("attention_mask_end_start", ["x", "w", "b", "m"], ["y"], dict(base, m=i32([3, 2, 1, 0])))
    att("attention_mask_2d", ["x", "w", "b", "m"], ["y"], dict(base, m=i32([[1, 0, 1], [0, 1, 1]])))
    att("attention_mask_3d", ["x", "w", "b", "m"], ["y"], dict(base, m=m3))
    att("attention_mask_2d_unidirectional_mask_filter_value", ["x", "w", "b", "m"], ["y"], dict(base, m=i32([[0, 0, 0], [0, 1, 1]])),
        unidirectional=1, mask_filter_value=-3.0)
    att("attention_attention_bias", ["x", "w", "b", "", "", "ab"], ["y"], dict(base, ab=r(1, N, S, S)))
    past = r(2, B, N, 2, H)
    att("attention_past_unidirectional", ["x", "w", "b", "", "past"], ["y", "present"], dict(base, past=past), unidirectional=1)
    att("attention_past_mask_2d", ["x", "w", "b", "m", "past"], ["y", "present"], dict(base, m=i32([[1, 0, 1, 1, 1], [0, 1, 1, 1, 1]]), past=past))
    att("attention_qkv_hidden_sizes", ["x", "w", "b"], ["y"], dict(x=x, w=r(IN, 2 * D + 6), b=r(2 * D + 6)), qkv_hidden_sizes=[D, D, 6])
    # do_rotary: queries and keys rotated at their positions (cos_cache / sin_cache inputs 7, 8);
    # heads of 32 rotated whole (caches 16 wide) or in their first 16 features (8 wide)
    B, S, N, KVN, H = 2, 3, 4, 2, 32
    D, KD = N * H, KVN * H
    gqa = lambda name, ins, feeds, **a: attention_case(name, "GroupQueryAttention", ins, ["y", "present_key", "present_value"], feeds,
                                                       num_heads=N, kv_num_heads=KVN, **a)
    q, k, v = r(B, S, D), r(B, S, KD), r(B, S, KD)
    cache = lambda w: (r(12, w), r(12, w))
    rin = ["q", "k", "v", "", "", "sk", "t", "c", "s"]
    rfull = ["q", "k", "v", "pk", "pv", "sk", "t", "c", "s"]
    c16, s16 = cache(16)
    c8, s8 = cache(8)
    gqa("gqa_rotary_prompt", rin, dict(q=q, k=k, v=v, sk=i32([S - 1] * B), t=i32(S), c=c16, s=s16), do_rotary=1)
    gqa("gqa_rotary_prompt_partial_interleaved", rin, dict(q=q, k=k, v=v, sk=i32([S - 1] * B), t=i32(S), c=c8, s=s8),
        do_rotary=1, rotary_interleaved=1)
    gqa("gqa_rotary_prompt_packed_qkv", ["q", "", "", "", "", "sk", "t", "c", "s"],
        dict(q=np.concatenate([q, k, v], -1), sk=i32([S - 1] * B), t=i32(S), c=c16, s=s16), do_rotary=1)
    q1, k1, v1 = r(B, 1, D), r(B, 1, KD), r(B, 1, KD)
    gqa("gqa_rotary_decode_ragged", rfull, dict(q=q1, k=k1, v=v1, pk=r(B, KVN, 7, H), pv=r(B, KVN, 7, H), sk=i32([2, 6]), t=i32(7), c=c8, s=s8),
        do_rotary=1)
    gqa("gqa_rotary_past_three_tokens_interleaved", rfull, dict(q=q[:1], k=k[:1], v=v[:1], pk=r(1, KVN, 3, H), pv=r(1, KVN, 3, H),
                                                                sk=i32([5]), t=i32(6), c=c16, s=s16), do_rotary=1, rotary_interleaved=1)
    attention23_cases()


def attention23_cases():
    """Opset 23's Attention, which the pinned onnx and onnxruntime do not know: from
    scripts/onnx23_attention_fixtures.py, run in target/onnx23-venv (onnx 1.19.1 and numpy
    1.26.4, pinned; made here if it is missing), whose reference evaluator is the oracle."""
    import subprocess
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    venv = os.path.join(root, "target", "onnx23-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    if subprocess.run([py, "-c", "import onnx, numpy; assert onnx.__version__ == '1.19.1'"], capture_output=True).returncode != 0:
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "onnx==1.19.1", "numpy==1.26.4"], check=True)
    gen = os.path.join(root, "scripts", "onnx23_attention_fixtures.py")
    out = subprocess.run([py, gen, OUT], check=True, capture_output=True, text=True).stdout
    MANIFEST.extend(json.loads(out))


if __name__ == "__main__":
    main()
