"""The provider-side extension events, wired into one request's ``StreamOptions``.

``before_provider_headers`` (handlers change ``event["headers"]`` in place; None removes a header),
``after_provider_response`` (``status``, ``headers`` once the response is open) and
``provider_stream_event`` (each raw stream event as ``data``, with ``provider``, ``api``, ``model``)
reach the LLM layer as ``ai/provider_hooks.py`` callbacks, set only when some handler listens.
Return values are ignored; a raising handler is reported as an ``extension_error`` and the request
goes on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_coding_agent.ai.stream import StreamOptions
    from pi_coding_agent.ai.types import Model
    from pi_coding_agent.coding.extensions.dispatch import Dispatcher


def with_provider_events(dispatcher: Dispatcher, options: StreamOptions, model: Model) -> StreamOptions:
    """``options`` with a callback for each provider event that has handlers."""
    changes: dict[str, Any] = {}
    if dispatcher.has_handlers("before_provider_headers"):
        async def on_headers(headers: dict[str, str | None]) -> dict[str, str | None]:
            await dispatcher.notify({"type": "before_provider_headers", "headers": headers})
            return headers

        changes["on_headers"] = on_headers
    if dispatcher.has_handlers("after_provider_response"):
        async def on_response(status: int, headers: dict[str, str]) -> None:
            await dispatcher.notify({"type": "after_provider_response", "status": status, "headers": headers})

        changes["on_response"] = on_response
    if dispatcher.has_handlers("provider_stream_event"):
        async def on_stream_event(data: object) -> None:
            await dispatcher.notify({"data": data, "type": "provider_stream_event", "provider": model["provider"],
                                     "api": model["api"], "model": model["id"]})

        changes["on_stream_event"] = on_stream_event
    return replace(options, **changes) if changes else options
