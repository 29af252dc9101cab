"""Best-effort parsing of tool-call arguments that may have been cut off mid-stream.

Shared by every adapter that streams arguments as JSON text (Chat Completions, Responses,
Anthropic): ``repair_arguments`` tells a complete object from one closed by repair, so an adapter
can mark a call whose arguments were cut (the agent must not run it with invented values).
``lenient_loads`` is every adapter's fallback when orjson refuses a payload for a lone surrogate.
"""

from __future__ import annotations

from typing import Any

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
        except orjson.JSONDecodeError as exc:
            try:
                value = lenient_loads(candidate, exc)
            except ValueError:
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


def loads(text: str | bytes) -> Any:
    """``orjson.loads``, with :func:`lenient_loads` as its fallback (for paths that are not per delta)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return lenient_loads(text, exc)


def lenient_loads(text: str | bytes, error: orjson.JSONDecodeError) -> Any:
    """``text`` that orjson refused with ``error``: decoded again when the only fault is a lone
    surrogate escape (``"\\ud83d"``, which JavaScript's JSON.parse accepts), each lone surrogate
    becoming U+FFFD; any other fault re-raises ``error``. Only the failure path pays for this."""
    if "surrogate" not in str(error):
        raise error
    import json  # the standard library keeps lone surrogates, which are then replaced

    try:
        return _replace_surrogates(json.loads(text))
    except ValueError:
        raise error from None


def _replace_surrogates(value: object) -> object:
    if isinstance(value, str):
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value) if _has_surrogate(value) else value
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    return value


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
