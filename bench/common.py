"""Shared helpers for the hand-run benchmarks: locating the reference pi, spawning, measuring, reporting."""

from __future__ import annotations

import compileall
import contextlib
import functools
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_ROOT = Path(os.environ.get("PI_REFERENCE_DIR", Path.home() / ".cache" / "pi-reference"))
REFERENCE_PI = REFERENCE_ROOT / "pi-1.6.0" / "node_modules" / ".bin" / "pi"
REFERENCE_NODE_BIN = REFERENCE_ROOT / "node22" / "node_modules" / ".bin"
PROVIDER, MODEL = "bench", "bench-model"


@dataclass(frozen=True)
class Row:
    """One measure of one benchmark; ``target`` is the ratio ours/reference to stay at or under, if any."""

    bench: str
    measure: str
    unit: str
    ours: float
    reference: float | None = None
    target: float | None = None
    limit: float | None = None  # an absolute bound on ``ours``, in ``unit``

    @property
    def ratio(self) -> float | None:
        ref = self.reference
        return self.ours / ref if ref and _measured(ref) and _measured(self.ours) else None


def _measured(value: float | None) -> bool:
    """A bench reports a value it could not take (no reference, a failed run) as None or NaN."""
    return value is not None and value == value


def format_table(rows: Iterable[Row], markdown: bool = False) -> str:
    """Rows as an aligned text table, or a Markdown table for docs/performance.md."""
    header = ("benchmark", "measure", "ours", "reference", "ours/ref", "target")
    cells = [header]
    for row in rows:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
        verdicts = []
        if row.target is not None:
            verdicts.append(f"<= {row.target:g} " + (
                "not measured" if row.ratio is None else "ok" if row.ratio <= row.target else "MISSED"))
        if row.limit is not None:
            verdicts.append(f"<= {row.limit:g} {row.unit} " + (
                "not measured" if not _measured(row.ours) else "ok" if row.ours <= row.limit else "MISSED"))
        verdict = "; ".join(verdicts) or "-"
        cells.append((row.bench, f"{row.measure} ({row.unit})", _number(row.ours), _number(row.reference),
                      ratio, verdict))
    if markdown:
        lines = ["| " + " | ".join(c) + " |" for c in cells]
        lines.insert(1, "|" + "|".join("---:" if i > 1 else "---" for i in range(len(header))) + "|")
        return "\n".join(lines)
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    return "\n".join("  ".join(c[i].ljust(widths[i]) if i < 2 else c[i].rjust(widths[i]) for i in range(len(c)))
                     for c in cells)


def _number(value: float | None) -> str:
    if value is None or not _measured(value):
        return "not measured"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def runs_and_chunks_main(doc: str, results: Callable[[int, int], list[Row]], reference_is: str) -> None:
    """The command line of a bench taking ``--runs`` and ``--chunks``: parse, measure, print the table."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=5000)
    args = parser.parse_args()
    note = compile_bytecode()
    print(format_table(results(args.runs, args.chunks)))
    print(f"median of {args.runs} runs per cell; the reference column is {reference_is}; {note}")


def compile_bytecode() -> str:
    """Compile ``src`` and let every process we start use and write .pyc files, as a real install does.

    The sandbox sets PYTHONDONTWRITEBYTECODE=1; without .pyc files every start would recompile our
    modules and the start-up numbers would measure the compiler. Returns a note for the output.
    """
    compileall.compile_dir(ROOT / "src", quiet=1)
    dropped = os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None
    return ("bytecode: src compiled with compileall; PYTHONDONTWRITEBYTECODE "
            + ("unset for the benchmark processes" if dropped else "not set"))


def ours_cmd() -> list[str]:
    """Our `pi`, from the same environment as this interpreter; ``PI_BENCH_OURS`` (a command line)
    replaces it, to measure another build (an earlier commit's tree, for a before/after table)."""
    if os.environ.get("PI_BENCH_OURS"):
        return shlex.split(os.environ["PI_BENCH_OURS"])
    exe = Path(sys.executable).with_name("pi")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pi_coding_agent"]


def reference_cmd() -> list[str] | None:
    """The reference pi 1.6.0 (installed by scripts/install_test_deps.sh), or None."""
    if not REFERENCE_PI.exists():
        return None
    return [str(REFERENCE_PI)]


def env_for(cmd: list[str], home: Path, agent_dir: Path | None = None) -> dict[str, str]:
    """A scratch HOME, node on PATH, no network extras (version check, telemetry) for either side."""
    env = dict(os.environ, HOME=str(home), PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1")
    env["PATH"] = f"{REFERENCE_NODE_BIN}:{env.get('PATH', '')}"
    if agent_dir is not None:
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    return env


def write_models_json(agent_dir: Path, base_url: str) -> None:
    """models.json routing provider ``bench`` (model ``bench-model``) to an OpenAI-compatible server."""
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {PROVIDER: {
        "baseUrl": f"{base_url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": MODEL, "contextWindow": 100000, "maxTokens": 4096}]}}}))


