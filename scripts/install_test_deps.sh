#!/usr/bin/env bash
# Installs what the test suite needs beyond the Python package, into cache folders, so a fresh clone
# runs every test: the reference pi 1.6.0 and the Node.js 22 it runs on (the side-by-side tests), the
# npm test peers (MCP server-everything and server-filesystem, acpx, pi-acp), the TypeScript extension
# runtime (jiti and TypeBox, where pi itself would install them on first use), mcp-server-time from PyPI,
# and, as root, Debian's chromium (HTML export screenshots), bubblewrap (the sandbox) and tmux (the
# interactive mode in a real terminal). Versions and sha512 checksums are pinned by the lock files
# in scripts/test-deps/<folder>/ (`npm ci` checks them).
#
# Idempotent and offline-friendly: a piece already in its cache is not touched; a piece that cannot be
# installed (no npm, registry unreachable, not root) prints one warning line and the tests that need it
# skip, named in the run's closing summary. Always exits 0.
#
# Cache folders (each overridable): PI_REFERENCE_DIR (~/.cache/pi-reference, holding node22/ and
# pi-1.6.0/), PI_MCP_TEST_SERVERS (~/.cache/pi-mcp-test), PI_ACPX_DIR (~/.cache/pi-acpx),
# PI_ACP_DIR (~/.cache/pi-acp), PI_TS_RUNTIME_DIR (~/.cache/pi-coding-agent-python/typescript).
# tests/support/reference_pi.py and the tests read the same variables.
set -uo pipefail
cd "$(dirname "$0")/.."
LOCKS=scripts/test-deps
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}"
REFERENCE_DIR="${PI_REFERENCE_DIR:-$CACHE/pi-reference}"
NODE_BIN="$REFERENCE_DIR/node22/node_modules/.bin"

warn() { echo "warning: $*" >&2; }

# npm_ci LOCK_FOLDER TARGET_FOLDER MARKER WHAT: installs the locked packages unless MARKER exists.
npm_ci() {
  local lock="$LOCKS/$1" target="$2" marker="$3" what="$4"
  [ -e "$target/$marker" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    warn "npm not found: $what not installed, its tests skip"
    return 0
  fi
  mkdir -p "$target" && cp "$lock/package.json" "$lock/package-lock.json" "$target/" \
    && (cd "$target" && npm_run ci || npm_run install) && [ -e "$target/$marker" ] \
    || warn "could not install $what into $target (npm registry unreachable?): its tests skip"
}

# npm_run ci|install: `npm ci` checks the lock; `npm install` (still guided by the lock) is the fallback
# for a lock npm ci misreads (acpx's optional platform packages without a version).
npm_run() {
  PATH="$NODE_BIN:$PATH" timeout 600 npm "$1" --no-audit --no-fund --silent --prefer-offline >/dev/null 2>&1
}

# apt_install COMMAND PACKAGE WHAT: Debian's PACKAGE when COMMAND is missing and we are root.
apt_install() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    warn "$1 not found and not root with apt-get: $3 tests skip (apt-get install $2)"
    return 0
  fi
  { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "$2" >/dev/null 2>&1 \
    || { timeout 300 apt-get update -qq >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "$2" >/dev/null 2>&1; }; } \
    || warn "could not install $2 (Debian's registry unreachable?): $3 tests skip"
}

npm_ci node22 "$REFERENCE_DIR/node22" node_modules/.bin/node "Node.js 22 (for the reference pi)"
npm_ci pi-1.6.0 "$REFERENCE_DIR/pi-1.6.0" node_modules/.bin/pi "the reference pi 1.6.0"
MCP_DIR="${PI_MCP_TEST_SERVERS:-$CACHE/pi-mcp-test}"
npm_ci pi-mcp-test "$MCP_DIR" node_modules/@modelcontextprotocol/server-filesystem/package.json \
  "the MCP servers server-everything and server-filesystem"
# mcp-server-time (PyPI) needs mcp 2, which the test extra's mcp 1 excludes: a venv of its own.
if [ ! -e "$MCP_DIR/venv/bin/mcp-server-time" ]; then
  if ! command -v python3 >/dev/null 2>&1; then
    warn "python3 not found: mcp-server-time not installed, its tests skip"
  else
    { python3 -m venv "$MCP_DIR/venv" && timeout 600 "$MCP_DIR/venv/bin/pip" install -q --disable-pip-version-check \
        "mcp-server-time==2026.10.19" >/dev/null 2>&1; } \
      || warn "could not install mcp-server-time into $MCP_DIR/venv (PyPI unreachable?): its tests skip"
  fi
fi
npm_ci pi-acpx "${PI_ACPX_DIR:-$CACHE/pi-acpx}" node_modules/.bin/acpx "acpx (a headless ACP client)"
npm_ci pi-acp "${PI_ACP_DIR:-$CACHE/pi-acp}" node_modules/pi-acp/dist/index.js "pi-acp (an ACP adapter)"
# Before the workers start: each would otherwise install it on its first TypeScript extension.
npm_ci ts-runtime "${PI_TS_RUNTIME_DIR:-$CACHE/pi-coding-agent-python/typescript}" node_modules/.package-lock.json \
  "the TypeScript extension runtime (jiti, TypeBox)"
apt_install chromium chromium "HTML export in a browser"
apt_install bwrap bubblewrap "sandbox"
apt_install tmux tmux "interactive mode in a terminal"
exit 0
