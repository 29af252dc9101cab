"""What the sandbox costs each ``bash`` call: the same short command through the bash tool with the
sandbox off, read-only and workspace-write (median wall time of many calls, alternating modes so they
share the machine's load), and each ``read``, ``write``, ``edit`` and ``grep`` call, off and
workspace-write (the file tools' checked opens; grep's ripgrep in bubblewrap). Ours only: pi 1.6.0
has no sandbox to compare with.

    .venv/bin/python bench/bench_sandbox.py [--calls 40]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import Row, format_table

MODES = ("off", "read-only", "workspace-write")


FILE_CALLS = {
    "read": {"path": "deep/er/file.txt"},
    "write": {"path": "deep/er/file.txt", "content": "one\ntwo\n"},
    "edit": {"path": "deep/er/file.txt", "edits": [{"oldText": "two", "newText": "three"}]},
    "grep": {"pattern": "two", "path": "deep/er/file.txt"},
}


async def _one_call(tool: object, params: dict[str, object]) -> float:
    from pi_coding_agent.ai.abort import AbortSignal

    start = time.perf_counter()
    await tool.execute("b", params, AbortSignal(), lambda _: None)  # type: ignore[attr-defined]
    return (time.perf_counter() - start) * 1000


async def _measure(calls: int) -> dict[str, list[float]]:
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy
    from pi_coding_agent.coding.tools.base import ToolEnv
    from pi_coding_agent.coding.tools.builtin import create_builtin_tools

    work = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    (work / "deep" / "er").mkdir(parents=True)
    (work / "deep" / "er" / "file.txt").write_text("one\ntwo\n")
    tools = {mode: create_builtin_tools(ToolEnv(cwd=work, sandbox=None if mode == "off" else
                                                SandboxPolicy(mode=mode, cwd=work))) for mode in MODES}
    times: dict[str, list[float]] = {}
    for _ in range(calls):
        for mode in MODES:
            times.setdefault(f"bash|{mode}", []).append(
                await _one_call(tools[mode]["bash"], {"command": "echo hi > /dev/null"}))
        for mode in ("off", "workspace-write"):  # write restores the file each edit changes
            for name, params in FILE_CALLS.items():
                times.setdefault(f"{name}|{mode}", []).append(await _one_call(tools[mode][name], params))
    shutil.rmtree(work, ignore_errors=True)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        print("bubblewrap (bwrap) is not installed: apt-get install bubblewrap", file=sys.stderr)
        return 1
    times = asyncio.run(_measure(args.calls))
    medians = {key: statistics.median(values) for key, values in times.items()}
    rows = [Row("sandbox", f"{key.split('|')[0]} call, sandbox {key.split('|')[1]}", "ms", value)
            for key, value in medians.items()]
    rows += [Row("sandbox", f"{tool}: added by workspace-write", "ms",
                 medians[f"{tool}|workspace-write"] - medians[f"{tool}|off"]) for tool in ("bash", *FILE_CALLS)]
    print(format_table(rows, markdown=args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
