#!/usr/bin/env bash
# Runs every pixelgrad test, installing what a fresh machine lacks first.
# Usage: bash scripts/test.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's wall time, printed at the end (where the CI time goes).
timings=()
stage_name=""; stage_start=$SECONDS
stage() { # NAME: close the running stage, open the next
  [ -n "$stage_name" ] && timings+=("$(printf '%5ds  %s' $((SECONDS - stage_start)) "$stage_name")")
  stage_name=$1; stage_start=$SECONDS
  [ -n "$1" ] && echo "== [$(date -u +%H:%M:%S)] $1"
  return 0
}
report_timings() { stage ""; printf '== stage times\n'; printf '%s\n' "${timings[@]}"; printf '%5ds  total\n' "$SECONDS"; }

# A stage that hangs must not eat the whole CI allowance silently: every stage runs under a
# deadline (its own limit, never past what the run's budget has left), and one that runs past it
# prints what is still running (the test binary, the page, the node) before it is stopped, so the
# run ends with its stage times and the name of what hung.
ci_budget=${PIXELGRAD_TEST_BUDGET:-4800}
guarded() { # LIMIT NAME COMMAND...: run COMMAND with a deadline; 124 when it ran past it
  local limit=$1 name=$2; shift 2
  local left=$((ci_budget - SECONDS))
  [ "$left" -lt "$limit" ] && limit=$left
  [ "$limit" -lt 120 ] && limit=120
  local root=$$
  ( trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    me=$BASHPID
    sleep "$limit" & sleeper=$!
    wait "$sleeper"
    echo "== [$(date -u +%H:%M:%S)] $name ran past its ${limit} s; still running (seconds, command):"
    # this run's processes only: --forest lists a parent before its children
    ps -eo pid=,ppid=,etimes=,args= --forest | awk -v root="$root" -v me="$me" '
      $2 == root || ($2 in keep) { keep[$1] = 1; if ($1 != me && $2 != me) { $1 = ""; $2 = ""; print substr($0, 3, 200) } }' | tail -40
  ) &
  local watcher=$!
  local status=0
  timeout --kill-after=20 $((limit + 10)) "$@" || status=$?
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  return "$status"
}
stage "setup: apt packages, wasm32 target, Flower venv"

need_apt=()
# Mesa: lavapipe (Vulkan on the CPU) for the WebGPU backend, llvmpipe through EGL for WebGL.
for pkg in mesa-vulkan-drivers libegl-mesa0 libgl1-mesa-dri libgles2 libegl1 glslang-tools; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
rustup target list --installed | grep -q wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
# The pinned Flower (flwr 1.42) the federated tests talk to; its tests fail rather than skip.
bash scripts/flower-venv.sh >/dev/null
export PIXELGRAD_REQUIRE_FLWR=1

stage "ONNX fixtures (onnxruntime as the oracle; pinned Python venvs in target/onnx-venv and, for opset 23, target/onnx23-venv)"
guarded 900 "the ONNX fixtures" bash scripts/onnx-fixtures.sh
# the venv now has the pinned Python tokenizers: the pixelgrad-text regeneration test must run
export PIXELGRAD_REQUIRE_TOKENIZERS=1

stage "native tests (all crates)"
mkdir -p target
log=target/test-native.log
# Only failures, errors and tests past a minute reach the console (not Mesa's complaint about
# XDG_RUNTIME_DIR, printed by every GPU test process); every binary's summary is in
# the log, and one line below counts them.
set +e
# (the stage's status is cargo's: a filter that matched nothing is not a failure)
guarded 2700 "the native tests" bash -c 'cargo test --workspace --all-targets --no-fail-fast 2>&1 | tee "$0" \
  | grep -E --line-buffered "^error|FAILED|panicked|has been running for over" | grep -v --line-buffered XDG_RUNTIME_DIR
  exit "${PIPESTATUS[0]}"' "$log"
status=$?
set -e
awk '/^test result:/ { bins++; for (i = 1; i <= NF; i++) if ($i ~ /^(passed|failed|ignored);$/) n[$i] += $(i-1) }
     END { printf "native tests: %d binaries, %d passed, %d failed, %d ignored\n", bins, n["passed;"], n["failed;"], n["ignored;"] }' "$log"
