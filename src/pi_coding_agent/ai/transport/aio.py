"""Provider requests over aiohttp: one client session per event loop, its connections pooled per origin.

Why aiohttp: it parses responses in C (llhttp), so a streamed delta costs one buffer append and one
``readany`` per network read, and it is maintained by many (TLS, proxies, content codings,
connection reuse). What this module adds to it is the policy the agent relies on:

* the proxy from ``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` (and pi's ``httpProxy`` setting, which
  lands there), skipped for hosts ``NO_PROXY`` names; read for every request, never ``.netrc``;
* the verifying TLS context (``SSL_CERT_FILE``, ``SSL_CERT_DIR``, else the system's store, else certifi's
  bundle), built once a process when TLS is first spoken; aiohttp's own default contexts are left
  without trust (fail closed) and never loaded;
* the idle timeout on every wait for the server (the headers, then each piece of the body);
* no redirect followed to another origin: the caller gets ``RedirectRefused`` naming the target host;
* a pooled connection the server had dropped before answering is replaced once, transparently;
* failures as ``TransportError(kind)``, whose kinds ``http.py`` words for the retry classifier.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

if TYPE_CHECKING:
    import ssl

    import aiohttp
    import yarl

REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
MAX_HEADER_BYTES = 65536  # one response header line (aiohttp's default, 8190, is short for some gateways)
_UNSAFE = re.compile(r"[\r\n\0]")
_UNESCAPED = re.compile(r"[\s\"<>\\^`{|}]")  # not valid as they stand in a URL
_tls_lock = threading.Lock()
_tls: list[ssl.SSLContext] = []
_import_lock = threading.Lock()
# Not a weak mapping: the session refers to its loop, so an entry would keep the loop alive anyway;
# the sessions of closed loops are dropped when another loop makes its first request.
_sessions: dict[asyncio.AbstractEventLoop, tuple[aiohttp.ClientSession, AsyncGenerator[None, None]]] = {}


class TransportError(Exception):
    """The request failed below HTTP; ``kind`` is ``"connect"``, ``"timeout"``, ``"closed"`` or ``"network"``."""

    def __init__(self, kind: str, message: str = "") -> None:
        super().__init__(message)
        self.kind = kind


class RedirectRefused(Exception):
    """The server answered a redirect that is not followed (to another origin, or one that would drop the body)."""

    def __init__(self, status: int, location: str) -> None:
        target = urlsplit(location)
        where = f"to host {target.hostname}" if target.hostname else f"to {location!r}"
        super().__init__(f"The provider answered a {status} redirect {where}, which is not followed "
                         f"(only 307/308 to the same origin are); check the model's baseUrl")
        self.status = status
        self.host = target.hostname or ""


class Response:
    """The open response: ``status_code``, ``headers`` (case-insensitive), its decoded body read once."""

    __slots__ = ("_idle_timeout", "_response", "headers", "status_code")

    def __init__(self, response: aiohttp.ClientResponse, idle_timeout: float | None) -> None:
        self._response = response
        self._idle_timeout = idle_timeout
        self.status_code = response.status
        self.headers: Mapping[str, str] = response.headers

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives: whatever one network read brought, decoded (gzip, deflate)."""
        return _body(self._response, self._idle_timeout)

    async def aread(self, limit: int = -1) -> bytes:
        """The body (its first ``limit`` bytes when given, for error texts a bomb must not inflate)."""
        content = self._response.content
        try:
            if limit < 0:
                return await content.read()
            pieces: list[bytes] = []
            while limit > 0 and (piece := await content.read(limit)):
                pieces.append(piece)
                limit -= len(piece)
            return b"".join(pieces)
        except Exception as exc:
            raise _transport_error(exc) from exc


class _IdleWatch:
    """The idle timeout of a streamed body with one timer that re-arms only when it fires: aiohttp's
    own (``sock_read``) replaces a timer on every network read, a third of a paced delta's cost."""

    __slots__ = ("_content", "_handle", "_loop", "_timeout", "since")

    def __init__(self, loop: asyncio.AbstractEventLoop, content: aiohttp.StreamReader, timeout: float) -> None:
        self._loop, self._content, self._timeout = loop, content, timeout
        self.since: float | None = None  # when the current wait for the server began; None between waits
        self._handle = loop.call_at(loop.time() + timeout, self._check)

    def _check(self) -> None:
        now, since = self._loop.time(), self.since
        if since is not None and now - since >= self._timeout:
            self._content.set_exception(TimeoutError("no data from the server within the idle timeout"))
        else:
            self._handle = self._loop.call_at((now if since is None else since) + self._timeout, self._check)

    def cancel(self) -> None:
        self._handle.cancel()


