"""The few HTTP calls of sign-in and refresh, and the test override of their endpoints.

Provider endpoints are pi's, fixed. ``PI_OAUTH_ORIGIN`` (ours; pi has no equivalent) sends every
sign-in and refresh request to one origin instead, keeping each endpoint's path, so a fake
authorization server on 127.0.0.1 can stand in for all providers. Errors carry the status and the
server's ``error``/``error_description`` only: a token endpoint's body is never echoed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

ORIGIN_ENV = "PI_OAUTH_ORIGIN"
TIMEOUT_S = 15.0


class OAuthError(Exception):
    """A sign-in or refresh step failed; the message never contains a token."""


@dataclass
class Reply:
    """An OAuth endpoint's answer: its status and JSON body."""

    status: int
    body: dict[str, Any]

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def detail(self) -> str:
        """``error: description`` from an OAuth error body, for messages."""
        error = self.body.get("error")
        if isinstance(error, dict):
            error = error.get("code") or error.get("message")
        parts = [str(p) for p in (error, self.body.get("error_description")) if isinstance(p, str) and p]
        return ": ".join(parts)

    def failure(self, what: str) -> OAuthError:
        detail = self.detail()
        return OAuthError(f"{what} failed (HTTP {self.status}){f': {detail}' if detail else ''}")


def endpoint(url: str) -> str:
    """``url``, or its path on ``$PI_OAUTH_ORIGIN`` when set."""
    origin = os.environ.get(ORIGIN_ENV)
    if not origin:
        return url
    parts, base = urlsplit(url), urlsplit(origin)
    return urlunsplit((base.scheme, base.netloc, parts.path, parts.query, ""))


async def call(method: str, url: str, *, form: dict[str, str] | None = None, json: object = None,
               headers: dict[str, str] | None = None, timeout_s: float = TIMEOUT_S) -> Reply:
    """One request to an OAuth endpoint; the JSON object it answers (``{}`` when it is not one)."""
    from pi_coding_agent.ai.transport import aio

    sent = {"accept": "application/json", **(headers or {})}
    content: bytes | dict[str, str] | None = form
    if json is not None:
        sent["content-type"] = "application/json"
        content = orjson.dumps(json)
    try:
        status, raw = await aio.fetch(method, endpoint(url), sent, content, timeout_s)
    except aio.TransportError as exc:  # its kind only: the text could name a proxy's credentials
        raise OAuthError(f"request to {urlsplit(url).netloc} failed: {exc.kind}") from None
    try:
        body = orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError:
        body = {}
    return Reply(status, body if isinstance(body, dict) else {"data": body})
