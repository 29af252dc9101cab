"""A long conversation with compaction: does the cost of a turn grow with the history?

One ``pi --mode rpc`` process (ours, then the reference pi 1.6.0 if installed) runs ``--turns`` prompts
in one saved session. The fake model (OpenAI chat-completions wire, served here) answers every other
prompt with a ``bash`` call and then text, reports prompt tokens from the request's size, and answers
summary requests (those without tools) with a summary, so auto-compaction runs every ~80 turns.
Every hundred turns the bench records the agent's CPU time and resident set, and the session file's
size: per-turn CPU should stay flat across compactions, and RSS should grow no faster than the file.
The growth figure compares turns 801-1200 with turns 101-500: the first hundred turns also pay the
first request's imports (the HTTP stack, the adapter), which have nothing to do with the history.

    .venv/bin/python bench/bench_long_conversation.py [--turns 1200] [--side ours|reference|both]
    .venv/bin/python bench/bench_long_conversation.py --turns 1200 --instructions 200   # ours, callgrind
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from common import (
    MODEL,
    PROVIDER,
    ROOT,
    cleanup,
    compile_bytecode,
    cpu_seconds,
    env_for,
    ours_cmd,
    reference_cmd,
    scratch_home,
    spawn,
    stop,
)

sys.path.insert(0, str(ROOT))
from tests.support.fakes import wire_openai_completions

TOOL_OUTPUT = "x" * 600  # what the model's bash call prints: ~150 tokens a tool turn
WINDOW, RESERVE, KEEP = 32_000, 16_384, 4_000


def _reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    tokens = len(json.dumps(messages)) // 4
    usage = {"input": tokens, "output": 40}
    if not body.get("tools"):
        return {"content": [{"type": "text", "text": "Summary of the work so far. " * 10}], "usage": usage}
    last = messages[-1] if messages else {}
    text = str(last.get("content"))
    if last.get("role") == "user" and "tool please" in text:
        return {"content": [{"type": "toolCall", "id": f"call_{len(messages)}", "name": "bash",
                             "arguments": {"command": f"printf '{TOOL_OUTPUT}'"}}], "usage": usage}
    return {"content": [{"type": "text", "text": "Done with that step, here is what I found. " * 4}],
            "usage": usage, "chunkSize": 64}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        events = wire_openai_completions.render_events(_reply(body), {"body": body})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client closing its keep-alive connection is not worth a traceback."""


def _agent_dir(home: Path, url: str) -> Path:
    agent = home / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text(json.dumps({"providers": {PROVIDER: {
        "baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": MODEL, "contextWindow": WINDOW, "maxTokens": 4096}]}}}))
    (agent / "settings.json").write_text(json.dumps({"compaction": {"reserveTokens": RESERVE,
                                                                    "keepRecentTokens": KEEP}}))
    return agent


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _wait_settled(proc: Any, buffer: bytearray) -> int:
    """Read stdout until the next agent_settled; returns how many compactions ended meanwhile."""
    fd = proc.stdout.fileno()
    while b'"agent_settled"' not in buffer:
        data = os.read(fd, 1 << 20)
        if not data:
            raise RuntimeError("agent exited")
        buffer += data
    head, _, rest = bytes(buffer).partition(b'"agent_settled"')
    compactions = head.count(b'"type":"compaction_end"')
    buffer[:] = rest.partition(b"\n")[2]
    return compactions


