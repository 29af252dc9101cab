"""Render a wire-neutral scripted response as pi-messages SSE events (pi's own assistant-message events).

Each event is ``data: <json>`` with the event's ``type`` and ``contentIndex``; the stream ends with
``done`` (``reason``, ``usage``) or, for ``"streamError": "<text>"``, with ``error``.
``"badIndex": true`` sends a delta for a block that was never started.
"""

from __future__ import annotations

import json
from typing import Any


def _sse(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _block(index: int, block: dict[str, Any], size: int) -> list[bytes]:
    kind = block["type"]
    if kind == "toolCall":
        args = json.dumps(block["arguments"], separators=(",", ":"))
        return [_sse({"type": "toolcall_start", "contentIndex": index, "id": block["id"], "toolName": block["name"]}),
                *(_sse({"type": "toolcall_delta", "contentIndex": index, "delta": p}) for p in _pieces(args, size)),
                _sse({"type": "toolcall_end", "contentIndex": index, "toolCall": {
                    "type": "toolCall", "id": block["id"], "name": block["name"], "arguments": block["arguments"]}})]
    text = block[kind]
    end: dict[str, Any] = {"type": f"{kind}_end", "contentIndex": index, "content": text}
    if block.get("signature"):
        end["contentSignature"] = block["signature"]
    return [_sse({"type": f"{kind}_start", "contentIndex": index}),
            *(_sse({"type": f"{kind}_delta", "contentIndex": index, "delta": p}) for p in _pieces(text, size)),
            _sse(end)]


def render_events(response: dict[str, Any], request: dict[str, Any]) -> list[bytes]:
    size = int(response.get("chunkSize", 8))
    content = response.get("content", [])
    out = [_sse({"type": "start"})]
    if response.get("badIndex"):
        out.append(_sse({"type": "text_delta", "contentIndex": 5, "delta": "x"}))
    for index, block in enumerate(content):
        out += _block(index, block, size)
    u = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, **response.get("usage", {})}
    usage = {**u, "totalTokens": u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"],
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    if response.get("streamError"):
        out.append(_sse({"type": "error", "reason": "error", "usage": usage, "errorMessage": response["streamError"]}))
    else:
        stop = response.get("stopReason") or ("toolUse" if any(b["type"] == "toolCall" for b in content) else "stop")
        out.append(_sse({"type": "done", "reason": stop, "usage": usage, "responseId": "pim_1"}))
    return out


def render_error_body(response: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"message": response.get("errorMessage", "rate limited"), "code": "rate_limit"}}
