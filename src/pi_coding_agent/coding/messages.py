"""Small readings and constructors of transcript messages the session and its front ends share."""

from __future__ import annotations

from typing import Any, cast

from pi_coding_agent.ai.types import AssistantMessage, JsonObject, now_ms


def user_message(text: str, images: list[JsonObject] | None) -> JsonObject:
    return {"role": "user", "content": [{"type": "text", "text": text}, *(images or [])], "timestamp": now_ms()}


def message_text(message: dict[str, Any]) -> str:
    """The text blocks of a message joined (or its content when that is a plain string)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if block.get("type") == "text")


def last_assistant(messages: list[JsonObject]) -> AssistantMessage | None:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return cast(AssistantMessage, message)
    return None


def last_assistant_text(messages: list[JsonObject]) -> str | None:
    """``get_last_assistant_text``: the latest assistant reply with text, or an empty successful one."""
    for message in reversed(messages):
        if message["role"] != "assistant":
            continue
        text = message_text(message).strip()
        if message.get("stopReason") == "stop" or text:
            if message.get("stopReason") in ("error", "aborted") and not text:
                continue
            return text or None
    return None
