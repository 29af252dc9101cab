"""The streamable HTTP transport (MCP 2025-03-26 and later): POST per message, answers as JSON or
server-sent events, an optional GET stream for messages the server starts, ``Mcp-Session-Id``.

Transient failures (network errors, 408, 429, 5xx but 501) are retried twice with a short pause for
everything but tool calls, which a server may already have carried out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import httpx
import orjson

from pi_coding_agent.ai.transport.sse import ServerSentEvent, SSEParser
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.mcp.client import McpAuthRequired

RETRY_DELAYS_S = (0.25, 1.0)
NOT_RETRIED = frozenset({"tools/call"})


class McpHttpError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"MCP server answered HTTP {status}{': ' + text[:300] if text else ''}")
        self.status = status


def is_transient(error: BaseException) -> bool:
    if isinstance(error, McpHttpError):
        return error.status in (408, 429) or (error.status >= 500 and error.status != 501)
    return isinstance(error, httpx.TransportError)


class StreamableHttpTransport:
    def __init__(self, url: str, headers: dict[str, str],
                 token: Callable[[], Awaitable[str | None]] | None = None) -> None:
        self.url = url
        self.headers = headers
        self.token = token
        self.on_message: Callable[[JsonObject], None] = lambda _m: None
        self.on_close: Callable[[], None] = lambda: None
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._http: httpx.AsyncClient | None = None
        self._get_stream: asyncio.Task[None] | None = None
        self._closed = False

    async def start(self) -> None:
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), follow_redirects=True)

    def set_protocol_version(self, version: str) -> None:
        self.protocol_version = version
        self._get_stream = asyncio.create_task(self._listen())

    async def _headers(self, accept: str) -> dict[str, str]:
        headers = {**self.headers, "Accept": accept}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["Mcp-Protocol-Version"] = self.protocol_version
        if self.token is not None and (token := await self.token()):
            headers["Authorization"] = f"Bearer {token}"
        return headers

    async def send(self, message: JsonObject) -> None:
        method = message.get("method")
        retries = () if method in NOT_RETRIED or "id" not in message else RETRY_DELAYS_S
        for delay in (*retries, None):
            try:
                await self._post(message)
                return
            except Exception as exc:
                if delay is None or not is_transient(exc):
                    raise
                await asyncio.sleep(delay)

    async def _post(self, message: JsonObject) -> None:
        assert self._http is not None
        headers = await self._headers("application/json, text/event-stream")
        headers["Content-Type"] = "application/json"
        async with self._http.stream("POST", self.url, content=orjson.dumps(message), headers=headers) as response:
            await self._check(response)
            if session := response.headers.get("mcp-session-id"):
                self.session_id = session
            if response.status_code == 202:
                return
            kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind == "text/event-stream":
                await self._read_events(response)
            elif kind == "application/json":
                self._deliver(orjson.loads(await response.aread()))

    async def _check(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        text = (await response.aread()).decode("utf-8", "replace")
        if response.status_code == 401:
            raise McpAuthRequired(response.headers.get("www-authenticate", ""))
        if response.status_code == 404 and self.session_id:
            # the server forgot our session: the connection is gone, the next call reconnects
            self._closed = True
            self.on_close()
        raise McpHttpError(response.status_code, text.strip())

    async def _read_events(self, response: httpx.Response) -> None:
        parser = SSEParser()
        async for chunk in response.aiter_bytes():
            self._deliver_events(parser.feed(chunk))
        self._deliver_events(parser.close())

    def _deliver_events(self, events: list[ServerSentEvent]) -> None:
        for event in events:
            if event.event == "message" and event.data.strip():
                with contextlib.suppress(orjson.JSONDecodeError):
                    self._deliver(orjson.loads(event.data))

    def _deliver(self, payload: object) -> None:
        for message in payload if isinstance(payload, list) else [payload]:
            if isinstance(message, dict):
                self.on_message(message)

    async def _listen(self) -> None:
        """The optional GET stream; a server without one answers 405, which is fine."""
        assert self._http is not None
        with contextlib.suppress(Exception):
            headers = await self._headers("text/event-stream")
            async with self._http.stream("GET", self.url, headers=headers) as response:
                if response.status_code == 200:
                    await self._read_events(response)

    async def close(self) -> None:
        if self._http is None:
            return
        http, self._http = self._http, None
        if self._get_stream is not None:
            self._get_stream.cancel()
        if self.session_id and not self._closed:
            with contextlib.suppress(Exception):
                self._http = http
                await http.delete(self.url, headers=await self._headers("application/json"), timeout=2.0)
                self._http = None
        self._closed = True
        await http.aclose()
