"""One-shot runs against the platform's floor (issue #40): ``pi -p`` and a tool turn, per process.

Three sides take turns run after run: ours, the floor (``bench/floor.py``: asyncio and json only,
one streamed request, the first text printed) and the reference pi 1.6.0. Each run is a fresh process
in a scratch HOME (one per side and case, kept from run to run as a user's is) whose models.json routes provider ``bench`` to the fake LLM server
(``tests/support/fakes/llm_server.py``, OpenAI chat-completions wire; one server per side and case, so a
side's extra requests cannot shift another's script). Measures, medians over the runs:

* start to first text: from spawning ``pi -p hello`` to the first byte on its stdout;
* CPU per one-shot run: user + system CPU of the whole process tree, spawn to exit: ``wait4``'s
  rusage counts the children a process reaped, and this process is the subreaper of the ones it
  leaves behind (our orphan guard ends just after pi: ``coding/tools/guard.py``), reaped and added;
* tool turn: the model calls ``bash`` with ``echo hi``, then answers; CPU and wall of the run;
* peak RSS of the one-shot run: ``/usr/bin/time``'s %M (the rusage of a child spawned from this
  process would carry this process's own peak over ``exec``); ``time`` itself adds about 1 ms CPU
  to every side alike.

Ours runs as a user runs it (the session file written); the reference likewise. The ``reference``
column of the rows is the floor, the targets issue #40's ratios to it; the reference pi's figure is
in a row of its own. The machine's load moves wall times: read the CPU rows first.

``--instructions`` counts instead the instructions of one run's whole process tree under callgrind
(children traced), ours and the floor's: load-independent, so before/after figures compare across
runs; they leave out the kernel's share of the CPU.

    .venv/bin/python bench/bench_oneshot.py [--runs 10] [--instructions]
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import common
from common import ROOT, Row, median, spread

TEXT = {"content": [{"type": "text", "text": "first words of a reply"}], "chunkSize": 4}
TOOL = {"content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}]}
FLOOR = [sys.executable, str(ROOT / "bench" / "floor.py")]
TIME = "/usr/bin/time"
PR_SET_CHILD_SUBREAPER = 36
# measure -> issue #40's target as a ratio to the floor
TARGETS = {"first text": 1.2, "one-shot CPU": 1.2, "tool turn CPU": 1.5, "tool turn wall": 1.3, "peak RSS": 1.15}


@dataclass
class Samples:
    """Per-run figures of one side."""

    first_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    tool_cpu_s: list[float] = field(default_factory=list)
    tool_wall_s: list[float] = field(default_factory=list)


def start_server(script: list[dict[str, object]], scratch: Path) -> tuple[subprocess.Popen[bytes], str]:
    path = scratch / f"script-{len(list(scratch.iterdir()))}.json"
    path.write_text(json.dumps(script))
    server = subprocess.Popen([sys.executable, "-m", "tests.support.fakes.llm_server", "--script", str(path)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdout is not None
    return server, server.stdout.readline().decode().strip()


def run_once(cmd: list[str], url: str, tool_turn: bool, home: Path, keep: set[int]) -> tuple[float, float, float, float]:
    """Seconds to the first stdout byte, to exit, CPU seconds of the tree, and peak RSS (MiB).

    ``home`` stays from run to run, as a user's does: our side validates models.json once (the
    warm-up run) and then reads its fingerprint cache, instead of importing pydantic every run."""
    rss_file = home / "rss"
    if cmd is FLOOR:
        argv = [*FLOOR, url, *(["--tool"] if tool_turn else [])]
        env = dict(os.environ)
    else:
        if not (home / "agent" / "models.json").exists():
            common.write_models_json(home / "agent", url)
        argv = [*cmd, "-p", "--provider", common.PROVIDER, "--model", common.MODEL, "hello"]
        env = common.env_for(cmd, home, home / "agent")
    started = time.perf_counter()
    proc = subprocess.Popen([TIME, "-f", "%M", "-o", str(rss_file), *argv], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=home)
    assert proc.stdout is not None
    first = os.read(proc.stdout.fileno(), 1 << 16)
    first_s = time.perf_counter() - started
    rest = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall_s = time.perf_counter() - started
    cpu_s = usage.ru_utime + usage.ru_stime + orphans_cpu_s(keep)
    proc.returncode = os.waitstatus_to_exitcode(status)
    output = first + rest
    rss = int(rss_file.read_text().split()[-1]) / 1024
    if proc.returncode or b"firs" not in output:
        raise RuntimeError(f"{argv[0]}: run failed ({proc.returncode}): {output[-300:]!r}")
    return first_s, wall_s, cpu_s, rss


def become_subreaper() -> None:
    """Orphans of the measured process tree become this process's children (Linux ``prctl``)."""
    if common._libc() is None or common._libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise RuntimeError("prctl(PR_SET_CHILD_SUBREAPER) failed: the tree's orphans would go uncounted")


def orphans_cpu_s(keep: set[int]) -> float:
    """Reap the children of this process other than ``keep`` (the fake servers): the measured tree's
    orphans, handed to this subreaper when their parent exited; their CPU seconds."""
    total = 0.0
    for pid in _children(os.getpid()) - keep:
        with contextlib.suppress(ChildProcessError):
            _, _, usage = os.wait4(pid, 0)
            total += usage.ru_utime + usage.ru_stime
    return total


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(pid):
                    found.add(int(entry))
    return found


