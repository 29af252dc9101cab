"""Token estimates of session messages (chars/4) and the context usage shown in session stats.

Compaction decides *what* to keep from these estimates, so they follow pi's per-role counting
exactly: a different count would move cut points and ``tokensBefore``. Where a
provider reported real usage we trust it, and only estimate what came after it.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from pi_coding_agent.ai.types import JsonObject, SystemMessage
from pi_coding_agent.coding.events import Message
from pi_coding_agent.coding.session.context import current_system_message

CHARS_PER_TOKEN = 4
IMAGE_CHARS = 4800  # an image block counts like this many characters


def _content_chars(content: Any) -> int:
    """Text characters of a string or block list, plus a flat charge per image."""
    if isinstance(content, str):
        return len(content)
    chars = 0
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            chars += len(block.get("text") or "")
        elif kind == "image":
            chars += IMAGE_CHARS
    return chars


def _assistant_chars(content: Any) -> int:
    chars = 0
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            chars += len(block["text"])
        elif kind == "thinking":
            chars += len(block["thinking"])
        elif kind == "toolCall":
            chars += len(block["name"]) + len(_json(block["arguments"]))
    return chars


def _json(value: object) -> str:
    """JSON as JavaScript's ``JSON.stringify`` writes it (no spaces), for length counting."""
    return orjson.dumps(value).decode()


def _system_chars(message: SystemMessage) -> int:
    chars = _content_chars(message.get("content"))
    chars += sum(len(text) for text in (message.get("sections") or {}).values() if text)
    if message.get("toolsAdded"):
        chars += len(_json(message.get("toolsAdded")))
    return chars


def estimate_message_tokens(message: Message) -> int:
    """chars/4 rounded up, counting what each role sends to the model; unknown roles count 0."""
    if message["role"] == "assistant":
        chars = _assistant_chars(message.get("content"))
    elif message["role"] in ("user", "custom", "toolResult"):
        chars = _content_chars(message.get("content"))
    elif message["role"] == "system":
        chars = _system_chars(message)
    elif message["role"] == "bashExecution":
        chars = len(message.get("command") or "") + len(message.get("output") or "")
    elif message["role"] == "branchSummary" or message["role"] == "compactionSummary":
        chars = len(message.get("summary") or "")
    else:
        return 0
    return math.ceil(chars / CHARS_PER_TOKEN)


def usage_tokens(usage: object) -> int:
    """Context size a response reported: ``totalTokens``, else the sum of its parts."""
    if not isinstance(usage, dict):
        return 0
    return int(usage.get("totalTokens") or (
        (usage.get("input") or 0) + (usage.get("output") or 0)
        + (usage.get("cacheRead") or 0) + (usage.get("cacheWrite") or 0)))


def has_valid_usage(message: Message) -> bool:
    """An assistant reply whose usage describes the context it answered (not failed, not zero)."""
    return (message["role"] == "assistant" and message.get("stopReason") not in ("aborted", "error")
            and usage_tokens(message.get("usage")) > 0)


def last_usage_index(messages: list[Message]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if has_valid_usage(messages[index]):
            return index
    return None


def estimate_context_tokens(messages: list[Message]) -> int:
    """The last valid reported usage plus chars/4 of every later message (all chars/4 without usage)."""
    index = last_usage_index(messages)
    if index is None:
        return sum(estimate_message_tokens(m) for m in messages)
    return usage_tokens(messages[index].get("usage")) + sum(estimate_message_tokens(m) for m in messages[index + 1 :])


def estimate_fresh_tokens(messages: list[Message]) -> int:
    """A pure chars/4 estimate: the replayed system state once, plus every non-system message.

    Used when the last reported usage no longer describes the context (a compaction or a context
    edit came after it), so no usage can be trusted.
    """
    system = current_system_message(messages)
    tokens = estimate_message_tokens(system) if system is not None else 0
    return tokens + sum(estimate_message_tokens(m) for m in messages if m["role"] != "system")


def context_usage(
    messages: list[Message], context_window: int, compacted_since_usage: bool, *, usage_stale: bool = False
) -> JsonObject | None:
    """``get_session_stats.contextUsage``.

    ``compacted_since_usage``: the branch has a compaction and no valid reply came after it, so
    the size is unknown until the next response. ``usage_stale``: a compaction or context edit
    came after the last valid usage, so the projection is estimated from scratch.
    """
    if context_window <= 0:
        return None
    if compacted_since_usage:
        return {"tokens": None, "contextWindow": context_window, "percent": None}
    tokens = estimate_fresh_tokens(messages) if usage_stale else estimate_context_tokens(messages)
    return {"tokens": tokens, "contextWindow": context_window, "percent": tokens / context_window * 100}


def sum_tokens(messages: list[Message]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)
