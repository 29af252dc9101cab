"""Opening large sessions over RPC: time and peak RSS of each session command, ours and the reference.

For each size (2,000 / 20,000 / 100,000 entries by default) a session is written in pi's format
(``bench_session.write_session``: turns of user / tool call / ~7 KB tool result / reply, a compaction
every thousand turns). Each side then runs in one fresh ``pi --mode rpc`` process: ``get_state`` (not
measured), then ``switch_session`` to the file and every command that reads the whole session. For
each command the bench records the time from writing the command to reading its whole response line,
and the peak RSS of the agent process during that command alone (``VmHWM``, reset through
``/proc/<pid>/clear_refs`` before each command; the process's RSS before the command is included).

    .venv/bin/python bench/bench_session_open.py [--entries 2000,20000,100000] [--side ours|reference|both]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_session import write_session
from common import Row, compile_bytecode, env_for, format_table, ours_cmd, peak_rss_mb, reference_cmd, stop

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


def _reset_peak(pid: int) -> None:
    """Make VmHWM start again from the current RSS (Linux: write 5 to clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _response(proc: subprocess.Popen[bytes], command_id: str) -> tuple[bool, str]:
    """Read records until the response to ``command_id``; (success, error text). Large lines are only
    looked at from their start: the response envelope comes first."""
    assert proc.stdout is not None
    marker = f'"id":"{command_id}"'.encode()
    while line := proc.stdout.readline():
        head = line[:300]
        if b'"type":"response"' not in head or marker not in head:
            continue
        if b'"success":true' in head:
            return True, ""
        return False, str(json.loads(line).get("error"))
    raise RuntimeError("agent exited")


def measure(cmd: list[str], session: Path) -> dict[str, dict[str, Any]]:
    """Per command: seconds, peak RSS in MiB, and the error if it failed."""
    with tempfile.TemporaryDirectory() as home:
        out = Path(home) / "out"
        out.mkdir()
        proc = subprocess.Popen([*cmd, "--mode", "rpc", "--session-dir", str(Path(home) / "s")], cwd=out,
                                env=env_for(cmd, Path(home)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdin is not None
        results: dict[str, dict[str, Any]] = {}
        try:
            proc.stdin.write(b'{"id":"warm","type":"get_state"}\n')
            proc.stdin.flush()
            _response(proc, "warm")
            for name, fields in COMMANDS:
                record = {"id": name, "type": name, **fields}
                if name == "switch_session":
                    record["sessionPath"] = str(session)
                _reset_peak(proc.pid)
                started = time.perf_counter()
                proc.stdin.write(json.dumps(record).encode() + b"\n")
                proc.stdin.flush()
                try:
                    ok, error = _response(proc, name)
                except RuntimeError as exc:  # the process died: the remaining commands fail too
                    results[name] = {"s": 0.0, "peak_mib": 0.0, "error": str(exc)}
                    break
                results[name] = {"s": time.perf_counter() - started, "peak_mib": peak_rss_mb(proc.pid),
                                 "error": error if not ok else None}
        finally:
            stop(proc)
    return results


def results(sizes: list[int], sides: str = "both") -> list[Row]:
    rows: list[Row] = []
    ref_cmd = reference_cmd() if sides in ("reference", "both") else None
    with tempfile.TemporaryDirectory() as scratch:
        for entries in sizes:
            directory = Path(scratch) / str(entries)
            directory.mkdir()
            path, _ = write_session(directory, entries)
            size_mib = path.stat().st_size / 2**20
            ours = measure(ours_cmd(), path) if sides in ("ours", "both") else {}
            ref = measure(ref_cmd, path) if ref_cmd is not None else {}
            bench = f"open {entries} entries ({size_mib:.0f} MiB)"
            for name, _fields in COMMANDS:
                mine, theirs = ours.get(name), ref.get(name)
                rows.append(Row(bench, f"{name} time", "ms", _ms(mine), _ms(theirs),
                                0.5 if name == "switch_session" else None))
                rows.append(Row(bench, f"{name} peak RSS / file size", "x", _per_file(mine, size_mib),
                                _per_file(theirs, size_mib), None,
                                limit=2.0 if entries >= 20_000 else None))  # #23: large files; small ones are the interpreter
                for side, result in (("ours", mine), ("reference", theirs)):
                    if result is not None and result["error"]:
                        print(f"{bench}: {side} {name} failed: {result['error'][:120]}", file=sys.stderr)
    return rows


def _ms(result: dict[str, Any] | None) -> float:
    return float("nan") if result is None or result["error"] else result["s"] * 1000


def _per_file(result: dict[str, Any] | None, size_mib: float) -> float:
    return float("nan") if result is None or result["error"] else result["peak_mib"] / size_mib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", default="2000,20000,100000")
    parser.add_argument("--side", choices=("ours", "reference", "both"), default="both")
    args = parser.parse_args()
    note = compile_bytecode()
    print(format_table(results([int(n) for n in args.entries.split(",")], args.side)))
    print(f"one run per cell, each side in one fresh process, a failed command shows nan; {note}")


if __name__ == "__main__":
    main()
