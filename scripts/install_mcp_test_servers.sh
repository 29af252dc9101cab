#!/usr/bin/env bash
# Installs the third-party MCP servers the interop tests run into a cache folder:
# @modelcontextprotocol/server-everything and @modelcontextprotocol/server-filesystem from npm,
# mcp-server-time from PyPI (in a venv of its own). Each test skips with a reason when its server is
# absent, so a failed install only costs those tests.
set -uo pipefail
DIR="${PI_MCP_TEST_SERVERS:-$HOME/.cache/pi-mcp-test}"
mkdir -p "$DIR"

NPM_SERVERS=(@modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem)
missing=()
for package in "${NPM_SERVERS[@]}"; do
  [ -e "$DIR/node_modules/$package/package.json" ] || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  if command -v npm >/dev/null 2>&1; then
    (cd "$DIR" && timeout 300 npm install --no-audit --no-fund --silent "${missing[@]}") \
      || echo "warning: could not install ${missing[*]} (npm unreachable?)" >&2
  else
    echo "warning: npm not found; the tests of ${missing[*]} will be skipped" >&2
  fi
fi

if [ ! -x "$DIR/venv/bin/mcp-server-time" ]; then
  (python3 -m venv "$DIR/venv" && timeout 300 "$DIR/venv/bin/pip" install -q mcp-server-time) \
    || echo "warning: could not install mcp-server-time (PyPI unreachable?)" >&2
fi
