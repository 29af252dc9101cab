"""One configured server's connection: state, tools, instructions, lazy reconnect.

States are pi's: ``connecting``, ``connected``, ``failed``, ``disconnected``, ``needs-auth``. A
dropped connection shows as ``disconnected`` and the next call reconnects; a failure keeps the
first lines of the error and the tail of a stdio server's stderr for ``/mcp``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_coding_agent.ai.auth.keys import resolve_or_raise
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.mcp.client import McpAuthRequired, McpClient, McpError, directory_root
from pi_coding_agent.coding.mcp.config import ServerEntry
from pi_coding_agent.coding.mcp.log import ServerLog

CLIENT_VERSION = "1.6.0"  # what pi reports as clientInfo; some servers tailor answers to known clients
STDERR_TAIL_CHARS = 2_000
METHOD_NOT_FOUND = -32601


def expand_home(value: str) -> str:
    if value == "~":
        return str(Path.home())
    return str(Path.home() / value[2:]) if value.startswith("~/") else value


def create_transport(entry: ServerEntry, cwd: Path, token: Any = None) -> object:
    """The entry's transport, its ``${VAR}`` and ``!command`` values resolved (ValueError if not)."""
    config = entry.config
    if entry.is_http:
        from pi_coding_agent.coding.mcp.http import StreamableHttpTransport

        headers = {key: resolve_or_raise(value, f'MCP server "{entry.name}" header "{key}"')
                   for key, value in (config.get("headers") or {}).items()}
        return StreamableHttpTransport(config["url"], headers, token)
    from pi_coding_agent.coding.mcp.stdio import StdioTransport

    env = {key: resolve_or_raise(value, f'MCP server "{entry.name}" env "{key}"')
           for key, value in (config.get("env") or {}).items()}
    return StdioTransport(expand_home(config["command"]), [expand_home(a) for a in config.get("args") or []],
                          env, str((cwd / expand_home(config.get("cwd") or ".")).resolve()))


