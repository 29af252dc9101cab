"""The in-process SDK against the RPC process: prompt round trip, cost per delta, memory per idle session.

Both sides talk to the same fake LLM server (``tests/fakes/llm_server.py`` in its own process,
OpenAI chat-completions wire) through a models.json that routes provider ``bench`` to it; the RPC
side is ``bench_streaming.run_once`` (a fresh ``pi --mode rpc --no-session`` per run, start-up
excluded). The SDK side creates one session per run with ``create_agent_session`` in this process
and counts CPU with ``time.process_time`` from ``prompt`` to ``agent_settled``.

* round trip: a one-delta reply, prompt to ``agent_settled`` (wall, ms);
* per delta: (CPU of an N-delta reply - CPU of a one-delta reply) / N (µs);
* idle session: Python heap kept per additional idle session after the first (KiB, tracemalloc).

Usage: .venv/bin/python bench/bench_sdk.py [--runs 5] [--chunks 2000] [--sessions 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import tracemalloc

from bench_streaming import run_once, scripted_reply, start_server
from common import (
    MODEL,
    PROVIDER,
    ROOT,
    Row,
    cleanup,
    format_table,
    median,
    ours_cmd,
    scratch_home,
    write_models_json,
)

sys.path.insert(0, str(ROOT / "src"))

from pi_coding_agent import create_agent_session


async def sdk_once(reply: dict[str, object]) -> tuple[float, float]:
    """(wall s, CPU s) of one prompt through an in-process session."""
    home = scratch_home()
    script = home / "script.json"
    script.write_text(json.dumps([reply]))
    server, url = start_server(script)
    write_models_json(home / "agent", url)
    try:
        session = await create_agent_session(cwd=home, agent_dir=home / "agent", provider=PROVIDER, model=MODEL,
                                             in_memory=True, load_resources=False)
        try:
            deltas = 0

            def count(event: dict[str, object]) -> None:
                nonlocal deltas
                deltas += event["type"] == "message_update"

            session.subscribe(count)
            stream = session.events(until_settled=True)
            cpu, started = time.process_time(), time.perf_counter()
            await session.prompt("stream please")
            async for _ in stream:
                pass
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        finally:
            await session.shutdown()
    finally:
        server.kill()
        server.wait()
        cleanup(home)
    if deltas < len(reply["content"]):  # type: ignore[arg-type]
        raise RuntimeError(f"only {deltas} deltas arrived")
    return wall, cpu


async def idle_growth(count: int) -> float:
    """KiB of Python heap (tracemalloc) each idle session keeps once one already exists."""
    home = scratch_home()
    sessions = [await create_agent_session(cwd=home, agent_dir=home, provider="faux", model="faux-1",
                                           in_memory=True, load_resources=False)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(count):
        sessions.append(await create_agent_session(cwd=home, agent_dir=home, provider="faux", model="faux-1",
                                                   in_memory=True, load_resources=False))
    grown = (tracemalloc.get_traced_memory()[0] - before) / count / 1024
    tracemalloc.stop()
    await asyncio.gather(*(s.shutdown() for s in sessions))
    cleanup(home)
    return grown


def results(runs: int, chunks: int, sessions: int) -> list[Row]:
    small, large = scripted_reply(1), scripted_reply(chunks)
    sdk_small = [asyncio.run(sdk_once(small)) for _ in range(runs)]
    sdk_large = [asyncio.run(sdk_once(large)) for _ in range(runs)]
    rpc_small = [run_once(ours_cmd(), small) for _ in range(runs)]
    rpc_large = [run_once(ours_cmd(), large) for _ in range(runs)]
    per_delta_sdk = (median([c for _, c in sdk_large]) - median([c for _, c in sdk_small])) / chunks * 1e6
    per_delta_rpc = (median([s.cpu_s for s in rpc_large]) - median([s.cpu_s for s in rpc_small])) / chunks * 1e6
    return [
        Row("sdk vs rpc process", "round trip, 1 delta", "ms", median([w for w, _ in sdk_small]) * 1000,
            median([s.wall_s for s in rpc_small]) * 1000),
        Row("sdk vs rpc process", f"CPU per delta ({chunks})", "µs", per_delta_sdk, per_delta_rpc, 1.1),  # #20
        Row("sdk", "heap per extra idle session", "KiB", asyncio.run(idle_growth(sessions))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=10)
    args = parser.parse_args()
    print(format_table(results(args.runs, args.chunks, args.sessions)))
    print(f"median of {args.runs} runs; the 'reference' column is our own RPC process")


if __name__ == "__main__":
    main()
