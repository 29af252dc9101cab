"""OpenRouter's ``reasoning_details``: structured reasoning a Chat Completions host wants back.

They arrive as deltas beside (or instead of) a plain ``reasoning`` string; consecutive text or
summary pieces are merged into one entry, encrypted entries stay whole. The merged list is kept,
as JSON, in the thinking block's ``thinkingSignature`` (where pi keeps it) and sent back on the
assistant message of a later request in place of a plain reasoning field.
"""

from __future__ import annotations

from typing import Any

import orjson

from pi_coding_agent.ai.types import JsonObject

_TEXT_FIELD = {"reasoning.text": "text", "reasoning.summary": "summary", "reasoning.encrypted": "data"}


def is_reasoning_detail(detail: object) -> bool:
    """One well-formed entry: a known type with its string field and optional id/format/index."""
    if not isinstance(detail, dict):
        return False
    field = _TEXT_FIELD.get(str(detail.get("type")))
    if field is None or not isinstance(detail.get(field), str):
        return False
    if detail.get("id") is not None and not isinstance(detail["id"], str):
        return False
    if "format" in detail and not isinstance(detail["format"], str):
        return False
    return "index" not in detail or isinstance(detail["index"], int)


def merge_reasoning_details(merged: list[dict[str, Any]], pieces: list[dict[str, Any]]) -> list[JsonObject]:
    """``merged`` extended by ``pieces``: a text/summary piece continues an entry of its type."""
    for piece in pieces:
        last = merged[-1] if merged else None
        kind = piece["type"]
        if last is not None and kind == last["type"] and kind != "reasoning.encrypted":
            field = _TEXT_FIELD[kind]
            last[field] += piece[field]
            if kind == "reasoning.text" and not last.get("signature") and piece.get("signature"):
                last["signature"] = piece["signature"]
            for key in ("id", "format", "index"):
                if last.get(key) is None and piece.get(key) is not None:
                    last[key] = piece[key]
            continue
        merged.append(dict(piece))
    return merged


def replayed_reasoning_details(thinking_blocks: list[Any]) -> list[JsonObject] | None:
    """The first thinking block's stored details, if its signature holds a valid list of them."""
    for block in thinking_blocks:
        signature = block.get("thinkingSignature")
        if not signature or not signature.startswith("["):
            continue
        try:
            parsed = orjson.loads(signature)
        except orjson.JSONDecodeError:
            continue
        if isinstance(parsed, list) and parsed and all(is_reasoning_detail(d) for d in parsed):
            return parsed
    return None
