"""What the sandbox costs each ``bash`` call: the same short command through the bash tool with the
sandbox off, read-only and workspace-write (median wall time of many calls, alternating modes so they
share the machine's load). Ours only: pi 1.6.0 has no sandbox to compare with.

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


async def _one_call(tool: object, command: str) -> float:
    from pi_coding_agent.ai.abort import AbortSignal

    start = time.perf_counter()
    await tool.execute("b", {"command": command}, AbortSignal(), lambda _: None)  # type: ignore[attr-defined]
    return (time.perf_counter() - start) * 1000


async def _measure(calls: int) -> dict[str, list[float]]:
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy
    from pi_coding_agent.coding.tools.base import ToolEnv
    from pi_coding_agent.coding.tools.builtin import create_builtin_tools

    work = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    tools = {mode: create_builtin_tools(ToolEnv(cwd=work, sandbox=None if mode == "off" else
                                                SandboxPolicy(mode=mode, cwd=work)))["bash"] for mode in MODES}
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(calls):
        for mode in MODES:
            times[mode].append(await _one_call(tools[mode], "echo hi > /dev/null"))
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
    medians = {mode: statistics.median(values) for mode, values in times.items()}
    rows = [Row("sandbox", f"bash call, sandbox {mode}", "ms", medians[mode]) for mode in MODES]
    rows.append(Row("sandbox", "added by workspace-write", "ms", medians["workspace-write"] - medians["off"]))
    print(format_table(rows, markdown=args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
