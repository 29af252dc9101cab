"""Offline start-up with an extension provider's saved model list: how soon the client sees it.

A ``Provider`` with ``fetch_models`` (``examples/extensions/cached_catalog.py``; the reference runs
its TypeScript twin from ``tests/coding/extensions/test_extension_provider_store.py``) and a ``models-store.json``
snapshot of ``--models`` models. With ``PI_OFFLINE=1`` the server is never asked, so the list can
only come from the snapshot. The clock runs from spawning ``pi --mode rpc`` to the first
``get_available_models`` answer that lists every saved model (asked again at once until it does).

Usage: .venv/bin/python bench/bench_provider_snapshot.py [--runs 5] [--models 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import common
from common import Row, median

sys.path.insert(0, str(common.ROOT))
from tests.coding.extensions.test_extension_provider_store import TEAM_TS  # the twin the tests compare

LIST = b'{"id":"m","type":"get_available_models"}\n'
SERVER = "http://127.0.0.1:9"


def _snapshot(count: int) -> dict[str, object]:
    model = {"api": "openai-completions", "provider": "team", "baseUrl": f"{SERVER}/v1", "reasoning": False,
             "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
             "contextWindow": 32000, "maxTokens": 4096}
    return {"team": {"models": [{"id": f"m{i}", "name": f"m{i}", **model} for i in range(count)],
                     "checkedAt": 1700000000000}}


def _listed(proc: object, count: int) -> bool:
    record = common.read_record(proc, lambda r: r.get("id") == "m")  # type: ignore[arg-type]
    return len([m for m in record["data"]["models"] if m["provider"] == "team"]) >= count


def _once(cmd: list[str], extension: Path, count: int) -> float:
    home = common.scratch_home()
    agent = home / "agent"
    agent.mkdir()
    (agent / "models-store.json").write_text(json.dumps(_snapshot(count)))
    (agent / "auth.json").write_text(json.dumps({"team": {"type": "api_key", "key": "k"}}))
    env = {**common.env_for(cmd, home, agent), "TEAM_URL": SERVER}
    started = time.perf_counter()
    proc = common.spawn([*cmd, "--mode", "rpc", "--no-session", "-e", str(extension)], env, cwd=home)
    try:
        assert proc.stdin is not None
        while True:
            proc.stdin.write(LIST)
            proc.stdin.flush()
            if _listed(proc, count):
                return time.perf_counter() - started
    finally:
        common.stop(proc)
        common.cleanup(home)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--models", type=int, default=200)
    args = parser.parse_args()
    note = common.compile_bytecode()
    ours = [_once(common.ours_cmd(), common.ROOT / "examples" / "extensions" / "cached_catalog.py", args.models)
            for _ in range(args.runs)]
    reference = None
    if (cmd := common.reference_cmd()) is not None:
        twin = common.scratch_home() / "ext.ts"
        twin.write_text(TEAM_TS)
        reference = median([_once(cmd, twin, args.models) for _ in range(args.runs)]) * 1000
    row = Row("provider_snapshot", f"start to {args.models} saved models listed", "ms", median(ours) * 1000,
              reference, target=1.0)
    print(common.format_table([row]))
    print(f"median of {args.runs} runs; {note}")


if __name__ == "__main__":
    main()
