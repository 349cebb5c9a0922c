#!/usr/bin/env bash
# Browser tests in headless Chromium (WebGPU and WebGL2 through SwiftShader): the conformance
# suite on webgpu, webgl, webgl1 (a WebGL1 context, in a page of its own) and the CPU backend compiled to wasm (each
# against the f64 reference in the same page), smoke tests (a matmul and one SGD step against the CPU backend in the page)
# and a steady-state training check per GPU backend (no allocation or compile after warm-up).
# Prints a pass/fail summary per backend. Installs what a fresh Debian machine lacks (chromium, chromium-driver, the wasm32
# target, wasm-bindgen-cli at the exact version of the wasm-bindgen crate in Cargo.lock).
#
# Usage: bash scripts/browser-tests.sh [FILTER]   (from anywhere; exit status 0 only if all
#        passed; FILTER, e.g. `conformance::webgl`, runs only the tests whose path contains it)
# Env:   BROWSER_TESTS_TIMEOUT  seconds for running the tests, after they are built (default 1500)
#        WASM_BINDGEN_TEST_TIMEOUT  seconds per test in the browser (default 300: one conformance
#        family of WebGL1 on SwiftShader took over 120 s on a loaded 2-core machine)
#        PIXELGRAD_BROWSER_REDUCTIONS  auto (default) | rendered | handwritten: the WebGPU pages'
#        reduction kernel (read when the tests are built: a page has no environment)
#        CARGO_TARGET_DIR is honoured as usual.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

fail() { echo "browser tests: setup failed: $*" >&2; echo "browser tests: 0 passed, 1 failed (setup)"; exit 1; }

# --- Chromium and its WebDriver -----------------------------------------------------------------
need_apt=()
for pkg in chromium chromium-driver; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]}"
  $SUDO apt-get update -qq || fail "apt-get update"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null \
    || fail "apt-get install ${need_apt[*]}"
fi
CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver || echo /usr/bin/chromedriver)}
[ -x "$CHROMEDRIVER" ] || fail "chromedriver not found (apt-get install chromium-driver)"
export CHROMEDRIVER

# --- Rust side: wasm32 target and a wasm-bindgen-cli matching Cargo.lock ------------------------
rustup target list --installed | grep -q '^wasm32-unknown-unknown$' \
  || rustup target add wasm32-unknown-unknown || fail "rustup target add wasm32-unknown-unknown"
wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[ -n "$wb_version" ] || fail "no wasm-bindgen entry in Cargo.lock"
export PATH="$HOME/.cargo/bin:$PATH"
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $wb_version" ] \
   || ! command -v wasm-bindgen-test-runner >/dev/null; then
  echo "== installing wasm-bindgen-cli $wb_version (builds from source, a few minutes)"
  cargo install wasm-bindgen-cli --version "$wb_version" --force >/tmp/pixelgrad-wasm-bindgen-install.log 2>&1 \
    || { tail -20 /tmp/pixelgrad-wasm-bindgen-install.log; fail "cargo install wasm-bindgen-cli $wb_version"; }
fi

# --- Run ----------------------------------------------------------------------------------------
# The runner reads webdriver.json (Chromium flags: headless, SwiftShader WebGPU and WebGL) from
# the current directory, which cargo sets to the crate's directory for test binaries.
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-300}
log=$(mktemp /tmp/pixelgrad-browser-tests.XXXXXX.log)
echo "== browser tests (headless $(chromium --version 2>/dev/null || echo chromium), wasm-bindgen $wb_version; log: $log)"
# Compile first, outside the timeout: a cold wasm32 build of wgpu and the conformance suite takes
# several minutes on a small machine, and only the browser run should be bounded.
echo "== building the browser tests (wasm32)"
if ! cargo test --no-run --target wasm32-unknown-unknown -p pixelgrad-browser-tests --test web --test webgl1 \
     >"$log.build" 2>&1; then
  tail -40 "$log.build"
  fail "cargo test --no-run (wasm32) failed; full log: $log.build"
fi
timeout --kill-after=30 "${BROWSER_TESTS_TIMEOUT:-1500}" \
  cargo test --no-fail-fast --target wasm32-unknown-unknown -p pixelgrad-browser-tests --test web --test webgl1 -- --nocapture "$@" 2>&1 | tee "$log" \
  | grep -E '^(test |test result|running|error)|panicked|FAILED|failed:|^  [a-z_0-9]+/|max rel error|loss |steady state' 
status=${PIPESTATUS[0]}

# Per-backend summary from the runner's "test <path> ... ok|FAIL" lines: a test belongs to the
# first of webgpu / webgl1 / webgl / cpu its path names (conformance::webgl::unary, webgpu_matmul_...).
# A test that was invoked but never reported (page crash, timeout) is listed as unfinished.
awk '
  /^Invoking test: / { inv[$3] = 1 }
  /^test .* \.\.\. / {
    name = $2; res = $NF; done_[name] = 1
    b = "other"; if (match(name, /webgpu|webgl1|webgl|cpu/)) b = substr(name, RSTART, RLENGTH)
    seen[b] = 1
    if (res == "ok") ok[b]++; else if (res == "ignored") ign[b]++; else { bad[b]++; failed[b] = failed[b] " " name }
  }
  END {
    print "browser tests per backend:"
    n = split("webgpu webgl webgl1 cpu other", order, " ")
    for (i = 1; i <= n; i++) {
      b = order[i]; if (!seen[b]) continue
      printf "  %-7s %3d passed, %d failed%s\n", b ":", ok[b], bad[b], (bad[b] ? "  (" substr(failed[b], 2) ")" : "")
    }
    for (t in inv) if (!(t in done_)) print "  unfinished (page crash or timeout): " t
  }' "$log"

passed=$(grep -Eo '[0-9]+ passed' "$log" | awk '{ s += $1 } END { print s + 0 }')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{ s += $1 } END { print s + 0 }')
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  failed=1  # build error, timeout or runner crash: count it so the summary never says 0 failed
  [ "$status" -eq 124 ] && echo "browser tests: timed out after ${BROWSER_TESTS_TIMEOUT:-1500} s"
  tail -30 "$log"
fi
if [ "$status" -eq 0 ] && [ "$passed" -eq 0 ]; then
  failed=1; status=1; echo "browser tests: no test ran"
fi
echo "browser tests: $passed passed, $failed failed ($(( $(date +%s) - start )) s)"
exit "$status"
