"""A small MCP client: JSON-RPC 2.0 requests over a transport, with pi's timeouts and cancellation.

Why our own and not the official SDK: see docs/architecture.md (import cost while the command loop
serves). Each request has a timeout that progress notifications re-arm; a timed-out or cancelled
request sends ``notifications/cancelled`` (never for ``initialize``, which the spec forbids).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pi_coding_agent.ai.types import JsonObject

LATEST_PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_PROTOCOL_VERSIONS = (LATEST_PROTOCOL_VERSION, "2025-06-18", "2025-03-26", "2024-11-05")
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
MAX_LIST_PAGES = 100

Message = dict[str, Any]


class McpError(Exception):
    """A JSON-RPC error answer from the server."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class McpConnectionClosed(Exception):
    def __init__(self, message: str = "MCP connection closed") -> None:
        super().__init__(message)


class McpTimeout(Exception):
    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"MCP request timed out after {round(timeout_s * 1000)}ms")


class McpAuthRequired(Exception):
    """HTTP 401: the server wants a bearer token (OAuth sign-in)."""

    def __init__(self, www_authenticate: str) -> None:
        super().__init__("MCP server requires authorization")
        self.www_authenticate = www_authenticate


class Transport(Protocol):
    """What the client needs of stdio and streamable HTTP alike."""

    on_message: Callable[[Message], None]
    on_close: Callable[[], None]

    async def start(self) -> None: ...
    async def send(self, message: Message) -> None: ...
    async def close(self) -> None: ...
    def set_protocol_version(self, version: str) -> None: ...


@dataclass
class _Pending:
    """A request to the MCP server awaiting its answer."""

    method: str
    future: asyncio.Future[object]
    timeout_s: float
    on_progress: Callable[[JsonObject], None] | None = None
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


