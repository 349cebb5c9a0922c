#!/usr/bin/env bash
# The real-GPU benchmark in one command (issue 45 item 8). Runs only what a bundle made by
# `cargo xtask gpu-bundle` holds: no cargo, no network, no Python (bash, awk, sed, grep).
#
#   native WebGPU (Vulkan on Linux) through the bundled release `pixelgrad`:
#   - matmul n x n x n (4096; 1024 with --quick) in GFLOP/s, against the card's FP32 peak when
#     the adapter is in the table below;
#   - the three training workloads (seed-mlp, mnist-mlp, cnn) in steps/s, against Burn's wgpu
#     backend (the bundled `burn-side`), alternating rounds, medians and the ratio;
#   - inference latency (median of --repeat runs, outputs read back) of the bench models.
#
# Prints one JSON line per figure on stdout (progress goes to stderr); a figure that fails prints
# a line with "error" and the script exits 1 after the others.
#
# Usage: scripts/gpu-bench.sh [--quick] [--rounds N] [--seconds S] [--repeat N] [--matmul N]
#                             [BUNDLE_DIR]
#   BUNDLE_DIR defaults to this script's own folder when a `pixelgrad` binary lies next to it
#   (the copy inside a bundle), else target/gpu-bundle.
#   --quick: matmul 1024, 0.5 s per measurement, 1 round, 3 inference runs of the float models
#            and of one model per reduced form (f16, int8): for lavapipe.
#        scripts/gpu-bench.sh --peak "ADAPTER NAME"   the FP32 peak the table gives that adapter
# Env:  PIXELGRAD_PEAK_FP32_GFLOPS  the FP32 peak of a card the table lacks (its datasheet figure)
#       BURN_DEVICE  cpu | discrete | integrated | virtual (default: cpu on a software adapter,
#                    else discrete), passed to burn-side --device
set -uo pipefail

quick=0 rounds="" seconds="" repeat="" matmul="" bundle="" peak_only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --rounds) rounds=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --matmul) matmul=$2; shift ;;
    --peak) peak_only=$2; shift ;;
    -h | --help) sed -n '2,/^set /{/^#/p}' "$0"; exit 0 ;;
    -*) echo "gpu-bench: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) bundle=$1 ;;
  esac
  shift
done
if [ "$quick" = 1 ]; then
  : "${rounds:=1}" "${seconds:=0.5}" "${repeat:=3}" "${matmul:=1024}"
else
  : "${rounds:=3}" "${seconds:=3}" "${repeat:=50}" "${matmul:=4096}"
fi
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$bundle" ]; then
  if [ -x "$here/pixelgrad" ]; then bundle=$here; else bundle="$here/../target/gpu-bundle"; fi
fi

log() { echo "gpu-bench [${SECONDS}s]: $*" >&2; }
# A JSON string: backslashes, quotes and control characters escaped.
js() { printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037')"; }
# A JSON string copied from JSON output, or null when absent.
jstr() { case "$1" in '"'*'"') printf '%s' "$1" ;; *) printf null ;; esac; }
# A JSON number, or null when empty or not a number.
jn() { if printf '%s' "$1" | grep -Eq '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$'; then printf '%s' "$1"; else printf null; fi; }
# The value of a row of `pixelgrad bench --json-out` (keys are sorted: name, values, workload).
bench_value() { grep -o "\"name\":\"$2\",\"values\":{\"webgpu\":[^}]*}" "$1" | sed 's/.*"webgpu"://; s/}$//'; }
# Median of the numbers on stdin (one per line); empty when there are none.
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a != "" && b != "" && b > 0) printf "%.4f", a/b}'; }
# A JSON array of the numbers on stdin.
jarr() { printf '['; paste -sd, - | tr -d '\n'; printf ']'; }

