"""Random per-operator ONNX cases, with onnxruntime as the oracle: a differential fuzzer.

Usage: python scripts/onnx_fuzz.py OUT_DIR [COUNT] [SEED]

Writes OUT_DIR/manifest.json in the layout of scripts/onnx_fixtures.py (kind "ops"): random
shapes, attributes and broadcasts for the operators CNNs and MLPs use, and onnxruntime's transformer
contrib operators (fused GELUs, skip and RMS layer normalisations, EmbedLayerNormalization,
RotaryEmbedding, and the attention family: MultiHeadAttention, GroupQueryAttention, Attention). A draw that onnxruntime
rejects (an invalid attribute combination) is skipped. Run the cases on every native backend
with

    PIXELGRAD_ONNX_CASES=OUT_DIR cargo test -p pixelgrad-onnx --test fuzz -- --ignored --nocapture

(`bash scripts/onnx-diff-fuzz.sh COUNT SEED` does both). Not part of CI: a failing seed is a new fixture for
scripts/onnx_fixtures.py.
"""

import json
import os
import sys

import numpy as np

OUT = sys.argv[1]
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 200
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 1
# onnx_fixtures reads its output folder from argv[1] at import; it is the same folder here.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_fixtures as fx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

R = np.random.default_rng(SEED)
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def ri(lo, hi):
    """An integer in [lo, hi]."""
    return int(R.integers(lo, hi + 1))


def pick(xs):
    return xs[ri(0, len(xs) - 1)]


def rnd(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, size=shape).astype(np.float32)


def nd(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=f"{op.lower()}_0", **attrs)


