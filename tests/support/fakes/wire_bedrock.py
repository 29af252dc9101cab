"""Render a wire-neutral scripted response as Bedrock Converse stream frames (AWS event stream).

Each frame is binary: a 12-byte prelude (total length, headers length, CRC32 of those 8 bytes), the
headers (name length, name, type 7 = string, value length, value), the JSON payload, and a CRC32 of
everything before it. This encoder is written from the format description with ``zlib.crc32``, so the
adapter's decoder is checked against an independent implementation.

Script keys besides the shared ones: ``"exception": {"type": "throttlingException", "message": ...}``
sends an exception frame after the content; ``"corruptFrame": n`` flips one payload byte of frame n
(its CRC no longer matches); ``"redacted": "<base64>"`` on a thinking block sends redactedContent.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

CONTENT_TYPE = "application/vnd.amazon.eventstream"
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return struct.pack("!B", len(raw_name)) + raw_name + b"\x07" + struct.pack("!H", len(raw_value)) + raw_value


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with both CRCs."""
    head = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack("!II", total, len(head))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack("!I", zlib.crc32(body))


def event(kind: str, data: dict[str, Any]) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(data, separators=(",", ":")).encode())


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _block_events(index: int, block: dict[str, Any], size: int) -> list[bytes]:
    kind = block["type"]
    out: list[bytes] = []
    if kind == "text":
        out += [event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": p}})
                for p in _pieces(block["text"], size)]
    elif kind == "thinking":
        if block.get("redacted"):
            out.append(event("contentBlockDelta", {"contentBlockIndex": index,
                                                   "delta": {"reasoningContent": {"redactedContent": block["redacted"]}}}))
        else:
            out += [event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": p}}})
                    for p in _pieces(block["thinking"], size)]
            if block.get("signature"):
                out.append(event("contentBlockDelta", {"contentBlockIndex": index, "delta": {
                    "reasoningContent": {"signature": block["signature"]}}}))
    else:
        out.append(event("contentBlockStart", {"contentBlockIndex": index, "start": {
            "toolUse": {"toolUseId": block["id"], "name": block["name"]}}}))
        args = json.dumps(block["arguments"], separators=(",", ":"))
        out += [event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": p}}})
                for p in _pieces(args, size)]
    out.append(event("contentBlockStop", {"contentBlockIndex": index}))
    return out


def render_events(response: dict[str, Any], request: dict[str, Any]) -> list[bytes]:
    size = int(response.get("chunkSize", 8))
    content = response.get("content", [])
    out = [event("messageStart", {"role": "assistant"})]
    for index, block in enumerate(content):
        out += _block_events(index, block, size)
    if "exception" in response:
        exc = response["exception"]
        out.append(frame({":exception-type": exc["type"], ":content-type": "application/json",
                          ":message-type": "exception"}, json.dumps({"message": exc["message"]}).encode()))
    else:
        stop = response.get("stopReason") or ("toolUse" if any(b["type"] == "toolCall" for b in content) else "stop")
        out.append(event("messageStop", {"stopReason": response.get("rawStopReason") or STOP_REASONS[stop]}))
        usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, **response.get("usage", {})}
        out.append(event("metadata", {"usage": {
            "inputTokens": usage["input"], "outputTokens": usage["output"],
            "cacheReadInputTokens": usage["cacheRead"], "cacheWriteInputTokens": usage["cacheWrite"],
            "totalTokens": usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]},
            "metrics": {"latencyMs": 12}}))
    corrupt = response.get("corruptFrame")
    if corrupt is not None:
        broken = bytearray(out[corrupt])
        broken[-5] ^= 0xFF
        out[corrupt] = bytes(broken)
    return out


def render_error_body(response: dict[str, Any]) -> dict[str, Any]:
    return {"message": response.get("errorMessage", "Too many requests, please wait before trying again.")}
