#!/usr/bin/env bash
# Installs the third-party MCP server the interop tests run (@modelcontextprotocol/server-everything)
# into a cache folder; tests/test_mcp_everything.py skips with a reason when it is absent.
set -uo pipefail
DIR="${PI_MCP_TEST_SERVERS:-$HOME/.cache/pi-mcp-test}"
if [ -e "$DIR/node_modules/@modelcontextprotocol/server-everything/package.json" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "warning: npm not found; the server-everything interop test will be skipped" >&2
  exit 0
fi
mkdir -p "$DIR"
(cd "$DIR" && timeout 300 npm install --no-audit --no-fund --silent @modelcontextprotocol/server-everything) \
  || echo "warning: could not install @modelcontextprotocol/server-everything (npm unreachable?)" >&2