class ServerConnection:
    """Connects on ``start()``; ``client()`` reconnects a dropped connection on demand."""

    def __init__(self, entry: ServerEntry, cwd: Path, log: ServerLog,
                 on_tools: Callable[[ServerConnection], None], on_change: Callable[[ServerConnection], None],
                 token: Any = None) -> None:
        self.entry = entry
        self.cwd = cwd
        self.log = log
        self.on_tools = on_tools
        self.on_change = on_change
        self.token = token
        self.state = "connecting"
        self.error: str | None = None
        self.tools: list[dict[str, Any]] = []
        self.has_resources = False
        self.instructions: str | None = None
        self.challenge = ""  # the last 401's WWW-Authenticate, which sign-in starts from
        self._client: McpClient | None = None
        self._opening: asyncio.Task[None] | None = None
        self._refresh: asyncio.Task[None] | None = None  # the tools/list after a list_changed

    @property
    def name(self) -> str:
        return self.entry.name

    def start(self) -> asyncio.Task[None]:
        """Connect in the background (once at a time); the task never raises."""
        if self._opening is None or self._opening.done():
            self.state = "connecting"
            self._opening = asyncio.create_task(self._open())
        return self._opening

    async def client(self) -> McpClient:
        """The live client, reconnecting first when the connection dropped or failed."""
        if self.state != "connected" or self._client is None:
            await asyncio.wait([self.start()])  # the attempt is the connection's: a cancelled caller leaves it
        if self.state != "connected" or self._client is None:
            raise RuntimeError(f'MCP server "{self.name}" is not connected: {(self.error or self.state)}')
        return self._client

    async def _open(self) -> None:
        try:
            await self._open_once()
        except McpAuthRequired:
            # an expired or revoked access token: one refresh, then the user must sign in again
            if self.token is not None and await self.token.refresh():
                with contextlib.suppress(McpAuthRequired):
                    await self._open_once()

    async def _open_once(self) -> None:
        transport: Any = None
        try:
            transport = create_transport(self.entry, self.cwd, self.token)
            if hasattr(transport, "on_garbage"):
                transport.on_garbage = self._garbage
            client = McpClient(transport, client_version=CLIENT_VERSION, timeout_s=self.entry.timeout_s,
                               on_notification=self._notification, on_close=self._dropped,
                               roots=[directory_root(self.cwd)])
            self._client = client
            await client.connect()
            self.instructions = client.instructions
            self.has_resources = "resources" in client.capabilities
            self.tools = await self._list_tools(client)
            self.state, self.error = "connected", None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._fail(exc, transport)
            if isinstance(exc, McpAuthRequired) and self.token is not None:
                self.challenge = exc.www_authenticate
                raise
            return
        self.on_tools(self)
        self.on_change(self)

    async def _list_tools(self, client: McpClient) -> list[JsonObject]:
        if "tools" not in client.capabilities:
            return []
        tools = await client.list_all("tools/list", "tools")
        return [t for t in tools if isinstance(t.get("name"), str) and t["name"]]

    async def _fail(self, exc: Exception, transport: object) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
        self._client = None
        if isinstance(exc, McpAuthRequired):
            provider = (self.entry.config.get("auth") or {}).get("provider") if self.entry.is_http else None
            how = f"/login {provider}" if provider else "/mcp"
            self.state, self.error = "needs-auth", f'MCP server "{self.name}" requires sign-in. Run {how} to sign in.'
        else:
            self.state = "failed"
            self.error = _describe(exc, self.entry) + self._stderr_tail(transport)
        self.on_change(self)

    def _stderr_tail(self, transport: object) -> str:
        tail = str(getattr(transport, "stderr", "") or "").strip()[-STDERR_TAIL_CHARS:]
        return f"\n{tail}" if tail else ""

    def _dropped(self) -> None:
        transport = self._client.transport if self._client is not None else None
        self._client = None
        self.state, self.error = "disconnected", "Connection closed" + self._stderr_tail(transport)
        self.on_change(self)

    def _garbage(self, line: str) -> None:
        self.log.write(self.name, {"level": "warning", "logger": "pi", "data": f"non-JSON line on stdout: {line}"})

    def _notification(self, method: str, params: object) -> None:
        if method == "notifications/message":
            self.log.write(self.name, params)
        elif method == "notifications/tools/list_changed" and self._client is not None:
            self._refresh = asyncio.create_task(self._refresh_tools(self._client))

    async def _refresh_tools(self, client: McpClient) -> None:
        with contextlib.suppress(Exception):
            self.tools = await self._list_tools(client)
            self.on_tools(self)
            self.on_change(self)

    async def call_tool(self, tool: str, arguments: JsonObject,
                        on_progress: Callable[[JsonObject], None] | None) -> JsonObject:
        client = await self.client()
        params = {"name": tool, "arguments": arguments}
        try:
            result = await client.request("tools/call", params, on_progress=on_progress)
        except McpAuthRequired:
            # the server refused the token before running anything, so one retry after a refresh is safe
            if self.token is None or not await self.token.refresh():
                raise
            result = await client.request("tools/call", params, on_progress=on_progress)
        if not isinstance(result, dict) or not isinstance(result.get("content", []), list):
            raise McpError(-32600, f"MCP tool {self.name}/{tool} returned an invalid result")
        if self._refresh is not None and not self._refresh.done():
            # the call changed the server's tools (list_changed came before its result): the next
            # request, in this run or the next prompt, declares the new list rather than racing it
            await asyncio.shield(self._refresh)
        return result

    async def close(self) -> None:
        """Stop the server; a connection still opening is cancelled first, so a process it spawned
        is closed here too rather than after this returns."""
        if self._opening is not None and not self._opening.done():
            self._opening.cancel()
            await asyncio.wait([self._opening])
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def _describe(exc: Exception, entry: ServerEntry) -> str:
    """pi's wording for a server that cannot start (``spawn <command> ENOENT``), else the error."""
    if isinstance(exc, OSError) and exc.errno is not None and not entry.is_http:
        import errno

        return f"spawn {entry.config.get('command')} {errno.errorcode.get(exc.errno, str(exc.errno))}"
    return str(exc) or type(exc).__name__
