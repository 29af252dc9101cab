"""Render a wire-neutral scripted response as a Gemini ``streamGenerateContent?alt=sse`` stream.

Each SSE event is one ``GenerateContentResponse``. Text and thought text arrive in pieces; a
``functionCall`` arrives whole (Gemini never splits call arguments) and carries no id. The last
event holds ``finishReason`` and ``usageMetadata``. Extra script keys understood here:

* ``"signature"`` on a thinking/text block -> ``thoughtSignature`` on its last part;
  ``"thoughtSignature"`` on a toolCall -> on its ``functionCall`` part;
* ``"rawStopReason"``: a finishReason sent verbatim (``"SAFETY"``, ``"MALFORMED_FUNCTION_CALL"``...);
* ``"streamError": {"code": 429, "message": ..., "status": ...}`` -> an error object as the last event;
* ``"errorMessage"``: the message inside an HTTP error body.
"""

from __future__ import annotations

import json
from typing import Any

FINISH_REASONS = {"stop": "STOP", "length": "MAX_TOKENS", "toolUse": "STOP"}

ERRORS: dict[int, tuple[str, str]] = {
    400: ("INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."),
    401: ("UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "models/unknown is not found for API version v1beta."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}


def sse(data: dict[str, Any]) -> bytes:
    """One SSE event framed as Google does (CRLF line ends)."""
    return f"data: {json.dumps(data, separators=(',', ':'))}\r\n\r\n".encode()


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def render_error_body(response: dict[str, Any]) -> dict[str, Any]:
    status = int(response.get("status", 500))
    kind, message = ERRORS.get(status, ("UNKNOWN", "Unknown error"))
    return {"error": {"code": status, "message": response.get("errorMessage", message), "status": kind}}


def _block_parts(block: dict[str, Any], size: int) -> list[dict[str, Any]]:
    """The parts one scripted block becomes, one part per SSE event."""
    kind = block["type"]
    if kind == "toolCall":
        part: dict[str, Any] = {"functionCall": {"name": block["name"], "args": block.get("arguments", {})}}
        if block.get("thoughtSignature"):
            part["thoughtSignature"] = block["thoughtSignature"]
        return [part]
    if kind not in ("text", "thinking"):
        raise ValueError(f"unknown scripted block type: {kind}")
    parts: list[dict[str, Any]] = [{"text": p} for p in pieces(block[kind], size)]
    if kind == "thinking":
        for p in parts:
            p["thought"] = True
    if block.get("signature"):
        parts[-1]["thoughtSignature"] = block["signature"]
    return parts


def _finish_reason(response: dict[str, Any]) -> str:
    if response.get("rawStopReason"):
        return str(response["rawStopReason"])
    return FINISH_REASONS[response.get("stopReason") or "stop"]


def _usage_metadata(usage: dict[str, Any]) -> dict[str, Any]:
    """Gemini counts the cached prompt inside promptTokenCount and thoughts apart from candidates."""
    thoughts = usage.get("reasoning", 0)
    meta = {
        "promptTokenCount": usage.get("input", 0) + usage.get("cacheRead", 0),
        "candidatesTokenCount": usage.get("output", 0) - thoughts,
        "totalTokenCount": usage.get("input", 0) + usage.get("cacheRead", 0) + usage.get("output", 0),
    }
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    if usage.get("cacheRead"):
        meta["cachedContentTokenCount"] = usage["cacheRead"]
    return meta


def render_events(response: dict[str, Any], request: dict[str, Any]) -> list[bytes]:
    size = int(response.get("chunkSize", 8))
    version = response.get("responseModel", "gemini-fake")
    response_id = response.get("responseId", "fake-response-01")
    chunks: list[dict[str, Any]] = []
    for block in response.get("content", []):
        for part in _block_parts(block, size):
            candidate = {"content": {"parts": [part], "role": "model"}, "index": 0}
            chunks.append({"candidates": [candidate], "modelVersion": version, "responseId": response_id})
    if response.get("streamError"):
        return [sse(c) for c in chunks] + [sse({"error": response["streamError"]})]
    if not chunks:
        chunks.append({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "index": 0}],
                       "modelVersion": version, "responseId": response_id})
    # Gemini puts the finish reason and the final usage on the last content chunk.
    chunks[-1]["candidates"][0]["finishReason"] = _finish_reason(response)
    chunks[-1]["usageMetadata"] = _usage_metadata(response.get("usage") or {})
    return [sse(c) for c in chunks]
