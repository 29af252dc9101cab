"""The mechanics every sign-in shares: PKCE, the loopback callback, the pasted code, device polling.

A sign-in talks to its user only through a ``LoginUI`` (``prompt`` and ``notify``), so the same
flow runs in a terminal (``pi auth login``) and over RPC, where the URL goes out in a ``notify``
and a pasted code comes back through an ``input`` dialog. Events are pi's ``AuthEvent`` dicts
(``auth_url``, ``device_code``, ``progress``, ``info``).

PKCE and state are the standard library's ``secrets``/``hashlib`` (see docs/auth.md for why no
OAuth client library).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from pi_coding_agent.ai.auth.oauth.http import OAuthError
from pi_coding_agent.ai.types import JsonObject


class LoginUI(Protocol):
    async def prompt(self, kind: str, message: str, *, placeholder: str | None = None,
                     options: list[tuple[str, str]] | None = None) -> str:
        """Ask the user: ``kind`` is ``text``, ``secret``, ``manual_code`` or ``select`` (returns an option id)."""
        ...

    def notify(self, event: JsonObject) -> None:
        """Show an ``AuthEvent`` (``auth_url``, ``device_code``, ``progress`` or ``info``)."""
        ...


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge) from 32 random bytes, as pi makes them."""
    verifier = b64url(secrets.token_bytes(32))
    return verifier, b64url(hashlib.sha256(verifier.encode()).digest())


def callback_host() -> str:
    return os.environ.get("PI_OAUTH_CALLBACK_HOST") or "127.0.0.1"


def parse_authorization_input(text: str) -> tuple[str | None, str | None]:
    """(code, state) from a pasted redirect URL, ``code#state``, a query string or a bare code."""
    value = text.strip()
    if not value:
        return None, None
    parts = urlsplit(value)
    if parts.scheme and parts.netloc:
        query = parse_qs(parts.query)
        return query.get("code", [None])[0], query.get("state", [None])[0]
    if "#" in value:
        code, state = value.split("#", 1)
        return code, state
    if "code=" in value:
        query = parse_qs(value)
        return query.get("code", [None])[0], query.get("state", [None])[0]
    return value, None


_PAGE = "<!doctype html><meta charset=utf-8><title>{title}</title><p>{text}</p>"


class CallbackServer:
    """A one-shot HTTP listener on the loopback interface for the authorization redirect."""

    def __init__(self, provider_name: str, path: str, state: str | None) -> None:
        self.provider_name = provider_name
        self.path = path
        self.state = state
        self.result: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._server: asyncio.Server | None = None
        self.port = 0
        self.query: dict[str, list[str]] = {}  # the accepted redirect's parameters (some flows need more than the code)

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port)
        self.port = self._server.sockets[0].getsockname()[1]

    def redirect_uri(self, host: str) -> str:
        return f"http://{host}:{self.port}{self.path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1").split()
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            status, text = self._handle(request_line)
            body = _PAGE.format(title=self.provider_name, text=text).encode()
            writer.write(f"HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\n"
                         f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (OSError, TimeoutError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    def _handle(self, request_line: list[str]) -> tuple[str, str]:
        if len(request_line) < 2 or request_line[0] != "GET" or urlsplit(request_line[1]).path != self.path:
            return "404 Not Found", "Callback route not found."
        query = parse_qs(urlsplit(request_line[1]).query)
        if self.state is not None and query.get("state", [None])[0] != self.state:
            return "400 Bad Request", "State mismatch."
        if self.result.done():
            return "409 Conflict", "This sign-in has already been handled."
        if error := query.get("error", [None])[0]:
            description = query.get("error_description", [error])[0]
            self.result.set_exception(OAuthError(f"{self.provider_name} authorization failed: {description}"))
            return "400 Bad Request", f"{self.provider_name} authorization failed."
        code = query.get("code", [None])[0]
        if not code:
            return "400 Bad Request", "Missing authorization code."
        self.query = query
        self.result.set_result(code)
        return "200 OK", f"Signed in to {self.provider_name}. You may now close this page."

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
        if not self.result.done():
            self.result.cancel()


async def start_callback(provider_name: str, path: str, state: str | None, ports: tuple[int, ...]) -> CallbackServer | None:
    """A listening callback server on the first port that binds (0 = any), or None (paste only)."""
    for port in ports:
        server = CallbackServer(provider_name, path, state)
        try:
            await server.start(callback_host(), port)
        except OSError:
            continue
        return server
    return None


async def callback_or_pasted(ui: LoginUI, server: CallbackServer | None, message: str,
                             placeholder: str) -> tuple[str, str]:
    """Whichever comes first: ``("callback", code)`` from the browser or ``("manual", text)`` pasted."""
    manual = asyncio.ensure_future(ui.prompt("manual_code", message, placeholder=placeholder))
    waits: set[asyncio.Future[Any]] = {manual}
    if server is not None:
        waits.add(server.result)
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        manual.cancel()
    if server is not None and server.result in done:
        return "callback", server.result.result()
    return "manual", manual.result()


@dataclass
class Poll:
    """One device-token poll: ``status`` is ``complete``, ``pending``, ``slow_down`` or ``failed``."""

    status: str
    value: object = None
    message: str = ""
    interval_s: float | None = None


async def poll_device(poll: Callable[[], Awaitable[Poll]], interval_s: float | None, expires_in_s: float | None,
                      wait_first: bool = False) -> Any:
    """RFC 8628 polling: default 5 s interval, at least 1 s, ``slow_down`` adds 5 s (or the server's value)."""
    deadline = time.monotonic() + expires_in_s if expires_in_s else float("inf")
    interval = max(1.0, interval_s if interval_s is not None else 5.0)
    slowed = False
    if wait_first:
        await asyncio.sleep(min(interval, max(0.0, deadline - time.monotonic())))
    while time.monotonic() < deadline:
        result = await poll()
        if result.status == "complete":
            return result.value
        if result.status == "failed":
            raise OAuthError(result.message)
        if result.status == "slow_down":
            slowed = True
            interval = max(1.0, result.interval_s) if result.interval_s else interval + 5.0
        with contextlib.suppress(ValueError):
            await asyncio.sleep(min(interval, max(0.0, deadline - time.monotonic())))
    raise OAuthError("Device flow timed out after one or more slow_down responses" if slowed else "Device flow timed out")


def rfc8628_poll_result(reply_ok: bool, body: JsonObject, provider_name: str) -> Poll | None:
    """The standard error answers of a device-token endpoint; None when the reply is a success."""
    if reply_ok:
        return None
    error = body.get("error")
    if error == "authorization_pending":
        return Poll("pending")
    if error == "slow_down":
        interval = body.get("interval")
        return Poll("slow_down", interval_s=interval if isinstance(interval, int | float) and interval > 0 else None)
    if error in ("access_denied", "authorization_denied"):
        return Poll("failed", message=f"{provider_name} device authorization was denied")
    if error == "expired_token":
        return Poll("failed", message=f"{provider_name} device code expired")
    return Poll("failed", message=f"{provider_name} device token polling failed: {error or 'unexpected response'}")


def trusted_url(value: object) -> str | None:
    """An http(s) URL from a server, else None (a sign-in never opens anything else)."""
    if not isinstance(value, str):
        return None
    parts = urlsplit(value)
    return value if parts.scheme in ("http", "https") and parts.netloc else None
