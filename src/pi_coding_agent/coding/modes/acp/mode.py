"""``pi --mode acp``: the Agent Client Protocol (v1) over stdio, for Zed, JetBrains, Neovim, Emacs.

JSON-RPC 2.0, one message per line, on the RPC mode's protected stdout and framer. ``initialize``
is answered before any session exists (nothing heavy is imported until ``session/new``), so an
editor sees the agent as fast as it can start Python. Each ``session/new``/``session/load`` opens a
pi session (the same JSONL files as every other mode) through a ``SessionHost``; the methods below
only translate. Protocol notes and the mapping to pi are in docs/acp.md.
"""

from __future__ import annotations

import asyncio
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent import __version__
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.modes.acp.jsonrpc import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    JsonRpcPeer,
    RpcError,
)
from pi_coding_agent.coding.modes.lifecycle import OrderlyShutdown, take_over_stdin, take_over_stdout
from pi_coding_agent.coding.modes.rpc.transport import RecordWriter
from pi_coding_agent.coding.modes.warm_up import warm_up_after_first_answer

if TYPE_CHECKING:
    from pi_coding_agent.coding.modes.acp.live_session import ClientCapabilities, LiveSession
    from pi_coding_agent.coding.modes.acp.port import SessionHost
    from pi_coding_agent.coding.options import CliArgs

PROTOCOL_VERSION = 1
AUTH_METHOD = "pi-credentials"
IN_FLIGHT_GRACE_S = 5.0


def run(args: CliArgs) -> int:
    """Serve ACP until stdin closes or a signal arrives; returns the exit code."""
    from pi_coding_agent.coding.modes.acp.host import BootstrapHost

    return serve(BootstrapHost(args))


def serve(host: SessionHost) -> int:
    """ACP over this process's stdio (stdout is taken over first, before anything can print)."""
    output_fd, input_fd = take_over_stdout(), take_over_stdin()

    async def main() -> int:
        writer = RecordWriter(output_fd)
        await writer.start()
        return await AcpAgent(host, writer).serve(input_fd)

    return asyncio.run(main())


def _params(params: object) -> JsonObject:
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params", "params must be an object")
    return params


def _absolute_dir(value: object) -> Path:
    if not isinstance(value, str) or not os.path.isabs(value):
        raise RpcError(INVALID_PARAMS, "Invalid params", "cwd must be an absolute path")
    if not os.path.isdir(value):
        raise RpcError(INVALID_PARAMS, "Invalid params", f"cwd is not a directory: {value}")
    return Path(value)


def mcp_entries(servers: object) -> dict[str, JsonObject]:
    """ACP ``mcpServers`` as pi ``mcp.json`` entries by name (stdio and streamable HTTP; SSE is refused)."""
    if servers is None:
        return {}
    if not isinstance(servers, list):
        raise RpcError(INVALID_PARAMS, "Invalid params", "mcpServers must be an array")
    entries: dict[str, JsonObject] = {}
    for server in servers:
        if not isinstance(server, dict) or not isinstance(server.get("name"), str):
            raise RpcError(INVALID_PARAMS, "Invalid params", "every MCP server needs a name")
        pairs = {p.get("name"): p.get("value") for p in server.get("env") or server.get("headers") or []
                 if isinstance(p, dict)}
        if isinstance(server.get("command"), str):
            entries[server["name"]] = {"command": server["command"], "args": list(server.get("args") or []),
                                       "env": pairs}
        elif server.get("type") == "http" and isinstance(server.get("url"), str):
            entries[server["name"]] = {"url": server["url"], "headers": pairs}
        else:
            raise RpcError(INVALID_PARAMS, "Invalid params",
                           f"MCP server {server['name']!r}: only stdio and http transports are supported")
    return entries


