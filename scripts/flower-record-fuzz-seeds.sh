#!/usr/bin/env bash
# Records the wire-form seeds of the `flower_message` fuzz target from a real flwr 1.42
# SuperLink (run once; the files are committed under fuzz/corpus/flower_message/): a SuperLink
# and the project's ServerApp run 2 rounds of FedAvg on a 4 -> 8 -> 3 model, and one node
# (crates/pixelgrad-flower/examples/record_fleet.rs) keeps the bodies of every answer that
# brought it a message (train, evaluate) and its objects.
# Usage: bash scripts/flower-record-fuzz-seeds.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-fuzz/corpus/flower_message}"
venv=$(bash scripts/flower-venv.sh)
cargo build -q -p pixelgrad-flower --example record_fleet
rec=target/debug/examples/record_fleet
work=$(mktemp -d)
trap 'kill -TERM -- -$sl_pid 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/home"
printf '[superlink]\ndefault = "local"\n[superlink.local]\naddress = "127.0.0.1:%s"\ninsecure = true\n' "$port" > "$work/home/config.toml"
"$rec" --write-init "$work/init.safetensors"
export PATH="$venv/bin:$PATH" FLWR_HOME="$work/home"
setsid flower-superlink --insecure --host 127.0.0.1 --port "$port" --disable-runtime-dependency-installation \
  > "$work/superlink.log" 2>&1 &
sl_pid=$!
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
(cd crates/pixelgrad-flower/flower-app && flwr run . local --run-config \
  "num-server-rounds=2 expected-nodes=1 round-timeout=120.0 init-file=\"$work/init.safetensors\"" > "$work/run.log" 2>&1)
"$rec" --record "http://127.0.0.1:$port" "$out"
ls -l "$out"