def scratch_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="pi-bench-"))


def median(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float]) -> str:
    """``min-max`` of durations in seconds, as milliseconds (for a row's measure name)."""
    return f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f}"


def peak_rss_mb(pid: int) -> float:
    """VmHWM of a live process (Linux), in MB: the peak of that process image only."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a live process, all its threads (exited ones too), in seconds.

    The process's CPU clock (``clock_getcpuclockid``) counts in nanoseconds; ``/proc/PID/stat``
    counts 10 ms ticks, which at a few microseconds a delta is a tenth of a 20,000-delta prompt
    and hid the per-delta ratios of a few percent. The ticks remain the fallback.
    """
    clock = _cpu_clock(pid)
    if clock is not None:
        with contextlib.suppress(OSError):
            return time.clock_gettime(clock)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def tree_cpu_seconds(pid: int) -> float:
    """``cpu_seconds`` of a live process and its live descendants (a sidecar's CPU counts too)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        with contextlib.suppress(OSError, ValueError):
            total += cpu_seconds(current)
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(child) for child in (task / "children").read_text().split())
    return total


def _cpu_clock(pid: int) -> int | None:
    """The id of ``pid``'s process CPU clock, or None where libc has none to give."""
    import ctypes

    libc = _libc()
    clock = ctypes.c_int()
    if libc is None or libc.clock_getcpuclockid(pid, ctypes.byref(clock)):
        return None
    return clock.value


@functools.cache
def _libc() -> Any:
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "clock_getcpuclockid") else None


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def spawn(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)


def answered_rpc(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    """A fresh ``pi --mode rpc --no-session`` on the bench model that has answered ``get_state``
    (its start-up is behind it)."""
    proc = spawn([*cmd, "--mode", "rpc", "--no-session", "--provider", PROVIDER, "--model", MODEL], env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
    proc.stdin.flush()
    seen = b""
    while b'"get_state"' not in seen:  # raw reads: the caller goes on reading the fd itself
        data = os.read(proc.stdout.fileno(), 1 << 16)
        if not data:
            stop(proc)
            raise RuntimeError(f"{cmd[0]}: exited before answering get_state")
        seen += data
    return proc


def read_record(proc: subprocess.Popen[bytes], predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The next stdout record ``predicate`` accepts (the ones before it are skipped)."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("process ended")
        record: dict[str, Any] = json.loads(line)
        if predicate(record):
            return record


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Close stdin (pi exits on EOF) and reap; kill it if it lingers."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_bench(doc: str, results: Callable[[int], Awaitable[list[Row]]], default_runs: int) -> None:
    """The command line of a side-by-side benchmark: ``[--runs N]``, then its table and the bytecode note."""
    import argparse
    import asyncio

    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--runs", type=int, default=default_runs)
    args = parser.parse_args()
    note = compile_bytecode()
    print(format_table(asyncio.run(results(args.runs))))
    print(note)
