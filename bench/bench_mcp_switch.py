"""MCP servers across session replacements, ours and the reference pi 1.6.0 side by side (medians of
N fresh processes). Two ``direct`` stdio servers in the user mcp.json (the FastMCP test server of
tests/support/fakes) and one in the other project's ``.pi/mcp.json`` (trusted with ``-a``); after a first
prompt (all connected):

* ``switch_session`` into the other directory: the answer (every old server stopped) and the first
  prompt there until its assistant ``message_start`` (the three servers started and connected);
* ``new_session`` in the same directory with mcp.json unchanged: the answer and the next prompt's
  ``message_start`` (pi restarts every server; ours keeps them).

Run by hand: `.venv/bin/python bench/bench_mcp_switch.py [runs]`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from common import (
    MODEL,
    PROVIDER,
    ROOT,
    Row,
    cleanup,
    compile_bytecode,
    env_for,
    format_table,
    median,
    ours_cmd,
    read_record,
    reference_cmd,
    scratch_home,
    spawn,
    stop,
    write_models_json,
)

sys.path.insert(0, str(ROOT))
from bench_mcp import SERVER
from tests.support.fakes.llm_server import FakeLLMServer

MEASURES = ("switch_session answer", "first prompt after the switch", "new_session answer",
            "first prompt after new_session")


def _layout(base_url: str) -> tuple[Path, Path, Path]:
    """(home, agent dir, the other project's session file)."""
    home = scratch_home()
    agent_dir = home / "agent"
    write_models_json(agent_dir, base_url)
    (agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"one": SERVER, "two": SERVER}}))
    other = home / "other"
    (other / ".pi").mkdir(parents=True)
    (other / ".pi" / "mcp.json").write_text(json.dumps({"mcpServers": {"three": SERVER}}))
    session = home / "other.jsonl"
    session.write_text(json.dumps({"type": "session", "version": 3, "id": "0190a000-0000-7000-8000-000000000001",
                                   "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(other)}) + "\n")
    return home, agent_dir, session


def _timed(proc: object, command: dict[str, object], done: object) -> float:
    start = time.perf_counter()
    proc.stdin.write(json.dumps(command).encode() + b"\n")  # type: ignore[attr-defined]
    proc.stdin.flush()  # type: ignore[attr-defined]
    read_record(proc, done)
    return time.perf_counter() - start


def _streams(record: dict[str, object]) -> bool:
    message = record.get("message")
    return record.get("type") == "message_start" and isinstance(message, dict) and message["role"] == "assistant"


def _prompt(proc: object) -> float:
    """Seconds to the assistant's ``message_start`` (the prompt waits for the direct servers)."""
    elapsed = _timed(proc, {"type": "prompt", "message": "hi"}, _streams)
    read_record(proc, lambda r: r.get("type") == "agent_settled")
    return elapsed


def once(cmd: list[str], llm: FakeLLMServer) -> tuple[float, ...]:
    home, agent_dir, session = _layout(llm.url)
    llm.add(*({"content": [{"type": "text", "text": "ok"}]} for _ in range(3)))
    proc = spawn([*cmd, "--mode", "rpc", "--no-session", "-a", "--provider", PROVIDER, "--model", MODEL],
                 env_for(cmd, home, agent_dir), cwd=home)
    _prompt(proc)

    def answered(command_id: str) -> object:
        return lambda r: r.get("type") == "response" and r.get("id") == command_id

    switch = _timed(proc, {"id": "s", "type": "switch_session", "sessionPath": str(session)}, answered("s"))
    after_switch = _prompt(proc)
    new = _timed(proc, {"id": "n", "type": "new_session"}, answered("n"))
    after_new = _prompt(proc)
    stop(proc)
    cleanup(home)
    return switch, after_switch, new, after_new


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    compile_bytecode()
    sides = {"ours": ours_cmd(), "reference": reference_cmd()}
    results: dict[str, list[tuple[float, ...]]] = {side: [] for side, cmd in sides.items() if cmd is not None}
    with FakeLLMServer() as llm:
        for _ in range(runs):
            for side, cmd in sides.items():
                if cmd is not None:
                    results[side].append(once(cmd, llm))
    rows = []
    for index, measure in enumerate(MEASURES):
        ours = median([r[index] for r in results["ours"]])
        reference = median([r[index] for r in results["reference"]]) if results.get("reference") else None
        rows.append(Row("mcp switch", measure, "s", ours, reference))
    print(format_table(rows))


if __name__ == "__main__":
    main()
