"""Render a wire-neutral scripted response as OpenAI Chat Completions stream chunks.

Layout follows the real API: a first chunk with ``delta.role``, then ``delta.reasoning_content``
(thinking), ``delta.content`` (text) and ``delta.tool_calls[i]`` chunks (``id``/``function.name``
only in the first chunk of a call, ``function.arguments`` split over later chunks; a ``customToolCall``
block, ``{"id", "name", "input"}``, streams as a custom call: ``custom.name`` first, then
``custom.input`` pieces), a chunk with
``finish_reason``, a usage chunk with empty ``choices`` when the request asked for
``stream_options.include_usage``, and ``data: [DONE]``.
"""

from __future__ import annotations

import json
import time
from typing import Any

FINISH_REASONS = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}

ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("This model's maximum context length is 128000 tokens. However, your messages resulted in "
          "130000 tokens. Please reduce the length of the messages.", "invalid_request_error",
          "context_length_exceeded"),
    401: ("Incorrect API key provided: dummy. You can find your API key at "
          "https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key"),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests. Please try again in 1s.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    503: ("The engine is currently overloaded, please try again later", "server_error", None),
    529: ("Overloaded", "overloaded_error", None),
}


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def render_error_body(response: dict[str, Any]) -> dict[str, Any]:
    message, kind, code = ERRORS.get(int(response.get("status", 500)), ERRORS[500])
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    cached = usage.get("cacheRead", 0)
    prompt = usage.get("input", 0) + cached
    output = usage.get("output", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": usage.get("reasoning", 0)},
    }


def render_events(response: dict[str, Any], request: dict[str, Any]) -> list[bytes]:
    body = request.get("body") or {}
    size = int(response.get("chunkSize", 8))
    base = {"id": "chatcmpl-fake0001", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "fake-model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        payload = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    tool_index = 0
    for block in response.get("content", []):
        kind = block["type"]
        if kind == "text":
            events += [chunk({"content": p}) for p in pieces(block["text"], size)]
        elif kind == "thinking":
            events += [chunk({"reasoning_content": p}) for p in pieces(block["thinking"], size)]
        elif kind == "toolCall":
            head = {"index": tool_index, "id": block.get("id") or f"call_{tool_index}", "type": "function",
                    "function": {"name": block["name"], "arguments": ""}}
            events.append(chunk({"tool_calls": [head]}))
            args = block["arguments"] if isinstance(block["arguments"], str) else json.dumps(block["arguments"])
            events += [chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": p}}]})
                       for p in pieces(args, size)]
            tool_index += 1
        elif kind == "customToolCall":
            head = {"index": tool_index, "id": block.get("id") or f"call_{tool_index}", "type": "custom",
                    "custom": {"name": block["name"], "input": ""}}
            events.append(chunk({"tool_calls": [head]}))
            events += [chunk({"tool_calls": [{"index": tool_index, "custom": {"input": p}}]})
                       for p in pieces(block["input"], size)]
            tool_index += 1
    stop = response.get("stopReason") or ("toolUse" if tool_index else "stop")
    events.append(chunk({}, response.get("rawFinishReason") or FINISH_REASONS[stop]))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {**base, "choices": [], "usage": _usage(response.get("usage") or {})}
        events.append(b"data: " + json.dumps(usage).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events
