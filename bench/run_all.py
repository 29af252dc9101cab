"""Run every benchmark and print one table (``--markdown`` for docs/performance.md).

    .venv/bin/python bench/run_all.py [--markdown] [--quick]

``--quick`` lowers the repetitions (3 start-ups, 3 streams, a 5,000-entry session) for a smoke run;
the published numbers use the defaults: start-up median of 10, first prompt and streaming median of
5, 20,000 entries, and session opens at 2,000 / 20,000 / 100,000 entries. Takes a quarter of an hour
with the defaults (the 100,000-entry session on the reference's side most); the tools case writes a
2 GiB scratch file.
The target column carries issue #20's targets (ratios ours/reference, absolute bounds in the unit);
the ACP, SDK, MCP and extension rows compare against our own plain RPC process (#20: within 10 %);
the "one-shot vs floor" rows (issue #40) have bench/floor.py, a stdlib-only asyncio client, in the
reference column, and the reference pi against that floor in rows of their own, and (where valgrind
is installed) the instructions of a one-shot run's and a tool turn's process tree beside the floor's.
"""

from __future__ import annotations

import argparse
import platform
import time

import bench_acp
import bench_compaction
import bench_extensions
import bench_features
import bench_first_prompt
import bench_oneshot
import bench_sdk
import bench_session
import bench_session_open
import bench_startup
import bench_streaming
import bench_tools
from common import Row, compile_bytecode, format_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    note = compile_bytecode()
    starts, streams, entries = (3, 3, 5_000) if args.quick else (10, 5, 20_000)
    started = time.perf_counter()
    rows: list[Row] = [
        *bench_startup.results(starts),
        *bench_first_prompt.results(streams),
        *bench_oneshot.results(starts),
        *bench_oneshot.instruction_results(),
        *bench_streaming.results(streams),
        *bench_streaming.per_delta_results(streams),
        *bench_features.results(streams, 20_000),
        *bench_acp.results(streams, 20_000),
        *bench_sdk.results(streams, 2_000, 10),
        *bench_session.results(entries),
        *bench_session_open.results([2_000] if args.quick else [2_000, 20_000, 100_000]),
        *bench_compaction.results(entries),
        *bench_tools.results(),
        *bench_extensions.results(starts),
    ]
    print(format_table(rows, markdown=args.markdown))
    print(f"\n{platform.python_implementation()} {platform.python_version()}, {platform.machine()}; {note}; "
          f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
