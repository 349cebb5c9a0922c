#!/usr/bin/env bash
# Differential fuzzing of the ONNX importer: random per-operator models (scripts/onnx_fuzz.py),
# onnxruntime's outputs as the oracle, run on the CPU, WebGPU and WebGL backends. Not part of
# CI; a failing case is copied into scripts/onnx_fixtures.py as a fixed fixture.
#
# Usage: bash scripts/onnx-diff-fuzz.sh [COUNT] [SEED] [cpu|wgpu|webgl ...]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-200}"
seed="${2:-1}"
shift 2 || shift $# || true
backends=("$@")
[ ${#backends[@]} -eq 0 ] && backends=(cpu wgpu webgl)
bash scripts/onnx-fixtures.sh >/dev/null  # the pinned onnx / onnxruntime venv
out="target/onnx-fuzz/seed-$seed"
rm -rf "$out"
target/onnx-venv/bin/python scripts/onnx_fuzz.py "$out" "$count" "$seed"
status=0
for b in "${backends[@]}"; do
  PIXELGRAD_ONNX_CASES="$PWD/$out" cargo test -q -p pixelgrad-onnx --test fuzz -- --ignored --nocapture "on_$b" || status=1
done
exit $status
