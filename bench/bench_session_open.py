"""Opening large sessions over RPC: time and peak RSS of each session command, ours and the reference.

For each size (2,000 / 20,000 / 100,000 entries by default) a session is written in pi's format
(``bench_session.write_session``: turns of user / tool call / ~7 KB tool result / reply, a compaction
every thousand turns). Each side then runs in one fresh ``pi --mode rpc`` process: ``get_state`` (not
measured), then ``switch_session`` to the file and every command that reads the whole session. For
each command the bench records the time from writing the command to reading its whole response line,
the peak RSS of the agent process during that command alone (``VmHWM``, reset through
``/proc/<pid>/clear_refs`` before each command; the process's RSS before the command is included), and
the CPU time the agent spent on it (all its threads; ``common.cpu_seconds``). ``switch_session + get_messages`` is
#20's measure: opening the session and reading what the model sees. ``--fork start`` is a fresh
``pi --mode rpc --fork <file>`` until it answers ``get_state`` (its whole peak RSS and CPU, start-up
included): the file copied into a new session and opened; measured when ``--commands`` names it.

With ``--runs N`` each cell is the median of N fresh processes per side, the sides alternating (ours
first, then the reference first) so they share the machine's load; the spread (lowest and highest
run) of the main measures is printed under the table.

    .venv/bin/python bench/bench_session_open.py [--entries 2000,20000,100000] [--side ours|reference|both]
        [--runs 3] [--commands "get_messages,get_fork_messages,--fork start"]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_session import response, write_session
from common import (
    Row,
    compile_bytecode,
    cpu_seconds,
    env_for,
    format_table,
    ours_cmd,
    peak_rss_mb,
    reference_cmd,
    stop,
)

COMMANDS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("switch_session", {}),  # sessionPath added per run
    ("get_messages", {}),
    ("get_tree", {}),
    ("get_entries", {}),
    ("get_fork_messages", {}),
    ("get_session_stats", {}),
    ("export_html", {}),
)
RESPONSE_TIMEOUT_S = 300.0
OPEN = ("switch_session", "get_messages")  # #20's measure: both commands together
FORK = "--fork start"  # a fresh process forking the file, until it answers get_state
Result = dict[str, dict[str, Any]]


def _reset_peak(pid: int) -> None:
    """Make VmHWM start again from the current RSS (Linux: write 5 to clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _response(proc: subprocess.Popen[bytes], command_id: str) -> tuple[bool, str]:
    """Read records until the response to ``command_id``; (success, error text)."""
    line = response(proc, command_id)
    if b'"success":true' in line[:300]:
        return True, ""
    return False, str(json.loads(line).get("error"))


def measure(cmd: list[str], session: Path, commands: tuple[tuple[str, dict[str, Any]], ...] = COMMANDS) -> Result:
    """Per command: seconds, peak RSS in MiB, CPU seconds, and the error if it failed."""
    with tempfile.TemporaryDirectory() as home:
        out = Path(home) / "out"
        out.mkdir()
        proc = subprocess.Popen([*cmd, "--mode", "rpc", "--session-dir", str(Path(home) / "s")], cwd=out,
                                env=env_for(cmd, Path(home)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdin is not None
        results: Result = {}
        try:
            proc.stdin.write(b'{"id":"warm","type":"get_state"}\n')
            proc.stdin.flush()
            _response(proc, "warm")
            for name, fields in commands:
                record = {"id": name, "type": name, **fields}
                if name == "switch_session":
                    record["sessionPath"] = str(session)
                _reset_peak(proc.pid)
                cpu = cpu_seconds(proc.pid)
                started = time.perf_counter()
                proc.stdin.write(json.dumps(record).encode() + b"\n")
                proc.stdin.flush()
                try:
                    ok, error = _response(proc, name)
                except RuntimeError as exc:  # the process died: the remaining commands fail too
                    results[name] = {"s": 0.0, "peak_mib": 0.0, "cpu_s": 0.0, "error": str(exc)}
                    break
                results[name] = {"s": time.perf_counter() - started, "peak_mib": peak_rss_mb(proc.pid),
                                 "cpu_s": cpu_seconds(proc.pid) - cpu, "error": error if not ok else None}
        finally:
            stop(proc)
    if all(name in results for name in OPEN):
        both = [results[name] for name in OPEN]
        results[" + ".join(OPEN)] = {"s": sum(r["s"] for r in both), "cpu_s": sum(r["cpu_s"] for r in both),
                                     "peak_mib": max(r["peak_mib"] for r in both),
                                     "error": next((r["error"] for r in both if r["error"]), None)}
    return results


def measure_fork(cmd: list[str], session: Path) -> dict[str, Any]:
    """``--fork`` of the file in a fresh process: seconds until ``get_state`` is answered, peak RSS, CPU."""
    with tempfile.TemporaryDirectory() as home:
        out = Path(home) / "out"
        out.mkdir()
        started = time.perf_counter()
        proc = subprocess.Popen([*cmd, "--mode", "rpc", "--fork", str(session), "--session-dir", str(Path(home) / "s")],
                                cwd=out, env=env_for(cmd, Path(home)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdin is not None
        try:
            proc.stdin.write(b'{"id":"fork","type":"get_state"}\n')
            proc.stdin.flush()
            ok, error = _response(proc, "fork")
            return {"s": time.perf_counter() - started, "peak_mib": peak_rss_mb(proc.pid),
                    "cpu_s": cpu_seconds(proc.pid), "error": None if ok else error}
        except RuntimeError as exc:
            return {"s": 0.0, "peak_mib": 0.0, "cpu_s": 0.0, "error": str(exc)}
        finally:
            stop(proc)


def _alternating(ours: list[str] | None, ref: list[str] | None, session: Path, runs: int,
                 commands: tuple[tuple[str, dict[str, Any]], ...], fork: bool) -> tuple[list[Result], list[Result]]:
    """``runs`` processes per side, ours first in even runs and the reference first in odd ones."""
    mine: list[Result] = []
    theirs: list[Result] = []
    for run in range(runs):
        order = [(ours, mine), (ref, theirs)]
        for cmd, into in order if run % 2 == 0 else order[::-1]:
            if cmd is not None:
                result = measure(cmd, session, commands)
                if fork:
                    result[FORK] = measure_fork(cmd, session)
                into.append(result)
    return mine, theirs


def _median(results: list[Result], name: str) -> dict[str, Any] | None:
    """The per-field median of a command's runs (None when it never ran; failed when any run failed)."""
    runs = [result[name] for result in results if name in result]
    if not runs:
        return None
    error = next((run["error"] for run in runs if run["error"]), None)
    return {key: statistics.median(run[key] for run in runs) for key in ("s", "peak_mib", "cpu_s")} | {"error": error}


def _spread(results: list[Result], name: str, key: str, scale: float) -> str:
    values = sorted(result[name][key] * scale for result in results if name in result and not result[name]["error"])
    return f"{values[0]:.0f}..{values[-1]:.0f}" if values else "-"


def results(sizes: list[int], sides: str = "both", runs: int = 1, names: list[str] | None = None) -> list[Row]:
    rows: list[Row] = []
    commands = tuple(command for command in COMMANDS if names is None or command[0] in names)
    ours_side = ours_cmd() if sides in ("ours", "both") else None
    ref_side = reference_cmd() if sides in ("reference", "both") else None
    spreads: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        for entries in sizes:
            directory = Path(scratch) / str(entries)
            directory.mkdir()
            path, _ = write_session(directory, entries)
            size_mib = path.stat().st_size / 2**20
            fork = names is not None and FORK in names  # asked for only: a full run stays as long as it was
            ours, ref = _alternating(ours_side, ref_side, path, runs, commands, fork)
            bench = f"open {entries} entries ({size_mib:.0f} MiB)"
            measured = [name for name, _fields in commands]
            if all(name in measured for name in OPEN):
                measured.insert(0, " + ".join(OPEN))
            if fork:
                measured.append(FORK)
            for name in measured:
                rows += _rows(bench, name, _median(ours, name), _median(ref, name), size_mib, entries)
                for side, side_runs in (("ours", ours), ("reference", ref)):
                    result = _median(side_runs, name)
                    if result is not None and result["error"]:
                        print(f"{bench}: {side} {name} failed: {result['error'][:120]}", file=sys.stderr)
            if runs > 1:
                name = measured[0]
                spreads.append(f"{bench} {name}: time ms ours {_spread(ours, name, 's', 1000)}, reference "
                               f"{_spread(ref, name, 's', 1000)}; CPU ms ours {_spread(ours, name, 'cpu_s', 1000)}, "
                               f"reference {_spread(ref, name, 'cpu_s', 1000)}")
    for line in spreads:
        print(f"spread over {runs} runs (lowest..highest): {line}", file=sys.stderr)
    return rows


def _rows(bench: str, name: str, mine: dict[str, Any] | None, theirs: dict[str, Any] | None, size_mib: float,
          entries: int) -> list[Row]:
    """Time (with its target), CPU and peak RSS per file size (with its bound) of one command."""
    opened = name == " + ".join(OPEN)
    target = (0.35 if entries >= 20_000 else None) if opened else 0.5 if name == "switch_session" else None
    limit = (1.5 if opened else 2.0) if entries >= 20_000 else None  # #20, #23: large files; small ones are the interpreter
    return [Row(bench, f"{name} time", "ms", _ms(mine), _ms(theirs), target),
            Row(bench, f"{name} agent CPU", "ms", _ms(mine, "cpu_s"), _ms(theirs, "cpu_s")),
            Row(bench, f"{name} peak RSS / file size", "x", _per_file(mine, size_mib), _per_file(theirs, size_mib),
                None, limit=limit)]


def _ms(result: dict[str, Any] | None, key: str = "s") -> float:
    return float("nan") if result is None or result["error"] else result[key] * 1000


def _per_file(result: dict[str, Any] | None, size_mib: float) -> float:
    return float("nan") if result is None or result["error"] else result["peak_mib"] / size_mib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", default="2000,20000,100000")
    parser.add_argument("--side", choices=("ours", "reference", "both"), default="both")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--commands", help="comma-separated subset of the commands (switch_session always runs; "
                                           f"'{FORK}' is the --fork measure)")
    args = parser.parse_args()
    names = None if args.commands is None else ["switch_session", *args.commands.split(",")]
    note = compile_bytecode()
    print(format_table(results([int(n) for n in args.entries.split(",")], args.side, args.runs, names)))
    per_cell = "one run" if args.runs == 1 else f"median of {args.runs} runs, the sides alternating,"
    print(f"{per_cell} per cell, each side in fresh processes, a failed command shows nan; {note}")


if __name__ == "__main__":
    main()
