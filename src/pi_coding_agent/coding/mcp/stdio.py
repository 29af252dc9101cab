"""The stdio transport: a server process in its own process group, one JSON message per line.

Stopping follows the spec and pi: close stdin, give the server a moment, SIGTERM the group, then
SIGKILL it, so ``npx``/``uvx`` wrappers and their children go too. The group is also registered
with the orphan guard, which kills it if this process dies without running any code. The tail of
stderr is kept for the connection error a user sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable

import orjson

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.tools.process_groups import MARKER_VARIABLE, ProcessRegistry

# MCP server processes: closed by their manager; the shared orphan guard kills them if pi dies.
# (Not yet per session: the manager does not pass the session's registry down to the transport.)
processes = ProcessRegistry()

STDIN_CLOSE_GRACE_S = 0.5  # how long a server may take to exit on its own once stdin closes
KILL_GRACE_S = 2.0  # after SIGTERM, before SIGKILL
STDERR_KEEP_CHARS = 8_000
MAX_LINE_BYTES = 256 * 1024 * 1024  # a line beyond this is a broken server, not a result


class StdioTransport:
    def __init__(self, command: str, args: list[str], env: dict[str, str], cwd: str) -> None:
        self.command = command
        self.args = args
        self.env = env
        self.cwd = cwd
        self.on_message: Callable[[JsonObject], None] = lambda _m: None
        self.on_close: Callable[[], None] = lambda: None
        self.on_garbage: Callable[[str], None] = lambda _line: None
        self.stderr = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False

    async def start(self) -> None:
        processes.prepare()
        marker = os.urandom(8).hex()  # so shutdown also finds what a wrapper (npx, uvx) started outside the group
        self._proc = await asyncio.create_subprocess_exec(
            self.command, *self.args, cwd=self.cwd, env={**os.environ, **self.env, MARKER_VARIABLE: marker},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, limit=MAX_LINE_BYTES)
        processes.track(self._proc.pid, marker)
        self._tasks = [asyncio.create_task(self._read_stdout()), asyncio.create_task(self._read_stderr())]

    def set_protocol_version(self, version: str) -> None:
        """Stdio carries no per-message protocol header."""

    async def send(self, message: JsonObject) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing():
            from pi_coding_agent.coding.mcp.client import McpConnectionClosed

            raise McpConnectionClosed()
        proc.stdin.write(orjson.dumps(message) + b"\n")
        await proc.stdin.drain()

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        reader = self._proc.stdout
        try:
            while line := await reader.readline():
                self._dispatch(line)
        except (ValueError, asyncio.LimitOverrunError, ConnectionError) as exc:
            self.stderr += f"\n[stdout unreadable: {exc}]"
        finally:
            await self._wait_exit()

    def _dispatch(self, line: bytes) -> None:
        text = line.strip()
        if not text:
            return
        try:
            message = orjson.loads(text)
        except orjson.JSONDecodeError:
            self.on_garbage(text[:200].decode("utf-8", "replace"))
            return
        self.on_message(message)

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        with contextlib.suppress(Exception):
            while chunk := await self._proc.stderr.read(65536):
                self.stderr = (self.stderr + chunk.decode("utf-8", "replace"))[-STDERR_KEEP_CHARS:]

    async def _wait_exit(self) -> None:
        assert self._proc is not None
        await self._proc.wait()
        processes.untrack(self._proc.pid)
        if not self._closing:
            self.on_close()

    async def close(self) -> None:
        if self._closing or self._proc is None:
            self._closing = True
            return
        self._closing = True
        proc = self._proc
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        if not await _exited(proc, STDIN_CLOSE_GRACE_S):
            _signal_group(proc.pid, signal.SIGTERM)
            if not await _exited(proc, KILL_GRACE_S):
                _signal_group(proc.pid, signal.SIGKILL)
                await _exited(proc, KILL_GRACE_S)
        # wrappers may leave children in the group after the leader exited
        _signal_group(proc.pid, signal.SIGKILL)
        processes.untrack(proc.pid)
        for task in self._tasks:
            task.cancel()


async def _exited(proc: asyncio.subprocess.Process, timeout_s: float) -> bool:
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), timeout_s)
        return True
    except TimeoutError:
        return False


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
