"""Thinking levels per model, thinking budgets, and the output-token cap of every request.

Numbers follow pi-ai 1.6.0: budgets 1024/2048/8192/16384, an input estimate of
3.5 characters per token, and a safety margin so that a provider counting the input higher than we
do still leaves the request inside the context window.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from pi_coding_agent.ai.types import THINKING_LEVELS, Context, Message, Model

DEFAULT_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
MIN_ANSWER_TOKENS = 1024  # always left for the answer when a budget shares the output cap
CHARS_PER_TOKEN = 3.5
IMAGE_CHARS = 4800  # an image counts like this many characters
SAFETY_TOKENS = 4096
SAFETY_RATIO = 0.15
MIN_OUTPUT_WITH_RATIO = 32768


def supported_thinking_levels(model: Model) -> list[str]:
    """``["off"]`` without reasoning; else all levels not mapped to null, xhigh/max only when mapped."""
    if not model.get("reasoning"):
        return ["off"]
    mapping = model.get("thinkingLevelMap") or {}
    levels = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level in ("xhigh", "max") and level not in mapping:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: Model, level: str) -> str:
    """The nearest supported level: itself, else the next one up, else the next one down."""
    supported = supported_thinking_levels(model)
    if level in supported:
        return level
    if level not in THINKING_LEVELS:
        return supported[0] if supported else "off"
    index = THINKING_LEVELS.index(level)
    upward = THINKING_LEVELS[index + 1 :]
    downward = THINKING_LEVELS[:index][::-1]
    for candidate in (*upward, *downward):
        if candidate in supported:
            return candidate
    return supported[0] if supported else "off"


def thinking_budget(level: str, budgets: dict[str, Any] | None) -> int:
    """Token budget of a level for budget-based providers (xhigh/max use the high budget; off is 0)."""
    if level == "off":
        return 0
    merged = {**DEFAULT_BUDGETS, **(budgets or {})}
    return int(merged["high" if level in ("xhigh", "max") else level])


def clamp_max_tokens(model: Model, context: Context, requested: int | None) -> int:
    """``max_tokens`` for a request: the requested (or model) cap, fitted into the context room."""
    cap = requested if requested is not None else model["maxTokens"]
    window = model["contextWindow"]
    if window <= 0:
        return max(1, cap)
    used = estimate_context_tokens(context)
    margin = max(SAFETY_TOKENS, math.ceil(used * SAFETY_RATIO))
    room = window - used - margin
    if room < MIN_OUTPUT_WITH_RATIO:
        room = min(MIN_OUTPUT_WITH_RATIO, window - used - SAFETY_TOKENS)
    return min(cap, max(1, room))


def estimate_context_tokens(context: Context) -> int:
    """Tokens of a request: the last usable reported usage plus estimates for what came after it.

    pi keeps the system prompt and tool declarations in the transcript as a leading system message,
    so they count only while no response has reported a usage (that usage already contains them);
    a later system message (tool changes) counts where it stands, like any other message.
    """
    messages = context["messages"]
    last = _last_usage_index(messages)
    if last is not None:
        usage = messages[last]["usage"]  # type: ignore[typeddict-item]
        return _usage_tokens(usage) + sum(estimate_message_tokens(m) for m in messages[last + 1 :])
    tokens = sum(estimate_message_tokens(m) for m in messages)
    if context.get("systemPrompt"):
        tokens += math.ceil(len(context["systemPrompt"]) / CHARS_PER_TOKEN)
    return tokens + _tools_tokens(context.get("tools"))


def estimate_message_tokens(message: Message) -> int:
    """Characters / 3.5, rounded up; images count as 4800 characters; a system message adds the
    JSON of the tools it adds and removes."""
    role = message["role"]
    content: Any = message["content"]
    if role == "system":
        changes: Any = message
        return (math.ceil(len(content) / CHARS_PER_TOKEN) + _tools_tokens(changes.get("toolsAdded"))
                + _tools_tokens(changes.get("toolsRemoved")))
    if isinstance(content, str):
        chars = len(content)
    elif role in ("user", "toolResult"):
        chars = sum(len(b["text"]) if b["type"] == "text" else IMAGE_CHARS for b in content)
    else:
        chars = sum(_assistant_block_chars(b) for b in content)
    return math.ceil(chars / CHARS_PER_TOKEN)


def _tools_tokens(tools: object) -> int:
    """A list of tool declarations counted as its JSON text (none: 0)."""
    return math.ceil(len(orjson.dumps(tools)) / CHARS_PER_TOKEN) if tools else 0


def _assistant_block_chars(block: Any) -> int:
    if block["type"] == "text":
        return len(block["text"])
    if block["type"] == "thinking":
        return len(block["thinking"])
    return len(block["name"]) + len(orjson.dumps(block["arguments"]).decode())


def _usage_tokens(usage: object) -> int:
    """Context tokens of a reported usage; a malformed one counts as none (pi's sum is NaN there)."""
    if not isinstance(usage, dict):
        return 0
    parts: list[Any] = [usage.get(k) for k in ("input", "output", "cacheRead", "cacheWrite")]
    total = usage.get("totalTokens") or (sum(parts) if all(isinstance(p, int) for p in parts) else 0)
    return int(total) if isinstance(total, int | float) else 0


def _last_usage_index(messages: list[Message]) -> int | None:
    """Index of the last assistant message whose usage still describes the transcript before it.

    A message stamped later than a response (e.g. a compaction summary inserted before it) means that
    response's usage no longer matches the prefix, so it is skipped.
    """
    found = None
    newest = -math.inf
    for i, message in enumerate(messages):
        if message["role"] == "assistant" and message["timestamp"] >= newest \
                and message["stopReason"] not in ("aborted", "error") and _usage_tokens(message["usage"]) > 0:
            found = i
        newest = max(newest, message["timestamp"])
    return found
