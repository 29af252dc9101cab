"""Best-effort parsing of tool-call arguments that may have been cut off mid-stream.

Shared by every adapter that streams arguments as JSON text (Chat Completions, Responses,
Anthropic): ``repair_arguments`` tells a complete object from one closed by repair, so an adapter
can mark a call whose arguments were cut (the agent must not run it with invented values).
"""

from __future__ import annotations

import orjson

from pi_coding_agent.ai.types import JsonObject

_CLOSERS = {"{": "}", "[": "]"}


def parse_arguments(text: str) -> JsonObject:
    """The argument object in ``text``; an unfinished object is closed first, garbage gives ``{}``."""
    return repair_arguments(text)[0]


def repair_arguments(text: str) -> tuple[JsonObject, bool]:
    """``(arguments, complete)``: ``complete`` is False when the text had to be repaired or was garbage."""
    if not text.strip():
        return {}, True
    for candidate, complete in ((text, True), (_complete(text), False)):
        try:
            value = orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
        return (value, complete) if isinstance(value, dict) else ({}, False)
    return {}, False


def _complete(text: str) -> str:
    """Close an open string, drop a dangling separator and close every open bracket."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]" and stack:
            stack.pop()
    if escaped:
        text = text[:-1]
    if in_string:
        text += '"'
    text = text.rstrip()
    if text.endswith(","):
        text = text[:-1]
    elif text.endswith(":"):
        text += "null"
    return text + "".join(reversed(stack))
