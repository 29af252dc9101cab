"""Callbacks a caller passes through ``StreamOptions`` to watch or shape one provider request.

The coding layer's extension events (``before_provider_headers``, ``after_provider_response``,
``provider_stream_event``) reach the HTTP path only through these, so this layer never imports
the one above it. Each is optional and costs one ``is None`` test when unset.

* ``on_headers(headers)`` gets the request's own headers (credentials, models.json headers) once
  per request, before the adapter runs (retries reuse the result), and returns them changed; a
  name whose value is None is removed, also from the headers the adapter adds itself.
* ``on_response(status, headers)`` runs once the response is open, before its body is read.
* ``on_stream_event(data)`` runs for each server-sent event, with its ``data`` parsed as JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_coding_agent.ai.stream import StreamOptions

HeadersHook = Callable[[dict[str, str | None]], Awaitable[dict[str, str | None]]]
ResponseHook = Callable[[int, dict[str, str]], Awaitable[None]]
StreamEventHook = Callable[[Any], Awaitable[None]]


async def with_hooked_headers(options: StreamOptions) -> StreamOptions:
    """``options`` after ``on_headers``: kept headers in ``headers``, removed names in ``drop_headers``."""
    if options.on_headers is None:
        return options
    changed = await options.on_headers(dict(options.headers))
    kept = {name: value for name, value in changed.items() if value is not None}
    dropped = frozenset(name.lower() for name, value in changed.items() if value is None)
    return replace(options, headers=kept, drop_headers=options.drop_headers | dropped)


def without_dropped(headers: Mapping[str, str], options: StreamOptions) -> Mapping[str, str]:
    """The final request headers minus the names ``on_headers`` removed (case-insensitively)."""
    if not options.drop_headers:
        return headers
    return {name: value for name, value in headers.items() if name.lower() not in options.drop_headers}


async def report_response(options: StreamOptions, status: int, headers: Mapping[str, str]) -> None:
    if options.on_response is not None:
        await options.on_response(status, {name.lower(): value for name, value in headers.items()})


async def report_stream_event(options: StreamOptions, data: str) -> None:
    """``on_stream_event`` with the event's JSON (data that is not JSON, like ``[DONE]``, is skipped)."""
    if options.on_stream_event is None:
        return
    import orjson

    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return
    await options.on_stream_event(parsed)