# FP32 peak in GFLOP/s by adapter name: the vendors' datasheet figures (non-tensor FP32, boost
# clock). NVIDIA H100 Tensor Core GPU datasheet: SXM 67, PCIe 51, NVL 60 TFLOPS; NVIDIA H200
# datasheet: SXM 67, NVL 60; NVIDIA A100 datasheet: 19.5; NVIDIA L4 datasheet: 30.3; NVIDIA L40S
# datasheet: 91.6; NVIDIA L40 datasheet: 90.5; NVIDIA A10 datasheet: 31.2; NVIDIA T4 datasheet:
# 8.1; NVIDIA V100 datasheet: SXM2 15.7, PCIe 14; NVIDIA Ada GPU architecture whitepaper
# (RTX 4090): 82.6; NVIDIA Ampere GA102 whitepaper (RTX 3090): 35.6. The Vulkan names of the
# SXM parts carry no "SXM" (e.g. "NVIDIA H100 80GB HBM3"), so a plain H100/H200 counts as SXM.
peak_for() {
  shopt -s nocasematch
  local p="" src=""
  case "$1" in
    *H100*PCIe*) p=51000 src="NVIDIA H100 datasheet, H100 PCIe FP32 51 TFLOPS" ;;
    *H100*NVL*) p=60000 src="NVIDIA H100 datasheet, H100 NVL FP32 60 TFLOPS" ;;
    *H100*) p=67000 src="NVIDIA H100 datasheet, H100 SXM FP32 67 TFLOPS" ;;
    *H200*NVL*) p=60000 src="NVIDIA H200 datasheet, H200 NVL FP32 60 TFLOPS" ;;
    *H200*) p=67000 src="NVIDIA H200 datasheet, H200 SXM FP32 67 TFLOPS" ;;
    *A100*) p=19500 src="NVIDIA A100 datasheet, FP32 19.5 TFLOPS" ;;
    *L40S*) p=91600 src="NVIDIA L40S datasheet, FP32 91.6 TFLOPS" ;;
    *L40*) p=90500 src="NVIDIA L40 datasheet, FP32 90.5 TFLOPS" ;;
    *" L4"|*" L4 "*) p=30300 src="NVIDIA L4 datasheet, FP32 30.3 TFLOPS" ;;
    *" A10"|*" A10 "*) p=31200 src="NVIDIA A10 datasheet, FP32 31.2 TFLOPS" ;;
    *" T4"|*" T4 "*) p=8100 src="NVIDIA T4 datasheet, FP32 8.1 TFLOPS" ;;
    *V100*PCIE*) p=14000 src="NVIDIA V100 datasheet, V100 PCIe FP32 14 TFLOPS" ;;
    *V100*) p=15700 src="NVIDIA V100 datasheet, V100 SXM2 FP32 15.7 TFLOPS" ;;
    *"RTX 4090"*) p=82600 src="NVIDIA Ada GPU architecture whitepaper, RTX 4090 FP32 82.6 TFLOPS" ;;
    *"RTX 3090"*) p=35600 src="NVIDIA Ampere GA102 whitepaper, RTX 3090 FP32 35.6 TFLOPS" ;;
  esac
  shopt -u nocasematch
  [ -z "$p" ] && src="unknown: adapter not in gpu-bench.sh's table; set PIXELGRAD_PEAK_FP32_GFLOPS to its datasheet FP32 figure"
  if [ -n "${PIXELGRAD_PEAK_FP32_GFLOPS:-}" ]; then
    p=$PIXELGRAD_PEAK_FP32_GFLOPS src="PIXELGRAD_PEAK_FP32_GFLOPS"
  fi
  printf '%s|%s' "$p" "$src"
}

if [ -n "$peak_only" ]; then
  IFS='|' read -r peak src <<<"$(peak_for "$peak_only")"
  printf '{"adapter":%s,"peak_fp32_gflops":%s,"peak_source":%s}\n' "$(js "$peak_only")" "$(jn "$peak")" "$(js "$src")"
  exit 0
fi

