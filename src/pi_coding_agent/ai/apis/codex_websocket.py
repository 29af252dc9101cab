"""The ChatGPT Codex backend's WebSocket transport, which pi prefers to SSE (``transport`` setting).

A request is one ``{"type": "response.create", ...body}`` text frame; the backend answers with one
JSON text frame per Responses event, up to ``response.completed`` (or ``.done``/``.incomplete``). A
session's socket stays open for its next request (closed after 5 idle minutes or 45 minutes of
age), and with ``auto`` or ``websocket-cached`` a request that only extends the previous one on
that socket sends ``previous_response_id`` and the new input items instead of the whole
conversation. object mismatch sends the full body, so the shortcut never changes what the model sees.

``websockets`` is imported on the first Codex request (about 35 ms), never at start-up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from pi_coding_agent.ai.apis.partial_json import loads
from pi_coding_agent.ai.stream import ProviderError
from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

BETA = "responses_websockets=2026-02-06"
IDLE_CLOSE_S = 5 * 60
MAX_AGE_S = 45 * 60
MAX_MESSAGE_BYTES = 256 * 1024 * 1024  # one event frame; the encrypted reasoning of a long turn is large
COMPLETIONS = frozenset({"response.completed", "response.done", "response.incomplete"})
MESSAGE_TOO_BIG = 1009
CLOSE_TIMEOUT_S = 2.0  # a closing handshake the backend does not answer is cut after this


class WebSocketTransportError(ProviderError):
    """The socket failed (connect, close, timeout): the request may go again over SSE."""


class CodexProtocolError(ProviderError):
    """The backend sent something that is not a Codex event (never retried on another transport)."""


@dataclass
class _Continuation:
    """What the next request on this socket must repeat to continue the previous response."""

    rest: bytes  # the body without its input, serialised: the next request must match it exactly
    baseline: list[object]  # the input the next request starts with: this one's plus the answer's items
    response_id: str


@dataclass
class _Entry:
    """One pooled Codex WebSocket and the state of its last exchange."""

    socket: ClientConnection
    loop: asyncio.AbstractEventLoop
    created: float
    busy: bool = True
    idle: asyncio.TimerHandle | None = None
    continuation: _Continuation | None = None


_sessions: dict[tuple[str, str], _Entry] = {}
_closing: set[asyncio.Task[None]] = set()


def websocket_url(http_url: str) -> str:
    if http_url.startswith("https:"):
        return "wss:" + http_url[len("https:"):]
    return "ws:" + http_url[len("http:"):] if http_url.startswith("http:") else http_url


async def connect(url: str, headers: Mapping[str, str], timeout_s: float | None) -> ClientConnection:
    """Open the socket (``timeout_s`` bounds the opening handshake; ``None`` waits without limit)."""
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import InvalidStatus, WebSocketException

    try:
        return await ws_connect(url, additional_headers=dict(headers), user_agent_header=None, open_timeout=timeout_s,
                                max_size=MAX_MESSAGE_BYTES, ping_interval=None, close_timeout=CLOSE_TIMEOUT_S)
    except TimeoutError:
        raise WebSocketTransportError(f"WebSocket connect timeout after {round((timeout_s or 0) * 1000)}ms") from None
    except InvalidStatus as exc:
        raise WebSocketTransportError(f"Unexpected server response: {exc.response.status_code}") from None
    except (OSError, WebSocketException) as exc:
        raise WebSocketTransportError(str(exc) or type(exc).__name__) from None


def _usable(entry: _Entry) -> bool:
    from websockets.protocol import State

    return entry.socket.state is State.OPEN and entry.loop is asyncio.get_running_loop()


def _close_later(entry: _Entry, reason: str) -> None:
    """Close in the background on the socket's own loop (a socket of a finished loop went with it)."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return
    if running is entry.loop:
        task = running.create_task(entry.socket.close(1000, reason))
        _closing.add(task)
        task.add_done_callback(_closing.discard)


def _forget_entry(key: tuple[str, str], entry: _Entry) -> None:
    if entry.idle is not None:
        entry.idle.cancel()
    if _sessions.get(key) is entry:
        del _sessions[key]


def _drop(key: tuple[str, str], entry: _Entry, reason: str = "done") -> None:
    _forget_entry(key, entry)
    _close_later(entry, reason)