async def _body(response: aiohttp.ClientResponse, idle_timeout: float | None) -> AsyncIterator[bytes]:
    content = response.content
    connection = response.connection
    if connection is not None and connection.protocol is not None:
        connection.protocol.read_timeout = None  # from here on, the watch below bounds each wait
    loop = asyncio.get_running_loop()
    watch = _IdleWatch(loop, content, idle_timeout) if idle_timeout else None
    try:
        while True:
            if watch is not None:
                watch.since = loop.time()
            chunk = await content.readany()
            if not chunk:
                return
            if watch is not None:
                watch.since = None
            yield chunk
    except Exception as exc:
        raise _transport_error(exc) from exc
    finally:
        if watch is not None:
            watch.cancel()


def tls_context() -> ssl.SSLContext:
    """What every TLS connection verifies with, built once per process: the trust
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` name, else the system's store, else certifi's bundle. Loading a
    CA bundle costs about 250 M instructions, so it is paid only when TLS is about to be spoken."""
    with _tls_lock:
        if not _tls:
            import os
            import ssl

            cafile, capath = os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None
            if not (cafile or capath or _system_store(ssl.get_default_verify_paths())):
                import certifi

                cafile = certifi.where()
            context = ssl.create_default_context(cafile=cafile, capath=capath)
            context.set_alpn_protocols(["http/1.1"])
            _tls.append(context)
        return _tls[0]


def _ssl_for(url: str, proxy: str | None) -> ssl.SSLContext | bool:
    """The ``ssl`` argument of a request: our context wherever TLS is spoken (an https:// URL, or a
    proxy reached over https://), so aiohttp's own default context is never the one used."""
    return tls_context() if url.startswith("https:") or (proxy or "").startswith("https:") else True


def _import_aiohttp() -> None:
    """Import aiohttp without the CA loads of ``aiohttp.connector``, which builds two default TLS
    contexts at import (a verifying and a non-verifying one, each loading the whole CA bundle:
    about 470 M instructions, even for an http:// endpoint). During that import, in the importing
    thread only, ``set_default_verify_paths`` does nothing: both are left with no trust, so the
    verifying one (what ``ssl=True`` gets) refuses every certificate: fail closed. Requests carry
    ``tls_context()`` (``_ssl_for``); none passes ``ssl=False``, the non-verifying one's case."""
    import sys

    if "aiohttp.connector" in sys.modules:
        return
    with _import_lock:
        if "aiohttp.connector" in sys.modules:
            return
        import ssl

        importer, load = threading.get_ident(), ssl.SSLContext.set_default_verify_paths

        def load_elsewhere(context: ssl.SSLContext) -> None:
            if threading.get_ident() != importer:
                load(context)

        ssl.SSLContext.set_default_verify_paths = load_elsewhere  # type: ignore[method-assign,assignment]
        try:
            import aiohttp.client  # noqa: F401 - the import is the work
        finally:
            del ssl.SSLContext.set_default_verify_paths  # the inherited method again


