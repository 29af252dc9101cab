"""Streaming: one prompt whose reply arrives as 5,000 tiny text deltas, as fast as the fake server sends them.

For each side (ours, then the reference pi 1.6.0 if installed) and each run, a fresh fake LLM server
(``tests/support/fakes/llm_server.py`` in its own process, OpenAI chat-completions wire) and a fresh
``pi --mode rpc --no-session`` whose agent dir routes provider ``bench`` to it through models.json.
Start-up is excluded: the clock starts when ``prompt`` is written, after ``get_state`` was answered.

Measured per run: wall time from writing ``prompt`` to reading ``agent_settled``; CPU time (user+sys)
the agent process spent in that window (``/proc/<pid>/stat``); its peak RSS (VmHWM) at the end; and the
bytes it wrote to stdout in that window. The final assistant text is checked against the script.

Usage: .venv/bin/python bench/bench_streaming.py [--runs 5] [--chunks 5000] [--side ours|reference] [--per-delta]
       [--instructions]
Prints the median of each measure and the ratio ours/reference (target: CPU < 0.8). CPU is the
CPU clocks of the process and its children (``common.tree_cpu_seconds``), medians of several runs; ``--chunks 1`` shows the fixed cost of a first
request (for us: what the warm-up thread has not imported yet), larger counts the per-delta cost.
``--per-delta`` prints that cost on its own: (CPU of a 20,000-delta prompt - CPU of a 1-delta
prompt) / 20,000, the two sides taking turns run by run (target for us: 6 us). ``--instructions``
counts our instructions per delta under callgrind instead, with the server pacing deltas 1 ms apart.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from common import (
    MODEL,
    PROVIDER,
    ROOT,
    Row,
    cleanup,
    compile_bytecode,
    env_for,
    format_table,
    median,
    ours_cmd,
    peak_rss_mb,
    reference_cmd,
    scratch_home,
    spawn,
    stop,
    tree_cpu_seconds,
    write_models_json,
)

SETTLED = b'"agent_settled"'


@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    stdout_bytes: int


def scripted_reply(chunks: int, seed: int = 5000) -> dict[str, object]:
    """A reply of ``chunks`` text pieces of 1-4 characters, each its own SSE event.

    Every piece is a separate text block no longer than ``chunkSize``, so the renderer sends exactly one
    ``delta.content`` chunk per piece; on the wire they are all one text block.
    """
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz      .,\n"
    pieces = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) for _ in range(chunks)]
    return {"content": [{"type": "text", "text": p} for p in pieces], "chunkSize": 4, "chunkDelayMs": 0,
            "usage": {"input": 100, "output": chunks}}


def start_server(script: Path) -> tuple[subprocess.Popen[bytes], str]:
    server = subprocess.Popen([sys.executable, "-m", "tests.support.fakes.llm_server", "--script", str(script)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdout is not None
    return server, server.stdout.readline().decode().strip()


def read_until(fd: int, marker: bytes, sink: bytearray, timeout_s: float = 120.0) -> None:
    """Append raw stdout to ``sink`` until ``marker`` is in it (large reads keep the reader cheap).

    ``sink`` may already hold it: a fast side writes a whole run in one chunk, which an earlier call
    for an earlier marker read. A side that stops answering fails the run after ``timeout_s``.
    """
    import select

    deadline = time.monotonic() + timeout_s
    scanned = 0
    while sink.find(marker, max(0, scanned - len(marker))) < 0:
        scanned = len(sink)
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise RuntimeError(f"no {marker!r} within {timeout_s:.0f} s; last output: {bytes(sink[-300:])!r}")
        data = os.read(fd, 1 << 20)
        if not data:
            raise RuntimeError(f"agent exited before {marker!r}")
        sink += data


def final_text(output: bytes) -> str:
    """The assistant text of the last ``message_end`` (to check nothing was lost)."""
    for line in reversed(output.splitlines()):
        record = json.loads(line)
        if record.get("type") == "message_end" and record["message"]["role"] == "assistant":
            return "".join(b.get("text", "") for b in record["message"]["content"] if b["type"] == "text")
    raise RuntimeError("no assistant message_end")


def run_once(cmd: list[str], reply: dict[str, object], extra: tuple[str, ...] = ()) -> Sample:
    """One prompt streamed by a fresh server to a fresh agent (``extra``: more arguments, e.g. ``-e``)."""
    home = scratch_home()
    script = home / "script.json"
    script.write_text(json.dumps([reply]))
    server, url = start_server(script)
    write_models_json(home / "agent", url)
    env = env_for(cmd, home, home / "agent")
    proc = spawn([*cmd, "--mode", "rpc", "--no-session", "--provider", PROVIDER, "--model", MODEL, *extra], env,
                 cwd=home)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    try:
        proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
        proc.stdin.flush()
        read_until(fd, b'"get_state"', bytearray())
        output = bytearray()
        cpu_before = tree_cpu_seconds(proc.pid)
        started = time.perf_counter()
        proc.stdin.write(b'{"id":"p","type":"prompt","message":"stream please"}\n')
        proc.stdin.flush()
        read_until(fd, SETTLED, output)
        wall = time.perf_counter() - started
        sample = Sample(wall, tree_cpu_seconds(proc.pid) - cpu_before, peak_rss_mb(proc.pid), len(output))
    finally:
        stop(proc)
        server.kill()
        server.wait()
        cleanup(home)
    expected = "".join(block["text"] for block in reply["content"])  # type: ignore[attr-defined]
    if final_text(bytes(output)) != expected:
        raise RuntimeError(f"{cmd[0]}: streamed text differs from the script")
    return sample


def measure(cmd: list[str], reply: dict[str, object], runs: int) -> Sample:
    samples = [run_once(cmd, reply) for _ in range(runs)]
    return Sample(median([s.wall_s for s in samples]), median([s.cpu_s for s in samples]),
                  median([s.peak_rss_mb for s in samples]), int(median([s.stdout_bytes for s in samples])))


def results(runs: int = 5, chunks: int = 5000) -> list[Row]:
    reply = scripted_reply(chunks)
    ref_cmd = reference_cmd()
    ours = measure(ours_cmd(), reply, runs)
    ref = measure(ref_cmd, reply, runs) if ref_cmd else None
    bench = f"streaming {chunks} deltas"
    measures = [("prompt to agent_settled", "ms", lambda s: s.wall_s * 1000, None),
                ("CPU", "ms", lambda s: s.cpu_s * 1000, 0.8),
                ("peak RSS", "MiB", lambda s: s.peak_rss_mb, None),
                ("stdout", "KiB", lambda s: s.stdout_bytes / 1024, None)]
    return [Row(bench, name, unit, value(ours), None if ref is None else value(ref), target)
            for name, unit, value, target in measures]


def per_delta_results(runs: int = 5, chunks: int = 20_000) -> list[Row]:
    """CPU per streamed delta: the fixed cost of a prompt (a 1-delta run) taken out of a long one."""
    sides = {"ours": ours_cmd(), "reference": reference_cmd()}
    replies = {chunks: scripted_reply(chunks), 1: scripted_reply(1)}
    cpu: dict[tuple[str, int], list[float]] = {}
    for _ in range(runs):  # the sides take turns, so both see the same load
        for side, cmd in sides.items():
            for count, reply in replies.items():
                if cmd is not None:
                    cpu.setdefault((side, count), []).append(run_once(cmd, reply).cpu_s)

    def per_delta(side: str) -> float | None:
        if (side, 1) not in cpu:
            return None
        return (median(cpu[(side, chunks)]) - median(cpu[(side, 1)])) / chunks * 1e6

    ours = per_delta("ours")
    assert ours is not None
    return [Row(f"streaming {chunks} deltas", "CPU per delta, 1-delta prompt subtracted", "us", ours,
                per_delta("reference"), limit=6.0)]  # #20: at most 6 µs


def instruction_results(chunks: int = 2000, delay_ms: float = 1.0) -> list[Row]:
    """Our instructions per delta (callgrind), one network read per delta as from a real model: the
    server waits ``delay_ms`` between events. Instructions do not move with the machine's load, so
    before/after figures compare across runs (they leave out the kernel's share of the CPU)."""
    import glob
    import re
    import shutil
    import tempfile

    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    out = Path(tempfile.mkdtemp(prefix="pi-bench-cg-"))
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p", *ours_cmd()]

    def instructions(count: int) -> int:
        for old in glob.glob(f"{out}/cg.*"):
            os.remove(old)
        reply = {**scripted_reply(count), "chunkDelayMs": delay_ms}
        run_once(cmd, reply)
        text = Path(glob.glob(f"{out}/cg.*")[0]).read_text()
        found = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        assert found is not None
        return int(found.group(1))

    try:
        per_delta = (instructions(chunks) - instructions(1)) / (chunks - 1)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return [Row(f"streaming {chunks} paced deltas (ours)", "instructions per delta, 1-delta prompt subtracted",
                "k", per_delta / 1000, None)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--side", choices=("ours", "reference"), help="measure one side only (profiling)")
    parser.add_argument("--per-delta", action="store_true", help="CPU per delta (20,000 deltas vs 1), both sides")
    parser.add_argument("--instructions", action="store_true", help="our instructions per paced delta (valgrind)")
    args = parser.parse_args()
    note = compile_bytecode()
    if args.instructions:
        print(format_table(instruction_results()))
    elif args.per_delta:
        print(format_table(per_delta_results(args.runs)))
    elif args.side:
        cmd = ours_cmd() if args.side == "ours" else reference_cmd()
        if cmd is None:
            sys.exit("reference pi not installed")
        print(measure(cmd, scripted_reply(args.chunks), args.runs))
    else:
        print(format_table(results(args.runs, args.chunks)))
    print(f"median of {args.runs} runs per cell; {note}")


if __name__ == "__main__":
    main()