def measure(runs: int) -> dict[str, Samples]:
    """Every side's samples, the sides taking turns run after run (load hits each alike)."""
    sides: dict[str, list[str]] = {"ours": common.ours_cmd(), "floor": FLOOR}
    ref = common.reference_cmd()
    if ref is not None:
        sides["reference"] = ref
    scratch = Path(tempfile.mkdtemp(prefix="pi-bench-oneshot-"))
    servers = {name: (start_server([TEXT] * (runs + 2), scratch), start_server([TOOL, TEXT] * (runs + 1), scratch))
               for name in sides}
    keep = {server.pid for pair in servers.values() for server, _ in pair}
    become_subreaper()
    homes = {(name, tool): scratch / f"home-{name}-{tool}" for name in sides for tool in (False, True)}
    for home in homes.values():
        home.mkdir()
    samples = {name: Samples() for name in sides}
    try:
        for name, cmd in sides.items():  # warm-up: page cache, our bytecode and validation caches
            run_once(cmd, servers[name][0][1], False, homes[name, False], keep)
            run_once(cmd, servers[name][1][1], True, homes[name, True], keep)
        for _ in range(runs):
            for name, cmd in sides.items():
                first_s, _, cpu_s, rss = run_once(cmd, servers[name][0][1], False, homes[name, False], keep)
                _, wall_s, tool_cpu_s, _ = run_once(cmd, servers[name][1][1], True, homes[name, True], keep)
                out = samples[name]
                out.first_s.append(first_s)
                out.cpu_s.append(cpu_s)
                out.rss_mib.append(rss)
                out.tool_cpu_s.append(tool_cpu_s)
                out.tool_wall_s.append(wall_s)
    finally:
        for pair in servers.values():
            for server, _ in pair:
                server.kill()
                server.wait()
        common.cleanup(scratch)
    return samples


def results(runs: int = 10) -> list[Row]:
    samples = measure(runs)
    ours, floor, ref = samples["ours"], samples["floor"], samples.get("reference")
    measures = (("first text", "ms", "first_s", 1000), ("one-shot CPU", "ms", "cpu_s", 1000),
                ("tool turn CPU", "ms", "tool_cpu_s", 1000), ("tool turn wall", "ms", "tool_wall_s", 1000),
                ("peak RSS", "MiB", "rss_mib", 1))
    rows = []
    for name, unit, attr, scale in measures:
        ours_v, floor_v = getattr(ours, attr), getattr(floor, attr)
        detail = f" (spread ours {spread(ours_v)}, floor {spread(floor_v)})" if unit == "ms" else ""
        rows.append(Row("one-shot vs floor", f"{name}{detail}", unit, median(ours_v) * scale,
                        median(floor_v) * scale, TARGETS[name]))
        if ref is not None:
            rows.append(Row("one-shot vs floor", f"{name}: the reference pi vs the floor", unit,
                            median(getattr(ref, attr)) * scale, median(floor_v) * scale))
    return rows


def instruction_results() -> list[Row]:
    """Instructions of the whole process tree (callgrind, children traced: our orphan guard and the
    tool's ``bash`` count) for one one-shot run and one tool turn, ours against the floor. They do not
    move with the machine's load, so before/after figures compare across runs; they leave out the
    kernel's share of the CPU. None without valgrind."""
    import shutil

    if shutil.which("valgrind") is None:
        return []
    scratch = Path(tempfile.mkdtemp(prefix="pi-bench-oneshot-cg-"))
    servers = [start_server([TEXT] * 4, scratch), start_server([TOOL, TEXT] * 4, scratch)]
    keep = {server.pid for server, _ in servers}
    counts: dict[tuple[str, bool], float] = {}
    try:
        for name, cmd in (("ours", common.ours_cmd()), ("floor", FLOOR)):
            for tool_turn in (False, True):
                home = scratch / f"home-{name}-{tool_turn}"
                home.mkdir()
                url = servers[tool_turn][1]
                run_once(cmd, url, tool_turn, home, keep)  # warm: validation cache, page cache
                counts[name, tool_turn] = callgrind_tree(cmd, url, tool_turn, home)
    finally:
        for server, _ in servers:
            server.kill()
            server.wait()
        common.cleanup(scratch)
    return [Row("one-shot vs floor", f"{label}: instructions of the process tree", "M", counts["ours", tool],
                counts["floor", tool]) for label, tool in (("one-shot", False), ("tool turn", True))]


def callgrind_tree(cmd: list[str], url: str, tool_turn: bool, home: Path) -> float:
    """Millions of instructions of one run's process tree under callgrind."""
    import glob
    import re

    out = home / "cg"
    out.mkdir(exist_ok=True)
    valgrind = ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}/cg.%p"]
    if cmd is FLOOR:
        argv, env = [*valgrind, *FLOOR, url, *(["--tool"] if tool_turn else [])], dict(os.environ)
    else:
        argv = [*valgrind, *cmd, "-p", "--provider", common.PROVIDER, "--model", common.MODEL, "hello"]
        env = common.env_for(cmd, home, home / "agent")
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env, cwd=home, timeout=600,
                          check=False)
    if done.returncode or b"firs" not in done.stdout:
        raise RuntimeError(f"{argv[4]}: run failed under valgrind: {done.stdout[-300:]!r} {done.stderr[-300:]!r}")
    total = 0
    for path in glob.glob(f"{out}/cg.*"):
        found = re.search(r"^(?:totals|summary): (\d+)", Path(path).read_text(), re.M)
        total += int(found.group(1)) if found else 0
        os.remove(path)
    return total / 1e6


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--instructions", action="store_true", help="instructions of the tree (valgrind) only")
    args = parser.parse_args()
    note = common.compile_bytecode()
    if args.instructions:
        print(common.format_table(instruction_results()))
        return
    print(common.format_table(results(args.runs)))
    print(f"median of {args.runs} runs per cell; the reference column is bench/floor.py; {note}")


if __name__ == "__main__":
    main()
