"""Streaming with features on: CPU per delta with MCP servers configured or an extension loaded,
against the same agent without them (issue #20: within 10 %).

Per run and variant a fresh fake LLM server (``tests/support/fakes/llm_server.py``) and a fresh
``pi --mode rpc --no-session`` whose models.json routes provider ``bench`` to it: plain, with two
stdio MCP servers (the FastMCP fake, ``bench_startup.MCP_SERVER``), with an extension (``-e`` the
permission-gate example). Once ``get_state`` is answered and the servers had a moment to connect,
one prompt streams ``--chunks`` deltas; CPU (``/proc/<pid>/stat``) from writing the prompt to
``agent_settled``, divided by the chunk count. The variants take turns run after run.

Usage: .venv/bin/python bench/bench_features.py [--runs 5] [--chunks 5000]
"""

from __future__ import annotations

import json
import time

import common
from bench_startup import EXTENSION, FEATURE_LIMIT, MCP_SERVER
from bench_streaming import SETTLED, read_until, scripted_reply, start_server
from common import Row, median

VARIANTS: dict[str, tuple[tuple[str, ...], int]] = {  # name -> (extra arguments, MCP servers)
    "plain": ((), 0), "2 stdio MCP servers": ((), 2), "an extension (-e)": (("-e", str(EXTENSION)), 0)}
SETTLE_S = 1.0  # lets MCP servers finish connecting before the prompt


def cpu_per_delta_us(extra: tuple[str, ...], servers: int, chunks: int) -> float:
    home = common.scratch_home()
    script = home / "script.json"
    script.write_text(json.dumps([scripted_reply(chunks)]))
    server, url = start_server(script)
    common.write_models_json(home / "agent", url)
    if servers:
        names = ["one", "two"][:servers]
        (home / "agent" / "mcp.json").write_text(json.dumps({"mcpServers": {n: MCP_SERVER for n in names}}))
    cmd = [*common.ours_cmd(), *extra]
    proc = common.answered_rpc(cmd, common.env_for(cmd, home, home / "agent"), home)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        time.sleep(SETTLE_S)
        before = common.cpu_seconds(proc.pid)
        proc.stdin.write(b'{"id":"p","type":"prompt","message":"stream please"}\n')
        proc.stdin.flush()
        read_until(proc.stdout.fileno(), SETTLED, bytearray())
        return (common.cpu_seconds(proc.pid) - before) / chunks * 1e6
    finally:
        common.stop(proc)
        server.kill()
        server.wait()
        common.cleanup(home)


def results(runs: int = 5, chunks: int = 5000) -> list[Row]:
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(runs):
        for name, (extra, servers) in VARIANTS.items():
            samples[name].append(cpu_per_delta_us(extra, servers, chunks))
    plain = median(samples["plain"])
    return [Row(f"streaming {chunks} deltas (ours)", f"{name} vs without: CPU per delta", "us",
                median(values), plain, FEATURE_LIMIT) for name, values in samples.items() if name != "plain"]


def main() -> None:
    common.runs_and_chunks_main(__doc__, results, "the plain agent")


if __name__ == "__main__":
    main()
