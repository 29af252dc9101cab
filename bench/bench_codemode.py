"""codemode, side by side with the reference pi 1.6.0: sandbox start-up per call, per inner-call
overhead against a direct tool call, and memory per worker.

Each side runs ``pi --mode rpc`` with the fake LLM server (``tests/support/fakes/llm_server.py``) calling
``codemode``. Times are the spans between a call's ``tool_execution_start`` and ``_end`` records as
the client reads them, so both sides pay the same event transport.

* start-up: a script that only returns, median over the runs;
* inner call: a script of 50 sequential ``tools.read`` calls, minus the start-up, per call, next to
  the median ``durationMs`` of direct ``read`` calls the model makes;
* memory: resident memory of pi's whole process tree while a script runs (its worker included)
  minus the same tree outside a script, both read by a ``bash`` call running ``ps``.

    .venv/bin/python bench/bench_codemode.py [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import ROOT, Row, compile_bytecode, format_table

sys.path.insert(0, str(ROOT))
from tests.support.reference_pi import REFERENCE_PI
from tests.support.rpc_compare import Conversation, Record, Scenario, play

INNER_CALLS = 50
PS = "ps -eo pid=,ppid=,rss=,args="


def _codemode(call_id: str, code: str) -> list[dict[str, Any]]:
    return [{"content": [{"type": "toolCall", "id": call_id, "name": "codemode", "arguments": {"code": code}}]},
            {"content": [{"type": "text", "text": "ok"}]}]


def _direct(call_id: str, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}]},
            {"content": [{"type": "text", "text": "ok"}]}]


def _script(runs: int) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for i in range(runs):
        steps += _codemode(f"start{i}", "return 1")
        steps += _codemode(f"inner{i}", f"for (let i = 0; i < {INNER_CALLS}; i++) await tools.read({{ path: 'a.txt' }});")
        steps += _direct(f"direct{i}", "read", {"path": "a.txt"})
    steps += _direct("idle", "bash", {"command": PS})
    steps += _codemode("busy", f"return (await tools.bash({{ command: {PS!r} }})).output")
    return steps


async def _drive(conversation: Conversation, runs: int) -> None:
    (conversation.workspace.cwd / "a.txt").write_text("hello\n" * 20)
    for _ in range(runs * 3 + 2):
        await conversation.prompt("go")


def _durations(records: list[Record]) -> dict[str, float]:
    """``durationMs`` of each top-level call's end record, by call id."""
    out: dict[str, float] = {}
    for record in records:
        if record["type"] == "tool_execution_end" and "parentToolCallId" not in record:
            out[record["toolCallId"]] = float(record.get("durationMs", 0))
    return out


def _tree_rss_kib(ps_text: str, root: int, exclude_commands: tuple[str, ...] = ("ps -eo",)) -> float:
    rows = []
    for line in ps_text.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[0].isdigit():
            rows.append((int(parts[0]), int(parts[1]), int(parts[2]), parts[3]))
    children: dict[int, list[tuple[int, int, str]]] = {}
    for pid, ppid, rss, args in rows:
        children.setdefault(ppid, []).append((pid, rss, args))
    own = next((rss for pid, _, rss, _ in rows if pid == root), 0)
    total, stack = float(own), [root]
    while stack:
        for pid, rss, args in children.get(stack.pop(), []):
            stack.append(pid)
            # the bash running ps and ps itself are not the sandbox's
            if not any(marker in args for marker in exclude_commands) and not args.startswith(("/bin/bash", "bash")):
                total += rss
    return total


def _text(records: list[Record], call_id: str) -> str:
    end = next(r for r in records if r["type"] == "tool_execution_end" and r["toolCallId"] == call_id)
    return "".join(b.get("text", "") for b in end["result"]["content"] if b.get("type") == "text")


async def measure(kind: str, runs: int, root: Path) -> dict[str, float]:
    pid_box: list[int] = []

    async def drive(conversation: Conversation) -> None:
        pid_box.append(conversation.proc.proc.pid)
        await _drive(conversation, runs)

    scenario = Scenario(script=_script(runs), drive=drive, settings={"defaultTools": ["+codemode"]})
    played = await play(kind, scenario, root / kind)
    spans = _durations(played.records)
    start = statistics.median(spans[f"start{i}"] for i in range(runs))
    inner = statistics.median(spans[f"inner{i}"] for i in range(runs))
    direct = statistics.median(spans[f"direct{i}"] for i in range(runs))
    pid = pid_box[0]
    idle = _tree_rss_kib(_text(played.records, "idle"), pid)
    busy = _tree_rss_kib(_text(played.records, "busy"), pid)
    return {"start": start, "inner": (inner - start) / INNER_CALLS, "direct": direct,
            "memory": (busy - idle) / 1024}


async def results(runs: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        ours = await measure("ours", runs, Path(tmp))
        ref = await measure("reference", runs, Path(tmp)) if REFERENCE_PI.exists() else None
    get = (lambda key: ref[key]) if ref else (lambda key: None)
    return [
        Row("codemode", "sandbox start-up per call", "ms", ours["start"], get("start")),
        Row("codemode", "per inner call", "ms", ours["inner"], get("inner")),
        Row("codemode", "direct read call", "ms", ours["direct"], get("direct")),
        Row("codemode", "memory per worker", "MiB", ours["memory"], get("memory")),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    note = compile_bytecode()
    print(format_table(asyncio.run(results(args.runs))))
    print(note)


if __name__ == "__main__":
    main()
