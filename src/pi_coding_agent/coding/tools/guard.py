"""A guard process that kills our commands' process groups when pi dies without cleaning up.

pi's own shutdown (EOF, SIGTERM, SIGHUP) kills every tracked group itself, but a process killed
with SIGKILL (or by the OOM killer) runs no code at all, and the groups it started would live on as
orphans. The guard is a tiny child holding the read end of a pipe that only pi can write to: it
learns each group as it starts and ends, and when the pipe reaches EOF, because pi is gone for
whatever reason, it SIGKILLs the groups still listed and exits. It starts with the first command,
so a session that never runs one never pays for it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

# Runs with -S (no site import): the guard starts in a few milliseconds and needs only os/signal.
_GUARD_SOURCE = """
import os, signal, sys
groups = set()
for line in sys.stdin:
    pid = int(line)
    if pid > 0:
        groups.add(pid)
    else:
        groups.discard(-pid)
for pid in groups:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
"""


class OrphanGuard:
    """Tells the guard process which process groups are alive (see the module docstring)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def ready(self) -> None:
        """Start the guard now, so that registering a new group later is a single pipe write."""
        self._process()

    def started(self, pgid: int) -> None:
        self._send(f"{pgid}\n")

    def ended(self, pgid: int) -> None:
        self._send(f"-{pgid}\n")

    def _send(self, line: str) -> None:
        proc = self._process()
        if proc is None or proc.stdin is None:
            return
        with contextlib.suppress(OSError):  # a guard that died only loses the SIGKILL safety net
            proc.stdin.write(line.encode())
            proc.stdin.flush()

    def _process(self) -> subprocess.Popen[bytes] | None:
        if self._proc is None or self._proc.poll() is not None:
            try:
                # its own session: a signal sent to pi's process group must not take the guard with it
                self._proc = subprocess.Popen(
                    [sys.executable, "-S", "-c", _GUARD_SOURCE], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                return None
        return self._proc
