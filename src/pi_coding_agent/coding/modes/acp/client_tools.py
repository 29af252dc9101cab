"""File and command backends that work through the ACP client (``fs/*`` and ``terminal/*``).

With them the read, write and edit tools see the editor's unsaved buffers and the editor records
every change, and bash commands run in a terminal the editor shows live. Installed only for the
capabilities the client advertised; the file backend needs both ``readTextFile`` and
``writeTextFile`` (an edit reads and writes the same buffer). Images are still read from disk:
``fs/read_text_file`` carries text only.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal as signals
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.tool import ToolError
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.modes.acp.jsonrpc import ConnectionClosed, RpcError

if TYPE_CHECKING:
    from pi_coding_agent.coding.tools.backend import CommandPlace, ShellExit

Request = Callable[[str, dict[str, Any]], Awaitable[Any]]
TERMINAL_OUTPUT_LIMIT = 4 * 1024 * 1024  # bytes the client keeps; the bash tool truncates further for the model


class ClientFiles:
    """``FileBackend`` over ``fs/read_text_file`` and ``fs/write_text_file``."""

    def __init__(self, request: Request, session_id: str) -> None:
        self._request = request
        self._session_id = session_id

    def handles_read(self, path: str) -> bool:
        from pi_coding_agent.coding.tools.images import SNIFF_BYTES, sniff_image_mime

        try:
            with open(path, "rb") as handle:
                return sniff_image_mime(handle.read(SNIFF_BYTES)) is None
        except OSError:
            return True  # not on disk (or unreadable here): the editor may still have it

    async def read_text(self, path: str) -> str:
        result = await self._call("fs/read_text_file", {"sessionId": self._session_id, "path": path}, path)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise ToolError(f"The editor returned no text for {path}")
        return content

    async def write_text(self, path: str, content: str) -> None:
        await self._call("fs/write_text_file", {"sessionId": self._session_id, "path": path, "content": content}, path)

    async def _call(self, method: str, params: JsonObject, path: str) -> object:
        try:
            return await self._request(method, params)
        except RpcError as err:
            raise ToolError(f"{err.message}: {path}") from None
        except ConnectionClosed:
            raise ToolError(f"The editor disconnected before {method} of {path}") from None


class ClientTerminals:
    """``CommandBackend`` over ``terminal/create`` and friends; the call's content embeds the terminal."""

    def __init__(self, request: Request, session_id: str, send_update: Callable[[JsonObject], None]) -> None:
        self._request = request
        self._session_id = session_id
        self._send_update = send_update
        self._by_call: dict[str, str] = {}

    def terminal_of(self, tool_call_id: str) -> str | None:
        return self._by_call.get(tool_call_id)

    async def run(
        self, command: str, env: CommandPlace, on_data: Callable[[bytes], None], signal: AbortSignal,
        timeout: float | None, session_vars: dict[str, str], *, tool_call_id: str,
    ) -> ShellExit:
        from pi_coding_agent.coding.tools.backend import ShellExit
        from pi_coding_agent.coding.tools.shell import CommandAborted, ShellError, resolve_shell

        if signal.aborted:
            raise CommandAborted
        params = {"sessionId": self._session_id, "command": resolve_shell(env.shell_path), "args": ["-c", command],
                  "env": [{"name": k, "value": v} for k, v in session_vars.items() if v], "cwd": str(env.cwd),
                  "outputByteLimit": TERMINAL_OUTPUT_LIMIT}
        try:
            terminal_id = (await self._request("terminal/create", params))["terminalId"]
        except (RpcError, ConnectionClosed, TypeError, KeyError) as err:
            raise ShellError(f"The editor could not start the command: {err}") from None
        self._by_call[tool_call_id] = terminal_id
        self._send_update({"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "status": "in_progress",
                           "content": [{"type": "terminal", "terminalId": terminal_id}]})
        ids = {"sessionId": self._session_id, "terminalId": terminal_id}
        try:
            status = await self._wait(ids, signal, timeout)
            output = await self._request("terminal/output", ids)
            on_data(str(output.get("output", "")).encode("utf-8", "surrogatepass"))
        except (RpcError, ConnectionClosed) as err:
            raise ShellError(f"The editor's terminal failed: {err}") from None
        finally:
            with contextlib.suppress(RpcError, ConnectionClosed):
                await self._request("terminal/release", ids)
        if signal.aborted:
            raise CommandAborted
        if status is None:
            return ShellExit(1, timed_out=True)
        return ShellExit(_exit_code(status))

    async def _wait(self, ids: dict[str, str], signal: AbortSignal, timeout: float | None) -> JsonObject | None:
        """The exit status, or None after killing the command (abort or timeout)."""
        exited = asyncio.ensure_future(self._request("terminal/wait_for_exit", ids))
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({exited, aborted}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        if exited.done():
            result = exited.result()
            return result if isinstance(result, dict) else {}
        exited.cancel()
        await self._request("terminal/kill", ids)
        return None


def _exit_code(status: JsonObject) -> int:
    """The shell's convention: the exit code, or 128 + signal number for a killed command."""
    code = status.get("exitCode")
    if isinstance(code, int):
        return code
    name = status.get("signal")
    with contextlib.suppress(KeyError, TypeError):
        return 128 + signals.Signals[str(name) if str(name).startswith("SIG") else f"SIG{name}"].value
    return 1
