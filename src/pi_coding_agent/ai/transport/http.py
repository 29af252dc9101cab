"""HTTP plumbing shared by every wire adapter: pooled connections, SSE streaming, error texts.

Requests go through aiohttp (``ai/transport/aio.py``: one session per event loop, its proxy, TLS,
timeout and redirect policy). This module is imported with the first request or the warm-up, never
at start-up; aiohttp with the first request. The API is these names:

* ``sse_events(url, headers, body, options, error_text=openai_error_text)`` - POST ``body`` as JSON
  (``bytes`` as they are, for a body the caller encoded itself) and yield the response's
  ``ServerSentEvent``s (``ai.transport.sse``, parsed from the raw bytes); ``sse_batches`` (same
  arguments) yields them as lists, those of one network read together. A non-2xx answer raises
  ``ProviderError`` whose text is ``error_text(status, body_text)`` and whose ``retry_after_ms``
  carries a ``retry-after(-ms)`` header for the agent's retry policy. Transport failures become
  ``ProviderError``s whose texts the retry classifier (``ai.errors``) treats as transient; a line or
  event past ``max_event_bytes()`` (``PI_SSE_MAX_EVENT_BYTES``) fails the stream. The connection is
  closed when the generator is closed or its task is cancelled.
* ``openai_error_text(status, body_text, prefix=None)`` - pi's text for an OpenAI-SDK error.
* ``retry_after_ms(headers)`` - the server-requested wait, if any.
* ``post_stream(url, headers, content, options, error_text)`` - the same POST for non-SSE streams
  (Bedrock's binary event stream): an async context manager giving the open 2xx response.
* ``apply_payload_hook(body, options)`` - the body after ``before_provider_request``.
* ``warm_up(base_url)`` imports what the first request needs, ahead of it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any, Protocol

import orjson

from pi_coding_agent.ai.identity import with_identity
from pi_coding_agent.ai.provider_hooks import report_response, report_stream_event, without_dropped
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.transport import aio
from pi_coding_agent.ai.transport.aio import RedirectRefused, TransportError
from pi_coding_agent.ai.transport.sse import EventTooLarge, ServerSentEvent, SSEParser

ErrorText = Callable[[int, str], str]


class StreamResponse(Protocol):
    """What ``post_stream`` gives (``ai.transport.aio.Response``)."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    def aiter_bytes(self) -> AsyncIterator[bytes]: ...
    async def aread(self, limit: int = -1) -> bytes: ...


MAX_ERROR_BODY_CHARS = 4000
MAX_ERROR_BODY_BYTES = 1 << 20  # of an error answer, read for its text (a gzip bomb must not inflate it)
DEFAULT_MAX_EVENT_BYTES = 64 << 20


def max_event_bytes() -> int:
    """The bound on one SSE line or event: ``PI_SSE_MAX_EVENT_BYTES`` (bytes), else 64 MiB."""
    import os

    raw = os.environ.get("PI_SSE_MAX_EVENT_BYTES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_EVENT_BYTES


def warm_up(base_url: str) -> None:
    """Import what the first request needs beyond this module (aiohttp) and, for an https://
    endpoint or a proxy, build the TLS context: what that request would otherwise pay.
    Blocking; callers run it in a thread while their event loop waits for input."""
    aio.warm_up(base_url.startswith("https:"))


def merge_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """Header layers, later ones winning; names compare case-insensitively, so a provider's
    ``Authorization`` replaces the adapter's ``authorization`` instead of being sent beside it."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer.items():
            merged[name.lower()] = (name, value)
    return dict(merged.values())


def _truncate(text: str) -> str:
    extra = len(text) - MAX_ERROR_BODY_CHARS
    return text if extra <= 0 else f"{text[:MAX_ERROR_BODY_CHARS]}... [truncated {extra} chars]"


def openai_error_text(status: int, body_text: str, prefix: str | None = None) -> str:
    """The errorMessage pi records for an HTTP error from an OpenAI-style endpoint.

    The SDK's message is ``"<status> <error.message>"``; when the body has an error object that
    the message does not already show, pi records ``"<status>: <compact JSON of that object>"``.
    ``prefix`` (e.g. ``"OpenAI API error"``) gives the Responses form ``"<prefix> (<status>): ..."``.
    """
    try:
        parsed: object = orjson.loads(body_text) if body_text.strip() else None
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed["error"] if parsed.get("error") is not None else parsed
    else:
        error = None
    if isinstance(error, dict) and error.get("message"):
        detail = error["message"] if isinstance(error["message"], str) else orjson.dumps(error["message"]).decode()
    elif error is not None:
        detail = orjson.dumps(error).decode()
    else:
        detail = body_text if parsed is None else ""
    message = f"{status} {detail}" if detail else f"{status} status code (no body)"
    body = _truncate(orjson.dumps(error).decode()) if isinstance(error, dict) and error else None
    if body is None or body in message:
        return f"{prefix} ({status}): {message}" if prefix else message
    return f"{prefix} ({status}): {body}" if prefix else f"{status}: {body}"


def retry_after_ms(headers: Mapping[str, str]) -> int | None:
    """``retry-after-ms`` (milliseconds) or ``retry-after`` (seconds or an HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0, math.ceil(float(raw_ms)))
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0, math.ceil(float(raw) * 1000))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime  # a date-valued Retry-After only: 8 % of a one-shot run

    try:
        return max(0, math.ceil((parsedate_to_datetime(raw).timestamp() - time.time()) * 1000))
    except (TypeError, ValueError):
        return None