pg="$bundle/pixelgrad"
burn="$bundle/burn-side"
[ -x "$pg" ] || { echo "gpu-bench: no pixelgrad binary in $bundle (make the bundle with: cargo xtask gpu-bundle)" >&2; exit 2; }
[ -f "$bundle/models/models.tsv" ] || { echo "gpu-bench: $bundle/models/models.tsv missing (not a gpu-bundle folder?)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Headless machines lack XDG_RUNTIME_DIR; the Vulkan loader then prints errors while probing.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$tmp}
failed=0

# --- the bundle ----------------------------------------------------------------------------------
info=""
[ -f "$bundle/BUNDLE.txt" ] && info=$(tr '\n' ' ' <"$bundle/BUNDLE.txt" | sed 's/ *$//')
printf '{"figure":"setup","bundle":%s,"quick":%s,"rounds":%s,"seconds":%s,"repeat":%s,"burn_side":%s}\n' \
  "$(js "$info")" "$([ $quick = 1 ] && echo true || echo false)" "$(jn "$rounds")" "$(jn "$seconds")" "$(jn "$repeat")" \
  "$([ -x "$burn" ] && echo true || echo false)"

# --- matmul against the FP32 peak ----------------------------------------------------------------
log "matmul ${matmul}^3 on webgpu"
adapter=""
if "$pg" bench --backends webgpu --workloads matmul --matmul "$matmul" --no-passes --seconds "$seconds" \
  --json-out "$tmp/matmul.json" >"$tmp/matmul.out" 2>"$tmp/matmul.err" &&
  ! grep -q '^webgpu *skipped' "$tmp/matmul.out"; then
  name=$(grep -o '"backend":"webgpu","name":"[^"]*"' "$tmp/matmul.json" | sed 's/.*"name":"//; s/"$//')
  # "webgpu (ADAPTER, Vulkan)" -> ADAPTER
  adapter=${name#webgpu (}
  adapter=${adapter%, *}
  gflops=$(bench_value "$tmp/matmul.json" "matmul-$matmul")
  IFS='|' read -r peak src <<<"$(peak_for "$adapter")"
  printf '{"figure":"matmul-%s","backend":"webgpu","adapter":%s,"gflops":%s,"peak_fp32_gflops":%s,"fraction_of_peak":%s,"peak_source":%s}\n' \
    "$matmul" "$(js "$adapter")" "$(jn "$gflops")" "$(jn "$peak")" "$(jn "$(ratio "$gflops" "$peak")")" "$(js "$src")"
  [ "$(jn "$gflops")" = null ] && failed=1
else
  # no adapter: `pixelgrad bench` says "webgpu skipped: REASON" and exits 0
  printf '{"figure":"matmul-%s","backend":"webgpu","error":%s}\n' "$matmul" "$(js "$(cat "$tmp/matmul.out" "$tmp/matmul.err" | grep -v '^ *$' | tail -3)")"
  failed=1
fi

# --- training: pixelgrad against Burn, alternating rounds ----------------------------------------
workloads="seed-mlp mnist-mlp cnn"
if [ -z "${BURN_DEVICE:-}" ]; then
  case "$adapter" in
    *llvmpipe* | *lavapipe* | *SwiftShader* | "") BURN_DEVICE=cpu ;;
    *) BURN_DEVICE=discrete ;;
  esac
