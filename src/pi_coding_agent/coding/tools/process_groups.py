"""The commands one session runs and the full-output files they left, so its shutdown ends them.

Each session owns a registry (its ``ToolEnv`` carries it to the tools), so shutting one session down
leaves the commands and output files of another session in the same process alone. The orphan
guard is shared by all registries of a process: it watches for the death of the process itself,
which ends every session.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals

from .guard import OrphanGuard

MARKER_VARIABLE = "PI_COMMAND_RUN"  # set in every command's environment so escaped children can be found
_PROCESS_GUARD = OrphanGuard()  # one per process: it stands in for this process once it is gone


class ProcessRegistry:
    """Process groups of one session's running commands, and the full-output files they left."""

    def __init__(self, guard: OrphanGuard = _PROCESS_GUARD) -> None:
        self._pids: dict[int, str] = {}
        self._guard = guard
        self._files: set[str] = set()

    def prepare(self) -> None:
        """Before spawning: the guard must already run, or a command could outlive a pi killed while
        the guard was still starting."""
        self._guard.ready()

    def track(self, pid: int, marker: str) -> None:
        self._pids[pid] = marker
        self._guard.started(pid)

    def untrack(self, pid: int) -> None:
        self._pids.pop(pid, None)
        self._guard.ended(pid)

    def keep_file(self, path: str) -> None:
        self._files.add(path)

    def kill_all(self) -> None:
        """SIGKILL every tracked command with all it started (pi's shutdown kills the groups too),
        and remove the full-output files, which are only named to this session's model."""
        pids, self._pids = self._pids, {}
        for pid, marker in pids.items():
            kill_command(pid, marker)
        files, self._files = self._files, set()
        for path in files:
            with contextlib.suppress(OSError):
                os.unlink(path)


def kill_process_group(pid: int) -> None:
    """SIGKILL the group led by ``pid``; fall back to the single process."""
    try:
        os.killpg(pid, signals.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, signals.SIGKILL)


def kill_command(pid: int, marker: str) -> None:
    """Kill the command's group, then whatever left it (``setsid``, double-forked daemons).

    Those escape the group but keep the environment, so they are found by the marker variable
    every command is started with. What clears its environment as well is not found.
    """
    kill_process_group(pid)
    for escaped in _marked_processes(marker):
        with contextlib.suppress(OSError):
            os.kill(escaped, signals.SIGKILL)


def _marked_processes(marker: str) -> list[int]:
    needle = f"{MARKER_VARIABLE}={marker}\0".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/environ", "rb") as handle:
                        if needle in handle.read():
                            found.append(int(entry))
                except OSError:
                    continue
    return found
