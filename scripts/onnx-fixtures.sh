#!/usr/bin/env bash
# Builds the ONNX test fixtures with onnxruntime as the oracle (the pixelgrad-onnx tests call
# this when target/onnx-fixtures is missing or older than the generator).
#   bash scripts/onnx-fixtures.sh            -> target/onnx-fixtures/
# Creates a Python venv in target/onnx-venv with pinned onnx, onnxruntime, numpy and tokenizers, and fetches
# the wheel of rapidocr-onnxruntime (Apache-2.0) for the pretrained PP-OCR models it ships.
# A second venv, target/onnx23-venv, holds a newer pinned onnx alone: its reference evaluator
# is the oracle of the opset 23 operators the pinned onnxruntime does not know
# (scripts/onnx23_fixtures.py, scripts/onnx23_attention_fixtures.py, the opset 23 part of
# scripts/onnx_transformer_fixtures.py), and tests/registry.rs reads its opset 23 schemas.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/onnx-fixtures
venv=target/onnx-venv
gen=scripts/onnx_fixtures.py
gen23=scripts/onnx23_fixtures.py
gen23att=scripts/onnx23_attention_fixtures.py
gentfx=scripts/onnx_transformer_fixtures.py
venv23=target/onnx23-venv
stamp="$out/.done"
mkdir -p target
# Test binaries and threads may call this at once: one builds, the others wait.
exec 9>target/onnx-fixtures.lock
flock 9
if [ -f "$stamp" ] && [ "$stamp" -nt "$gen" ] && [ "$stamp" -nt "$gen23" ] && [ "$stamp" -nt "$gen23att" ] && [ "$stamp" -nt "$gentfx" ] && [ "$stamp" -nt "$0" ]; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" 2>/dev/null; then
    # Debian splits venv (ensurepip) into its own package
    rm -rf "$venv"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
fi
# tokenizers: the oracle of crates/pixelgrad-text (fixtures/make.py, tests/regenerate.rs), the
# same version as the Rust crate it checks
if ! "$venv/bin/python" -c "import onnx, onnxruntime, numpy, PIL, tokenizers; assert tokenizers.__version__ == '0.22.2'" 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check "onnx==1.17.0" "onnxruntime==1.20.1" "numpy==1.26.4" "pillow==10.4.0" "tokenizers==0.22.2"
fi
if [ ! -x "$venv23/bin/python" ]; then
  python3 -m venv "$venv23"
fi
if ! "$venv23/bin/python" -c "import onnx, numpy; assert onnx.__version__ == '1.19.1'" 2>/dev/null; then
  "$venv23/bin/pip" install -q --disable-pip-version-check "onnx==1.19.1" "numpy==1.26.4"
fi
wheel_dir=target/onnx-pkgs
if [ ! -f "$wheel_dir/rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx" ]; then
  mkdir -p "$wheel_dir"
  "$venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$wheel_dir" "rapidocr-onnxruntime==1.4.4"
  "$venv/bin/python" -c "import zipfile,glob,sys; z=zipfile.ZipFile(glob.glob('$wheel_dir/rapidocr_onnxruntime-1.4.4-*.whl')[0]); [z.extract(n,'$wheel_dir') for n in z.namelist() if n.startswith('rapidocr_onnxruntime/models/')]"
fi
rm -rf "$out.tmp"
"$venv/bin/python" "$gen" "$out.tmp" "$wheel_dir/rapidocr_onnxruntime/models"
# small transformer exports and the variants onnxruntime's tools make of them (appends to the manifest)
"$venv/bin/python" "$gentfx" "$out.tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
touch "$stamp"
echo "onnx fixtures: $(ls "$out/ops" | wc -l) operator cases, $(ls "$out/models" | wc -l) models in $out"
