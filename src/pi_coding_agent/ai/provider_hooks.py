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

HeadersHook = Callable[[dict[str, str | None]], Awaitable[dict[str, str | None]]]
ResponseHook = Callable[[int, dict[str, str]], Awaitable[None]]
StreamEventHook = Callable[[object], Awaitable[None]]


async def hooked_headers(hook: HeadersHook, headers: Mapping[str, str]) -> tuple[dict[str, str], frozenset[str]]:
    """The headers ``hook`` left, and the lower-case names it removed (set to None)."""
    changed = await hook(dict(headers))
    kept = {name: value for name, value in changed.items() if value is not None}
    return kept, frozenset(name.lower() for name, value in changed.items() if value is None)


def without_dropped(headers: Mapping[str, str], dropped: frozenset[str]) -> Mapping[str, str]:
    """The final request headers minus the names ``on_headers`` removed (case-insensitively)."""
    if not dropped:
        return headers
    return {name: value for name, value in headers.items() if name.lower() not in dropped}


async def report_response(hook: ResponseHook | None, status: int, headers: Mapping[str, str]) -> None:
    if hook is not None:
        await hook(status, {name.lower(): value for name, value in headers.items()})


async def report_stream_event(hook: StreamEventHook, data: str) -> None:
    """``hook`` with the event's JSON (data that is not JSON, like ``[DONE]``, is skipped)."""
    import orjson

    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return
    await hook(parsed)