class Lease:
    """A socket for one request: a session's cached socket, or one of its own."""

    def __init__(self, socket: ClientConnection, key: tuple[str, str] | None, entry: _Entry | None) -> None:
        self.socket, self.key, self.entry = socket, key, entry

    async def release(self, keep: bool) -> None:
        """Keep a healthy session socket for the next request (closing it after idling), else close it."""
        entry, key = self.entry, self.key
        if entry is not None and key is not None and keep and _usable(entry):
            entry.busy = False
            entry.idle = entry.loop.call_later(IDLE_CLOSE_S, _drop, key, entry, "idle_timeout")
            return
        if entry is not None and key is not None:
            _forget_entry(key, entry)
        await self.socket.close()


async def acquire(url: str, headers: Mapping[str, str], session_id: str | None, account: str,
                  timeout_s: float | None) -> Lease:
    """The session's open socket when it is free and young enough, else a new one."""
    if not session_id:
        return Lease(await connect(url, headers, timeout_s), None, None)
    key = (session_id, account)
    cached = _sessions.get(key)
    if cached is not None:
        if cached.idle is not None:
            cached.idle.cancel()
            cached.idle = None
        if cached.busy:  # a concurrent request of the same session gets a socket of its own
            return Lease(await connect(url, headers, timeout_s), None, None)
        if time.monotonic() - cached.created < MAX_AGE_S and _usable(cached):
            cached.busy = True
            return Lease(cached.socket, key, cached)
        _drop(key, cached, "connection_age_limit")
    entry = _Entry(await connect(url, headers, timeout_s), asyncio.get_running_loop(), time.monotonic())
    _sessions[key] = entry
    return Lease(entry.socket, key, entry)


def _rest(body: Mapping[str, object]) -> bytes:
    return orjson.dumps({k: v for k, v in body.items() if k not in ("input", "previous_response_id")})


def request_body(lease: Lease, body: dict[str, Any]) -> JsonObject:
    """``body``, or only its new input after ``previous_response_id`` when it extends the last request."""
    entry = lease.entry
    continuation = entry.continuation if entry is not None else None
    if entry is None or continuation is None:
        return body
    items = body.get("input") or []
    size = len(continuation.baseline)
    if (_rest(body) != continuation.rest or len(items) < size
            or orjson.dumps(items[:size]) != orjson.dumps(continuation.baseline)):
        entry.continuation = None
        return body
    return {**body, "previous_response_id": continuation.response_id, "input": items[size:]}


def remember(lease: Lease, body: dict[str, Any], answer_items: list[object], response_id: str) -> None:
    """What the next request must start with to continue from this response on the same socket."""
    if lease.entry is not None:
        lease.entry.continuation = _Continuation(_rest(body), [*(body.get("input") or []), *answer_items],
                                                 response_id)


def forget(lease: Lease) -> None:
    if lease.entry is not None:
        lease.entry.continuation = None


def _close_text(exc: Exception) -> str:
    frame = getattr(exc, "rcvd", None)
    code = frame.code if frame is not None else 1006
    reason = frame.reason if frame is not None and frame.reason else ""
    if not reason and code == MESSAGE_TOO_BIG:
        reason = "message too big"
    return f"WebSocket closed {code} {reason}".strip()


async def events(lease: Lease, body: JsonObject, idle_s: float | None) -> AsyncGenerator[JsonObject, None]:
    """Send ``body`` as ``response.create`` and yield the backend's events through the completion."""
    from websockets.exceptions import ConnectionClosed

    socket = lease.socket
    try:
        await socket.send(orjson.dumps({"type": "response.create", **body}).decode())
        while True:
            async with asyncio.timeout(idle_s):
                raw = await socket.recv()
            try:
                event = loads(raw)
            except orjson.JSONDecodeError as exc:
                raise CodexProtocolError(f"Invalid Codex WebSocket JSON: {exc}") from None
            if not isinstance(event, dict):
                raise CodexProtocolError("Invalid Codex WebSocket JSON: not an object")
            yield event
            if event.get("type") in COMPLETIONS:
                return
    except TimeoutError:
        raise WebSocketTransportError(f"WebSocket idle timeout after {round((idle_s or 0) * 1000)}ms") from None
    except ConnectionClosed as exc:
        raise WebSocketTransportError(_close_text(exc)) from None


def end_session(session_id: str) -> None:
    """Close the session's cached sockets (of any account) once the session ends, as pi does."""
    for key, entry in list(_sessions.items()):
        if key[0] == session_id:
            _drop(key, entry, "session_end")


async def close_all() -> None:
    """Close every cached session socket of the running loop (at shutdown)."""
    loop = asyncio.get_running_loop()
    for key, entry in list(_sessions.items()):
        if entry.loop is loop:
            _forget_entry(key, entry)
            await entry.socket.close()
