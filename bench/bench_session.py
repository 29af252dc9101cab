"""Session store benchmark: a ~50 MB / 20,000-entry session, written, opened and projected.

Measures, each in a fresh process so peak RSS is its own:
  * appending the 20,000 entries one by one through SessionManager (one locked write each);
  * ours and the reference pi 1.6.0 (if installed), each in a fresh ``pi --mode rpc``:
    switch_session + get_messages on the same file (time from writing switch_session to reading the
    whole get_messages response line, peak RSS of the agent process, and its RSS before switching).
    The client does not parse the response inside the clock: that is the bench's own work, the same
    for both sides, and counting it would draw the ratio towards 1 (the messages are counted after).

With ``--runs N`` each side runs N fresh processes, the sides taking turns (ours first in even runs);
each cell is the median.

Usage: .venv/bin/python bench/bench_session.py [--entries 20000] [--runs 3] [--keep DIR]
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

from common import ROOT, Row, compile_bytecode, env_for, format_table, ours_cmd, peak_rss_mb, reference_cmd

sys.path.insert(0, str(ROOT / "src"))


def _usage(n: int) -> dict[str, object]:
    return {"input": 1000 + n, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1050 + n,
            "cost": {"input": 0.001, "output": 0.0005, "cacheRead": 0, "cacheWrite": 0, "total": 0.0015}}


def write_session(directory: Path, entries: int) -> tuple[Path, float]:
    """Append ``entries`` entries (turns of user / tool call / ~7 KB tool result / reply)."""
    from pi_coding_agent.coding.session import SessionManager

    sm = SessionManager.create(directory, directory)
    sm.append_model_change("mock", "mock-model")
    sm.append_thinking_level_change("off")
    sm.append_message({"role": "system", "content": "", "sections": {"preamble": "You are a benchmark. " * 40},
                       "timestamp": 1})
    started = time.perf_counter()
    n = 0
    while len(sm.entries) < entries:
        n += 1
        ts = 1_796_000_000_000 + n * 1000
        sm.append_message({"role": "user", "content": [{"type": "text", "text": f"Question {n}: " + "why? " * 30}],
                           "timestamp": ts})
        sm.append_message({"role": "assistant", "content": [
            {"type": "text", "text": "Let me look. " * 10},
            {"type": "toolCall", "id": f"call_{n}", "name": "read", "arguments": {"path": f"src/file_{n}.py"}}],
            "api": "openai-completions", "provider": "mock", "model": "mock-model", "usage": _usage(n),
            "stopReason": "toolUse", "timestamp": ts + 1})
        body = "".join(f"line {i} of file {n}: some source code here = value_{i} \u00e9\n" for i in range(110))
        sm.append_message({"role": "toolResult", "toolCallId": f"call_{n}", "toolName": "read",
                           "content": [{"type": "text", "text": body}], "isError": False, "timestamp": ts + 2})
        sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "Here is the answer. " * 40}],
                           "api": "openai-completions", "provider": "mock", "model": "mock-model",
                           "usage": _usage(n), "stopReason": "stop", "timestamp": ts + 3})
        if n % 1000 == 0:
            sm.append_compaction(f"Summary up to turn {n}. " * 20, sm.entries[-4]["id"], 150_000)
    elapsed = time.perf_counter() - started
    assert sm.session_file is not None
    return sm.session_file, elapsed


def response(proc: subprocess.Popen[bytes], command_id: str) -> bytes:
    """The response line to ``command_id``, found by its start: the envelope comes first (a large
    response is not parsed to be recognised)."""
    assert proc.stdout is not None
    marker = f'"id":"{command_id}"'.encode()
    while line := proc.stdout.readline():
        head = line[:300]
        if b'"type":"response"' in head and marker in head:
            return line
    raise RuntimeError("agent exited")


def measure(cmd: list[str], path: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home:
        proc = subprocess.Popen([*cmd, "--mode", "rpc", "--session-dir", str(Path(home) / "s")],
                                cwd=path.parent, env=env_for(cmd, Path(home)), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None

        def send(command_id: str, kind: str, **fields: object) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"id": command_id, "type": kind, **fields}).encode() + b"\n")
            proc.stdin.flush()

        send("warm", "get_state")  # start-up is not part of the measurement
        response(proc, "warm")
        baseline = peak_rss_mb(proc.pid)
        started = time.perf_counter()
        send("s", "switch_session", sessionPath=str(path))
        response(proc, "s")
        switched = time.perf_counter()
        send("m", "get_messages")
        line = response(proc, "m")
        done = time.perf_counter()
        peak = peak_rss_mb(proc.pid)
        proc.stdin.close()
        proc.wait(timeout=60)
    messages = json.loads(line)["data"]["messages"]
    return {"switch_s": switched - started, "get_messages_s": done - switched, "total_s": done - started,
            "messages": len(messages), "peak_rss_mb": peak, "rss_before_switch_mb": baseline}


def _alternating(path: Path, runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """The per-field medians of ``runs`` processes per side, the sides taking turns."""
    sides: list[tuple[list[str] | None, list[dict[str, float]]]] = [(ours_cmd(), []), (reference_cmd(), [])]
    for run in range(runs):
        for cmd, into in sides if run % 2 == 0 else sides[::-1]:
            if cmd is not None:
                into.append(measure(cmd, path))
    ours, ref = ({key: statistics.median(r[key] for r in runs_) for key in runs_[0]} if runs_ else {}
                 for _, runs_ in sides)
    if ref and ref["messages"] != ours["messages"]:
        print(f"message counts differ: ours {ours['messages']}, reference {ref['messages']}", file=sys.stderr)
    return ours, ref


def results(entries: int = 20_000, keep: Path | None = None, runs: int = 1) -> list[Row]:
    with tempfile.TemporaryDirectory() as scratch:
        directory = keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        path, append_s = write_session(directory, entries)
        size_mb = path.stat().st_size / 2**20
        ours, ref = _alternating(path, runs)  # ref empty: reference not installed
    bench = f"session {entries} entries, {size_mb:.0f} MiB"
    return [Row(bench, "append one entry (locked write)", "us", append_s / entries * 1e6),
            Row(bench, "switch_session + get_messages", "ms", ours["total_s"] * 1000,
                ref["total_s"] * 1000 if ref else None, 0.35),
            Row(bench, "peak RSS", "MiB", ours["peak_rss_mb"], ref.get("peak_rss_mb")),
            Row(bench, "peak RSS / file size", "x", ours["peak_rss_mb"] / size_mb,
                ref["peak_rss_mb"] / size_mb if ref else None,
                limit=1.5 if entries >= 20_000 else None),  # #20's row: the 43 MB session
            Row(bench, "RSS added by the session", "MiB", ours["peak_rss_mb"] - ours["rss_before_switch_mb"],
                ref["peak_rss_mb"] - ref["rss_before_switch_mb"] if ref else None)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--keep", type=Path, help="write the session file here (kept)")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    note = compile_bytecode()
    print(format_table(results(args.entries, args.keep, args.runs)))
    per_cell = "one run" if args.runs == 1 else f"median of {args.runs} runs, the sides taking turns,"
    print(f"{per_cell} per cell, each side in a fresh process; {note}")


if __name__ == "__main__":
    main()
