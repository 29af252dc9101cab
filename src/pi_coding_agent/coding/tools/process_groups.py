"""The process groups of one session's running commands, so its shutdown kills what it started.

Each session owns a registry (its ``ToolEnv`` carries it to the tools), so shutting one session down
leaves the commands of another session in the same process alone. The orphan guard is shared by all
registries of a process: it watches for the death of the process itself, which ends every session.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals

from .guard import OrphanGuard

_PROCESS_GUARD = OrphanGuard()  # one per process: it stands in for this process once it is gone


def kill_process_group(pid: int) -> None:
    """SIGKILL the group led by ``pid``; fall back to the single process."""
    try:
        os.killpg(pid, signals.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, signals.SIGKILL)


class ProcessRegistry:
    """Process groups of one session's running commands."""

    def __init__(self, guard: OrphanGuard = _PROCESS_GUARD) -> None:
        self._pids: set[int] = set()
        self._guard = guard

    def prepare(self) -> None:
        """Before spawning: the guard must already run, or a command could outlive a pi killed while
        the guard was still starting."""
        self._guard.ready()

    def track(self, pid: int) -> None:
        self._pids.add(pid)
        self._guard.started(pid)

    def untrack(self, pid: int) -> None:
        self._pids.discard(pid)
        self._guard.ended(pid)

    def kill_all(self) -> None:
        """SIGKILL every tracked process group (pi's shutdown does the same)."""
        pids, self._pids = self._pids, set()
        for pid in pids:
            kill_process_group(pid)
