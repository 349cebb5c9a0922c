#!/usr/bin/env bash
# Creates target/flwr-venv with the pinned Flower release the federated code speaks (flwr 1.42),
# unless it is already there. Prints the venv's path. Usage: bash scripts/flower-venv.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FLWR_VERSION=1.42.0
venv=target/flwr-venv
if [ -x "$venv/bin/flower-superlink" ] && "$venv/bin/python" -c "import flwr, sys; sys.exit(flwr.__version__ != '$FLWR_VERSION')" 2>/dev/null; then
  echo "$PWD/$venv"; exit 0
fi
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  echo "== installing python3-venv" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
fi
echo "== creating $venv with flwr==$FLWR_VERSION" >&2
mkdir -p target
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "flwr==$FLWR_VERSION" >&2
echo "$PWD/$venv"
