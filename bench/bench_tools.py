"""Measure the built-in tools by hand: peak RSS of bash on 200 MB of output and of read on a 2 GB file,
and the time edit takes on a 50 MB file. Each case runs in a fresh interpreter so its peak RSS is its own.

    .venv/bin/python bench/bench_tools.py
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _case(name: str, workdir: Path) -> str:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.coding.tools import ToolEnv, create_builtin_tools

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
        target.write_text("".join(f"line {i} of a fifty megabyte file, padded a little\n" for i in range(1_000_000)))
        start = time.perf_counter()
        await tools["edit"].execute(
            "e",
            {"path": "fifty.txt", "edits": [{"oldText": "line 500000 of", "newText": "LINE 500000 of"},
                                             {"oldText": "line 999999 of", "newText": "last line of"}]},
            AbortSignal(),
            lambda _: None,
        )
    elapsed = time.perf_counter() - start
    return f"{name:12s} time {elapsed:7.2f} s   peak RSS {_rss_mib():7.1f} MiB (start {base:.1f} MiB)"


def main() -> None:
    if len(sys.argv) == 3:
        print(asyncio.run(_case(sys.argv[1], Path(sys.argv[2]))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("baseline", "bash", "read", "read-sparse", "edit"):
            subprocess.run([sys.executable, __file__, name, tmp], check=True)


if __name__ == "__main__":
    main()
