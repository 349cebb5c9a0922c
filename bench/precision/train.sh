#!/usr/bin/env bash
# Mixed-precision training against f32, side by side in one run: `pixelgrad train --precision
# f32|mixed --json` (release build) for the digits MLP and CNN on every backend, alternating the
# two precisions per backend and model so load drifts alike. Prints one markdown table: test
# accuracy, training seconds (and mixed / f32), activation bytes kept for backward, and what ran.
#   bash bench/precision/train.sh [EPOCHS]
set -euo pipefail
cd "$(dirname "$0")/../.."
epochs=${1:-10}
bin=${PIXELGRAD_BIN:-${CARGO_TARGET_DIR:-target}/release/pixelgrad}
[ -x "$bin" ] || cargo build --release -q -p pixelgrad-cli
out=$(mktemp -d)
echo "| model | backend | f32 test acc | mixed test acc | f32 s | mixed s | mixed / f32 time | activation bytes f32 → mixed | precision that ran |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for m in mlp cnn; do
  for b in cpu webgpu webgl; do
    f=$("$bin" train --model "$m" --backend "$b" --epochs "$epochs" --precision f32 --seed 3 --json --out "$out/f" 2>/dev/null | tail -1)
    x=$("$bin" train --model "$m" --backend "$b" --epochs "$epochs" --precision mixed --seed 3 --json --out "$out/x" 2>/dev/null | tail -1)
    python3 - "$m" "$b" "$f" "$x" <<'PY'
import json, sys
m, b, f, x = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
ran = x["precision"] + (f" ({x['precision_fallback'].split(':')[0]})" if x.get("precision_fallback") else f", final scale {x['loss_scale']:.0f}, {x['skipped_steps']} skipped")
print(f"| {m} | {b} | {100*f['test_accuracy']:.2f} % | {100*x['test_accuracy']:.2f} % | {f['train_seconds']:.1f} | {x['train_seconds']:.1f} | "
      f"{x['train_seconds']/f['train_seconds']:.2f}x | {x['activation_bytes_f32']} → {x['activation_bytes']} ({x['activation_bytes']/x['activation_bytes_f32']:.2f}x) | {ran} |")
PY
  done
done
rm -rf "$out"
