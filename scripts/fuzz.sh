#!/usr/bin/env bash
# Fuzzes every parser with cargo-fuzz (libFuzzer, nightly toolchain). Not part of CI: the
# stable suite runs the same harnesses on the seed corpus, the regressions and mutations
# (crates/pixelgrad-web/tests/fuzz_corpora.rs).
#
# Usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#        (default 600 s per target; targets: every [[bin]] of fuzz/Cargo.toml but make_corpus)
# A crash is saved by libFuzzer under fuzz/artifacts/<target>/; copy it to
# fuzz/regressions/<target>/ (the stable test then runs it) and fix the parser.
# Limits: 1 GiB RSS (-rss_limit_mb), 1 GiB per allocation (-malloc_limit_mb), 10 s per input.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
shift || true
targets=("$@")
# every target fuzz/Cargo.toml declares (its [[bin]] names), so a new target needs no edit here
[ ${#targets[@]} -eq 0 ] && mapfile -t targets < <(grep -A1 '^\[\[bin\]\]' fuzz/Cargo.toml | sed -n 's/^name = "\(.*\)"/\1/p' | grep -v '^make_corpus$')

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# seeds from the encoders, the ONNX fixtures included when scripts/onnx-fixtures.sh made them;
# a private corpus under target/: what the fuzzer adds stays out of the repository
mkdir -p target/fuzz-corpus
PIXELGRAD_WRITE_FUZZ_CORPUS="$PWD/target/fuzz-corpus" cargo test -q -p pixelgrad-web --test fuzz_corpora committed_corpus >/dev/null

mkdir -p target/fuzz-logs
failed=()
for t in "${targets[@]}"; do
  log="target/fuzz-logs/$t.log"
  work="target/fuzz-corpus/$t"
  mkdir -p "$work" fuzz/regressions/"$t"
  echo "== fuzz $t for ${secs}s (log: $log)"
  # the committed seeds of targets whose seeds are not written by harness/corpus.rs (onnx_npy)
  seeds=(); [ -d fuzz/corpus/"$t" ] && seeds=(../fuzz/corpus/"$t")
  if (cd fuzz && cargo +nightly fuzz run "$t" "../$work" "${seeds[@]}" ../fuzz/regressions/"$t" -- \
        -max_total_time="$secs" -rss_limit_mb=1024 -malloc_limit_mb=1024 -timeout=10 -print_final_stats=1) >"$log" 2>&1; then
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|Done)" "$log" | tr '\n' ' '; echo
  else
    echo "   $t: crash, leak, timeout or OOM (see $log and fuzz/artifacts/$t/)"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then echo "== fuzzing found problems in: ${failed[*]}"; exit 1; fi
echo "== no crash, hang or allocation over 1 GiB"