def run(cmd: list[str], turns: int, control: dict[int, list[str]] | None = None) -> list[dict[str, float]]:
    """The conversation; ``control`` maps a turn to the ``callgrind_control`` arguments sent before its
    prompt (see ``instructions``)."""
    home = scratch_home()
    server = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    agent = _agent_dir(home, f"http://127.0.0.1:{server.server_address[1]}")
    sessions = home / "sessions"
    proc = spawn([*cmd, "--mode", "rpc", "--provider", PROVIDER, "--model", MODEL, "--session-dir", str(sessions)],
                 env_for(cmd, home, agent), cwd=home)
    assert proc.stdin is not None
    rows: list[dict[str, float]] = []
    buffer = bytearray()
    try:
        cpu, compactions, started = cpu_seconds(proc.pid), 0, time.perf_counter()
        for turn in range(1, turns + 1):
            text = f"turn {turn}: tool please" if turn % 2 else f"turn {turn}: just talk"
            # an idle process reads valgrind's commands when it next runs: the prompt wakes it
            ctl = subprocess.Popen(["callgrind_control", *control[turn], str(proc.pid)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) if control and turn in control else None
            proc.stdin.write(json.dumps({"id": str(turn), "type": "prompt", "message": text}).encode() + b"\n")
            proc.stdin.flush()
            compactions += _wait_settled(proc, buffer)
            if ctl is not None:
                ctl.wait(120)
            if turn % 100 == 0:
                now = cpu_seconds(proc.pid)
                files = list(sessions.rglob("*.jsonl"))
                rows.append({"turns": turn, "cpu_ms_per_turn": (now - cpu) * 10, "rss_mib": _rss_mib(proc.pid),
                             "file_mib": sum(f.stat().st_size for f in files) / 2**20, "compactions": compactions,
                             "wall_s": time.perf_counter() - started})
                cpu = now
    finally:
        stop(proc)
        server.shutdown()
        cleanup(home)
    return rows


def instructions(turns: int, window: int) -> None:
    """Our instructions (callgrind) over turns 101 to 100 + ``window`` and over the ``window`` turns that
    end 100 turns before the last. Unlike CPU time on a shared machine, the count does not move with
    the load (it leaves out the kernel's share)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    early, late = 101, turns - 99 - window
    if late <= early + window + 1:
        raise SystemExit(f"--turns must be above {2 * window + 200} for two windows of {window} turns")
    with tempfile.TemporaryDirectory(prefix="pi-bench-cg-") as out:
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/cg", *ours_cmd()]
        run(cmd, turns, {early: ["-i", "on"], early + window: ["-d", "early"], early + window + 1: ["-i", "off"],
                         late: ["-i", "on"], late + window: ["-d", "late"], late + window + 1: ["-i", "off"]})
        counts = [_instructions(Path(out, f"cg.{part}")) / window / 1e6 for part in (1, 2)]
    print(f"instructions per turn (M): turns {early}-{early + window - 1}: {counts[0]:.2f}, turns {late}-"
          f"{late + window - 1}: {counts[1]:.2f}, late / early {counts[1] / counts[0]:.3f}")


def _instructions(dump: Path) -> int:
    """The instructions a callgrind dump counted (the sum of its lines' costs: ``totals``)."""
    found = re.search(r"^totals: (\d+)", dump.read_text(), re.M)
    assert found is not None, dump
    return int(found.group(1))


def _report(name: str, rows: list[dict[str, float]]) -> None:
    print(f"\n{name}")
    print(f"{'turns':>6} {'CPU ms/turn':>12} {'RSS MiB':>8} {'file MiB':>9} {'compactions':>12} {'wall s':>7}")
    for row in rows:
        print(f"{int(row['turns']):>6} {row['cpu_ms_per_turn']:>12.1f} {row['rss_mib']:>8.1f} "
              f"{row['file_mib']:>9.2f} {int(row['compactions']):>12} {row['wall_s']:>7.1f}")
    if len(rows) >= 12:
        early, late = _per_turn(rows[1:5]), _per_turn(rows[8:12])
        print(f"CPU per turn, turns 801-1200 vs 101-500: {late / early:.2f} x ({late:.2f} against {early:.2f} ms)")
    if len(rows) >= 9:
        growth = (rows[8]["rss_mib"] - rows[1]["rss_mib"]) * 1024 / (rows[8]["turns"] - rows[1]["turns"])
        file_growth = (rows[8]["file_mib"] - rows[1]["file_mib"]) * 1024 / (rows[8]["turns"] - rows[1]["turns"])
        print(f"CPU per turn, turns 1-100 (the first request's imports included): {rows[0]['cpu_ms_per_turn']:.1f} ms; "
              f"RSS growth {growth:.1f} KiB/turn (file {file_growth:.1f} KiB/turn) after turn 200")


def _per_turn(rows: list[dict[str, float]]) -> float:
    """Mean CPU per turn over consecutive hundred-turn windows: four of them hold about ten compactions,
    so where the compactions fall (two or three in a window) no longer moves the figure."""
    return sum(row["cpu_ms_per_turn"] for row in rows) / len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1200)
    parser.add_argument("--side", choices=("ours", "reference", "both"), default="both")
    parser.add_argument("--instructions", type=int, metavar="WINDOW",
                        help="count our instructions per turn (valgrind) over an early and a late window of WINDOW turns")
    args = parser.parse_args()
    print(compile_bytecode())
    if args.instructions:
        instructions(args.turns, args.instructions)
        return 0
    if args.side in ("ours", "both"):
        _report("ours", run(ours_cmd(), args.turns))
    ref = reference_cmd()
    if args.side in ("reference", "both"):
        if ref is None:
            print("reference pi not installed (bash scripts/install_test_deps.sh)")
        else:
            _report("reference pi 1.6.0", run(ref, args.turns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
