"""Session store benchmark: a ~50 MB / 20,000-entry session, written, opened and projected.

Measures, each in a fresh process so peak RSS is its own:
  * appending the 20,000 entries one by one through SessionManager (one locked write each);
  * ours and the reference pi 1.6.0 (if installed), each in a fresh ``pi --mode rpc``:
    switch_session + get_messages on the same file (time from sending switch_session to the
    get_messages response, peak RSS of the agent process, and its RSS before switching).

Usage: .venv/bin/python bench/bench_session.py [--entries 20000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
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


def measure(cmd: list[str], path: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home:
        proc = subprocess.Popen([*cmd, "--mode", "rpc", "--session-dir", str(Path(home) / "s")],
                                cwd=path.parent, env=env_for(cmd, Path(home)), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None and proc.stdout is not None

        def call(command_id: str, kind: str, **fields: object) -> dict[str, object]:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps({"id": command_id, "type": kind, **fields}).encode() + b"\n")
            proc.stdin.flush()
            while line := proc.stdout.readline():
                record = json.loads(line)
                if record.get("type") == "response" and record.get("id") == command_id:
                    return record
            raise RuntimeError("agent exited")

        call("warm", "get_state")  # start-up is not part of the measurement
        baseline = peak_rss_mb(proc.pid)
        started = time.perf_counter()
        call("s", "switch_session", sessionPath=str(path))
        switched = time.perf_counter()
        messages = call("m", "get_messages")["data"]["messages"]  # type: ignore[index]
        done = time.perf_counter()
        peak = peak_rss_mb(proc.pid)
        proc.stdin.close()
        proc.wait(timeout=60)
    return {"switch_s": switched - started, "get_messages_s": done - switched, "total_s": done - started,
            "messages": len(messages), "peak_rss_mb": peak, "rss_before_switch_mb": baseline}


def results(entries: int = 20_000, keep: Path | None = None) -> list[Row]:
    with tempfile.TemporaryDirectory() as scratch:
        directory = keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        path, append_s = write_session(directory, entries)
        size_mb = path.stat().st_size / 2**20
        ours = measure(ours_cmd(), path)
        ref_cmd = reference_cmd()
        ref = measure(ref_cmd, path) if ref_cmd is not None else {}  # empty: reference not installed
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
    args = parser.parse_args()
    note = compile_bytecode()
    print(format_table(results(args.entries, args.keep)))
    print(f"one run per cell, each side in a fresh process; {note}")


if __name__ == "__main__":
    main()
