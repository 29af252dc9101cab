"""Compaction preparation benchmark: ``prepare_compaction`` on a 20,000-entry session (no LLM call).

The session is built in memory (no file): turns of a user request, an assistant tool call, a ~7 KB
tool result and a reply, with reported usage, so the cut search walks a realistic branch. Prints the
median wall time of ``get_branch`` + ``prepare_compaction`` over a few runs.

Usage: .venv/bin/python bench/bench_compaction.py [--entries 20000] [--runs 5] [--keep 20000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from common import ROOT, Row, compile_bytecode, format_table

if TYPE_CHECKING:
    from pi_coding_agent.coding.session import SessionManager

sys.path.insert(0, str(ROOT / "src"))


def _usage(n: int) -> dict[str, object]:
    return {"input": 1000 + n, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1050 + n,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def build_session(entries: int, directory: Path) -> SessionManager:
    from pi_coding_agent.coding.session import SessionManager

    sm = SessionManager.create(directory, directory, persist=False)
    body = "x" * 7000
    n = 0
    while len(sm.entries) < entries:
        ts = 1_700_000_000_000 + n
        sm.append_message({"role": "user", "content": [{"type": "text", "text": f"step {n}: look at the file"}],
                           "timestamp": ts})
        sm.append_message({"role": "assistant", "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "toolCall", "id": f"call_{n}", "name": "read", "arguments": {"path": f"src/mod_{n % 50}.py"}}],
            "api": "openai-completions", "provider": "bench", "model": "m", "usage": _usage(n),
            "stopReason": "toolUse", "timestamp": ts})
        sm.append_message({"role": "toolResult", "toolCallId": f"call_{n}", "toolName": "read",
                           "content": [{"type": "text", "text": body}], "isError": False, "timestamp": ts})
        sm.append_message({"role": "assistant", "content": [{"type": "text", "text": f"Done with step {n}."}],
                           "api": "openai-completions", "provider": "bench", "model": "m", "usage": _usage(n),
                           "stopReason": "stop", "timestamp": ts})
        n += 1
    return sm


def results(entries: int = 20_000, runs: int = 5, keep: int = 20_000) -> list[Row]:
    from pi_coding_agent.coding.compaction.prepare import prepare_compaction

    times = []
    with tempfile.TemporaryDirectory(prefix="pi-bench-compaction-") as directory:
        sm = build_session(entries, Path(directory))
        for _ in range(runs):
            started = time.perf_counter()
            prepare_compaction(sm.get_branch(), keep)
            times.append(time.perf_counter() - started)
    return [Row(f"compaction {entries} entries", "get_branch + prepare_compaction", "ms",
                statistics.median(times) * 1000)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=int, default=20000, help="keepRecentTokens")
    args = parser.parse_args()
    note = compile_bytecode()
    print(format_table(results(args.entries, args.runs, args.keep)))
    print(f"median of {args.runs} runs, in this process; {note}")


if __name__ == "__main__":
    main()