class McpClient:
    """One initialized session with a server. ``on_notification(method, params)`` sees the rest."""

    def __init__(self, transport: Transport, *, client_version: str, timeout_s: float,
                 on_notification: Callable[[str, object], None] | None = None,
                 on_close: Callable[[], None] | None = None, roots: list[dict[str, str]] | None = None) -> None:
        self.transport = transport
        self.client_version = client_version
        self.timeout_s = timeout_s
        self.on_notification = on_notification or (lambda _m, _p: None)
        self.on_close = on_close or (lambda: None)
        self.closed = False
        self.initialize_result: JsonObject = {}
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self._handlers: dict[str, Callable[[object], Awaitable[object]]] = {"ping": _empty}
        self._capabilities: JsonObject = {}
        if roots is not None:  # the ``roots`` capability: servers ask which directories they may use
            self._capabilities["roots"] = {}
            self._handlers["roots/list"] = lambda _params: _value({"roots": list(roots)})
        transport.on_message = self._on_message
        transport.on_close = self._on_transport_close

    @property
    def capabilities(self) -> JsonObject:
        caps = self.initialize_result.get("capabilities")
        return caps if isinstance(caps, dict) else {}

    @property
    def instructions(self) -> str | None:
        text = self.initialize_result.get("instructions")
        return text if isinstance(text, str) else None

    async def connect(self) -> JsonObject:
        """Start the transport and run the ``initialize`` handshake."""
        await self.transport.start()
        result = await self.request("initialize", {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": self._capabilities,
            "clientInfo": {"name": "pi", "version": self.client_version}})
        if not (isinstance(result, dict) and isinstance(result.get("protocolVersion"), str)
                and isinstance(result.get("capabilities"), dict)):
            raise McpError(-32600, "MCP server sent an invalid initialize result")
        if result["protocolVersion"] not in SUPPORTED_PROTOCOL_VERSIONS:
            raise McpError(-32600, f"MCP server selected unsupported protocol version {result['protocolVersion']}")
        self.initialize_result = result
        self.transport.set_protocol_version(result["protocolVersion"])
        await self.notify("notifications/initialized")
        return result

    async def request(self, method: str, params: dict[str, Any] | None = None, *, timeout_s: float | None = None,
                      on_progress: Callable[[JsonObject], None] | None = None) -> Any:
        """Send one request and await its result; cancelling the caller cancels it at the server."""
        if self.closed:
            raise McpConnectionClosed()
        self._next_id += 1
        request_id = self._next_id
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if on_progress is not None:
            params = {**(params or {}), "_meta": {**((params or {}).get("_meta") or {}), "progressToken": request_id}}
        if params is not None:
            message["params"] = params
        pending = _Pending(method, asyncio.get_running_loop().create_future(),
                           self.timeout_s if timeout_s is None else timeout_s, on_progress)
        self._pending[request_id] = pending
        self._arm(request_id, pending)
        # the send runs beside the wait: an HTTP answer streams inside it, and a timeout must not wait for it
        sending = asyncio.ensure_future(self.transport.send(message))
        sending.add_done_callback(lambda task: _fail_from(task, pending.future))
        try:
            return await pending.future
        except asyncio.CancelledError:
            self._cancel_at_server(request_id, pending, "Aborted")
            raise
        finally:
            self._drop(request_id)
            if not sending.done():
                sending.cancel()

    async def notify(self, method: str, params: JsonObject | None = None) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.transport.send(message)

    async def list_all(self, method: str, key: str) -> list[JsonObject]:
        """Every item of a paginated list method, following ``nextCursor``."""
        items: list[JsonObject] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_LIST_PAGES):
            page = await self.request(method, None if cursor is None else {"cursor": cursor})
            page_items = page.get(key) if isinstance(page, dict) else None
            if not isinstance(page_items, list):
                raise McpError(-32600, f"MCP {method} returned an invalid result")
            items.extend(item for item in page_items if isinstance(item, dict))
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                return items
            if cursor in seen:
                raise McpError(-32600, f"MCP {method} returned duplicate cursor: {cursor}")
            seen.add(cursor)
        raise McpError(-32600, f"MCP {method} exceeded {MAX_LIST_PAGES} pages")

    async def close(self) -> None:
        if self.closed:
            return
        self._fail_all(McpConnectionClosed())
        self.closed = True
        await self.transport.close()

    # ------------------------------------------------------------------ internals

    def _arm(self, request_id: int, pending: _Pending) -> None:
        if pending.timer is not None:
            pending.timer.cancel()
        if pending.timeout_s > 0:
            pending.timer = asyncio.get_running_loop().call_later(pending.timeout_s, self._time_out, request_id)

    def _time_out(self, request_id: int) -> None:
        pending = self._pending.get(request_id)
        if pending is None or pending.future.done():
            return
        pending.future.set_exception(McpTimeout(pending.timeout_s))
        self._cancel_at_server(request_id, pending, "Request timed out")

    def _cancel_at_server(self, request_id: int, pending: _Pending, reason: str) -> None:
        if pending.method == "initialize" or self.closed:
            return
        task = asyncio.ensure_future(self.notify("notifications/cancelled",
                                                 {"requestId": request_id, "reason": reason}))
        task.add_done_callback(_ignore_result)

    def _drop(self, request_id: int) -> None:
        pending = self._pending.pop(request_id, None)
        if pending is not None and pending.timer is not None:
            pending.timer.cancel()

    def _fail_all(self, error: Exception) -> None:
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(error)

    def _on_transport_close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._fail_all(McpConnectionClosed())
        self.on_close()

    def _on_message(self, message: Message) -> None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return
        method = message.get("method")
        if "id" in message and method is None:
            self._on_response(message)
        elif isinstance(method, str) and "id" in message:
            asyncio.ensure_future(self._answer(message)).add_done_callback(_ignore_result)
        elif isinstance(method, str):
            self._on_server_notification(method, message.get("params"))

    def _on_response(self, message: Message) -> None:
        pending = self._pending.get(message["id"]) if isinstance(message["id"], int) else None
        if pending is None or pending.future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            pending.future.set_exception(McpError(int(error.get("code", INTERNAL_ERROR)),
                                                  str(error.get("message", "MCP error")), error.get("data")))
        else:
            pending.future.set_result(message.get("result"))

    def _on_server_notification(self, method: str, params: object) -> None:
        if method == "notifications/progress" and isinstance(params, dict):
            request_id = params.get("progressToken")
            pending = self._pending.get(request_id) if isinstance(request_id, int) else None
            if pending is not None and isinstance(params.get("progress"), int | float):
                self._arm(request_id, pending)  # type: ignore[arg-type]
                if pending.on_progress is not None:
                    pending.on_progress(params)
            return
        self.on_notification(method, params)

    async def _answer(self, message: Message) -> None:
        handler = self._handlers.get(message["method"])
        reply: Message = {"jsonrpc": "2.0", "id": message["id"]}
        if handler is None:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {message['method']}"}
        else:
            try:
                reply["result"] = (await handler(message.get("params"))) or {}
            except Exception as exc:
                reply["error"] = {"code": INTERNAL_ERROR, "message": str(exc)}
        with contextlib.suppress(Exception):
            await self.transport.send(reply)


async def _empty(_params: object) -> JsonObject:
    return {}


async def _value(value: JsonObject) -> JsonObject:
    return value


def directory_root(path: Path) -> dict[str, str]:
    """A directory as an MCP root: its ``file://`` URL (percent-encoded as Node's ``pathToFileURL``) and name."""
    from urllib.parse import quote

    resolved = str(path.resolve())
    return {"uri": "file://" + quote(resolved, safe="/!$&'()*+,;=:@~"), "name": path.resolve().name}


def _fail_from(task: asyncio.Future[Any], future: asyncio.Future[Any]) -> None:
    """A send that failed fails its request (a closed pipe, an HTTP error). The error is retrieved
    even when the request already failed (a server that exited at once closes the connection
    first), so asyncio never logs "Task exception was never retrieved"."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None and not future.done():
        future.set_exception(error)


def _ignore_result(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
