#!/usr/bin/env bash
# Sets up .venv with the package and its test extras (idempotent), installs what the end-to-end
# tests need (chromium, bubblewrap, the reference pi, npm test peers), then runs lint, type checks and the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# Debian packages the end-to-end tests use: chromium (HTML export), bubblewrap (the sandbox), tmux (the
# interactive mode in a real terminal).
if [ "${CI:-}" = "true" ]; then
  missing=""
  command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
  command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
  command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
  if [ -n "$missing" ]; then
    # shellcheck disable=SC2086
    (apt-get update -qq && apt-get install -y -qq $missing >/dev/null) || echo "warning: could not install$missing" >&2
  fi
fi
# The comparison tests run the reference pi 1.6.0 side by side (they skip, with a reason, without it).
REFERENCE_SCRIPT=../shared/tools/reference-pi.sh
if [ "${CI:-}" = "true" ] && [ -f "$REFERENCE_SCRIPT" ] \
   && [ ! -e "${PI_REFERENCE_DIR:-$HOME/.cache/pi-reference}/pi-1.6.0/node_modules/.bin/pi" ]; then
  bash "$REFERENCE_SCRIPT" >/dev/null || echo "warning: could not install the reference pi" >&2
fi
# The MCP interop test runs a third-party server from npm (it skips, with a reason, without it).
bash scripts/install_mcp_test_servers.sh
# acpx, a third-party headless ACP client, drives pi --mode acp (tests/test_acp_acpx.py; node >= 22.13,
# taken from the reference install; the test skips, with a reason, without it).
ACPX_DIR="${PI_ACPX_DIR:-$HOME/.cache/pi-acpx}"
if [ "${CI:-}" = "true" ] && [ ! -e "$ACPX_DIR/node_modules/.bin/acpx" ] && command -v npm >/dev/null 2>&1; then
  (mkdir -p "$ACPX_DIR" && cd "$ACPX_DIR" && npm install -q --no-audit --no-fund acpx@0.19.1 >/dev/null) \
    || echo "warning: could not install acpx" >&2
fi
.venv/bin/ruff check src tests bench examples
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
