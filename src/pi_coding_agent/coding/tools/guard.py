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

# A POSIX shell script: dash starts in about 0.2 M instructions where ``python -S`` took 55 M, a tenth
# of a whole tool turn (issue #40). ``groups`` holds " pgid pgid ... "; "-pgid" removes one.
_GUARD_SCRIPT = """groups=" "
while read -r pid; do
  case $pid in
    -*) pid=${pid#-}; case $groups in *" $pid "*) groups="${groups%% $pid *} ${groups#* $pid }";; esac;;
    *) groups="$groups$pid ";;
  esac
done
for pid in $groups; do kill -9 -$pid 2>/dev/null; done
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
                    ["/bin/sh", "-c", _GUARD_SCRIPT], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                return None
        return self._proc
