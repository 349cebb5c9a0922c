#!/usr/bin/env bash
# Browser tests of the `pixelgrad` npm package: builds web/pkg (`cargo xtask build-wasm`), then
# runs every Playwright test under web/tests/ (headless Chromium with WebGPU and WebGL2 through
# SwiftShader; see web/tests/harness.mjs). Installs what a fresh Debian machine lacks: chromium,
# node/npm (apt, with sudo when not root), the wasm32 target and the npm packages (`npm ci`).
#
# The package is built with its threaded module too (`--threads`: nightly with rust-src, installed
# here through rustup), which tests/threads.test.mjs compares with the single-threaded one;
# `--no-threads` skips that build (the threads test then fails: it needs the module).
#
# Usage: bash scripts/web-tests.sh [--wasm-opt] [--no-threads] [TEST_FILE...]   (exit status 0 only if all passed)
#        TEST_FILE: paths relative to web/, e.g. tests/api.test.mjs (default: tests/)
# Env:   WEB_TESTS_TIMEOUT  seconds for the node test run (default 1500); CARGO_TARGET_DIR honoured.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

fail() { echo "web tests: setup failed: $*" >&2; echo "web tests: 0 passed, 1 failed (setup)"; exit 1; }

build_args=()
files=()
threads=1
for a in "$@"; do
  case "$a" in
    --wasm-opt) build_args+=("--wasm-opt") ;;
    --no-threads) threads=0 ;;
    *) files+=("$a") ;;
  esac
done
[ ${#files[@]} -eq 0 ] && files=("tests/")

# --- System packages ------------------------------------------------------------------------------
need_apt=()
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || need_apt+=(chromium)
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]}"
  $SUDO apt-get update -qq || fail "apt-get update"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null \
    || fail "apt-get install ${need_apt[*]}"
fi

# --- npm packages (playwright-core drives the system Chromium; binaryen gives wasm-opt; typescript
# type-checks the package in tests/package.test.mjs) ---------------------------------------------
if [ ! -x web/node_modules/.bin/playwright-core ] || [ ! -x web/node_modules/.bin/wasm-opt ] || [ ! -x web/node_modules/.bin/tsc ]; then
  echo "== npm ci (web/)"
  (cd web && npm ci --no-audit --no-fund) || fail "npm ci in web/"
fi

# --- The package ----------------------------------------------------------------------------------
export PATH="$HOME/.cargo/bin:$PATH"
rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$' \
  || rustup target add wasm32-unknown-unknown || fail "rustup target add wasm32-unknown-unknown"
if [ "$threads" = 1 ]; then
  # The threaded module rebuilds the standard library with atomics (-Z build-std): nightly + rust-src.
  rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src' \
    || rustup toolchain install nightly --profile minimal --component rust-src \
    || fail "rustup toolchain install nightly --component rust-src"
  build_args+=("--threads")
fi
echo "== cargo xtask build-wasm ${build_args[*]}"
cargo xtask build-wasm "${build_args[@]}" || fail "cargo xtask build-wasm"

# --- Run ------------------------------------------------------------------------------------------
log=$(mktemp /tmp/pixelgrad-web-tests.XXXXXX.log)
echo "== node --test ${files[*]} ($(chromium --version 2>/dev/null || echo chromium); TAP log: $log)"
(cd web && timeout --kill-after=30 "${WEB_TESTS_TIMEOUT:-1500}" \
  node --test --test-concurrency=1 --test-reporter=tap "${files[@]}") >"$log" 2>&1
status=$?
# Top-level results only (subtests are indented), then the failures in full.
grep -E '^(ok|not ok) ' "$log" | sed -E 's/^ok /  PASS /; s/^not ok /  FAIL /'
if [ $status -ne 0 ]; then
  echo "== failures"
  awk '/^not ok /{p=1} /^(ok|# Subtest:) /{p=0} p' "$log" | grep -v '^# \[page' | head -120
fi
pass=$(grep -E '^# pass ' "$log" | awk '{print $3}')
failed=$(grep -E '^# fail ' "$log" | awk '{print $3}')
skipped=$(grep -E '^# skipped ' "$log" | awk '{print $3}')
[ $status -eq 124 ] && echo "web tests: timed out after ${WEB_TESTS_TIMEOUT:-1500} s"
echo "web tests: ${pass:-0} passed, ${failed:-?} failed, ${skipped:-0} skipped in $(( $(date +%s) - start )) s"
if [ $status -ne 0 ] || [ "${failed:-1}" != "0" ]; then exit 1; fi
exit 0
