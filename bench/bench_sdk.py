"""The in-process SDK against the RPC process: start, round trip, cost per delta, memory per session, @tool calls.

Both sides talk to the same fake LLM server (``tests/support/fakes/llm_server.py`` in its own process,
OpenAI chat-completions wire) through a models.json that routes provider ``bench`` to it; the RPC
side is ``bench_streaming.run_once`` (a fresh ``pi --mode rpc --no-session`` per run, start-up
excluded). The SDK side creates one session per run with ``create_agent_session`` in this process,
reads the run through ``session.stream()`` and counts CPU with ``time.process_time`` from the
prompt to ``agent_settled``.

* session start: ``create_agent_session`` (faux, in memory, no resources) against a ``pi --mode
  rpc`` process's spawn to its ``get_state`` answer (wall, ms);
* round trip: a one-delta reply, prompt to ``agent_settled`` (wall, ms);
* per delta: (CPU of an N-delta reply - CPU of a one-delta reply) / N (µs), ``stream()`` against RPC;
* memory: resident memory each extra idle session adds to this process, against the resident
  memory of one idle RPC process (what each extra session costs when run as a process), in MiB;
  and the Python heap each extra session keeps (KiB, tracemalloc);
* ``@tool``: one ``execute`` of a decorated two-argument function (pydantic validation, JSON
  result) against a hand-written ``AgentTool`` doing the same (µs per call).

Usage: .venv/bin/python bench/bench_sdk.py [--runs 5] [--chunks 2000] [--sessions 50]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, ClassVar

from bench_streaming import run_once, scripted_reply, start_server
from common import (
    MODEL,
    PROVIDER,
    ROOT,
    Row,
    answered_rpc,
    cleanup,
    env_for,
    format_table,
    median,
    ours_cmd,
    scratch_home,
    stop,
    write_models_json,
)

sys.path.insert(0, str(ROOT / "src"))

from pi_coding_agent import ToolResult, create_agent_session, tool
from pi_coding_agent.agent.tool import AgentTool, text_result


async def sdk_once(reply: dict[str, object]) -> tuple[float, float]:
    """(wall s, CPU s) of one prompt streamed through an in-process session."""
    home = scratch_home()
    script = home / "script.json"
    script.write_text(json.dumps([reply]))
    server, url = start_server(script)
    write_models_json(home / "agent", url)
    try:
        async with create_agent_session(cwd=home, agent_dir=home / "agent", provider=PROVIDER, model=MODEL,
                                        in_memory=True, load_resources=False) as session:
            deltas = 0
            cpu, started = time.process_time(), time.perf_counter()
            async for event in session.stream("stream please"):
                deltas += event["type"] == "message_update"
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        server.kill()
        server.wait()
        cleanup(home)
    if deltas < len(reply["content"]):  # type: ignore[arg-type]
        raise RuntimeError(f"only {deltas} deltas arrived")
    return wall, cpu


def faux_session(home: Path) -> Any:
    return create_agent_session(cwd=home, agent_dir=home, provider="faux", model="faux-1", in_memory=True,
                                load_resources=False)


async def session_start(runs: int) -> float:
    """Median ms of ``create_agent_session`` once the process has made one (imports warm)."""
    home = scratch_home()
    await (await faux_session(home)).shutdown()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        session = await faux_session(home)
        times.append(time.perf_counter() - started)
        await session.shutdown()
    cleanup(home)
    return median(times) * 1000


def rpc_start_and_rss(runs: int) -> tuple[float, float]:
    """(median ms from spawn to the get_state answer, median resident MiB of the idle process)."""
    home = scratch_home()
    write_models_json(home / "agent", "http://127.0.0.1:9/v1")
    env = env_for(ours_cmd(), home, home / "agent")
    times, rss = [], []
    for _ in range(runs):
        started = time.perf_counter()
        proc = answered_rpc(ours_cmd(), env, home)
        times.append(time.perf_counter() - started)
        rss.append(resident_mib(proc.pid))
        stop(proc)
    cleanup(home)
    return median(times) * 1000, median(rss)


def resident_mib(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def idle_growth(count: int) -> tuple[float, float]:
    """(resident MiB, Python heap KiB) each idle session adds once one already exists."""
    home = scratch_home()
    sessions = [await faux_session(home)]
    gc.collect()
    tracemalloc.start()
    heap, rss = tracemalloc.get_traced_memory()[0], resident_mib()
    for _ in range(count):
        sessions.append(await faux_session(home))
    gc.collect()
    grown_rss = (resident_mib() - rss) / count
    grown_heap = (tracemalloc.get_traced_memory()[0] - heap) / count / 1024
    tracemalloc.stop()
    await asyncio.gather(*(s.shutdown() for s in sessions))
    cleanup(home)
    return grown_rss, grown_heap


@tool
def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers."""
    return {"sum": a + b}


class HandAdd(AgentTool):
    """The same tool written by hand: a literal schema, the dict read directly, JSON built by hand."""

    name = "hand_add"
    description = "Add two numbers."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                  "required": ["a", "b"]}

    async def execute(self, tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any) -> ToolResult:
        return text_result(json.dumps({"sum": params["a"] + params["b"]}, separators=(",", ":")))


async def per_call_us(made: AgentTool, calls: int = 20_000) -> float:
    args = {"a": 2, "b": 3}
    started = time.process_time()
    for _ in range(calls):
        await made.execute("id", args, None, lambda _: None)  # type: ignore[arg-type]
    return (time.process_time() - started) / calls * 1e6


def results(runs: int, chunks: int, sessions: int) -> list[Row]:
    small, large = scripted_reply(1), scripted_reply(chunks)
    sdk_small = [asyncio.run(sdk_once(small)) for _ in range(runs)]
    sdk_large = [asyncio.run(sdk_once(large)) for _ in range(runs)]
    rpc_small = [run_once(ours_cmd(), small) for _ in range(runs)]
    rpc_large = [run_once(ours_cmd(), large) for _ in range(runs)]
    per_delta_sdk = (median([c for _, c in sdk_large]) - median([c for _, c in sdk_small])) / chunks * 1e6
    per_delta_rpc = (median([s.cpu_s for s in rpc_large]) - median([s.cpu_s for s in rpc_small])) / chunks * 1e6
    rpc_start, rpc_rss = rpc_start_and_rss(runs)
    grown_rss, grown_heap = asyncio.run(idle_growth(sessions))
    return [
        Row("sdk vs rpc process", "session start", "ms", asyncio.run(session_start(runs)), rpc_start),
        Row("sdk vs rpc process", "round trip, 1 delta", "ms", median([w for w, _ in sdk_small]) * 1000,
            median([s.wall_s for s in rpc_small]) * 1000),
        Row("sdk vs rpc process", f"CPU per delta, stream() ({chunks})", "µs", per_delta_sdk, per_delta_rpc, 1.0),
        Row("sdk vs rpc process", f"resident per extra idle session ({sessions})", "MiB", grown_rss, rpc_rss),
        Row("sdk", "heap per extra idle session", "KiB", grown_heap),
        Row("@tool vs AgentTool", "execute, 2 int args, JSON result", "µs", asyncio.run(per_call_us(add)),
            asyncio.run(per_call_us(HandAdd()))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=50)
    args = parser.parse_args()
    print(format_table(results(args.runs, args.chunks, args.sessions)))
    print(f"median of {args.runs} runs; the 'reference' column is our own RPC process "
          "(for @tool: a hand-written AgentTool)")


if __name__ == "__main__":
    main()
