"""Interactive mode in a real terminal (tmux), ours against the reference pi 1.6.0's.

Launch: wall time from starting ``pi`` in a fresh 120x40 tmux pane to the footer showing the model
(the editor is ready then), and the CPU time the process had used by then (steadier than wall time
on a loaded machine). Streaming: one prompt whose reply is ``--chunks`` tiny text deltas from the
fake LLM server (``tests/support/fakes/llm_server.py``), ending in a marker; the CPU time of the
``pi`` process (``common.cpu_seconds``) from typing Enter to the marker being on screen, divided by
the chunk count, is what drawing a delta costs. Keypress: while a second reply streams (2 ms
between deltas), 24 keys are typed one at a time; the time from ``send-keys`` to the typed text
being on screen, median. Keys and screen reads go through one tmux control-mode client per pane
(``Control``): no tmux client process starts per key or read, and the screen is read as soon as
tmux reports a write of the pane (and every 50 ms besides). RSS: the peak of ``pi --session`` on a
generated 1,000-message session (markdown answers with a code block each), 2 s after its footer
shows. ``/resume``: with 500 sessions of 20 messages in the project's session folder, the time and
CPU from Enter on ``/resume`` to the newest session being listed. Each side starts once before the
runs (its config checked and cached, as on a user's second launch); the sides alternate run by run;
tmux's own CPU is not counted.

Usage: .venv/bin/python bench/bench_interactive.py [--runs 3] [--chunks 5000] [--keys-only]
(``--keys-only``: launch, streaming and keypress, without ``/resume`` and the long session)
"""

from __future__ import annotations

import json
import os
import select
import shlex
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
TYPED = "QXJVKZ"  # capitals the streamed text never contains, typed one at a time
PROBE = "resume-probe"  # the first message of each generated session
SESSIONS = 500
RECHECK_S = 0.05  # a wait reads the screen after each write of the pane, and this often besides
KEY_ROUNDS = 4  # TYPED typed this many times: 24 keys, a steadier median than 12


