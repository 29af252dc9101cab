"""Interactive mode in a real terminal (tmux), ours against the reference pi 1.6.0's.

Launch: wall time from starting ``pi`` in a fresh 120x40 tmux pane to the footer showing the model
(the editor is ready then), polled with ``capture-pane`` every 10 ms. Streaming: one prompt whose reply
is ``--chunks`` tiny text deltas from the fake LLM server (``tests/fakes/llm_server.py``), ending in a
marker; the CPU time of the ``pi`` process (``common.cpu_seconds``) from typing Enter to the marker
being on screen, divided by the chunk count, is what drawing a delta costs. Each side starts once before the runs (its
config checked and cached, as on a user's second launch); the sides alternate run by run; tmux's
own CPU is not counted.

Usage: .venv/bin/python bench/bench_interactive.py [--runs 3] [--chunks 5000]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import common
from bench_streaming import scripted_reply, start_server
from common import MODEL, PROVIDER, Row, median

MARKER = "ENDOFSTREAM"


class Pane:
    def __init__(self, cmd: list[str], home: Path) -> None:
        self.socket = f"pi-bench-{uuid.uuid4().hex[:8]}"
        env = common.env_for(cmd, home, home / "agent")
        env["TERM"] = "xterm-256color"
        self.env = env
        line = " ".join([*cmd, "--no-session", "--provider", PROVIDER, "--model", MODEL]) + "; sleep 30"
        self.started = time.monotonic()
        self._tmux("new-session", "-d", "-s", "b", "-x", "120", "-y", "40", "-c", str(home), line)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True,
                              env=self.env, timeout=30, check=False)
        return done.stdout.decode(errors="replace")

    def wait_for(self, text: str, last_lines: int = 40, timeout_s: float = 120.0) -> float:
        """Seconds since start until ``text`` shows in the last ``last_lines`` rows."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            rows = self._tmux("capture-pane", "-p", "-t", "b").rstrip("\n").split("\n")
            if text in "\n".join(rows[-last_lines:]):
                return time.monotonic() - self.started
            time.sleep(0.01)
        raise RuntimeError(f"{text!r} never showed")

    def pid(self) -> int:
        shell = int(self._tmux("list-panes", "-t", "b", "-F", "#{pane_pid}").strip())
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        return int(children[0])

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "b", *keys)

    def close(self) -> None:
        self._tmux("kill-server")


def warm_home(cmd: list[str], url: str) -> Path:
    """A scratch home where ``cmd`` has started once (a user's second launch: config files checked,
    caches written), so the runs measure a daily start rather than the very first."""
    home = common.scratch_home()
    common.write_models_json(home / "agent", url)
    pane = Pane(cmd, home)
    try:
        pane.wait_for(MODEL, last_lines=3)
    finally:
        pane.close()
    return home


def run_once(cmd: list[str], home: Path, chunks: int) -> tuple[float, float]:
    """(launch seconds, CPU microseconds per delta) of one side."""
    pane = Pane(cmd, home)
    try:
        launch = pane.wait_for(MODEL, last_lines=3)
        time.sleep(1.0)  # let start-up work in the background settle before the CPU meter starts
        pid = pane.pid()
        before = common.cpu_seconds(pid)
        pane.keys("stream please", "Enter")
        pane.wait_for(MARKER)
        per_delta = (common.cpu_seconds(pid) - before) / chunks * 1e6
        return launch, per_delta
    finally:
        pane.close()


def results(runs: int = 3, chunks: int = 5000) -> list[Row]:
    if shutil.which("tmux") is None:
        sys.exit("tmux is not installed")
    reply = scripted_reply(chunks)
    reply["content"].append({"type": "text", "text": f"\n\n{MARKER}\n"})  # type: ignore[attr-defined]
    script = common.scratch_home() / "script.json"
    sides = {"ours": common.ours_cmd(), "reference": common.reference_cmd()}
    script.write_text(json.dumps([reply] * runs * len(sides)))
    server, url = start_server(script)
    measured: dict[str, tuple[list[float], list[float]]] = {}
    homes = {side: warm_home(cmd, url) for side, cmd in sides.items() if cmd is not None}
    try:
        for _ in range(runs):  # the sides alternate, so a change in the machine's load hits both
            for side, home in homes.items():
                launch, cpu = run_once(sides[side] or [], home, chunks)
                measured.setdefault(side, ([], []))[0].append(launch * 1000)
                measured[side][1].append(cpu)
    finally:
        server.terminate()
        for home in homes.values():
            common.cleanup(home)
    ours, ref = measured["ours"], measured.get("reference")
    return [
        Row("interactive", "launch to ready editor", "ms", median(ours[0]), median(ref[0]) if ref else None, 0.5),
        Row("interactive", f"CPU per streamed delta ({chunks})", "us", median(ours[1]),
            median(ref[1]) if ref else None, 0.5),
    ]


if __name__ == "__main__":
    common.runs_and_chunks_main(__doc__ or "", results, "the reference pi 1.6.0 in tmux")
