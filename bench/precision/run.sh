#!/usr/bin/env bash
# f32 vs f16 vs int8 side by side, natively: `pixelgrad run --repeat N --json` (release build) on
# every backend for the PP-OCR text direction classifier and squeezenet as float, with
# `--precision f16`, and quantised by onnxruntime (QDQ u8 and QOperator u8 per-channel; those
# twice, with the quantised activations that outlive the next node in 8-bit tensors, the
# default, and with `--int8-activations f32`), plus onnxruntime's CPU provider (1 thread) on the
# float and int8 files. Prints one markdown table.
#   bash bench/precision/run.sh [REPEAT]        (needs target/onnx-fixtures: bash scripts/onnx-fixtures.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-5}
fx=target/onnx-fixtures/models
bin=${PIXELGRAD_BIN:-${CARGO_TARGET_DIR:-target}/release/pixelgrad}
[ -x "$bin" ] || cargo build --release -q -p pixelgrad-cli
out=$(mktemp -d)
echo "| model | form | backend | run ms (median of $repeat) | launches | weight_bytes | device_weight_bytes | activation_bytes | path / storage |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for m in ppocr_cls squeezenet; do
  for form in f32 f16 qdq_u8 qop_u8_per_channel; do
    case $form in
      f32) dir=$fx/$m; prec=f32 ;;
      f16) dir=$fx/$m; prec=f16 ;;
      qdq_u8) dir=$fx/${m}_qdq_u8; prec=auto ;;
      *) dir=$fx/${m}_$form; prec=auto ;;
    esac
    # squeezenet's float fixture has constant weights; its quantised forms have random ones
    name=$(basename "$dir")
    in=$(ls "$dir"/input_0.npy)
    iname=$(python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "..", "..", "manifest.json")))
print([c for c in m["cases"] if c["dir"] == os.path.relpath(d, os.path.join(d, "..", ".."))][0]["inputs"][0]["name"])
PY
)
    acts=8bit
    case $form in qdq_*|qop_*) acts="8bit f32" ;; esac
    for b in cpu webgpu webgl; do
      for act in $acts; do
      j=$("$bin" run "$dir/model.onnx" --input "$iname=$in" --backend "$b" --repeat "$repeat" --precision "$prec" --int8-activations "$act" --json --out "$out" 2>/dev/null | tail -1) || { echo "| $m | $form | $b | failed | | | | | |"; continue; }
      python3 - "$m" "$form" "$b" "$j" <<'PY'
import json, sys
m, form, b, j = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
import re
kernel = re.search(r"\(([\w-]+), i32", j["path"])
tag = j["weight_storage"] if form in ("f32", "f16") else j["path"].split(";")[0] + (f" ({kernel.group(1)})" if kernel else "") + f"; activations {j['activation_storage']}"
print(f"| {m} | {form} | {b} | {j['run_ms']:.1f} | {j['launches_per_run']} | {j['weight_bytes']} | {j['device_weight_bytes']} | {j['activation_bytes']} | {tag} |")
PY
      done
    done
    if [ "$form" != f16 ]; then
      target/onnx-venv/bin/python - "$dir" "$iname" "$repeat" "$m" "$form" <<'PY'
import sys, time, numpy as np, onnxruntime as ort
d, name, rep, m, form = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.log_severity_level = 3
s = ort.InferenceSession(f"{d}/model.onnx", so, providers=["CPUExecutionProvider"])
x = np.load(f"{d}/input_0.npy"); s.run(None, {name: x})
t = []
for _ in range(rep):
    t0 = time.perf_counter(); s.run(None, {name: x}); t.append((time.perf_counter() - t0) * 1e3)
print(f"| {m} | {form} | onnxruntime cpu (1 thread) | {sorted(t)[len(t)//2]:.1f} | | | | | |")
PY
    fi
  done
done
rm -rf "$out"
