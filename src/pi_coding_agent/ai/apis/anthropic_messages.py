"""The ``anthropic-messages`` wire API: Anthropic's ``POST /v1/messages`` with server-sent events.

Request shape, headers, beta flags, thinking parameters, cache breakpoints and error texts follow
what pi 1.6.0 sends and records (checked against the reference build over a fake server):

* cache breakpoints (``cache_control``) on the system block, the last tool and the last block of a
  trailing user message, with a one-hour TTL for ``cache_retention="long"`` and none for ``"none"``;
* thinking: ``disabled`` for reasoning models at level off, ``adaptive`` + ``output_config.effort``
  for ``compat.forceAdaptiveThinking`` models, else a token budget (``max_tokens`` grows to hold it);
* HTTP errors read ``"<status> <compact JSON body>"`` (the Anthropic SDK's message); an
  ``event: error`` mid-stream fails with its raw data.

The body and headers are built in ``anthropic_request``; this module sends them and reads the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import orjson

from pi_coding_agent.ai.apis import anthropic_threads
from pi_coding_agent.ai.apis.accumulate import append_text
from pi_coding_agent.ai.apis.anthropic_request import (
    build_body,
    build_headers,
    is_oauth_token,
    managed_effort,
    reply_messages,
    thinking_level,
)
from pi_coding_agent.ai.apis.anthropic_tools import (
    has_preferred_strict,
    strict_fallback,
)
from pi_coding_agent.ai.apis.diagnostics import append_transformations
from pi_coding_agent.ai.apis.partial_json import lenient_loads, loads, repair_arguments
from pi_coding_agent.ai.apis.usage import apply_reported_cost, is_openrouter
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.tool_changes import current_tools, system_messages
from pi_coding_agent.ai.transport.http import apply_payload_hook, sse_batches
from pi_coding_agent.ai.transport.sse import ServerSentEvent
from pi_coding_agent.ai.types import (
    AssistantMessage,
    BlockEvent,
    Context,
    JsonObject,
    Model,
    Tool,
)

STOP_REASONS = {"end_turn": "stop", "max_tokens": "length", "tool_use": "toolUse", "pause_turn": "stop",
                "stop_sequence": "stop"}
MESSAGE_EVENTS = frozenset({"message_start", "message_delta", "message_stop", "content_block_start",
                            "content_block_delta", "content_block_stop"})
# argumentsError texts of a tool call whose content_block_stop never came
CUT_BY_LIMIT = "Tool call cut off by the output token limit (max_tokens) before its arguments were complete"
CUT_BY_END = "Tool call cut off: the stream ended before its arguments were complete"
CUT_BY_RESTART = "Tool call cut off by a second message_start in the same stream"


def anthropic_error_text(status: int, body_text: str) -> str:
    """The SDK's message: the body's top-level ``message`` if any, else the whole body as compact JSON."""
    try:
        body: object = orjson.loads(body_text) if body_text.strip() else None
    except orjson.JSONDecodeError:
        return f"{status} {body_text}"
    if body is None:
        return f"{status} status code (no body)"
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, str) and message:
        return f"{status} {message}"
    return f"{status} {orjson.dumps(message if message else body).decode()}"


# --- response --------------------------------------------------------------------------------


def finish_arguments(raw: str) -> tuple[JsonObject, str | None]:
    """Parse streamed tool arguments: ``({}, None)`` for none, ``({}, reason)`` for bad JSON."""
    if not raw.strip():
        return {}, None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            value = lenient_loads(raw, exc)
        except orjson.JSONDecodeError:
            return {}, f"{exc}\n\nReceived arguments:\n{raw}"
    if not isinstance(value, dict):
        return {}, f"Tool arguments must be a JSON object\n\nReceived arguments:\n{raw}"
    return value, None


class _Reader:
    """Turns Anthropic stream events into normalized events, filling the output message."""

    def __init__(self, model: Model, tools: list[Tool], output: AssistantMessage, oauth: bool) -> None:
        self.model = model
        self.msg: dict[str, Any] = output  # type: ignore[assignment]  # the reader fills blocks by computed keys
        self.tool_names = {t["name"].lower(): t["name"] for t in tools} if oauth else {}
        self.open: dict[int, tuple[int, list[str]]] = {}  # anthropic index -> (content index, json pieces)
        self.started = False
        self.stopped = False
        self.failure: str | None = None  # set when the stream turned out malformed (raised after its events)
        self.transformations: list[object] | None = None  # input_transformations the API reported, the last wins

    def handle(self, event: dict[str, Any]) -> list[BlockEvent]:
        kind = event["type"]
        if kind == "message_start":
            if self.started:  # a second message inside this one: what came before it is broken
                self.failure = "Anthropic stream sent a second message_start before message_stop (malformed response)"
                return self.close_open(CUT_BY_RESTART)
            return self._start(event["message"])
        elif kind == "content_block_start":
            return self._block_start(event["index"], event["content_block"])
        elif kind == "content_block_delta":
            return self._block_delta(event["index"], event["delta"])
        elif kind == "content_block_stop":
            return self._block_stop(event["index"])
        elif kind == "message_delta":
            self._message_delta(event)
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _start(self, message: dict[str, Any]) -> list[BlockEvent]:
        self.started = True
        if isinstance(message.get("input_transformations"), list):
            self.transformations = message["input_transformations"]
        if message.get("id"):
            self.msg["responseId"] = message["id"]
        if message.get("model") and message["model"] != self.model["id"]:
            self.msg["responseModel"] = message["model"]
        usage = message.get("usage") or {}
        u = self.msg["usage"]
        u["input"] = usage.get("input_tokens") or 0
        u["output"] = usage.get("output_tokens") or 0
        u["cacheRead"] = usage.get("cache_read_input_tokens") or 0
        u["cacheWrite"] = usage.get("cache_creation_input_tokens") or 0
        u["cacheWrite1h"] = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
        return self._whole_content(message)

    def _whole_content(self, message: dict[str, Any]) -> list[BlockEvent]:
        """A message that arrives complete in ``message_start`` (proxies, programmatic tool calling)."""
        events: list[BlockEvent] = []
        for offset, block in enumerate(message.get("content") or []):
            index = -1 - offset  # out of the stream's own index range
            started = self._block_start(index, block)
            events += started
            kind = {"text_start": "text", "thinking_start": "thinking"}.get(started[0]["type"]) if started else None
            if kind and self.msg["content"][-1][kind] and not self.msg["content"][-1].get("redacted"):
                events.append(cast(BlockEvent, {"type": f"{kind}_delta", "contentIndex": started[0]["contentIndex"],
                               "delta": self.msg["content"][-1][kind]}))
            events += self._block_stop(index)
        if message.get("stop_reason"):
            self._message_delta({"delta": {"stop_reason": message["stop_reason"],
                                           "stop_details": message.get("stop_details")}})
            self.stopped = True  # nothing more is owed; a later message_stop changes nothing
        return events

    def close_open(self, cause: str) -> list[BlockEvent]:
        """End every block still open; a tool call keeps its repaired partial input, marked incomplete."""
        events: list[BlockEvent] = []
        for index in sorted(self.open, key=lambda i: self.open[i][0]):
            at, pieces = self.open[index]
            block = self.msg["content"][at]
            if block["type"] == "toolCall":
                raw = "".join(pieces)
                if raw:
                    block["arguments"] = repair_arguments(raw)[0]
                block["argumentsError"] = f"{cause}\n\nReceived arguments:\n{raw}"
            events += self._block_stop(index, keep_arguments=True)
        return events

    def _block_start(self, index: int, block: dict[str, Any]) -> list[BlockEvent]:
        content = self.msg["content"]
        at = len(content)
        kind = block["type"]
        event: BlockEvent
        if kind == "text":
            content.append({"type": "text", "text": block.get("text") or ""})
            event = {"type": "text_start", "contentIndex": at}
        elif kind == "thinking":
            content.append({"type": "thinking", "thinking": block.get("thinking") or "",
                            "thinkingSignature": block.get("signature") or ""})
            event = {"type": "thinking_start", "contentIndex": at}
        elif kind == "redacted_thinking":
            content.append({"type": "thinking", "thinking": "[Reasoning redacted]",
                            "thinkingSignature": block.get("data", ""), "redacted": True})
            event = {"type": "thinking_start", "contentIndex": at}
        elif kind == "tool_use":
            name = self.tool_names.get(block["name"].lower(), block["name"])
            content.append({"type": "toolCall", "id": block["id"], "name": name, "arguments": block.get("input") or {}})
            event = {"type": "toolcall_start", "contentIndex": at, "id": block["id"], "toolName": name}
        elif kind == "fallback":  # another model answers: fine before any output, fatal after it
            if content:
                raise ProviderError("Anthropic performed an unsupported mid-output model fallback")
            return []
        else:
            return []  # server tool blocks and the like are not part of pi's message
        self.open[index] = (at, [])
        return [event]

    def _block_delta(self, index: int, delta: dict[str, Any]) -> list[BlockEvent]:
        if index not in self.open:
            return []
        at, pieces = self.open[index]
        block = self.msg["content"][at]
        kind = delta["type"]
        if kind == "text_delta" and block["type"] == "text":
            append_text(block, "text", delta["text"])
            return [{"type": "text_delta", "contentIndex": at, "delta": delta["text"]}]
        if kind == "thinking_delta" and block["type"] == "thinking":
            append_text(block, "thinking", delta["thinking"])
            return [{"type": "thinking_delta", "contentIndex": at, "delta": delta["thinking"]}]
        if kind == "signature_delta" and block["type"] == "thinking":
            block["thinkingSignature"] = (block.get("thinkingSignature") or "") + delta["signature"]
        elif kind == "input_json_delta" and block["type"] == "toolCall":
            pieces.append(delta["partial_json"])
            return [{"type": "toolcall_delta", "contentIndex": at, "delta": delta["partial_json"]}]
        return []

    def _block_stop(self, index: int, keep_arguments: bool = False) -> list[BlockEvent]:
        if index not in self.open:
            return []
        at, pieces = self.open.pop(index)
        block = self.msg["content"][at]
        if block["type"] == "text":
            return [{"type": "text_end", "contentIndex": at, "content": block["text"]}]
        if block["type"] == "thinking":
            return [{"type": "thinking_end", "contentIndex": at, "content": block["thinking"]}]
        if pieces and not keep_arguments:  # else the input came whole with content_block_start
            arguments, error = finish_arguments("".join(pieces))
            block["arguments"] = arguments
            if error:
                block["argumentsError"] = error
        return [{"type": "toolcall_end", "contentIndex": at, "toolCall": block}]

    def _message_delta(self, event: dict[str, Any]) -> None:
        if isinstance(event.get("input_transformations"), list):
            self.transformations = event["input_transformations"]
        reason = (event.get("delta") or {}).get("stop_reason")
        if reason:
            self.msg["rawStopReason"] = reason
            self.msg["stopReason"] = self._map_stop(reason, (event.get("delta") or {}).get("stop_details"))
        usage = event.get("usage") or {}
        u = self.msg["usage"]
        for wire, ours in (("input_tokens", "input"), ("output_tokens", "output"),
                           ("cache_read_input_tokens", "cacheRead"), ("cache_creation_input_tokens", "cacheWrite")):
            if usage.get(wire) is not None:
                u[ours] = usage[wire]
        one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens")
        if one_hour is not None:
            u["cacheWrite1h"] = one_hour
        thinking = (usage.get("output_tokens_details") or {}).get("thinking_tokens")
        if thinking is not None:
            u["reasoning"] = thinking
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
        if usage and is_openrouter(self.model):
            apply_reported_cost(u, usage)

    def _map_stop(self, reason: str, details: object) -> str:
        if reason in STOP_REASONS:
            return STOP_REASONS[reason]
        if reason == "refusal":
            explanation = (details or {}).get("explanation") if isinstance(details, dict) else None
            self.msg["errorMessage"] = explanation or "The model refused to complete the request"
        elif reason == "sensitive":
            self.msg["errorMessage"] = "Provider stopped with: sensitive"
        else:
            raise ProviderError(f"Unhandled stop reason: {reason}")
        return "error"


def _parsed(sse: ServerSentEvent) -> JsonObject | None:
    """The JSON of a message event (None for the rest); a stream ``error`` event raises its text."""
    if sse.event == "error":
        raise ProviderError(sse.data)
    if sse.event not in MESSAGE_EVENTS:
        return None
    try:
        parsed: JsonObject = loads(sse.data)
    except orjson.JSONDecodeError as exc:
        raise ProviderError(f"Could not parse Anthropic SSE event {sse.event}: {exc}; data={sse.data}") from exc
    return parsed


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[list[BlockEvent]]:
    oauth = is_oauth_token(options.api_key)
    configured = {k.lower() for k, v in {**(model.get("headers") or {}), **options.headers}.items() if v.strip()}
    federated = None
    if not options.api_key and not configured & {"authorization", "x-api-key"}:
        from pi_coding_agent.ai.auth import anthropic_federation

        federated = await anthropic_federation.token_for(model)

    url = f"{model['baseUrl'].rstrip('/')}/v1/messages"
    thread_session = anthropic_threads.session_for(model, options)
    sending = anthropic_threads.without_payload_hook(options)
    threaded: list[anthropic_threads.ThreadedRequest] = []  # the last request, when it may use a thread

    async def request(plain: bool) -> AsyncIterator[object]:
        body = build_body(model, context, options, oauth, plain)
        headers = build_headers(model, context, options, body, thread_session is not None)
        if federated is not None:
            headers = anthropic_federation.with_token(headers, federated)
        body = await apply_payload_hook(body, options)  # the hook sees the full request, never a thread's
        threaded[:] = anthropic_threads.requests_for(model, thread_session, body, headers, options)
        if not threaded:
            return sse_batches(url, headers, body, sending, anthropic_error_text)
        return threaded[0].events(url, headers, sending, output, anthropic_error_text)

    effort = managed_effort(model, thinking_level(model, options))
    if effort:
        output["providerThinkingLevel"] = effort
    tools = current_tools(system_messages(context))
    reader = _Reader(model, tools, output, oauth)
    async for batch in strict_fallback(request, options, output, has_preferred_strict(model, tools)):
        items: list[BlockEvent] = []  # a network read's events go on as one list
        try:
            for sse in batch:
                if (event := _parsed(sse)) is not None:
                    items += reader.handle(event)
                    if reader.failure:
                        raise ProviderError(reader.failure)
        finally:  # what came before a failing event goes on first, as it would one by one
            if items:
                yield items
    cause = CUT_BY_LIMIT if output["stopReason"] == "length" else CUT_BY_END
    if closing := reader.close_open(cause):  # blocks the stream never stopped (max_tokens inside a call)
        yield closing
    if reader.started and not reader.stopped:
        raise ProviderError("Anthropic stream ended before message_stop")
    if output["stopReason"] == "pending":
        raise ProviderError("Anthropic stream ended without a stop reason")
    if output["stopReason"] == "error":
        raise ProviderError(output.get("errorMessage") or "An unknown error occurred")
    if threaded:
        threaded[0].record(output, reply_messages(model, output, oauth))
    append_transformations(reader.msg, "anthropic_input_transformations", reader.transformations or [],
                           ("type", "path", "reason"))
