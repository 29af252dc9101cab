#!/usr/bin/env bash
# Sets up .venv with the package and its test extras, installs what the other tests need into cache
# folders (scripts/install_test_deps.sh: the reference pi 1.6.0 and its Node.js, npm test peers,
# chromium, bubblewrap), then runs lint, type checks and the suite on every core plus one (pytest-xdist).
# Arguments go to pytest; `bash scripts/test.sh --fast` runs the inner-loop subset (README, "Tests").
# Each step is idempotent; offline, what is cached is used and the rest skips, named at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# pip runs again only when pyproject.toml changed since the last install (offline, an unchanged
# checkout needs no registry).
STAMP=.venv/.pyproject.sha256
if [ "$(sha256sum pyproject.toml)" != "$(cat "$STAMP" 2>/dev/null)" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
  sha256sum pyproject.toml >"$STAMP"
fi
bash scripts/install_test_deps.sh
# --fast: the inner-loop subset, without the side-by-side runs, the browser and the slow tests.
if [ "${1:-}" = "--fast" ]; then
  shift
  set -- -m "not reference and not browser and not slow" "$@"
fi
.venv/bin/ruff check src tests bench examples
.venv/bin/mypy
# Bytecode caches on even where the environment turns them off: without them each `pi` process the
# tests start compiles the package again (half the CPU of the tests that start processes, measured)
# and each worker rewrites the asserts of every test module again.
unset PYTHONDONTWRITEBYTECODE
# Compiled once here: in a fresh clone the workers' first `pi` processes would each compile the
# package at the same time.
.venv/bin/python -m compileall -q -j 0 src >/dev/null
# One worker more than cores: about a third of the suite's wall time is tests that wait (a server's
# start, a timeout): two workers used 1.3 of two idle cores, and a third fills the waits (README, "Tests").
WORKERS="${PI_TEST_WORKERS:-$(.venv/bin/python -c 'import os; print((os.cpu_count() or 1) + 1)')}"
exec .venv/bin/python -m pytest -n "$WORKERS" "$@"
