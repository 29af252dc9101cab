"""Render a wire-neutral scripted response as Anthropic Messages SSE events.

The fake server calls :func:`render_events` for ``POST .../v1/messages`` and
:func:`render_error_body` when the response asks for an HTTP error ``status``.
Besides the shared script keys (``content``, ``stopReason``, ``usage``, ``chunkSize``), this
renderer understands:

* ``{"type": "thinking", "redacted": true, "signature": "<data>"}`` -> a ``redacted_thinking`` block;
* ``"rawStopReason"``: a stop_reason sent verbatim (``"refusal"``, ``"pause_turn"``, ...);
* ``"streamError": {"type": ..., "message": ...}`` -> an ``event: error`` after the content blocks,
  in place of ``message_delta``/``message_stop`` (Anthropic's mid-stream overload);
* ``"errorMessage"``: the message inside an HTTP error body (default: Anthropic's text for the status).
"""

from __future__ import annotations

import json
from typing import Any

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}

ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One complete SSE event, as Anthropic frames it."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def render_error_body(response: dict[str, Any]) -> dict[str, Any]:
    status = int(response.get("status", 500))
    kind, message = ERRORS.get(status, ("api_error", "Internal server error"))
    return {"type": "error", "error": {"type": kind, "message": response.get("errorMessage", message)}}


def _block_events(index: int, block: dict[str, Any], size: int) -> list[bytes]:
    """start / deltas / stop for one scripted content block."""
    kind = block["type"]
    start: dict[str, Any]
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"], size)]
    elif kind == "thinking" and block.get("redacted"):
        start = {"type": "redacted_thinking", "data": block.get("signature", "")}
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"], size)]
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "toolCall":
        start = {"type": "tool_use", "id": block.get("id") or f"toolu_fake_{index}", "name": block["name"], "input": {}}
        raw = json.dumps(block.get("arguments", {}))
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces(raw, size)]]
    else:
        raise ValueError(f"unknown scripted block type: {kind}")
    events = [sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})]
    events += [sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def _stop_reason(response: dict[str, Any]) -> str:
    if response.get("rawStopReason"):
        return str(response["rawStopReason"])
    neutral = response.get("stopReason")
    if neutral is None:
        has_calls = any(b["type"] == "toolCall" for b in response.get("content", []))
        neutral = "toolUse" if has_calls else "stop"
    return STOP_REASONS[neutral]


def render_events(response: dict[str, Any], request: dict[str, Any]) -> list[bytes]:
    usage = response.get("usage") or {}
    size = int(response.get("chunkSize", 8))
    message = {
        "id": response.get("responseId", "msg_fake_01"),
        "type": "message",
        "role": "assistant",
        "model": response.get("responseModel", (request.get("body") or {}).get("model", "claude-fake")),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.get("input", 0),
            "cache_creation_input_tokens": usage.get("cacheWrite", 0),
            "cache_read_input_tokens": usage.get("cacheRead", 0),
            "output_tokens": 1,
        },
    }
    events = [sse("message_start", {"type": "message_start", "message": message}), sse("ping", {"type": "ping"})]
    for index, block in enumerate(response.get("content", [])):
        events += _block_events(index, block, size)
    if response.get("streamError"):
        events.append(sse("error", {"type": "error", "error": response["streamError"]}))
        return events
    delta_usage: dict[str, Any] = {"output_tokens": usage.get("output", 0)}
    delta = {"stop_reason": _stop_reason(response), "stop_sequence": None}
    events.append(sse("message_delta", {"type": "message_delta", "delta": delta, "usage": delta_usage}))
    events.append(sse("message_stop", {"type": "message_stop"}))
    return events
