"""MCP costs, ours and the reference pi 1.6.0 side by side (each the median of N fresh processes):

* ``get_state`` answer time and idle RSS with no mcp.json, and with two stdio servers configured
  (the FastMCP test server of tests/support/fakes): the servers connect in the background, so the answer
  must not wait for them;
* a second ``get_state`` sent while the servers are still connecting (command-loop latency);
* the first prompt with a ``direct`` server: spawn to the first assistant ``message_start``;
* per-call overhead: ``durationMs`` of ``mcp__one__echo`` called by the fake LLM, 10 calls per run
  (the server's own time is the same for both sides).

Run by hand: `.venv/bin/python bench/bench_mcp.py [runs]`.
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
    peak_rss_mb,
    read_record,
    reference_cmd,
    scratch_home,
    spawn,
    stop,
    write_models_json,
)

sys.path.insert(0, str(ROOT))
from tests.support.fakes.llm_server import FakeLLMServer

SERVER = {"command": sys.executable, "args": ["-m", "tests.support.fakes.mcp_server", "stdio"], "cwd": str(ROOT),
          "exposure": "direct"}
CALLS = 10


def _home(servers: int, base_url: str) -> tuple[Path, Path]:
    home = scratch_home()
    agent_dir = home / "agent"
    write_models_json(agent_dir, base_url)
    if servers:
        names = ["one", "two"][:servers]
        (agent_dir / "mcp.json").write_text(json.dumps({"mcpServers": {n: SERVER for n in names}}))
    return home, agent_dir


def start_once(cmd: list[str], servers: int, base_url: str) -> tuple[float, float, float]:
    """First get_state answer (s), a second get_state's latency (s), VmHWM (MB) once idle."""
    home, agent_dir = _home(servers, base_url)
    args = ["--mode", "rpc", "--no-session", "--provider", PROVIDER, "--model", MODEL]
    start = time.perf_counter()
    proc = spawn([*cmd, *args], env_for(cmd, home, agent_dir), cwd=home)
    assert proc.stdin is not None
    proc.stdin.write(b'{"id":"a","type":"get_state"}\n')
    proc.stdin.flush()
    read_record(proc, lambda r: r.get("id") == "a")
    first = time.perf_counter() - start
    time.sleep(0.05)
    sent = time.perf_counter()
    proc.stdin.write(b'{"id":"b","type":"get_state"}\n')
    proc.stdin.flush()
    read_record(proc, lambda r: r.get("id") == "b")
    second = time.perf_counter() - sent
    time.sleep(0.2)
    rss = peak_rss_mb(proc.pid)
    stop(proc)
    cleanup(home)
    return first, second, rss


def first_stream(cmd: list[str], llm: FakeLLMServer) -> float:
    """Seconds from spawning (prompt sent at once) to the first assistant ``message_start``, with a
    direct server: the prompt waits for the server so its tools are declared in the first request."""
    home, agent_dir = _home(1, llm.url)
    llm.add({"content": [{"type": "text", "text": "hello"}]})
    start = time.perf_counter()
    proc = spawn([*cmd, "--mode", "rpc", "--no-session", "--provider", PROVIDER, "--model", MODEL],
                 env_for(cmd, home, agent_dir), cwd=home)
    assert proc.stdin is not None
    proc.stdin.write(b'{"id":"p","type":"prompt","message":"hi"}\n')
    proc.stdin.flush()
    read_record(proc, lambda r: r.get("type") == "message_start" and r["message"]["role"] == "assistant")
    elapsed = time.perf_counter() - start
    read_record(proc, lambda r: r.get("type") == "agent_settled")
    stop(proc)
    cleanup(home)
    return elapsed


def call_overhead(cmd: list[str], llm: FakeLLMServer) -> float:
    """Median ``durationMs`` of one echo call."""
    home, agent_dir = _home(1, llm.url)
    for i in range(CALLS):
        llm.add({"content": [{"type": "toolCall", "id": f"c{i}", "name": "mcp__one__echo", "arguments": {"text": "x"}}]})
    llm.add({"content": [{"type": "text", "text": "done"}]})
    proc = spawn([*cmd, "--mode", "rpc", "--no-session", "--provider", PROVIDER, "--model", MODEL],
                 env_for(cmd, home, agent_dir), cwd=home)
    assert proc.stdin is not None
    proc.stdin.write(b'{"id":"p","type":"prompt","message":"go"}\n')
    proc.stdin.flush()
    durations = []
    while len(durations) < CALLS:
        record = read_record(proc, lambda r: r.get("type") in ("tool_execution_end", "agent_settled"))
        if record["type"] == "agent_settled":
            break
        durations.append(float(record["durationMs"]))  # type: ignore[arg-type]
    stop(proc)
    cleanup(home)
    return median(durations) if durations else float("nan")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    compile_bytecode()
    sides = {"ours": ours_cmd(), "reference": reference_cmd()}
    rows = []
    with FakeLLMServer() as llm:
        for servers in (0, 2):
            results: dict[str, list[tuple[float, float, float]]] = {"ours": [], "reference": []}
            for _ in range(runs):
                for side, cmd in sides.items():
                    if cmd is not None:
                        results[side].append(start_once(cmd, servers, llm.url))
            label = "no mcp.json" if servers == 0 else "2 stdio servers"
            for index, (measure, unit) in enumerate((("first get_state", "s"), ("2nd get_state", "s"),
                                                     ("idle RSS", "MB"))):
                ours = median([r[index] for r in results["ours"]])
                ref = median([r[index] for r in results["reference"]]) if results["reference"] else None
                rows.append(Row("mcp", f"{measure} ({label})", unit, ours, ref))
        first = {side: median([first_stream(cmd, llm) for _ in range(runs)])
                 for side, cmd in sides.items() if cmd is not None}
        rows.append(Row("mcp", "first prompt streams (1 direct server)", "s", first["ours"], first.get("reference")))
        per_call = {side: median([call_overhead(cmd, llm) for _ in range(runs)])
                    for side, cmd in sides.items() if cmd is not None}
        rows.append(Row("mcp", "echo call durationMs", "ms", per_call["ours"], per_call.get("reference")))
    print(format_table(rows))


if __name__ == "__main__":
    main()
