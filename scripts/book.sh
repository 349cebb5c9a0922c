#!/usr/bin/env bash
# Builds the book (docs/ -> docs/book/) with mdBook and checks every link and anchor in it and
# in the README (scripts/book-links.mjs, with the claim map of scripts/claim-map.mjs: every
# section's tests exist; its own test scripts/claim-map.test.mjs runs first). Installs the pinned mdBook when missing (a one-off
# `cargo install`, a few minutes on two cores). The Rust code blocks are doc tests of the
# `pixelgrad` crate (crates/pixelgrad/src/book.rs), the JS blocks are checked by
# web/tests/book.test.mjs.
# Usage: bash scripts/book.sh [--install-only]
#   --install-only: only install the pinned mdBook if it is missing (scripts/test.sh does this in
#   the background while the Flower federations, which mostly wait, run).
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK_VERSION=0.5.4
if ! mdbook --version 2>/dev/null | grep -qx "mdbook v$MDBOOK_VERSION"; then
  echo "== installing mdbook $MDBOOK_VERSION"
  # serve/watch are not needed to build, and leave out a web server's dependencies.
  cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features --features search -q
fi
[ "${1:-}" = "--install-only" ] && exit 0
mdbook build docs
node --test scripts/claim-map.test.mjs
node scripts/book-links.mjs