def _http_error(status: int, headers: Mapping[str, str], body_text: str, options: StreamOptions,
                error_text: ErrorText) -> ProviderError:
    return ProviderError(error_text(status, body_text), status, retry_after_ms(headers))


def _transport_error(exc: TransportError) -> ProviderError:
    """Name a transport failure with words the retry classifier knows (pi's Node texts)."""
    if exc.kind == "timeout":
        return ProviderError(f"Request timed out: {exc}" if str(exc) else "Request timed out.")
    if exc.kind == "connect":
        return ProviderError(f"Connection error: {exc}")
    if exc.kind == "closed":
        return ProviderError("terminated: other side closed (UND_ERR_SOCKET)")  # pi's (Node's) wording
    return ProviderError(f"Network error: {exc}")


async def apply_payload_hook(body: Any, options: StreamOptions) -> Any:
    """The request body after the ``before_provider_request`` hook (which may replace it)."""
    if options.on_payload is not None:
        replaced = await options.on_payload(body)
        if replaced is not None:
            return replaced
    return body


RETRYABLE_STATUSES = frozenset({408, 409, 429})


def _retryable(status: int | None, headers: Mapping[str, str]) -> bool:
    """The OpenAI/Anthropic SDK policy pi mirrors: ``x-should-retry``, else transport errors, 408/409/429/5xx."""
    decision = headers.get("x-should-retry")
    if decision in ("true", "false"):
        return decision == "true"
    return status is None or status in RETRYABLE_STATUSES or status >= 500


def _retry_delay_s(error: ProviderError, retry_index: int, options: StreamOptions) -> float:
    """The server's wait (refused past ``max_retry_delay_ms``) or exponential backoff with jitter."""
    import random

    if error.retry_after_ms is not None:
        limit = options.max_retry_delay_ms
        if limit > 0 and error.retry_after_ms > limit:
            raise ProviderError(f"Server requested {math.ceil(error.retry_after_ms / 1000)}s retry delay "
                                f"(max: {math.ceil(limit / 1000)}s). {error}", error.status, error.retry_after_ms)
        return float(error.retry_after_ms) / 1000
    return min(0.5 * 2.0**retry_index, 8.0) * (1 - random.random() * 0.25)


