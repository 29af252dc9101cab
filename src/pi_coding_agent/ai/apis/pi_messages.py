"""pi's own message protocol (``pi-messages``), spoken by the Radius gateway and usable by any backend.

The request is one POST of ``{"model", "context", "options"}`` to ``<baseUrl>/messages`` with a bearer
key; ``context`` is the request context exactly as this layer holds it (pi's field names) and
``options`` carries ``temperature``, ``maxTokens``, ``reasoning``, ``cacheRetention``, ``sessionId``
only when set. The answer is an SSE stream of pi's assistant-message events (``text_delta``,
``toolcall_end``, ...) ending with a ``done`` or ``error`` event that carries the stop reason and usage.
Content indexes come from the wire, so they are checked before they address the message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import orjson

from pi_coding_agent.ai.apis.accumulate import append_text
from pi_coding_agent.ai.apis.partial_json import loads, parse_arguments
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.transport.http import sse_events
from pi_coding_agent.ai.types import AssistantMessage, Context, JsonObject, Model

BLOCKS = {"text": ("text", "text"), "thinking": ("thinking", "thinking")}


def error_text(status: int, body_text: str) -> str:
    """``<status>: <error.message> (<error.code>)``, or the raw body."""
    try:
        parsed = orjson.loads(body_text)
    except orjson.JSONDecodeError:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        return f"{status}: {body_text}"
    message = error.get("message") if isinstance(error.get("message"), str) else body_text
    code = f" ({error['code']})" if isinstance(error.get("code"), str) else ""
    return f"{status}: {message}{code}"


def build_request(model: Model, context: Context, options: StreamOptions) -> JsonObject:
    settings: JsonObject = {}
    if options.temperature is not None:
        settings["temperature"] = options.temperature
    if options.max_tokens is not None:
        settings["maxTokens"] = options.max_tokens
    if options.thinking_level != "off":
        settings["reasoning"] = options.thinking_level
    if options.cache_retention != "short":  # the backend's default applies otherwise
        settings["cacheRetention"] = options.cache_retention
    if options.session_id:
        settings["sessionId"] = options.session_id
    return {"model": model["id"], "context": context, "options": settings}


class _Reader:
    """pi events from the wire -> the partial message and the adapter's block events."""

    def __init__(self, output: AssistantMessage) -> None:
        self.output = output
        self.blocks: list[Any] = output["content"]
        self.args: dict[int, str] = {}
        self.terminal = False

    def _index(self, event: dict[str, Any]) -> int:
        index = event.get("contentIndex")
        limit = len(self.blocks) if event["type"].endswith("_start") else len(self.blocks) - 1
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= limit:
            raise ProviderError(f"Invalid contentIndex {orjson.dumps(index).decode()} in pi-messages "
                                f"{event['type']} event")
        return index

    def feed(self, event: JsonObject) -> list[JsonObject]:
        kind = event.get("type")
        if kind in ("done", "error"):
            return self._finish(event)
        if not isinstance(kind, str) or "contentIndex" not in event:
            return []
        index = self._index(event)
        block_kind, _, phase = kind.partition("_")
        if block_kind in BLOCKS:
            return self._text_like(index, block_kind, phase, event)
        if block_kind == "toolcall":
            return self._tool(index, phase, event)
        return []

    def _text_like(self, index: int, kind: str, phase: str, event: dict[str, Any]) -> list[JsonObject]:
        field = BLOCKS[kind][1]
        if phase == "start":
            self.blocks[index:index + 1] = [{"type": kind, field: ""}]
            return [{"type": f"{kind}_start", "contentIndex": index}]
        block = self.blocks[index]
        if phase == "delta":
            append_text(block, field, event.get("delta", ""))
            return [{"type": f"{kind}_delta", "contentIndex": index, "delta": event.get("delta", "")}]
        block[field] = event.get("content", block[field])
        signature = event.get("contentSignature")
        if signature is not None:
            block["textSignature" if kind == "text" else "thinkingSignature"] = signature
        if kind == "thinking" and event.get("redacted") is not None:
            block["redacted"] = event["redacted"]
        return [{"type": f"{kind}_end", "contentIndex": index, "content": block[field]}]

    def _tool(self, index: int, phase: str, event: dict[str, Any]) -> list[JsonObject]:
        if phase == "start":
            self.blocks[index:index + 1] = [{"type": "toolCall", "id": event.get("id", ""),
                                             "name": event.get("toolName", ""), "arguments": {}}]
            self.args[index] = ""
            return [{"type": "toolcall_start", "contentIndex": index, "id": event.get("id", ""),
                     "toolName": event.get("toolName", "")}]
        block = self.blocks[index]
        if phase == "delta":
            self.args[index] = self.args.get(index, "") + event.get("delta", "")
            block["arguments"] = parse_arguments(self.args[index])
            return [{"type": "toolcall_delta", "contentIndex": index, "delta": event.get("delta", "")}]
        block.update(event.get("toolCall") or {})
        self.args.pop(index, None)
        return [{"type": "toolcall_end", "contentIndex": index, "toolCall": block}]

    def _finish(self, event: JsonObject) -> list[JsonObject]:
        self.terminal = True
        output: Any = self.output
        if isinstance(event.get("usage"), dict):
            output["usage"] = event["usage"]
        for key in ("responseId", "responseModel", "providerThinkingLevel"):
            if event.get(key) is not None:
                output[key] = event[key]
        if event["type"] == "error":
            raise ProviderError(str(event.get("errorMessage") or "An unknown error occurred"))
        output["stopReason"] = event.get("reason") or "stop"
        return []


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[JsonObject]:
    if not options.api_key:
        raise ProviderError(f'No API key provided for provider "{model["provider"]}"')
    headers = {"authorization": f"Bearer {options.api_key}", **(model.get("headers") or {}), **options.headers}
    url = model["baseUrl"].rstrip("/") + "/messages"
    reader = _Reader(output)
    async with aclosing(sse_events(url, headers, build_request(model, context, options), options,
                                   error_text)) as events:
        async for event in events:
            data = event.data.strip()
            if not data or data == "[DONE]":
                continue
            for item in reader.feed(loads(data)):
                yield item
            if reader.terminal:
                return
    raise ProviderError(f"{model['provider']} stream ended without a terminal event")
