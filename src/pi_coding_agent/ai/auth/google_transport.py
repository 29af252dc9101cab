"""A standard-library transport for ``google-auth`` token refreshes.

google-auth's bundled transports need ``requests``, ``urllib3`` or ``aiohttp``; a token refresh is
one small blocking POST, which ``urllib.request`` does without another dependency.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping

from google.auth import exceptions, transport

DEFAULT_TIMEOUT_S = 30.0


class _Response(transport.Response):
    def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self._status = status
        self._headers = dict(headers)
        self._data = data

    @property
    def status(self) -> int:
        return self._status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._headers

    @property
    def data(self) -> bytes:
        return self._data


class UrllibRequest(transport.Request):
    """``google.auth.transport.Request`` over ``urllib.request`` (blocking)."""

    def __call__(self, url: str, method: str = "GET", body: bytes | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float | None = None,
                 **kwargs: object) -> transport.Response:
        request = urllib.request.Request(url, data=body, headers=dict(headers or {}), method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout or DEFAULT_TIMEOUT_S) as reply:
                return _Response(reply.status, dict(reply.headers.items()), reply.read())
        except urllib.error.HTTPError as exc:
            return _Response(exc.code, dict(exc.headers.items()), exc.read())
        except (urllib.error.URLError, OSError) as exc:
            raise exceptions.TransportError(str(exc)) from exc  # type: ignore[no-untyped-call]
