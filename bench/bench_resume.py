"""``/resume`` with 500 sessions alone (``bench_interactive.py``'s measure): CPU and wall time from Enter
on ``/resume`` to the newest session listed, ours against the reference pi 1.6.0 and, when
``PI_BENCH_BEFORE`` holds a command line (an earlier tree, e.g. ``env PYTHONPATH=/tmp/old/src
.venv/bin/python -m pi_coding_agent``), that build too; the sides alternate run by run, so a change in
the machine's load hits each of them.

Usage: .venv/bin/python bench/bench_resume.py [--runs 8]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex

import common
from bench_interactive import SESSIONS, resume_picker, warm_home, write_sessions
from bench_streaming import start_server
from common import median


def main(runs: int) -> None:
    sides = {"ours": common.ours_cmd(), "reference": common.reference_cmd()}
    if os.environ.get("PI_BENCH_BEFORE"):
        sides["before"] = shlex.split(os.environ["PI_BENCH_BEFORE"])
    script = common.scratch_home() / "script.json"
    script.write_text(json.dumps([]))
    server, url = start_server(script)
    homes = {side: warm_home(cmd, url) for side, cmd in sides.items() if cmd is not None}
    for home in homes.values():
        write_sessions(home, SESSIONS)
    samples: dict[str, list[tuple[float, float]]] = {side: [] for side in homes}
    try:
        for _ in range(runs):
            for side, home in homes.items():
                samples[side].append(resume_picker(sides[side] or [], home, SESSIONS))
    finally:
        server.terminate()
        for home in homes.values():
            common.cleanup(home)
    for side, values in samples.items():
        cpu = [c * 1000 for _, c in values]
        wall = [w * 1000 for w, _ in values]
        print(f"{side:10} CPU median {median(cpu):6.1f} ms {sorted(round(c, 1) for c in cpu)}; "
              f"wall median {median(wall):6.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    print(common.compile_bytecode())
    main(args.runs)
