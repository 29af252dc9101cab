"""Small readings and constructors of transcript messages the session and its front ends share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.types import (
    AssistantMessage,
    ImageContent,
    JsonObject,
    UserContent,
    UserMessage,
    now_ms,
)


def user_message(text: str, images: Sequence[JsonObject] | None) -> UserMessage:
    """A prompt's message; ``images`` are image blocks as the client sent them (its front end checked them)."""
    content: list[UserContent] = [{"type": "text", "text": text}, *cast(Sequence[ImageContent], images or ())]
    return {"role": "user", "content": content, "timestamp": now_ms()}


def message_text(message: AgentMessage) -> str:
    """The text blocks of a message joined (or its content when that is a plain string)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(block["text"] for block in content if block["type"] == "text")


def last_assistant(messages: list[AgentMessage]) -> AssistantMessage | None:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return message
    return None


def last_assistant_text(messages: list[AgentMessage]) -> str | None:
    """``get_last_assistant_text``: the latest assistant reply with text, or an empty successful one."""
    for message in reversed(messages):
        if message["role"] != "assistant":
            continue
        text = message_text(message).strip()
        if message["stopReason"] == "stop" or text:
            if message["stopReason"] in ("error", "aborted") and not text:
                continue
            return text or None
    return None