def _system_store(paths: ssl.DefaultVerifyPaths) -> bool:
    import os

    return bool(paths.cafile and os.path.isfile(paths.cafile)) or bool(paths.capath and os.listdir(paths.capath))


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (its scheme's, else ``ALL_PROXY``), None when
    none is set or ``NO_PROXY`` exempts the host. Read each time: ``httpProxy`` may be applied late."""
    from urllib.request import getproxies_environment, proxy_bypass

    proxies = getproxies_environment()
    if not proxies:
        return None
    parts = urlsplit(url)
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or proxy_bypass(parts.hostname or ""):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def warm_up(secure: bool) -> None:
    """Import aiohttp (and build the TLS context for an https:// endpoint or a proxy): what the first
    request would otherwise pay. Blocking; run in a thread while the event loop waits for input."""
    _import_aiohttp()
    if secure or proxy_for("https://provider.invalid/") or proxy_for("http://provider.invalid/"):
        tls_context()


def session() -> aiohttp.ClientSession:
    """The running loop's client session, created on first use (an SDK user's ``asyncio.run`` per
    call gets one per loop; the entries of closed loops are dropped then)."""
    loop = asyncio.get_running_loop()
    entry = _sessions.get(loop)
    if entry is not None and not entry[0].closed:
        return entry[0]
    _import_aiohttp()
    import aiohttp

    for closed in [old for old in _sessions if old.is_closed()]:
        del _sessions[closed]
    tracing = aiohttp.TraceConfig()
    tracing.on_connection_reuseconn.append(_note_reuse)
    current = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=64), timeout=aiohttp.ClientTimeout(total=None), trust_env=False,
        skip_auto_headers=("User-Agent",), trace_configs=[tracing],
        max_line_size=MAX_HEADER_BYTES, max_field_size=MAX_HEADER_BYTES)
    keeper = _closed_with_loop(current)
    with contextlib.suppress(StopIteration):
        keeper.asend(None).send(None)  # started: the loop now finalizes it when it shuts down
    _sessions[loop] = (current, keeper)
    return current


async def _closed_with_loop(client: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Suspended for the loop's lifetime; ``asyncio.run`` finalizes the async generators of its loop
    before closing it, which closes the session (and its sockets) without an "Unclosed" complaint."""
    try:
        yield
    finally:
        await client.close()


async def _note_reuse(_session: object, context: SimpleNamespace, _params: object) -> None:
    if context.trace_request_ctx is not None:
        context.trace_request_ctx.reused = True


def check_headers(headers: Mapping[str, str]) -> None:
    """Refuse a header with a line break before connecting: it would smuggle another header (or a
    second request) onto the wire."""
    for name, value in headers.items():
        if not name or _UNSAFE.search(name) or _UNSAFE.search(value):
            raise ValueError(f"invalid HTTP header {name!r}: names and values must not contain line breaks")


@asynccontextmanager
async def open_response(url: str, headers: Mapping[str, str], content: bytes, connect_timeout: float | None,
                        idle_timeout: float | None) -> AsyncIterator[Response]:
    """POST ``content`` to ``url``; the response once its headers are in, its connection closed on
    leaving unless the body was read to the end (then it goes back to the pool)."""
    _import_aiohttp()
    import aiohttp

    check_headers(headers)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, sock_read=idle_timeout)
    for _ in range(MAX_REDIRECTS + 1):
        response = await _post(url, headers, content, timeout)
        location = response.headers.get("location") if response.status in REDIRECTS else None
        if location is None:
            break
        response.close()
        target = urljoin(url, location)
        if response.status not in (307, 308) or _origin(target) != _origin(url):
            raise RedirectRefused(response.status, target)
        url = target
    else:
        raise RedirectRefused(response.status, url)
    try:
        yield Response(response, idle_timeout)
    except BaseException:
        response.close()
        raise
    response.release()  # back to the pool if the body was read to its end, else closed


async def fetch(method: str, url: str, headers: Mapping[str, str], data: bytes | Mapping[str, str] | None,
                timeout_s: float) -> tuple[int, bytes]:
    """One whole request (an OAuth endpoint's): its status and body, read within ``timeout_s``.
    A mapping is sent as a form; redirects are not followed."""
    _import_aiohttp()
    import aiohttp

    check_headers(headers)
    proxy = proxy_for(url)
    try:
        async with session().request(method, _as_sent(url), data=data, headers=headers, allow_redirects=False,
                                     timeout=aiohttp.ClientTimeout(total=timeout_s), proxy=proxy,
                                     ssl=_ssl_for(url, proxy)) as response:
            return response.status, await response.read()
    except Exception as exc:
        raise _transport_error(exc) from exc


async def _post(url: str, headers: Mapping[str, str], content: bytes,
                timeout: aiohttp.ClientTimeout) -> aiohttp.ClientResponse:
    """One POST; a pooled connection that fails before any byte of the answer (the server closed it
    while idle) is replaced by a new one, once: aiohttp retries only idempotent methods itself."""
    import aiohttp

    proxy = proxy_for(url)
    for attempt in range(2):
        trace = SimpleNamespace(reused=False)
        try:
            return await session().post(_as_sent(url), data=content, headers=headers, allow_redirects=False, timeout=timeout,
                                        proxy=proxy, ssl=_ssl_for(url, proxy),
                                        trace_request_ctx=trace)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            if attempt or not trace.reused:
                raise _transport_error(exc) from exc
        except Exception as exc:
            raise _transport_error(exc) from exc
    raise AssertionError("unreachable")


def _as_sent(url: str) -> yarl.URL:
    """The URL as the adapter wrote it: yarl would otherwise normalize its escapes (``%3A`` to ``:``
    in a Bedrock model path), and a signed request (SigV4) must go out byte for byte as signed.
    Only a URL with characters that need escaping is escaped."""
    import yarl

    return yarl.URL(url, encoded=url.isascii() and not _UNESCAPED.search(url))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


def _transport_error(exc: Exception) -> Exception:
    """aiohttp's failure as a ``TransportError`` of the kind the retry wording needs; others as they are."""
    import aiohttp

    if isinstance(exc, asyncio.TimeoutError):  # aiohttp's socket and connect timeouts derive from it
        return TransportError("timeout")
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ClientProxyConnectionError):
        return TransportError("connect", str(exc))
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError | aiohttp.ClientOSError):
        return TransportError("closed", str(exc))
    if isinstance(exc, aiohttp.ClientError):
        return TransportError("network", str(exc))
    return exc