class Control:
    """A tmux control-mode client (``tmux -C``) attached to a pane's session: keys are typed and the
    screen is read over one connection, so neither starts a tmux client process (3-20 ms on a loaded
    machine, which the keypress row measured along with the app). tmux tells it when the pane
    wrote (``%output``), so a wait reads the screen after each write instead of on a clock."""

    def __init__(self, tmux: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([*tmux, "-C", "attach", "-t", "b"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, bufsize=0)
        assert self.proc.stdout is not None
        self._fd = self.proc.stdout.fileno()
        self._pending = b""
        self.wrote = False  # the pane wrote since this was last cleared
        self._reply()  # the attach's own block

    def command(self, line: str) -> list[str]:
        """The output lines of one tmux command."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        return self._reply()

    def wait_output(self, timeout_s: float) -> None:
        """Until the pane writes (or ``timeout_s`` passes)."""
        deadline = time.monotonic() + timeout_s
        while not self.wrote and (left := deadline - time.monotonic()) > 0:
            self._line(left)

    def _reply(self) -> list[str]:
        """The lines between the next ``%begin`` and its ``%end`` (notifications outside are noted)."""
        out: list[str] | None = None
        while True:
            text = self._line(None)
            if text is None:
                continue
            if out is None:
                out = [] if text.startswith("%begin ") else None
            elif text.startswith(("%end ", "%error ")):
                return out
            else:
                out.append(text)

    def _line(self, timeout_s: float | None) -> str | None:
        """The next line from tmux, None when ``timeout_s`` passed first."""
        while b"\n" not in self._pending:
            if not select.select([self._fd], [], [], timeout_s)[0]:
                return None
            data = os.read(self._fd, 1 << 16)
            if not data:
                raise RuntimeError("tmux control client ended")
            self._pending += data
        line, self._pending = self._pending.split(b"\n", 1)
        if line.startswith(b"%output "):
            self.wrote = True
        return line.decode(errors="replace")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Pane:
    def __init__(self, cmd: list[str], home: Path, opened: list[str] | None = None) -> None:
        """``opened``: the session options (``--no-session`` by default)."""
        self.socket = f"pi-bench-{uuid.uuid4().hex[:8]}"
        env = common.env_for(cmd, home, home / "agent")
        env["TERM"] = "xterm-256color"
        self.env = env
        opened = ["--no-session"] if opened is None else opened
        line = " ".join([*cmd, *opened, "--provider", PROVIDER, "--model", MODEL]) + "; sleep 30"
        self.started = time.monotonic()
        self._tmux("new-session", "-d", "-s", "b", "-x", "120", "-y", "40", "-c", str(home), line)
        self.control = Control(self._base(), env)

    def _base(self) -> list[str]:
        return ["tmux", "-L", self.socket, "-f", "/dev/null"]

    def _tmux(self, *args: str) -> str:
        done = subprocess.run([*self._base(), *args], capture_output=True, env=self.env, timeout=30, check=False)
        return done.stdout.decode(errors="replace")

    def wait_for(self, text: str, last_lines: int = 40, timeout_s: float = 120.0) -> float:
        """Seconds since start until ``text`` shows in the last ``last_lines`` rows (the screen read
        after each write of the pane, and every ``RECHECK_S`` besides)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.control.wrote = False
            rows = self.control.command("capture-pane -p -t b")
            if text in "\n".join(rows[-last_lines:]):
                return time.monotonic() - self.started
            self.control.wait_output(RECHECK_S)
        raise RuntimeError(f"{text!r} never showed")

    def pid(self) -> int:
        shell = int(self.control.command("list-panes -t b -F '#{pane_pid}'")[0].strip())
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        return int(children[0])

    def keys(self, *keys: str) -> None:
        self.control.command(" ".join(["send-keys", "-t", "b", *(shlex.quote(key) for key in keys)]))

    def close(self) -> None:
        self.control.close()
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


def run_once(cmd: list[str], home: Path, chunks: int) -> tuple[float, float, float, float]:
    """(launch seconds, CPU seconds to the ready editor, CPU microseconds per delta, keypress-to-screen
    milliseconds) of one side."""
    pane = Pane(cmd, home)
    try:
        launch = pane.wait_for(MODEL, last_lines=3)
        pid = pane.pid()
        launch_cpu = common.cpu_seconds(pid)
        time.sleep(1.0)  # let start-up work in the background settle before the CPU meter starts
        before = common.cpu_seconds(pid)
        pane.keys("stream please", "Enter")
        pane.wait_for(MARKER)
        per_delta = (common.cpu_seconds(pid) - before) / chunks * 1e6
        pane.keys("again", "Enter")  # the slow reply: keys typed while it streams
        time.sleep(0.5)
        typed, latencies = "", []
        for key in TYPED * KEY_ROUNDS:
            typed += key
            sent = time.monotonic()
            pane.keys(key)
            pane.wait_for(typed, last_lines=8)
            latencies.append((time.monotonic() - sent) * 1000)
        return launch, launch_cpu, per_delta, median(latencies)
    finally:
        pane.close()


def session_rss(cmd: list[str], home: Path, messages: int) -> float:
    """Peak RSS (MiB) of ``cmd`` once it shows a session of ``messages`` messages."""
    path = home / "long-session.jsonl"
    write_session(path, home, messages)
    pane = Pane(cmd, home, ["--session", str(path)])
    try:
        pane.wait_for(MODEL, last_lines=3)
        time.sleep(2.0)
        return common.peak_rss_mb(pane.pid())
    finally:
        pane.close()


def resume_picker(cmd: list[str], home: Path, sessions: int) -> tuple[float, float]:
    """(seconds, CPU seconds) from Enter on ``/resume`` to the newest of ``sessions`` listed."""
    pane = Pane(cmd, home, [])
    try:
        pane.wait_for(MODEL, last_lines=3)
        time.sleep(1.0)
        pid = pane.pid()
        pane.keys("/resume")
        time.sleep(0.5)
        before, sent = common.cpu_seconds(pid), time.monotonic()
        pane.keys("Enter")
        pane.wait_for(f"{PROBE} {sessions - 1} ")
        return time.monotonic() - sent, common.cpu_seconds(pid) - before
    finally:
        pane.close()


def write_sessions(home: Path, count: int, messages: int = 20) -> None:
    """``count`` sessions of ``home``'s project, ``messages`` messages each, the last one the newest."""
    directory = home / "agent" / "sessions" / ("--" + str(home.resolve()).strip("/").replace("/", "-") + "--")
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        path = directory / f"2026-01-01T00-00-00-000Z_{i:04d}.jsonl"
        write_session(path, home, messages, session_id=f"bench-{i:04d}", first=f"{PROBE} {i} ", start_ms=i * 60_000)


def write_session(path: Path, cwd: Path, messages: int, session_id: str = "bench-long", first: str = "",
                  start_ms: int = 0) -> None:
    """A linear pi session file: questions and markdown answers with a code block each."""
    usage = {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    epoch_ms = 1_767_225_600_000 + start_ms  # 2026-01-01, one minute apart per session
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(epoch_ms / 1000))
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": stamp, "cwd": str(cwd)}]
    for i in range(messages):
        if i % 2 == 0:
            text = first if i == 0 and first else f"question {i}"
            message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": epoch_ms + i}
        else:
            text = f"## Answer {i}\n\nSome *markdown* and `code`.\n\n```python\nprint({i})\n```\n"
            message = {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "openai-completions",
                       "provider": PROVIDER, "model": MODEL, "usage": usage, "stopReason": "stop",
                       "timestamp": epoch_ms + i}
        lines.append({"type": "message", "id": f"e{i:05d}", "parentId": f"e{i - 1:05d}" if i else None,
                      "timestamp": stamp, "message": message})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    os.utime(path, (epoch_ms / 1000, epoch_ms / 1000))


def results(runs: int = 3, chunks: int = 5000, keys_only: bool = False) -> list[Row]:
    """``keys_only``: launch, streaming and keypress only (no ``/resume``, no long session)."""
    if shutil.which("tmux") is None:
        sys.exit("tmux is not installed")
    reply = scripted_reply(chunks)
    reply["content"].append({"type": "text", "text": f"\n\n{MARKER}\n"})  # type: ignore[attr-defined]
    slow = {**scripted_reply(chunks), "chunkDelayMs": 2}  # ~10 s of deltas to type over
    script = common.scratch_home() / "script.json"
    sides = {"ours": common.ours_cmd(), "reference": common.reference_cmd()}
    script.write_text(json.dumps([reply, slow] * runs * len(sides)))
    server, url = start_server(script)
    measured: dict[str, list[list[float]]] = {}
    homes = {side: warm_home(cmd, url) for side, cmd in sides.items() if cmd is not None}
    for home in homes.values():
        if not keys_only:
            write_sessions(home, SESSIONS)
    try:
        for _ in range(runs):  # the sides alternate, so a change in the machine's load hits both
            for side, home in homes.items():
                cmd = sides[side] or []
                launch, launch_cpu, per_delta, keypress = run_once(cmd, home, chunks)
                print(f"{side}: keypress {keypress:.1f} ms, {per_delta:.1f} us a delta", file=sys.stderr)
                values = [launch * 1000, launch_cpu * 1000, per_delta, keypress]
                if not keys_only:
                    resume, resume_cpu = resume_picker(cmd, home, SESSIONS)
                    values += [session_rss(cmd, home, 1000), resume * 1000, resume_cpu * 1000]
                for column, value in zip(measured.setdefault(side, [[] for _ in values]), values, strict=True):
                    column.append(value)
    finally:
        server.terminate()
        for home in homes.values():
            common.cleanup(home)
    names = [("launch to ready editor", "ms"), ("CPU to ready editor", "ms"),
             (f"CPU per streamed delta ({chunks})", "us"), ("keypress to screen while streaming", "ms"),
             ("RSS with a 1,000-message session", "MiB"), (f"/resume picker with {SESSIONS} sessions", "ms"),
             (f"CPU of /resume with {SESSIONS} sessions", "ms")]
    ours, ref = measured["ours"], measured.get("reference")
    return [Row("interactive", name, unit, median(ours[i]), median(ref[i]) if ref else None, 0.5)
            for i, (name, unit) in enumerate(names[:len(ours)])]


if __name__ == "__main__":
    keys_only = "--keys-only" in sys.argv
    if keys_only:
        sys.argv.remove("--keys-only")
    common.runs_and_chunks_main(__doc__ or "", lambda runs, chunks: results(runs, chunks, keys_only),
                                "the reference pi 1.6.0 in tmux")