# A failure here does not stop the run: the suites below still run, so one CI run shows every
# failure; the run fails at the end.
native_failed=()
if [ "$status" -ne 0 ]; then echo "native tests failed (full log: $log)"; native_failed+=("native"); fi
stage "doc tests"
guarded 900 "the doc tests" cargo test --workspace --doc -q || native_failed+=("doctests")

stage "API docs (rustdoc warnings are errors) and the publishable crates packaged"
RUSTDOCFLAGS=-Dwarnings guarded 900 "rustdoc" cargo doc --workspace --no-deps -q || native_failed+=("rustdoc")
# Every crate that is not `publish = false`, in one run so their path dependencies resolve to
# each other (not built: --no-verify; the tests above cover the code).
publishable=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(" ".join("-p " + p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] != []))')
# shellcheck disable=SC2086
guarded 600 "cargo package" cargo package --no-verify --allow-dirty -q $publishable || native_failed+=("cargo-package")

stage "wasm32 builds"
guarded 900 "the wasm32 builds" cargo build -q --target wasm32-unknown-unknown -p pixelgrad-core -p pixelgrad-image -p pixelgrad-cpu -p pixelgrad-nn -p pixelgrad-onnx -p pixelgrad-text -p pixelgrad-text-web \
  || native_failed+=("wasm32-build")

# Every suite runs even if an earlier one fails, so one CI run shows every failure; each suite's
# output is also kept in target/, and the end of a failed one is repeated last, where a CI log
# that keeps only its tail still shows why.
failed=("${native_failed[@]}")
suite() { # NAME LIMIT COMMAND...: run a suite under a deadline, keep its output, note a failure
  local name=$1 limit=$2; shift 2
  local out="target/test-${name//[^a-zA-Z0-9]/-}.log"
  set +e
  guarded "$limit" "$name" "$@" 2>&1 | tee "$out"
  local status=${PIPESTATUS[0]}
  set -e
  [ "$status" -eq 0 ] || failed+=("$name")
}
stage "browser tests: conformance + smoke in the page (headless Chromium: WebGPU and WebGL2 via SwiftShader, CPU as wasm)"
suite browser-tests.sh 1500 bash scripts/browser-tests.sh

stage "npm package tests: JS API on webgpu/webgl/cpu, in a Worker, and the demo end to end"
suite web-tests.sh 2700 bash scripts/web-tests.sh

# mdBook's one-off install (minutes of compiling, one core) overlaps the Flower federations,
# whose nodes spend most of a round waiting for the next poll.
CARGO_BUILD_JOBS=1 bash scripts/book.sh --install-only > target/mdbook-install.log 2>&1 &
mdbook_install=$!
stage "federated training with Flower: a small federation of tabs and a native node, CLI errors"
suite flower-tests.sh 1200 bash scripts/flower-tests.sh
guarded 900 "the mdbook install" bash -c "while kill -0 $mdbook_install 2>/dev/null; do sleep 2; done" && wait "$mdbook_install" || echo "mdbook install failed (target/mdbook-install.log); the book suite will say why"

stage "the book: mdbook build docs, every link and anchor (its Rust blocks ran with the doc tests above)"
suite book.sh 600 bash scripts/book.sh

stage "benchmark report code (web/bench: weight layout, safetensors, ratios, docs/benchmarks.md up to date with the results; no browser)"
suite web-bench-node-tests 300 bash -c 'cd web/bench && node --test tests/'

if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do
    [ -f "target/test-${name//[^a-zA-Z0-9]/-}.log" ] || { echo "== $name failed (see above)"; continue; }
    echo "== the end of the failed suite $name (target/test-${name//[^a-zA-Z0-9]/-}.log):"
    grep -E 'FAIL|failed|panicked|timed out|unfinished|error' "target/test-${name//[^a-zA-Z0-9]/-}.log" | tail -15
    tail -15 "target/test-${name//[^a-zA-Z0-9]/-}.log"
  done
  report_timings
  echo "== failed: ${failed[*]}"; exit 1
fi
report_timings
echo "== all tests passed"