@asynccontextmanager
async def post_stream(
    url: str,
    headers: Mapping[str, str],
    content: bytes,
    options: StreamOptions,
    error_text: ErrorText = openai_error_text,
    describe: Callable[[int, Mapping[str, str], str], str] | None = None,
    no_retry_statuses: frozenset[int] = frozenset(),
) -> AsyncIterator[StreamResponse]:
    """POST ``content`` and give the open streaming response (2xx only; see the module docstring).

    ``describe(status, headers, body_text)``, when given, names an HTTP error instead of
    ``error_text`` (for APIs whose error type travels in a header, such as AWS's). Failures before
    the response starts are retried ``options.max_retries`` times (``retry.provider.*``), except
    answers whose status is in ``no_retry_statuses``.
    """
    headers = without_dropped(with_identity(url, headers, options.attribution, options.identity_provider),
                              options.drop_headers)
    for attempt in range(options.max_retries + 1):
        opened = False
        try:
            async with _open_response(url, headers, content, options.idle_timeout_s) as response:
                if response.status_code < 400:
                    opened = True
                    await report_response(options.on_response, response.status_code, response.headers)
                    yield response
                    return
                text = (await response.aread(MAX_ERROR_BODY_BYTES)).decode(errors="replace")
                status, received = response.status_code, response.headers
                error = (ProviderError(describe(status, received, text), status, retry_after_ms(received))
                         if describe is not None else _http_error(status, received, text, options, error_text))
                if attempt >= options.max_retries or not _retryable(status, received) or status in no_retry_statuses:
                    raise error
        except RedirectRefused as exc:
            raise ProviderError(str(exc), exc.status) from None
        except TransportError as exc:
            error = _transport_error(exc)
            if opened or attempt >= options.max_retries:
                raise error from exc
        await asyncio.sleep(_retry_delay_s(error, attempt, options))


@asynccontextmanager
async def _open_response(url: str, headers: Mapping[str, str], content: bytes,
                         idle_timeout_s: float | None) -> AsyncIterator[StreamResponse]:
    """The response through aiohttp; the connect wait is bounded by the idle timeout, at most 30 s."""
    async with aio.open_response(url, headers, content, min(idle_timeout_s or 30.0, 30.0), idle_timeout_s) as response:
        yield response


async def sse_batches(
    url: str,
    headers: Mapping[str, str],
    body: object,
    options: StreamOptions,
    error_text: ErrorText = openai_error_text,
) -> AsyncGenerator[list[ServerSentEvent], None]:
    """POST ``body`` and yield its server-sent events, the ones each network read completed as one
    list (see the module docstring), so a fast server's burst costs the adapter one step, not one
    per event. With ``options.on_stream_event`` set, each event is reported just before it is
    handed on, in a list of its own: the hook sees the stream in step with the adapter.

    The extension hook ``options.on_payload`` sees the body last and may replace it, so every
    adapter honours ``before_provider_request`` the same way.
    """
    body = await apply_payload_hook(body, options)
    request_headers = {"content-type": "application/json", "accept": "text/event-stream", **headers}
    content = body if isinstance(body, bytes) else orjson.dumps(body)  # bytes: already encoded (Codex's zstd)
    async with post_stream(url, request_headers, content, options, error_text) as response:
        content_type = response.headers.get("content-type", "").partition(";")[0]
        if "text/event-stream" not in content_type:
            raise ProviderError(f"Network error: Expected response header Content-Type to contain "
                                f"'text/event-stream', got {content_type!r}")
        on_event = options.on_stream_event
        async for events in _parsed(response):
            if on_event is None:
                yield events
                continue
            for event in events:
                await report_stream_event(on_event, event.data)
                yield [event]


async def sse_events(
    url: str,
    headers: Mapping[str, str],
    body: object,
    options: StreamOptions,
    error_text: ErrorText = openai_error_text,
) -> AsyncGenerator[ServerSentEvent, None]:
    """``sse_batches``, one event at a time."""
    async with aclosing(sse_batches(url, headers, body, options, error_text)) as batches:
        async for events in batches:
            for event in events:
                yield event


async def _parsed(response: StreamResponse) -> AsyncIterator[list[ServerSentEvent]]:
    """The events of each network read (reads that complete none yield nothing), then the one a
    lone CR may have ended at the end of the body; a line or event past the bound fails the stream."""
    parser = SSEParser(max_event_bytes())
    try:
        async for chunk in response.aiter_bytes():
            if events := parser.feed(chunk):
                yield events
    except EventTooLarge as exc:
        raise ProviderError(f"Stream refused: {exc} (the bound is PI_SSE_MAX_EVENT_BYTES)") from None
    if events := parser.close():
        yield events