class AcpAgent:
    """The agent side of one ACP connection: its sessions and the method table."""

    def __init__(self, host: SessionHost, writer: RecordWriter) -> None:
        self.host = host
        self.writer = writer
        self.peer = JsonRpcPeer(writer, self.on_request, self.on_notification)
        self.sessions: dict[str, LiveSession] = {}
        self.caps: ClientCapabilities | None = None
        self.shutdown = OrderlyShutdown(self._cleanup)
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve(self, input_fd: int) -> int:
        self.shutdown.install_signal_handlers()
        reader = asyncio.create_task(self._read(input_fd), name="acp-reader")
        try:
            return await self.shutdown.wait()
        finally:
            reader.cancel()

    async def _read(self, input_fd: int) -> None:
        await self.peer.serve(input_fd)
        self.shutdown.begin(0)  # EOF: the client is gone

    async def _cleanup(self) -> None:
        for live in list(self.sessions.values()):
            try:
                await live.close()
            except Exception:  # one broken session must not keep the others' files open
                traceback.print_exc(file=sys.stderr)
        self.sessions.clear()
        await self.peer.drain(IN_FLIGHT_GRACE_S)  # prompts cut short still owe their answer
        await self.writer.close()

    # ------------------------------------------------------------------ dispatch

    async def on_request(self, method: str, params: object) -> object:
        handler = METHODS.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})
        if self.caps is None and method != "initialize":
            raise RpcError(INVALID_REQUEST, "Not initialized: the first request must be initialize")
        return await handler(self, _params(params))

    def on_notification(self, method: str, params: object) -> None:
        if method == "session/cancel" and isinstance(params, dict):
            live = self.sessions.get(params.get("sessionId"))  # type: ignore[arg-type]
            if live is not None:
                self._spawn(live.cancel())

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _live(self, params: dict[str, Any]) -> LiveSession:
        live = self.sessions.get(params.get("sessionId"))  # type: ignore[arg-type]
        if live is None:
            raise RpcError(RESOURCE_NOT_FOUND, "Session not found", {"sessionId": params.get("sessionId")})
        return live

    # ------------------------------------------------------------------ methods

    async def initialize(self, params: JsonObject) -> JsonObject:
        from pi_coding_agent.coding.modes.acp.live_session import ClientCapabilities

        if not isinstance(params.get("protocolVersion"), int):
            raise RpcError(INVALID_PARAMS, "Invalid params", "protocolVersion must be an integer")
        self.caps = ClientCapabilities(params.get("clientCapabilities"))
        return {
            "protocolVersion": PROTOCOL_VERSION,  # the only version we speak, whatever was asked
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": bool(getattr(self.host, "supports_mcp_http", False)), "sse": False},
                "sessionCapabilities": {"list": {}, "close": {}},
            },
            "agentInfo": {"name": "pi", "title": "pi", "version": __version__},
            "authMethods": [{"id": AUTH_METHOD, "name": "pi credentials",
                             "description": "Provider API keys from the environment or ~/.pi/agent/auth.json"}],
        }

    async def authenticate(self, params: JsonObject) -> JsonObject:
        """Nothing to sign in to here: re-check that some provider now has credentials."""
        if params.get("methodId") != AUTH_METHOD:
            raise RpcError(INVALID_PARAMS, "Invalid params", f"unknown auth method: {params.get('methodId')!r}")
        from pi_coding_agent.ai.auth.keys import AuthStorage
        from pi_coding_agent.ai.models.catalog import ModelRegistry
        from pi_coding_agent.coding import paths

        agent_dir = paths.agent_dir()
        if not ModelRegistry(agent_dir, AuthStorage(agent_dir)).available_models():
            raise RpcError(AUTH_REQUIRED, "No provider has credentials: set an API key or run pi's login first")
        return {}

    async def new_session(self, params: JsonObject) -> JsonObject:
        live = await self._open(params, None)
        return {"sessionId": live.session_id, **self._session_state(live)}

    async def load_session(self, params: JsonObject) -> JsonObject:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params", "sessionId must be a string")
        live = self.sessions.get(session_id)
        if live is None:
            live = await self._open(params, session_id)
        else:  # loaded again while open: the servers it names now are the session's
            await self.host.connect_mcp_servers(live.session, mcp_entries(params.get("mcpServers")))
        live.replay()
        return self._session_state(live)

    def _session_state(self, live: LiveSession) -> JsonObject:
        from pi_coding_agent.coding.modes.acp.config import mode_state

        asyncio.get_running_loop().call_soon(live.send_commands)  # after the response names the session
        return {"modes": mode_state(live.mode), "configOptions": live.config_options()}

    async def _open(self, params: JsonObject, load_id: str | None) -> LiveSession:
        from pi_coding_agent.coding.modes.acp.live_session import LiveSession
        from pi_coding_agent.coding.modes.acp.port import SessionNotFound, SessionSpec
        from pi_coding_agent.coding.modes.acp.ui import AcpExtensionUI

        assert self.caps is not None
        cwd = _absolute_dir(params.get("cwd"))
        servers = mcp_entries(params.get("mcpServers"))
        ui = AcpExtensionUI(self.peer.request, self._notify_update)
        try:
            session = await self.host.open(SessionSpec(cwd=cwd, load_id=load_id, mcp_servers=servers, ui=ui))
        except SessionNotFound as err:
            raise RpcError(RESOURCE_NOT_FOUND, str(err), {"sessionId": load_id}) from None
        except RpcError:
            raise
        except Exception as err:
            raise RpcError(INTERNAL_ERROR, str(err) or type(err).__name__) from None
        if not session.get_available_models():
            await session.shutdown()
            raise RpcError(AUTH_REQUIRED, "No provider has credentials: set an API key or run pi's login first")
        session_id = str(session.get_state()["sessionId"])
        session.set_shutdown_handler(lambda: self.shutdown.begin(0))
        ui.bind(session_id)
        live = LiveSession(session_id, session, cwd, self.peer, self.host, self.caps)
        self.sessions[session_id] = live
        await self.host.connect_mcp_servers(session, servers)
        if len(self.sessions) == 1:  # the process's first session (it has credentials): warm its stack
            asyncio.get_running_loop().call_soon(warm_up_after_first_answer, session.get_state().get("model"), True)
        return live

    def _notify_update(self, session_id: str, update: JsonObject) -> None:
        self.peer.notify("session/update", {"sessionId": session_id, "update": update})

    async def list_sessions(self, params: JsonObject) -> JsonObject:
        cwd = _absolute_dir(params["cwd"]) if params.get("cwd") is not None else None
        sessions = []
        for info in self.host.list_sessions(cwd):
            item: JsonObject = {"sessionId": info["id"], "cwd": info["cwd"]}
            title = info.get("name") or info.get("firstMessage")
            if title:
                item["title"] = title
            item["updatedAt"] = info.get("modified")
            sessions.append(item)
        return {"sessions": sessions}

    async def close_session(self, params: JsonObject) -> JsonObject:
        live = self._live(params)
        del self.sessions[live.session_id]
        await live.close()
        return {}

    async def prompt(self, params: JsonObject) -> JsonObject:
        return await self._live(params).prompt(params.get("prompt"))

    async def set_mode(self, params: JsonObject) -> JsonObject:
        from pi_coding_agent.coding.modes.acp.config import apply_option

        live = self._live(params)
        mode = await apply_option(live.session, "mode", params.get("modeId"))
        assert mode is not None
        live.set_mode(mode)
        live.send_config()
        return {}

    async def set_config_option(self, params: JsonObject) -> JsonObject:
        from pi_coding_agent.coding.modes.acp.config import apply_option

        live = self._live(params)
        mode = await apply_option(live.session, params.get("configId"), params.get("value"))
        if mode is not None:
            live.set_mode(mode)
            live.send({"sessionUpdate": "current_mode_update", "currentModeId": mode})
        return {"configOptions": live.config_options()}


METHODS: dict[str, Callable[[AcpAgent, JsonObject], Awaitable[object]]] = {
    "initialize": AcpAgent.initialize,
    "authenticate": AcpAgent.authenticate,
    "session/new": AcpAgent.new_session,
    "session/load": AcpAgent.load_session,
    "session/list": AcpAgent.list_sessions,
    "session/close": AcpAgent.close_session,
    "session/prompt": AcpAgent.prompt,
    "session/set_mode": AcpAgent.set_mode,
    "session/set_config_option": AcpAgent.set_config_option,
}