fi
burn_device=""
for w in $workloads; do : >"$tmp/pg-$w" && : >"$tmp/burn-$w"; done
for ((r = 0; r < rounds; r++)); do
  # pixelgrad first in even rounds, Burn first in odd ones: a load change hits both sides
  if ((r % 2 == 0)); then order="pg burn"; else order="burn pg"; fi
  for side in $order; do
    if [ "$side" = pg ]; then
      log "round $((r + 1))/$rounds: pixelgrad training"
      if "$pg" bench --backends webgpu --workloads seed-mlp,mnist-mlp,cnn --no-passes --seconds "$seconds" \
        --json-out "$tmp/train.json" >"$tmp/train.out" 2>"$tmp/train.err"; then
        for w in $workloads; do bench_value "$tmp/train.json" "$w" | grep -v null >>"$tmp/pg-$w"; done
      else
        log "pixelgrad bench failed: $(tail -3 "$tmp/train.err")"
      fi
    elif [ -x "$burn" ]; then
      log "round $((r + 1))/$rounds: Burn training (device $BURN_DEVICE)"
      if "$burn" --device "$BURN_DEVICE" --only seed-mlp,mnist-mlp,cnn --seconds "$seconds" >"$tmp/burn.out" 2>"$tmp/burn.err"; then
        burn_device=$(sed -n 's/^burn device //p' "$tmp/burn.out" | head -1)
        for w in $workloads; do awk -v w="$w" '$1 == "burn" && $2 == w {print $3}' "$tmp/burn.out" >>"$tmp/burn-$w"; done
      else
        log "burn-side failed: $(tail -3 "$tmp/burn.err")"
      fi
    fi
  done
done
if [ -x "$burn" ]; then burn_note="" ; else burn_note="burn-side not in the bundle (packed with --no-burn)"; fi
for w in $workloads; do
  p=$(median <"$tmp/pg-$w")
  b=$(median <"$tmp/burn-$w")
  printf '{"figure":"train-%s","unit":"steps/s","backend":"webgpu","adapter":%s,"pixelgrad":%s,"burn":%s,"ratio":%s,"rounds":%s,"pixelgrad_rounds":%s,"burn_rounds":%s,"burn_device":%s' \
    "$w" "$(js "$adapter")" "$(jn "$p")" "$(jn "$b")" "$(jn "$(ratio "$p" "$b")")" "$rounds" \
    "$(jarr <"$tmp/pg-$w")" "$(jarr <"$tmp/burn-$w")" "$(js "$burn_device")"
  [ -n "$burn_note" ] && printf ',"note":%s' "$(js "$burn_note")"
  printf '}\n'
  [ -z "$p" ] && failed=1
  [ -x "$burn" ] && [ -z "$b" ] && failed=1
done

# --- inference latency of the bench models -------------------------------------------------------
# models.tsv: figure id, model file, input name, input .npy, --precision, quick|full (written by
# the pack step; --quick runs the float models and one model of each reduced form)
while IFS=$'\t' read -r id file input npy precision mode; do
  case "$id" in "" | "#"*) continue ;; esac
  [ "$quick" = 1 ] && [ "$mode" != quick ] && continue
  log "inference $id ($precision), $repeat runs"
  if "$pg" run "$bundle/models/$file" --input "$input=$bundle/models/$npy" --backend webgpu --precision "$precision" \
    --repeat "$repeat" --json --out "$tmp/run-$id" >"$tmp/run.out" 2>"$tmp/run.err"; then
    j=$(tail -1 "$tmp/run.out")
    field() { printf '%s' "$j" | grep -o "\"$1\":[^,}]*" | head -1 | sed "s/^\"$1\"://"; }
    sfield() { printf '%s' "$j" | grep -o "\"$1\":\"[^\"]*\"" | head -1 | sed "s/^\"$1\"://"; }
    med=$(field run_ms)
    printf '{"figure":"infer-%s","model":%s,"precision":%s,"backend":"webgpu","adapter":%s,"median_ms":%s,"first_run_ms":%s,"load_ms":%s,"runs":%s,"weight_storage":%s,"path":%s}\n' \
      "$id" "$(js "$file")" "$(js "$precision")" "$(js "$adapter")" "$(jn "$med")" "$(jn "$(field first_run_ms)")" \
      "$(jn "$(field load_ms)")" "$repeat" "$(jstr "$(sfield weight_storage)")" "$(jstr "$(sfield path)")"
    [ "$(jn "$med")" = null ] && failed=1
  else
    printf '{"figure":"infer-%s","model":%s,"backend":"webgpu","error":%s}\n' "$id" "$(js "$file")" "$(js "$(tail -3 "$tmp/run.err")")"
    failed=1
  fi
done <"$bundle/models/models.tsv"
exit $failed