def conv_like(transpose):
    dims = pick([1, 2, 2, 2])
    n, g = ri(1, 2), pick([1, 1, 1, 2, 3])
    cin = g * ri(1, 3)
    cout = g * ri(1, 3)
    if not transpose and R.random() < 0.2:
        # depthwise
        g = cin = ri(2, 6)
        cout = cin * ri(1, 2)
    k = [ri(1, 4) for _ in range(dims)]
    s = [ri(1, 3) for _ in range(dims)]
    d = [pick([1, 1, 2]) for _ in range(dims)]
    size = [ri(max(3, (k[i] - 1) * d[i] + 1), 12) for i in range(dims)]
    attrs = {"kernel_shape": k, "strides": s, "dilations": d, "group": g}
    mode = pick(["pads", "pads", "SAME_UPPER", "SAME_LOWER", "VALID", "none"])
    if mode == "pads":
        attrs["pads"] = [ri(0, k[i % dims] - 1 if k[i % dims] > 1 else 1) for i in range(2 * dims)]
    elif mode != "none":
        attrs["auto_pad"] = mode
    if transpose:
        if R.random() < 0.5:
            # below the stride: onnxruntime 1.20 leaves the extra rows unwritten when
            # output_padding >= stride (allowed up to the dilation, which pixelgrad does)
            attrs["output_padding"] = [ri(0, s[i] - 1) for i in range(dims)]
        w = rnd(cin, cout // g, *k)
    else:
        w = rnd(cout, cin // g, *k)
    x = rnd(n, cin, *size)
    inits = [("w", w)]
    ins = ["x", "w"]
    if R.random() < 0.6:
        inits.append(("b", rnd(cout)))
        ins.append("b")
    op = "ConvTranspose" if transpose else "Conv"
    return op, [nd(op, ins, ["y"], **attrs)], [("x", x, None)], [("y", F)], inits, 13


def pool():
    op = pick(["MaxPool", "AveragePool", "MaxPool", "AveragePool", "LpPool"])
    dims = pick([1, 2, 2])
    k = [ri(1, 4) for _ in range(dims)]
    s = [ri(1, 3) for _ in range(dims)]
    size = [ri(max(k[i], 2), 11) for i in range(dims)]
    attrs = {"kernel_shape": k, "strides": s}
    mode = pick(["pads", "SAME_UPPER", "SAME_LOWER", "VALID", "none"])
    if mode == "pads":
        attrs["pads"] = [ri(0, k[i % dims] - 1) for i in range(2 * dims)]
    elif mode != "none":
        attrs["auto_pad"] = mode
    opset = 13
    if op != "LpPool" and R.random() < 0.4:
        attrs["ceil_mode"] = 1
    if op == "AveragePool" and R.random() < 0.5:
        attrs["count_include_pad"] = 1
    if op == "MaxPool" and R.random() < 0.3 and "auto_pad" not in attrs:
        # (onnxruntime 1.20 sizes SAME with dilations from the undilated kernel, unlike the
        # ONNX spec's formula, which pixelgrad follows: not drawn)
        attrs["dilations"] = [pick([1, 2]) for _ in range(dims)]
    if op == "LpPool":
        attrs["p"] = pick([1, 2, 3])
        opset = 18 if R.random() < 0.5 else 13
        if opset == 13:
            attrs.pop("auto_pad", None)
    if attrs.get("ceil_mode") and not ceil_windows_start_inside(size, attrs):
        # onnxruntime 1.20 keeps a last window that starts past the input and its padding,
        # with 0 (average) or -FLT_MAX (max) in it; ONNX and PyTorch drop it, as pixelgrad does
        return pool()
    x = rnd(ri(1, 2), ri(1, 4), *size)
    return op, [nd(op, ["x"], ["y"], **attrs)], [("x", x, None)], [("y", F)], [], opset


def ceil_windows_start_inside(size, attrs):
    dims = len(size)
    k, s = attrs["kernel_shape"], attrs["strides"]
    d = attrs.get("dilations", [1] * dims)
    for i in range(dims):
        ke = (k[i] - 1) * d[i] + 1
        if attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
            continue
        pads = attrs.get("pads", [0] * (2 * dims))
        pb, pe = pads[i], pads[i + dims]
        span = size[i] + pb + pe - ke
        out = -(-span // s[i]) + 1
        if out < 1 or (out - 1) * s[i] >= size[i] + pb:
            return False
    return True


def bshape(shape):
    """A shape that broadcasts against `shape`: a suffix with some axes set to 1."""
    keep = ri(0, len(shape))
    out = [d if R.random() < 0.6 else 1 for d in shape[len(shape) - keep:]]
    return out


def binary():
    op = pick(["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater", "Mod", "PRelu"])
    shape = [ri(1, 5) for _ in range(ri(1, 4))]
    other = bshape(shape)
    a, b = rnd(*shape), rnd(*other) if other else np.array(R.uniform(-1, 1), np.float32)
    if R.random() < 0.5:
        a, b = b, a
    if op == "Div":
        b = np.where(np.abs(b) < 0.2, 0.5, b).astype(np.float32)
    if op == "Pow":
        a = np.abs(a).astype(np.float32) + 0.1
    out = F
    nodes = [nd(op, ["a", "b"], ["y"])]
    if op in ("Equal", "Less", "Greater"):
        if op == "Equal":
            b = (np.round(b * 2) / 2).astype(np.float32)
            a = (np.round(a * 2) / 2).astype(np.float32)
        nodes = [nd(op, ["a", "b"], ["c"]), helper.make_node("Cast", ["c"], ["y"], name="cast", to=F)]
    if op == "Mod":
        nodes = [nd(op, ["a", "b"], ["y"], fmod=1)]
        b = np.where(np.abs(b) < 0.2, 0.5, b).astype(np.float32)
    if op == "PRelu":
        # slope broadcasts unidirectionally to x
        a, b = rnd(*shape), rnd(*bshape(shape)) if len(shape) else rnd(1)
    if R.random() < 0.5:
        return op, nodes, [("a", a, None)], [("y", out)], [("b", b)], 13
    return op, nodes, [("a", a, None), ("b", b, None)], [("y", out)], [], 13


def unary():
    op = pick(["Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Abs", "Neg", "Floor", "Ceil", "Round", "Erf", "LeakyRelu",
               "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Elu", "Selu", "Clip", "Sign", "Reciprocal", "Sin", "Cos",
               "Celu", "ThresholdedRelu", "Mish", "Gelu", "Atan", "Tan", "Asin", "Acos", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"])
    x = rnd(*[ri(1, 5) for _ in range(ri(1, 4))]) * 3
    attrs = {}
    opset = 18
    if op in ("Log", "Sqrt"):
        x = np.abs(x) + 0.05
    if op == "Reciprocal":
        x = np.where(np.abs(x) < 0.2, 0.7, x).astype(np.float32)
    if op in ("Asin", "Acos", "Atanh"):
        x = (x / 3.2).astype(np.float32)
    if op == "Acosh":
        x = np.abs(x) + 1.0
    if op == "LeakyRelu" and R.random() < 0.5:
        attrs["alpha"] = float(R.uniform(0, 0.5))
    if op in ("Elu", "Celu") and R.random() < 0.5:
        attrs["alpha"] = float(R.uniform(0.2, 2))
    if op == "HardSigmoid":
        attrs = {"alpha": float(R.uniform(0.1, 0.5)), "beta": float(R.uniform(0.2, 0.8))}
    if op == "ThresholdedRelu":
        attrs["alpha"] = float(R.uniform(0, 1))
    if op == "Gelu":
        opset = 20
        if R.random() < 0.5:
            attrs["approximate"] = "tanh"
    inits, ins = [], ["x"]
    if op == "Clip":
        lo, hi = sorted(R.uniform(-2, 2, 2))
        form = pick(["both", "min", "max"])
        ins = ["x", "lo" if form != "max" else "", "hi" if form != "min" else ""]
        if form != "max":
            inits.append(("lo", np.array(lo, np.float32)))
        if form != "min":
            inits.append(("hi", np.array(hi, np.float32)))
    x = x.astype(np.float32)
    return op, [nd(op, ins, ["y"], **attrs)], [("x", x, None)], [("y", F)], inits, opset


def reduce():
    op = pick(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
               "ReduceSumSquare", "ReduceLogSum", "ArgMax", "ArgMin"])
    rank = ri(1, 4)
    shape = [ri(1, 5) for _ in range(rank)]
    x = rnd(*shape)
    if op == "ReduceLogSum":
        x = np.abs(x) + 0.1
    if op == "ReduceProd":
        x = (x * 0.5 + np.sign(x) * 0.75).astype(np.float32)
    if op in ("ArgMax", "ArgMin"):
        attrs = {"axis": ri(-rank, rank - 1), "keepdims": ri(0, 1)}
        if R.random() < 0.5:
            attrs["select_last_index"] = 1
            x = np.round(x * 2).astype(np.float32)
        return op, [nd(op, ["x"], ["y"], **attrs)], [("x", x, None)], [("y", I64)], [], 13
    axes = sorted(set(ri(-rank, rank - 1) % rank for _ in range(ri(0, rank))))
    axes = [a - rank if R.random() < 0.3 else a for a in axes]
    keep = ri(0, 1)
    opset = 18
    attrs = {"keepdims": keep}
    ins, inits = ["x"], []
    if axes:
        ins.append("axes")
        inits.append(("axes", np.array(axes, np.int64)))
    elif R.random() < 0.3 and op not in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"):
        # (onnxruntime 1.20 reduces these anyway, over one element; the ONNX reference and
        # pixelgrad return the input)
        attrs["noop_with_empty_axes"] = 1
    return op, [nd(op, ins, ["y"], **attrs)], [("x", x, None)], [("y", F)], inits, opset


def softmax():
    op = pick(["Softmax", "LogSoftmax", "Hardmax"])
    rank = ri(1, 4)
    x = rnd(*[ri(1, 6) for _ in range(rank)]) * 4
    return op, [nd(op, ["x"], ["y"], axis=ri(-rank, rank - 1))], [("x", x, None)], [("y", F)], [], 13


def movement():
    kind = pick(["Transpose", "Reshape", "Slice", "Concat", "Split", "Pad", "Gather", "Tile", "Expand", "Flatten",
                 "Squeeze", "Unsqueeze", "DepthToSpace", "SpaceToDepth", "GatherElements", "CumSum", "TopK"])
    rank = ri(1, 4)
    shape = [ri(1, 5) for _ in range(rank)]
    x = rnd(*shape)
    out = [("y", F)]
    if kind == "Transpose":
        perm = [int(p) for p in R.permutation(rank)]
        return kind, [nd(kind, ["x"], ["y"], perm=perm)], [("x", x, None)], out, [], 13
    if kind == "Reshape":
        total = int(np.prod(shape))
        # factor total into up to 4 dims, then maybe a -1 or a 0
        dims = []
        rest = total
        for _ in range(ri(1, 3)):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = pick(divs)
            dims.append(d)
            rest //= d
        dims.append(rest)
        if R.random() < 0.5:
            dims[ri(0, len(dims) - 1)] = -1
        return kind, [nd(kind, ["x", "s"], ["y"])], [("x", x, None)], out, [("s", np.array(dims, np.int64))], 13
    if kind == "Slice":
        axes = sorted(set(ri(0, rank - 1) for _ in range(ri(1, rank))))
        starts, ends, steps = [], [], []
        for a in axes:
            n = shape[a]
            st = pick([1, 1, 2, -1, -2])
            s0 = ri(-n - 1, n + 1)
            e0 = pick([ri(-n - 1, n + 1), 2**31, -(2**31)])
            starts.append(s0)
            ends.append(e0)
            steps.append(st)
        inits = [("st", np.array(starts, np.int64)), ("en", np.array(ends, np.int64)),
                 ("ax", np.array([a - rank if R.random() < 0.3 else a for a in axes], np.int64)), ("sp", np.array(steps, np.int64))]
        return kind, [nd(kind, ["x", "st", "en", "ax", "sp"], ["y"])], [("x", x, None)], out, inits, 13
    if kind == "Concat":
        axis = ri(0, rank - 1)
        parts = []
        for i in range(ri(1, 3)):
            s = list(shape)
            s[axis] = ri(1, 4)
            parts.append((f"x{i}", rnd(*s), None))
        return kind, [nd(kind, [p[0] for p in parts], ["y"], axis=axis - rank if R.random() < 0.3 else axis)], parts, out, [], 13
    if kind == "Split":
        axis = ri(0, rank - 1)
        n = shape[axis]
        if n < 2:
            shape[axis] = n = 4
            x = rnd(*shape)
        cut = ri(1, n - 1)
        inits = [("sp", np.array([cut, n - cut], np.int64))]
        return kind, [nd(kind, ["x", "sp"], ["y", "z"], axis=axis)], [("x", x, None)], [("y", F), ("z", F)], inits, 13
    if kind == "Pad":
        mode = pick(["constant", "reflect", "edge"])
        pads = []
        for half in range(2):
            for a in range(rank):
                lim = shape[a] - 1 if mode == "reflect" else 3
                pads.append(ri(0 if mode != "constant" else -1, max(0, lim)) if shape[a] > 1 or mode != "reflect" else 0)
        if any(max(0, -pads[a]) + max(0, -pads[a + rank]) >= shape[a] for a in range(rank)):
            # onnxruntime 1.20 leaves such an output unwritten (pixelgrad fills it with the value)
            return movement()
        inits = [("p", np.array(pads, np.int64))]
        ins = ["x", "p"]
        if mode == "constant" and R.random() < 0.5:
            inits.append(("c", np.array(R.uniform(-2, 2), np.float32)))
            ins.append("c")
        return kind, [nd(kind, ins, ["y"], mode=mode)], [("x", x, None)], out, inits, 13
    if kind == "Gather":
        axis = ri(-rank, rank - 1)
        n = shape[axis]
        idx = R.integers(-n, n, size=[ri(1, 3) for _ in range(ri(0, 2))]).astype(np.int64)
        return kind, [nd(kind, ["x", "i"], ["y"], axis=axis)], [("x", x, None)], out, [("i", idx)], 13
    if kind == "GatherElements":
        axis = ri(-rank, rank - 1)
        n = shape[axis]
        ishape = list(shape)
        ishape[axis] = ri(1, 4)
        idx = R.integers(-n, n, size=ishape).astype(np.int64)
        return kind, [nd(kind, ["x", "i"], ["y"], axis=axis)], [("x", x, None)], out, [("i", idx)], 13
    if kind == "Tile":
        return kind, [nd(kind, ["x", "r"], ["y"])], [("x", x, None)], out, [("r", np.array([ri(1, 3) for _ in range(rank)], np.int64))], 13
    if kind == "Expand":
        tgt = [d if d != 1 else ri(1, 3) for d in shape]
        tgt = [ri(1, 3) for _ in range(ri(0, 1))] + tgt
        tgt = [t if R.random() < 0.8 else 1 for t in tgt]
        return kind, [nd(kind, ["x", "s"], ["y"])], [("x", x, None)], out, [("s", np.array(tgt, np.int64))], 13
    if kind == "Flatten":
        return kind, [nd(kind, ["x"], ["y"], axis=ri(-rank, rank))], [("x", x, None)], out, [], 13
    if kind == "Squeeze":
        ones = [i for i, d in enumerate(shape) if d == 1]
        if not ones:
            shape.insert(ri(0, rank), 1)
            x = rnd(*shape)
            ones = [i for i, d in enumerate(shape) if d == 1]
        ax = sorted(set(pick(ones) for _ in range(ri(1, len(ones)))))
        return kind, [nd(kind, ["x", "a"], ["y"])], [("x", x, None)], out, [("a", np.array(ax, np.int64))], 13
    if kind == "Unsqueeze":
        k = ri(1, 2)
        ax = sorted(set(ri(-(rank + k), rank + k - 1) for _ in range(k)), key=lambda a: a % (rank + k))
        if len(set(a % (rank + k) for a in ax)) != len(ax):
            ax = [0]
        return kind, [nd(kind, ["x", "a"], ["y"])], [("x", x, None)], out, [("a", np.array(ax, np.int64))], 13
    if kind in ("DepthToSpace", "SpaceToDepth"):
        b = ri(2, 3)
        if kind == "DepthToSpace":
            x = rnd(ri(1, 2), b * b * ri(1, 2), ri(1, 4), ri(1, 4))
            attrs = {"blocksize": b, "mode": pick(["DCR", "CRD"])}
        else:
            x = rnd(ri(1, 2), ri(1, 3), b * ri(1, 3), b * ri(1, 3))
            attrs = {"blocksize": b}
        return kind, [nd(kind, ["x"], ["y"], **attrs)], [("x", x, None)], out, [], 13
    if kind == "CumSum":
        return kind, [nd(kind, ["x", "a"], ["y"], exclusive=ri(0, 1), reverse=ri(0, 1))], [("x", x, None)], out, \
            [("a", np.array(ri(-rank, rank - 1), np.int64))], 13
    # TopK
    axis = ri(-rank, rank - 1)
    k = ri(1, shape[axis])
    return kind, [nd(kind, ["x", "k"], ["y", "i"], axis=axis, largest=ri(0, 1), sorted=1)], [("x", x, None)], \
        [("y", F), ("i", I64)], [("k", np.array([k], np.int64))], 13


def linalg():
    kind = pick(["Gemm", "MatMul", "MatMul", "Einsum"])
    if kind == "Gemm":
        m, k, n = ri(1, 6), ri(1, 6), ri(1, 6)
        ta, tb = ri(0, 1), ri(0, 1)
        a = rnd(k, m) if ta else rnd(m, k)
        b = rnd(n, k) if tb else rnd(k, n)
        attrs = {"transA": ta, "transB": tb}
        if R.random() < 0.5:
            attrs["alpha"] = float(R.uniform(-2, 2))
        if R.random() < 0.5:
            attrs["beta"] = float(R.uniform(-2, 2))
        ins, inits = ["a", "b"], [("b", b)]
        if R.random() < 0.7:
            cs = pick([[], [n], [1, n], [m, 1], [m, n], [1]])
            inits.append(("c", rnd(*cs) if cs else np.array(R.uniform(-1, 1), np.float32)))
            ins.append("c")
        return kind, [nd(kind, ins, ["y"], **attrs)], [("a", a, None)], [("y", F)], inits, 13
    if kind == "MatMul":
        m, k, n = ri(1, 6), ri(1, 6), ri(1, 6)
        batch = [ri(1, 3) for _ in range(ri(0, 2))]
        ba = [d if R.random() < 0.7 else 1 for d in batch][len(batch) - ri(0, len(batch)):]
        bb = [d if R.random() < 0.7 else 1 for d in batch][len(batch) - ri(0, len(batch)):]
        sa = ba + [m, k] if R.random() < 0.85 else [k]
        sb = bb + [k, n] if R.random() < 0.85 else [k]
        return kind, [nd(kind, ["a", "b"], ["y"])], [("a", rnd(*sa), None), ("b", rnd(*sb), None)], [("y", F)], [], 13
    eq, shapes = pick([
        ("ij,jk->ik", [[3, 4], [4, 5]]), ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]), ("ij->ji", [[3, 4]]), ("ii->i", [[4, 4]]),
        ("i,i->", [[5], [5]]), ("ij,ij->i", [[3, 4], [3, 4]]), ("bhqd,bhkd->bhqk", [[1, 2, 3, 4], [1, 2, 5, 4]]),
        ("...ij,...jk->...ik", [[2, 3, 4], [4, 2]]), ("ijk->kji", [[2, 3, 4]]), ("ij,k->ijk", [[2, 3], [4]]), ("ii", [[3, 3]]),
    ])
    parts = [(f"x{i}", rnd(*s), None) for i, s in enumerate(shapes)]
    return kind, [nd(kind, [p[0] for p in parts], ["y"], equation=eq)], parts, [("y", F)], [], 13


def norm():
    kind = pick(["BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization",
                 "GlobalAveragePool", "GlobalMaxPool", "LRN", "MeanVarianceNormalization", "LpNormalization"])
    rank = ri(3, 4)
    c = ri(1, 6)
    shape = [ri(1, 3), c] + [ri(1, 5) for _ in range(rank - 2)]
    x = rnd(*shape) * 2
    if kind == "BatchNormalization":
        inits = [("s", rnd(c, lo=0.5, hi=1.5)), ("b", rnd(c)), ("m", rnd(c)), ("v", rnd(c, lo=0.3, hi=2))]
        return kind, [nd(kind, ["x", "s", "b", "m", "v"], ["y"], epsilon=float(R.uniform(1e-5, 1e-2)))], [("x", x, None)], [("y", F)], inits, 15
    if kind == "InstanceNormalization":
        return kind, [nd(kind, ["x", "s", "b"], ["y"])], [("x", x, None)], [("y", F)], [("s", rnd(c)), ("b", rnd(c))], 13
    if kind == "LayerNormalization":
        axis = ri(-rank, rank - 1)
        ns = shape[axis:]
        return kind, [nd(kind, ["x", "s", "b"], ["y"], axis=axis)], [("x", x, None)], [("y", F)], [("s", rnd(*ns)), ("b", rnd(*ns))], 17
    if kind == "GroupNormalization":
        g = pick([d for d in range(1, c + 1) if c % d == 0])
        return kind, [nd(kind, ["x", "s", "b"], ["y"], num_groups=g)], [("x", x, None)], [("y", F)], [("s", rnd(c)), ("b", rnd(c))], 21
    if kind == "LRN":
        x = rnd(ri(1, 2), c, ri(1, 4), ri(1, 4))
        return kind, [nd(kind, ["x"], ["y"], size=pick([1, 3, 5]), alpha=float(R.uniform(1e-4, 1e-1)), beta=float(R.uniform(0.5, 1)),
                         bias=float(R.uniform(0.5, 2)))], [("x", x, None)], [("y", F)], [], 13
    if kind == "MeanVarianceNormalization":
        return kind, [nd(kind, ["x"], ["y"])], [("x", x, None)], [("y", F)], [], 13
    if kind == "LpNormalization":
        return kind, [nd(kind, ["x"], ["y"], axis=ri(-rank, rank - 1), p=pick([1, 2]))], [("x", x, None)], [("y", F)], [], 13
    return kind, [nd(kind, ["x"], ["y"])], [("x", x, None)], [("y", F)], [], 13


def resize():
    n, c, h, w = ri(1, 2), ri(1, 3), ri(1, 6), ri(1, 6)
    x = rnd(n, c, h, w)
    mode = pick(["nearest", "linear", "cubic"])
    ctm = pick(["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"])
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "nearest":
        attrs["nearest_mode"] = pick(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
    if mode == "cubic" and R.random() < 0.5:
        attrs["cubic_coeff_a"] = -0.5
        attrs["exclude_outside"] = 1
    if R.random() < 0.5:
        scales = np.array([1, 1, pick([0.5, 1.0, 1.5, 2.0, 3.0, 0.75]), pick([0.5, 1.0, 1.5, 2.0, 3.0, 0.75])], np.float32)
        return "Resize", [nd("Resize", ["x", "", "sc"], ["y"], **attrs)], [("x", x, None)], [("y", F)], [("sc", scales)], 19
    sizes = np.array([n, c, ri(1, 9), ri(1, 9)], np.int64)
    return "Resize", [nd("Resize", ["x", "", "", "sz"], ["y"], **attrs)], [("x", x, None)], [("y", F)], [("sz", sizes)], 19


def chain():
    """A small graph: 3-8 nodes of elementwise ops (broadcasting against inputs, constants and
    each other), reductions, softmax, transposes and products, with an intermediate value as a
    second output sometimes. Exercises the backends' fusion of elementwise chains."""
    pool = []  # (name, shape)
    inputs, inits, nodes = [], [], []
    rank = ri(1, 4)
    # sometimes large enough for the GPU backends' tiled and blocked paths
    big = R.random() < 0.3
    shape = [ri(1, 5) for _ in range(rank)]
    if big:
        shape[-1] = ri(30, 130)
        if rank >= 2:
            shape[-2] = ri(8, 70)
    inputs.append(("x0", rnd(*shape) * 2, None))
    pool.append(("x0", shape))
    if R.random() < 0.5:
        s2 = bshape(shape)
        inputs.append(("x1", rnd(*s2) if s2 else np.array(R.uniform(-1, 1), np.float32), None))
        pool.append(("x1", s2))
    count = 0

    def fresh():
        nonlocal count
        count += 1
        return f"t{count}"

    def const_i64(v):
        name = f"c{len(inits)}"
        inits.append((name, np.array(v, np.int64)))
        return name

    def const(shp, lo=-1.0, hi=1.0):
        name = f"c{len(inits)}"
        inits.append((name, rnd(*shp, lo=lo, hi=hi) if shp else np.array(R.uniform(lo, hi), np.float32)))
        return name

    for _ in range(ri(3, 8)):
        a, sa = pool[ri(max(0, len(pool) - 3), len(pool) - 1)]
        kind = pick(["unary", "unary", "binary", "binary", "binary", "reduce", "softmax", "transpose", "matmul", "where", "affine"])
        out = fresh()
        if kind == "unary":
            op = pick(["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Softsign", "Sin", "Cos", "Erf", "LeakyRelu", "HardSigmoid",
                       "HardSwish", "Elu", "Softplus"])
            nodes.append(helper.make_node(op, [a], [out], name=f"n{count}"))
            pool.append((out, sa))
        elif kind == "binary":
            op = pick(["Add", "Sub", "Mul", "Max", "Min", "Div"])
            # the other operand: an earlier value that broadcasts, or a constant
            cands = [(n, sh) for n, sh in pool if n != a and broadcastable(sa, sh)]
            if cands and R.random() < 0.5 and op != "Div":
                b, sb = pick(cands)
            else:
                sb = bshape(sa)
                b = const(sb, 0.5, 1.5) if op == "Div" else const(sb)
            if R.random() < 0.5 and op not in ("Div", "Sub"):
                a, b, sa, sb = b, a, sb, sa
            nodes.append(helper.make_node(op, [a, b], [out], name=f"n{count}"))
            pool.append((out, list(np.broadcast_shapes(tuple(sa), tuple(sb)))))
        elif kind == "affine":
            # x * c + d with scalar constants: the backends' scalar-affine fusion
            t = fresh()
            nodes.append(helper.make_node("Mul", [a, const([])], [t], name=f"n{count}a"))
            nodes.append(helper.make_node("Add", [t, const([])], [out], name=f"n{count}b"))
            pool.append((out, sa))
        elif kind == "reduce" and len(sa) >= 1:
            op = pick(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"])
            axes = sorted(set(ri(0, len(sa) - 1) for _ in range(ri(1, len(sa)))))
            keep = ri(0, 1)
            if not keep and len(axes) == len(sa):
                keep = 1
            if op == "ReduceSum":  # axes as an input from opset 13
                nodes.append(helper.make_node(op, [a, const_i64(axes)], [out], name=f"n{count}", keepdims=keep))
            else:
                nodes.append(helper.make_node(op, [a], [out], name=f"n{count}", axes=axes, keepdims=keep))
            pool.append((out, [d if i not in axes else 1 for i, d in enumerate(sa)] if keep else [d for i, d in enumerate(sa) if i not in axes]))
        elif kind == "softmax" and len(sa) >= 1:
            nodes.append(helper.make_node(pick(["Softmax", "LogSoftmax"]), [a], [out], name=f"n{count}", axis=ri(-len(sa), len(sa) - 1)))
            pool.append((out, sa))
        elif kind == "transpose" and len(sa) >= 2:
            perm = [int(p) for p in R.permutation(len(sa))]
            nodes.append(helper.make_node("Transpose", [a], [out], name=f"n{count}", perm=perm))
            pool.append((out, [sa[p] for p in perm]))
        elif kind == "matmul" and len(sa) >= 1:
            m = ri(1, 6) if R.random() < 0.6 else ri(20, 70)
            w = const([sa[-1], m])
            nodes.append(helper.make_node("MatMul", [a, w], [out], name=f"n{count}"))
            pool.append((out, sa[:-1] + [m]))
        elif kind == "where":
            cands = [(n, sh) for n, sh in pool if broadcastable(sa, sh)]
            b, sb = pick(cands)
            c = fresh()
            nodes.append(helper.make_node("Greater", [a, b], [c], name=f"n{count}g"))
            nodes.append(helper.make_node("Where", [c, a, b], [out], name=f"n{count}w"))
            pool.append((out, list(np.broadcast_shapes(tuple(sa), tuple(sb)))))
        else:
            nodes.append(helper.make_node("Relu", [a], [out], name=f"n{count}"))
            pool.append((out, sa))
    outs = [(pool[-1][0], F)]
    if len(pool) > 3 and R.random() < 0.4:
        mid = pool[ri(len(inputs), len(pool) - 2)][0]
        if mid != pool[-1][0]:
            outs.append((mid, F))
    return "chain", nodes, inputs, outs, inits, 14


def qt(shape, dtype):
    lo, hi = (0, 256) if dtype == np.uint8 else (-128, 128)
    return R.integers(lo, hi, size=shape).astype(dtype)


def qparams(dtype, n=None):
    """A scale (or n per-channel scales) and a zero point of `dtype`."""
    sc = R.uniform(0.002, 0.08, n).astype(np.float32) if n else np.array(R.uniform(0.002, 0.08), np.float32)
    lo, hi = (0, 256) if dtype == np.uint8 else (-128, 128)
    if n and dtype == np.int8 and R.random() < 0.7:
        zp = np.zeros(n, dtype)  # symmetric per-channel weights, as quantisers make them
    else:
        zp = R.integers(lo, hi, n).astype(dtype) if n else np.array(R.integers(lo, hi), dtype)
    return sc, zp


def quant():
    """Quantisation operators and QDQ patterns with random scales, zero points and shapes. 8-bit
    results may differ by one step from onnxruntime's (a requantised float can round either way
    at a half); int32 results are exact."""
    U8, I8, I32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
    ta = pick([np.uint8, np.int8])
    tt = U8 if ta == np.uint8 else I8
    kind = pick(["Q", "DQ", "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "QDQConv", "QDQMatMul"])
    opset = pick([13, 19, 21]) if kind in ("Q", "DQ") else 13
    if kind in ("Q", "DQ"):
        shape = [ri(1, 4), ri(1, 6), ri(1, 7)]
        attrs = {}
        if R.random() < 0.5:
            attrs["axis"] = ri(-3, 2)
            sc, zp = qparams(ta, shape[attrs["axis"]])
        else:
            sc, zp = qparams(ta)
        if kind == "Q":
            x = rnd(*shape) * pick([1, 3, 10])
            return "quantizelinear", [nd("QuantizeLinear", ["x", "s", "z"], ["y"], **attrs)], [("x", x, None)], [("y", tt)], \
                [("s", sc), ("z", zp)], opset, 1.0
        return "dequantizelinear", [nd("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs)], [("q", qt(shape, ta), None)], [("y", F)], \
            [("s", sc), ("z", zp)], opset, None
    if kind in ("QLinearConv", "ConvInteger", "QDQConv"):
        g = pick([1, 1, 2])
        cin, cout = g * ri(1, 4), g * ri(1, 4)
        k = [ri(1, 3), ri(1, 3)]
        x = qt([ri(1, 2), cin, ri(max(3, k[0]), 9), ri(max(3, k[1]), 9)], ta)
        wt = np.int8 if kind != "ConvInteger" or R.random() < 0.5 else np.uint8
        w = qt([cout, cin // g] + k, wt)
        attrs = {"group": g, "strides": [ri(1, 2), ri(1, 2)], "pads": [ri(0, k[0] - 1), ri(0, k[1] - 1), ri(0, k[0] - 1), ri(0, k[1] - 1)]}
        xs, xz = qparams(ta)
        ws, wz = qparams(wt, cout) if R.random() < 0.5 and kind != "ConvInteger" else qparams(wt)
        if kind == "ConvInteger":
            return "convinteger", [nd("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)], [("x", x, None)], [("y", I32)], \
                [("w", w), ("xz", xz), ("wz", wz if wz.ndim == 0 else wz[:1].reshape(()))], 13, 0.0
        ys, yz = np.array(R.uniform(0.01, 0.3), np.float32), np.array(R.integers(0, 256) if ta == np.uint8 else R.integers(-128, 128), ta)
        b = R.integers(-3000, 3000, size=(cout,)).astype(np.int32)
        if kind == "QLinearConv":
            ins = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if R.random() < 0.6 else [])
            inits = [("xs", xs), ("xz", xz), ("w", w), ("ws", ws), ("wz", wz), ("ys", ys), ("yz", yz), ("b", b)]
            return "qlinearconv", [nd("QLinearConv", ins, ["y"], **attrs)], [("x", x, None)], [("y", tt)], [i for i in inits if i[0] in ins], 13, 1.0
        # QDQ: DequantizeLinear -> Conv (float) -> QuantizeLinear
        nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"], name="dqx"),
                 helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="dqw", axis=0),
                 helper.make_node("Conv", ["xf", "wf"], ["yf"], name="conv", **attrs),
                 helper.make_node("Relu", ["yf"], ["yr"], name="relu"),
                 helper.make_node("QuantizeLinear", ["yr", "ys", "yz"], ["y"], name="qy")]
        return "qdqconv", nodes, [("x", x, None)], [("y", tt)], [("xs", xs), ("xz", xz), ("w", w), ("ws", ws), ("wz", wz), ("ys", ys), ("yz", yz)], 13, 1.0
    m, k, n = ri(1, 6), ri(1, 24), ri(1, 8)
    a = qt([ri(1, 3), m, k] if R.random() < 0.4 else [m, k], ta)
    wt = pick([np.uint8, np.int8])
    b = qt([k, n], wt)
    as_, az = qparams(ta)
    bs, bz = qparams(wt, n) if R.random() < 0.4 and kind != "MatMulInteger" else qparams(wt)
    if kind == "MatMulInteger":
        return "matmulinteger", [nd("MatMulInteger", ["a", "b", "az", "bz"], ["y"])], [("a", a, None)], [("y", I32)], \
            [("b", b), ("az", az), ("bz", bz)], 13, 0.0
    ys, yz = np.array(R.uniform(0.01, 0.3), np.float32), np.array(R.integers(0, 256) if ta == np.uint8 else R.integers(-128, 128), ta)
    if kind == "QLinearMatMul":
        if bs.ndim:
            bs, bz = bs[:1].reshape(()), bz[:1].reshape(())
        return "qlinearmatmul", [nd("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])], [("a", a, None)], [("y", tt)], \
            [("as", as_), ("az", az), ("b", b), ("bs", bs), ("bz", bz), ("ys", ys), ("yz", yz)], 13, 1.0
    nodes = [helper.make_node("DequantizeLinear", ["a", "as", "az"], ["af"], name="dqa"),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bf"], name="dqb", axis=1),
             helper.make_node("MatMul", ["af", "bf"], ["yf"], name="mm"),
             helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"], name="qy")]
    return "qdqmatmul", nodes, [("a", a, None)], [("y", tt)], [("as", as_), ("az", az), ("b", b), ("bs", bs), ("bz", bz), ("ys", ys), ("yz", yz)], 13, 1.0


def contrib():
    """onnxruntime's transformer contrib operators: the fused GELUs and the (skip, RMS) layer
    normalisations, with random shapes, optional inputs and attributes."""
    kind = pick(["Gelu", "FastGelu", "BiasGelu", "QuickGelu", "SimplifiedLayerNormalization", "SkipLayerNormalization",
                 "SkipSimplifiedLayerNormalization"])
    ms = dict(domain="com.microsoft")
    rank = ri(2, 3)
    shape = [ri(1, 3) for _ in range(rank - 1)] + [ri(1, 9)]
    h = shape[-1]
    x = rnd(*shape) * 3
    if kind in ("Gelu", "QuickGelu"):
        attrs = {"alpha": float(R.uniform(-2, 3))} if kind == "QuickGelu" and R.random() < 0.7 else {}
        return kind, [nd(kind, ["x"], ["y"], **ms, **attrs)], [("x", x, None)], [("y", F)], [], 13
    if kind in ("FastGelu", "BiasGelu"):
        ins = ["x"] if kind == "FastGelu" and R.random() < 0.4 else ["x", "b"]
        return kind, [nd(kind, ins, ["y"], **ms)], [("x", x, None)], [("y", F)], [("b", rnd(h))][:len(ins) - 1], 13
    if kind == "SimplifiedLayerNormalization":
        axis = ri(-rank, rank - 1)
        attrs = {"axis": axis} if R.random() < 0.8 else {}
        if R.random() < 0.5:
            attrs["epsilon"] = float(R.uniform(1e-6, 1e-1))
        ns = shape[attrs.get("axis", -1):]
        return kind, [nd(kind, ["x", "s"], ["y"], **attrs)], [("x", x, None)], [("y", F)], [("s", rnd(*ns))], 17
    simplified = kind == "SkipSimplifiedLayerNormalization"
    skip_shape = pick([shape, shape[1:]] + ([[1] + shape[1:]] if rank == 3 else [])) if rank == 3 else shape
    inits = [("g", rnd(h))]
    ins = ["x", "k", "g"]
    for name in (["bi"] if simplified else ["be", "bi"]):
        if R.random() < 0.6:
            ins.append(name)
            inits.append((name, rnd(h)))
        elif name == "be":
            ins.append("")
    while ins[-1] == "":
        ins.pop()
    attrs = {"epsilon": float(R.uniform(1e-12, 1e-2))} if R.random() < 0.5 else {}
    outs, vo = (["y", "", "", "sum"], [("y", F), ("sum", F)]) if R.random() < 0.5 else (["y"], [("y", F)])
    return kind, [nd(kind, ins, outs, **ms, **attrs)], [("x", x, None), ("k", rnd(*skip_shape), None)], vo, inits, 13


def rotary_embed():
    """onnxruntime's RotaryEmbedding (3-D and 4-D inputs, a start position or one per token,
    partial and interleaved rotations) and EmbedLayerNormalization (optional segments, mask,
    position ids, epsilon), with random shapes."""
    ms = dict(domain="com.microsoft")
    if R.random() < 0.6:
        b, s, n, h = ri(1, 3), ri(1, 4), ri(1, 3), 2 * ri(1, 5)
        rd = pick([0, 0, 2 * ri(1, h // 2)])
        m = s + ri(0, 4)
        attrs = {"rotary_embedding_dim": rd, "num_heads": n} if rd else ({"num_heads": n} if R.random() < 0.3 else {})
        if R.random() < 0.5:
            attrs["interleaved"] = 1
        x = rnd(b, n, s, h) if R.random() < 0.4 else rnd(b, s, n * h)
        pos = np.array([ri(0, m - s)], np.int64) if R.random() < 0.4 else R.integers(0, m, size=(b, s)).astype(np.int64)
        half = (rd or h) // 2
        return ("RotaryEmbedding", [nd("RotaryEmbedding", ["x", "p", "c", "s"], ["y"], **ms, **attrs)], [("x", x, None), ("p", pos, None)],
                [("y", F)], [("c", rnd(m, half)), ("s", rnd(m, half))], 13)
    b, s, hid = ri(1, 3), ri(1, 5), ri(1, 9)
    vocab, npos, nseg = ri(1, 9), s + ri(0, 3), ri(1, 3)
    ints = lambda hi, shape: R.integers(0, hi, size=shape).astype(np.int32)
    ins = ["i", "", "w", "pe", "", "ga", "be"]
    feeds = [("i", ints(vocab, (b, s)), None)]
    inits = [("w", rnd(vocab, hid)), ("pe", rnd(npos, hid)), ("ga", rnd(hid)), ("be", rnd(hid))]
    if R.random() < 0.6:
        ins[1], ins[4] = "g", "se"
        feeds.append(("g", ints(nseg, (b, s)), None))
        inits.append(("se", rnd(nseg, hid)))
    ins.append("m" if R.random() < 0.5 else "")
    if ins[-1]:
        feeds.append(("m", ints(2, (b, s)), None))
    if R.random() < 0.3:
        ins.append("pi")
        feeds.append(("pi", ints(npos, (pick([1, b]), s)), None))
    while ins[-1] == "":
        ins.pop()
    attrs = {"epsilon": float(R.uniform(1e-12, 1e-2))} if R.random() < 0.5 else {}
    outs = pick([["y", "mi"], ["y", "mi", "es"], ["y", "", "es"]])
    vo = [(o, TensorProto.INT32 if o == "mi" else F) for o in outs if o]
    return "EmbedLayerNormalization", [nd("EmbedLayerNormalization", ins, outs, **ms, **attrs)], feeds, vo, inits, 13


def attention():
    """onnxruntime's attention family (com.microsoft MultiHeadAttention, GroupQueryAttention and
    Attention) with random sizes, input forms and attributes, kept inside what onnxruntime
    1.20.1's CPU kernels compute correctly (scripts/onnx_fixtures.py `attention_cases` lists
    where they do not): a key mask or a causal mask only where the key length is the query
    length (plus a past), a past only with the present outputs asked for, Attention always with
    its bias, no attention_bias of shape [B, 1, S, T], GroupQueryAttention heads of 8 or 16."""
    ms = dict(domain="com.microsoft")
    i32 = lambda a: np.asarray(a, np.int32)
    kind = pick(["MultiHeadAttention", "MultiHeadAttention", "GroupQueryAttention", "Attention"])
    if kind == "GroupQueryAttention":
        b, kvn = ri(1, 2), pick([1, 2])
        n, h = kvn * pick([1, 2]), pick([8, 16])
        attrs = {"num_heads": n, "kv_num_heads": kvn}
        for name, draw in (("scale", lambda: float(R.uniform(0.1, 1.0))), ("softcap", lambda: float(R.uniform(0.5, 4.0))),
                           ("local_window_size", lambda: ri(1, 4)), ("smooth_softmax", lambda: 1)):
            if R.random() < 0.25:
                attrs[name] = draw()
        outs = [("y", F), ("present_key", F), ("present_value", F)]
        if R.random() < 0.5:
            # a prompt: S new tokens and no past
            s = ri(1, 5)
            q, k, v = rnd(b, s, n * h), rnd(b, s, kvn * h), rnd(b, s, kvn * h)
            feeds = [("sk", i32([s - 1] * b), None), ("t", i32(s), None)]
            if R.random() < 0.3:
                ins = ["q", "", "", "", "", "sk", "t"]
                feeds = [("q", np.concatenate([q, k, v], -1), None)] + feeds
            else:
                ins = ["q", "k", "v", "", "", "sk", "t"]
                feeds = [("q", q, None), ("k", k, None), ("v", v, None)] + feeds
        else:
            # one new token per sequence after ragged pasts, in a buffer at least as long
            past = [ri(0, 4) for _ in range(b)]
            buf = max(past) + ri(0, 3)
            buf = max(buf, 1)
            total = max(past) + 1
            ins = ["q", "k", "v", "pk", "pv", "sk", "t"]
            feeds = [("q", rnd(b, 1, n * h), None), ("k", rnd(b, 1, kvn * h), None), ("v", rnd(b, 1, kvn * h), None),
                     ("pk", rnd(b, kvn, buf, h), None), ("pv", rnd(b, kvn, buf, h), None), ("sk", i32(past), None), ("t", i32(total), None)]
        return kind, [nd(kind, ins, ["y", "present_key", "present_value"], **ms, **attrs)], feeds, outs, [], 13
    b, s, n, h = ri(1, 2), ri(1, 4), ri(1, 3), pick([2, 4, 8])
    d = n * h
    attrs = {"num_heads": n}
    if R.random() < 0.3:
        attrs["scale"] = float(R.uniform(0.1, 1.0))
    use_past = R.random() < 0.3
    p = ri(1, 3) if use_past else 0
    if kind == "Attention":
        width = ri(1, 6)
        hidden = [d, d, pick([d, h * ri(1, 2) * n])]
        w = rnd(width, sum(hidden))
        ins, feeds = ["x", "w", "b"], [("x", rnd(b, s, width), None)]
        inits = [("w", w), ("b", rnd(sum(hidden)))]
        if hidden[2] != d and not use_past:
            attrs["qkv_hidden_sizes"] = hidden
        else:
            inits = [("w", w[:, :3 * d]), ("b", rnd(3 * d))]
        t = p + s
        mask = pick([None, "lengths", "2d", "3d"])
        if mask == "3d" and use_past:
            mask = "2d"
        if R.random() < 0.4:
            attrs["unidirectional"] = 1
        if mask:
            m = {"lengths": lambda: i32([ri(1, t) for _ in range(b)]),
                 "2d": lambda: i32(R.integers(0, 2, (b, t))),
                 "3d": lambda: i32(R.integers(0, 2, (b, s, t)))}[mask]()
            if mask != "lengths":
                m[..., -1] = 1  # every query keeps a key: onnxruntime and the ops differ on an all-masked row
            ins.append("m")
            feeds.append(("m", m, None))
            if R.random() < 0.3:
                attrs["mask_filter_value"] = float(R.uniform(-20, -1))
        outs = [("y", F)]
        if use_past:
            ins += [""] * (4 - len(ins)) + ["past"]
            feeds.append(("past", rnd(2, b, n, p, h), None))
            outs.append(("present", F))
        elif R.random() < 0.3:
            ins += [""] * (5 - len(ins)) + ["ab"]
            feeds.append(("ab", rnd(pick([1, b]), n, s, s), None))
        return kind, [nd(kind, ins, [o for o, _ in outs], **ms, **attrs)], feeds, outs, inits, 13
    # MultiHeadAttention: separate q, k, v of T keys (T = S with a mask or a causal mask)
    masked = R.random() < 0.5
    t = s if (masked or use_past) else ri(1, 5)
    vw = d if use_past else pick([d, d, n * ri(1, 3)])
    ins = ["q", "k", "v"]
    feeds = [("q", rnd(b, s, d), None), ("k", rnd(b, t, d), None), ("v", rnd(b, t, vw), None)]
    if R.random() < 0.4 and vw == d:
        ins.append("bias")
        feeds.append(("bias", rnd(3 * d), None))
    total = p + t
    if masked:
        if R.random() < 0.4:
            attrs["unidirectional"] = 1
        form = pick(["lengths", "2d", "3d"]) if not use_past else pick(["lengths", "2d"])
        m = {"lengths": lambda: i32([ri(1, total) for _ in range(b)]),
             "2d": lambda: i32(R.integers(0, 2, (b, total))),
             "3d": lambda: i32(R.integers(0, 2, (b, s, total)))}[form]()
        if form != "lengths":
            m[..., -1] = 1
        ins += [""] * (4 - len(ins)) + ["m"]
        feeds.append(("m", m, None))
        if R.random() < 0.3:
            attrs["mask_filter_value"] = float(R.uniform(-20, -1))
    if R.random() < 0.3:
        ins += [""] * (5 - len(ins)) + ["ab"]
        feeds.append(("ab", rnd(pick([1, b]), n, s, total) if b > 1 else rnd(1, n, s, total), None))
    outs = [("y", F)]
    if use_past:
        ins += [""] * (6 - len(ins)) + ["pk", "pv"]
        feeds += [("pk", rnd(b, n, p, h), None), ("pv", rnd(b, n, p, h), None)]
        outs += [("present_key", F), ("present_value", F)]
    while ins[-1] == "":
        ins.pop()
    return kind, [nd(kind, ins, [o for o, _ in outs], **ms, **attrs)], feeds, outs, [], 13


def broadcastable(a, b):
    try:
        np.broadcast_shapes(tuple(a), tuple(b))
        return True
    except ValueError:
        return False


FAMILIES = [(lambda: conv_like(False), 4), (lambda: conv_like(True), 2), (pool, 3), (binary, 3), (unary, 3), (reduce, 3),
            (softmax, 1), (movement, 5), (linalg, 2), (norm, 2), (resize, 2), (chain, 8), (quant, 6), (contrib, 3),
            (rotary_embed, 2), (attention, 3)]


def main():
    os.makedirs(OUT, exist_ok=True)
    # FUZZ_ONLY=attention,contrib draws from those families alone (by function name)
    only = [f for f in os.environ.get("FUZZ_ONLY", "").split(",") if f]
    families = [(g, w) for g, w in FAMILIES if not only or g.__name__ in only]
    if not families:
        sys.exit(f"FUZZ_ONLY={','.join(only)} names no family")
    weights = np.array([w for _, w in families], float)
    made = skipped = 0
    tries = 0
    while made < COUNT and tries < COUNT * 20:
        tries += 1
        gen = families[int(R.choice(len(families), p=weights / weights.sum()))][0]
        op, nodes, inputs, outputs, inits, opset, *atol = gen()
        atol = atol[0] if atol else None
        name = f"{op.lower()}_{SEED}_{tries}"
        n_before = len(fx.MANIFEST)
        try:
            fx.case(name, nodes, inputs, outputs, inits, opset=opset, tol=1e-4, atol=atol, tags=["int8"] if atol is not None else (),
                    ms=any(n.domain == "com.microsoft" for n in nodes))
        except Exception as e:  # onnxruntime (or the checker) rejects the draw
            skipped += 1
            if os.environ.get("FUZZ_VERBOSE"):
                print(f"skip {name}: {(str(e).splitlines() or [repr(e)])[0][:200]}", file=sys.stderr)
            continue
        # Outputs with non-finite values say nothing about the arithmetic (onnxruntime 1.20
        # leaves ConvTranspose's output_padding columns unwritten when it is >= the stride).
        entry = fx.MANIFEST[-1]
        outs = [np.load(os.path.join(OUT, entry["dir"], o["file"])) for o in entry["outputs"]]
        # Empty outputs too: pixelgrad has no zero-size tensors (a typed error says so).
        if any(o.size == 0 or (o.dtype.kind == "f" and not (np.abs(o) < 1e30).all()) for o in outs):
            fx.MANIFEST.pop()
            skipped += 1
            continue
        if len(fx.MANIFEST) > n_before:
            made += 1
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump({"seed": SEED, "cases": fx.MANIFEST}, f, indent=1)
    print(f"{made} cases ({skipped} draws rejected by onnxruntime) in {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
