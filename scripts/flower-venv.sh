#!/usr/bin/env bash
# Creates target/flwr-venv with the pinned Flower release the federated code speaks (flwr 1.42)
# and the privacy accountant it tests against (Google's dp-accounting, the backend of flwr's
# own `flwr[dp]` extra), unless they are already there. Prints the venv's path.
# Usage: bash scripts/flower-venv.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FLWR_VERSION=1.42.0
DP_ACCOUNTING_VERSION=0.6.0
venv=target/flwr-venv
ready() {
  [ -x "$venv/bin/flower-superlink" ] && "$venv/bin/python" -c "
import sys, flwr, dp_accounting, importlib.metadata as m
sys.exit(flwr.__version__ != '$FLWR_VERSION' or m.version('dp-accounting') != '$DP_ACCOUNTING_VERSION')" 2>/dev/null
}
if ready; then
  echo "$PWD/$venv"; exit 0
fi
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  echo "== installing python3-venv" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
fi
# A venv copied from another checkout runs that checkout's interpreter: make a fresh one.
if [ -d "$venv" ] && ! grep -q "$PWD/$venv" "$venv/bin/activate" 2>/dev/null; then
  rm -rf "$venv"
fi
echo "== creating $venv with flwr==$FLWR_VERSION, dp-accounting==$DP_ACCOUNTING_VERSION" >&2
mkdir -p target
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "flwr==$FLWR_VERSION" "dp-accounting==$DP_ACCOUNTING_VERSION" >&2
echo "$PWD/$venv"
