"""A small HTTP/1.1 client for provider requests: one POST, its response streamed, connections pooled.

Why not httpx here: a streamed delta crossed five async-iterator layers (httpx, httpcore, h11's
state machine and chunked reader, anyio) at about 5 us per network chunk, more than the rest of
the agent spends on it. This client is an ``asyncio.Protocol`` whose bytes go to ``httptools``
(the llhttp parser in C): status, headers, chunked framing and content-length are decoded there,
and the body pieces wait in a list the reader takes whole. ``http.py`` decides when it is used (no
proxy variable set); httpx keeps the proxied requests.

What it keeps of httpx's behaviour: the default request headers (``accept``, ``accept-encoding:
gzip, deflate``, ``connection: keep-alive``), gzip and deflate response bodies decoded by
``aiter_bytes``, the idle timeout applied to every wait for the server, keep-alive connections
reused per event loop and per origin, TLS with the caller's context, and a connection that an
unread or aborted response leaves is closed, never reused.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, unquote, urlsplit

import httptools

if TYPE_CHECKING:
    import ssl

MAX_IDLE_PER_ORIGIN = 8
HIGH_WATER = 1 << 16  # buffered body bytes past which the socket stops being read (bounds memory)
DEFAULT_HEADERS = (("accept", "*/*"), ("accept-encoding", "gzip, deflate"), ("connection", "keep-alive"))
Origin = tuple[str, str, int]  # scheme, host, port
_UNSAFE = re.compile(r"[\r\n\0]")


class TransportError(Exception):
    """The connection failed; ``kind`` is ``"connect"``, ``"timeout"`` or ``"closed"``."""

    def __init__(self, kind: str, message: str = "") -> None:
        super().__init__(message)
        self.kind = kind


# Idle connections by event loop, then origin. Not a weak mapping: a connection's transport refers
# to its loop, so the entry would keep the loop alive anyway; pools of closed loops are dropped instead.
_pools: dict[asyncio.AbstractEventLoop, dict[Origin, list[Connection]]] = {}


class Connection(asyncio.Protocol):
    """One socket and the response being read from it (at most one at a time)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._wait_started = 0.0
        self._paused = False
        self.body: list[bytes] = []
        self._buffered = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.complete = False
        self._keep_alive = False
        self._informational = False
        self.error: TransportError | None = None
        self.closed = False
        self.used = False  # has served a response before (a stale keep-alive socket may fail at once)

    # --- asyncio.Protocol -------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(TransportError("closed", f"invalid HTTP response: {exc}"))
            self.abort()

    def eof_received(self) -> bool | None:
        return None  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.headers_done and not self.complete and not self._delimited():
            self.complete = True  # a body that runs to the end of the connection
        elif not self.complete:
            self._fail(TransportError("closed", str(exc) if exc else "other side closed"))
        self._wake()

    # --- httptools callbacks ----------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self._parser.get_status_code() < 200:  # 100 Continue, 103 Early Hints: the answer follows
            self.raw_headers = []
            self._informational = True
            return
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self._buffered += len(body)
        if self._buffered > HIGH_WATER and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        waiter = self._waiter  # _wake, inlined: once per network chunk
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        self.complete = True
        self._keep_alive = self._parser.should_keep_alive()  # llhttp forgets it once the message is done
        self._wake()

    # --- the reader's side ------------------------------------------------------------------------
    def send(self, head: bytes, content: bytes) -> None:
        """Start a request on this (idle) connection."""
        assert self._transport is not None
        self._parser = httptools.HttpResponseParser(self)
        self.raw_headers, self.body, self._buffered = [], [], 0
        self.headers_done = self.complete = self._keep_alive = False
        self._transport.write(head + content if len(content) < 65536 else head)
        if len(content) >= 65536:
            self._transport.write(content)

    def take_body(self) -> list[bytes]:
        """The body pieces received since the last call."""
        pieces = self.body
        if pieces:
            self.body, self._buffered = [], 0
            if self._paused and self._transport is not None:
                self._paused = False
                self._transport.resume_reading()
        return pieces

    async def wait(self, timeout: float | None) -> None:
        """Until the server sends something or the connection ends; ``timeout`` seconds of silence fail."""
        await self.readable(timeout)
        if self.error is not None:
            raise self.error

    def readable(self, timeout: float | None) -> asyncio.Future[None]:
        """What ``wait`` awaits: a future done when bytes arrive or the connection ends (a failure is
        then in ``error``). The body reader awaits it directly, one coroutine less per network chunk."""
        if self.error is not None:
            raise self.error
        waiter = self._waiter = self._loop.create_future()
        if timeout is not None:
            # each wait ends when bytes arrive, so the silence is measured from the start of this one
            self._wait_started = self._loop.time()
            if self._timer is None:
                self._timer = self._loop.call_at(self._wait_started + timeout, self._check_idle, timeout)
        return waiter

    def status(self) -> int:
        return int(self._parser.get_status_code())

    def reusable(self) -> bool:
        return self.complete and self._keep_alive and not self.closed and self.error is None

    def release(self) -> None:
        """After a response: stop the idle timer; whoever owns the pool decides about the socket."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def abort(self) -> None:
        self.release()
        self.closed = True
        if self._transport is not None:
            self._transport.abort()

    # --- internals --------------------------------------------------------------------------------
    def _delimited(self) -> bool:
        names = {name.lower() for name, _ in self.raw_headers}
        return b"content-length" in names or b"transfer-encoding" in names

    def _check_idle(self, timeout: float) -> None:
        now = self._loop.time()
        waiting = self._waiter is not None and not self._waiter.done()  # done: its reader was cancelled
        if not waiting or now < self._wait_started + timeout:
            self._timer = self._loop.call_at(max(now, self._wait_started) + timeout, self._check_idle, timeout)
            return
        self._timer = None
        self._fail(TransportError("timeout"))
        self.abort()

    def _fail(self, error: TransportError) -> None:
        if self.error is None:
            self.error = error
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class Response:
    """The open response: ``status_code``, ``headers`` (lower-case names), and its body read once."""

    def __init__(self, connection: Connection, origin: Origin, read_timeout: float | None) -> None:
        self._connection = connection
        self._origin = origin
        self._timeout = read_timeout
        self.status_code = connection.status()
        headers: dict[str, str] = {}
        for raw_name, raw_value in connection.raw_headers:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.headers = headers

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (pieces received together come as one)."""
        connection, timeout = self._connection, self._timeout
        while True:
            pieces = connection.take_body()
            if pieces:
                yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
            elif connection.complete:
                return
            else:
                await connection.readable(timeout)
                if connection.error is not None:
                    raise connection.error

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body decoded as ``content-encoding`` says (gzip, deflate; other codings as they are)."""
        decoder = _decoder(self.headers.get("content-encoding", ""))
        async for chunk in self.aiter_raw():
            if decoder is None:
                yield chunk
            elif data := decoder.decompress(chunk):
                yield data
        if decoder is not None and (rest := decoder.flush()):
            yield rest

    async def aread(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_bytes()])

    def close(self) -> None:
        """Give a fully read keep-alive connection back to the pool; close any other."""
        connection = self._connection
        connection.release()
        if connection.reusable():
            idle = _pool().setdefault(self._origin, [])
            if len(idle) < MAX_IDLE_PER_ORIGIN:
                connection.used = True
                idle.append(connection)
                return
        connection.abort()


def _decoder(encoding: str) -> Any:
    coding = encoding.strip().lower()
    if coding in ("gzip", "x-gzip"):
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if coding == "deflate":
        return _DeflateDecoder()
    return None


class _DeflateDecoder:
    """``deflate`` is meant to be zlib-wrapped, but some servers send a raw stream: try both."""

    def __init__(self) -> None:
        self._inner = zlib.decompressobj()
        self._first = True

    def decompress(self, data: bytes) -> bytes:
        if self._first:
            self._first = False
            try:
                return self._inner.decompress(data)
            except zlib.error:
                self._inner = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._inner.decompress(data)

    def flush(self) -> bytes:
        return self._inner.flush()


async def request(url: str, headers: list[tuple[str, str]], content: bytes, tls: ssl.SSLContext | None,
                  connect_timeout: float | None, read_timeout: float | None) -> Response:
    """POST ``content`` to ``url`` and give the response once its headers are in.

    ``headers`` are sent as given after the defaults they do not name; ``tls`` is required for
    ``https://``. A pooled connection that fails before any byte of the answer (the server closed
    it while idle) is replaced by a new one, once.
    """
    parts = urlsplit(url)
    scheme, host = parts.scheme, parts.hostname or ""
    origin = (scheme, host, parts.port or (443 if scheme == "https" else 80))
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if parts.username or parts.password:  # credentials in the URL are Basic auth, as httpx sends them
        headers = [*((n, v) for n, v in headers if n.lower() != "authorization"), _basic_auth(parts)]
    head = _head(target, parts.netloc.rpartition("@")[2], headers, len(content))
    while True:
        connection = _idle_connection(origin) or await _connect(origin, tls, connect_timeout)
        connection.send(head, content)
        try:
            while not connection.headers_done:
                await connection.wait(read_timeout)
        except TransportError as exc:
            connection.abort()
            if connection.used and exc.kind == "closed" and not connection.raw_headers:
                continue
            raise
        except BaseException:
            connection.abort()
            raise
        return Response(connection, origin, read_timeout)


def _basic_auth(parts: SplitResult) -> tuple[str, str]:
    import base64

    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
    return "authorization", f"Basic {base64.b64encode(pair).decode()}"


def _head(target: str, authority: str, headers: list[tuple[str, str]], length: int) -> bytes:
    """The request head; a header with a line break is refused, since it would smuggle another
    header (or a second request) onto the wire, as httpx refuses it."""
    for name, value in headers:
        if _UNSAFE.search(name) or _UNSAFE.search(value) or not name:
            raise ValueError(f"invalid HTTP header {name!r}: names and values must not contain line breaks")
    named = {name.lower() for name, _ in headers}
    lines = [f"POST {target} HTTP/1.1", f"Host: {authority}"]
    lines += [f"{name}: {value}" for name, value in DEFAULT_HEADERS if name not in named]
    lines += [f"{name}: {value}" for name, value in headers if name.lower() not in ("host", "content-length")]
    lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def _pool() -> dict[Origin, list[Connection]]:
    """The running loop's idle connections; a loop's first use forgets the loops closed since
    (an ``asyncio.run`` per call in an SDK user's program), so their sockets can be collected."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        for closed in [old for old in _pools if old.is_closed()]:
            del _pools[closed]
        pool = _pools[loop] = {}
    return pool


def _idle_connection(origin: Origin) -> Connection | None:
    idle = _pool().get(origin)
    while idle:
        connection = idle.pop()
        if not connection.closed and connection.error is None:
            return connection
    return None


async def _connect(origin: Origin, tls: ssl.SSLContext | None, timeout: float | None) -> Connection:
    scheme, host, port = origin
    loop = asyncio.get_running_loop()
    secure = scheme == "https"
    if secure and tls is None:
        raise TransportError("connect", "an https:// request needs a TLS context")
    try:
        async with asyncio.timeout(timeout):
            _, connection = await loop.create_connection(
                lambda: Connection(loop), host, port, ssl=tls if secure else None,
                server_hostname=host if secure else None)
    except TimeoutError as exc:
        raise TransportError("timeout") from exc
    except OSError as exc:
        raise TransportError("connect", str(exc)) from exc
    return connection
