"""Measure the built-in tools by hand: peak RSS of bash on 200 MB of output and of read on a 2 GB file,
and the time edit takes on a 50 MB file. Each case runs in a fresh interpreter so its peak RSS is its own
(ours only: the reference runs tools inside its TUI/agent process, with nothing comparable to isolate).

    .venv/bin/python bench/bench_tools.py
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Row, compile_bytecode, format_table, peak_rss_mb

CASES = {"baseline": "interpreter + tool imports", "bash": "bash, 200 MB of output",
         "read": "read, line 5,000,000 of a 2 GiB file", "read-sparse": "read, 2 GiB sparse binary",
         "edit": "edit, 2 replacements in a 50 MB file"}


def _reset_peak() -> float:
    """Restart VmHWM from the current RSS (Linux ``clear_refs``), so a case's setup is not its peak."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return _rss_mib()


def _rss_mib() -> float:
    """VmHWM: ru_maxrss would carry the parent's peak over exec."""
    return peak_rss_mb(os.getpid())


async def _case(name: str, workdir: Path) -> dict[str, float]:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.coding.tools.base import ToolEnv
    from pi_coding_agent.coding.tools.builtin import create_builtin_tools

    tools = create_builtin_tools(ToolEnv(cwd=workdir))
    base = _rss_mib()
    start = time.perf_counter()
    if name == "baseline":
        pass
    elif name == "bash":
        result = await tools["bash"].execute(
            "b", {"command": "head -c 209715200 /dev/zero | tr '\\0' 'x' | fold -w 100"}, AbortSignal(), lambda _: None
        )
        os.unlink(result.details["fullOutputPath"])
    elif name == "read":
        big = workdir / "big.txt"
        with open(big, "wb") as handle:  # 2 GiB of 100-byte lines, written sparse-free but quickly
            block = (b"y" * 99 + b"\n") * 10_000
            for _ in range(2 * 1024 * 1024 * 1024 // len(block)):
                handle.write(block)
        start = time.perf_counter()
        await tools["read"].execute("r", {"path": "big.txt", "offset": 5_000_000, "limit": 10}, AbortSignal(), lambda _: None)
        big.unlink()
    elif name == "read-sparse":
        with open(workdir / "sparse.bin", "wb") as handle:
            handle.truncate(2 * 1024 * 1024 * 1024)
        await tools["read"].execute("r", {"path": "sparse.bin"}, AbortSignal(), lambda _: None)
    elif name == "edit":
        target = workdir / "fifty.txt"
        with open(target, "w") as handle:  # in blocks: the setup must not set the peak itself
            for first in range(0, 1_000_000, 10_000):
                handle.write("".join(f"line {i} of a fifty megabyte file, padded a little\n"
                                     for i in range(first, first + 10_000)))
        base = _reset_peak()
        start = time.perf_counter()
        await tools["edit"].execute(
            "e",
            {"path": "fifty.txt", "edits": [{"oldText": "line 500000 of", "newText": "LINE 500000 of"},
                                             {"oldText": "line 999999 of", "newText": "last line of"}]},
            AbortSignal(),
            lambda _: None,
        )
    size = (workdir / "fifty.txt").stat().st_size if name == "edit" else 0
    return {"time_s": time.perf_counter() - start, "peak_rss_mb": _rss_mib(), "start_rss_mb": base,
            "file_mib": size / 2**20}


def results() -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, label in CASES.items():
            out = subprocess.run([sys.executable, __file__, name, tmp], check=True, capture_output=True, text=True)
            case = json.loads(out.stdout)
            if name != "baseline":
                rows.append(Row("tools", f"{label}: time", "s", case["time_s"]))
            rows.append(Row("tools", f"{label}: peak RSS", "MiB", case["peak_rss_mb"]))
            if case["file_mib"]:  # the target: at most 3 x the file size (the floor is two copies)
                rows.append(Row("tools", f"{label}: peak RSS / file size", "x", case["peak_rss_mb"] / case["file_mib"],
                                limit=3.0))
    return rows


def main() -> None:
    if len(sys.argv) == 3:
        print(json.dumps(asyncio.run(_case(sys.argv[1], Path(sys.argv[2])))))
        return
    note = compile_bytecode()
    print(format_table(results()))
    print(f"one fresh interpreter per case (VmHWM); {note}")


if __name__ == "__main__":
    main()
